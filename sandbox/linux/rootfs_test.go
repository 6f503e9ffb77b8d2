package linux_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/coderun/coderun/sandbox"
	"github.com/coderun/coderun/sandbox/linux"
	"golang.org/x/sys/unix"
)

// With Options.RootFS the sandbox takes /usr and /etc from another root
// (an unpacked image) instead of the host's. The test builds a small one:
// the host's /usr bound in, merged-/usr links, and an /etc of its own.
func TestAlternativeRoot(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the linux runtime needs root")
	}
	if err := linux.Probe().Require(nil); err != nil {
		t.Skip(err)
	}
	root := t.TempDir()
	if err := os.Chmod(root, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"usr", "etc"} {
		if err := os.Mkdir(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, l := range []string{"bin", "lib", "lib64", "sbin"} {
		if err := os.Symlink("usr/"+l, filepath.Join(root, l)); err != nil {
			t.Fatal(err)
		}
	}
	if err := unix.Mount("/usr", filepath.Join(root, "usr"), "", unix.MS_BIND|unix.MS_RDONLY, ""); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Unmount(filepath.Join(root, "usr"), unix.MNT_DETACH) })
	os.WriteFile(filepath.Join(root, "etc", "os-release"), []byte("NAME=coderun-test-image\n"), 0o644)
	os.WriteFile(filepath.Join(root, "etc", "ld.so.cache"), mustRead(t, "/etc/ld.so.cache"), 0o644)
	// The parents of the image must be traversable by the sandbox's ids.
	for d := filepath.Dir(root); d != "/"; d = filepath.Dir(d) {
		if fi, err := os.Stat(d); err == nil && fi.Mode().Perm()&0o001 == 0 {
			os.Chmod(d, fi.Mode().Perm()|0o111)
		}
	}

	rt, err := linux.New(linux.Options{RootFS: root})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	res, err := rt.Run(context.Background(), sandbox.Request{Language: sandbox.Bash, Code: "cat /etc/os-release; ls /etc"})
	if err != nil {
		t.Fatal(err)
	}
	if !res.OK() || !strings.Contains(res.Stdout, "NAME=coderun-test-image") {
		t.Fatalf("%s\nstdout: %s\nstderr: %s", res.Summary(), res.Stdout, res.Stderr)
	}
	if strings.Contains(res.Stdout, "fonts") || strings.Contains(res.Stdout, "alternatives") {
		t.Errorf("host /etc entries leaked into the image's: %s", res.Stdout)
	}
}

func mustRead(t *testing.T, p string) []byte {
	t.Helper()
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return data
}
