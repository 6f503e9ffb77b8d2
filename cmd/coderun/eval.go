package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/coderun/coderun/eval"
	"github.com/coderun/coderun/internal/plural"
	"github.com/coderun/coderun/sandbox"
	"github.com/spf13/cobra"
)

type evalFlags struct {
	samples     string
	quiet       bool
	output      string
	format      string
	challenge   bool
	concurrency int
	pool        int
	zygote      bool
	ks          []int
	strict      bool
	retryErrors bool
	summary     string
	json        bool
	progress    string
	every       time.Duration
	wall        time.Duration
	cpu         time.Duration
	memory      string
	procs       int
	outputLimit string
}

func newEvalCmd(g *globalFlags) *cobra.Command {
	f := &evalFlags{}
	cmd := &cobra.Command{
		Use:   "eval PROBLEMS.jsonl[.gz]",
		Short: "Run many programs against their tests, each in a fresh sandbox",
		Long: `Run benchmark problems (or a model's completions of them) against their tests,
each item in a fresh sandbox, several at once, and write one JSON verdict per item:
passed, failed (with the exception line and the failing source line), timeout,
memory, or error (the item could not be run). A summary follows on standard error:
pass count, pass@k, per-item latency and throughput.

PROBLEMS is JSON Lines, plain or gzip-compressed ("-" for standard input), in one of
three shapes, detected per line or forced with --format:
  humaneval  {task_id, prompt, canonical_solution, test, entry_point}
  mbpp       {task_id, text, code, test_list, test_setup_code, challenge_test_list}
  generic    {id, code, test} (optional "language": python, bash, node)
Without --samples the reference solutions run. With --samples, each line
{task_id, completion} is one candidate (several per task): it replaces the reference
solution (HumanEval: it continues the prompt), and pass@k is computed for each k in
--k that every task has at least k samples for.

With --output FILE the eval can be resumed: verdicts already in FILE are read back
and their items are not run again; a line cut short by a crash is repaired. Ctrl-C
stops cleanly; run the same command again to continue.

Bad input lines are reported with their line numbers and skipped, or, with --strict,
stop the eval before anything runs.

Exit status: 0 when every item got a verdict (whatever it is); 2 for bad flags or,
with --strict, bad input; 130 when interrupted; 1 for other failures.`,
		Example: `  coderun eval HumanEval.jsonl.gz -o verdicts.jsonl
  coderun eval HumanEval.jsonl.gz --samples samples.jsonl -o results.jsonl --k 1,10
  coderun eval mbpp.jsonl --timeout 5s -j 4 -o mbpp.verdicts.jsonl --summary summary.json`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if !cmd.Flags().Changed("pool") {
				f.pool = 2 * f.concurrency
			}
			return runEval(cmd.Context(), g, f, args[0], cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	fl := cmd.Flags()
	fl.StringVarP(&f.samples, "samples", "s", "", "completions to score, {task_id, completion} per line (default: run the reference solutions)")
	fl.StringVarP(&f.output, "output", "o", "", "write verdicts to this file, resuming from the verdicts already in it (default: standard output, no resume)")
	fl.StringVar(&f.format, "format", "auto", "problem format: auto, humaneval, mbpp, generic")
	fl.BoolVar(&f.challenge, "mbpp-challenge", false, "also run MBPP's challenge_test_list")
	fl.IntVarP(&f.concurrency, "concurrency", "j", runtime.NumCPU(), "items run at once")
	fl.IntVar(&f.pool, "pool", 0, "pre-started sandboxes kept ready (default twice the concurrency; 0 turns the pool off)")
	fl.BoolVar(&f.zygote, "zygote", true, "fork each Python item from one interpreter started ahead, into its fresh sandbox (not with --rootfs)")
	fl.IntSliceVar(&f.ks, "k", eval.DefaultK, "k of pass@k, reported when every task has at least k samples")
	fl.BoolVar(&f.strict, "strict", false, "stop at the first bad input line instead of skipping it")
	fl.BoolVar(&f.retryErrors, "retry-errors", false, "when resuming, run again the items whose verdict is error")
	fl.StringVar(&f.summary, "summary", "", "also write the summary as JSON to this file")
	fl.BoolVar(&f.json, "json", false, "print the summary as JSON on standard output (needs --output)")
	fl.StringVar(&f.progress, "progress", "auto", "progress report on standard error: auto (a bar on a terminal, else lines), bar, lines, none")
	fl.BoolVarP(&f.quiet, "quiet", "q", false, "no progress on standard error (as --progress none)")
	fl.DurationVar(&f.every, "progress-every", 10*time.Second, "interval of progress lines when not on a terminal")
	fl.DurationVarP(&f.wall, "timeout", "t", 10*time.Second, "wall-time limit per item")
	fl.DurationVar(&f.cpu, "cpu-time", 10*time.Second, "CPU-time limit per item")
	fl.StringVarP(&f.memory, "memory", "m", sandbox.FormatBytes(sandbox.DefaultLimits.Memory), "memory limit per item (e.g. 256MiB)")
	fl.IntVar(&f.procs, "processes", sandbox.DefaultLimits.Processes, "processes and threads alive at once per item")
	fl.StringVar(&f.outputLimit, "output-limit", sandbox.FormatBytes(sandbox.DefaultLimits.OutputBytes), "bytes captured per output stream per item; more fails the item")
	return cmd
}

func (f *evalFlags) limits() (sandbox.Limits, error) {
	l := sandbox.Limits{WallTime: f.wall, CPUTime: f.cpu, Processes: f.procs}
	var err error
	if l.Memory, err = sandbox.ParseBytes(f.memory); err != nil {
		return l, usagef("--memory: %v", err)
	}
	if l.OutputBytes, err = sandbox.ParseBytes(f.outputLimit); err != nil {
		return l, usagef("--output-limit: %v", err)
	}
	if l.WallTime <= 0 || l.CPUTime <= 0 || l.Processes <= 0 || l.Memory <= 0 || l.OutputBytes <= 0 {
		return l, usagef("limits must be positive")
	}
	if err := l.WithDefaults(sandbox.DefaultLimits).Validate(); err != nil {
		return l, usagef("%v", err)
	}
	return l, nil
}

func runEval(ctx context.Context, g *globalFlags, f *evalFlags, problemsPath string, stdout, stderr io.Writer) error {
	cfg, err := g.load(g.runtimeFlags(), []binding{{"pool", "runtime.linux.pool", &f.pool}, {"zygote", "runtime.linux.zygote", &f.zygote}})
	if err != nil {
		return err
	}
	// eval's own defaults, unless the configuration or a flag says otherwise:
	// a pool for its concurrency, and the zygote.
	if err := cfg.SetDefault("runtime.linux.pool", strconv.Itoa(max(f.pool, 0))); err != nil {
		return err
	}
	if err := cfg.SetDefault("runtime.linux.zygote", strconv.FormatBool(f.zygote)); err != nil {
		return err
	}
	format, err := eval.ParseFormat(f.format)
	if err != nil {
		return usagef("--format: %v", err)
	}
	limits, err := f.limits()
	if err != nil {
		return err
	}
	if f.concurrency < 1 {
		return usagef("--concurrency must be at least 1")
	}
	for _, k := range f.ks {
		if k < 1 {
			return usagef("--k: %d is not a positive number of samples", k)
		}
	}
	if f.json && f.output == "" {
		return usagef("--json prints the summary on standard output, where the verdicts go without --output")
	}
	if f.quiet {
		f.progress = "none"
	}
	mode, err := progressMode(f.progress, stderr)
	if err != nil {
		return err
	}
	// Outputs are checked before anything runs; verdicts are never appended
	// to the file they are computed from.
	if err := checkOutputFile("--output", f.output, problemsPath, f.samples); err != nil {
		return err
	}
	if err := checkOutputFile("--summary", f.summary, problemsPath, f.samples, f.output); err != nil {
		return err
	}

	// Read and check every input before anything runs.
	badLines := 0
	bad := func(e *eval.LineError) error {
		badLines++
		if f.strict {
			return usagef("%v (stopping: --strict)", e)
		}
		fmt.Fprintf(stderr, "coderun eval: skipped %v\n", e)
		return nil
	}
	items, err := readItems(problemsPath, f, format, bad)
	if err != nil {
		return err
	}
	out := eval.NewOutput(stdout)
	todo := items
	var kept []eval.Verdict
	if f.output != "" {
		var done []eval.Verdict
		if out, done, err = eval.OpenOutput(f.output, bad); err != nil {
			return err
		}
		defer out.Close()
		var rerun func(eval.Verdict) bool
		if f.retryErrors {
			rerun = func(v eval.Verdict) bool { return v.Status == eval.Error }
		}
		var unknown int
		if todo, kept, unknown, err = eval.Plan(items, done, rerun); err != nil {
			return err
		}
		if unknown > 0 {
			fmt.Fprintf(stderr, "coderun eval: %s has %s for items not in this eval; they are left alone and not counted\n", f.output, plural.Count(unknown, "verdict"))
		}
		if len(kept) > 0 {
			fmt.Fprintf(stderr, "coderun eval: resuming: %d of %d items already have verdicts in %s\n", len(kept), len(items), f.output)
		}
	}
	if badLines > 0 {
		fmt.Fprintf(stderr, "coderun eval: %d bad input lines skipped\n", badLines)
	}
	var tally eval.Tally
	for _, v := range kept {
		tally.Add(v, false)
	}

	start := time.Now()
	var runErr error
	if len(todo) > 0 {
		rt, err := openRuntime(cfg)
		if err != nil {
			return err
		}
		defer rt.Close()
		ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
		defer stop()
		prog := startProgress(stderr, mode, f.every, len(items), &tally)
		runErr = eval.Run(ctx, rt, eval.Feed(todo...), eval.Options{Concurrency: f.concurrency, Limits: limits}, func(v eval.Verdict) error {
			if err := out.Write(v); err != nil {
				return err
			}
			prog.add(v)
			return nil
		})
		prog.stop()
		if err := out.Sync(); err != nil && runErr == nil {
			runErr = err
		}
	}
	elapsed := time.Since(start)

	sum := tally.Summary(f.ks, elapsed)
	fmt.Fprintln(stderr, "coderun eval:")
	_ = sum.WriteText(prefixWriter{stderr, "  "})
	if n := sum.Counts[eval.Error]; n > 0 {
		fmt.Fprintf(stderr, "coderun eval: %s could not be run (status error, see their verdicts)", plural.Count(n, "item"))
		if f.output != "" {
			fmt.Fprint(stderr, "; run again with --retry-errors to retry them")
		}
		fmt.Fprintln(stderr)
	}
	if f.summary != "" {
		data, _ := json.MarshalIndent(sum, "", "  ")
		if err := os.WriteFile(f.summary, append(data, '\n'), 0o644); err != nil && runErr == nil {
			runErr = errOutputLost("--summary", f.summary, err)
		}
	}
	if f.json {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		_ = enc.Encode(sum)
	}
	switch {
	case runErr == nil:
		return nil
	case errors.Is(runErr, context.Canceled):
		left := len(items) - tally.Done()
		if f.output != "" {
			fmt.Fprintf(stderr, "coderun eval: interrupted with %s left; run the same command again to continue\n", plural.Count(left, "item"))
		} else {
			fmt.Fprintf(stderr, "coderun eval: interrupted with %s left (use --output FILE to be able to resume)\n", plural.Count(left, "item"))
		}
		return exitError{exitKilled}
	default:
		return runErr
	}
}

// readItems reads the problems and, with --samples, the completions, and
// returns the items to run.
func readItems(problemsPath string, f *evalFlags, format eval.Format, bad eval.BadLineFunc) ([]eval.Item, error) {
	r, err := eval.Open(problemsPath)
	if err != nil {
		return nil, usagef("problems: %v", err)
	}
	defer r.Close()
	problems, err := eval.ReadProblems(r, eval.ReadOptions{Format: format, MBPPChallenge: f.challenge, Name: problemsPath}, bad)
	if err != nil {
		return nil, err
	}
	if len(problems) == 0 {
		return nil, usagef("%s: no problems", problemsPath)
	}
	var items []eval.Item
	if f.samples == "" {
		items, err = eval.References(problems, bad)
	} else {
		items, err = readSamples(f.samples, problems, bad)
	}
	if err != nil {
		return nil, err
	}
	if len(items) == 0 {
		return nil, usagef("nothing to run")
	}
	return items, nil
}

func readSamples(path string, problems []*eval.Problem, bad eval.BadLineFunc) ([]eval.Item, error) {
	r, err := eval.Open(path)
	if err != nil {
		return nil, usagef("samples: %v", err)
	}
	defer r.Close()
	return eval.ReadSamples(r, path, problems, bad)
}

func progressMode(s string, w io.Writer) (string, error) {
	switch s {
	case "bar", "lines", "none":
		return s, nil
	case "auto":
		if f, ok := w.(*os.File); ok && isTerminal(f) {
			return "bar", nil
		}
		return "lines", nil
	}
	return "", usagef("--progress: want auto, bar, lines or none, not %q", s)
}

// progress reports items done, the pass rate so far and the rate per
// second: a bar redrawn in place on a terminal, or a line every so often.
type progress struct {
	w     io.Writer
	mode  string
	total int
	tally *eval.Tally
	start time.Time
	every time.Duration

	mu       sync.Mutex
	ran      int
	lastDraw time.Time
	quit     chan struct{}
	wg       sync.WaitGroup
}

func startProgress(w io.Writer, mode string, every time.Duration, total int, tally *eval.Tally) *progress {
	p := &progress{w: w, mode: mode, total: total, tally: tally, start: time.Now(), every: every, quit: make(chan struct{})}
	if mode == "none" {
		return p
	}
	tick := every
	if mode == "bar" {
		tick = 250 * time.Millisecond
		p.draw()
	}
	if tick <= 0 {
		tick = 10 * time.Second
	}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		t := time.NewTicker(tick)
		defer t.Stop()
		for {
			select {
			case <-p.quit:
				return
			case <-t.C:
				p.mu.Lock()
				p.draw()
				p.mu.Unlock()
			}
		}
	}()
	return p
}

// add counts a verdict (it is called from eval.Run's yield, one at a time).
func (p *progress) add(v eval.Verdict) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.tally.Add(v, true)
	p.ran++
	if p.mode == "bar" && time.Since(p.lastDraw) >= 50*time.Millisecond {
		p.draw()
	}
}

