package main

import (
	"bytes"
	"context"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Files crossing between the host and a sandbox through exec's --file and
// --out, tried as an attacker (or a model choosing paths) would.

// coderunWithin runs the CLI as coderun does, but kills it after d: a
// command that hangs fails the test instead of stalling it.
func coderunWithin(t *testing.T, d time.Duration, args ...string) (cliResult, time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	start := time.Now()
	err := cmd.Run()
	took := time.Since(start)
	if ctx.Err() != nil {
		t.Fatalf("coderun %s did not end within %v\nstderr: %s", strings.Join(args, " "), d, errb.String())
	}
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return cliResult{out.String(), errb.String(), code}, took
}

// walkHost lists what is under dir on the host: every entry's mode, and
// the bytes allocated to all regular files together (st_blocks, so holes
// cost nothing and a file with several names counts once).
func walkHost(t *testing.T, dir string) (modes map[string]fs.FileMode, allocated int64) {
	t.Helper()
	modes = map[string]fs.FileMode{}
	seen := map[uint64]bool{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == dir {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		modes[rel] = fi.Mode()
		if st, ok := fi.Sys().(*syscall.Stat_t); ok && fi.Mode().IsRegular() && !seen[st.Ino] {
			seen[st.Ino] = true
			allocated += st.Blocks * 512
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return modes, allocated
}

// A program's symbolic links to host files never come back to the host as
// links (which a later read or --file would follow to the host's file),
// nor as the content they point at: they are listed as skipped.
func TestExecOutBringsBackNoLinks(t *testing.T) {
	needSandbox(t)
	t.Parallel()
	out := filepath.Join(t.TempDir(), "out")
	prog := `import os
os.makedirs("results")
open("results/mean.txt", "w").write("137.5")
os.symlink("/etc/passwd", "passwd")
os.symlink("../../../../../../etc/passwd", "results/relative")
os.symlink("mean.txt", "results/inner")
os.mkfifo("fifo")
print("ran")
`
	r, _ := coderunWithin(t, time.Minute, "exec", "-c", prog, "--out", out)
	if r.code != 0 || r.stdout != "ran\n" {
		t.Fatalf("exit %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
	modes, _ := walkHost(t, out)
	for p, m := range modes {
		if !m.IsRegular() && !m.IsDir() {
			t.Errorf("--out made %s on the host, a %v; only regular files and directories may come back", p, m.Type())
		}
	}
	passwd, _ := os.ReadFile("/etc/passwd")
	for p, m := range modes {
		if data, err := os.ReadFile(filepath.Join(out, p)); err == nil && m.IsRegular() && bytes.Equal(data, passwd) {
			t.Errorf("%s on the host holds the host's /etc/passwd", p)
		}
	}
	if got, err := os.ReadFile(filepath.Join(out, "results", "mean.txt")); err != nil || string(got) != "137.5" {
		t.Errorf("results/mean.txt: %q, %v", got, err)
	}
	for _, p := range []string{"passwd", "results/relative", "results/inner", "fifo"} {
		if !strings.Contains(r.stderr, "skipped "+p+":") {
			t.Errorf("stderr does not list %s as skipped:\n%s", p, r.stderr)
		}
	}
}

// --file does not follow a link out of the directory that holds it (a
// link an earlier run's --out left, or one a model named), so the host's
// /etc/passwd never reaches a sandbox that way; a link within its
// directory is an ordinary alias and works.
func TestExecFileRefusesLinksOut(t *testing.T) {
	needSandbox(t)
	t.Parallel()
	dir := t.TempDir()
	for name, target := range map[string]string{"passwd": "/etc/passwd", "up": "../../../../../../etc/passwd", "alias.csv": "data.csv"} {
		if err := os.Symlink(target, filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "data.csv"), []byte("x\n1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	read := `import os; print(open(sorted(os.listdir("."))[0]).read())`
	for _, name := range []string{"passwd", "up"} {
		r, _ := coderunWithin(t, time.Minute, "exec", "-c", read, "--file", filepath.Join(dir, name))
		if strings.Contains(r.stdout, "root:") {
			t.Errorf("--file %s uploaded the host's /etc/passwd", name)
		}
		if r.code != exitUsage || !strings.Contains(r.stderr, "symbolic link") || !strings.Contains(r.stderr, "name that file") {
			t.Errorf("--file %s: exit %d, stderr %q; want %d and the link explained", name, r.code, r.stderr, exitUsage)
		}
	}
	r, _ := coderunWithin(t, time.Minute, "exec", "-c", read, "--file", filepath.Join(dir, "alias.csv"))
	if r.code != 0 || r.stdout != "x\n1\n\n" {
		t.Errorf("--file of a link within its directory: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
}

// --file of a FIFO or a device fails at once with a clear message: it
// neither hangs waiting for a writer nor reads /dev/zero until memory runs
// out.
func TestExecFileRefusesSpecialFiles(t *testing.T) {
	needSandbox(t)
	t.Parallel()
	fifo := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ local, want string }{
		{fifo, "named pipe"},
		{"/dev/zero", "character device"},
		{"/dev/stdin", "symbolic link"},
		{t.TempDir(), "directory"},
	} {
		r, took := coderunWithin(t, 20*time.Second, "exec", "-c", "print('ran')", "--file", c.local+":data")
		if r.code != exitUsage || !strings.Contains(r.stderr, c.want) || strings.Contains(r.stdout, "ran") {
			t.Errorf("--file %s: exit %d, stdout %q, stderr %q; want %d, %q and nothing run", c.local, r.code, r.stdout, r.stderr, exitUsage, c.want)
		}
		if took > 5*time.Second {
			t.Errorf("--file %s took %v to be refused", c.local, took)
		}
	}
}

// A 16 MiB workspace cannot fill the host's disk through --out: a sparse
// file with 100 hard links and two more sparse files claim 1.6 GiB, but
// what lands on the host is at most the workspace's size (holes stay
// holes, links stay links), and the files that did not fit are named in a
// failure.
func TestExecOutAmplificationIsCapped(t *testing.T) {
	needSandbox(t)
	t.Parallel()
	const workspace = 16 << 20
	out := filepath.Join(t.TempDir(), "out")
	prog := `import os
for name in ["a.bin", "b.bin", "c.bin"]:
    with open(name, "wb") as f:
        f.write(b"data" * 1024)
        f.truncate(16 << 20)
for i in range(100):
    os.link("a.bin", "link%03d" % i)
print("ran")
`
	r, _ := coderunWithin(t, 2*time.Minute, "exec", "-c", prog, "--workspace-size", "16MiB", "--out", out)
	modes, allocated := walkHost(t, out)
	if allocated > workspace {
		t.Errorf("--out allocated %d bytes on the host from a workspace of %d", allocated, workspace)
	}
	if r.code == 0 || !strings.Contains(r.stderr, "not saved") || !strings.Contains(r.stderr, "b.bin") {
		t.Errorf("exit %d, stderr %q; want a failure naming the files not saved", r.code, r.stderr)
	}
	var a, link syscall.Stat_t
	if err := syscall.Stat(filepath.Join(out, "a.bin"), &a); err != nil {
		t.Fatalf("a.bin, which fits, was not saved: %v", err)
	}
	if err := syscall.Stat(filepath.Join(out, "link042"), &link); err != nil || link.Ino != a.Ino {
		t.Errorf("link042 is not a hard link to a.bin on the host (%v)", err)
	}
	if a.Size != 16<<20 || a.Blocks*512 > 1<<20 {
		t.Errorf("a.bin on the host: %d bytes, %d allocated; want 16 MiB, sparse", a.Size, a.Blocks*512)
	}
	t.Logf("%d entries, %d bytes allocated on the host", len(modes), allocated)
}

// --out-limit caps what --out saves; a file beyond it is not saved, and
// exec fails although the program succeeded: its files were lost.
func TestExecOutLimit(t *testing.T) {
	needSandbox(t)
	t.Parallel()
	out := filepath.Join(t.TempDir(), "out")
	prog := `open("small.txt", "w").write("s"); open("big.txt", "w").write("b" * 4096)`
	r, _ := coderunWithin(t, time.Minute, "exec", "-c", prog, "--out", out, "--out-limit", "1KiB")
	if r.code == 0 || !strings.Contains(r.stderr, "big.txt") || !strings.Contains(r.stderr, "not saved") {
		t.Errorf("exit %d, stderr %q; want a failure naming big.txt", r.code, r.stderr)
	}
	if _, err := os.Stat(filepath.Join(out, "big.txt")); err == nil {
		t.Error("big.txt was saved past --out-limit")
	}
	if got, err := os.ReadFile(filepath.Join(out, "small.txt")); err != nil || string(got) != "s" {
		t.Errorf("small.txt: %q, %v", got, err)
	}
}

// An --out that cannot receive the files (a file, a path that cannot be
// made, a directory that cannot be written) stops exec before the program
// runs, rather than after its files are lost.
func TestExecOutCheckedBeforeRun(t *testing.T) {
	needSandbox(t)
	t.Parallel()
	file := filepath.Join(t.TempDir(), "data.csv")
	if err := os.WriteFile(file, []byte("x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ out, want string }{
		{file, "not a directory"},
		{filepath.Join(file, "sub"), "not a directory"},
		{"/proc/coderun-out", "cannot make the directory"},
		{"/proc/sys", "cannot write in this directory"},
	} {
		r, _ := coderunWithin(t, time.Minute, "exec", "-c", "print('ran')", "--out", c.out)
		if r.code != exitUsage || strings.Contains(r.stdout, "ran") || !strings.Contains(r.stderr, c.want) {
			t.Errorf("--out %s: exit %d, stdout %q, stderr %q; want %d before running, %q", c.out, r.code, r.stdout, r.stderr, exitUsage, c.want)
		}
	}
	if data, err := os.ReadFile(file); err != nil || string(data) != "x\n" {
		t.Errorf("the file named by --out changed: %q, %v", data, err)
	}
}
