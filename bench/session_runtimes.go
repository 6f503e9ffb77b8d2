package bench

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/coderun/coderun/sandbox"
	"github.com/coderun/coderun/sandbox/docker"
	"github.com/coderun/coderun/sandbox/gvisor"
	"github.com/coderun/coderun/sandbox/linux"
	"github.com/coderun/coderun/session"
)

// sessionCell is the session rows' cell, and the line the baseline's
// interpreter evaluates.
const sessionCell = "1+1"

// sessionRuntime is a runtime of long-lived sandboxes the session rows
// measure.
type sessionRuntime struct {
	name string
	rt   sandbox.Interactive
	c    io.Closer
}

// openSessionRuntimes opens, without pools, each runtime present that has
// long-lived sandboxes: linux, gvisor, docker. Those absent are returned
// as the reasons they were skipped.
func openSessionRuntimes(cfg RuntimesConfig) ([]sessionRuntime, []string) {
	var out []sessionRuntime
	var skipped []string
	add := func(name string, rt sandbox.Runtime, err error) {
		if err != nil {
			skipped = append(skipped, fmt.Sprintf("%s sessions: %v", name, err))
			return
		}
		irt, ok := rt.(sandbox.Interactive)
		if !ok {
			rt.Close()
			skipped = append(skipped, fmt.Sprintf("%s sessions: the runtime has no long-lived sandboxes", name))
			return
		}
		out = append(out, sessionRuntime{name: name, rt: irt, c: rt})
	}
	lrt, err := linux.New(linux.Options{})
	add("linux", runtimeOrNil(lrt, err), err)
	if bin, err := gvisor.FindRunsc(""); err != nil {
		add("gvisor", nil, err)
	} else {
		grt, err := gvisor.New(gvisor.Options{Runsc: bin})
		add("gvisor", runtimeOrNil(grt, err), err)
	}
	o := cfg.Docker
	o.Pool = 0
	drt, err := docker.New(o)
	add("docker", runtimeOrNil(drt, err), err)
	return out, skipped
}

// runtimeOrNil keeps a nil pointer of a failed constructor from becoming
// a non-nil interface.
func runtimeOrNil[R sandbox.Runtime](rt R, err error) sandbox.Runtime {
	if err != nil {
		return nil
	}
	return rt
}

// sessionRows measures a 1+1 cell through the session package on a
// long-lived sandbox of each runtime present, against the same line sent
// to a bare /usr/bin/python3 over a pipe: cold (a session started, then
// its first cell; for the baseline, the interpreter started, then its
// first line) cfg.SessionCold times, and warm (a cell in a running
// session) cfg.SessionCells times. Rows are interleaved, one measurement
// of each in turn, so that the machine's load falls on all alike.
func sessionRows(ctx context.Context, cfg RuntimesConfig, progress io.Writer) ([]Latency, []string, error) {
	if cfg.SessionCold <= 0 && cfg.SessionCells <= 0 {
		return nil, nil, nil
	}
	rts, skipped := openSessionRuntimes(cfg)
	defer func() {
		for _, r := range rts {
			r.c.Close()
		}
	}()
	var rows []Latency
	if cfg.SessionCold > 0 {
		fmt.Fprintf(progress, "latency: session start + first cell, %d per runtime, interleaved…\n", cfg.SessionCold)
		cold, err := coldCells(ctx, rts, cfg.SessionCold)
		if err != nil {
			return nil, nil, err
		}
		rows = append(rows, cold...)
	}
	if cfg.SessionCells > 0 {
		fmt.Fprintf(progress, "latency: a cell in a running session, %d per runtime, interleaved…\n", cfg.SessionCells)
		warm, err := warmCells(ctx, rts, cfg.SessionCells)
		if err != nil {
			return nil, nil, err
		}
		rows = append(rows, warm...)
	}
	return rows, skipped, nil
}

// pythonREPL starts the baseline: bare python3 evaluating each line of
// its stdin and writing the result's repr.
func pythonREPL() (*pipeREPL, error) {
	return startPipeREPL("/usr/bin/python3", "-u", "-c",
		"import sys\nfor line in sys.stdin:\n    sys.stdout.write(repr(eval(compile(line, '<cell>', 'eval'))) + '\\n')")
}

// cell runs sessionCell in s and checks that it answered 2.
func cell(ctx context.Context, s *session.Session) error {
	c, err := s.Execute(ctx, session.Exec{Code: sessionCell})
	if err != nil {
		return err
	}
	if c.Status != session.StatusOK {
		return fmt.Errorf("%q: %s", sessionCell, c.Status)
	}
	if r := c.Result(); r == nil || r.Data.Text("text/plain") != "2" {
		return fmt.Errorf("%q: no result 2 (outputs: %+v)", sessionCell, c.Outputs)
	}
	return nil
}

func coldCells(ctx context.Context, rts []sessionRuntime, n int) ([]Latency, error) {
	times := make([][]time.Duration, 1+len(rts))
	for range n {
		start := time.Now()
		py, err := pythonREPL()
		if err == nil {
			err = py.roundTrip(sessionCell)
			times[0] = append(times[0], time.Since(start))
			py.close()
		}
		if err != nil {
			return nil, fmt.Errorf("bare python3 over a pipe: %w", err)
		}
		for j, r := range rts {
			start := time.Now()
			s, err := session.New(ctx, r.rt, session.Config{})
			if err != nil {
				return nil, fmt.Errorf("%s session: start: %w", r.name, err)
			}
			err = cell(ctx, s)
			times[j+1] = append(times[j+1], time.Since(start))
			s.Close()
			if err != nil {
				return nil, fmt.Errorf("%s session: first cell: %w", r.name, err)
			}
		}
	}
	out := []Latency{summarize("python3 over a pipe: start + "+sessionCell+" (baseline)", times[0], 0)}
	for j, r := range rts {
		out = append(out, summarize(r.name+" session, cold: start + "+sessionCell, times[j+1], 0))
	}
	return out, nil
}

func warmCells(ctx context.Context, rts []sessionRuntime, n int) ([]Latency, error) {
	py, err := pythonREPL()
	if err != nil {
		return nil, fmt.Errorf("bare python3 over a pipe: %w", err)
	}
	defer py.close()
	sessions := make([]*session.Session, len(rts))
	defer func() {
		for _, s := range sessions {
			if s != nil {
				s.Close()
			}
		}
	}()
	for j, r := range rts {
		if sessions[j], err = session.New(ctx, r.rt, session.Config{}); err != nil {
			return nil, fmt.Errorf("%s session: start: %w", r.name, err)
		}
	}
	times := make([][]time.Duration, 1+len(rts))
	warmup := max(1, n/10)
	for i := range n + warmup {
		start := time.Now()
		if err := py.roundTrip(sessionCell); err != nil {
			return nil, fmt.Errorf("bare python3 over a pipe: %w", err)
		}
		if i >= warmup {
			times[0] = append(times[0], time.Since(start))
		}
		for j, r := range rts {
			start := time.Now()
			if err := cell(ctx, sessions[j]); err != nil {
				return nil, fmt.Errorf("%s session: %w", r.name, err)
			}
			if i >= warmup {
				times[j+1] = append(times[j+1], time.Since(start))
			}
		}
	}
	out := []Latency{summarize("python3 over a pipe: "+sessionCell+" (baseline)", times[0], 0)}
	for j, r := range rts {
		out = append(out, summarize(r.name+" session, warm: "+sessionCell, times[j+1], 0))
	}
	return out, nil
}
