package linux

import (
	"bytes"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// copyFile (the copies of /etc in a sandbox's root) copies a regular file's
// bytes, empty or larger than one call's worth, with the mode asked for,
// and refuses a link or a FIFO in its place.
func TestCopyFile(t *testing.T) {
	dir := t.TempDir()
	big := bytes.Repeat([]byte("0123456789abcdef"), 50_000) // 800 kB
	for name, data := range map[string][]byte{"empty": nil, "small": []byte("Etc/UTC\n"), "big": big} {
		src, dst := filepath.Join(dir, name), filepath.Join(dir, name+".copy")
		if err := os.WriteFile(src, data, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := copyFile(src, dst, 0o644); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		got, err := os.ReadFile(dst)
		if err != nil || !bytes.Equal(got, data) {
			t.Errorf("%s: copied %d bytes, want %d (%v)", name, len(got), len(data), err)
		}
		if fi, err := os.Stat(dst); err != nil || fi.Mode().Perm() != 0o644&^umask() {
			t.Errorf("%s: copy's mode %v, want %v (%v)", name, fi.Mode(), os.FileMode(0o644&^umask()), err)
		}
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(filepath.Join(dir, "small"), link); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, src := range []string{link, fifo} {
		if err := copyFile(src, src+".copy", 0o644); err == nil {
			t.Errorf("%s was copied", filepath.Base(src))
		}
	}
}

func umask() os.FileMode {
	m := syscall.Umask(0)
	syscall.Umask(m)
	return os.FileMode(m)
}
