package eval

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coderun/coderun/sandbox"
	"github.com/coderun/coderun/sandbox/linux"
)

// The tests below run programs in real sandboxes of the linux runtime. They
// need root and a host with every isolation layer, and skip otherwise. This
// test binary imports sandbox/linux, so it can serve as its own sandbox init.

var (
	rtOnce    sync.Once
	sharedRT  *linux.Runtime
	rtSkipMsg string
)

func TestMain(m *testing.M) {
	code := m.Run()
	if sharedRT != nil {
		sharedRT.Close()
	}
	os.Exit(code)
}

// realRuntime returns the shared linux runtime (with a pool), or skips.
func realRuntime(t testing.TB) sandbox.Runtime {
	t.Helper()
	rtOnce.Do(func() {
		if os.Geteuid() != 0 {
			rtSkipMsg = "the linux sandbox runtime needs root"
			return
		}
		if err := linux.Probe().Require(nil); err != nil {
			rtSkipMsg = "this host lacks an isolation layer: " + err.Error()
			return
		}
		rt, err := linux.New(linux.Options{Pool: 2 * runtime.NumCPU(), Zygote: true, Logf: func(f string, a ...any) { fmt.Fprintf(os.Stderr, f+"\n", a...) }})
		if err != nil {
			rtSkipMsg = "linux runtime: " + err.Error()
			return
		}
		sharedRT = rt
	})
	if sharedRT == nil {
		t.Skip(rtSkipMsg)
	}
	return sharedRT
}

func humanEvalProblems(t testing.TB) []*Problem {
	return loadProblems(t, "testdata/humaneval/HumanEval.jsonl.gz", ReadOptions{})
}

func references(t testing.TB, ps []*Problem) []Item {
	t.Helper()
	its, err := References(ps, StopAtBadLine)
	if err != nil {
		t.Fatal(err)
	}
	return its
}

