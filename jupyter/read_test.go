package jupyter_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/coderun/coderun/jupyter"
	"github.com/coderun/coderun/sandbox"
)

// Notebooks the fuzzer (FuzzReadNotebook) found that the shape check let
// through and the decoder then refused without saying where: each is
// refused with a *NotebookError naming the spot.
func TestReadNotebookFuzzFindings(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ src, want string }{
		{`{"nbformat": 4, "metadata": {"x": 1e400}, "cells": []}`,
			"line 1, column 35: the number 1e400 is too large: expected a number of at most about 1.8e308"},
		{`{"nbformat": 4, "cells": [{"cell_type": "code", "source": "", "outputs": [{"output_type": "stream", "text": -1e999}]}]}`,
			"line 1, column 109: the number -1e999 is too large: expected a number of at most about 1.8e308"},
	} {
		_, err := jupyter.Read(strings.NewReader(c.src))
		var ne *jupyter.NotebookError
		if !errors.As(err, &ne) || !errors.Is(err, sandbox.ErrInvalid) || err.Error() != c.want {
			t.Errorf("Read(%q):\n got %v\nwant %s", c.src, err, c.want)
		}
	}
}

// encoding/json decodes every key that matches a field's name regardless
// of case, and every repeated key: each of those values is checked too.
func TestReadNotebookKeysAsDecoded(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ src, want string }{
		{`{"nbformat": 4, "CELLS": [1], "cells": []}`,
			`line 1, column 27: cell 1: expected a cell (an object with "cell_type" and "source"), found a number`},
		{`{"nbformat": 4, "cells": 5, "cells": []}`,
			`line 1, column 26: "cells" is 5: expected a list`},
		{`{"nbformat": 4, "Metadata": [], "cells": []}`,
			`line 1, column 29: "Metadata" is a list: expected an object`},
		{`{"nbformat": 4, "NBFORMAT": 3, "cells": []}`,
			`line 1, column 29: "NBFORMAT" is 3: expected 4 (only nbformat 4 notebooks are read; nbconvert --to notebook upgrades older ones)`},
		{`{"nbformat": 4, "cells": [{"cell_type": "code", "ſource": 1, "source": ""}]}`,
			`line 1, column 60: cell 1: "ſource" is 1: expected a string or a list of strings`},
		{`{"nbformat": 4, "cells": [{"cell_type": "code", "Cell_Type": "python", "source": ""}]}`,
			`line 1, column 62: cell 1: "Cell_Type" is "python": expected "code", "markdown" or "raw"`},
		{`{"nbformat": 4, "cells": [{"cell_type": "code", "source": "", "outputs": [], "OUTPUTS": [{"output_type": "stream", "Text": 1}]}]}`,
			`line 1, column 124: cell 1, output 1: "Text" is 1: expected a string or a list of strings`},
		{`{"nbformat": 4, "cells": [{"cell_type": "code", "source": "", "outputs": [{"output_type": "display_data", "transient": {"display_id": 5, "display_id": "d"}}]}]}`,
			`line 1, column 120: cell 1, output 1: "transient" is an object: expected an object of strings`},
	} {
		_, err := jupyter.Read(strings.NewReader(c.src))
		var ne *jupyter.NotebookError
		if !errors.As(err, &ne) || !errors.Is(err, sandbox.ErrInvalid) || err.Error() != c.want {
			t.Errorf("Read(%q):\n got %v\nwant %s", c.src, err, c.want)
		}
	}
	// Repeated keys with good values are read as before: the last wins.
	nb, err := jupyter.Read(strings.NewReader(`{"nbformat": 4, "cells": [{"cell_type": "raw", "source": "a"}], "Cells": [{"cell_type": "raw", "source": "b"}]}`))
	if err != nil || len(nb.Cells) != 1 || nb.Cells[0].Source != "b" {
		t.Errorf("repeated cells: %v, %+v", err, nb)
	}
}

