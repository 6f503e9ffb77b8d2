package sandboxfusion_test

import (
	"fmt"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coderun/coderun/sandbox/linux"
	"github.com/coderun/coderun/server/sandboxfusion"
)

// A bounded load on loopback: verl-shaped /run_code requests from 8
// clients at once over a runtime of its own, no errors, every answer
// right, and no sandbox left behind afterwards. It logs requests/s and
// the latency's p50 and p99 (go test -v -run TestLoadRunCode); the
// figures to quote come from the benchmark (coderun bench sandboxfusion).
func TestLoadRunCode(t *testing.T) {
	runtime(t) // skips without sandboxes
	state, err := os.MkdirTemp("/run", "coderun-sf-load-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(state)
	rt, err := linux.New(linux.Options{Pool: 4, Zygote: true, StateDir: state})
	if err != nil {
		t.Fatal(err)
	}
	srv := newServer(t, sandboxfusion.Options{Runtime: rt, MaxConcurrent: 8})
	const clients, requests = 8, 160
	var (
		mu    sync.Mutex
		times []time.Duration
		errs  []string
		next  = make(chan int, requests)
		wg    sync.WaitGroup
	)
	for i := range requests {
		next <- i
	}
	close(next)
	start := time.Now()
	for range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				t0 := time.Now()
				code, resp := post(t, srv.URL+"/run_code", verlRequest(fmt.Sprintf("print(%d)", i), nil, 10, "python"))
				d := time.Since(t0)
				got, status := verlClassify(resp, str(fmt.Sprint(i)))
				mu.Lock()
				times = append(times, d)
				if code != http.StatusOK || got != true {
					errs = append(errs, fmt.Sprintf("request %d: HTTP %d %v (%s) %v", i, code, got, status, resp))
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	for _, e := range errs {
		t.Error(e)
	}
	slices.Sort(times)
	pct := func(p float64) time.Duration { return times[min(len(times)-1, int(float64(len(times))*p))] }
	t.Logf("/run_code load: %d requests from %d clients in %s: %.1f requests/s, p50 %s, p99 %s",
		requests, clients, elapsed.Round(time.Millisecond), float64(requests)/elapsed.Seconds(),
		pct(0.50).Round(100*time.Microsecond), pct(0.99).Round(100*time.Microsecond))

	// Nothing left behind: once the runtime is closed, its state
	// directory holds no sandbox.
	srv.Close()
	if err := rt.Close(); err != nil {
		t.Fatal(err)
	}
	left, err := os.ReadDir(state)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range left {
		// The runtimes' shared init program (init-<digest>) stays.
		if !strings.HasPrefix(e.Name(), "init-") {
			names = append(names, e.Name())
		}
	}
	if len(names) > 0 {
		t.Errorf("sandboxes left behind in %s: %v", state, names)
	}
	mounts, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(mounts), state) {
		t.Errorf("mounts left behind under %s", state)
	}
}
