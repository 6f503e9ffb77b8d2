package eval

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coderun/coderun/sandbox"
)

// fakeRuntime "runs" a program by looking at it: code containing "FAIL"
// raises an AssertionError, "SLEEP" takes a while, "BLOCK" runs until
// cancelled, "EXIT" leaves early with status 0, "INVALID" is rejected, and
// "BROKEN" makes the runtime fail without a result. Anything else passes,
// copying its standard input (the marker) the way the epilogue would.
type fakeRuntime struct {
	running, peak atomic.Int32
	mu            sync.Mutex
	requests      []sandbox.Request
}

var markerRE = regexp.MustCompile(`coderun-eval-done-[0-9a-f]+`)

func (f *fakeRuntime) Name() string { return "fake" }

func (f *fakeRuntime) started() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.requests)
}
func (f *fakeRuntime) Close() error { return nil }

func (f *fakeRuntime) Run(ctx context.Context, req sandbox.Request) (*sandbox.Result, error) {
	f.mu.Lock()
	f.requests = append(f.requests, req)
	f.mu.Unlock()
	n := f.running.Add(1)
	defer f.running.Add(-1)
	for {
		p := f.peak.Load()
		if n <= p || f.peak.CompareAndSwap(p, n) {
			break
		}
	}
	res := &sandbox.Result{Runtime: "fake", Reason: sandbox.ReasonExited, Usage: sandbox.Usage{Wall: time.Millisecond}}
	code := req.Code
	switch {
	case strings.Contains(code, "INVALID"):
		return nil, fmt.Errorf("%w: code contains INVALID", sandbox.ErrInvalid)
	case strings.Contains(code, "BROKEN"):
		return nil, errors.New("runtime exploded")
	case strings.Contains(code, "BLOCK"):
		<-ctx.Done()
		res.Reason, res.ExitCode = sandbox.ReasonKilled, -1
		return res, nil
	case strings.Contains(code, "SLEEP"):
		time.Sleep(20 * time.Millisecond)
	}
	switch {
	case strings.Contains(code, "FAIL"):
		res.ExitCode = 1
		res.Stderr = "Traceback (most recent call last):\n  File \"/work/main.py\", line 1, in <module>\n    assert FAIL\nAssertionError\n"
	case strings.Contains(code, "EXIT"):
	default:
		res.Stdout = "\n" + string(req.Stdin)
	}
	return res, nil
}

func items(codes ...string) []Item {
	var out []Item
	for i, c := range codes {
		out = append(out, Item{ID: fmt.Sprint("t", i), TaskID: fmt.Sprint("t", i), Code: c})
	}
	return out
}

func runAll(t *testing.T, rt sandbox.Runtime, its []Item, opts Options) (map[string]Verdict, error) {
	t.Helper()
	got := map[string]Verdict{}
	err := Run(context.Background(), rt, Feed(its...), opts, func(v Verdict) error {
		if _, dup := got[v.ID]; dup {
			t.Errorf("two verdicts for %s", v.ID)
		}
		got[v.ID] = v
		return nil
	})
	return got, err
}

