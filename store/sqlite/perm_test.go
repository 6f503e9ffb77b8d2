package sqlite_test

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/coderun/coderun/store"
	"github.com/coderun/coderun/store/sqlite"
)

// The store holds inputs and prompts: its directory and its database
// files are created private to the user, whatever the umask lets others
// read.
func TestCreatedPrivate(t *testing.T) {
	old := syscall.Umask(0o022)
	defer syscall.Umask(old)
	dir := filepath.Join(t.TempDir(), "data", "coderun")
	db, err := sqlite.Open(context.Background(), dir, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	st, err := db.Tenant(store.DefaultTenant)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.CreateRun(context.Background(), store.NewRun{Task: "secret input", Model: "m:m", Mode: "single", Owner: store.NewOwner()}); err != nil {
		t.Fatal(err)
	}
	want := map[string]os.FileMode{dir: 0o700, filepath.Join(dir, sqlite.FileName): 0o600,
		filepath.Join(dir, sqlite.FileName+"-wal"): 0o600, filepath.Join(dir, sqlite.FileName+"-shm"): 0o600}
	for path, mode := range want {
		fi, err := os.Stat(path)
		if err != nil {
			t.Errorf("%s: %v", path, err)
			continue
		}
		if got := fi.Mode().Perm(); got != mode {
			t.Errorf("%s: mode %o, want %o", path, got, mode)
		}
	}
}
