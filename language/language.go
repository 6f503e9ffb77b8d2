// Package language names the programming languages coderun runs. Its
// [Language] is the one type that sandbox, policy, llm, agent, store and
// the CLI share; the package also says which names a language is read from
// (a --lang flag, a tool call's argument, a code fence's info string) and
// which file a program is in by its extension or its #! line.
//
// Every language is one [Spec] in the table of spec.go: its names, file
// extensions, how its source file is named, the toolchain (Debian
// packages, binaries) that runs it, its compile and run commands and its
// version probe. Adding a language is adding one entry there (and its
// tests); nothing else in coderun switches on a language's name, apart
// from the three that runtimes start themselves (Python, Bash, Node). The
// package imports nothing of coderun's, so every package may use it.
package language

import (
	"path/filepath"
	"slices"
	"strings"
)

// Language names a language coderun runs code in. Its value is the name
// used in requests, records and JSON ("python", "bash", "node", "cpp").
type Language string

// The languages coderun runs.
const (
	Python     Language = "python"
	Bash       Language = "bash"
	Node       Language = "node" // JavaScript, run by Node.js
	C          Language = "c"
	CPP        Language = "cpp"
	Go         Language = "go"
	Java       Language = "java"
	Rust       Language = "rust"
	TypeScript Language = "typescript"
	Ruby       Language = "ruby"
	PHP        Language = "php"
	Perl       Language = "perl"
	Lua        Language = "lua"
	R          Language = "r"
)

// All returns the languages coderun runs, in the order of the table:
// Python, Bash and Node first.
func All() []Language {
	out := make([]Language, len(specs))
	for i := range specs {
		out[i] = specs[i].Name
	}
	return out
}

// Names returns the names of [All], for messages.
func Names() []string {
	out := make([]string, len(specs))
	for i := range specs {
		out[i] = string(specs[i].Name)
	}
	return out
}

// Native returns the languages runtimes start themselves (Python, Bash,
// Node): the ones with sessions, and the ones an agent writes.
func Native() []Language {
	var out []Language
	for i := range specs {
		if specs[i].Native {
			out = append(out, specs[i].Name)
		}
	}
	return out
}

// NativeNames returns the names of [Native], for messages.
func NativeNames() []string {
	var out []string
	for _, l := range Native() {
		out = append(out, string(l))
	}
	return out
}

// IsNative reports whether l is one of [Native].
func (l Language) IsNative() bool {
	s, ok := Lookup(l)
	return ok && s.Native
}

// Known reports whether l is one of [All] (its canonical name, not an alias).
func (l Language) Known() bool {
	_, ok := Lookup(l)
	return ok
}

// Lookup returns the declaration of l.
func Lookup(l Language) (*Spec, bool) {
	for i := range specs {
		if specs[i].Name == l {
			return &specs[i], true
		}
	}
	return nil, false
}

// Parse reads a language name or one of its aliases ("py", "Python3",
// "sh", "shell", "js", "c++", "golang"), ignoring case and surrounding
// space, and reports whether it names a language coderun runs.
func Parse(name string) (Language, bool) {
	name = strings.ToLower(strings.TrimSpace(name))
	for i := range specs {
		s := &specs[i]
		if string(s.Name) == name || slices.Contains(s.Aliases, name) {
			return s.Name, true
		}
	}
	return "", false
}

// FenceTag returns the language word of a code fence's info string:
// "python" from "python", "{.python}", "python title=x" or
// "python:main.py"; "c++" from "c++". [Parse] says which language it
// names, if any.
func FenceTag(info string) string {
	info = strings.TrimLeft(info, "{.")
	end := strings.IndexFunc(info, func(r rune) bool {
		return !(r == '_' || r == '-' || r == '+' || r == '#' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z')
	})
	if end >= 0 {
		info = info[:end]
	}
	return info
}

// Extensions returns the file extensions that name l, sorted.
func Extensions(l Language) []string {
	s, ok := Lookup(l)
	if !ok {
		return nil
	}
	out := slices.Clone(s.Extensions)
	slices.Sort(out)
	return out
}

// OfFile says what language a program file is in: by its extension (in
// any case), or by its #! line when it has none. ok is false for an
// extension that names no language coderun runs, which is better refused
// than run as Python.
func OfFile(path, code string) (lang Language, ok bool) {
	ext := filepath.Ext(path)
	if ext == "" {
		return OfShebang(code), true
	}
	// ".R" and ".r" are both R; every other extension is read in lower case.
	ext = strings.ToLower(ext)
	for i := range specs {
		if slices.Contains(specs[i].Extensions, ext) {
			return specs[i].Name, true
		}
	}
	return "", false
}

// OfShebang reads a program's "#!" line ("#!/usr/bin/env bash",
// "#!/bin/sh", "#!/usr/bin/node", "#!/usr/bin/ruby"); Python without one,
// or with one that names no other language.
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
		if prog == "-S" && len(fields) > 2 {
			prog = fields[2]
		}
	}
	for i := range specs {
		if slices.Contains(specs[i].Interpreters, prog) {
			return specs[i].Name
		}
	}
	return Python
}
