package session

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/coderun/coderun/sandbox"
)

// Notebook is a Jupyter notebook in nbformat 4. What this package writes
// validates against nbformat's schema and opens in Jupyter as it is; what
// it reads keeps every cell and all metadata, so a notebook run through
// Replay comes back with only its code cells' outputs changed.
type Notebook struct {
	NBFormat      int
	NBFormatMinor int
	Metadata      map[string]any
	Cells         []NotebookCell
}

// NotebookCell is one cell: "code", "markdown" or "raw".
type NotebookCell struct {
	ID       string
	Type     string
	Source   string
	Metadata map[string]any
	// Code cells: the execution count (0: none) and the outputs.
	ExecutionCount int
	Outputs        []Output
	// Markdown and raw cells: attachments, kept as they were.
	Attachments map[string]any
}

// Export makes a notebook of the session's history: one code cell per
// executed cell, in order, retries included. Each cell's metadata has a
// "coderun" entry (index, status, timing, retry links, how the
// interpreter ended) and Jupyter's "execution" timestamps.
func (s *Session) Export() *Notebook {
	info := s.Info()
	nb := NewNotebook(s.cfg.Language, s.interpreterVersion())
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

// NewNotebook returns an empty notebook for lang, with the kernel and
// language metadata Jupyter expects.
func NewNotebook(lang sandbox.Language, version string) *Notebook {
	md := map[string]any{}
	switch lang {
	case sandbox.Bash:
		md["kernelspec"] = map[string]any{"display_name": "Bash", "language": "bash", "name": "bash"}
		md["language_info"] = map[string]any{"name": "bash", "mimetype": "text/x-sh", "file_extension": ".sh", "codemirror_mode": "shell"}
	default:
		md["kernelspec"] = map[string]any{"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"}
		li := map[string]any{"name": "python", "mimetype": "text/x-python", "file_extension": ".py",
			"codemirror_mode": map[string]any{"name": "ipython", "version": 3}, "pygments_lexer": "ipython3", "nbconvert_exporter": "python"}
		if version != "" {
			li["version"] = version
		}
		md["language_info"] = li
	}
	return &Notebook{NBFormat: 4, NBFormatMinor: 5, Metadata: md}
}

func exportCell(c Cell) NotebookCell {
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
	return NotebookCell{
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

// Language is the notebook's language (from its kernelspec or
// language_info), sandbox.Python when it does not say.
func (nb *Notebook) Language() sandbox.Language {
	for _, key := range []string{"kernelspec", "language_info"} {
		m, _ := nb.Metadata[key].(map[string]any)
		field := "language"
		if key == "language_info" {
			field = "name"
		}
		if l, _ := m[field].(string); l != "" {
			switch strings.ToLower(l) {
			case "bash", "sh", "shell":
				return sandbox.Bash
			case "python", "python3":
				return sandbox.Python
			default:
				return sandbox.Language(strings.ToLower(l))
			}
		}
	}
	return sandbox.Python
}

// ReadNotebook parses an nbformat 4 notebook. A malformed one is refused
// with a *NotebookError: the line and column, and what was expected there.
func ReadNotebook(r io.Reader) (*Notebook, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("notebook: %w", err)
	}
	if err := checkNotebook(data); err != nil {
		return nil, err
	}
	var raw struct {
		NBFormat      int            `json:"nbformat"`
		NBFormatMinor int            `json:"nbformat_minor"`
		Metadata      map[string]any `json:"metadata"`
		Cells         []NotebookCell `json:"cells"`
	}
	if err := json.Unmarshal(data, &raw); err != nil {
		// checkNotebook lets nothing through that fails here.
		return nil, fmt.Errorf("%w: notebook: %v", sandbox.ErrInvalid, err)
	}
	if raw.Metadata == nil {
		raw.Metadata = map[string]any{}
	}
	return &Notebook{NBFormat: raw.NBFormat, NBFormatMinor: raw.NBFormatMinor, Metadata: raw.Metadata, Cells: raw.Cells}, nil
}

// MarshalJSON writes nbformat 4.
func (nb *Notebook) MarshalJSON() ([]byte, error) {
	cells := nb.Cells
	if cells == nil {
		cells = []NotebookCell{}
	}
	return json.Marshal(struct {
		Cells         []NotebookCell `json:"cells"`
		Metadata      map[string]any `json:"metadata"`
		NBFormat      int            `json:"nbformat"`
		NBFormatMinor int            `json:"nbformat_minor"`
	}{cells, nonNilMap(nb.Metadata), nb.NBFormat, nb.NBFormatMinor})
}

// WriteTo writes the notebook as Jupyter does (indented by one space).
func (nb *Notebook) WriteTo(w io.Writer) (int64, error) {
	data, err := json.MarshalIndent(nb, "", " ")
	if err != nil {
		return 0, fmt.Errorf("notebook: %w", err)
	}
	n, err := w.Write(append(data, '\n'))
	return int64(n), err
}

// MarshalJSON writes the fields nbformat allows for the cell's type, keys
// sorted as Jupyter writes them.
func (c NotebookCell) MarshalJSON() ([]byte, error) {
	meta := nonNilMap(c.Metadata)
	switch c.Type {
	case "code":
		var count *int
		if c.ExecutionCount > 0 {
			count = &c.ExecutionCount
		}
		outs := c.Outputs
		if outs == nil {
			outs = []Output{}
		}
		return json.Marshal(struct {
			Type           string         `json:"cell_type"`
			ExecutionCount *int           `json:"execution_count"`
			ID             string         `json:"id,omitempty"`
			Metadata       map[string]any `json:"metadata"`
			Outputs        []Output       `json:"outputs"`
			Source         string         `json:"source"`
		}{c.Type, count, c.ID, meta, outs, c.Source})
	case "markdown", "raw":
		return json.Marshal(struct {
			Attachments map[string]any `json:"attachments,omitempty"`
			Type        string         `json:"cell_type"`
			ID          string         `json:"id,omitempty"`
			Metadata    map[string]any `json:"metadata"`
			Source      string         `json:"source"`
		}{c.Attachments, c.Type, c.ID, meta, c.Source})
	}
	return nil, fmt.Errorf("notebook: unknown cell type %q", c.Type)
}

// UnmarshalJSON reads a cell, its source given as a string or as lines.
func (c *NotebookCell) UnmarshalJSON(data []byte) error {
	var raw struct {
		ID             string         `json:"id"`
		Type           string         `json:"cell_type"`
		Source         multiline      `json:"source"`
		Metadata       map[string]any `json:"metadata"`
		ExecutionCount *int           `json:"execution_count"`
		Outputs        []Output       `json:"outputs"`
		Attachments    map[string]any `json:"attachments"`
	}
	if err := json.Unmarshal(data, &raw); err != nil {
		return err
	}
	*c = NotebookCell{ID: raw.ID, Type: raw.Type, Source: string(raw.Source), Metadata: raw.Metadata,
		Outputs: raw.Outputs, Attachments: raw.Attachments}
	if raw.ExecutionCount != nil {
		c.ExecutionCount = *raw.ExecutionCount
	}
	return nil
}

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
func Replay(ctx context.Context, s *Session, nb *Notebook, opts ReplayOptions) (*Notebook, error) {
	out := &Notebook{NBFormat: 4, NBFormatMinor: max(nb.NBFormatMinor, 5), Metadata: nb.Metadata, Cells: make([]NotebookCell, len(nb.Cells))}
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
