package session

import (
	"bufio"
	"errors"
	"io"
	"sync"

	"github.com/coderun/coderun/sandbox"
)

// driver speaks one language's protocol with the program it starts in the
// sandbox (see the package documentation). A driver value serves one
// interpreter: a restart makes a new one.
type driver interface {
	// program is what the sandbox starts.
	program() sandbox.Program
	// hello is written to the program's stdin right after it starts (nil:
	// nothing); the program answers with a ready event.
	hello() ([]byte, error)
	// request encodes cell id's code for the program's stdin.
	request(id int, code string) ([]byte, error)
	// ping asks an interpreter that waits for its next request to repeat
	// its last "done" (see idleCheck).
	ping() []byte
	// read turns the program's output into events until both streams end.
	// emit is called from one goroutine at a time. What the interpreter
	// writes outside the protocol on its stderr goes to diag.
	read(stdout, stderr io.Reader, emit func(event), diag *tail)
}

type eventKind int

const (
	evReady    eventKind = iota // the interpreter is up (or failed: err)
	evStarted                   // cell id started; count is its execution count
	evOutput                    // out belongs to cell id
	evDone                      // cell id ended: status, exit, truncated
	evProtocol                  // the program wrote something the protocol does not allow: err
)

// event is one thing the interpreter reported.
type event struct {
	kind      eventKind
	id        int
	out       Output
	count     int
	ok        bool // evDone: the code completed without an error
	exit      int  // evDone (bash): the last command's status
	update    bool // evOutput: update of an earlier display (out.DisplayID)
	truncated bool // evDone: the driver discarded output past the limit
	exiting   bool // evDone: the interpreter ends after this cell (exit())
	err       string
	info      map[string]any // evReady: what the driver says about itself
}

// maxLine bounds one protocol line (a large image, base64-encoded).
const maxLine = 64 << 20

// readLine reads one '\n'-terminated line of at most max bytes; longer
// lines are consumed and reported as too long.
func readLine(r *bufio.Reader, max int) ([]byte, error) {
	var line []byte
	tooLong := false
	for {
		chunk, err := r.ReadSlice('\n')
		if !tooLong {
			if len(line)+len(chunk) > max {
				tooLong, line = true, nil
			} else {
				line = append(line, chunk...)
			}
		}
		switch {
		case err == nil:
			if tooLong {
				return nil, errLineTooLong
			}
			return line, nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		default:
			if len(line) > 0 && !tooLong {
				return line, nil // last line without a newline
			}
			return nil, err
		}
	}
}

var errLineTooLong = errors.New("protocol line too long")

// tail keeps the last bytes written to it.
type tail struct {
	mu   sync.Mutex
	max  int
	data []byte
}

func newTail(max int) *tail { return &tail{max: max} }

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.data = append(t.data, p...)
	if len(t.data) > t.max {
		t.data = append([]byte(nil), t.data[len(t.data)-t.max:]...)
	}
	return len(p), nil
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return toValidUTF8(t.data)
}
