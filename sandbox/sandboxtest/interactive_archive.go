//go:build linux

package sandboxtest

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/coderun/coderun/sandbox"
)

// archive: a long-lived sandbox that implements sandbox.Archiver takes a
// tar stream in and gives one out, regular files and directories only;
// every hostile entry is refused with sandbox.ErrInvalid and changes
// nothing outside the workspace, nor anything a link in it points at; and
// what goes in or comes out is bounded by the workspace's size.
func (l *longLived) archive(t *testing.T) {
	lim := liveLimits
	lim.WorkspaceBytes = 4 << 20
	sb := l.newSandbox(t, sandbox.Spec{Limits: lim})
	ar, ok := sb.(sandbox.Archiver)
	if !ok {
		t.Skip("the runtime's sandboxes do not implement sandbox.Archiver")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	put := func(entries ...TarEntry) error {
		t.Helper()
		data, err := Tar(entries...)
		if err != nil {
			t.Fatal(err)
		}
		return ar.PutArchive(ctx, bytes.NewReader(data))
	}

	// In: a tree of files the program then finds, with their modes, and
	// may change.
	err := put(TarEntry{Header: tar.Header{Typeflag: tar.TypeDir, Name: "d/", Mode: 0o755}},
		TarFile("d/a.txt", "alpha\n", 0o644), TarFile("run.sh", "echo ran\n", 0o755))
	if err != nil {
		t.Fatalf("PutArchive: %v", err)
	}
	lp := start(t, sb, shProg(`cat d/a.txt && ./run.sh && echo more >> d/a.txt && echo out > out.txt &&
ln d/a.txt second-name && ln -s /etc/passwd pw && ln -s /etc etc && ln -s d/a.txt alias && ln -s d dir-alias && mkfifo ff && truncate -s 3M s1.bin s2.bin s3.bin && echo ok`))
	for _, want := range []string{"alpha", "ran", "ok"} {
		lp.expect(want)
	}
	if res := lp.wait(); !res.OK() {
		t.Fatalf("%s\n%s", liveDescribe(res), lp.stderr)
	}

	// Out: regular files and directories, a second name as a link, no
	// link followed; three sparse files of 3 MiB claim more than the
	// workspace holds.
	rc, err := ar.GetArchive(ctx, []string{"d", "out.txt", "second-name", "pw", "etc", "alias", "dir-alias", "ff", "run.sh"})
	if err != nil {
		t.Fatalf("GetArchive: %v", err)
	}
	got, contents, err := readTarStream(rc)
	rc.Close()
	if err != nil {
		t.Fatalf("reading the archive: %v", err)
	}
	want := "d/ dir\nd/a.txt file\nout.txt file\nrun.sh file\nsecond-name link to d/a.txt"
	if strings.Join(got, "\n") != want {
		t.Errorf("GetArchive packed:\n%s\nwant:\n%s", strings.Join(got, "\n"), want)
	}
	if contents["d/a.txt"] != "alpha\nmore\n" || contents["out.txt"] != "out\n" {
		t.Errorf("contents %q", contents)
	}
	for name, c := range contents {
		if strings.Contains(c, "root:") {
			t.Errorf("CONTAINMENT FAILURE: %s came out holding the host's /etc/passwd", name)
		}
	}
	rc, err = ar.GetArchive(ctx, nil)
	if err != nil {
		t.Fatalf("GetArchive(all): %v", err)
	}
	n, err := io.Copy(io.Discard, rc)
	rc.Close()
	if err == nil || n > 2*lim.WorkspaceBytes {
		t.Errorf("the whole workspace, 9 MiB of sparse files in it, gave %s and error %v; want an error within the workspace's size",
			sandbox.FormatBytes(n), err)
	}
	for _, bad := range []string{"../", "/etc/passwd", "missing"} {
		if rc, err := ar.GetArchive(ctx, []string{bad}); err == nil {
			rc.Close()
			t.Errorf("GetArchive(%q) was accepted", bad)
		}
	}

	// Hostile archives.
	passwd := hashFile("/etc/passwd")
	evil := "coderun-evil-" + randomHex(6)
	hostAbs := filepath.Join(t.TempDir(), evil)
	big := strings.Repeat("x", 2<<20)
	for _, tc := range []struct {
		name    string
		entries []TarEntry
		raw     []byte
		inWay   bool // refused for what the workspace holds, not for what the archive is
	}{
		{name: "dot-dot", entries: []TarEntry{TarFile("../"+evil, "x", 0o644)}},
		{name: "deep dot-dot", entries: []TarEntry{TarFile("d/../../../"+evil, "x", 0o644)}},
		{name: "absolute", entries: []TarEntry{TarFile(hostAbs, "x", 0o644)}},
		{name: "symlink", entries: []TarEntry{{Header: tar.Header{Typeflag: tar.TypeSymlink, Name: evil, Linkname: "/etc/passwd"}}}},
		{name: "hard link out", entries: []TarEntry{{Header: tar.Header{Typeflag: tar.TypeLink, Name: evil, Linkname: "/etc/passwd"}}}},
		{name: "hard link up", entries: []TarEntry{{Header: tar.Header{Typeflag: tar.TypeLink, Name: evil, Linkname: "../../etc/passwd"}}}},
		{name: "device", entries: []TarEntry{{Header: tar.Header{Typeflag: tar.TypeChar, Name: evil, Devmajor: 1, Devminor: 3, Mode: 0o666}}}},
		{name: "fifo", entries: []TarEntry{{Header: tar.Header{Typeflag: tar.TypeFifo, Name: evil, Mode: 0o666}}}},
		{name: "through a link to /etc", entries: []TarEntry{TarFile("etc/"+evil, "x", 0o644)}, inWay: true},
		{name: "onto a link to /etc/passwd", entries: []TarEntry{TarFile("pw", "owned::0:0::/:/bin/sh\n", 0o644)}, inWay: true},
		{name: "more than the workspace", entries: []TarEntry{TarFile("b1", big, 0o644), TarFile("b2", big, 0o644), TarFile("b3", big, 0o644)}},
		{name: "huge sparse", raw: SparseTar(evil, 1<<50)},
	} {
		data := tc.raw
		if data == nil {
			if data, err = Tar(tc.entries...); err != nil {
				t.Fatal(err)
			}
		}
		done := make(chan error, 1)
		go func() { done <- ar.PutArchive(ctx, bytes.NewReader(data)) }()
		select {
		case err = <-done:
		case <-time.After(30 * time.Second):
			t.Fatalf("%s: PutArchive did not return within 30 s", tc.name)
		}
		switch {
		case err == nil:
			t.Errorf("%s: accepted", tc.name)
		case !tc.inWay && !errors.Is(err, sandbox.ErrInvalid):
			t.Errorf("%s: want a refusal wrapping ErrInvalid, got %v", tc.name, err)
		}
		for _, p := range []string{filepath.Join("/etc", evil), hostAbs, filepath.Join(os.TempDir(), evil), filepath.Join("/", evil)} {
			if _, err := os.Lstat(p); err == nil {
				os.Remove(p)
				t.Errorf("CONTAINMENT FAILURE: %s: the archive made %s on the host", tc.name, p)
			}
		}
		if hashFile("/etc/passwd") != passwd {
			t.Fatalf("CONTAINMENT FAILURE: %s: the archive changed the host's /etc/passwd", tc.name)
		}
	}
	// The sandbox still works, and none of it is in its view.
	lp = start(t, sb, shProg(fmt.Sprintf(`ls -A /work | tr '\n' ' '; echo; ls -d /%s /etc/%s /tmp/%s 2>/dev/null; echo end`, evil, evil, evil)))
	listing := lp.line()
	if strings.Contains(listing, evil) {
		t.Errorf("CONTAINMENT FAILURE: the workspace holds a hostile entry: %s", listing)
	}
	if line := lp.line(); strings.Contains(line, evil) {
		t.Errorf("CONTAINMENT FAILURE: a hostile entry shows in the sandbox: %s", line)
	}
	if res := lp.wait(); !res.OK() {
		t.Errorf("after the hostile archives: %s\n%s", liveDescribe(res), lp.stderr)
	}
}

// readTarStream reads a tar stream: one line per entry ("name kind", a
// hard link with its target) and each regular file's content.
func readTarStream(r io.Reader) ([]string, map[string]string, error) {
	tr := tar.NewReader(r)
	var got []string
	contents := map[string]string{}
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return got, contents, nil
		}
		if err != nil {
			return got, contents, err
		}
		switch hdr.Typeflag {
		case tar.TypeDir:
			got = append(got, hdr.Name+" dir")
		case tar.TypeReg:
			b, err := io.ReadAll(tr)
			if err != nil {
				return got, contents, err
			}
			contents[hdr.Name] = string(b)
			got = append(got, hdr.Name+" file")
		case tar.TypeLink:
			got = append(got, hdr.Name+" link to "+hdr.Linkname)
		default:
			got = append(got, fmt.Sprintf("%s type %q", hdr.Name, hdr.Typeflag))
		}
	}
}

// hashFile is the hex sha256 of a file's content, or "" when unreadable.
func hashFile(p string) string {
	data, err := os.ReadFile(p)
	if err != nil {
		return ""
	}
	return fmt.Sprintf("%x", sha256.Sum256(data))
}
