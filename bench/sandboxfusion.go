package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"text/tabwriter"
	"time"

	"github.com/coderun/coderun/sandbox/linux"
	"github.com/coderun/coderun/server/sandboxfusion"
)

// SandboxFusionConfig sets the size of the SandboxFusion benchmark.
type SandboxFusionConfig struct {
	Runs          int // sequential runs per latency row
	Concurrency   int // the throughput level
	ThroughputFor time.Duration
	Pool          int // pre-started sandboxes of the runtime both rows share
	Code          string
	CLIRuns       int    // runs of coderun exec -c (0: skip the row)
	Exe           string // the coderun binary (default: this program)
}

// DefaultSandboxFusionConfig is what `coderun bench sandboxfusion` uses.
var DefaultSandboxFusionConfig = SandboxFusionConfig{
	Runs:          200,
	Concurrency:   8,
	ThroughputFor: 3 * time.Second,
	Pool:          8,
	Code:          "print(1)",
	CLIRuns:       30,
}

// throughputRounds is how many alternating rounds the throughput of each
// row is measured in.
const throughputRounds = 4

// The targets of issue 14 for a trivial Python /run_code on a 2-core
// machine.
const (
	targetP50       = 10 * time.Millisecond
	targetPerSecond = 150
)

// SandboxFusionReport is the outcome of SandboxFusion.
type SandboxFusionReport struct {
	Host   Host
	Config SandboxFusionConfig
	// Latencies: in-process, /run_code over HTTP, then the command-line
	// rows (python3 -c, coderun exec -c, coderun version).
	Latencies []Latency
	// Rates at Config.Concurrency: in-process, then /run_code over HTTP.
	Rates []Rate
}

// SandboxFusion measures a trivial Python program run through
// SandboxFusion's POST /run_code on a loopback HTTP server, against the
// same run in-process (the same runtime: a pool and the zygote) and
// against coderun exec -c, in one run: latency one request at a time, and
// throughput at a concurrency.
func SandboxFusion(ctx context.Context, cfg SandboxFusionConfig, progress io.Writer) (*SandboxFusionReport, error) {
	rep := &SandboxFusionReport{Host: DetectHost(), Config: cfg}
	rt, err := linux.New(linux.Options{Pool: cfg.Pool, Zygote: true})
	if err != nil {
		return nil, err
	}
	defer rt.Close()
	h, err := sandboxfusion.New(sandboxfusion.Options{Runtime: rt, InsecureLocal: true, MaxConcurrent: max(cfg.Concurrency, 1)})
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	srv := &http.Server{Handler: h}
	go srv.Serve(ln)
	defer srv.Close()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: max(cfg.Concurrency, 1) * 2}}
	url := "http://" + ln.Addr().String() + "/run_code"

	configs := []config{
		{name: "in-process Runtime.Run", run: through(rt, cfg.Code), rt: rt, pool: cfg.Pool},
		{name: "POST /run_code (HTTP)", run: overHTTP(client, url, cfg.Code), rt: rt, pool: cfg.Pool},
	}
	lat, err := measureLatencies(ctx, configs, cfg.Runs, progress)
	if err != nil {
		return nil, err
	}
	rep.Latencies = lat
	// Throughput in alternating rounds, so that both rows see the same
	// machine (it is shared: what else runs changes from second to
	// second).
	fmt.Fprintf(progress, "throughput at concurrency %d, %d alternating rounds…\n", cfg.Concurrency, throughputRounds)
	rep.Rates = make([]Rate, len(configs))
	for round := 0; round < throughputRounds; round++ {
		for i, c := range configs {
			settle(c)
			r, err := measureThroughput(ctx, cfg.Concurrency, cfg.ThroughputFor/throughputRounds, c.run)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", c.name, err)
			}
			sum := &rep.Rates[i]
			sum.Name = c.name
			sum.PerSecond += r.PerSecond / throughputRounds
			sum.Tree = sum.Tree.Add(r.Tree.Per(throughputRounds))
			sum.Machine = sum.Machine.Add(r.Machine.Per(throughputRounds))
		}
	}
	if cfg.CLIRuns > 0 {
		fmt.Fprintln(progress, "command line one-shots…")
		cli, err := measureCLI(ctx, SandboxConfig{Code: cfg.Code, CLIRuns: cfg.CLIRuns, Exe: cfg.Exe})
		if err != nil {
			return nil, err
		}
		rep.Latencies = append(rep.Latencies, cli...)
	}
	return rep, nil
}

// overHTTP posts code to /run_code as verl does and checks it succeeded.
func overHTTP(client *http.Client, url, code string) runFunc {
	body, _ := json.Marshal(map[string]any{"code": code, "language": "python", "stdin": nil,
		"run_timeout": 10, "compile_timeout": 10, "memory_limit_MB": 1024, "files": map[string]any{}, "fetch_files": []any{}})
	return func(ctx context.Context) (bool, CPU, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
		if err != nil {
			return false, CPU{}, err
		}
		req.Header.Set("Content-Type", "application/json")
		resp, err := client.Do(req)
		if err != nil {
			return false, CPU{}, err
		}
		defer resp.Body.Close()
		var out struct {
			Status    string `json:"status"`
			Message   string `json:"message"`
			RunResult *struct {
				Stdout string `json:"stdout"`
			} `json:"run_result"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
			return false, CPU{}, fmt.Errorf("HTTP %d: %w", resp.StatusCode, err)
		}
		if out.Status != "Success" || out.RunResult == nil || out.RunResult.Stdout == "" {
			return false, CPU{}, errors.New("run_code: " + out.Status + " " + out.Message)
		}
		return false, CPU{}, nil
	}
}

// Print writes the report side by side, with the targets.
func (r *SandboxFusionReport) Print(w io.Writer) {
	fmt.Fprintf(w, "\n%s\n", r.Host)
	fmt.Fprintf(w, "SandboxFusion /run_code benchmark: %q; one runtime (pool %d, zygote) for the first two rows\n\n", r.Config.Code, r.Config.Pool)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "latency, one at a time\tp50\tp95\tmean\tp50 - in-process\t")
	base := r.Latencies[0]
	for _, l := range r.Latencies {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%+.2f ms\t\n", l.Name, ms(l.P50), ms(l.P95), ms(l.Mean), float64((l.P50-base.P50).Microseconds())/1000)
	}
	tw.Flush()
	fmt.Fprintf(w, "\nthroughput at concurrency %d over %s each, in %d alternating rounds; CPU per run in ms (user + system)\n\n",
		r.Config.Concurrency, r.Config.ThroughputFor, throughputRounds)
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "\truns/s\t/ in-process\tCPU tree\tCPU machine\t")
	for _, rate := range r.Rates {
		fmt.Fprintf(tw, "%s\t%.1f\t%.2f\t%s\t%s\t\n", rate.Name, rate.PerSecond, rate.PerSecond/r.Rates[0].PerSecond, rate.Tree, rate.Machine)
	}
	tw.Flush()
	if len(r.Latencies) > 1 && len(r.Rates) > 1 {
		verdict := func(ok bool) string {
			if ok {
				return "met"
			}
			return "not met"
		}
		p50, rate := r.Latencies[1].P50, r.Rates[1].PerSecond
		fmt.Fprintf(w, "\ntargets for /run_code: p50 ≤ %s at concurrency 1: %s (%s); ≥ %d runs/s at concurrency 8: %s (%.1f)\n",
			ms(targetP50), verdict(p50 <= targetP50), ms(p50), targetPerSecond, verdict(rate >= targetPerSecond && r.Config.Concurrency == 8), rate)
	}
}
