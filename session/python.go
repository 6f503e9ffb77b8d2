package session

import (
	"bufio"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/coderun/coderun/sandbox"
)

//go:embed driver/python.py
var pythonDriverSource string

// pythonDriver runs driver/python.py: IPython, JSON lines.
type pythonDriver struct {
	preload     []string
	outputLimit int64
	env         map[string]string
}

func (d *pythonDriver) program() sandbox.Program {
	return sandbox.Program{Language: sandbox.Python, Code: pythonDriverSource, Env: d.env}
}

func (d *pythonDriver) hello() ([]byte, error) {
	return jsonLine(map[string]any{"op": "init", "preload": d.preload, "output_limit": d.outputLimit})
}

func (d *pythonDriver) request(id int, code string) ([]byte, error) {
	return jsonLine(map[string]any{"op": "execute", "id": id, "code": code})
}

func (d *pythonDriver) ping() []byte { return []byte(`{"op":"ping"}` + "\n") }

func jsonLine(v any) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("session: encode request: %w", err)
	}
	return append(b, '\n'), nil
}

// pyMessage is one line from the Python driver.
type pyMessage struct {
	Type           string         `json:"type"`
	ID             int            `json:"id"`
	Name           string         `json:"name"`
	Text           string         `json:"text"`
	Data           map[string]any `json:"data"`
	Metadata       map[string]any `json:"metadata"`
	ExecutionCount int            `json:"execution_count"`
	Ename          string         `json:"ename"`
	Evalue         string         `json:"evalue"`
	Traceback      []string       `json:"traceback"`
	Status         string         `json:"status"`
	Truncated      bool           `json:"truncated"`
	Exiting        bool           `json:"exiting"`
	Wait           bool           `json:"wait"`
	Update         bool           `json:"update"`
	Transient      map[string]any `json:"transient"`
	Error          string         `json:"error"`
	Version        string         `json:"version"`
	IPython        string         `json:"ipython"`
	InitMS         float64        `json:"init_ms"`
}

func (d *pythonDriver) read(stdout, stderr io.Reader, emit func(event), diag *tail) {
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		_, _ = io.Copy(diag, stderr)
	}()
	defer wg.Wait()
	br := bufio.NewReaderSize(stdout, 64<<10)
	for {
		line, err := readLine(br, maxLine)
		if errors.Is(err, errLineTooLong) {
			emit(event{kind: evProtocol, err: "a message from the interpreter was longer than " + sandbox.FormatBytes(maxLine)})
			continue
		}
		if err != nil {
			_, _ = io.Copy(io.Discard, stdout)
			return
		}
		var m pyMessage
		if err := json.Unmarshal(line, &m); err != nil || m.Type == "" {
			emit(event{kind: evProtocol, err: "unreadable message from the interpreter: " + clip(toValidUTF8(line), 200)})
			continue
		}
		if ev, ok := m.event(); ok {
			emit(ev)
		}
	}
}

func (m *pyMessage) event() (event, bool) {
	ev := event{id: m.ID}
	switch m.Type {
	case "ready":
		ev.kind, ev.err = evReady, m.Error
		ev.info = map[string]any{"version": m.Version, "ipython": m.IPython, "init_ms": m.InitMS}
		return ev, true
	case "started":
		ev.kind, ev.count = evStarted, m.ExecutionCount
	case "done":
		ev.kind, ev.count, ev.ok, ev.truncated, ev.exiting = evDone, m.ExecutionCount, m.Status == "ok", m.Truncated, m.Exiting
	case "stream":
		if m.Name != "stdout" && m.Name != "stderr" {
			return ev, false
		}
		ev.kind, ev.out = evOutput, Output{Type: TypeStream, Name: m.Name, Text: m.Text}
	case "display_data", "execute_result":
		ev.kind = evOutput
		ev.out = Output{Type: m.Type, Data: MIMEBundle(m.Data), Metadata: m.Metadata, ExecutionCount: m.ExecutionCount}
		if id, ok := m.Transient["display_id"].(string); ok {
			ev.out.DisplayID = id
		}
		ev.update = m.Update && ev.out.DisplayID != ""
	case "error":
		ev.kind = evOutput
		ev.out = Output{Type: TypeError, Ename: m.Ename, Evalue: m.Evalue, Traceback: m.Traceback}
	case "clear_output":
		ev.kind, ev.out = evOutput, Output{Type: TypeClearOutput, Wait: m.Wait}
	default:
		return ev, false
	}
	return ev, true
}

// splitTraceback makes one line per element.
func splitTraceback(tb []string) []string {
	out := make([]string, 0, len(tb))
	for _, frame := range tb {
		out = append(out, strings.Split(strings.TrimRight(frame, "\n"), "\n")...)
	}
	return out
}

// clip shortens s to at most n bytes and an ellipsis, never cutting a
// UTF-8 character in two.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}
