package bench

import (
	"context"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/coderun/coderun/sandbox"
	"github.com/coderun/coderun/sandbox/docker"
	"github.com/coderun/coderun/sandbox/linux"
)

// RuntimesConfig is what the runtimes benchmark measures.
type RuntimesConfig struct {
	Runs int    // sequential runs per row
	Pool int    // pre-started sandboxes of the warm rows
	Code string // the Python program
	// Docker configures the docker runtime's rows (its Pool is set per row).
	Docker docker.Options
	// SessionCold is the number of cold session rows' measurements (a
	// session started and its first cell run), SessionCells the warm
	// ones' (a cell in a running session); zero skips those rows.
	SessionCold, SessionCells int
}

// DefaultRuntimesConfig measures 50 runs of a one-line program one-shot,
// and of a 1+1 session cell, 10 session starts and 200 cells per runtime.
var DefaultRuntimesConfig = RuntimesConfig{Runs: 50, Pool: 2, Code: `print("hello")`, SessionCold: 10, SessionCells: 200}

// RuntimesReport is the runtimes' latencies side by side.
type RuntimesReport struct {
	Host   Host
	Config RuntimesConfig
	Rows   []Latency
	// Sessions are the session cell's rows: the baseline's, then each
	// runtime's, cold, then warm (bench/session_runtimes.go).
	Sessions []Latency
	Skipped  []string // rows not measured, and why
	Notes    []string // comparisons a runtime's rows print (bench/gvisor.go)
}

// warmRuntime is a runtime with a pool whose fill can be awaited.
type warmRuntime interface {
	sandbox.Runtime
	PoolReady() int
}

// Runtimes measures a trivial Python program, one-shot, on each runtime
// present, cold (a sandbox made per run) and warm (served by the pool),
// against bare /usr/bin/python3 -c; then a 1+1 cell of a session on each
// runtime present, cold (session start and first cell) and warm, against
// bare /usr/bin/python3 over a pipe (sessionRows).
func Runtimes(ctx context.Context, cfg RuntimesConfig, progress io.Writer) (*RuntimesReport, error) {
	rep := &RuntimesReport{Host: DetectHost(), Config: cfg}
	bare := make([]time.Duration, 0, cfg.Runs)
	for i := 0; i < cfg.Runs; i++ {
		start := time.Now()
		if out, err := exec.CommandContext(ctx, "/usr/bin/python3", "-c", cfg.Code).Output(); err != nil || len(out) == 0 {
			return nil, fmt.Errorf("bare python3: %v (output %q)", err, out)
		}
		bare = append(bare, time.Since(start))
	}
	rep.Rows = append(rep.Rows, summarize("bare /usr/bin/python3 -c", bare, 0))
	type row struct {
		name string
		open func() (warmRuntime, error)
		pool int
	}
	rows := []row{
		{"linux, cold", func() (warmRuntime, error) { return openLinux(linux.Options{}) }, 0},
		{"linux, warm (pool)", func() (warmRuntime, error) { return openLinux(linux.Options{Pool: cfg.Pool}) }, cfg.Pool},
		{"docker, cold", func() (warmRuntime, error) { o := cfg.Docker; o.Pool = 0; return docker.New(o) }, 0},
		{"docker, warm (pool)", func() (warmRuntime, error) { o := cfg.Docker; o.Pool = cfg.Pool; return docker.New(o) }, cfg.Pool},
	}
	for _, r := range rows {
		fmt.Fprintf(progress, "latency: %s…\n", r.name)
		rt, err := r.open()
		if err != nil {
			rep.Skipped = append(rep.Skipped, fmt.Sprintf("%s: %v", r.name, err))
			continue
		}
		l, err := oneShots(ctx, rt, r.name, r.pool, cfg)
		rt.Close()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", r.name, err)
		}
		rep.Rows = append(rep.Rows, l)
	}
	g, notes, err := gvisorRows(ctx, cfg, progress)
	if err != nil {
		return nil, err
	}
	rep.Rows, rep.Notes = append(rep.Rows, g...), append(rep.Notes, notes...)
	sessions, skipped, err := sessionRows(ctx, cfg, progress)
	if err != nil {
		return nil, err
	}
	rep.Sessions, rep.Skipped = sessions, append(rep.Skipped, skipped...)
	return rep, nil
}

func openLinux(o linux.Options) (warmRuntime, error) {
	rt, err := linux.New(o)
	if err != nil {
		return nil, err
	}
	return pythonPool{rt}, nil
}

// pythonPool adapts the linux runtime (whose pools are per language).
type pythonPool struct{ *linux.Runtime }

func (p pythonPool) PoolReady() int { return p.Runtime.PoolReady(sandbox.Python) }

// oneShots runs cfg.Code cfg.Runs times in rt, one after another; with a
// pool, each run waits for a sandbox to be ready first (as a server whose
// requests come slower than the pool refills), outside the measured time.
func oneShots(ctx context.Context, rt warmRuntime, name string, pool int, cfg RuntimesConfig) (Latency, error) {
	times := make([]time.Duration, 0, cfg.Runs)
	pooled := 0
	for i := 0; i < cfg.Runs; i++ {
		deadline := time.Now().Add(time.Minute)
		for pool > 0 && rt.PoolReady() < 1 && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond)
		}
		start := time.Now()
		res, err := rt.Run(ctx, sandbox.Request{Language: sandbox.Python, Code: cfg.Code})
		if err != nil {
			return Latency{}, err
		}
		if !res.OK() || res.Stdout == "" {
			return Latency{}, fmt.Errorf("run failed: %s: %s", res.Summary(), res.Stderr)
		}
		times = append(times, time.Since(start))
		if res.Pooled {
			pooled++
		}
	}
	return summarize(name, times, pooled), nil
}

// Print writes the report as a table.
func (r *RuntimesReport) Print(w io.Writer) {
	fmt.Fprintf(w, "\n%s\n", r.Host)
	fmt.Fprintf(w, "runtimes benchmark: %q one-shot, %d sequential runs per row (pools of %d)\n\n", r.Config.Code, r.Config.Runs, r.Config.Pool)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "one-shot\tp50\tp95\tmean\tp50 / bare\tpooled\t")
	for _, l := range r.Rows {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%.2f\t%.0f%%\t\n", l.Name, ms(l.P50), ms(l.P95), ms(l.Mean), ratio(l.P50, r.Rows[0].P50), 100*l.PooledShare)
	}
	tw.Flush()
	if len(r.Sessions) > 0 {
		fmt.Fprintf(w, "\nsession cell %q (the session package on a long-lived sandbox): cold = session start + first cell (%d per row), warm = a cell in a running session (%d per row); rows interleaved\n\n",
			sessionCell, r.Config.SessionCold, r.Config.SessionCells)
		tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "session cell\tp50\tp95\tmean\tp50 / baseline\t")
		var base Latency
		for _, l := range r.Sessions {
			if strings.HasSuffix(l.Name, "(baseline)") {
				base = l
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%.2f\t\n", l.Name, short(l.P50), short(l.P95), short(l.Mean), ratio(l.P50, base.P50))
		}
		tw.Flush()
	}
	for _, s := range r.Skipped {
		fmt.Fprintf(w, "not measured: %s\n", s)
	}
	for _, n := range r.Notes {
		fmt.Fprintln(w, n)
	}
}
