package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"text/tabwriter"
	"time"

	"github.com/coderun/coderun/sandbox"
	"github.com/coderun/coderun/sandbox/linux"
	"github.com/coderun/coderun/server/sandboxfusion"
)

// SandboxFusionConfig sets the size of the SandboxFusion benchmark.
type SandboxFusionConfig struct {
	Runs          int // sequential runs per latency row
	Concurrency   int // the throughput level
	ThroughputFor time.Duration
	Pool          int // pre-started sandboxes of the runtime every row shares
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

// SandboxFusionServer is the server under test: `coderun serve` as the
// composition root builds it (every surface, the tenants' limits, the
// metrics, the request log), and what is behind its /run_code.
type SandboxFusionServer struct {
	// Handler is the whole server's handler.
	Handler http.Handler
	// SandboxFusion is its SandboxFusion surface: it says what sandbox
	// request a /run_code body becomes, for the in-process row that runs
	// the same request.
	SandboxFusion *sandboxfusion.Handler
	// Runtime is the runtime the server runs /run_code's programs on.
	Runtime *linux.Runtime
}

// throughputRounds and latencyRounds are how many alternating rounds the
// rows are measured in, so that every row sees the same machine (it is
// shared: what else runs changes from second to second).
const (
	throughputRounds = 4
	latencyRounds    = 10
)

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
	// Latencies: the rows of sfRows in their order, then the command-line
	// rows (python3 -c, coderun exec -c, coderun version).
	Latencies []Latency
	// Rates at Config.Concurrency, the rows of sfRows in their order.
	Rates []Rate
}

// The rows, from the runtime alone to the whole server over HTTP, each
// adding one layer: what /run_code's request asks of the sandbox (its
// limits), the server's handling without a network, then loopback HTTP.
const (
	rowRuntime = iota
	rowRuntimeRequest
	rowHandler
	rowHTTP
)

// SandboxFusion measures a trivial Python program run through
// SandboxFusion's POST /run_code on srv, against the same run in-process
// on srv's runtime and against coderun exec -c, in one run: latency one
// request at a time, and throughput at a concurrency.
func SandboxFusion(ctx context.Context, cfg SandboxFusionConfig, srv *SandboxFusionServer, progress io.Writer) (*SandboxFusionReport, error) {
	rep := &SandboxFusionReport{Host: DetectHost(), Config: cfg}
	rt := srv.Runtime
	body, err := json.Marshal(map[string]any{"code": cfg.Code, "language": "python", "stdin": nil,
		"run_timeout": 10, "compile_timeout": 10, "memory_limit_MB": 1024, "files": map[string]any{}, "fetch_files": []any{}})
	if err != nil {
		return nil, err
	}
	var in sandboxfusion.RunCodeRequest
	if err := json.Unmarshal(body, &in); err != nil {
		return nil, err
	}
	req, err := srv.SandboxFusion.Request(&in)
	if err != nil {
		return nil, fmt.Errorf("the request /run_code makes: %w", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	hs := &http.Server{Handler: srv.Handler}
	go hs.Serve(ln)
	defer hs.Close()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: max(cfg.Concurrency, 1) * 2}}
	defer client.CloseIdleConnections()
	url := "http://" + ln.Addr().String() + "/run_code"

	configs := []config{
		rowRuntime:        {name: "runtime: Run, default limits", run: through(rt, cfg.Code), rt: rt, pool: cfg.Pool},
		rowRuntimeRequest: {name: "runtime: Run, /run_code's request", run: runRequest(rt, req), rt: rt, pool: cfg.Pool},
		rowHandler:        {name: "server: handler, no network", run: inHandler(srv.Handler, body), rt: rt, pool: cfg.Pool},
		rowHTTP:           {name: "server: POST /run_code (HTTP)", run: overHTTP(client, url, body), rt: rt, pool: cfg.Pool},
	}
	fmt.Fprintf(progress, "latency, %d alternating rounds…\n", latencyRounds)
	rep.Latencies, err = interleavedLatencies(ctx, configs, cfg.Runs)
	if err != nil {
		return nil, err
	}
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
		// The server stays up (the caller's), idle: its pool refilled first.
		settle(configs[rowRuntime])
		fmt.Fprintln(progress, "command line one-shots…")
		cli, err := measureCLI(ctx, SandboxConfig{Code: cfg.Code, CLIRuns: cfg.CLIRuns, Exe: cfg.Exe})
		if err != nil {
			return nil, err
		}
		rep.Latencies = append(rep.Latencies, cli...)
	}
	return rep, nil
}

// interleavedLatencies measures each row's latency, runs one at a time,
// in latencyRounds rounds that take the rows in turn.
func interleavedLatencies(ctx context.Context, configs []config, runs int) ([]Latency, error) {
	times := make([][]time.Duration, len(configs))
	pooled := make([]int, len(configs))
	per := max(runs/latencyRounds, 1)
	for round := 0; round < latencyRounds; round++ {
		for i, c := range configs {
			settle(c)
			for range per {
				// Each request finds a sandbox waiting, as in a server
				// whose requests arrive slower than the pool refills.
				for c.pool > 0 && c.rt.PoolReady(sandbox.Python) < 1 {
					time.Sleep(time.Millisecond)
				}
				start := time.Now()
				p, _, err := c.run(ctx)
				if err != nil {
					return nil, fmt.Errorf("%s: %w", c.name, err)
				}
				times[i] = append(times[i], time.Since(start))
				if p {
					pooled[i]++
				}
			}
		}
	}
	out := make([]Latency, len(configs))
	for i, c := range configs {
		out[i] = summarize(c.name, times[i], pooled[i])
	}
	return out, nil
}

