// Package language names the programming languages coderun runs. Its
// [Language] is the one type that sandbox, policy, llm, agent, store and
// the CLI share; the package also says which names a language is read from
// (a --lang flag, a tool call's argument, a code fence's info string) and
// which file a program is in by its extension or its #! line. It imports
// nothing of coderun's, so every package may use it.
package language

import (
	"path/filepath"
	"slices"
	"strings"
)

// Language names an interpreter coderun runs code with. Its value is the
// name used in requests, records and JSON ("python", "bash", "node").
type Language string

// The languages coderun runs.
const (
	Python Language = "python"
	Bash   Language = "bash"
	Node   Language = "node" // JavaScript, run by Node.js
)

// All returns the languages coderun runs: Python, Bash, Node.
func All() []Language { return []Language{Python, Bash, Node} }

// Names returns the names of [All], for messages.
func Names() []string {
	var out []string
	for _, l := range All() {
		out = append(out, string(l))
	}
	return out
}

// Known reports whether l is one of [All].
func (l Language) Known() bool { return l == Python || l == Bash || l == Node }

// aliases maps the names people and models write to the language they mean.
var aliases = map[string]Language{
	"python": Python, "py": Python, "python3": Python, "py3": Python, "ipython": Python,
	"bash": Bash, "sh": Bash, "shell": Bash,
	"node": Node, "nodejs": Node, "javascript": Node, "js": Node, "mjs": Node,
}

// Parse reads a language name or one of its aliases ("py", "Python3",
// "sh", "shell", "js", "javascript"), ignoring case and surrounding space,
// and reports whether it names a language coderun runs.
func Parse(name string) (Language, bool) {
	l, ok := aliases[strings.ToLower(strings.TrimSpace(name))]
	return l, ok
}

// FenceTag returns the language word of a code fence's info string:
// "python" from "python", "{.python}", "python title=x" or
// "python:main.py". [Parse] says which language it names, if any.
func FenceTag(info string) string {
	info = strings.TrimLeft(info, "{.")
	end := strings.IndexFunc(info, func(r rune) bool {
		return !(r == '_' || r == '-' || r == '+' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z')
	})
	if end >= 0 {
		info = info[:end]
	}
	return info
}

// extensions maps a program file's extension (lower case) to its language.
var extensions = map[string]Language{
	".py": Python, ".pyw": Python,
	".sh": Bash, ".bash": Bash,
	".js": Node, ".cjs": Node, ".mjs": Node,
}

// Extensions returns the file extensions that name l, sorted.
func Extensions(l Language) []string {
	var out []string
	for ext, el := range extensions {
		if el == l {
			out = append(out, ext)
		}
	}
	slices.Sort(out)
	return out
}

// OfFile says what language a program file is in: by its extension (in
// any case), or by its #! line when it has none. ok is false for an
// extension that names no language coderun runs, which is better refused
// than run as Python.
func OfFile(path, code string) (lang Language, ok bool) {
	ext := strings.ToLower(filepath.Ext(path))
	if ext == "" {
		return OfShebang(code), true
	}
	lang, ok = extensions[ext]
	return lang, ok
}

// OfShebang reads a program's "#!" line ("#!/usr/bin/env bash",
// "#!/bin/sh", "#!/usr/bin/node"); Python without one, or with one that
// names no other language.
func OfShebang(code string) Language {
	line, _, _ := strings.Cut(code, "\n")
	if !strings.HasPrefix(line, "#!") {
		return Python
	}
	fields := strings.Fields(line[2:])
	if len(fields) == 0 {
		return Python
	}
	prog := filepath.Base(fields[0])
	if prog == "env" && len(fields) > 1 {
		prog = fields[1]
	}
	switch prog {
	case "bash", "sh":
		return Bash
	case "node", "nodejs":
		return Node
	}
	return Python
}
