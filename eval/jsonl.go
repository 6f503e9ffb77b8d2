package eval

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"os"
)

// MaxLineBytes bounds one input line; longer lines are reported and skipped.
const MaxLineBytes = 16 << 20

// LineError is a problem with one line of an input file. Readers report it
// and go on with the next line, unless their caller says to stop.
type LineError struct {
	File string // name of the input, as given to the reader
	Line int    // 1-based
	Err  error
}

func (e *LineError) Error() string {
	if e.File == "" {
		return fmt.Sprintf("line %d: %v", e.Line, e.Err)
	}
	return fmt.Sprintf("%s:%d: %v", e.File, e.Line, e.Err)
}

func (e *LineError) Unwrap() error { return e.Err }

// BadLineFunc receives each bad line. Returning nil skips the line;
// returning an error stops reading with that error.
type BadLineFunc func(*LineError) error

// SkipBadLines is a BadLineFunc that skips every bad line silently.
func SkipBadLines(*LineError) error { return nil }

// StopAtBadLine is a BadLineFunc that stops at the first bad line.
func StopAtBadLine(e *LineError) error { return e }

// Open opens a JSON Lines file for reading, decompressing it when it is
// gzip-compressed (recognised by its content, whatever its name). "-" is
// standard input.
func Open(path string) (io.ReadCloser, error) {
	var f *os.File
	if path == "-" {
		f = os.Stdin
	} else {
		var err error
		if f, err = os.Open(path); err != nil {
			return nil, err
		}
	}
	r, err := Decompress(f)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &readCloser{Reader: r, closers: []io.Closer{r, f}}, nil
}

// Decompress returns r's content, gunzipped when it starts with the gzip
// magic bytes. The result must be closed; closing does not close r.
func Decompress(r io.Reader) (io.ReadCloser, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	magic, err := br.Peek(2)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	if len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return nil, fmt.Errorf("gzip: %w", err)
		}
		return zr, nil
	}
	return io.NopCloser(br), nil
}

type readCloser struct {
	io.Reader
	closers []io.Closer
}

func (r *readCloser) Close() error {
	var first error
	for _, c := range r.closers {
		if err := c.Close(); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// lines reads r line by line, calling fn with each non-blank line (without
// its line ending) and its 1-based number. Lines longer than MaxLineBytes
// are reported to bad. A last line without a line ending counts as a line.
func lines(r io.Reader, name string, bad BadLineFunc, fn func(line []byte, n int) error) error {
	br := bufio.NewReaderSize(r, 256<<10)
	n := 0
	for {
		line, tooLong, err := readLine(br)
		if len(line) > 0 || tooLong || err == nil {
			n++
		}
		if tooLong {
			if berr := bad(&LineError{File: name, Line: n, Err: fmt.Errorf("line longer than %d bytes", MaxLineBytes)}); berr != nil {
				return berr
			}
		} else if len(bytes.TrimSpace(line)) > 0 {
			if ferr := fn(line, n); ferr != nil {
				return ferr
			}
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return fmt.Errorf("%s: read after line %d: %w", name, n, err)
		}
	}
}

// readLine returns the next line without its "\n" or "\r\n". Past
// MaxLineBytes it discards the rest of the line and sets tooLong. err is
// io.EOF at the end of input (line then holds an unterminated last line).
func readLine(br *bufio.Reader) (line []byte, tooLong bool, err error) {
	for {
		chunk, err := br.ReadSlice('\n')
		if !tooLong {
			if len(line)+len(chunk) > MaxLineBytes+2 {
				tooLong, line = true, nil
			} else {
				line = append(line, chunk...)
			}
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		line = bytes.TrimSuffix(line, []byte("\n"))
		line = bytes.TrimSuffix(line, []byte("\r"))
		return line, tooLong, err
	}
}
