package sandboxfusion_test

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"github.com/coderun/coderun/sandbox"
	"github.com/coderun/coderun/server"
	"github.com/coderun/coderun/server/sandboxfusion"
)

// answered is a runtime that runs nothing: it answers every request at
// once with the result of a trivial program, so that the benchmarks below
// measure the server's own path (routing, authentication, the tenant's
// turn, decoding, the answer, the log line, the metrics) and nothing of a
// sandbox's.
type answered struct{}

func (answered) Name() string { return "answered" }
func (answered) Close() error { return nil }
func (answered) Run(_ context.Context, req sandbox.Request) (*sandbox.Result, error) {
	return &sandbox.Result{Runtime: "answered", Reason: sandbox.ReasonExited, Stdout: "1\n", Pooled: true,
		Usage: sandbox.Usage{Wall: 5 * time.Millisecond}}, nil
}

// waiting is a runtime whose every run waits 5 ms (a sandbox's time, off
// the CPU) and then answers a trivial program's result.
type waiting struct{ answered }

func (waiting) Run(ctx context.Context, req sandbox.Request) (*sandbox.Result, error) {
	time.Sleep(5 * time.Millisecond)
	return answered{}.Run(ctx, req)
}

// serverPath is coderun serve's server around the SandboxFusion surface,
// with serve's default tenant limits and a JSON request log as serve
// writes it (to io.Discard).
func serverPath(b *testing.B, rt sandbox.Runtime) http.Handler {
	tenants := server.NewTenants(server.TenantLimits{Sessions: 20, Executions: 8, Rate: 1e9})
	h, err := sandboxfusion.New(sandboxfusion.Options{Runtime: rt, InsecureLocal: true, Admit: sandboxfusion.TenantAdmit(tenants)})
	if err != nil {
		b.Fatal(err)
	}
	srv, err := server.New(server.Options{InsecureLocal: true, Surfaces: []server.Surface{h.Surface()}, Tenants: tenants,
		Logger: slog.New(slog.NewJSONHandler(io.Discard, nil))})
	if err != nil {
		b.Fatal(err)
	}
	return srv.Handler()
}

// verlBody is /run_code's body as verl's reward path sends it.
var verlBody = []byte(`{"code": "print(1)", "language": "python", "stdin": null, "run_timeout": 10, "compile_timeout": 10, "memory_limit_MB": 1024, "files": {}, "fetch_files": []}`)

// BenchmarkServerPath is the CPU and allocations of one /run_code through
// the server, without a sandbox and without a network:
//
//	go test -run '^$' -bench ServerPath -benchmem ./server/sandboxfusion
func BenchmarkServerPath(b *testing.B) {
	h := serverPath(b, answered{})
	b.ReportAllocs()
	for b.Loop() {
		req := httptest.NewRequest(http.MethodPost, "http://127.0.0.1/run_code", bytes.NewReader(verlBody))
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK || !bytes.Contains(rec.Body.Bytes(), []byte(`"status":"Success"`)) {
			b.Fatalf("%d %s", rec.Code, rec.Body)
		}
	}
}

// BenchmarkServerPathHTTP is the same over loopback HTTP, one request at
// a time on a kept-alive connection (client and server in this process).
func BenchmarkServerPathHTTP(b *testing.B) {
	ts := httptest.NewServer(serverPath(b, answered{}))
	defer ts.Close()
	client := ts.Client()
	b.ReportAllocs()
	for b.Loop() {
		resp, err := client.Post(ts.URL+"/run_code", "application/json", bytes.NewReader(verlBody))
		if err != nil {
			b.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !bytes.Contains(body, []byte(`"status":"Success"`)) {
			b.Fatalf("%d %s", resp.StatusCode, body)
		}
	}
}

// BenchmarkServerPathWaiting is what the server and loopback HTTP add to
// a run that waits 5 ms as a sandbox would (the threads that serve the
// request sleep, and are woken, as they are for a real run), interleaved
// with the same run called directly: the added p50 is reported.
//
//	go test -run '^$' -bench ServerPathWaiting -benchtime 200x ./server/sandboxfusion
func BenchmarkServerPathWaiting(b *testing.B) {
	ts := httptest.NewServer(serverPath(b, waiting{}))
	defer ts.Close()
	client := ts.Client()
	var direct, viaHTTP []time.Duration
	for b.Loop() {
		t0 := time.Now()
		if _, err := (waiting{}).Run(context.Background(), sandbox.Request{}); err != nil {
			b.Fatal(err)
		}
		direct = append(direct, time.Since(t0))
		t0 = time.Now()
		resp, err := client.Post(ts.URL+"/run_code", "application/json", bytes.NewReader(verlBody))
		if err != nil {
			b.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		viaHTTP = append(viaHTTP, time.Since(t0))
		if !bytes.Contains(body, []byte(`"status":"Success"`)) {
			b.Fatalf("%d %s", resp.StatusCode, body)
		}
	}
	p50 := func(d []time.Duration) time.Duration {
		slices.Sort(d)
		return d[len(d)/2]
	}
	b.ReportMetric(float64(p50(viaHTTP)-p50(direct))/1e6, "http-adds-p50-ms")
}