// draw renders the current state; p.mu is held (or no other goroutine runs).
func (p *progress) draw() {
	p.lastDraw = time.Now()
	done, passed := p.tally.Done(), p.tally.Passed()
	el := time.Since(p.start).Seconds()
	rate := 0.0
	if el > 0 {
		rate = float64(p.ran) / el
	}
	passPct := 0.0
	if done > 0 {
		passPct = 100 * float64(passed) / float64(done)
	}
	eta := ""
	if rate > 0 && done < p.total {
		eta = "  eta " + (time.Duration(float64(p.total-done)/rate) * time.Second).Round(time.Second).String()
	}
	switch p.mode {
	case "bar":
		const width = 30
		fill := 0
		if p.total > 0 {
			fill = width * done / p.total
		}
		fmt.Fprintf(p.w, "\r\033[K[%s%s] %d/%d  passed %.1f%%  %.1f items/s%s",
			strings.Repeat("#", fill), strings.Repeat("-", width-fill), done, p.total, passPct, rate, eta)
	case "lines":
		fmt.Fprintf(p.w, "coderun eval: %d/%d done, passed %.1f%%, %.1f items/s%s\n", done, p.total, passPct, rate, eta)
	}
}

func (p *progress) stop() {
	if p.mode == "none" {
		return
	}
	close(p.quit)
	p.wg.Wait()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.mode == "bar" {
		p.draw()
		fmt.Fprint(p.w, "\n")
	}
}

// prefixWriter indents every line written through it.
type prefixWriter struct {
	w      io.Writer
	prefix string
}

func (p prefixWriter) Write(b []byte) (int, error) {
	s := strings.TrimSuffix(string(b), "\n")
	s = p.prefix + strings.ReplaceAll(s, "\n", "\n"+p.prefix) + "\n"
	if _, err := io.WriteString(p.w, s); err != nil {
		return 0, err
	}
	return len(b), nil
}