func TestRunVerdictsAndConcurrency(t *testing.T) {
	rt := &fakeRuntime{}
	var codes []string
	for i := range 40 {
		codes = append(codes, []string{"SLEEP ok", "SLEEP FAIL", "EXIT", "INVALID"}[i%4])
	}
	got, err := runAll(t, rt, items(codes...), Options{Concurrency: 3, Limits: sandbox.Limits{WallTime: 2 * time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 40 {
		t.Fatalf("%d verdicts", len(got))
	}
	want := map[string]Status{"SLEEP ok": Passed, "SLEEP FAIL": Failed, "EXIT": Failed, "INVALID": Error}
	for i, c := range codes {
		v := got[fmt.Sprint("t", i)]
		if v.Status != want[c] {
			t.Errorf("%q: %s (%s)", c, v.Status, v.Error)
		}
		if v.Hash != items(codes...)[i].Hash() || v.TaskID != v.ID || v.Finished.IsZero() {
			t.Errorf("verdict fields: %+v", v)
		}
	}
	if p := rt.peak.Load(); p != 3 {
		t.Errorf("peak concurrency %d, want 3", p)
	}
	for _, r := range rt.requests {
		if r.Limits.WallTime != 2*time.Second || r.Language != sandbox.Python {
			t.Errorf("request %+v", r.Limits)
		}
		if !markerRE.Match(r.Stdin) || markerRE.MatchString(r.Code) {
			t.Errorf("the marker must be on the program's stdin, and not in its code: stdin %q", r.Stdin)
		}
	}
	if got["t1"].Line != "assert FAIL" || got["t1"].Error != "AssertionError" {
		t.Errorf("failure detail: %+v", got["t1"])
	}
}

func TestRunItemLimitsOverrideDefaults(t *testing.T) {
	rt := &fakeRuntime{}
	its := items("ok")
	its[0].Limits = sandbox.Limits{WallTime: time.Second}
	if _, err := runAll(t, rt, its, Options{Limits: sandbox.Limits{WallTime: 5 * time.Second, Memory: 64 << 20}}); err != nil {
		t.Fatal(err)
	}
	if l := rt.requests[0].Limits; l.WallTime != time.Second || l.Memory != 64<<20 {
		t.Errorf("limits %+v", l)
	}
}

func TestRunStopsOnCancel(t *testing.T) {
	rt := &fakeRuntime{}
	ctx, cancel := context.WithCancel(context.Background())
	its := items("ok", "ok", "BLOCK", "BLOCK", "ok", "ok", "ok", "ok")
	done := make(chan error, 1)
	var got []Verdict
	go func() {
		done <- Run(ctx, rt, Feed(its...), Options{Concurrency: 2}, func(v Verdict) error {
			got = append(got, v)
			return nil
		})
	}()
	for rt.running.Load() < 2 || rt.started() < 4 {
		time.Sleep(time.Millisecond)
	}
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("Run returned %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not stop")
	}
	if len(got) != 2 {
		t.Errorf("%d verdicts, want the 2 finished before the blocked ones", len(got))
	}
	for _, v := range got {
		if v.Status != Passed {
			t.Errorf("verdict for a cancelled run: %+v", v)
		}
	}
	if n := rt.started(); n != 4 {
		t.Errorf("%d items started after cancellation, want none", n-4)
	}
}

func TestRunYieldErrorStops(t *testing.T) {
	rt := &fakeRuntime{}
	boom := errors.New("disk full")
	n := 0
	err := Run(context.Background(), rt, Feed(items("ok", "ok", "ok", "ok", "ok", "ok")...), Options{Concurrency: 1}, func(Verdict) error {
		n++
		return boom
	})
	if !errors.Is(err, boom) || n != 1 {
		t.Errorf("err %v after %d verdicts", err, n)
	}
}

func TestRunRuntimeFailureStops(t *testing.T) {
	rt := &fakeRuntime{}
	_, err := runAll(t, rt, items("ok", "BROKEN", "ok"), Options{Concurrency: 1})
	if err == nil || !strings.Contains(err.Error(), "runtime exploded") || !strings.Contains(err.Error(), "t1") {
		t.Errorf("err = %v", err)
	}
}

func TestRunStreamsFromAChannel(t *testing.T) {
	rt := &fakeRuntime{}
	ch := make(chan Item)
	got := make(chan Verdict, 10)
	done := make(chan error, 1)
	go func() {
		done <- Run(context.Background(), rt, ch, Options{Concurrency: 2}, func(v Verdict) error { got <- v; return nil })
	}()
	for i, it := range items("ok", "FAIL", "ok") {
		ch <- it
		// Each verdict arrives before the next item is even submitted.
		select {
		case v := <-got:
			if v.ID != it.ID {
				t.Errorf("item %d: verdict for %s", i, v.ID)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("no verdict")
		}
	}
	close(ch)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

func TestMarkerPerLanguage(t *testing.T) {
	for _, lang := range []sandbox.Language{sandbox.Python, sandbox.Node, sandbox.Bash} {
		m1, code, err := withMarker(lang, "x")
		if err != nil || strings.Contains(code, m1) || !strings.HasPrefix(code, "x\n") {
			t.Errorf("%s: %q %v", lang, code, err)
		}
		m2, _, _ := withMarker(lang, "x")
		if m1 == m2 {
			t.Errorf("%s: the marker must be fresh for each run", lang)
		}
	}
	if _, _, err := withMarker("cobol", "x"); !errors.Is(err, sandbox.ErrInvalid) {
		t.Errorf("unknown language: %v", err)
	}
}