// Lists and objects nested deeper than encoding/json decodes are refused
// where the limit is passed; up to it, they are read.
func TestReadNotebookNesting(t *testing.T) {
	t.Parallel()
	nested := func(n int) string { // the notebook and its metadata are two levels
		return `{"nbformat": 4, "cells": [], "metadata": {"x": ` + strings.Repeat("[", n-2) + strings.Repeat("]", n-2) + "}}"
	}
	if _, err := jupyter.Read(strings.NewReader(nested(10000))); err != nil {
		t.Errorf("10000 levels: %v", err)
	}
	_, err := jupyter.Read(strings.NewReader(nested(10001)))
	want := "line 1, column 10046: lists and objects nested more than 10000 deep: expected at most 10000 levels"
	var ne *jupyter.NotebookError
	if !errors.As(err, &ne) || err.Error() != want {
		t.Errorf("10001 levels: %v, want %s", err, want)
	}
}

// A malformed notebook is refused saying where (line and column) and what
// was expected there, in the notebook's terms: never a bare "unexpected EOF"
// or a Go struct field.
func TestReadNotebookErrors(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ src, want string }{
		{"", `the file is empty: expected a notebook (a JSON object with "cells", "metadata" and "nbformat")`},
		{"{\n \"cells\": [\n  {\"cell_type\": \"code\", \"source\": \"x\"\n",
			"line 4, column 1: the file ends in the middle of the notebook: the '{' at line 3, column 3 is never closed (expected more, then '}')"},
		{"{\n \"cells\": [}\n", "line 2, column 12: found '}' where a value (object, list, string, number, true, false or null) was expected"},
		{"{\"nbformat\": 4 \"cells\": []}", "line 1, column 16: found '\"' where ',' or '}' was expected after a value in an object"},
		{"{\"nbformat\": 4,\n \"cells\": [{cell_type: 1}]}", "line 2, column 13: found 'c' where a key in double quotes was expected"},
		{"{\"nbformat\": 4, \"cells\": []} x", "line 1, column 30: unexpected text after the end of the notebook: expected nothing after its closing '}'"},
		{"{\"cells\": []}", `no "nbformat": expected "nbformat": 4 (is this a Jupyter notebook?)`},
		{"{\"nbformat\": 3}", `line 1, column 14: "nbformat" is 3: expected 4 (only nbformat 4 notebooks are read; nbconvert --to notebook upgrades older ones)`},
		{"[1, 2]", `line 1, column 1: expected a notebook (a JSON object with "cells", "metadata" and "nbformat"), found a list`},
		{"{\"nbformat\": 4, \"cells\": [\n {\"cell_type\": \"code\", \"source\": 5}]}", `line 2, column 34: cell 1: "source" is 5: expected a string or a list of strings`},
		{"{\"nbformat\": 4, \"cells\": [{\"cell_type\": \"markdown\", \"source\": \"\"},\n {\"cell_type\": \"python\", \"source\": \"x\"}]}", `line 2, column 16: cell 2: "cell_type" is "python": expected "code", "markdown" or "raw"`},
		{"{\"nbformat\": 4, \"cells\": [{\"cell_type\": \"code\", \"source\": \"\",\n \"outputs\": [{\"output_type\": \"stream\", \"text\": [1]}]}]}", `line 2, column 48: cell 1, output 1: "text" is a list: expected a string or a list of strings`},
		{"{\"nbformat\": 4, \"metadata\": [], \"cells\": []}", `line 1, column 29: "metadata" is a list: expected an object`},
	} {
		_, err := jupyter.Read(strings.NewReader(c.src))
		var ne *jupyter.NotebookError
		if !errors.As(err, &ne) || !errors.Is(err, sandbox.ErrInvalid) || err.Error() != c.want {
			t.Errorf("Read(%q):\n got %v\nwant %s", c.src, err, c.want)
		}
	}
}
