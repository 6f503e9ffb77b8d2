package session

import (
	"bytes"
	"crypto/rand"
	_ "embed"
	"encoding/hex"
	"fmt"
	"io"
	"maps"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/coderun/coderun/sandbox"
)

//go:embed driver/bash.sh
var bashDriverSource string

// bashDriver runs driver/bash.sh: an interactive bash whose output is the
// user's own, with markers carrying a per-interpreter nonce and, for a
// cell's start and end, a per-cell key.
type bashDriver struct {
	nonce string
	env   map[string]string

	mu      sync.Mutex // emit is called by two readers, request by Execute
	cell    int        // the cell last requested
	key     string     // its key: markers of that cell carry it
	ready   [2]bool
	done    [2]map[int]int // per stream: cell id → status
	count   int
	current [2]int // per stream: the cell last started
}

func newBashDriver(env map[string]string) *bashDriver {
	return &bashDriver{nonce: randomHex(16), env: env, done: [2]map[int]int{{}, {}}}
}

// randomHex is n random bytes in hexadecimal.
func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func (d *bashDriver) program() sandbox.Program {
	return sandbox.Program{Language: sandbox.Bash, Code: bashDriverSource, Env: maps.Clone(d.env)}
}

// hello gives the shell its nonce on its input, not in its environment.
func (d *bashDriver) hello() ([]byte, error) {
	return []byte("__cr_init " + d.nonce + "\n"), nil
}

// ping is an empty command line: the shell's prompt repeats the marker of
// the cell's end.
func (d *bashDriver) ping() []byte { return []byte("\n") }

// request quotes the code as $'...', escaping every byte that is not a
// printable ASCII character, the quote, the backslash or '!'.
func (d *bashDriver) request(id int, code string) ([]byte, error) {
	if strings.IndexByte(code, 0) >= 0 {
		return nil, fmt.Errorf("%w: bash code cannot contain NUL bytes", sandbox.ErrInvalid)
	}
	key := randomHex(8)
	d.mu.Lock()
	d.cell, d.key = id, key
	d.mu.Unlock()
	var b bytes.Buffer
	fmt.Fprintf(&b, "__cr_read %d %s $'", id, key)
	for i := 0; i < len(code); i++ {
		c := code[i]
		if c >= 0x20 && c < 0x7f && c != '\\' && c != '\'' && c != '!' {
			b.WriteByte(c)
		} else {
			fmt.Fprintf(&b, "\\x%02x", c)
		}
	}
	b.WriteString("' && eval \"$__cr_code\" </dev/null\n")
	return b.Bytes(), nil
}

func (d *bashDriver) read(stdout, stderr io.Reader, emit func(event), diag *tail) {
	var wg sync.WaitGroup
	for i, r := range []io.Reader{stdout, stderr} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sc := &markerScanner{marker: []byte(d.nonce + ":")}
			name := [2]string{"stdout", "stderr"}[i]
			text := func(s string) {
				if s != "" {
					d.mu.Lock()
					emit(event{kind: evOutput, id: d.current[i], out: Output{Type: TypeStream, Name: name, Text: s}})
					d.mu.Unlock()
				}
			}
			mark := func(m string) { d.marker(i, m, emit) }
			buf := make([]byte, 32<<10)
			for {
				n, err := r.Read(buf)
				sc.feed(buf[:n], text, mark)
				if err != nil {
					sc.flush(text)
					return
				}
			}
		}()
	}
	wg.Wait()
}

// marker handles "R", "S:ID:KEY" or "D:ID:KEY:STATUS" seen on stream i (0
// stdout, 1 stderr). A start or end that does not carry the key of the cell
// last requested is ignored.
func (d *bashDriver) marker(i int, m string, emit func(event)) {
	d.mu.Lock()
	defer d.mu.Unlock()
	f := strings.Split(m, ":")
	switch {
	case f[0] == "R" && len(f) == 1:
		d.ready[i] = true
		if d.ready[0] && d.ready[1] {
			emit(event{kind: evReady, info: map[string]any{}})
		}
	case f[0] == "S" && len(f) == 3:
		id, err := strconv.Atoi(f[1])
		if err != nil || !d.keyed(id, f[2]) {
			return
		}
		d.current[i] = id
		if i == 0 {
			d.count++
			emit(event{kind: evStarted, id: id, count: d.count})
		}
	case f[0] == "D" && len(f) == 4:
		id, err1 := strconv.Atoi(f[1])
		status, err2 := strconv.Atoi(f[3])
		if err1 != nil || err2 != nil || !d.keyed(id, f[2]) {
			return
		}
		d.done[i][id] = status
		if _, ok := d.done[1-i][id]; ok {
			delete(d.done[0], id)
			delete(d.done[1], id)
			emit(event{kind: evDone, id: id, count: d.count, ok: status == 0, exit: status})
		}
	}
}

