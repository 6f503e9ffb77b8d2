package session

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/coderun/coderun/sandbox"
)

// A zero Config takes the session's defaults: 30 s and 4 MiB per cell, no
// CPU-time limit, a 2 s grace period, the sandbox's defaults for the rest.
func TestConfigDefaults(t *testing.T) {
	c := Config{}.withDefaults()
	want := sandbox.Limits{WallTime: 30 * time.Second, Memory: sandbox.DefaultLimits.Memory,
		Processes: sandbox.DefaultLimits.Processes, OpenFiles: sandbox.DefaultLimits.OpenFiles,
		WorkspaceBytes: sandbox.DefaultLimits.WorkspaceBytes, OutputBytes: 4 << 20}
	if c.Limits != want || c.Grace != 2*time.Second {
		t.Errorf("defaults %+v, grace %s; want %+v, grace 2s", c.Limits, c.Grace, want)
	}
	if err := c.validate(); err != nil {
		t.Errorf("the defaults do not validate: %v", err)
	}
	set := Config{Limits: sandbox.Limits{WallTime: time.Minute, CPUTime: time.Second, OutputBytes: 1 << 20}, Grace: time.Second}.withDefaults()
	if set.Limits.WallTime != time.Minute || set.Limits.CPUTime != time.Second || set.Limits.OutputBytes != 1<<20 || set.Grace != time.Second {
		t.Errorf("values given were replaced: %+v, grace %s", set.Limits, set.Grace)
	}
	if got := sandboxLimits(set.Limits); got.WallTime != 0 || got.CPUTime != 0 || got.OutputBytes != 0 || got.Memory != set.Limits.Memory {
		t.Errorf("the sandbox's limits carry per-cell ones: %+v", got)
	}
}

// One validation: a session's limits are checked as a one-shot run's, but
// for a zero CPU time, which means none.
func TestConfigValidate(t *testing.T) {
	for _, c := range []struct {
		name string
		cfg  Config
		want string // "" when valid
	}{
		{"no CPU limit", Config{}, ""},
		{"CPU limit", Config{Limits: sandbox.Limits{CPUTime: time.Second}}, ""},
		{"negative CPU", Config{Limits: sandbox.Limits{CPUTime: -time.Second}}, "CPU time"},
		{"negative time", Config{Limits: sandbox.Limits{WallTime: -time.Second}}, "wall time"},
		{"time past the maximum", Config{Limits: sandbox.Limits{WallTime: 2 * sandbox.MaxLimits.WallTime}}, "wall time"},
		{"negative output", Config{Limits: sandbox.Limits{OutputBytes: -1}}, "output bytes"},
		{"tiny memory", Config{Limits: sandbox.Limits{Memory: 1 << 10}}, "memory"},
		{"negative grace", Config{Grace: -time.Second}, "grace"},
	} {
		err := c.cfg.withDefaults().validate()
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v", c.name, err)
		case c.want != "" && (err == nil || !errors.Is(err, sandbox.ErrInvalid) || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: error %v, want ErrInvalid naming %q", c.name, err, c.want)
		}
	}
}
