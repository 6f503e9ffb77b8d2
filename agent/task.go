package agent

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"path"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/coderun/coderun/sandbox"
	"github.com/coderun/coderun/store"
)

// Task is what the user asks.
type Task struct {
	// Prompt is the task in the user's words.
	Prompt string
	// Files are the user's input files, placed in the workspace at their
	// paths.
	Files []sandbox.File
}

// Describe returns what the model is told about an input file: its size
// and shape — a CSV's header and row count, a JSON document's top-level
// shape, a text file's line count — never its data.
func Describe(f sandbox.File) store.InputFile {
	in := store.InputFile{Path: f.Path, Size: int64(len(f.Content))}
	size := sandbox.FormatBytes(in.Size)
	switch ext := strings.ToLower(path.Ext(f.Path)); {
	case ext == ".csv" || ext == ".tsv":
		in.Summary = describeCSV(f.Content, ext == ".tsv", size)
	case ext == ".json":
		in.Summary = describeJSON(f.Content, size)
	case ext == ".jsonl" || ext == ".ndjson":
		in.Summary = fmt.Sprintf("JSON Lines, %d records, %s", countLines(f.Content), size)
	case utf8.Valid(f.Content) && !bytes.ContainsRune(f.Content, 0):
		in.Summary = fmt.Sprintf("text, %d lines, %s", countLines(f.Content), size)
	default:
		in.Summary = "binary, " + size
	}
	return in
}

func countLines(b []byte) int {
	n := bytes.Count(b, []byte("\n"))
	if len(b) > 0 && b[len(b)-1] != '\n' {
		n++
	}
	return n
}

func describeCSV(b []byte, tab bool, size string) string {
	r := csv.NewReader(bytes.NewReader(b))
	if tab {
		r.Comma = '\t'
	}
	r.FieldsPerRecord = -1
	r.LazyQuotes = true
	header, err := r.Read()
	if err != nil {
		return fmt.Sprintf("CSV, unreadable header (%v), %s", err, size)
	}
	rows := 0
	for {
		_, err := r.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			return fmt.Sprintf("CSV with columns %s; unreadable after row %d (%v); %s", quoteAll(header), rows, err, size)
		}
		rows++
	}
	kind := "CSV"
	if tab {
		kind = "TSV"
	}
	return fmt.Sprintf("%s with a header row and %d data rows; columns (%d): %s; %s", kind, rows, len(header), quoteAll(header), size)
}

func quoteAll(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = fmt.Sprintf("%q", n)
	}
	return strings.Join(q, ", ")
}

func describeJSON(b []byte, size string) string {
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return "JSON that does not parse, " + size
	}
	switch x := v.(type) {
	case []any:
		s := fmt.Sprintf("JSON array of %d items", len(x))
		if len(x) > 0 {
			if obj, ok := x[0].(map[string]any); ok {
				s += " (objects with keys " + keys(obj) + ")"
			}
		}
		return s + ", " + size
	case map[string]any:
		return "JSON object with keys " + keys(x) + ", " + size
	}
	return "JSON scalar, " + size
}

func keys(m map[string]any) string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	if len(ks) > 20 {
		ks = append(ks[:20], "…")
	}
	return quoteAll(ks)
}
