// Package bench measures coderun against baselines measured in the same run,
// and prints the figures side by side. Ratios matter more than absolute
// times: the machines it runs on are shared and noisy.
package bench

import (
	"context"
	"fmt"
	"io"
	"os/exec"
	"runtime"
	"sort"
	"sync"
	"sync/atomic"
	"text/tabwriter"
	"time"

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
}

// DefaultSandboxConfig is what `coderun bench sandbox` uses.
var DefaultSandboxConfig = SandboxConfig{
	Runs:          200,
	Concurrency:   []int{1, 2, 4, 8},
	ThroughputFor: 5 * time.Second,
	Pool:          8,
	Code:          "print(1)",
}

// Latency is the distribution of one row.
type Latency struct {
	Name        string
	P50, P95    time.Duration
	Mean        time.Duration
	PooledShare float64
}

// Throughput is one concurrency level.
type Throughput struct {
	Concurrency int
	Bare        float64 // runs/s of bare python3 at this concurrency
	Pooled      float64 // runs/s through coderun with the pool
	PooledShare float64 // fraction served by a pre-started sandbox
	Zygote      float64 // runs/s through coderun with the pool and the zygote
	ZygoteShare float64
}

// SandboxReport is the outcome of Sandbox.
type SandboxReport struct {
	Config     SandboxConfig
	Latencies  []Latency
	Throughput []Throughput
}

// Sandbox measures a trivial Python program through coderun with and without
// the pool, against bare /usr/bin/python3 -c.
func Sandbox(ctx context.Context, cfg SandboxConfig, progress io.Writer) (*SandboxReport, error) {
	rep := &SandboxReport{Config: cfg}
	bare := func(ctx context.Context) (bool, error) {
		out, err := exec.CommandContext(ctx, "/usr/bin/python3", "-c", cfg.Code).Output()
		if err == nil && len(out) == 0 {
			err = fmt.Errorf("bare python printed nothing")
		}
		return false, err
	}
	cold, err := linux.New(linux.Options{})
	if err != nil {
		return nil, err
	}
	defer cold.Close()
	pooled, err := linux.New(linux.Options{Pool: cfg.Pool})
	if err != nil {
		return nil, err
	}
	defer pooled.Close()
	zygCold, err := linux.New(linux.Options{Zygote: true})
	if err != nil {
		return nil, err
	}
	defer zygCold.Close()
	zygPooled, err := linux.New(linux.Options{Pool: cfg.Pool, Zygote: true})
	if err != nil {
		return nil, err
	}
	defer zygPooled.Close()
	through := func(rt *linux.Runtime) func(context.Context) (bool, error) {
		return func(ctx context.Context) (bool, error) {
			res, err := rt.Run(ctx, sandbox.Request{Language: sandbox.Python, Code: cfg.Code})
			if err != nil {
				return false, err
			}
			if !res.OK() || res.Stdout == "" {
				return false, fmt.Errorf("run failed: %s: %s", res.Summary(), res.Stderr)
			}
			return res.Pooled, nil
		}
	}
	waitPool := func(rt *linux.Runtime) func() {
		return func() {
			for rt.PoolReady(sandbox.Python) < 1 {
				time.Sleep(time.Millisecond)
			}
		}
	}
	rows := []struct {
		name   string
		run    func(context.Context) (bool, error)
		before func()
	}{
		{"bare /usr/bin/python3 -c", bare, nil},
		{"coderun, no pool", through(cold), nil},
		{"coderun, pool (warm)", through(pooled), waitPool(pooled)},
		{"coderun, zygote, no pool", through(zygCold), nil},
		{"coderun, zygote, pool (warm)", through(zygPooled), waitPool(zygPooled)},
	}
	for _, r := range rows {
		fmt.Fprintf(progress, "latency: %s…\n", r.name)
		l, err := measureLatency(ctx, r.name, cfg.Runs, r.run, r.before)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", r.name, err)
		}
		rep.Latencies = append(rep.Latencies, l)
	}
	for _, c := range cfg.Concurrency {
		fmt.Fprintf(progress, "throughput at concurrency %d…\n", c)
		b, _, err := measureThroughput(ctx, c, cfg.ThroughputFor, bare)
		if err != nil {
			return nil, err
		}
		waitFull(pooled, cfg.Pool)
		p, share, err := measureThroughput(ctx, c, cfg.ThroughputFor, through(pooled))
		if err != nil {
			return nil, err
		}
		waitFull(zygPooled, cfg.Pool)
		z, zshare, err := measureThroughput(ctx, c, cfg.ThroughputFor, through(zygPooled))
		if err != nil {
			return nil, err
		}
		rep.Throughput = append(rep.Throughput, Throughput{Concurrency: c, Bare: b, Pooled: p, PooledShare: share, Zygote: z, ZygoteShare: zshare})
	}
	return rep, nil
}

