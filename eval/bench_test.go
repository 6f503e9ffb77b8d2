package eval

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coderun/coderun/bench/measure"
	"github.com/coderun/coderun/sandbox"
	"github.com/coderun/coderun/sandbox/linux"
)

// BenchmarkHumanEvalVsUnisolated runs HumanEval's 164 canonical solutions
// three ways, interleaved round by round, and prints one table:
//
//   - coderun: eval.Run with the linux runtime (full isolation, one fresh
//     sandbox per item) at -eval.concurrency, with a pool of pre-started
//     sandboxes (-eval.pool);
//   - serial: a plain loop running /usr/bin/python3 -c PROGRAM per item, one
//     after another, no isolation;
//   - parallel: the same unisolated subprocesses at coderun's concurrency.
//
// Each row is the median of -eval.rounds rounds; CPU/item is the machine's
// CPU time per item (see cpuTime), and tree CPU/item that of this process
// and all it started (measure.TreeCPU: the runtime's zygote and sandboxes,
// the loops' interpreters), split into user + system, which other work on
// a shared machine does not inflate. The coderun runtime is
// created, and its pool filled, before the clock starts, as in a server that
// is already up; its first round is a warm-up that is not counted.
//
//	go test ./eval -run '^$' -bench HumanEvalVsUnisolated -benchtime 1x
//	go test ./eval -run '^$' -bench HumanEvalVsUnisolated -benchtime 1x -eval.concurrency 4 -eval.rounds 7
var (
	benchRounds      = flag.Int("eval.rounds", 5, "BenchmarkHumanEvalVsUnisolated: rounds per mode (median reported)")
	benchConcurrency = flag.Int("eval.concurrency", runtime.NumCPU(), "BenchmarkHumanEvalVsUnisolated: coderun's and the parallel loop's concurrency")
	benchPool        = flag.Int("eval.pool", 2*runtime.NumCPU(), "BenchmarkHumanEvalVsUnisolated: coderun's pool of pre-started sandboxes")
	benchZygote      = flag.Bool("eval.zygote", true, "BenchmarkHumanEvalVsUnisolated: fork Python from the runtime's zygote")
)