// keyed reports whether key is cell id's key (d.mu held).
func (d *bashDriver) keyed(id int, key string) bool {
	return id == d.cell && key == d.key && key != ""
}

// markerScanner splits a byte stream into text and marker lines
// ("NONCE:...\n", anywhere in the stream). Text is decoded as UTF-8, each
// invalid byte replaced by U+FFFD; a character or marker cut between two
// reads is held back until the rest arrives, and nothing else is.
type markerScanner struct {
	marker []byte
	buf    []byte // undecided: may be the start of a marker
	carry  []byte // an incomplete UTF-8 sequence
}

const maxMarkerLine = 64

func (sc *markerScanner) feed(p []byte, text func(string), mark func(string)) {
	sc.buf = append(sc.buf, p...)
	for {
		i := bytes.Index(sc.buf, sc.marker)
		if i < 0 {
			keep := partialSuffix(sc.buf, sc.marker)
			sc.text(sc.buf[:len(sc.buf)-keep], text, false)
			sc.buf = append(sc.buf[:0], sc.buf[len(sc.buf)-keep:]...)
			return
		}
		rest := sc.buf[i+len(sc.marker):]
		j := bytes.IndexByte(rest, '\n')
		if j < 0 && len(rest) <= maxMarkerLine {
			sc.text(sc.buf[:i], text, false)
			sc.buf = append(sc.buf[:0], sc.buf[i:]...)
			return // wait for the end of the marker
		}
		if j < 0 || j > maxMarkerLine || !validMarker(rest[:j]) {
			// The nonce followed by something else: plain text.
			sc.text(sc.buf[:i+len(sc.marker)], text, false)
			sc.buf = append(sc.buf[:0], rest...)
			continue
		}
		sc.text(sc.buf[:i], text, true)
		m := string(rest[:j])
		sc.buf = append(sc.buf[:0], rest[j+1:]...)
		mark(m)
	}
}

func (sc *markerScanner) flush(text func(string)) {
	sc.text(sc.buf, text, true)
	sc.buf = nil
}

func validMarker(b []byte) bool {
	for _, c := range b {
		if !(c == ':' || c == '-' || c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c == 'R' || c == 'S' || c == 'D') {
			return false
		}
	}
	return len(b) > 0
}

// text decodes b after the carried bytes; unless final, an incomplete
// character at the end is carried to the next call.
func (sc *markerScanner) text(b []byte, text func(string), final bool) {
	data := append(sc.carry, b...)
	sc.carry = nil
	if !final {
		if k := incompleteSuffix(data); k > 0 {
			sc.carry = append([]byte(nil), data[len(data)-k:]...)
			data = data[:len(data)-k]
		}
	}
	if len(data) > 0 {
		text(toValidUTF8(data))
	}
}

// partialSuffix is the length of the longest end of b that begins marker.
func partialSuffix(b, marker []byte) int {
	for k := min(len(marker)-1, len(b)); k > 0; k-- {
		if bytes.Equal(b[len(b)-k:], marker[:k]) {
			return k
		}
	}
	return 0
}

// incompleteSuffix is the length of a UTF-8 sequence cut short at the end
// of b (0 if none).
func incompleteSuffix(b []byte) int {
	for k := 1; k <= 3 && k <= len(b); k++ {
		c := b[len(b)-k]
		if c&0xC0 == 0x80 {
			continue // continuation byte: look further back
		}
		if !utf8.RuneStart(c) || c < 0xC0 {
			return 0
		}
		need := 2
		switch {
		case c >= 0xF0:
			need = 4
		case c >= 0xE0:
			need = 3
		}
		if k < need && !utf8.FullRune(b[len(b)-k:]) {
			return k
		}
		return 0
	}
	return 0
}

// toValidUTF8 decodes b, replacing each invalid byte by U+FFFD (as
// Python's "replace" error handler does).
func toValidUTF8(b []byte) string {
	if utf8.Valid(b) {
		return string(b)
	}
	var s strings.Builder
	s.Grow(len(b) + 8)
	for len(b) > 0 {
		r, n := utf8.DecodeRune(b)
		if r == utf8.RuneError && n == 1 {
			s.WriteRune(utf8.RuneError)
		} else {
			s.Write(b[:n])
		}
		b = b[n:]
	}
	return s.String()
}
