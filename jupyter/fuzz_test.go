package jupyter

import (
	"bytes"
	"errors"
	"os"
	"testing"
	"unicode/utf8"

	"github.com/coderun/coderun/sandbox"
)

// FuzzReadNotebook reads what users give: notebook files. `go test` runs
// its seeds and testdata/fuzz; `go test -fuzz FuzzReadNotebook` looks for
// more. A file is refused with a *NotebookError that says where, or read
// into a notebook that writes, reads back and writes the same.

// knownOutput reports whether the notebook writer knows an output type.
func knownOutput(typ string) bool {
	switch typ {
	case TypeStream, TypeDisplayData, TypeExecuteResult, TypeError, TypeClearOutput, TypeUpdateDisplayData:
		return true
	}
	return false
}

func FuzzReadNotebook(f *testing.F) {
	for _, s := range []string{
		"",
		"{\n \"cells\": [\n  {\"cell_type\": \"code\", \"source\": \"x\"\n",
		"{\n \"cells\": [}\n",
		"{\"nbformat\": 4 \"cells\": []}",
		"{\"nbformat\": 4,\n \"cells\": [{cell_type: 1}]}",
		"{\"nbformat\": 4, \"cells\": []} x",
		"{\"cells\": []}",
		"{\"nbformat\": 3}",
		"[1, 2]",
		"{\"nbformat\": 4, \"cells\": [\n {\"cell_type\": \"code\", \"source\": 5}]}",
		"{\"nbformat\": 4, \"cells\": [{\"cell_type\": \"code\", \"source\": \"\",\n \"outputs\": [{\"output_type\": \"stream\", \"text\": [1]}]}]}",
		"{\"nbformat\": 4, \"metadata\": [], \"cells\": []}",
		`{"nbformat": 4, "cells": [{"cell_type": "code", "source": "", "outputs": [{"output_type": "mystery"}]}]}`,
		`{"nbformat": 4, "cells": [{"cell_type": "code", "source": ["a\n", "b"], "execution_count": 99999999999999999999}]}`,
		`{
 "cells": [
  {"cell_type": "markdown", "metadata": {}, "source": ["# Title\n", "Some *text*."], "attachments": {"a.png": {"image/png": "iVBO"}}},
  {"cell_type": "code", "execution_count": 9, "id": "c1", "metadata": {"tags": ["keep"]}, "outputs": [
    {"output_type": "stream", "name": "stdout", "text": ["stale\n"]},
    {"output_type": "execute_result", "execution_count": 9, "data": {"text/plain": ["4", "2"], "application/json": {"a": [1]}}, "metadata": {}},
    {"output_type": "display_data", "data": {"image/png": "iVBORw0KGgo="}, "metadata": {"isolated": true}, "transient": {"display_id": "d"}},
    {"output_type": "error", "ename": "E", "evalue": "v", "traceback": ["t"]}],
   "source": ["total = 0\n", "print(total)"]},
  {"cell_type": "raw", "metadata": {}, "source": "raw text"},
  {"cell_type": "code", "execution_count": null, "metadata": {}, "outputs": [], "source": "total * 2"}
 ],
 "metadata": {"kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"}, "custom": {"k": 1}},
 "nbformat": 4,
 "nbformat_minor": 2
}`,
	} {
		f.Add([]byte(s))
	}
	if data, err := os.ReadFile("../examples/analysis.ipynb"); err == nil {
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		nb, err := Read(bytes.NewReader(in))
		if err != nil {
			// Refused: always with where and what, in the notebook's terms.
			var ne *NotebookError
			if !errors.As(err, &ne) || !errors.Is(err, sandbox.ErrInvalid) {
				t.Fatalf("refused with %T %v, not a *NotebookError", err, err)
			}
			if ne.Msg == "" || !utf8.ValidString(ne.Msg) {
				t.Fatalf("message %q", ne.Msg)
			}
			if ne.Line > 0 {
				if ne.Offset < 0 || ne.Offset > int64(len(in)) {
					t.Fatalf("offset %d in %d bytes", ne.Offset, len(in))
				}
				before := in[:ne.Offset]
				line := bytes.Count(before, []byte("\n")) + 1
				col := len(before) - (bytes.LastIndexByte(before, '\n') + 1) + 1
				if ne.Line != line || ne.Column != col {
					t.Fatalf("offset %d is line %d column %d, error says %d:%d", ne.Offset, line, col, ne.Line, ne.Column)
				}
			}
			return
		}
		// Accepted: it writes, and what it writes reads back and writes
		// the same, cell for cell.
		var first bytes.Buffer
		if _, err := nb.WriteTo(&first); err != nil {
			for _, c := range nb.Cells {
				for _, o := range c.Outputs {
					if c.Type == "code" && !knownOutput(o.Type) {
						return // an output type the writer does not know
					}
				}
			}
			t.Fatalf("an accepted notebook does not write: %v", err)
		}
		back, err := Read(bytes.NewReader(first.Bytes()))
		if err != nil {
			t.Fatalf("what was written does not read back: %v\n%s", err, first.Bytes())
		}
		var second bytes.Buffer
		if _, err := back.WriteTo(&second); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(first.Bytes(), second.Bytes()) {
			t.Fatalf("written twice differently:\n%s\n%s", first.Bytes(), second.Bytes())
		}
		if len(back.Cells) != len(nb.Cells) || back.NBFormat != 4 {
			t.Fatalf("%d cells read back as %d", len(nb.Cells), len(back.Cells))
		}
		for i := range nb.Cells {
			a, b := nb.Cells[i], back.Cells[i]
			if a.Type != b.Type || a.Source != b.Source || a.ID != b.ID {
				t.Fatalf("cell %d: %+v read back as %+v", i+1, a, b)
			}
		}
		_ = nb.Language()
	})
}
