package sandbox

import (
	"fmt"
	"sort"
	"strings"

	"github.com/coderun/coderun/language"
)

// Language names an interpreter a request can use; it is the one
// [language.Language] every package shares.
type Language = language.Language

// The languages a request can name.
const (
	Python = language.Python
	Bash   = language.Bash
	Node   = language.Node
)

// Interpreter says which program runs a language inside a sandbox. How a
// runtime hands it the code is the runtime's business (sandbox/bootstrap is
// the way of runtimes that start interpreters themselves).
type Interpreter struct {
	Language Language
	// Path is the interpreter binary, resolved on the system (never via PATH).
	Path string
	// Script is the file name the code runs as (for messages and tracebacks).
	Script string
	// StartupEnv lists environment variable prefixes that only take effect
	// when the interpreter starts; a request setting one is never served by a
	// pre-started interpreter.
	StartupEnv []string
}

// WorkDir is the workspace inside every sandbox and the programs' working directory.
const WorkDir = "/work"

var interpreters = map[Language]Interpreter{
	Python: {
		Language: Python, Path: "/usr/bin/python3", Script: WorkDir + "/main.py",
		StartupEnv: []string{"PYTHON"},
	},
	Node: {
		Language: Node, Path: "/usr/bin/node", Script: WorkDir + "/main.js",
		StartupEnv: []string{"NODE_", "UV_"},
	},
	Bash: {
		Language: Bash, Path: "/usr/bin/bash", Script: "main.sh",
	},
}

// LookupInterpreter returns how to run lang.
func LookupInterpreter(lang Language) (Interpreter, error) {
	in, ok := interpreters[lang]
	if !ok && lang.Known() {
		return Interpreter{}, fmt.Errorf("%w: %s is not run by this runtime itself but through its toolchain (sandbox/toolchain)", ErrInvalid, lang)
	}
	if !ok {
		return Interpreter{}, fmt.Errorf("%w: unknown language %q (known: %s)", ErrInvalid, lang, strings.Join(language.Names(), ", "))
	}
	return in, nil
}

// Languages lists the languages runtimes start themselves (Python, Bash,
// Node), sorted; language.All lists every language.
func Languages() []Language {
	var out []Language
	for l := range interpreters {
		out = append(out, l)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// NeedsColdStart reports whether env sets a variable that only takes effect
// when the interpreter starts, so a pre-started one cannot serve the request.
func (in Interpreter) NeedsColdStart(env map[string]string) bool {
	for k := range env {
		for _, p := range in.StartupEnv {
			if strings.HasPrefix(k, p) {
				return true
			}
		}
	}
	return false
}