// runRequest runs req in rt and checks that it printed something.
func runRequest(rt *linux.Runtime, req sandbox.Request) runFunc {
	return func(ctx context.Context) (bool, CPU, error) {
		res, err := rt.Run(ctx, req)
		if err != nil {
			return false, CPU{}, err
		}
		if !res.OK() || res.Stdout == "" {
			return false, CPU{}, fmt.Errorf("run failed: %s: %s", res.Summary(), res.Stderr)
		}
		return res.Pooled, CPU{User: res.Usage.CPUUser, System: res.Usage.CPUSystem}, nil
	}
}

// inHandler serves body to h as POST /run_code without a network: the
// server's own handling (routing, authentication, the tenant's turn,
// decoding, encoding, the log and the metrics) and nothing of HTTP's.
func inHandler(h http.Handler, body []byte) runFunc {
	return func(ctx context.Context) (bool, CPU, error) {
		req := httptest.NewRequestWithContext(ctx, http.MethodPost, "http://127.0.0.1/run_code", bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return false, CPU{}, checkAnswer(rec.Code, rec.Body)
	}
}

// overHTTP posts body to /run_code as verl does and checks it succeeded.
func overHTTP(client *http.Client, url string, body []byte) runFunc {
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
		return false, CPU{}, checkAnswer(resp.StatusCode, resp.Body)
	}
}

// checkAnswer reads a /run_code answer and checks that the program
// succeeded and printed something.
func checkAnswer(status int, body io.Reader) error {
	var out struct {
		Status    string `json:"status"`
		Message   string `json:"message"`
		RunResult *struct {
			Stdout string `json:"stdout"`
		} `json:"run_result"`
	}
	data, err := io.ReadAll(body)
	if err != nil {
		return fmt.Errorf("HTTP %d: %w", status, err)
	}
	if err := json.Unmarshal(data, &out); err != nil {
		return fmt.Errorf("HTTP %d: %w: %.200s", status, err, data)
	}
	if out.Status != "Success" || out.RunResult == nil || out.RunResult.Stdout == "" {
		return fmt.Errorf("run_code: HTTP %d: %.300s", status, data)
	}
	return nil
}

// Print writes the report side by side, with the targets.
func (r *SandboxFusionReport) Print(w io.Writer) {
	fmt.Fprintf(w, "\n%s\n", r.Host)
	fmt.Fprintf(w, "SandboxFusion /run_code benchmark: %q; coderun serve's server and its runtime (pool %d, zygote) for every row\n\n", r.Config.Code, r.Config.Pool)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "latency, one at a time, %d rounds\tp50\tp95\tmean\tp50 - runtime\t\n", latencyRounds)
	base := r.Latencies[0]
	for _, l := range r.Latencies {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%+.2f ms\t\n", l.Name, ms(l.P50), ms(l.P95), ms(l.Mean), float64((l.P50-base.P50).Microseconds())/1000)
	}
	tw.Flush()
	fmt.Fprintf(w, "\nthroughput at concurrency %d over %s each, in %d alternating rounds; CPU per run in ms (user + system)\n\n",
		r.Config.Concurrency, r.Config.ThroughputFor, throughputRounds)
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "\truns/s\t/ runtime\tCPU tree\tCPU machine\t")
	for _, rate := range r.Rates {
		fmt.Fprintf(tw, "%s\t%.1f\t%.2f\t%s\t%s\t\n", rate.Name, rate.PerSecond, rate.PerSecond/r.Rates[0].PerSecond, rate.Tree, rate.Machine)
	}
	tw.Flush()
	if rt := r.Rates[rowRuntime]; rt.Tree.Total() > 0 {
		// What the machine's CPUs allow at the runtime's own cost per run.
		fmt.Fprintf(w, "\nceiling at the runtime's CPU per run: %d CPUs / %s = %.0f runs/s\n", runtime.NumCPU(), rt.Tree,
			float64(runtime.NumCPU())/rt.Tree.Total().Seconds())
	}
	if len(r.Latencies) > rowHTTP && len(r.Rates) > rowHTTP {
		verdict := func(ok bool) string {
			if ok {
				return "met"
			}
			return "not met"
		}
		p50, rate := r.Latencies[rowHTTP].P50, r.Rates[rowHTTP].PerSecond
		fmt.Fprintf(w, "\ntargets for /run_code: p50 ≤ %s at concurrency 1: %s (%s); ≥ %d runs/s at concurrency 8: %s (%.1f)\n",
			ms(targetP50), verdict(p50 <= targetP50), ms(p50), targetPerSecond, verdict(rate >= targetPerSecond && r.Config.Concurrency == 8), rate)
	}
}
