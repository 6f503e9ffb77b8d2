package session_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/coderun/coderun/sandbox"
	"github.com/coderun/coderun/session"
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
		_, err := session.ReadNotebook(strings.NewReader(c.src))
		var ne *session.NotebookError
		if !errors.As(err, &ne) || !errors.Is(err, sandbox.ErrInvalid) || err.Error() != c.want {
			t.Errorf("ReadNotebook(%q):\n got %v\nwant %s", c.src, err, c.want)
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
		_, err := session.ReadNotebook(strings.NewReader(c.src))
		var ne *session.NotebookError
		if !errors.As(err, &ne) || !errors.Is(err, sandbox.ErrInvalid) || err.Error() != c.want {
			t.Errorf("ReadNotebook(%q):\n got %v\nwant %s", c.src, err, c.want)
		}
	}
	// Repeated keys with good values are read as before: the last wins.
	nb, err := session.ReadNotebook(strings.NewReader(`{"nbformat": 4, "cells": [{"cell_type": "raw", "source": "a"}], "Cells": [{"cell_type": "raw", "source": "b"}]}`))
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
	if _, err := session.ReadNotebook(strings.NewReader(nested(10000))); err != nil {
		t.Errorf("10000 levels: %v", err)
	}
	_, err := session.ReadNotebook(strings.NewReader(nested(10001)))
	want := "line 1, column 10046: lists and objects nested more than 10000 deep: expected at most 10000 levels"
	var ne *session.NotebookError
	if !errors.As(err, &ne) || err.Error() != want {
		t.Errorf("10001 levels: %v, want %s", err, want)
	}
}
