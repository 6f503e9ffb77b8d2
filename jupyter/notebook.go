package jupyter

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/coderun/coderun/language"
	"github.com/coderun/coderun/sandbox"
)

// Notebook is a Jupyter notebook in nbformat 4. What this package writes
// validates against nbformat's schema and opens in Jupyter as it is; what
// it reads keeps every cell and all metadata, so a notebook read, run and
// written back comes back with only its code cells' outputs changed.
type Notebook struct {
	NBFormat      int
	NBFormatMinor int
	Metadata      map[string]any
	Cells         []Cell
}

// Cell is one cell of a notebook: Type is "code", "markdown" or "raw".
type Cell struct {
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

// New returns an empty notebook for lang (Python, or Bash), with the
// kernel and language metadata Jupyter expects; version, if set, is the
// Python version its language_info says.
func New(lang language.Language, version string) *Notebook {
	md := map[string]any{}
	switch lang {
	case language.Bash:
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

// Language is the notebook's language (from its kernelspec or
// language_info), language.Python when it does not say.
func (nb *Notebook) Language() language.Language {
	for _, key := range []string{"kernelspec", "language_info"} {
		m, _ := nb.Metadata[key].(map[string]any)
		field := "language"
		if key == "language_info" {
			field = "name"
		}
		if l, _ := m[field].(string); l != "" {
			switch strings.ToLower(l) {
			case "bash", "sh", "shell":
				return language.Bash
			case "python", "python3":
				return language.Python
			default:
				return language.Language(strings.ToLower(l))
			}
		}
	}
	return language.Python
}

// Read parses an nbformat 4 notebook. A malformed one is refused with a
// *NotebookError: the line and column, and what was expected there.
func Read(r io.Reader) (*Notebook, error) {
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
		Cells         []Cell         `json:"cells"`
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
		cells = []Cell{}
	}
	return json.Marshal(struct {
		Cells         []Cell         `json:"cells"`
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
func (c Cell) MarshalJSON() ([]byte, error) {
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
func (c *Cell) UnmarshalJSON(data []byte) error {
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
	*c = Cell{ID: raw.ID, Type: raw.Type, Source: string(raw.Source), Metadata: raw.Metadata,
		Outputs: raw.Outputs, Attachments: raw.Attachments}
	if raw.ExecutionCount != nil {
		c.ExecutionCount = *raw.ExecutionCount
	}
	return nil
}
