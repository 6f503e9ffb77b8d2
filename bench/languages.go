package bench

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/coderun/coderun/bench/measure"
	"github.com/coderun/coderun/eval"
	"github.com/coderun/coderun/language"
	"github.com/coderun/coderun/sandbox"
	"github.com/coderun/coderun/sandbox/linux"
	"github.com/coderun/coderun/sandbox/toolchain"
)

// LanguagesConfig sets the size of the languages benchmark.
type LanguagesConfig struct {
	// Runs is the number of hello-world runs per row, through coderun and
	// directly on the host, interleaved.
	Runs int
	// Languages to measure; empty: every language with a toolchain step
	// whose toolchain is installed.
	Languages []language.Language
	// HumanEvalX is the directory of humaneval_{cpp,go,java,js,rust}.jsonl.gz
	// ("" skips the items/s rows); Items is how many canonical solutions
	// of each language run there (0: all 164), Concurrency how many at once
	// (0: the number of CPUs).
	HumanEvalX  string
	Items       int
	Concurrency int
	// Pool adds a row through a runtime keeping that many sandboxes ready
	// for compiled languages (toolchain.Options.Pool; 0: no such row).
	// Each pooled run waits until the pool is full, so that its refilling
	// runs beside no measured run.
	Pool int
}

// DefaultLanguagesConfig is what `coderun bench languages` uses.
var DefaultLanguagesConfig = LanguagesConfig{Runs: 10, HumanEvalX: "eval/testdata/humaneval-x", Items: 20, Pool: 1}

// helloWorld is a program printing "hello" in each language.
var helloWorld = map[language.Language]string{
	language.C:          "#include <stdio.h>\nint main(void) { puts(\"hello\"); return 0; }\n",
	language.CPP:        "#include <iostream>\nint main() { std::cout << \"hello\" << std::endl; }\n",
	language.Go:         "package main\n\nimport \"fmt\"\n\nfunc main() { fmt.Println(\"hello\") }\n",
	language.Java:       "public class Main { public static void main(String[] a) { System.out.println(\"hello\"); } }\n",
	language.Rust:       "fn main() { println!(\"hello\"); }\n",
	language.TypeScript: "const greeting: string = \"hello\";\nconsole.log(greeting);\n",
	language.Ruby:       "puts 'hello'\n",
	language.PHP:        "<?php echo \"hello\\n\";\n",
	language.Perl:       "print \"hello\\n\";\n",
	language.Lua:        "print('hello')\n",
	language.R:          "cat('hello\\n')\n",
}

// humanEvalXFile names each HumanEval-X language's file.
var humanEvalXFile = map[language.Language]string{
	language.CPP: "humaneval_cpp.jsonl.gz", language.Go: "humaneval_go.jsonl.gz", language.Java: "humaneval_java.jsonl.gz",
	language.Node: "humaneval_js.jsonl.gz", language.Rust: "humaneval_rust.jsonl.gz",
}

// LanguageRow is one language's figures.
type LanguageRow struct {
	Language language.Language
	Version  string
	// Coderun is a hello world's compile and run through coderun (a fresh
	// sandbox, both steps); Pooled the same through a pool's sandbox
	// (compiled languages, with LanguagesConfig.Pool); Direct the same
	// commands run on the host.
	Coderun, Pooled, Direct Latency
	// CoderunCPU and DirectCPU are the median CPU time of one run, this
	// process tree's (measure.TreeCPU: the sandbox's processes and the
	// host's work for them; the toolchain's processes): a figure the
	// machine's load does not change as it does wall time. PooledCPU is
	// the same for a pooled run with the making of the sandbox that
	// replaces it (a pool moves the set-up off the run's path, not off
	// the CPU).
	CoderunCPU, PooledCPU, DirectCPU time.Duration
	// Items, ItemsPerSecond and Passed: HumanEval-X canonical solutions
	// through eval.Run (zero Items: not measured).
	Items          int
	Passed         int
	ItemsPerSecond float64
	// NotPassed are the verdicts of the items that did not pass.
	NotPassed []eval.Verdict
}

// LanguagesReport is the languages benchmark's result.
type LanguagesReport struct {
	Host   Host
	Config LanguagesConfig
	Rows   []LanguageRow
}

