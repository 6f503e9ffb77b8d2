package eval

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"time"

	"github.com/coderun/coderun/sandbox"
)

// Item is one program to run against its tests: for a benchmark, a
// solution joined with its problem's tests (Problem.Item).
type Item struct {
	// ID is unique within a run: the task id for a reference solution,
	// "task#n" for the n-th sample of a task (SampleID).
	ID     string
	TaskID string
	Sample int
	// Language defaults to Python.
	Language sandbox.Language
	// Code is the whole program, tests included, unless Tests is set. It
	// passes when it runs to its end and exits with status 0.
	Code string
	// Tests, when set, are given to the program on its standard input after
	// the run's marker line, and Code is a harness that reads them there,
	// runs them, and prints the marker itself when they pass (Run adds no
	// epilogue): HumanEval, MBPP and generic Python, bash and node items,
	// whose harnesses keep the tests out of the solution's processes (see
	// the package documentation).
	Tests string
	// Limits bound this item's run; zero fields take Options.Limits'.
	Limits sandbox.Limits
	// CompileArgs are given to a compiled language's compiler.
	CompileArgs []string

	// split, when set, runs the item as two programs (see splitItem);
	// invalid, when set, is why the item cannot run (its verdict's error).
	split   *splitItem
	invalid string
}

// Hash identifies the item's program: the first 24 hex digits of the
// SHA-256 of its language and code (and its tests, when set).
func (it Item) Hash() string {
	lang := it.Language
	if lang == "" {
		lang = sandbox.Python
	}
	h := sha256.New()
	h.Write([]byte(lang))
	h.Write([]byte{0})
	h.Write([]byte(it.Code))
	if it.Tests != "" {
		h.Write([]byte{0})
		h.Write([]byte(it.Tests))
	}
	return hex.EncodeToString(h.Sum(nil))[:24]
}

// Options configure Run. The zero value works.
type Options struct {
	// Concurrency is the number of items run at once; default the number
	// of CPUs.
	Concurrency int
	// Limits fill the zero fields of each item's limits; fields still zero
	// take the runtime's defaults.
	Limits sandbox.Limits
}

// Feed returns a closed channel holding items, for Run.
func Feed(items ...Item) <-chan Item {
	ch := make(chan Item, len(items))
	for _, it := range items {
		ch <- it
	}
	close(ch)
	return ch
}

