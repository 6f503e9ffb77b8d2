package sandbox

import (
	"bytes"
	_ "embed"
	"fmt"
	"sort"
	"strings"
)

// Language names an interpreter a request can use.
type Language string

const (
	Python Language = "python"
	Bash   Language = "bash"
	Node   Language = "node"
)

// Interpreter says how a runtime starts a language inside a sandbox.
//
// Every language runs through a small bootstrap program: the interpreter is
// started with Argv (which runs the bootstrap); the bootstrap writes one byte
// to file descriptor 4 and closes it to say it is ready, then reads the
// request from file descriptor 3 in the Payload format and runs the code as
// the interpreter would run a script. Because the bootstrap waits for its
// payload, an interpreter can be started ahead of time and kept waiting in a
// pool; because it reads the code from a pipe, code size is not bounded by
// the kernel's argument limits.
type Interpreter struct {
	Language Language
	// Path is the interpreter binary, resolved on the system (never via PATH).
	Path string
	// Argv is the full command line, Argv[0] included.
	Argv []string
	// Script is the file name the code runs as (for messages and tracebacks).
	Script string
	// StartupEnv lists environment variable prefixes that only take effect
	// when the interpreter starts; a request setting one is never served by a
	// pre-started interpreter.
	StartupEnv []string
}

//go:embed bootstrap/python.py
var pythonBootstrap string

//go:embed bootstrap/node.js
var nodeBootstrap string

//go:embed bootstrap/bash.sh
var bashBootstrap string

// WorkDir is the workspace inside every sandbox and the programs' working directory.
const WorkDir = "/work"

var interpreters = map[Language]Interpreter{
	Python: {
		Language: Python, Path: "/usr/bin/python3", Script: WorkDir + "/main.py",
		Argv:       []string{"python3", "-c", "import sys; exec(sys.argv.pop(1), {'__name__': '_coderun'})", pythonBootstrap},
		StartupEnv: []string{"PYTHON"},
	},
	Node: {
		Language: Node, Path: "/usr/bin/node", Script: WorkDir + "/main.js",
		Argv:       []string{"node", "-e", nodeBootstrap},
		StartupEnv: []string{"NODE_", "UV_"},
	},
	Bash: {
		Language: Bash, Path: "/usr/bin/bash", Script: "main.sh",
		Argv: []string{"bash", "-c", bashBootstrap, "main.sh"},
	},
}

// LookupInterpreter returns how to run lang.
func LookupInterpreter(lang Language) (Interpreter, error) {
	in, ok := interpreters[lang]
	if !ok {
		return Interpreter{}, fmt.Errorf("%w: unknown language %q (known: %s)", ErrInvalid, lang, strings.Join(languageNames(), ", "))
	}
	return in, nil
}

// Languages lists the languages this package knows, sorted.
func Languages() []Language {
	var out []Language
	for l := range interpreters {
		out = append(out, l)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

func languageNames() []string {
	var out []string
	for _, l := range Languages() {
		out = append(out, string(l))
	}
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

// Payload encodes what a bootstrap reads from file descriptor 3: each
// environment variable as "KEY=VALUE\x00", then one more "\x00", then the
// name the code runs as (Request.Name; empty for the interpreter's Script)
// and "\x00", then the code up to end of file. Keys are sorted so payloads
// are reproducible.
func Payload(env map[string]string, name, code string) []byte {
	keys := make([]string, 0, len(env))
	for k := range env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b bytes.Buffer
	for _, k := range keys {
		b.WriteString(k)
		b.WriteByte('=')
		b.WriteString(env[k])
		b.WriteByte(0)
	}
	b.WriteByte(0)
	b.WriteString(name)
	b.WriteByte(0)
	b.WriteString(code)
	return b.Bytes()
}
