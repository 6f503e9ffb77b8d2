package sandbox

import (
	"context"
	"fmt"
	"time"
)

// Capped returns rt refusing, before anything runs, every request and
// every long-lived sandbox whose limits go past max: a server's operator
// sets how far a request may raise the limits (MaxLimits bounds what any
// runtime accepts, far more than a shared host can give one tenant). A
// zero field of max bounds nothing beyond MaxLimits. The refusal wraps
// ErrInvalid and names the limit. When rt implements Interactive, so does
// the result (the wall and CPU time of a sandbox's programs are its
// caller's to bound).
func Capped(rt Runtime, max Limits) Runtime {
	c := &capped{inner: rt, max: max}
	if irt, ok := rt.(Interactive); ok {
		return &cappedInteractive{capped: c, irt: irt}
	}
	return c
}

type capped struct {
	inner Runtime
	max   Limits
}

// Unwrap returns the runtime Capped was given.
func (c *capped) Unwrap() Runtime { return c.inner }

func (c *capped) Name() string { return c.inner.Name() }

func (c *capped) Close() error { return c.inner.Close() }

func (c *capped) Run(ctx context.Context, req Request) (*Result, error) {
	if err := req.Limits.Within(c.max); err != nil {
		return nil, err
	}
	if err := req.CompileLimits.Within(c.max); err != nil {
		return nil, fmt.Errorf("compile step: %w", err)
	}
	// A compile step's defaults are generous (2 GiB, 256 processes): no
	// more than the maximum either.
	req.CompileLimits = req.CompileLimits.WithDefaults(DefaultCompileLimits.clamp(c.max))
	return c.inner.Run(ctx, req)
}

// clamp lowers each field of l to max's, where max has one.
func (l Limits) clamp(max Limits) Limits {
	lower := func(v *int64, m int64) {
		if m > 0 && *v > m {
			*v = m
		}
	}
	wall, cpu := int64(l.WallTime), int64(l.CPUTime)
	procs, files := int64(l.Processes), int64(l.OpenFiles)
	lower(&wall, int64(max.WallTime))
	lower(&cpu, int64(max.CPUTime))
	lower(&l.Memory, max.Memory)
	lower(&procs, int64(max.Processes))
	lower(&l.OutputBytes, max.OutputBytes)
	lower(&l.WorkspaceBytes, max.WorkspaceBytes)
	lower(&files, int64(max.OpenFiles))
	l.WallTime, l.CPUTime, l.Processes, l.OpenFiles = time.Duration(wall), time.Duration(cpu), int(procs), int(files)
	return l
}

type cappedInteractive struct {
	*capped
	irt Interactive
}

func (c *cappedInteractive) NewSandbox(ctx context.Context, spec Spec) (Sandbox, error) {
	max := c.max
	max.WallTime, max.CPUTime = 0, 0 // its programs' time is its caller's to bound
	if err := spec.Limits.Within(max); err != nil {
		return nil, err
	}
	return c.irt.NewSandbox(ctx, spec)
}

// Within checks l's non-zero fields against max's non-zero ones: past
// one, an error wrapping ErrInvalid names it and the most allowed.
func (l Limits) Within(max Limits) error {
	dur := func(v int64) string { return time.Duration(v).String() }
	num := func(v int64) string { return fmt.Sprint(v) }
	for _, c := range []struct {
		name string
		v, m int64
		unit func(int64) string
	}{
		{"wall time", int64(l.WallTime), int64(max.WallTime), dur},
		{"CPU time", int64(l.CPUTime), int64(max.CPUTime), dur},
		{"memory", l.Memory, max.Memory, FormatBytes},
		{"processes", int64(l.Processes), int64(max.Processes), num},
		{"output bytes", l.OutputBytes, max.OutputBytes, FormatBytes},
		{"workspace bytes", l.WorkspaceBytes, max.WorkspaceBytes, FormatBytes},
		{"open files", int64(l.OpenFiles), int64(max.OpenFiles), num},
	} {
		if c.m > 0 && c.v > c.m {
			return fmt.Errorf("%w: %s %s is more than this server allows (at most %s)", ErrInvalid, c.name, c.unit(c.v), c.unit(c.m))
		}
	}
	return nil
}
