package linux

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestSystemTreesAreMadeAgain: the first sandbox gets none (its init makes
// its own), the next ones clones of the same trees, and trees older than
// treeMaxAge are made again (a host's package upgrade reaches the
// sandboxes started after it).
func TestSystemTreesAreMadeAgain(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
	root := t.TempDir()
	for _, d := range []string{"usr/lib", "etc/ssl"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	st, err := newSystemTrees(root, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer st.close()
	devs := func() map[string]uint64 {
		t.Helper()
		files, paths, err := st.clones()
		if err != nil {
			t.Fatal(err)
		}
		if len(paths) != 2 || paths[0] != "usr" || paths[1] != "etc/ssl" {
			t.Fatalf("trees %v, want usr and etc/ssl", paths)
		}
		out := map[string]uint64{}
		for i, f := range files {
			var s unix.Stat_t
			if err := unix.Fstat(int(f.Fd()), &s); err != nil {
				t.Fatal(err)
			}
			out[paths[i]] = s.Dev
			f.Close()
		}
		return out
	}
	if files, paths, err := st.clones(); err != nil || len(files)+len(paths) > 0 {
		t.Fatalf("the first sandbox got trees %v (%v): its init makes its own", paths, err)
	}
	first, second := devs(), devs()
	if first["usr"] != second["usr"] || first["etc/ssl"] != second["etc/ssl"] {
		t.Errorf("two sandboxes got different trees within treeMaxAge: %v, %v", first, second)
	}
	st.made = time.Now().Add(-2 * treeMaxAge)
	if third := devs(); third["usr"] == first["usr"] || third["etc/ssl"] == first["etc/ssl"] {
		t.Errorf("trees older than treeMaxAge were not made again: %v, then %v", first, third)
	}
}
