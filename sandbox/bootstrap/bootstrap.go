// Package bootstrap is how a runtime that starts interpreters itself (a
// process it forks, with descriptors it chooses) hands a program to them: the
// small bootstrap program each language runs first, the command line that
// runs it, and the payload it reads.
//
// The interpreter is started with Argv (which runs the bootstrap); the
// bootstrap writes one byte to file descriptor 4 and closes it to say it is
// ready, then reads the request from file descriptor 3 in the Payload format
// and runs the code as the interpreter would run a script. Because the
// bootstrap waits for its payload, an interpreter can be started ahead of
// time and kept waiting in a pool; because it reads the code from a pipe,
// code size is not bounded by the kernel's argument limits.
//
// A runtime that cannot pass descriptors to the program (one that runs it
// through a container engine's exec, say) does not use this package.
package bootstrap

import (
	"bytes"
	_ "embed"
	"fmt"
	"sort"

	"github.com/coderun/coderun/sandbox"
)

//go:embed python.py
var pythonSource string

//go:embed node.js
var nodeSource string

//go:embed bash.sh
var bashSource string

// Source is the bootstrap program of lang, or "" for a language without one.
func Source(lang sandbox.Language) string {
	switch lang {
	case sandbox.Python:
		return pythonSource
	case sandbox.Node:
		return nodeSource
	case sandbox.Bash:
		return bashSource
	}
	return ""
}

// Argv is the full command line (Argv[0] included) that starts in's
// interpreter running its bootstrap.
func Argv(in sandbox.Interpreter) ([]string, error) {
	switch in.Language {
	case sandbox.Python:
		return []string{"python3", "-c", "import sys; exec(sys.argv.pop(1), {'__name__': '_coderun'})", pythonSource}, nil
	case sandbox.Node:
		return []string{"node", "-e", nodeSource}, nil
	case sandbox.Bash:
		return []string{"bash", "-c", bashSource, in.Script}, nil
	}
	return nil, fmt.Errorf("bootstrap: no bootstrap for language %q", in.Language)
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
