package api_test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// latencies summarises request times.
type latencies []time.Duration

func (l latencies) pct(p float64) time.Duration {
	s := slices.Clone(l)
	slices.Sort(s)
	if len(s) == 0 {
		return 0
	}
	return s[min(len(s)-1, int(float64(len(s))*p))]
}

func (l latencies) mean() time.Duration {
	var sum time.Duration
	for _, d := range l {
		sum += d
	}
	return sum / time.Duration(max(len(l), 1))
}

func ms(d time.Duration) string {
	return strconv.FormatFloat(float64(d.Microseconds())/1000, 'f', 2, 64)
}

// load runs n calls of do over workers goroutines and returns each call's
// latency, the wall time, and the errors.
func load(workers, n int, do func(worker, i int) error) (latencies, time.Duration, []error) {
	var mu sync.Mutex
	var lat latencies
	var errs []error
	next := make(chan int)
	var wg sync.WaitGroup
	start := time.Now()
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				t0 := time.Now()
				err := do(w, i)
				d := time.Since(t0)
				mu.Lock()
				lat = append(lat, d)
				if err != nil {
					errs = append(errs, err)
				}
				mu.Unlock()
			}
		}()
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	return lat, time.Since(start), errs
}

// TestLoad is a bounded load test on loopback: one-shot runs and session
// cells from several clients at once, every answer checked; it prints
// requests per second and p50/p99, and after the sessions are closed and
// the server shut down no sandbox is left: no state directory, no mount,
// no process.
func TestLoad(t *testing.T) {
	state := t.TempDir()
	// The sandboxes' uid must traverse it (see DESIGN.md §4).
	for d := state; d != os.TempDir() && d != "/"; d = filepath.Dir(d) {
		if err := os.Chmod(d, 0o711); err != nil {
			t.Fatal(err)
		}
	}
	h := newHarness(t, map[string]string{"server.tenant_executions": "0", "server.tenant_rate": "0",
		"runtime.linux.pool": "4", "runtime.linux.zygote": "true", "runtime.linux.state_dir": state})
	const runs, runWorkers, sessions, cellsEach = 60, 4, 4, 40

	runLat, runWall, runErrs := load(runWorkers, runs, func(_, i int) error {
		r := h.call(aliceKey, "POST", "/v1/exec", nil, nil, map[string]any{"code": fmt.Sprintf("print(%d * 2)", i)})
		var res struct{ Stdout, Reason string }
		r.json(t, &res)
		if r.status != 200 || res.Reason != "exited" || res.Stdout != strconv.Itoa(i*2)+"\n" {
			return fmt.Errorf("run %d: %d %s", i, r.status, r.body)
		}
		return nil
	})

	ids := make([]string, sessions)
	for i := range ids {
		ids[i] = h.createSession(aliceKey, nil).ID
	}
	counts := make([]int, sessions)
	cellLat, cellWall, cellErrs := load(sessions, sessions*cellsEach, func(w, i int) error {
		counts[w]++
		r := h.call(aliceKey, "POST", "/v1/sessions/{id}/execute", []string{ids[w]}, nil,
			map[string]any{"code": fmt.Sprintf("n = globals().get('n', 0) + 1\nprint(n)")})
		var cell cellJSON
		r.json(t, &cell)
		if r.status != 200 || cell.Status != "ok" || cell.stdout() != strconv.Itoa(counts[w])+"\n" {
			return fmt.Errorf("cell %d of session %d: %d %s", counts[w], w, r.status, r.body)
		}
		return nil
	})

	fmt.Printf("\nload on loopback (one tenant; %d sandboxes pre-started for runs, zygote):\n", 4)
	fmt.Printf("%-24s %8s %6s %9s %9s %9s\n", "", "requests", "conc.", "req/s", "p50 ms", "p99 ms")
	fmt.Printf("%-24s %8d %6d %9.1f %9s %9s\n", "one-shot python run", runs, runWorkers, float64(runs)/runWall.Seconds(), ms(runLat.pct(.5)), ms(runLat.pct(.99)))
	fmt.Printf("%-24s %8d %6d %9.1f %9s %9s\n", "session cell", sessions*cellsEach, sessions, float64(sessions*cellsEach)/cellWall.Seconds(), ms(cellLat.pct(.5)), ms(cellLat.pct(.99)))
	for _, err := range append(runErrs, cellErrs...) {
		t.Error(err)
	}

	for _, id := range ids {
		if r := h.call(aliceKey, "DELETE", "/v1/sessions/{id}", []string{id}, nil, nil); r.status != 204 {
			t.Errorf("delete %s: %d", id, r.status)
		}
	}
	var list struct{ Sessions []sessionJSON }
	h.call(aliceKey, "GET", "/v1/sessions", nil, nil, nil).json(t, &list)
	if len(list.Sessions) != 0 {
		t.Errorf("%d sessions left", len(list.Sessions))
	}
	if err := h.served.Close(); err != nil {
		t.Fatal(err)
	}
	if left := leftovers(t, state); len(left) > 0 {
		t.Errorf("left behind after the shutdown: %v", left)
	}
	if kids := descendants(os.Getpid()); len(kids) > 0 {
		time.Sleep(time.Second) // processes being reaped
		if kids = descendants(os.Getpid()); len(kids) > 0 {
			t.Errorf("processes left: %v", kids)
		}
	}
}

// leftovers lists what is under the state directory: the runtime's
// directories and the workspaces mounted there.
func leftovers(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		// The runtimes' shared init program (init-<digest>) stays: it is
		// written once and used by every runtime of the machine.
		if p != dir && !(filepath.Dir(p) == dir && strings.HasPrefix(d.Name(), "init-")) {
			out = append(out, p)
		}
		return nil
	})
	mounts, _ := os.ReadFile("/proc/self/mountinfo")
	for _, line := range strings.Split(string(mounts), "\n") {
		if f := strings.Fields(line); len(f) > 4 && strings.HasPrefix(f[4], dir) {
			out = append(out, "mount "+f[4])
		}
	}
	return out
}

// descendants lists the processes below pid (pid's children, theirs...).
func descendants(pid int) []string {
	parent := map[int]int{}
	name := map[int]string{}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		s := string(stat)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(s[i+1:])
		if len(f) < 2 {
			continue
		}
		pp, _ := strconv.Atoi(f[1])
		parent[p] = pp
		name[p] = s[strings.IndexByte(s, '(')+1 : i]
	}
	var out []string
	for p := range parent {
		for q := parent[p]; q > 1; q = parent[q] {
			if q == pid {
				out = append(out, fmt.Sprintf("%d (%s)", p, name[p]))
				break
			}
		}
	}
	return out
}
