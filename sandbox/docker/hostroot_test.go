package docker

import (
	"archive/tar"
	"bytes"
	"context"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// fakeDebian makes a small dpkg-managed root: a merged /usr, packages with
// alternatives, a virtual package, an alternative chosen by
// update-alternatives, and a compiled Python file.
func fakeDebian(t *testing.T) string {
	root := t.TempDir()
	write := func(p, data string) {
		t.Helper()
		full := filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	link := func(p, target string) {
		t.Helper()
		full := filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(target, full); err != nil {
			t.Fatal(err)
		}
	}
	write("var/lib/dpkg/arch-native", "amd64\n")
	write("var/lib/dpkg/status", `Package: app
Status: install ok installed
Architecture: amd64
Depends: libc6 (>= 2.34), libfast | libslow, mail-transport-agent, notinstalled | libslow, buildtool

Package: libc6
Status: install ok installed
Architecture: amd64

Package: libslow
Status: install ok installed
Architecture: all
Pre-Depends: python3:any (>= 3.11~)

Package: python3
Status: install ok installed
Architecture: amd64

Package: postfix
Status: install ok installed
Architecture: amd64
Provides: mail-transport-agent

Package: buildtool
Status: install ok installed
Architecture: amd64
Depends: hugething

Package: hugething
Status: install ok installed
Architecture: amd64

Package: removed
Status: deinstall ok config-files
Architecture: amd64

Package: libc6
Status: install ok installed
Architecture: i386
`)
	write("var/lib/dpkg/info/app:amd64.list", "/.\n/bin\n/bin/app\n/usr/lib/app/mod.py\n/usr/share/doc/app/excluded\n")
	write("var/lib/dpkg/info/libc6:amd64.list", "/.\n/usr/lib/x86_64-linux-gnu/libc.so.6\n")
	write("var/lib/dpkg/info/libslow.list", "/usr/lib/libslow.so.1\n/usr/lib/blas/libblas.so.3\n")
	write("var/lib/dpkg/info/python3:amd64.list", "/usr/bin/python3\n")
	write("var/lib/dpkg/info/postfix:amd64.list", "/usr/sbin/sendmail\n")
	write("var/lib/dpkg/info/buildtool:amd64.list", "/usr/bin/buildtool\n")
	write("var/lib/dpkg/info/hugething:amd64.list", "/usr/lib/huge\n")
	for _, f := range []string{"usr/bin/app", "usr/lib/app/mod.py", "usr/lib/app/__pycache__/mod.cpython-311.pyc",
		"usr/lib/app/__pycache__/other.cpython-311.pyc", "usr/lib/x86_64-linux-gnu/libc.so.6", "usr/lib/libslow.so.1",
		"usr/lib/blas/libblas.so.3", "usr/bin/python3", "usr/sbin/sendmail", "usr/bin/buildtool", "usr/lib/huge"} {
		write(f, "x")
	}
	link("bin", "usr/bin")
	// The host chose a BLAS of a package the image leaves out.
	write("usr/lib/openblas/libblas.so.3", "x")
	link("etc/alternatives/libblas.so.3", "/usr/lib/openblas/libblas.so.3")
	link("usr/lib/libblas.so.3", "/etc/alternatives/libblas.so.3")
	link("etc/alternatives/editor", "/usr/bin/nano") // not in the image
	link("usr/bin/editor", "/etc/alternatives/editor")
	write("var/lib/dpkg/alternatives/libblas.so.3", "auto\n/usr/lib/libblas.so.3\n\n/usr/lib/blas/libblas.so.3\n10\n/usr/lib/openblas/libblas.so.3\n100\n\n")
	write("var/lib/dpkg/alternatives/editor", "auto\n/usr/bin/editor\n\n/usr/bin/nano\n40\n\n")
	return root
}

func TestHostRoot(t *testing.T) {
	root := fakeDebian(t)
	hr, err := NewHostRoot(root, []string{"app"}, map[string]string{"buildtool": "not needed"})
	if err != nil {
		t.Fatal(err)
	}
	// libfast is not installed: libslow stands in; postfix provides the
	// mail transport; python3:any is python3; buildtool is excluded, and
	// hugething with it; removed packages and other architectures are not
	// installed packages.
	if want := []string{"app", "libc6", "libslow", "postfix", "python3"}; !slices.Equal(hr.Packages, want) {
		t.Errorf("packages %q, want %q", hr.Packages, want)
	}
	want := []string{
		"/bin", // the merged /usr's link, as it is
		"/etc", "/etc/alternatives",
		"/usr", "/usr/bin", "/usr/bin/app", "/usr/bin/python3", // /bin/app where /bin leads
		"/usr/lib", "/usr/lib/app", "/usr/lib/app/__pycache__", "/usr/lib/app/__pycache__/mod.cpython-311.pyc", "/usr/lib/app/mod.py",
		"/usr/lib/blas", "/usr/lib/blas/libblas.so.3", "/usr/lib/libslow.so.1",
		"/usr/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu/libc.so.6",
		"/usr/sbin", "/usr/sbin/sendmail",
	}
	if !slices.Equal(hr.Paths, want) {
		t.Errorf("paths:\n%s\nwant:\n%s", strings.Join(hr.Paths, "\n"), strings.Join(want, "\n"))
	}
	// The alternative's link leads to the BLAS the image holds; the
	// editor's choice is not in the image, so neither is its link.
	wantLinks := map[string]string{"/usr/lib/libblas.so.3": "/etc/alternatives/libblas.so.3", "/etc/alternatives/libblas.so.3": "/usr/lib/blas/libblas.so.3"}
	if !maps.Equal(hr.Links, wantLinks) {
		t.Errorf("links %v, want %v", hr.Links, wantLinks)
	}

	// The tar stream the image is imported from: the paths, the links, the
	// image's own users, and the directories the runtime mounts on.
	var buf bytes.Buffer
	if err := hr.pack(context.Background(), &buf); err != nil {
		t.Fatal(err)
	}
	entries := map[string]*tar.Header{}
	tr := tar.NewReader(&buf)
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if entries[hdr.Name] != nil {
			t.Errorf("%s is in the stream twice", hdr.Name)
		}
		entries[hdr.Name] = hdr
	}
	for _, name := range []string{"usr/bin/app", "bin", "usr/lib/app/", "etc/passwd", "etc/group", "work/", ".coderun/", "tmp/", "proc/"} {
		if entries[name] == nil {
			t.Errorf("%s is not in the image", name)
		}
	}
	if h := entries["usr/lib/libblas.so.3"]; h == nil || h.Typeflag != tar.TypeSymlink || h.Linkname != "/etc/alternatives/libblas.so.3" {
		t.Errorf("usr/lib/libblas.so.3: %+v", h)
	}
	if h := entries["bin"]; h == nil || h.Typeflag != tar.TypeSymlink || h.Linkname != "usr/bin" {
		t.Errorf("bin: %+v", h)
	}

	if _, err := NewHostRoot(root, []string{"app", "nothere"}, nil); err == nil || !strings.Contains(err.Error(), "nothere") {
		t.Errorf("a package that is not installed: err %v, want one naming it", err)
	}
	if _, err := NewHostRoot(t.TempDir(), []string{"app"}, nil); err == nil || !strings.Contains(err.Error(), "dpkg") {
		t.Errorf("a host without dpkg: err %v, want one saying so", err)
	}
}
