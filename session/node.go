package session

import (
	_ "embed"
	"io"

	"github.com/coderun/coderun/sandbox"
)

//go:embed driver/node.js
var nodeDriverSource string

// nodeDriver runs driver/node.js: Node's vm module, the JSON lines of the
// Python driver's protocol.
type nodeDriver struct {
	env map[string]string
}

func (d *nodeDriver) program() sandbox.Program {
	return sandbox.Program{Language: sandbox.Node, Code: nodeDriverSource, Env: d.env}
}

func (d *nodeDriver) hello() ([]byte, error) { return jsonLine(map[string]any{"op": "init"}) }

func (d *nodeDriver) request(id int, code string) ([]byte, error) {
	return jsonLine(map[string]any{"op": "execute", "id": id, "code": code})
}

func (d *nodeDriver) ping() []byte { return []byte(`{"op":"ping"}` + "\n") }

// read reads the messages as the Python driver's: the protocol is the same.
func (d *nodeDriver) read(stdout, stderr io.Reader, emit func(event), diag *tail) {
	(&pythonDriver{}).read(stdout, stderr, emit, diag)
}
