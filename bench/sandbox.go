// Package bench measures coderun against baselines measured in the same run,
// and prints the figures side by side. Ratios matter more than absolute
// times: the machines it runs on are shared and noisy. Every report names
// the host it was measured on (measure.DetectHost) and the CPU each run cost, split
// into user and system time, as the process tree accounts it and as the
// whole machine does.
package bench

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"sync/atomic"
	"text/tabwriter"
	"time"

	"github.com/coderun/coderun/bench/measure"
	"github.com/coderun/coderun/sandbox"
	"github.com/coderun/coderun/sandbox/linux"
)

// SandboxConfig sets the size of the sandbox benchmark.
type SandboxConfig struct {
	Runs          int   // sequential runs per latency row
	Concurrency   []int // throughput levels
	ThroughputFor time.Duration
	Pool          int // pool size for pooled rows
	Code          string
	// CLIRuns is the number of one-shot runs of each command-line row
	// (coderun exec -c CODE against python3 -c CODE); zero skips them.
	CLIRuns int
	// Exe is the coderun binary of the command-line rows; empty means
	// this process's own executable.
	Exe string
	// BaselineExe, when set, is another coderun binary (an older build, say)
	// whose exec -c and version rows are interleaved with Exe's, so that a
	// change to the one-shot path is measured against the build before it
	// on the same machine at the same time.
	BaselineExe string
}

// DefaultSandboxConfig is what `coderun bench sandbox` uses.
var DefaultSandboxConfig = SandboxConfig{
	Runs:          200,
	Concurrency:   []int{1, 2, 4, 8},
	ThroughputFor: 3 * time.Second,
	Pool:          8,
	Code:          "print(1)",
	CLIRuns:       30,
}

// Latency is the distribution of one row.
type Latency struct {
	Name        string
	P50, P95    time.Duration
	Mean        time.Duration
	PooledShare float64
	// CPU is what one run cost on average (zero where not measured).
	CPU RunCPU
}

// RunCPU is the CPU one run cost, three ways.
type RunCPU struct {
	// Sandbox is the run's own accounting (the sandbox's cgroup, as
	// sandbox.Usage reports it; for bare python, the process's rusage).
	Sandbox measure.CPU
	// Tree is this process and every process it started (TreeCPU): the
	// host's side, sandbox inits, the zygote and the programs.
	Tree measure.CPU
	// Machine is the whole machine (MachineCPU, /proc/stat): the tree,
	// kernel threads, and anything else that ran meanwhile.
	Machine measure.CPU
}

// Rate is one configuration's throughput at one concurrency.
type Rate struct {
	Name        string
	PerSecond   float64
	PooledShare float64     // fraction served by a pre-started sandbox
	Tree        measure.CPU // this process tree's CPU per run (TreeCPU)
	Machine     measure.CPU // machine CPU per run during the measurement
}

// Throughput is one concurrency level: bare python3 first, then each
// coderun configuration.
type Throughput struct {
	Concurrency int
	Rates       []Rate
}

// SandboxReport is the outcome of Sandbox.
type SandboxReport struct {
	Host       measure.Host
	Config     SandboxConfig
	Latencies  []Latency
	Throughput []Throughput
	// CLI are the command-line rows: python3 -c, coderun exec -c, and
	// coderun's own start (coderun version).
	CLI []Latency
}

// runFunc runs one request; pooled says it was served by a pre-started
// sandbox, and own is the run's own CPU accounting.
type runFunc func(ctx context.Context) (pooled bool, own measure.CPU, err error)

type config struct {
	name string
	run  runFunc
	rt   *linux.Runtime // nil for bare python
	pool int
}

