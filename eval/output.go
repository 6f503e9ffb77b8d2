package eval

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// SyncInterval is how often an Output backed by a file syncs it to disk.
const SyncInterval = 500 * time.Millisecond

// Output writes verdicts as JSON Lines. Each verdict is one write of one
// whole line, so a process that dies mid-eval leaves every earlier line
// intact and at most one partial last line, which OpenOutput repairs. A file
// is synced to disk at most SyncInterval after a write and on Sync and Close.
type Output struct {
	w        io.Writer
	f        *os.File // nil when w is not a file this Output owns
	lastSync time.Time
	dirty    bool
}

// NewOutput writes verdicts to w (standard output, say). Nothing is
// synced or read back: an eval written there cannot be resumed.
func NewOutput(w io.Writer) *Output { return &Output{w: w} }

// OpenOutput opens the verdict file at path for appending, creating it if
// needed, and returns the verdicts already in it, in file order, so that an
// interrupted eval can continue where it stopped. The file is locked against
// a second eval writing to it at the same time.
//
// A last line without its line ending (cut short by a crash) is kept if it
// is a whole verdict, and otherwise removed from the file: its item runs
// again. Any other line that is not a verdict is reported to bad with its
// line number and left in place; if bad returns an error, OpenOutput fails
// with it.
func OpenOutput(path string, bad BadLineFunc) (*Output, []Verdict, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, nil, fmt.Errorf("verdict file: %w", err)
	}
	fail := func(err error) (*Output, []Verdict, error) {
		f.Close()
		return nil, nil, err
	}
	if err := lock(f); err != nil {
		if errors.Is(err, unix.EWOULDBLOCK) {
			return fail(fmt.Errorf("verdict file %s: another eval is writing to it", path))
		}
		return fail(fmt.Errorf("verdict file %s: lock: %w", path, err))
	}
	if err := repairLastLine(f, path, bad); err != nil {
		return fail(err)
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return fail(fmt.Errorf("verdict file %s: %w", path, err))
	}
	var done []Verdict
	err = lines(f, path, bad, func(line []byte, n int) error {
		v, err := parseVerdict(line)
		if err != nil {
			return bad(&LineError{File: path, Line: n, Err: err})
		}
		done = append(done, v)
		return nil
	})
	if err != nil {
		return fail(err)
	}
	if _, err := f.Seek(0, io.SeekEnd); err != nil {
		return fail(fmt.Errorf("verdict file %s: %w", path, err))
	}
	return &Output{w: f, f: f, lastSync: time.Now()}, done, nil
}

