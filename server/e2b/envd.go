package e2b

import (
	"bufio"
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/coderun/coderun/sandbox"
)

//go:embed envd.py
var envdSource string

// envdTimeout bounds one file operation of the sandbox's envd helper.
const envdTimeout = 30 * time.Second

// maxEnvdAnswer bounds one answer of the envd helper (a listing of a
// large tree is its largest).
const maxEnvdAnswer = 64 << 20

// envd is the program (envd.py) that runs in an E2B sandbox beside its
// contexts and commands and does the file operations the host cannot do
// from outside: list, stat, make a directory, move, remove, snapshot. It
// is started on first use and again after it has ended; its requests are
// answered one at a time. What it answers is the sandbox's word: bounded
// and decoded, never trusted further.
type envd struct {
	sb sandbox.Sandbox // the sandbox's shared view

	mu   sync.Mutex
	proc sandbox.Process
	out  *bufio.Reader
}

// call runs op with args in the helper and decodes its answer into result.
// An answer {"error": {...}} is returned as that *rpcError.
func (e *envd) call(ctx context.Context, op string, args, result any) error {
	req, err := json.Marshal(struct {
		Op   string `json:"op"`
		Args any    `json:"args"`
	}{op, args})
	if err != nil {
		return err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.proc == nil {
		if err := e.start(ctx); err != nil {
			code := codeUnavailable
			if errors.Is(err, errOneAtATime) {
				code = codeFailedPrecondition
			}
			return rpcErrorf(code, "the sandbox's file helper could not start: %v", err)
		}
	}
	proc, out := e.proc, e.out
	type answer struct {
		line []byte
		err  error
	}
	got := make(chan answer, 1)
	go func() {
		if _, err := proc.Stdin().Write(append(req, '\n')); err != nil {
			got <- answer{err: err}
			return
		}
		line, err := readLine(out, maxEnvdAnswer)
		got <- answer{line, err}
	}()
	t := time.NewTimer(envdTimeout)
	defer t.Stop()
	var a answer
	select {
	case a = <-got:
	case <-t.C:
		a.err = fmt.Errorf("no answer within %s", envdTimeout)
	case <-ctx.Done():
		a.err = context.Cause(ctx)
	}
	if a.err != nil {
		// The protocol is out of step (or the helper is gone): a new
		// helper serves the next call.
		e.stopLocked()
		if ctx.Err() != nil {
			return rpcErrorf(codeCanceled, "%s: %v", op, a.err)
		}
		return rpcErrorf(codeUnavailable, "the sandbox's file helper: %s: %v", op, a.err)
	}
	var fail struct {
		Error *rpcError `json:"error"`
	}
	if err := json.Unmarshal(a.line, &fail); err != nil {
		return rpcErrorf(codeInternal, "the sandbox's file helper answered %.200q: %v", a.line, err)
	}
	if fail.Error != nil {
		return fail.Error
	}
	if result == nil {
		return nil
	}
	if err := json.Unmarshal(a.line, result); err != nil {
		return rpcErrorf(codeInternal, "the sandbox's file helper answered %.200q: %v", a.line, err)
	}
	return nil
}

func (e *envd) start(ctx context.Context) error {
	proc, err := e.sb.Start(ctx, sandbox.Program{Language: sandbox.Python, Code: envdSource})
	if err != nil {
		return err
	}
	go func() { _, _ = io.Copy(io.Discard, proc.Stderr()) }()
	e.proc, e.out = proc, bufio.NewReaderSize(proc.Stdout(), 64<<10)
	return nil
}

// stop ends the helper.
func (e *envd) stop() {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.stopLocked()
}

func (e *envd) stopLocked() {
	if e.proc == nil {
		return
	}
	p := e.proc
	e.proc, e.out = nil, nil
	p.Kill()
	go p.Wait(context.Background())
}

// readLine reads one line of at most max bytes, without its newline.
func readLine(r *bufio.Reader, max int) ([]byte, error) {
	var line []byte
	for {
		chunk, err := r.ReadSlice('\n')
		line = append(line, chunk...)
		if len(line) > max {
			return nil, fmt.Errorf("an answer longer than %d bytes", max)
		}
		switch {
		case err == nil:
			return line[:len(line)-1], nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF):
			return nil, errors.New("the helper ended")
		default:
			return nil, err
		}
	}
}
