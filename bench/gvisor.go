package bench

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"time"

	"github.com/coderun/coderun/sandbox"
	"github.com/coderun/coderun/sandbox/gvisor"
)

// gvisorTarget is issue 16's bound on the gvisor runtime's cold one-shot
// p50, as a multiple of runsc do's.
const gvisorTarget = 1.2

// gvisorRows measures the gvisor runtime beside runsc on its own: `runsc
// do /usr/bin/python3 -c CODE` (runsc's own quick way to run a command in
// a sandbox over the host's root, the same binary) and a one-shot run of
// the same code on the gvisor runtime, cold (a sandbox made per run),
// alternately, run by run, so that the machine's load weighs on both
// alike. It returns the rows and a note comparing them, or why they were
// not measured.
func gvisorRows(ctx context.Context, cfg RuntimesConfig, progress io.Writer) ([]Latency, []string, error) {
	bin, err := gvisor.FindRunsc("")
	if err != nil {
		return nil, []string{fmt.Sprintf("not measured: gvisor: %v", err)}, nil
	}
	rt, err := gvisor.New(gvisor.Options{Runsc: bin})
	if err != nil {
		return nil, []string{fmt.Sprintf("not measured: gvisor: %v", err)}, nil
	}
	defer rt.Close()
	root, err := os.MkdirTemp("", "coderun-bench-runsc-")
	if err != nil {
		return nil, nil, err
	}
	defer os.RemoveAll(root)
	fmt.Fprintf(progress, "latency: runsc do and gvisor, cold, alternately…\n")
	var do, cold []time.Duration
	for i := 0; i < cfg.Runs; i++ {
		start := time.Now()
		out, err := exec.CommandContext(ctx, bin, "--root="+root, "--network=none", "do", "/usr/bin/python3", "-c", cfg.Code).Output()
		if err != nil || len(out) == 0 {
			return nil, nil, fmt.Errorf("runsc do: %v (output %q)", err, out)
		}
		do = append(do, time.Since(start))
		start = time.Now()
		res, err := rt.Run(ctx, sandbox.Request{Language: sandbox.Python, Code: cfg.Code})
		if err != nil {
			return nil, nil, fmt.Errorf("gvisor: %w", err)
		}
		if !res.OK() || res.Stdout == "" {
			return nil, nil, fmt.Errorf("gvisor: run failed: %s: %s", res.Summary(), res.Stderr)
		}
		cold = append(cold, time.Since(start))
	}
	rows := []Latency{summarize("runsc do python3 (alone)", do, 0), summarize("gvisor, cold", cold, 0)}
	r := ratio(rows[1].P50, rows[0].P50)
	verdict := "within"
	if r > gvisorTarget {
		verdict = "OVER"
	}
	note := fmt.Sprintf("gvisor cold p50 / runsc do p50 = %.2f (p95 %.2f): %s the %.1fx target",
		r, ratio(rows[1].P95, rows[0].P95), verdict, gvisorTarget)
	return rows, []string{note}, nil
}
