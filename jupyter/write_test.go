package jupyter_test

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/coderun/coderun/jupyter"
	"github.com/coderun/coderun/language"
)

// golden compares got with the file in testdata, written by the code this
// package replaced (session's notebook writer): the bytes stay the same.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	want, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s changed:\n%s", name, got)
	}
}

// A notebook as Jupyter writes it (sources and outputs as lists of lines,
// every output type, attachments, transient display ids, metadata) is
// written back as before: keys sorted, lines joined, transient data left
// out, indented by one space.
func TestWriteIsStable(t *testing.T) {
	f, err := os.Open(filepath.Join("testdata", "jupyter.ipynb"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	nb, err := jupyter.Read(f)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if _, err := nb.WriteTo(&out); err != nil {
		t.Fatal(err)
	}
	golden(t, "jupyter.written.ipynb", out.Bytes())
}

// New notebooks carry the kernel and language metadata as before.
func TestNewIsStable(t *testing.T) {
	var out bytes.Buffer
	for _, nb := range []*jupyter.Notebook{jupyter.New(language.Python, "3.11.2"), jupyter.New(language.Bash, "")} {
		if _, err := nb.WriteTo(&out); err != nil {
			t.Fatal(err)
		}
	}
	golden(t, "new.written.ipynb", out.Bytes())
}

// The language comes from the kernelspec, then language_info; Python
// when neither says.
func TestNotebookLanguage(t *testing.T) {
	for _, c := range []struct {
		md   map[string]any
		want language.Language
	}{
		{nil, language.Python},
		{map[string]any{"kernelspec": map[string]any{"language": "Bash"}}, language.Bash},
		{map[string]any{"language_info": map[string]any{"name": "sh"}}, language.Bash},
		{map[string]any{"kernelspec": map[string]any{"language": "python3"}, "language_info": map[string]any{"name": "bash"}}, language.Python},
		{map[string]any{"kernelspec": map[string]any{"language": "R"}}, language.Language("r")},
	} {
		if got := (&jupyter.Notebook{Metadata: c.md}).Language(); got != c.want {
			t.Errorf("%v: %s, want %s", c.md, got, c.want)
		}
	}
}
