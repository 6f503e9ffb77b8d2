package bench

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"

	"github.com/coderun/coderun/sandbox/gvisor"
)

// TestRuntimesSessionRows runs `coderun bench runtimes` small and checks
// that it prints, beside the one-shot rows, a session cell's cold and warm
// rows for bare python3 over a pipe and each runtime present (gvisor where
// runsc is; docker where the engine CODERUN_TEST_DOCKER_HOST, or else
// DOCKER_HOST, names answers), and a
// reason for each runtime absent.
func TestRuntimesSessionRows(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("sandboxes need root")
	}
	if testing.Short() {
		t.Skip("starts sessions on every runtime present")
	}
	cfg := RuntimesConfig{Runs: 2, Pool: 1, Code: `print("hello")`, SessionCold: 2, SessionCells: 5}
	cfg.Docker.Host = os.Getenv("CODERUN_TEST_DOCKER_HOST") // scripts/docker.sh run's engine; empty: DOCKER_HOST's
	rep, err := Runtimes(context.Background(), cfg, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	rep.Print(&out)
	t.Log(out.String())
	want := []string{"python3 over a pipe: start + 1+1 (baseline)", "python3 over a pipe: 1+1 (baseline)",
		"linux session, cold: start + 1+1", "linux session, warm: 1+1"}
	if _, err := gvisor.FindRunsc(""); err == nil {
		want = append(want, "gvisor session, cold: start + 1+1", "gvisor session, warm: 1+1")
	} else if !strings.Contains(out.String(), "not measured: gvisor sessions: ") {
		t.Errorf("runsc absent (%v), and the report does not say so", err)
	}
	if cfg.Docker.Host != "" { // an engine to test against: its rows are wanted
		want = append(want, "docker session, cold: start + 1+1", "docker session, warm: 1+1")
	}
	rows := map[string]Latency{}
	for _, l := range rep.Sessions {
		rows[l.Name] = l
	}
	for _, name := range want {
		l, ok := rows[name]
		if !ok {
			t.Errorf("no row %q", name)
			continue
		}
		if l.P50 <= 0 || l.P95 < l.P50 {
			t.Errorf("%s: p50 %v, p95 %v", name, l.P50, l.P95)
		}
		if !strings.Contains(out.String(), name) {
			t.Errorf("the printed report lacks %q", name)
		}
	}
	if _, ok := rows["docker session, warm: 1+1"]; !ok && !strings.Contains(out.String(), "not measured: docker sessions: ") {
		t.Error("no docker session rows, and the report does not say why")
	}
}
