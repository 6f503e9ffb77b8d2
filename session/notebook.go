package session

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/coderun/coderun/jupyter"
)

// Export makes a notebook of the session's history: one code cell per
// executed cell, in order, retries included. Each cell's metadata has a
// "coderun" entry (index, status, timing, retry links, how the
// interpreter ended) and Jupyter's "execution" timestamps.
func (s *Session) Export() *jupyter.Notebook {
	info := s.Info()
	nb := jupyter.New(s.cfg.Language, s.interpreterVersion())
	nb.Metadata["coderun"] = map[string]any{"session": info.ID, "exported": time.Now().UTC().Format(time.RFC3339Nano)}
	for _, c := range s.History() {
		nb.Cells = append(nb.Cells, exportCell(c))
	}
	return nb
}

func (s *Session) interpreterVersion() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.in == nil || s.in.info == nil {
		return ""
	}
	v, _ := s.in.info["version"].(string)
	return v
}

func exportCell(c Cell) jupyter.Cell {
	meta := map[string]any{"index": c.Index, "status": string(c.Status), "started": c.Started.UTC().Format(time.RFC3339Nano),
		"duration_ms": durationMS(c.Duration)}
	if c.RetryOf != 0 {
		meta["retry_of"] = c.RetryOf
	}
	if c.RetriedBy != 0 {
		meta["retried_by"] = c.RetriedBy
	}
	if c.Restarted {
		meta["restarted"] = true
	}
	if c.Ended != nil {
		meta["ended"] = c.Ended
	}
	if c.OutputTruncated {
		meta["output_truncated"] = true
	}
	return jupyter.Cell{
		ID:   fmt.Sprintf("cell-%d", c.Index),
		Type: "code", Source: c.Code, ExecutionCount: c.ExecutionCount, Outputs: c.Outputs,
		Metadata: map[string]any{
			"coderun": meta,
			"execution": map[string]any{
				"iopub.execute_input": c.Started.UTC().Format(time.RFC3339Nano),
				"shell.execute_reply": c.Started.Add(c.Duration).UTC().Format(time.RFC3339Nano),
			},
		},
	}
}

func durationMS(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// ReplayOptions adjust Replay.
type ReplayOptions struct {
	// StopOnError stops at the first cell that does not end ok (the
	// remaining code cells keep no outputs), as nbconvert does by default.
	StopOnError bool
	// SkipRetried skips cells that a later cell retried (their coderun
	// metadata has "retried_by"), leaving them without outputs.
	SkipRetried bool
	// OnCell is told of each executed cell (i indexes nb.Cells).
	OnCell func(i int, c *Cell)
	// OnOutput receives each output as it arrives.
	OnOutput func(i int, o Output)
}

// Replay runs the code cells of nb in order in s and returns a copy of nb
// with their outputs and execution counts replaced; other cells and all
// metadata are kept. It stops early only for StopOnError, ctx, or a
// session that can no longer run cells (the error says why).
func Replay(ctx context.Context, s *Session, nb *jupyter.Notebook, opts ReplayOptions) (*jupyter.Notebook, error) {
	out := &jupyter.Notebook{NBFormat: 4, NBFormatMinor: max(nb.NBFormatMinor, 5), Metadata: nb.Metadata, Cells: make([]jupyter.Cell, len(nb.Cells))}
	copy(out.Cells, nb.Cells)
	ids := map[string]bool{}
	for i := range out.Cells {
		c := &out.Cells[i]
		// nbformat 4.5 wants unique cell ids; older notebooks have none.
		if c.ID == "" || ids[c.ID] {
			c.ID = fmt.Sprintf("cell-%d", i+1)
		}
		ids[c.ID] = true
		if c.Type == "code" {
			c.Outputs, c.ExecutionCount = nil, 0
		}
	}
	stopped := false
	for i := range out.Cells {
		c := &out.Cells[i]
		if c.Type != "code" || stopped {
			continue
		}
		if opts.SkipRetried {
			if cr, _ := c.Metadata["coderun"].(map[string]any); cr != nil && cr["retried_by"] != nil {
				continue
			}
		}
		if strings.TrimSpace(c.Source) == "" {
			continue
		}
		var onOut func(Output)
		if opts.OnOutput != nil {
			onOut = func(o Output) { opts.OnOutput(i, o) }
		}
		cell, err := s.Execute(ctx, Exec{Code: c.Source, OnOutput: onOut})
		if err != nil {
			return out, fmt.Errorf("notebook: cell %d: %w", i+1, err)
		}
		c.Outputs, c.ExecutionCount = cell.Outputs, cell.ExecutionCount
		md := map[string]any{}
		for k, v := range c.Metadata {
			md[k] = v
		}
		exported := exportCell(*cell)
		md["coderun"], md["execution"] = exported.Metadata["coderun"], exported.Metadata["execution"]
		c.Metadata = md
		if opts.OnCell != nil {
			opts.OnCell(i, cell)
		}
		if cell.Status != StatusOK && opts.StopOnError {
			stopped = true
		}
		if ctx.Err() != nil {
			return out, fmt.Errorf("notebook: %w", context.Cause(ctx))
		}
	}
	return out, nil
}