// Sandbox measures a trivial Python program through coderun, in each
// configuration (no pool, pool, zygote without and with the pool), against
// bare /usr/bin/python3 -c, all in one run.
func Sandbox(ctx context.Context, cfg SandboxConfig, progress io.Writer) (*SandboxReport, error) {
	rep := &SandboxReport{Host: measure.DetectHost(), Config: cfg}
	bare := func(ctx context.Context) (bool, measure.CPU, error) {
		cmd := exec.CommandContext(ctx, "/usr/bin/python3", "-c", cfg.Code)
		out, err := cmd.Output()
		if err == nil && len(out) == 0 {
			err = fmt.Errorf("bare python printed nothing")
		}
		if err != nil {
			return false, measure.CPU{}, err
		}
		return false, measure.CPU{User: cmd.ProcessState.UserTime(), System: cmd.ProcessState.SystemTime()}, nil
	}
	configs := []config{{name: "bare /usr/bin/python3 -c", run: bare}}
	for _, c := range []struct {
		name string
		opts linux.Options
	}{
		{"coderun, no pool", linux.Options{}},
		{"coderun, pool", linux.Options{Pool: cfg.Pool}},
		{"coderun, zygote, no pool", linux.Options{Zygote: true}},
		{"coderun, zygote, pool", linux.Options{Pool: cfg.Pool, Zygote: true}},
	} {
		rt, err := linux.New(c.opts)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", c.name, err)
		}
		defer rt.Close()
		configs = append(configs, config{name: c.name, run: through(rt, cfg.Code), rt: rt, pool: c.opts.Pool})
	}
	lat, err := measureLatencies(ctx, configs, cfg.Runs, progress)
	if err != nil {
		return nil, err
	}
	rep.Latencies = lat
	for _, n := range cfg.Concurrency {
		fmt.Fprintf(progress, "throughput at concurrency %d…\n", n)
		level := Throughput{Concurrency: n}
		for _, c := range configs {
			settle(c)
			r, err := measureThroughput(ctx, n, cfg.ThroughputFor, c.run)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", c.name, err)
			}
			r.Name = c.name
			level.Rates = append(level.Rates, r)
		}
		rep.Throughput = append(rep.Throughput, level)
	}
	if cfg.CLIRuns > 0 {
		// A shell user's one-shot finds no other coderun on the machine:
		// the runtimes above are closed first, or their pools (refilling
		// after the throughput rows) and zygotes would share the CPUs and
		// memory with the rows below.
		for _, c := range configs {
			if c.rt != nil {
				if err := c.rt.Close(); err != nil {
					return nil, fmt.Errorf("%s: close: %w", c.name, err)
				}
			}
		}
		fmt.Fprintln(progress, "command line one-shots…")
		cli, err := measureCLI(ctx, cfg)
		if err != nil {
			return nil, err
		}
		rep.CLI = cli
	}
	return rep, nil
}

// measureLatencies measures each config's latency, one run at a time,
// runs times, telling progress of each.
func measureLatencies(ctx context.Context, configs []config, runs int, progress io.Writer) ([]Latency, error) {
	var out []Latency
	for _, c := range configs {
		fmt.Fprintf(progress, "latency: %s…\n", c.name)
		l, err := measureLatency(ctx, c, runs)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", c.name, err)
		}
		out = append(out, l)
	}
	return out, nil
}

// through runs code in rt and checks that it printed something.
func through(rt *linux.Runtime, code string) runFunc {
	return func(ctx context.Context) (bool, measure.CPU, error) {
		res, err := rt.Run(ctx, sandbox.Request{Language: sandbox.Python, Code: code})
		if err != nil {
			return false, measure.CPU{}, err
		}
		if !res.OK() || res.Stdout == "" {
			return false, measure.CPU{}, fmt.Errorf("run failed: %s: %s", res.Summary(), res.Stderr)
		}
		return res.Pooled, measure.CPU{User: res.Usage.CPUUser, System: res.Usage.CPUSystem}, nil
	}
}

