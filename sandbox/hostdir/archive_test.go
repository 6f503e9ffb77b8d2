package hostdir_test

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/coderun/coderun/sandbox"
	"github.com/coderun/coderun/sandbox/hostdir"
	"github.com/coderun/coderun/sandbox/sandboxtest"
)

type entry = sandboxtest.TarEntry

func file(name, content string, mode int64) entry { return sandboxtest.TarFile(name, content, mode) }

func tarOf(t *testing.T, entries ...entry) []byte {
	t.Helper()
	b, err := sandboxtest.Tar(entries...)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func sparseTar(_ *testing.T, name string, size int64) []byte {
	return sandboxtest.SparseTar(name, size)
}

// workspace makes an empty workspace directory inside a parent directory
// that nothing must reach, and returns both.
func workspace(t *testing.T) (parent, dir string) {
	parent = t.TempDir()
	dir = filepath.Join(parent, "work")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return parent, dir
}

// onlyWork fails the test when parent holds anything but the workspace.
func onlyWork(t *testing.T, parent string) {
	t.Helper()
	ents, _ := os.ReadDir(parent)
	for _, e := range ents {
		if e.Name() != "work" {
			t.Errorf("CONTAINMENT FAILURE: %s appeared beside the workspace", e.Name())
		}
	}
}

func TestPutArchiveUnpacks(t *testing.T) {
	_, dir := workspace(t)
	data := tarOf(t,
		entry{Header: tar.Header{Typeflag: tar.TypeDir, Name: "d/", Mode: 0o755}},
		file("d/a.txt", "alpha", 0o644),
		file("d/e/b.sh", "#!/bin/sh\n", 0o4755), // setuid is dropped
		file("top.txt", "top", 0o600),
	)
	if err := hostdir.PutArchive(context.Background(), dir, bytes.NewReader(data), os.Getuid(), os.Getgid()); err != nil {
		t.Fatal(err)
	}
	for p, want := range map[string]string{"d/a.txt": "alpha", "d/e/b.sh": "#!/bin/sh\n", "top.txt": "top"} {
		got, err := os.ReadFile(filepath.Join(dir, p))
		if err != nil || string(got) != want {
			t.Errorf("%s: %q, %v; want %q", p, got, err, want)
		}
	}
	fi, err := os.Stat(filepath.Join(dir, "d/e/b.sh"))
	if err != nil || fi.Mode() != 0o755 {
		t.Errorf("d/e/b.sh: mode %v, %v; want 0755 (no setuid)", fi.Mode(), err)
	}
}

// Every hostile entry is refused with ErrInvalid, and nothing lands outside
// the workspace or at the target of a link.
func TestPutArchiveRefusesHostileEntries(t *testing.T) {
	outside := filepath.Join(t.TempDir(), "outside.txt")
	if err := os.WriteFile(outside, []byte("host"), 0o644); err != nil {
		t.Fatal(err)
	}
	absTarget := filepath.Join(t.TempDir(), "abs.txt")
	cases := []struct {
		name  string
		setup func(t *testing.T, dir string)
		tar   func(t *testing.T) []byte
	}{
		{"dot-dot", nil, func(t *testing.T) []byte { return tarOf(t, file("../escape.txt", "x", 0o644)) }},
		{"deep dot-dot", nil, func(t *testing.T) []byte { return tarOf(t, file("a/../../escape.txt", "x", 0o644)) }},
		{"absolute", nil, func(t *testing.T) []byte { return tarOf(t, file(absTarget, "x", 0o644)) }},
		{"symlink", nil, func(t *testing.T) []byte {
			return tarOf(t, entry{Header: tar.Header{Typeflag: tar.TypeSymlink, Name: "link", Linkname: outside}})
		}},
		{"hard link out", nil, func(t *testing.T) []byte {
			return tarOf(t, entry{Header: tar.Header{Typeflag: tar.TypeLink, Name: "hl", Linkname: outside}})
		}},
		{"hard link up", nil, func(t *testing.T) []byte {
			return tarOf(t, entry{Header: tar.Header{Typeflag: tar.TypeLink, Name: "hl", Linkname: "../outside.txt"}})
		}},
		{"character device", nil, func(t *testing.T) []byte {
			return tarOf(t, entry{Header: tar.Header{Typeflag: tar.TypeChar, Name: "null", Devmajor: 1, Devminor: 3, Mode: 0o666}})
		}},
		{"block device", nil, func(t *testing.T) []byte {
			return tarOf(t, entry{Header: tar.Header{Typeflag: tar.TypeBlock, Name: "sda", Devmajor: 8, Mode: 0o666}})
		}},
		{"fifo", nil, func(t *testing.T) []byte {
			return tarOf(t, entry{Header: tar.Header{Typeflag: tar.TypeFifo, Name: "fifo", Mode: 0o666}})
		}},
		{"huge sparse", nil, func(t *testing.T) []byte { return sparseTar(t, "sparse.bin", 1<<50) }},
		{"through a link the sandbox made", func(t *testing.T, dir string) {
			if err := os.Symlink(filepath.Dir(outside), filepath.Join(dir, "up")); err != nil {
				t.Fatal(err)
			}
		}, func(t *testing.T) []byte { return tarOf(t, file("up/outside.txt", "overwritten", 0o644)) }},
		{"onto a link the sandbox made", func(t *testing.T, dir string) {
			if err := os.Symlink(outside, filepath.Join(dir, "f")); err != nil {
				t.Fatal(err)
			}
		}, func(t *testing.T) []byte { return tarOf(t, file("f", "overwritten", 0o644)) }},
		{"onto a FIFO the sandbox made", func(t *testing.T, dir string) {
			if err := unix.Mkfifo(filepath.Join(dir, "f"), 0o666); err != nil {
				t.Fatal(err)
			}
		}, func(t *testing.T) []byte { return tarOf(t, file("f", "x", 0o644)) }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			parent, dir := workspace(t)
			if tc.setup != nil {
				tc.setup(t, dir)
			}
			done := make(chan error, 1)
			go func() {
				done <- hostdir.PutArchive(context.Background(), dir, bytes.NewReader(tc.tar(t)), os.Getuid(), os.Getgid())
			}()
			var err error
			select {
			case err = <-done:
			case <-time.After(10 * time.Second):
				t.Fatal("PutArchive did not return within 10 s")
			}
			if err == nil {
				t.Fatal("accepted")
			}
			t.Logf("refused: %v", err)
			onlyWork(t, parent)
			if data, _ := os.ReadFile(outside); string(data) != "host" {
				t.Errorf("CONTAINMENT FAILURE: the host file now holds %q", data)
			}
			if _, err := os.Lstat(absTarget); err == nil {
				t.Error("CONTAINMENT FAILURE: an absolute entry was written on the host")
			}
			var size int64
			filepath.Walk(dir, func(_ string, fi os.FileInfo, _ error) error {
				if fi != nil && fi.Mode().IsRegular() {
					size += fi.Size()
				}
				return nil
			})
			if size > 1<<20 {
				t.Errorf("%s were written into the workspace", sandbox.FormatBytes(size))
			}
		})
	}
}

