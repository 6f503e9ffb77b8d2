package hostdir_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/coderun/coderun/sandbox"
	"github.com/coderun/coderun/sandbox/hostdir"
	"golang.org/x/sys/unix"
)

// The directories WriteFiles makes for nested inputs are inputs too: they
// are not reported as created by the run, only as changed when the run
// changes them.
func TestCollectFilesIgnoresInputDirectories(t *testing.T) {
	dir := t.TempDir()
	snap, err := hostdir.WriteFiles(dir, []sandbox.File{
		{Path: "a/b/c.txt", Content: []byte("c")},
		{Path: "a/d.txt", Content: []byte("d")},
		{Path: "top.txt", Content: []byte("t")},
	}, os.Getuid(), os.Getgid())
	if err != nil {
		t.Fatal(err)
	}
	files, truncated, err := hostdir.CollectFiles(dir, snap, 0)
	if err != nil || truncated || len(files) != 0 {
		t.Fatalf("right after writing the inputs: %+v, truncated=%v, err=%v; want nothing", files, truncated, err)
	}
	if err := os.WriteFile(filepath.Join(dir, "a", "b", "new.txt"), []byte("n"), 0o644); err != nil {
		t.Fatal(err)
	}
	files, _, err = hostdir.CollectFiles(dir, snap, 0)
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

// A file with many names (hard links) comes back once: under its first
// name in path order, the others pointing at it with SameFileAs. Read
// under every name, 100 links to 1 MiB made 100 MiB of results.
func TestCollectFilesReadsHardLinksOnce(t *testing.T) {
	dir := t.TempDir()
	data := bytes.Repeat([]byte("0123456789abcdef"), 64<<10) // 1 MiB
	if err := os.WriteFile(filepath.Join(dir, "data.bin"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	for i := range 100 {
		if err := os.Link(filepath.Join(dir, "data.bin"), filepath.Join(dir, fmt.Sprintf("link%03d", i))); err != nil {
			t.Fatal(err)
		}
	}
	files, _, err := hostdir.CollectFiles(dir, nil, 4<<20)
	if err != nil {
		t.Fatal(err)
	}
	var total int
	for _, f := range files {
		total += len(f.Content)
		switch {
		case f.Path == "data.bin":
			if !bytes.Equal(f.Content, data) || f.SameFileAs != "" {
				t.Errorf("data.bin, the first name: %d bytes of content, same as %q; want all of it", len(f.Content), f.SameFileAs)
			}
		case f.SameFileAs != "data.bin" || len(f.Content) != 0:
			t.Errorf("%s: same as %q with %d bytes of content; want same as data.bin and no content", f.Path, f.SameFileAs, len(f.Content))
		}
	}
	if len(files) != 101 || total != len(data) {
		t.Fatalf("%d entries with %d bytes of content in all; want 101 entries and the file's %d bytes once", len(files), total, len(data))
	}
}

// mountTmpfs mounts a tmpfs of size bytes on a new directory: a workspace
// as small as a run's.
func mountTmpfs(t *testing.T, size int64) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("mounting a tmpfs needs root")
	}
	dir := t.TempDir()
	if err := unix.Mount("tmpfs", dir, "tmpfs", 0, fmt.Sprintf("size=%d", size)); err != nil {
		t.Fatalf("mount tmpfs: %v", err)
	}
	t.Cleanup(func() { unix.Unmount(dir, unix.MNT_DETACH) })
	return dir
}

// Sparse files cost a workspace nothing but read as their apparent size:
// whatever is asked per file, all content read out of a workspace is at
// most its size, and so is a single file's through ReadFile.
func TestContentBoundedByWorkspaceSize(t *testing.T) {
	const size = 1 << 20
	dir := mountTmpfs(t, size)
	for _, name := range []string{"a.bin", "b.bin", "c.bin"} {
		f, err := os.Create(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.WriteString("head"); err != nil {
			t.Fatal(err)
		}
		if err := f.Truncate(1 << 30); err != nil { // a sparse GiB
			t.Fatal(err)
		}
		f.Close()
	}
	files, _, err := hostdir.CollectFiles(dir, nil, 1<<30)
	if err != nil {
		t.Fatal(err)
	}
	var total int64
	for _, f := range files {
		total += int64(len(f.Content))
		if !f.ContentTruncated {
			t.Errorf("%s: %d bytes of 1 GiB came back without the truncated flag", f.Path, len(f.Content))
		}
	}
	if total > size {
		t.Errorf("%s of content came back from a workspace of %s", sandbox.FormatBytes(total), sandbox.FormatBytes(size))
	}
	data, truncated, err := hostdir.ReadFile(dir, "a.bin", 1<<30)
	if err != nil {
		t.Fatal(err)
	}
	if len(data) > size || !truncated {
		t.Errorf("ReadFile of a sparse GiB: %s, truncated=%v; want at most the workspace's %s, truncated",
			sandbox.FormatBytes(int64(len(data))), truncated, sandbox.FormatBytes(size))
	}
}

// A long-lived sandbox's program can leave a FIFO where the host later
// writes a file: WriteFiles refuses it at once instead of blocking on it.
func TestWriteFilesRefusesAFIFO(t *testing.T) {
	dir := t.TempDir()
	if err := unix.Mkfifo(filepath.Join(dir, "data.csv"), 0o666); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := hostdir.WriteFiles(dir, []sandbox.File{{Path: "data.csv", Content: []byte("a,b\n")}}, os.Getuid(), os.Getgid())
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("WriteFiles wrote into a FIFO")
		}
	case <-time.After(5 * time.Second):
		// Unblock the writer so the test binary can end.
		if f, err := os.OpenFile(filepath.Join(dir, "data.csv"), os.O_RDONLY|unix.O_NONBLOCK, 0); err == nil {
			defer f.Close()
		}
		t.Fatal("WriteFiles blocked on a FIFO in the workspace")
	}
}