func waitFull(rt *linux.Runtime, n int) {
	deadline := time.Now().Add(10 * time.Second)
	for rt.PoolReady(sandbox.Python) < n && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
}

func measureLatency(ctx context.Context, name string, n int, run func(context.Context) (bool, error), before func()) (Latency, error) {
	times := make([]time.Duration, 0, n)
	pooled := 0
	for i := 0; i < n; i++ {
		if before != nil {
			before()
		}
		start := time.Now()
		p, err := run(ctx)
		if err != nil {
			return Latency{}, err
		}
		times = append(times, time.Since(start))
		if p {
			pooled++
		}
	}
	sort.Slice(times, func(i, j int) bool { return times[i] < times[j] })
	var sum time.Duration
	for _, t := range times {
		sum += t
	}
	return Latency{
		Name: name, P50: Percentile(times, 50), P95: Percentile(times, 95),
		Mean: sum / time.Duration(n), PooledShare: float64(pooled) / float64(n),
	}, nil
}

// measureThroughput runs as many requests as it can with c workers for d.
func measureThroughput(ctx context.Context, c int, d time.Duration, run func(context.Context) (bool, error)) (rate, pooledShare float64, err error) {
	var done, pooled atomic.Int64
	var firstErr error
	var once sync.Once
	deadline := time.Now().Add(d)
	start := time.Now()
	var wg sync.WaitGroup
	for range c {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(deadline) {
				p, err := run(ctx)
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
	if firstErr != nil {
		return 0, 0, firstErr
	}
	n := done.Load()
	return float64(n) / time.Since(start).Seconds(), float64(pooled.Load()) / float64(max(n, 1)), nil
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

// Print writes the report as two tables.
func (r *SandboxReport) Print(w io.Writer) {
	fmt.Fprintf(w, "\ncoderun sandbox benchmark: %q, %d sequential runs per row, %d CPUs\n\n", r.Config.Code, r.Config.Runs, runtime.NumCPU())
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "latency\tp50\tp95\tmean\tp50 / bare p50\tp95 / bare p95\tpooled\t")
	bare := r.Latencies[0]
	for _, l := range r.Latencies {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%.2f\t%.2f\t%.0f%%\t\n", l.Name, ms(l.P50), ms(l.P95), ms(l.Mean),
			float64(l.P50)/float64(bare.P50), float64(l.P95)/float64(bare.P95), 100*l.PooledShare)
	}
	tw.Flush()
	fmt.Fprintf(w, "\nthroughput (runs/s over %s; coderun with a pool of %d)\n\n", r.Config.ThroughputFor, r.Config.Pool)
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "concurrency\tbare python3\tcoderun (pool)\t/ bare\tserved pooled\tcoderun (pool, zygote)\t/ bare\tserved pooled\t")
	for _, t := range r.Throughput {
		fmt.Fprintf(tw, "%d\t%.1f\t%.1f\t%.2f\t%.0f%%\t%.1f\t%.2f\t%.0f%%\t\n", t.Concurrency, t.Bare, t.Pooled, t.Pooled/t.Bare, 100*t.PooledShare,
			t.Zygote, t.Zygote/t.Bare, 100*t.ZygoteShare)
	}
	tw.Flush()
}

func ms(d time.Duration) string { return fmt.Sprintf("%.2f ms", float64(d.Microseconds())/1000) }