func BenchmarkHumanEvalVsUnisolated(b *testing.B) {
	if os.Geteuid() != 0 {
		b.Skip("the linux sandbox runtime needs root")
	}
	if _, err := os.Stat("/usr/bin/python3"); err != nil {
		b.Skip("no /usr/bin/python3")
	}
	its := references(b, humanEvalProblems(b))
	conc, rounds := *benchConcurrency, max(1, *benchRounds)
	rt, err := linux.New(linux.Options{Pool: *benchPool, Zygote: *benchZygote})
	if err != nil {
		b.Fatal(err)
	}
	defer rt.Close()
	time.Sleep(time.Second) // let the pool fill, as in a server that is up

	coderun := func() (time.Duration, error) {
		start := time.Now()
		passed := 0
		err := Run(context.Background(), rt, Feed(its...), Options{Concurrency: conc}, func(v Verdict) error {
			if v.Status == Passed {
				passed++
			}
			return nil
		})
		el := time.Since(start)
		if err == nil && passed != len(its) {
			err = fmt.Errorf("coderun: %d of %d passed", passed, len(its))
		}
		return el, err
	}
	plain := func(n int) func() (time.Duration, error) {
		return func() (time.Duration, error) { return plainLoop(its, n) }
	}
	type mode struct {
		name string
		run  func() (time.Duration, error)
		wall []time.Duration
		cpu  []time.Duration
		tree []measure.CPU
	}
	modes := []*mode{
		{name: fmt.Sprintf("coderun eval (isolated, concurrency %d, pool %d)", conc, *benchPool), run: coderun},
		{name: "python3 subprocess loop, serial, no isolation", run: plain(1)},
		{name: fmt.Sprintf("python3 subprocesses, concurrency %d, no isolation", conc), run: plain(conc)},
	}
	b.ResetTimer()
	for range b.N {
		for _, m := range modes {
			m.wall = nil
		}
		if _, err := coderun(); err != nil { // warm-up: page cache, first sandboxes
			b.Fatal(err)
		}
		time.Sleep(500 * time.Millisecond)
		for range rounds {
			for _, m := range modes {
				cpu0, tree0 := cpuTime(), measure.TreeCPU()
				el, err := m.run()
				if err != nil {
					b.Fatal(err)
				}
				if m == modes[0] {
					// The pool refills between rounds, and sandboxes are
					// destroyed after their runs: that work is the round's.
					time.Sleep(500 * time.Millisecond)
				}
				m.wall = append(m.wall, el)
				m.cpu = append(m.cpu, cpuTime()-cpu0)
				m.tree = append(m.tree, measure.TreeCPU().Sub(tree0))
			}
		}
	}
	b.StopTimer()

	med := func(ds []time.Duration) time.Duration {
		s := append([]time.Duration(nil), ds...)
		sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
		return s[len(s)/2]
	}
	n := float64(len(its))
	cr, serial, par := med(modes[0].wall), med(modes[1].wall), med(modes[2].wall)
	var load [3]float64
	if data, err := os.ReadFile("/proc/loadavg"); err == nil {
		fmt.Sscan(string(data), &load[0], &load[1], &load[2])
	}
	fmt.Printf("\n%s\n", measure.DetectHost())
	fmt.Printf("HumanEval: %d canonical solutions, median of %d rounds; %d CPUs; load average %.2f %.2f %.2f\n",
		len(its), rounds, runtime.NumCPU(), load[0], load[1], load[2])
	medCPU := func(cs []measure.CPU) measure.CPU {
		s := append([]measure.CPU(nil), cs...)
		sort.Slice(s, func(i, j int) bool { return s[i].Total() < s[j].Total() })
		return s[len(s)/2]
	}
	fmt.Printf("%-58s %9s %9s %9s %9s %13s %22s\n", "", "wall", "items/s", "min", "max", "CPU/item", "tree CPU/item (u + s)")
	for _, m := range modes {
		s := append([]time.Duration(nil), m.wall...)
		sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
		md := med(m.wall)
		fmt.Printf("%-58s %9s %9.1f %9s %9s %10.1f ms %19s ms\n", m.name, md.Round(time.Millisecond), n/md.Seconds(),
			s[0].Round(time.Millisecond), s[len(s)-1].Round(time.Millisecond), float64(med(m.cpu).Microseconds())/1000/n,
			medCPU(m.tree).Per(len(its)))
	}
	fmt.Printf("coderun speed-up over the serial loop:          %.2f× (target ≥ 2×)\n", serial.Seconds()/cr.Seconds())
	fmt.Printf("coderun tree CPU per item / the serial loop's:  %.2f (target ≤ 1)\n",
		float64(medCPU(modes[0].tree).Total())/float64(medCPU(modes[1].tree).Total()))
	fmt.Printf("coderun time relative to the parallel loop:     %.2f× (target ≤ 1.5×)\n\n", cr.Seconds()/par.Seconds())
	b.ReportMetric(n/cr.Seconds(), "coderun-items/s")
	b.ReportMetric(n/serial.Seconds(), "serial-items/s")
	b.ReportMetric(n/par.Seconds(), "parallel-items/s")
	b.ReportMetric(serial.Seconds()/cr.Seconds(), "speedup-vs-serial")
	b.ReportMetric(cr.Seconds()/par.Seconds(), "time-vs-parallel")
}

// cpuTime is the CPU time the whole machine has spent so far (user, nice,
// system, irq and softirq in /proc/stat): the runtime's zygote and its
// sandboxes are not this process's children, and kernel threads do part of
// a sandbox's teardown, so only the machine's total counts all of a mode's
// work. Anything else running on the machine is counted too.
func cpuTime() time.Duration {
	data, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0
	}
	var name string
	var user, nice, system, idle, iowait, irq, softirq int64
	if _, err := fmt.Sscan(string(data), &name, &user, &nice, &system, &idle, &iowait, &irq, &softirq); err != nil || name != "cpu" {
		return 0
	}
	// USER_HZ is 100 on every Linux architecture coderun runs on.
	return time.Duration(user+nice+system+irq+softirq) * 10 * time.Millisecond
}

// plainLoop runs each item's program as /usr/bin/python3 -c PROGRAM, n at a
// time, with no isolation at all (the item's tests, when it has them, on its
// standard input after a marker line, as Run gives them), and checks that
// every one exits with 0.
func plainLoop(its []Item, n int) (time.Duration, error) {
	start := time.Now()
	ch := Feed(its...)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var firstErr error
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for it := range ch {
				// The harness names the file it runs as (a sandboxed
				// program's /work/main.py); python3 -c has no __file__.
				cmd := exec.Command("/usr/bin/python3", "-c", "__file__ = "+strconv.Quote(programFile)+"\n"+it.Code)
				cmd.Stdin = strings.NewReader("coderun-eval-bench\n" + it.Tests)
				out, err := cmd.CombinedOutput()
				if err != nil {
					mu.Lock()
					if firstErr == nil {
						firstErr = fmt.Errorf("%s: %v: %s", it.ID, err, out)
					}
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	return time.Since(start), firstErr
}

var _ sandbox.Runtime = (*linux.Runtime)(nil)