// An input file the run removed is in Removed, however it went: deleted,
// its directory removed, or its directory replaced by a file or by a link
// leading out of the workspace. One kept, changed, or replaced by another
// kind of entry is not (a changed one is in Files).
func TestCollectReportsRemovedInputs(t *testing.T) {
	dir := t.TempDir()
	snap, err := hostdir.WriteFiles(dir, []sandbox.File{
		{Path: "gone.txt", Content: []byte("g")},
		{Path: "kept.txt", Content: []byte("k")},
		{Path: "changed.txt", Content: []byte("c")},
		{Path: "nowdir", Content: []byte("d")},
		{Path: "d/in.txt", Content: []byte("i")},
		{Path: "f/in.txt", Content: []byte("i")},
		{Path: "l/in.txt", Content: []byte("i")},
	}, os.Getuid(), os.Getgid())
	if err != nil {
		t.Fatal(err)
	}
	var res sandbox.Result
	if err := hostdir.Collect(&res, dir, snap, 0); err != nil || res.Removed != nil {
		t.Fatalf("right after writing the inputs: removed %q, err %v; want none", res.Removed, err)
	}
	at := func(p string) string { return filepath.Join(dir, p) }
	for _, err := range []error{
		os.Remove(at("gone.txt")),
		os.WriteFile(at("changed.txt"), []byte("changed"), 0o644),
		os.Remove(at("nowdir")), os.Mkdir(at("nowdir"), 0o755),
		os.RemoveAll(at("d")),
		os.RemoveAll(at("f")), os.WriteFile(at("f"), nil, 0o644),
		os.RemoveAll(at("l")), os.Symlink("/etc", at("l")),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := hostdir.Collect(&res, dir, snap, 0); err != nil {
		t.Fatal(err)
	}
	if want := []string{"d/in.txt", "f/in.txt", "gone.txt", "l/in.txt"}; fmt.Sprint(res.Removed) != fmt.Sprint(want) {
		t.Errorf("removed %q; want %q", res.Removed, want)
	}
	changed := map[string]bool{}
	for _, f := range res.Files {
		changed[f.Path] = true
	}
	if !changed["changed.txt"] || !changed["nowdir"] {
		t.Errorf("files %+v; want changed.txt and nowdir among them", res.Files)
	}
}