// settle waits until c's pool is full again and the sandboxes of earlier
// runs are gone, so that a measurement neither starts short of sandboxes
// nor pays for earlier work.
func settle(c config) {
	if c.rt == nil {
		return
	}
	deadline := time.Now().Add(10 * time.Second)
	for c.rt.PoolReady(sandbox.Python) < c.pool && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	time.Sleep(50 * time.Millisecond) // destruction of the last sandboxes
}

// measureLatency runs n requests one after another. Its CPU figures
// include refilling the pool after them (a pooled run's replacement is part
// of its cost) and destroying their sandboxes.
func measureLatency(ctx context.Context, c config, n int) (Latency, error) {
	settle(c)
	times := make([]time.Duration, 0, n)
	pooled := 0
	var own measure.CPU
	meter := measure.Start()
	for i := 0; i < n; i++ {
		if c.pool > 0 {
			// Each request finds a sandbox waiting, as in a server whose
			// requests arrive slower than the pool refills.
			for c.rt.PoolReady(sandbox.Python) < 1 {
				time.Sleep(time.Millisecond)
			}
		}
		start := time.Now()
		p, cpu, err := c.run(ctx)
		if err != nil {
			return Latency{}, err
		}
		times = append(times, time.Since(start))
		own = own.Add(cpu)
		if p {
			pooled++
		}
	}
	settle(c)
	tree, machine := meter.Stop()
	l := summarize(c.name, times, pooled)
	l.CPU = RunCPU{Sandbox: own.Per(n), Tree: tree.Per(n), Machine: machine.Per(n)}
	return l, nil
}

