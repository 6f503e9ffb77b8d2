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
