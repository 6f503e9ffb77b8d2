package sandbox_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/coderun/coderun/sandbox"
)

// The directories WriteFiles makes for nested inputs are inputs too: they
// are not reported as created by the run, only as changed when the run
// changes them.
func TestCollectFilesIgnoresInputDirectories(t *testing.T) {
	dir := t.TempDir()
	snap, err := sandbox.WriteFiles(dir, []sandbox.File{
		{Path: "a/b/c.txt", Content: []byte("c")},
		{Path: "a/d.txt", Content: []byte("d")},
		{Path: "top.txt", Content: []byte("t")},
	}, os.Getuid(), os.Getgid())
	if err != nil {
		t.Fatal(err)
	}
	files, truncated, err := sandbox.CollectFiles(dir, snap, 0)
	if err != nil || truncated || len(files) != 0 {
		t.Fatalf("right after writing the inputs: %+v, truncated=%v, err=%v; want nothing", files, truncated, err)
	}
	if err := os.WriteFile(filepath.Join(dir, "a", "b", "new.txt"), []byte("n"), 0o644); err != nil {
		t.Fatal(err)
	}
	files, _, err = sandbox.CollectFiles(dir, snap, 0)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{"a/b": false, "a/b/new.txt": true} // path → created
	if len(files) != len(want) {
		t.Fatalf("after adding a/b/new.txt: %+v", files)
	}
	for _, f := range files {
		created, ok := want[f.Path]
		if !ok || f.Created != created {
			t.Errorf("%s: created=%v; want reported=%v created=%v", f.Path, f.Created, ok, created)
		}
	}
}