// Languages measures each language: hello world through coderun against
// the same toolchain commands on the host, and HumanEval-X items/s.
func Languages(ctx context.Context, cfg LanguagesConfig, progress io.Writer) (*LanguagesReport, error) {
	for _, l := range cfg.Languages {
		if helloWorld[l] == "" {
			return nil, fmt.Errorf("%s is not measured here: this benchmark is of the languages run through a toolchain (sandbox/toolchain); Python, Bash and Node are the runtime's own (coderun bench sandbox, bench runtimes)", l)
		}
	}
	inner, err := linux.New(linux.Options{})
	if err != nil {
		return nil, err
	}
	defer inner.Close()
	rt := toolchain.Wrap(inner, toolchain.Options{})
	var pooled sandbox.Runtime
	if cfg.Pool > 0 {
		pooled = toolchain.Wrap(inner, toolchain.Options{Pool: cfg.Pool})
		defer pooled.Close()
	}
	langs := cfg.Languages
	if len(langs) == 0 {
		for _, l := range language.All() {
			if !l.IsNative() {
				langs = append(langs, l)
			}
		}
	}
	rep := &LanguagesReport{Host: DetectHost(), Config: cfg}
	for _, l := range langs {
		st := toolchain.Check(ctx, rt, "", l)
		if !st.Available {
			fmt.Fprintf(progress, "bench: %s skipped: %s\n", l, st.Reason)
			continue
		}
		fmt.Fprintf(progress, "bench: %s: %d hello-world runs each way\n", l, cfg.Runs)
		row := LanguageRow{Language: l, Version: st.Version}
		if err = helloLatencies(ctx, rt, pooled, cfg.Pool, st.Tool, l, cfg.Runs, &row); err != nil {
			return nil, err
		}
		rep.Rows = append(rep.Rows, row)
	}
	if cfg.HumanEvalX != "" {
		for _, l := range []language.Language{language.CPP, language.Go, language.Java, language.Node, language.Rust} {
			fmt.Fprintf(progress, "bench: HumanEval-X %s\n", l)
			if err := humanEvalXRate(ctx, rt, cfg, l, rep); err != nil {
				return nil, err
			}
		}
	}
	return rep, nil
}

// helloLatencies times, interleaved, the hello world of lang through rt,
// through pooled (when not nil, for a compiled language) and its compile
// and run commands called directly on the host, into row.
func helloLatencies(ctx context.Context, rt, pooled sandbox.Runtime, poolSize int, tool string, lang language.Language, runs int, row *LanguageRow) error {
	spec, _ := language.Lookup(lang)
	code := helloWorld[lang]
	if !spec.Compiled() {
		pooled = nil // the pool serves compiled languages
	}
	var viaT, poolT, directT, viaC, poolC, directC []time.Duration
	hello := func(rt sandbox.Runtime, wantPooled bool) (time.Duration, error) {
		start := time.Now()
		res, err := rt.Run(ctx, sandbox.Request{Language: lang, Code: code})
		if err != nil {
			return 0, err
		}
		el := time.Since(start)
		if !res.OK() || res.Stdout != "hello\n" {
			return 0, fmt.Errorf("bench: %s hello world through coderun: %s: %s", lang, res.Summary(), res.Stderr)
		}
		if res.Pooled != wantPooled {
			return 0, fmt.Errorf("bench: %s hello world: pooled %v, want %v", lang, res.Pooled, wantPooled)
		}
		return el, nil
	}
	for i := 0; i < runs; i++ {
		if pooled != nil {
			if err := poolFull(ctx, pooled, poolSize); err != nil {
				return err
			}
			m := measure.Start()
			d, err := hello(pooled, true)
			if err != nil {
				return err
			}
			// The pool refills once the run has ended: its CPU is the
			// run's too.
			if err := poolFull(ctx, pooled, poolSize); err != nil {
				return err
			}
			tree, _ := m.Stop()
			poolT, poolC = append(poolT, d), append(poolC, tree.Total())
		}
		m := measure.Start()
		d, err := hello(rt, false)
		if err != nil {
			return err
		}
		tree, _ := m.Stop()
		viaT, viaC = append(viaT, d), append(viaC, tree.Total())
		m = measure.Start()
		if d, err = helloDirect(ctx, spec, tool, code); err != nil {
			return err
		}
		tree, _ = m.Stop()
		directT, directC = append(directT, d), append(directC, tree.Total())
	}
	if len(poolT) > 0 {
		row.Pooled, row.PooledCPU = summarize("coderun, pool", poolT, len(poolT)), summarize("", poolC, 0).P50
	}
	row.Coderun, row.Direct = summarize("coderun", viaT, 0), summarize("direct", directT, 0)
	row.CoderunCPU, row.DirectCPU = summarize("", viaC, 0).P50, summarize("", directC, 0).P50
	return nil
}

