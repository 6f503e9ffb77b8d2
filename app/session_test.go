package app

import (
	"testing"
	"time"

	"github.com/coderun/coderun/sandbox"
	"github.com/coderun/coderun/session"
)

// The session's settings reach session.Config unchanged: each cell's time,
// CPU time and output limit, the sandbox's limits, the grace period.
func TestSessionConfigCarriesLimits(t *testing.T) {
	d := Defaults(env(nil)).SessionConfig(sandbox.Bash)
	if d.Limits != session.DefaultLimits || d.Grace != session.DefaultGrace || d.Language != sandbox.Bash {
		t.Errorf("defaults: %+v", d)
	}
	c, err := Load(LoadOptions{File: writeFile(t, "session:\n  timeout: 45s\n  cpu_time: 2s\n  grace: 3s\n  output_limit: 1MiB\n  memory: 1GiB\n"), Getenv: env(nil)})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Set("session.processes", "7", Flag("--processes")); err != nil {
		t.Fatal(err)
	}
	got := c.SessionConfig(sandbox.Python)
	want := session.DefaultLimits
	want.WallTime, want.CPUTime, want.OutputBytes, want.Memory, want.Processes = 45*time.Second, 2*time.Second, 1<<20, 1<<30, 7
	if got.Limits != want || got.Grace != 3*time.Second {
		t.Errorf("limits %+v, grace %s; want %+v, grace 3s", got.Limits, got.Grace, want)
	}
	if err := c.Set("session.cpu_time", "-1s", Flag("--cpu-time")); err == nil {
		t.Error("a negative CPU time was accepted")
	}
}
