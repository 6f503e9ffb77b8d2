package sandbox_test

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/coderun/coderun/sandbox"
)

// SaveFiles makes regular files and directories only: links and special
// files are listed as skipped, whatever they point at.
func TestSaveFilesMakesNoLinks(t *testing.T) {
	dir := t.TempDir()
	rep, err := sandbox.SaveFiles(dir, []sandbox.FileInfo{
		{Path: "results", Kind: sandbox.KindDir},
		{Path: "results/mean.txt", Kind: sandbox.KindFile, Size: 5, Content: []byte("137.5"), Mode: 0o644},
		{Path: "passwd", Kind: sandbox.KindSymlink, LinkTarget: "/etc/passwd"},
		{Path: "results/inner", Kind: sandbox.KindSymlink, LinkTarget: "mean.txt"},
		{Path: "fifo", Kind: sandbox.KindOther},
	}, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	var skipped []string
	for _, s := range rep.Skipped {
		skipped = append(skipped, s.Path)
	}
	if strings.Join(skipped, " ") != "passwd results/inner fifo" || strings.Join(rep.Saved, " ") != "results/mean.txt" {
		t.Errorf("saved %v, skipped %v", rep.Saved, skipped)
	}
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.Type().IsRegular() && !d.IsDir() {
			t.Errorf("%s is a %v", p, d.Type())
		}
		return nil
	})
}

// A link left in the output directory (by an older version, or by hand)
// is replaced, not written through.
func TestSaveFilesReplacesLinkInTheWay(t *testing.T) {
	dir := t.TempDir()
	victim := filepath.Join(t.TempDir(), "victim")
	if err := os.WriteFile(victim, []byte("keep"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(victim, filepath.Join(dir, "out.txt")); err != nil {
		t.Fatal(err)
	}
	if _, err := sandbox.SaveFiles(dir, []sandbox.FileInfo{{Path: "out.txt", Kind: sandbox.KindFile, Size: 3, Content: []byte("new")}}, 1<<20); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(victim); string(got) != "keep" {
		t.Errorf("the file a link in the way pointed at now holds %q", got)
	}
	if got, err := os.ReadFile(filepath.Join(dir, "out.txt")); err != nil || string(got) != "new" {
		t.Errorf("out.txt: %q, %v", got, err)
	}
}

// The limit bounds the bytes saved in all; what passes it, and what came
// back cut short, is not saved and is named in the error. Hard links cost
// nothing, and zeros stay holes.
func TestSaveFilesLimitLinksAndHoles(t *testing.T) {
	dir := t.TempDir()
	sparse := make([]byte, 8<<20)
	copy(sparse, "head")
	rep, err := sandbox.SaveFiles(dir, []sandbox.FileInfo{
		{Path: "a.bin", Kind: sandbox.KindFile, Size: int64(len(sparse)), Content: sparse},
		{Path: "a2.bin", Kind: sandbox.KindFile, Size: int64(len(sparse)), SameFileAs: "a.bin"},
		{Path: "b.bin", Kind: sandbox.KindFile, Size: 1 << 30, Content: []byte("cut"), ContentTruncated: true},
		{Path: "c.bin", Kind: sandbox.KindFile, Size: 4 << 20, Content: make([]byte, 4<<20)},
		{Path: "d.txt", Kind: sandbox.KindFile, Size: 1, Content: []byte("d")},
	}, 10<<20)
	if err == nil {
		t.Fatal("no error for files not saved")
	}
	for _, p := range []string{"b.bin", "c.bin", "d.txt"} {
		if !strings.Contains(err.Error(), p) {
			t.Errorf("the error does not name %s: %v", p, err)
		}
		if _, serr := os.Lstat(filepath.Join(dir, p)); serr == nil {
			t.Errorf("%s was saved", p)
		}
	}
	var a, a2 syscall.Stat_t
	if err := syscall.Stat(filepath.Join(dir, "a.bin"), &a); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Stat(filepath.Join(dir, "a2.bin"), &a2); err != nil || a2.Ino != a.Ino {
		t.Errorf("a2.bin is not a hard link to a.bin (%v)", err)
	}
	if a.Size != 8<<20 || a.Blocks*512 > 64<<10 {
		t.Errorf("a.bin: %d bytes, %d allocated; want 8 MiB, sparse", a.Size, a.Blocks*512)
	}
	got, _ := os.ReadFile(filepath.Join(dir, "a.bin"))
	if !bytes.Equal(got, sparse) {
		t.Error("a.bin's content differs from what came back")
	}
	if rep.Bytes != 8<<20 || len(rep.Linked) != 1 {
		t.Errorf("report: %d bytes, linked %v", rep.Bytes, rep.Linked)
	}
}

// ReadUpload reads regular files, and follows a link only within its own
// directory; anything else is refused at once, naming what it is.
func TestReadUpload(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o640); err != nil {
			t.Fatal(err)
		}
	}
	write("data.csv", "x\n1\n")
	os.Mkdir(filepath.Join(dir, "sub"), 0o755)
	for name, target := range map[string]string{"alias.csv": "data.csv", "sub/up.csv": "../data.csv",
		"passwd": "/etc/passwd", "out": "../../../../../../etc/passwd", "abs.csv": filepath.Join(dir, "data.csv")} {
		if err := os.Symlink(target, filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	if err := syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	data, mode, err := sandbox.ReadUpload(filepath.Join(dir, "alias.csv"), 1<<20)
	if err != nil || string(data) != "x\n1\n" || mode != 0o640 {
		t.Errorf("a link within its directory: %q, %v, %v", data, mode, err)
	}
	for _, c := range []struct{ path, want string }{
		{filepath.Join(dir, "sub/up.csv"), "symbolic link"},
		{filepath.Join(dir, "passwd"), "symbolic link"},
		{filepath.Join(dir, "out"), "symbolic link"},
		{filepath.Join(dir, "abs.csv"), "symbolic link"},
		{filepath.Join(dir, "fifo"), "named pipe"},
		{"/dev/zero", "character device"},
		{dir, "directory"},
		{filepath.Join(dir, "missing"), "no such file"},
	} {
		start := time.Now()
		_, _, err := sandbox.ReadUpload(c.path, 1<<20)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("ReadUpload(%s): %v; want an error saying %q", c.path, err, c.want)
		}
		if d := time.Since(start); d > time.Second {
			t.Errorf("ReadUpload(%s) took %v", c.path, d)
		}
	}
	if _, _, err := sandbox.ReadUpload(filepath.Join(dir, "data.csv"), 3); !errors.Is(err, sandbox.ErrTooLarge) {
		t.Errorf("a 4-byte file with at most 3 allowed: %v; want ErrTooLarge", err)
	}
}