// poolFull waits until rt's pool holds size ready sandboxes.
func poolFull(ctx context.Context, rt sandbox.Runtime, size int) error {
	p, ok := rt.(interface{ PoolReady() int })
	if !ok {
		return fmt.Errorf("bench: %s has no pool", rt.Name())
	}
	deadline := time.Now().Add(time.Minute)
	for p.PoolReady() < size {
		if time.Now().After(deadline) {
			return fmt.Errorf("bench: the toolchain pool made no sandbox in a minute")
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(5 * time.Millisecond):
		}
	}
	return nil
}

// unprivileged is the user the host's commands run as when the benchmark
// runs as root (nobody).
const unprivileged = 65534

// helloDirect runs code's compile and run commands on the host, in a
// fresh directory with fresh caches (as a sandbox has), and times them.
// Run as root, the commands run as an unprivileged user, as the sandbox's
// program does: the toolchains' shared caches (language.GoCache) are then
// read-only on both sides, as they are meant to be. Root's Go would write
// each build's entries into the Go build cache every sandbox reads, a
// cache state no sandbox has and a change to the cache they share.
func helloDirect(ctx context.Context, spec *language.Spec, tool, code string) (time.Duration, error) {
	dir, err := os.MkdirTemp("", "coderun-bench-")
	if err != nil {
		return 0, err
	}
	defer os.RemoveAll(dir)
	var attr *syscall.SysProcAttr
	if os.Geteuid() == 0 {
		attr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: unprivileged, Gid: unprivileged, Groups: []uint32{}}}
	}
	cache := filepath.Join(dir, "cache")
	b, err := spec.Plan(tool, dir, cache, "", code, nil, func(p string) bool { _, err := os.Stat(p); return err == nil })
	if err != nil {
		return 0, err
	}
	env := []string{"PATH=/usr/local/bin:/usr/bin:/bin", "LANG=C.UTF-8"}
	for k, v := range b.Env {
		env = append(env, k+"="+v)
	}
	start := time.Now()
	if err := os.MkdirAll(filepath.Join(cache, "tmp"), 0o755); err != nil {
		return 0, err
	}
	if err := os.MkdirAll(filepath.Join(cache, "home"), 0o755); err != nil {
		return 0, err
	}
	if err := os.WriteFile(filepath.Join(dir, b.File), []byte(code), 0o644); err != nil {
		return 0, err
	}
	if attr != nil {
		if err := chownTree(dir, unprivileged); err != nil {
			return 0, err
		}
	}
	for _, argv := range [][]string{b.Compile, b.Run} {
		if argv == nil {
			continue
		}
		cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
		cmd.Dir, cmd.Env, cmd.SysProcAttr = dir, env, attr
		if out, err := cmd.CombinedOutput(); err != nil {
			return 0, fmt.Errorf("bench: %s on the host: %q: %v: %s", spec.Name, argv, err, out)
		}
	}
	return time.Since(start), nil
}

// chownTree gives the tree at dir to uid (and its group).
func chownTree(dir string, uid int) error {
	return filepath.WalkDir(dir, func(p string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, uid, uid)
	})
}

