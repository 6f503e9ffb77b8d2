package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"testing"
	"time"

	"github.com/coderun/coderun/app"
	"github.com/coderun/coderun/sandbox"
	"github.com/coderun/coderun/session"
)

// BenchmarkServerOverhead measures what going through `coderun serve`
// adds, each pair interleaved so that both sides see the same machine:
// a trivial Python one-shot run over HTTP (POST /v1/exec) against the
// same run in-process (Runtime.Run on the server's own runtime), and a
// session cell over HTTP (POST /v1/sessions/{id}/execute) against a cell
// of an in-process session of the same manager. It prints the table; run
// it as
//
//	go test -run '^$' -bench ServerOverhead -benchtime 200x ./server/api
func BenchmarkServerOverhead(b *testing.B) {
	if os.Geteuid() != 0 {
		b.Skip("sandboxes need root")
	}
	c := app.Defaults(os.Getenv)
	for k, v := range map[string]string{"server.insecure_local": "true", "server.tenant_rate": "0",
		"runtime.linux.pool": "2", "runtime.linux.zygote": "true", "store.data_dir": b.TempDir()} {
		if err := c.Set(k, v, app.Flag(k)); err != nil {
			b.Fatal(err)
		}
	}
	served, err := c.NewServer(app.ServeOptions{})
	if err != nil {
		b.Fatal(err)
	}
	defer served.Close()
	srv := newLoopback(b, served)
	defer srv.close()
	ctx := context.Background()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}}
	post := func(path string, body any) ([]byte, error) {
		data, _ := json.Marshal(body)
		resp, err := client.Post(srv.url+path, "application/json", bytes.NewReader(data))
		if err != nil {
			return nil, err
		}
		defer resp.Body.Close()
		out, err := io.ReadAll(resp.Body)
		if resp.StatusCode/100 != 2 {
			return nil, fmt.Errorf("%s: %d %s", path, resp.StatusCode, out)
		}
		return out, err
	}

	// The sessions: one over HTTP, one in-process, from the same manager.
	out, err := post("/v1/sessions", map[string]any{})
	if err != nil {
		b.Fatal(err)
	}
	var created struct{ ID string }
	json.Unmarshal(out, &created)
	tenant, _ := served.Services.Sessions.Tenant("bench")
	local, err := tenant.Create(ctx, c.SessionConfig(sandbox.Python))
	if err != nil {
		b.Fatal(err)
	}
	defer local.Close()

	// Each run finds a pre-started sandbox waiting, as in a server whose
	// requests come slower than its pool refills: otherwise the rows
	// differ by how many of their runs found one (a cold start costs tens
	// of milliseconds), not by what HTTP adds.
	var pool interface{ PoolReady(sandbox.Language) int }
	for rt := served.Services.Runtime; pool == nil; {
		if p, ok := rt.(interface{ PoolReady(sandbox.Language) int }); ok {
			pool = p
			break
		}
		u, ok := rt.(interface{ Unwrap() sandbox.Runtime })
		if !ok {
			b.Fatalf("the server's runtime (%s) has no pool", rt.Name())
		}
		rt = u.Unwrap()
	}
	waitPool := func() {
		for deadline := time.Now().Add(30 * time.Second); pool.PoolReady(sandbox.Python) < 1 && time.Now().Before(deadline); {
			time.Sleep(time.Millisecond)
		}
	}

	const code = "print(1)"
	var execHTTP, execLocal, cellHTTP, cellLocal, ping, rejected latencies
	var pooledHTTP, pooledLocal int
	b.ResetTimer()
	// Runs first (each pair in alternating order), then cells: the pool
	// refilling after a run would otherwise slow whatever comes next.
	for i := range b.N {
		viaHTTP := func() {
			waitPool()
			t0 := time.Now()
			out, err := post("/v1/exec", map[string]any{"language": "python", "code": code})
			if err != nil {
				b.Fatal(err)
			}
			execHTTP = append(execHTTP, time.Since(t0))
			var res sandbox.Result
			json.Unmarshal(out, &res)
			if res.Pooled {
				pooledHTTP++
			}
		}
		inProcess := func() {
			waitPool()
			t0 := time.Now()
			res, err := served.Services.Runtime.Run(ctx, sandbox.Request{Language: sandbox.Python, Code: code, Limits: c.Limits})
			if err != nil || !res.OK() {
				b.Fatalf("in-process run: %v %+v", err, res)
			}
			execLocal = append(execLocal, time.Since(t0))
			if res.Pooled {
				pooledLocal++
			}
		}
		if i%2 == 0 {
			viaHTTP()
			inProcess()
		} else {
			inProcess()
			viaHTTP()
		}
		// The same route's HTTP path without a sandbox: a request the
		// server rejects after reading it.
		t0 := time.Now()
		if _, err := post("/v1/exec", map[string]any{"language": "cobol", "code": code}); err == nil {
			b.Fatal("cobol ran")
		}
		rejected = append(rejected, time.Since(t0))
	}
	time.Sleep(2 * time.Second) // the pool refills
	for i := range b.N {
		viaHTTP := func() {
			t0 := time.Now()
			if _, err := post("/v1/sessions/"+created.ID+"/execute", map[string]any{"code": code}); err != nil {
				b.Fatal(err)
			}
			cellHTTP = append(cellHTTP, time.Since(t0))
		}
		inProcess := func() {
			t0 := time.Now()
			if cell, err := local.Execute(ctx, session.Exec{Code: code}); err != nil || cell.Status != session.StatusOK {
				b.Fatalf("in-process cell: %v %+v", err, cell)
			}
			cellLocal = append(cellLocal, time.Since(t0))
		}
		if i%2 == 0 {
			viaHTTP()
			inProcess()
		} else {
			inProcess()
			viaHTTP()
		}
		t0 := time.Now()
		if resp, err := client.Get(srv.url + "/v1/sessions/" + created.ID); err != nil {
			b.Fatal(err)
		} else {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
		ping = append(ping, time.Since(t0))
	}
	b.StopTimer()
	if b.N < 10 {
		return // the framework's first probe
	}
	fmt.Printf("\n%d of each, interleaved (trivial Python: %q; zygote, 2 pre-started sandboxes):\n", b.N, code)
	fmt.Printf("%-40s %10s %10s %10s\n", "", "p50 ms", "mean ms", "p99 ms")
	row := func(name string, l latencies) {
		fmt.Printf("%-40s %10s %10s %10s\n", name, ms(l.pct(.5)), ms(l.mean()), ms(l.pct(.99)))
	}
	row(fmt.Sprintf("one-shot run, in-process (%d%% pooled)", pooledLocal*100/b.N), execLocal)
	row(fmt.Sprintf("one-shot run, over HTTP (%d%% pooled)", pooledHTTP*100/b.N), execHTTP)
	row("session cell, in-process", cellLocal)
	row("session cell, over HTTP", cellHTTP)
	row("POST /v1/exec rejected (no sandbox)", rejected)
	row("GET /v1/sessions/{id} (no sandbox)", ping)
	fmt.Printf("%-40s %10s %10s\n", "HTTP adds to a run", ms(execHTTP.pct(.5)-execLocal.pct(.5)), ms(execHTTP.mean()-execLocal.mean()))
	fmt.Printf("%-40s %10s %10s   (target: at most 1 ms)\n", "HTTP adds to a cell", ms(cellHTTP.pct(.5)-cellLocal.pct(.5)), ms(cellHTTP.mean()-cellLocal.mean()))
	b.ReportMetric(float64((cellHTTP.pct(.5)-cellLocal.pct(.5)).Microseconds())/1000, "cell-http-overhead-p50-ms")
	b.ReportMetric(float64((execHTTP.pct(.5)-execLocal.pct(.5)).Microseconds())/1000, "run-http-overhead-p50-ms")
}
