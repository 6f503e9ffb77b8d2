package linux

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/coderun/coderun/sandbox/linux/internal/initsrc"
)

func TestEmbeddedInitIsCurrent(t *testing.T) {
	if len(embeddedInit) == 0 {
		t.Skipf("no init program is embedded for %s", runtime.GOARCH)
	}
	if !sourcesMatch(os.DirFS("."), embeddedInitSources) {
		t.Fatal("the embedded sandbox init program was built from other sources than this package's " +
			"(the runtime re-executes its own binary instead, which is slower): run `go generate ./sandbox/linux` and commit initbin/")
	}
	if !embeddedInitUsable() {
		t.Fatal("the sources embedded in this binary do not match the init program's")
	}
	sum := sha256.Sum256(embeddedInit)
	if got, want := hex.EncodeToString(sum[:]), strings.TrimSpace(embeddedInitSum); got != want {
		t.Fatalf("the embedded init program's SHA-256 is %s, its .sha256 file says %s: run `go generate ./sandbox/linux`", got, want)
	}
}

// A change to any source file of the package, or a new one, changes the
// digest; a test file does not.
func TestSourcesDigest(t *testing.T) {
	base := fstest.MapFS{"init.go": {Data: []byte("package linux")}, "zygote.py": {Data: []byte("import os")}}
	digest, err := initsrc.Digest(base)
	if err != nil {
		t.Fatal(err)
	}
	if !sourcesMatch(base, digest+"\n") {
		t.Error("the same sources do not match their digest")
	}
	for name, fsys := range map[string]fstest.MapFS{
		"changed":   {"init.go": {Data: []byte("package linux // changed")}, "zygote.py": base["zygote.py"]},
		"added":     {"init.go": base["init.go"], "zygote.py": base["zygote.py"], "mount.go": {Data: []byte("package linux")}},
		"python":    {"init.go": base["init.go"], "zygote.py": {Data: []byte("import sys")}},
		"test only": {"init.go": base["init.go"], "zygote.py": base["zygote.py"], "init_test.go": {Data: []byte("package linux")}},
	} {
		if got := sourcesMatch(fsys, digest); got != (name == "test only") {
			t.Errorf("%s: matches %v", name, got)
		}
	}
}

// The runtime starts the embedded program, written once into the state
// directory (root's, mode 0555), and uses the copy there afterwards; a file
// there that is not what it wrote is replaced.
func TestEmbeddedInitIsWrittenOnce(t *testing.T) {
	if !embeddedInitUsable() {
		t.Skip("the embedded init program is not in use")
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
	dir := t.TempDir()
	f, err := openInitExecutable(dir)
	if err != nil {
		t.Fatal(err)
	}
	path := f.Name()
	f.Close()
	if want := filepath.Join(dir, "init-"+strings.TrimSpace(embeddedInitSum)[:16]); path != want {
		t.Fatalf("init program at %s, want %s", path, want)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o555 || fi.Size() != int64(len(embeddedInit)) {
		t.Errorf("init program: mode %v, %d bytes", fi.Mode(), fi.Size())
	}
	// Another version's program written long ago goes, a recent one
	// stays; a tampered copy is replaced.
	other, recent := filepath.Join(dir, "init-0000000000000000"), filepath.Join(dir, "init-1111111111111111")
	for _, p := range []string{other, recent} {
		if err := os.WriteFile(p, []byte("old"), 0o555); err != nil {
			t.Fatal(err)
		}
	}
	long := time.Now().Add(-25 * time.Hour)
	if err := os.Chtimes(other, long, long); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, 0o777); err != nil {
		t.Fatal(err)
	}
	f, err = openInitExecutable(dir)
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o555 {
		t.Errorf("a group- and world-writable copy was kept: %v %v", fi.Mode(), err)
	}
	if _, err := os.Stat(other); !os.IsNotExist(err) {
		t.Errorf("another version's program of a day ago was left: %v", err)
	}
	if _, err := os.Stat(recent); err != nil {
		t.Errorf("another version's recent program was removed: %v", err)
	}
}

// A runtime that found its sources match its embedded init program says
// so in the state directory, for its executable, and the next one to start
// from the same executable does not digest them again; a marker that
// others could have written is not believed.
func TestInitVerdictIsRemembered(t *testing.T) {
	if !embeddedInitUsable() {
		t.Skip("the embedded init program is not in use")
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
	checks := 0
	checkSources = func() bool { checks++; return embeddedInitUsable() }
	defer func() { checkSources = embeddedInitUsable }()
	dir := t.TempDir()
	open := func() {
		t.Helper()
		f, err := openInitExecutable(dir)
		if err != nil {
			t.Fatal(err)
		}
		if want := filepath.Join(dir, "init-"+strings.TrimSpace(embeddedInitSum)[:16]); f.Name() != want {
			t.Fatalf("init program at %s, want the embedded one at %s", f.Name(), want)
		}
		f.Close()
	}
	open()
	if checks != 1 {
		t.Fatalf("the first start checked the sources %d times, want 1", checks)
	}
	markers, _ := filepath.Glob(filepath.Join(dir, "init-*"+verifiedInfix+"*"))
	if len(markers) != 1 {
		t.Fatalf("markers after the first start: %v, want one", markers)
	}
	open()
	if checks != 1 {
		t.Errorf("the second start checked the sources again (%d checks)", checks)
	}
	if err := os.Chmod(markers[0], 0o666); err != nil {
		t.Fatal(err)
	}
	open()
	if checks != 2 {
		t.Errorf("a world-writable marker was believed (%d checks)", checks)
	}
	// Another executable's identity is another marker.
	if initUsable(dir, strings.Repeat("0", 64)) != true || checks != 3 {
		t.Errorf("another init program's digest reused the marker (%d checks)", checks)
	}
}