// Run runs each item received from items in a fresh sandbox of rt, at most
// opts.Concurrency at once, until items is closed and every run has ended.
// It calls yield with each verdict as it is made, from one goroutine at a
// time, in the order the runs end.
//
// When ctx is cancelled, the runs in progress are stopped and yield no
// verdict (their items did not get a fair run), items not yet started are
// not run, and Run returns ctx's error. When yield returns an error, Run
// stops the same way and returns that error. A runtime that fails without a
// result for a valid request (closed, say) also stops Run with an error;
// an invalid request (code too large, a NUL byte) is the item's verdict,
// with status Error.
func Run(ctx context.Context, rt sandbox.Runtime, items <-chan Item, opts Options, yield func(Verdict) error) error {
	n := opts.Concurrency
	if n <= 0 {
		n = runtime.NumCPU()
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	verdicts := make(chan Verdict)
	confined := &confinement{rt: rt}
	var workers sync.WaitGroup
	for range n {
		workers.Add(1)
		go func() {
			defer workers.Done()
			for {
				var it Item
				var ok bool
				select {
				case <-ctx.Done():
					return
				case it, ok = <-items:
					if !ok || ctx.Err() != nil {
						return
					}
				}
				v, err := runItem(ctx, rt, &it, opts.Limits, confined)
				if err != nil {
					cancel(err)
					return
				}
				if v == nil {
					continue // cancelled: no verdict
				}
				select {
				case verdicts <- *v:
				case <-ctx.Done():
					return
				}
			}
		}()
	}
	go func() {
		workers.Wait()
		close(verdicts)
	}()
	for v := range verdicts {
		if ctx.Err() != nil {
			continue // drain: a worker may have sent before seeing the cancellation
		}
		if err := yield(v); err != nil {
			cancel(err)
		}
	}
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	return nil
}

// runItem runs one item. It returns a nil verdict when ctx was cancelled
// during the run, and an error when the runtime could not run a valid
// request at all.
func runItem(ctx context.Context, rt sandbox.Runtime, it *Item, defaults sandbox.Limits, confined *confinement) (*Verdict, error) {
	lang := it.Language
	if lang == "" {
		lang = sandbox.Python
	}
	v := &Verdict{ID: it.ID, TaskID: it.TaskID, Sample: it.Sample, Hash: it.Hash(), ExitCode: -1}
	if it.invalid == "" && it.needsLandlock() {
		why, err := confined.check(ctx)
		switch {
		case ctx.Err() != nil:
			return nil, nil
		case err != nil:
			return nil, err
		case why != "":
			it.invalid = why
		}
	}
	switch {
	case it.invalid != "":
		v.Status, v.Error, v.Finished = Error, it.invalid, time.Now()
		return v, nil
	case it.split != nil:
		return runSplitItem(ctx, rt, it, v, defaults) // split.go
	}
	if !lang.IsNative() {
		return runToolchainItem(ctx, rt, it, v, defaults) // humanevalx.go
	}
	marker, code, err := withMarker(lang, it.Code)
	stdin := marker + "\n"
	if it.Tests != "" {
		code, stdin = it.Code, stdin+it.Tests // the harness prints the marker
	}
	if err != nil {
		v.Status, v.Error = Error, err.Error()
		v.Finished = time.Now()
		return v, nil
	}
	req := sandbox.Request{Language: lang, Code: code, Stdin: []byte(stdin), Limits: it.Limits.WithDefaults(defaults)}
	return execute(ctx, rt, it, v, req, func(res *sandbox.Result) { judge(v, res, marker) })
}

// execute runs req, the request of it, into v: it times the run and
// judges its result with judge. It returns a nil verdict when ctx was
// cancelled during the run, and an error when the runtime could not run a
// valid request at all.
func execute(ctx context.Context, rt sandbox.Runtime, it *Item, v *Verdict, req sandbox.Request, judge func(*sandbox.Result)) (*Verdict, error) {
	start := time.Now()
	res, err := rt.Run(ctx, req)
	v.TotalMS = ms(time.Since(start))
	v.Finished = time.Now()
	switch {
	case ctx.Err() != nil:
		return nil, nil
	case errors.Is(err, sandbox.ErrInvalid):
		v.Status, v.Error = Error, err.Error()
		return v, nil
	case err != nil:
		return nil, fmt.Errorf("eval: item %s: %w", it.ID, err)
	}
	judge(res)
	return v, nil
}

// withMarker returns a fresh random marker and code followed by an
// epilogue that copies what the program's standard input holds to its
// standard output. Run gives the program the marker on its standard input
// (items do not read it), so that the marker is printed when the program
// runs to its end, and is nowhere in the program's source, environment or
// files: a solution cannot find it there to print it early and skip its
// tests. The epilogue writes straight to file descriptor 1, past any
// buffering or replacement of the language's standard output.
//
// What this does not stop: the solution runs in the same process as its
// tests, so one that reads its standard input itself, prints what it read
// and exits with status 0 is scored passed. Items with Tests (HumanEval,
// MBPP and generic Python, bash and node items) use a harness that closes
// that gap instead (see the package documentation).
func withMarker(lang sandbox.Language, code string) (marker, full string, err error) {
	var b [12]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", "", fmt.Errorf("eval: marker: %w", err)
	}
	marker = "coderun-eval-done-" + hex.EncodeToString(b[:])
	switch lang {
	case sandbox.Python:
		full = code + "\n\n__import__('os').write(1, b'\\n' + __import__('os').read(0, 64))\n"
	case sandbox.Node:
		full = code + "\n;require('fs').writeSync(1, '\\n' + require('fs').readFileSync(0, 'latin1'));\n"
	case sandbox.Bash:
		full = code + "\n{ IFS= read -r -n 64 __coderun_end; printf '\\n%s\\n' \"$__coderun_end\"; } || :\n"
	default:
		return "", "", fmt.Errorf("%w: eval does not know how to run %q programs", sandbox.ErrInvalid, lang)
	}
	return marker, full, nil
}