// Entries that are malformed (rather than unreadable) are refused as
// invalid, so that callers can tell a bad archive from a failing host.
func TestPutArchiveRefusalIsInvalid(t *testing.T) {
	_, dir := workspace(t)
	for _, data := range [][]byte{
		tarOf(t, file("../x", "x", 0o644)),
		tarOf(t, entry{Header: tar.Header{Typeflag: tar.TypeSymlink, Name: "l", Linkname: "/etc/passwd"}}),
		sparseTar(t, "s", 1<<50),
	} {
		err := hostdir.PutArchive(context.Background(), dir, bytes.NewReader(data), os.Getuid(), os.Getgid())
		if !errors.Is(err, sandbox.ErrInvalid) {
			t.Errorf("error %v does not wrap ErrInvalid", err)
		}
	}
}

// What is unpacked, content and headers, is bounded by the workspace's
// size: more bytes than it holds, or endless empty entries, are refused.
func TestPutArchiveBoundedByWorkspaceSize(t *testing.T) {
	const size = 1 << 20
	big := strings.Repeat("x", 400<<10)
	var empties []entry
	for i := range 3000 {
		empties = append(empties, file(fmt.Sprintf("e%04d", i), "", 0o644))
	}
	for name, data := range map[string][]byte{
		"content": tarOf(t, file("a", big, 0o644), file("b", big, 0o644), file("c", big, 0o644)),
		"entries": tarOf(t, empties...),
		"sparse":  sparseTar(t, "s", 2*size),
	} {
		t.Run(name, func(t *testing.T) {
			dir := mountTmpfs(t, size)
			err := hostdir.PutArchive(context.Background(), dir, bytes.NewReader(data), os.Getuid(), os.Getgid())
			if !errors.Is(err, sandbox.ErrInvalid) {
				t.Fatalf("want a refusal past the workspace's size, got %v", err)
			}
			t.Logf("refused: %v", err)
		})
	}
}

func TestPutArchiveStopsWithContext(t *testing.T) {
	_, dir := workspace(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := hostdir.PutArchive(ctx, dir, bytes.NewReader(tarOf(t, file("a", "a", 0o644))), os.Getuid(), os.Getgid())
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("error %v, want context.Canceled", err)
	}
	if _, err := os.Lstat(filepath.Join(dir, "a")); err == nil {
		t.Error("a file was unpacked after the context ended")
	}
}

// readTar reads a whole tar stream into its headers and contents.
func readTar(t *testing.T, r io.Reader) ([]*tar.Header, map[string]string, error) {
	t.Helper()
	tr := tar.NewReader(r)
	var hdrs []*tar.Header
	contents := map[string]string{}
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return hdrs, contents, nil
		}
		if err != nil {
			return hdrs, contents, err
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			return hdrs, contents, err
		}
		hdrs = append(hdrs, hdr)
		contents[hdr.Name] = string(b)
	}
}