// measureThroughput runs as many requests as it can with c workers for d.
func measureThroughput(ctx context.Context, c int, d time.Duration, run runFunc) (Rate, error) {
	var done, pooled atomic.Int64
	var firstErr error
	var once sync.Once
	meter := measure.Start()
	start := time.Now()
	deadline := start.Add(d)
	var wg sync.WaitGroup
	for range c {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(deadline) {
				p, _, err := run(ctx)
				if err != nil {
					once.Do(func() { firstErr = err })
					return
				}
				done.Add(1)
				if p {
					pooled.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	el := time.Since(start)
	tree, machine := meter.Stop()
	if firstErr != nil {
		return Rate{}, firstErr
	}
	n := done.Load()
	return Rate{PerSecond: float64(n) / el.Seconds(), PooledShare: float64(pooled.Load()) / float64(max(n, 1)),
		Tree: tree.Per(int(n)), Machine: machine.Per(int(n))}, nil
}

// measureCLI times one-shot runs from the command line: python3 -c CODE,
// coderun exec -c CODE (a sandbox init, no pool, no zygote: what a shell
// user gets), and coderun version (the binary's start alone), and the same
// two of cfg.BaselineExe if set, interleaved so that all see the same
// machine.
func measureCLI(ctx context.Context, cfg SandboxConfig) ([]Latency, error) {
	exe := cfg.Exe
	if exe == "" {
		var err error
		if exe, err = os.Executable(); err != nil {
			return nil, err
		}
	}
	rows := []struct {
		name string
		argv []string
	}{
		{"python3 -c", []string{"/usr/bin/python3", "-c", cfg.Code}},
		{"coderun exec -c", []string{exe, "exec", "-c", cfg.Code}},
		{"coderun version (start only)", []string{exe, "version"}},
	}
	if cfg.BaselineExe != "" {
		rows = append(rows, []struct {
			name string
			argv []string
		}{
			{"baseline exec -c", []string{cfg.BaselineExe, "exec", "-c", cfg.Code}},
			{"baseline version", []string{cfg.BaselineExe, "version"}},
		}...)
	}
	times := make([][]time.Duration, len(rows))
	cpu := make([]measure.CPU, len(rows))
	for i := 0; i < cfg.CLIRuns; i++ {
		for r, row := range rows {
			cmd := exec.CommandContext(ctx, row.argv[0], row.argv[1:]...)
			start := time.Now()
			out, err := cmd.CombinedOutput()
			if err != nil {
				return nil, fmt.Errorf("%s: %w: %s", row.name, err, out)
			}
			times[r] = append(times[r], time.Since(start))
			cpu[r] = cpu[r].Add(measure.CPU{User: cmd.ProcessState.UserTime(), System: cmd.ProcessState.SystemTime()})
		}
	}
	var out []Latency
	for r, row := range rows {
		l := summarize(row.name, times[r], 0)
		// A command's rusage covers every process it started and reaped:
		// for coderun exec, the sandbox init and the program too.
		l.CPU.Tree = cpu[r].Per(cfg.CLIRuns)
		out = append(out, l)
	}
	return out, nil
}

// Percentile returns the p-th percentile of sorted durations (nearest rank).
func Percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(float64(len(sorted))*p/100+0.5) - 1
	i = max(0, min(i, len(sorted)-1))
	return sorted[i]
}

// Print writes the report: the host, then latency with CPU per run,
// throughput, and the command-line one-shots.
func (r *SandboxReport) Print(w io.Writer) {
	fmt.Fprintf(w, "\n%s\n", r.Host)
	fmt.Fprintf(w, "coderun sandbox benchmark: %q, %d sequential runs per row; CPU per run in ms, user + system\n", r.Config.Code, r.Config.Runs)
	fmt.Fprintln(w, "(sandbox: the run's own accounting, its cgroup; tree: this process and all it started; machine: /proc/stat, everything)")
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "latency\tp50\tp95\tmean\tp50 / bare\tpooled\tCPU sandbox\tCPU tree\tCPU machine\tmachine / bare\t")
	bare := r.Latencies[0]
	for _, l := range r.Latencies {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%.2f\t%.0f%%\t%s\t%s\t%s\t%.2f\t\n", l.Name, ms(l.P50), ms(l.P95), ms(l.Mean),
			ratio(l.P50, bare.P50), 100*l.PooledShare, l.CPU.Sandbox, l.CPU.Tree, l.CPU.Machine,
			ratio(l.CPU.Machine.Total(), bare.CPU.Machine.Total()))
	}
	tw.Flush()
	if len(r.Throughput) > 0 {
		fmt.Fprintf(w, "\nthroughput: runs/s over %s (pools of %d); / bare; CPU per run in ms (user + system)\n\n", r.Config.ThroughputFor, r.Config.Pool)
		tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "concurrency\t\truns/s\t/ bare\tserved pooled\tCPU tree\tCPU machine\t")
		for _, t := range r.Throughput {
			for _, rate := range t.Rates {
				fmt.Fprintf(tw, "%d\t%s\t%.1f\t%.2f\t%.0f%%\t%s\t%s\t\n", t.Concurrency, rate.Name, rate.PerSecond,
					rate.PerSecond/t.Rates[0].PerSecond, 100*rate.PooledShare, rate.Tree, rate.Machine)
			}
		}
		tw.Flush()
	}
	if len(r.CLI) > 0 {
		fmt.Fprintf(w, "\none-shot from the command line, %d runs each, interleaved; CPU per run from the command's rusage (all it started)\n\n", r.Config.CLIRuns)
		tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "command\tp50\tp95\tp50 - python3\tCPU\tCPU - python3\t")
		for _, l := range r.CLI {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%+.1f ms\t%s\t%+.1f ms\t\n", l.Name, ms(l.P50), ms(l.P95), float64((l.P50-r.CLI[0].P50).Microseconds())/1000, l.CPU.Tree,
				float64((l.CPU.Tree.Total()-r.CLI[0].CPU.Tree.Total()).Microseconds())/1000)
		}
		tw.Flush()
	}
}

func ratio(a, b time.Duration) float64 {
	if b == 0 {
		return 0
	}
	return float64(a) / float64(b)
}

func ms(d time.Duration) string { return fmt.Sprintf("%.2f ms", float64(d.Microseconds())/1000) }