// humanEvalXRate runs the first cfg.Items canonical solutions of lang
// through eval.Run and adds items/s to lang's row (a row of its own for
// JavaScript, which has no hello-world row).
func humanEvalXRate(ctx context.Context, rt sandbox.Runtime, cfg LanguagesConfig, lang language.Language, rep *LanguagesReport) error {
	r, err := eval.Open(filepath.Join(cfg.HumanEvalX, humanEvalXFile[lang]))
	if err != nil {
		return err
	}
	defer r.Close()
	ps, err := eval.ReadProblems(r, eval.ReadOptions{Format: eval.HumanEvalX}, eval.StopAtBadLine)
	if err != nil {
		return err
	}
	if cfg.Items > 0 && cfg.Items < len(ps) {
		ps = ps[:cfg.Items]
	}
	items, err := eval.References(ps, eval.StopAtBadLine)
	if err != nil {
		return err
	}
	n := cfg.Concurrency
	if n <= 0 {
		n = runtime.NumCPU()
	}
	passed := 0
	var notPassed []eval.Verdict
	start := time.Now()
	err = eval.Run(ctx, rt, eval.Feed(items...), eval.Options{Concurrency: n}, func(v eval.Verdict) error {
		if v.Status == eval.Passed {
			passed++
		} else {
			notPassed = append(notPassed, v)
		}
		return nil
	})
	if err != nil {
		return err
	}
	rate := float64(len(items)) / time.Since(start).Seconds()
	for i := range rep.Rows {
		if rep.Rows[i].Language == lang {
			rep.Rows[i].Items, rep.Rows[i].Passed, rep.Rows[i].ItemsPerSecond, rep.Rows[i].NotPassed = len(items), passed, rate, notPassed
			return nil
		}
	}
	rep.Rows = append(rep.Rows, LanguageRow{Language: lang, Items: len(items), Passed: passed, ItemsPerSecond: rate, NotPassed: notPassed})
	return nil
}

// Print writes the report as one table.
func (r *LanguagesReport) Print(w io.Writer) {
	fmt.Fprintf(w, "\n%s\ncoderun languages benchmark: hello world compiled (where compiled) and run, %d runs each way, interleaved\n"+
		"(coderun: a fresh sandbox each; pool: a sandbox of a toolchain pool of %d, its driver started, refilled after each run;\n"+
		"CPU: median CPU time of one run, this process tree's: coderun's fresh-sandbox run, the pooled run with its refill, the host's commands);\n"+
		"HumanEval-X canonical solutions through eval.Run (%d per language, %d at once)\n\n", r.Host, r.Config.Runs, r.Config.Pool, r.Config.Items, max(r.Config.Concurrency, runtime.NumCPU()))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "language\tcoderun p50\tpool p50\tdirect p50\toverhead\tpool overhead\tcoderun p95\tpool p95\tdirect p95\tCPU coderun\tCPU pool\tCPU direct\tCPU overhead\tCPU pool overhead\tHumanEval-X items/s\tpassed\t")
	over := func(l Latency, d time.Duration) string {
		if l.P50 == 0 {
			return ""
		}
		return fmt.Sprintf("%+.0f%%", 100*(float64(l.P50)/float64(d)-1))
	}
	p := func(d time.Duration) string {
		if d == 0 {
			return ""
		}
		return ms(d)
	}
	for _, row := range r.Rows {
		hello := "\t\t\t\t\t\t\t\t\t\t\t\t\t"
		if row.Coderun.P50 > 0 {
			hello = fmt.Sprintf("%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t", ms(row.Coderun.P50), p(row.Pooled.P50), ms(row.Direct.P50),
				over(row.Coderun, row.Direct.P50), over(row.Pooled, row.Direct.P50), ms(row.Coderun.P95), p(row.Pooled.P95), ms(row.Direct.P95),
				ms(row.CoderunCPU), p(row.PooledCPU), ms(row.DirectCPU), over(Latency{P50: row.CoderunCPU}, row.DirectCPU), over(Latency{P50: row.PooledCPU}, row.DirectCPU))
		}
		items := "\t\t"
		if row.Items > 0 {
			items = fmt.Sprintf("%.2f\t%d/%d\t", row.ItemsPerSecond, row.Passed, row.Items)
		}
		fmt.Fprintf(tw, "%s\t%s%s\n", row.Language, hello, items)
	}
	tw.Flush()
	for _, row := range r.Rows {
		for _, v := range row.NotPassed {
			why := v.Error
			if why == "" {
				why = string(v.Reason)
			}
			fmt.Fprintf(w, "not passed: %s %s: %s\n", v.TaskID, v.Status, why)
		}
	}
}