// GetArchive packs regular files and directories only, a hard-linked file
// once, and follows no link, whatever the workspace holds.
func TestGetArchivePacksFilesAndDirectoriesOnly(t *testing.T) {
	_, dir := workspace(t)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(filepath.Join(dir, "d/e"), 0o755))
	must(os.WriteFile(filepath.Join(dir, "d/a.txt"), []byte("alpha"), 0o640))
	must(os.WriteFile(filepath.Join(dir, "d/e/b.txt"), []byte("beta"), 0o644))
	must(os.Link(filepath.Join(dir, "d/a.txt"), filepath.Join(dir, "z-second-name")))
	must(os.Symlink("/etc/passwd", filepath.Join(dir, "passwd")))
	must(os.Symlink("/etc", filepath.Join(dir, "etc")))
	must(os.Symlink("d/a.txt", filepath.Join(dir, "alias"))) // within the workspace: still not followed
	must(os.Symlink("d", filepath.Join(dir, "dir-alias")))
	must(unix.Mkfifo(filepath.Join(dir, "fifo"), 0o666))

	rc, err := hostdir.GetArchive(context.Background(), dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	hdrs, contents, err := readTar(t, rc)
	rc.Close()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, h := range hdrs {
		desc := fmt.Sprintf("%c %s %o", h.Typeflag, h.Name, h.Mode)
		if h.Typeflag == tar.TypeLink {
			desc += " -> " + h.Linkname
		}
		got = append(got, desc)
	}
	want := []string{"5 d/ 755", "0 d/a.txt 640", "5 d/e/ 755", "0 d/e/b.txt 644", "1 z-second-name 640 -> d/a.txt"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("entries:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if contents["d/a.txt"] != "alpha" || contents["d/e/b.txt"] != "beta" || contents["z-second-name"] != "" {
		t.Errorf("contents %q", contents)
	}

	// Named paths: a link to a directory is not walked through.
	rc, err = hostdir.GetArchive(context.Background(), dir, []string{"etc", "dir-alias", "alias", "d/e", "d/e/b.txt"})
	if err != nil {
		t.Fatal(err)
	}
	hdrs, _, err = readTar(t, rc)
	rc.Close()
	if err != nil {
		t.Fatal(err)
	}
	got = got[:0]
	for _, h := range hdrs {
		got = append(got, h.Name)
	}
	if strings.Join(got, " ") != "d/e/ d/e/b.txt" {
		t.Errorf("packing etc (a link to /etc), d/e and d/e/b.txt gave %q; want d/e/ and d/e/b.txt once", got)
	}

	for _, bad := range []string{"../", "/etc", "missing", "d/../../x"} {
		if rc, err := hostdir.GetArchive(context.Background(), dir, []string{bad}); err == nil {
			rc.Close()
			t.Errorf("GetArchive(%q) was accepted", bad)
		}
	}
}

// Content that comes out is bounded by the workspace's size: a sparse file
// larger than it ends the stream with an error instead of streaming zeros.
func TestGetArchiveBoundedByWorkspaceSize(t *testing.T) {
	const size = 1 << 20
	dir := mountTmpfs(t, size)
	f, err := os.Create(filepath.Join(dir, "sparse.bin"))
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("head")
	if err := f.Truncate(1 << 40); err != nil {
		t.Fatal(err)
	}
	f.Close()
	rc, err := hostdir.GetArchive(context.Background(), dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	n, err := io.Copy(io.Discard, rc)
	if err == nil {
		t.Fatal("the stream of a workspace holding a sparse TiB ended without an error")
	}
	if !errors.Is(err, sandbox.ErrTooLarge) {
		t.Errorf("the stream ended with %v, want sandbox.ErrTooLarge (what a download answers 413 for)", err)
	}
	if n > 2*size {
		t.Errorf("%s came out of a workspace of %s", sandbox.FormatBytes(n), sandbox.FormatBytes(size))
	}
	t.Logf("%v after %d bytes", err, n)
}

// Closing the reader stops the packing, and a cancelled context ends it.
func TestGetArchiveStops(t *testing.T) {
	_, dir := workspace(t)
	for i := range 50 {
		os.WriteFile(filepath.Join(dir, fmt.Sprint(i)), bytes.Repeat([]byte{'x'}, 64<<10), 0o644)
	}
	ctx, cancel := context.WithCancel(context.Background())
	rc, err := hostdir.GetArchive(ctx, dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	io.CopyN(io.Discard, rc, 100<<10)
	cancel()
	if _, err := io.Copy(io.Discard, rc); !errors.Is(err, context.Canceled) {
		t.Errorf("after cancel: %v, want context.Canceled", err)
	}
	rc.Close()
}