// runReal runs items in the real runtime and returns the verdicts by id,
// in arrival order too.
func runReal(t *testing.T, its []Item, opts Options) (map[string]Verdict, []Verdict, time.Duration) {
	t.Helper()
	rt := realRuntime(t)
	byID := map[string]Verdict{}
	var order []Verdict
	start := time.Now()
	err := Run(context.Background(), rt, Feed(its...), opts, func(v Verdict) error {
		byID[v.ID] = v
		order = append(order, v)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(byID) != len(its) {
		t.Fatalf("%d verdicts for %d items", len(byID), len(its))
	}
	return byID, order, time.Since(start)
}

func requireAllPassed(t *testing.T, its []Item, got map[string]Verdict) {
	t.Helper()
	bad := 0
	for _, it := range its {
		if v := got[it.ID]; v.Status != Passed {
			bad++
			t.Errorf("%s: %s: %s (line %q)\n%s", it.ID, v.Status, v.Error, v.Line, v.Stderr)
		}
	}
	if bad > 0 {
		t.Fatalf("%d of %d did not pass", bad, len(its))
	}
}

func TestHumanEvalCanonicalSolutionsPass(t *testing.T) {
	if testing.Short() {
		t.Skip("long: 164 sandboxed runs")
	}
	realRuntime(t)
	its := references(t, humanEvalProblems(t))
	if len(its) != 164 {
		t.Fatalf("%d items", len(its))
	}
	got, _, el := runReal(t, its, Options{})
	requireAllPassed(t, its, got)
	t.Logf("164 HumanEval canonical solutions passed in %s (%.1f items/s)", el.Round(time.Millisecond), 164/el.Seconds())
}

func TestMBPPReferenceSolutionsPass(t *testing.T) {
	if testing.Short() {
		t.Skip("long: 974 sandboxed runs")
	}
	realRuntime(t)
	ps := loadProblems(t, "testdata/mbpp/mbpp.jsonl.gz", ReadOptions{MBPPChallenge: true})
	its := references(t, ps)
	if len(its) != 974 {
		t.Fatalf("%d items", len(its))
	}
	// Task 123 (amicable numbers below 9999) needs about 3 s of CPU; the
	// rest take milliseconds. Generous limits keep a busy host from failing it.
	got, _, el := runReal(t, its, Options{Limits: sandbox.Limits{WallTime: 60 * time.Second, CPUTime: 30 * time.Second}})
	requireAllPassed(t, its, got)
	t.Logf("974 MBPP reference solutions (challenge tests included) passed in %s (%.1f items/s)", el.Round(time.Millisecond), 974/el.Seconds())
}

func TestSwappedSolutionsFail(t *testing.T) {
	realRuntime(t)
	he := humanEvalProblems(t)
	mb := loadProblems(t, "testdata/mbpp/mbpp.jsonl.gz", ReadOptions{})
	swap := func(a, b *Problem) []Item {
		ab, ba := a.Item(b.Solution), b.Item(a.Solution)
		ab.ID, ba.ID = a.TaskID+"<-"+b.TaskID, b.TaskID+"<-"+a.TaskID
		return []Item{ab, ba}
	}
	its := append(swap(he[0], he[1]), swap(mb[1], mb[2])...)
	its = append(its, he[0].Reference(), mb[1].Reference()) // controls
	got, _, _ := runReal(t, its, Options{})
	for _, it := range its[:4] {
		v := got[it.ID]
		if v.Status != Failed || v.Error == "" {
			t.Errorf("%s: %s %q, want failed with an error", it.ID, v.Status, v.Error)
		}
		t.Logf("%s: %s: %s (at %q)", it.ID, v.Status, v.Error, v.Line)
	}
	requireAllPassed(t, its[4:], got)
}

func TestStatusesFromRealRuns(t *testing.T) {
	realRuntime(t)
	lim := sandbox.Limits{WallTime: 2 * time.Second, CPUTime: 2 * time.Second, Memory: 128 << 20}
	cases := []struct {
		code   string
		status Status
		err    string
		line   string
	}{
		{"def f(x):\n    return x\nassert f(2) == 2", Passed, "", ""},
		{"def f(x):\n    return x\nassert f(2) == 3", Failed, "AssertionError", "assert f(2) == 3"},
		{"def f(:\n  pass", Failed, "SyntaxError: invalid syntax", "def f(:"},
		{"import sys\nsys.exit(0)\nassert False", Failed, "exited with code 0 before the tests finished", ""},
		{"import os\nos._exit(0)", Failed, "exited with code 0 before the tests finished", ""},
		{"import sys\nsys.stdout = open('/dev/null', 'w')\nprint('hidden')", Passed, "", ""},
		{"while True:\n    pass", Timeout, "", ""},
		{"import time\ntime.sleep(60)", Timeout, "wall time limit", ""},
		{"x = bytearray(400 << 20)\nx[::4096] = b'x' * len(x[::4096])", Memory, "", ""},
		{"import os, signal\nos.kill(os.getpid(), signal.SIGSEGV)", Failed, "terminated by SIGSEGV", ""},
	}
	var its []Item
	for i, c := range cases {
		its = append(its, Item{ID: fmt.Sprint(i), TaskID: fmt.Sprint(i), Code: c.code})
	}
	got, _, _ := runReal(t, its, Options{Limits: lim})
	for i, c := range cases {
		v := got[fmt.Sprint(i)]
		if v.Status != c.status || !strings.Contains(v.Error, c.err) || v.Line != c.line {
			t.Errorf("%q: %s %q at %q, want %s %q at %q\n%s", c.code, v.Status, v.Error, v.Line, c.status, c.err, c.line, v.Stderr)
		}
	}
}

func TestLoopingSampleTimesOutWithoutSlowingTheRest(t *testing.T) {
	realRuntime(t)
	// The limit leaves room for a loaded machine: the others need about a
	// second on one slot when the host is idle, and took 5.4 s at a load
	// average of 33 on 2 CPUs.
	const limit = 10 * time.Second
	// The loop goes first; the other slot carries on with the rest.
	its := []Item{{ID: "loop", TaskID: "loop", Code: "while True:\n    pass\n"}}
	others := references(t, humanEvalProblems(t)[:30])
	its = append(its, others...)
	rt := realRuntime(t)
	var order []Verdict
	var loopAt, lastOtherAt time.Duration
	start := time.Now()
	err := Run(context.Background(), rt, Feed(its...), Options{Concurrency: 2, Limits: sandbox.Limits{WallTime: limit, CPUTime: limit}}, func(v Verdict) error {
		order = append(order, v)
		if v.ID == "loop" {
			loopAt = time.Since(start)
		} else {
			lastOtherAt = time.Since(start)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	elapsed := time.Since(start)
	got := map[string]Verdict{}
	for _, v := range order {
		got[v.ID] = v
	}
	if v := got["loop"]; v.Status != Timeout {
		t.Fatalf("loop: %s %q", v.Status, v.Error)
	}
	requireAllPassed(t, others, got)
	t.Logf("loop timed out at %s; the other 30 items were all done at %s; total %s", loopAt.Round(time.Millisecond), lastOtherAt.Round(time.Millisecond), elapsed.Round(time.Millisecond))
	if lastOtherAt >= loopAt {
		t.Errorf("the other items finished at %s, after the loop's timeout at %s: the loop held them up", lastOtherAt, loopAt)
	}
	if elapsed > limit+3*time.Second {
		t.Errorf("eval took %s, more than the loop's limit %s plus 3 s", elapsed, limit)
	}
}

func TestSamplesGivePassAtK(t *testing.T) {
	realRuntime(t)
	ps := humanEvalProblems(t)[:5]
	// Task i gets 6 samples, the first i+1 of them correct; the wrong ones
	// fail in different ways.
	wrong := []string{"    return None\n", "    raise ValueError('no')\n", "    import sys; sys.exit(0)\n", "    return", "    return 1/0\n"}
	var lines []string
	wantC := map[string]int{}
	for i, p := range ps {
		for j := range 6 {
			completion := p.Solution
			if j > i {
				completion = wrong[(i+j)%len(wrong)]
			} else {
				wantC[p.TaskID]++
			}
			lines = append(lines, fmt.Sprintf(`{"task_id": %q, "completion": %q}`, p.TaskID, completion))
		}
	}
	its, err := ReadSamples(strings.NewReader(strings.Join(lines, "\n")), "samples", ps, StopAtBadLine)
	if err != nil || len(its) != 30 {
		t.Fatalf("%d items, %v", len(its), err)
	}
	got, _, _ := runReal(t, its, Options{})
	var tl Tally
	for _, v := range got {
		tl.Add(v, true)
		if wantPass := v.Sample < wantC[v.TaskID]; (v.Status == Passed) != wantPass {
			t.Errorf("%s: %s %q", v.ID, v.Status, v.Error)
		}
	}
	s := tl.Summary([]int{1, 2, 5, 10}, time.Second)
	for _, k := range []int{1, 2, 5} {
		want := 0.0
		for _, p := range ps {
			want += PassAtK(6, wantC[p.TaskID], k)
		}
		want /= float64(len(ps))
		if got := s.PassAtK[fmt.Sprint("pass@", k)]; math.Abs(got-want) > 1e-12 {
			t.Errorf("pass@%d = %v, want %v", k, got, want)
		}
	}
	if _, ok := s.PassAtK["pass@10"]; ok {
		t.Error("pass@10 reported with 6 samples per task")
	}
	if math.Abs(s.PassAtK["pass@1"]-(1+2+3+4+5)/30.0) > 1e-12 {
		t.Errorf("pass@1 = %v", s.PassAtK["pass@1"])
	}
	t.Logf("pass@k: %v", s.PassAtK)
}

func TestResumeSkipsDoneItems(t *testing.T) {
	rt := realRuntime(t)
	its := references(t, humanEvalProblems(t)[:24])
	path := filepath.Join(t.TempDir(), "verdicts.jsonl")

	// First session: interrupted after 10 verdicts.
	out, done, err := OpenOutput(path, StopAtBadLine)
	if err != nil || len(done) != 0 {
		t.Fatal(done, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	n := 0
	err = Run(ctx, rt, Feed(its...), Options{Concurrency: 2}, func(v Verdict) error {
		if err := out.Write(v); err != nil {
			return err
		}
		if n++; n == 10 {
			cancel()
		}
		return nil
	})
	if err == nil {
		t.Fatal("the interrupted run reported no error")
	}
	out.Close()
	// ...and the process died in the middle of writing one more line.
	f, _ := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	f.WriteString(`{"id":"HumanEval/23","task_id":"HumanEval/23","sample":0,"status":"pass`)
	f.Close()

	// Second session: only the rest runs.
	out, done, err = OpenOutput(path, StopAtBadLine)
	if err != nil {
		t.Fatal(err)
	}
	if len(done) != 10 {
		t.Fatalf("read back %d verdicts, want 10", len(done))
	}
	todo, kept, _, err := Plan(its, done, nil)
	if err != nil || len(todo) != 14 || len(kept) != 10 {
		t.Fatalf("todo %d kept %d: %v", len(todo), len(kept), err)
	}
	doneIDs := map[string]bool{}
	for _, v := range done {
		doneIDs[v.ID] = true
	}
	var ran []string
	err = Run(context.Background(), rt, Feed(todo...), Options{Concurrency: 2}, func(v Verdict) error {
		if doneIDs[v.ID] {
			t.Errorf("%s ran again", v.ID)
		}
		ran = append(ran, v.ID)
		return out.Write(v)
	})
	if err != nil {
		t.Fatal(err)
	}
	out.Close()
	if len(ran) != 14 {
		t.Errorf("second session ran %d items, want 14", len(ran))
	}
	out, done, err = OpenOutput(path, StopAtBadLine)
	if err != nil {
		t.Fatal(err)
	}
	out.Close()
	seen := map[string]int{}
	for _, v := range done {
		seen[v.ID]++
		if v.Status != Passed {
			t.Errorf("%s: %s", v.ID, v.Status)
		}
	}
	if len(done) != 24 || len(seen) != 24 {
		t.Errorf("final file: %d lines, %d distinct items, want 24 each", len(done), len(seen))
	}
}