// lock takes an exclusive lock on f. The lock belongs to the open file,
// which a child forked by this process (a sandbox being started, say) shares
// until it execs; so a lock released moments ago may still be held for a few
// milliseconds, and lock retries for up to a second before giving up.
func lock(f *os.File) error {
	deadline := time.Now().Add(time.Second)
	for {
		err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
		if !errors.Is(err, unix.EWOULDBLOCK) || time.Now().After(deadline) {
			return err
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// repairLastLine makes the file end with a line ending: a whole verdict
// that lacks one gets it; a partial line is cut off.
func repairLastLine(f *os.File, path string, bad BadLineFunc) error {
	fi, err := f.Stat()
	if err != nil {
		return fmt.Errorf("verdict file %s: %w", path, err)
	}
	size := fi.Size()
	if size == 0 {
		return nil
	}
	var last [1]byte
	if _, err := f.ReadAt(last[:], size-1); err != nil {
		return fmt.Errorf("verdict file %s: %w", path, err)
	}
	if last[0] == '\n' {
		return nil
	}
	// Find where the last line starts, reading backwards.
	start := int64(0)
	buf := make([]byte, 64<<10)
	for end := size; end > 0; {
		n := min(int64(len(buf)), end)
		chunk := buf[:n]
		if _, err := f.ReadAt(chunk, end-n); err != nil {
			return fmt.Errorf("verdict file %s: %w", path, err)
		}
		if i := bytes.LastIndexByte(chunk, '\n'); i >= 0 {
			start = end - n + int64(i) + 1
			break
		}
		end -= n
	}
	partial := make([]byte, size-start)
	if _, err := f.ReadAt(partial, start); err != nil {
		return fmt.Errorf("verdict file %s: %w", path, err)
	}
	if _, err := parseVerdict(partial); err == nil {
		_, err := f.WriteAt([]byte("\n"), size)
		return wrapFileErr(path, err)
	}
	if err := f.Truncate(start); err != nil {
		return fmt.Errorf("verdict file %s: remove partial last line: %w", path, err)
	}
	return wrapFileErr(path, f.Sync())
}

func wrapFileErr(path string, err error) error {
	if err != nil {
		return fmt.Errorf("verdict file %s: %w", path, err)
	}
	return nil
}

func parseVerdict(line []byte) (Verdict, error) {
	var v Verdict
	if err := json.Unmarshal(line, &v); err != nil {
		return v, fmt.Errorf("not a verdict: %w", err)
	}
	if v.ID == "" {
		return v, errors.New(`not a verdict: no "id"`)
	}
	for _, s := range Statuses {
		if v.Status == s {
			return v, nil
		}
	}
	return v, fmt.Errorf("not a verdict: unknown status %q", v.Status)
}

// Write appends one verdict.
func (o *Output) Write(v Verdict) error {
	line, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("verdict %s: %w", v.ID, err)
	}
	line = append(line, '\n')
	if _, err := o.w.Write(line); err != nil {
		return fmt.Errorf("write verdict %s: %w", v.ID, err)
	}
	o.dirty = true
	if o.f != nil && time.Since(o.lastSync) >= SyncInterval {
		return o.Sync()
	}
	return nil
}

// Sync flushes what was written to disk.
func (o *Output) Sync() error {
	if o.f == nil || !o.dirty {
		return nil
	}
	o.lastSync = time.Now()
	o.dirty = false
	if err := o.f.Sync(); err != nil {
		return fmt.Errorf("sync verdict file: %w", err)
	}
	return nil
}

// Close syncs and closes the file (not a writer given to NewOutput).
func (o *Output) Close() error {
	if o.f == nil {
		return nil
	}
	err := o.Sync()
	if cerr := o.f.Close(); err == nil {
		err = cerr
	}
	o.f = nil
	return err
}

// Plan splits items into those still to run and the verdicts already made
// for the others, given the verdicts read back from an earlier session
// (OpenOutput). The latest verdict for an id counts. An item runs again when
// it has no verdict, or when rerun (if not nil) says so of its verdict
// (retrying errors, say).
//
// A verdict made for a different program than the item's (its Hash differs)
// means the verdict file belongs to another eval: Plan fails rather than mix
// the two. Verdicts for ids that are not among items are counted in
// unknown and otherwise ignored.
func Plan(items []Item, done []Verdict, rerun func(Verdict) bool) (todo []Item, kept []Verdict, unknown int, err error) {
	latest := make(map[string]Verdict, len(done))
	for _, v := range done {
		latest[v.ID] = v
	}
	ids := make(map[string]bool, len(items))
	for _, it := range items {
		ids[it.ID] = true
		v, ok := latest[it.ID]
		if ok && v.Hash != "" && v.Hash != it.Hash() {
			return nil, nil, 0, fmt.Errorf("the verdict file has a verdict for %s made from a different program (hash %s, now %s): it belongs to another eval; use a new output file", it.ID, v.Hash, it.Hash())
		}
		if !ok || (rerun != nil && rerun(v)) {
			todo = append(todo, it)
			continue
		}
		kept = append(kept, v)
	}
	for id := range latest {
		if !ids[id] {
			unknown++
		}
	}
	return todo, kept, unknown, nil
}
