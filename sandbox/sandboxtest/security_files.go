//go:build linux

package sandboxtest

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/coderun/coderun/sandbox"
)

// requireNoHostContent fails the test when a returned file carries the
// content of a host file or a canary secret.
func (h *harness) requireNoHostContent(t *testing.T, res *sandbox.Result) {
	t.Helper()
	passwd, _ := os.ReadFile("/etc/passwd")
	for _, f := range res.Files {
		if len(f.Content) == 0 {
			continue
		}
		if bytes.Contains(f.Content, []byte(h.canary.secret)) {
			t.Errorf("CONTAINMENT FAILURE: returned file %s holds a host canary's secret", f.Path)
		}
		if len(passwd) > 0 && bytes.HasPrefix(passwd, f.Content) && len(f.Content) > 32 {
			t.Errorf("CONTAINMENT FAILURE: returned file %s holds the host's /etc/passwd", f.Path)
		}
	}
}

// symlinkOut models exfiltrating host files through the run's results:
// symbolic links in the workspace to /etc/passwd, /etc/shadow, a host
// canary, the root directory, through /proc/self/root and through a chain,
// an input file replaced by such a link, and a background process that
// keeps swapping a file for a link while the results are collected. Links
// must come back as links (kind symlink, the target as written, no
// content), the link to / must not be descended into, and no returned
// content may come from outside the workspace.
func (h *harness) symlinkOut(t *testing.T) {
	canary := ""
	if len(h.canary.files) > 0 {
		canary = h.canary.files[0]
	}
	req := attackPy(map[string]any{"canary": canary}, `
links = {"passwd-link": "/etc/passwd", "shadow-link": "/etc/shadow", "relative-link": "../../../../../../etc/hostname",
         "root-link": "/", "chain-link": "passwd-link", "dir/proc-link": "/proc/self/root/etc/passwd",
         "canary-link": ARGS["canary"] or "/root", "input.txt": "/etc/passwd", "fd-link": "/proc/1/fd/0"}
os.makedirs("dir")
os.remove("input.txt")
for name, target in links.items():
    os.symlink(target, name)
print("LINKS:" + json.dumps(links), flush=True)
if os.fork() == 0:
    os.setsid()
    while True:
        try:
            with open("race.tmp", "w") as f:
                f.write("benign")
            os.replace("race.tmp", "race.txt")
            os.symlink("/etc/passwd", "race.lnk")
            os.replace("race.lnk", "race.txt")
        except OSError:
            pass
time.sleep(0.2)
done()
`)
	req.Files = []sandbox.File{{Path: "input.txt", Content: []byte("input")}}
	req.FileContents = 1 << 20
	res := h.attack(t, req)
	var links map[string]string
	jsonLine(t, res, "LINKS:", &links)
	got := map[string]sandbox.FileInfo{}
	for _, f := range res.Files {
		got[f.Path] = f
		if strings.HasPrefix(f.Path, "root-link/") {
			t.Errorf("CONTAINMENT FAILURE: the collector descended into a link to /: %s", f.Path)
		}
		if f.Kind == sandbox.KindSymlink && (len(f.Content) > 0 || f.ContentTruncated) {
			t.Errorf("CONTAINMENT FAILURE: symlink %s came back with content (%d bytes)", f.Path, len(f.Content))
		}
	}
	for name, target := range links {
		f, ok := got[name]
		switch {
		case !ok:
			t.Errorf("symlink %s is not reported", name)
		case f.Kind != sandbox.KindSymlink || f.LinkTarget != target:
			t.Errorf("%s: kind %s, target %q; want a symlink to %q", name, f.Kind, f.LinkTarget, target)
		}
	}
	if f := got["input.txt"]; f.Created {
		t.Errorf("input.txt replaced by a link is reported as created; it was an input")
	}
	if f, ok := got["race.txt"]; ok && f.Kind == sandbox.KindFile && string(f.Content) != "benign" {
		t.Errorf("CONTAINMENT FAILURE: race.txt came back with %q", clip(string(f.Content), 80))
	}
	h.requireNoHostContent(t, res)
}

// hardlinkOut models exfiltrating or pinning host files through hard
// links: linking /etc/passwd, the interpreter, a host canary, or a file
// opened through /proc/self/fd into the workspace must fail (the
// workspace is a separate file system: EXDEV), so nothing of the host
// comes back in the results.
func (h *harness) hardlinkOut(t *testing.T) {
	canary := "/nonexistent-canary"
	if len(h.canary.files) > 0 {
		canary = h.canary.files[0]
	}
	req := attackPy(map[string]any{"canary": canary}, `
for i, src in enumerate(["/etc/passwd", "/etc/hostname", os.path.realpath(sys.executable), "/usr/bin/env", ARGS["canary"]]):
    e = must_fail("hard-link %s into the workspace" % src, os.link, src, "/work/link%d" % i)
    print("ERRNO %s %s" % (src, ename(e) if e > 0 else e))
fd = os.open("/etc/passwd", os.O_RDONLY)
must_fail("hard-link /etc/passwd through /proc/self/fd", os.link, "/proc/self/fd/%d" % fd, "/work/fdlink", follow_symlinks=True)
must_fail("hard-link /etc/passwd into /tmp", os.link, "/etc/passwd", "/tmp/pw")
must_fail("hard-link /etc/passwd into /dev/shm", os.link, "/etc/passwd", "/dev/shm/pw")
done()
`)
	req.FileContents = 1 << 20
	res := h.attack(t, req)
	for _, l := range lines(res.Stdout, "ERRNO ") {
		if !strings.HasSuffix(l, " EXDEV") && !strings.HasSuffix(l, " ENOENT") {
			t.Logf("hard link refused with %s (EXDEV expected for a separate file system)", l)
		}
	}
	h.requireNoHostContent(t, res)
}

// specialFilesOut models stalling or exhausting the host while it
// collects results: a FIFO (a blocking open or read would hang the
// collector), a Unix socket, and a sparse file claiming a terabyte. The
// run must return promptly, special files must be reported as such
// without content, and content must stay within Request.FileContents.
func (h *harness) specialFilesOut(t *testing.T) {
	req := attackPy(nil, `
os.mkfifo("fifo")
s = socket.socket(socket.AF_UNIX)
s.bind("/work/sock")
s.listen(1)
with open("sparse.bin", "wb") as f:
    try:
        f.truncate(1 << 40)
        print("sparse terabyte created")
    except OSError as e:
        f.truncate(8 << 20)
        print("sparse terabyte refused:", ename(e.errno))
done()
`)
	req.FileContents = 64 << 10
	start := time.Now()
	res := h.attack(t, req)
	if d := time.Since(start); d > 15*time.Second {
		t.Errorf("collecting special files took %v", d)
	}
	kinds := map[string]sandbox.FileInfo{}
	for _, f := range res.Files {
		kinds[f.Path] = f
	}
	for _, p := range []string{"fifo", "sock"} {
		if f := kinds[p]; f.Kind != sandbox.KindOther || len(f.Content) != 0 {
			t.Errorf("%s: kind %q with %d bytes of content; want kind other, no content", p, f.Kind, len(f.Content))
		}
	}
	if f := kinds["sparse.bin"]; f.Kind != sandbox.KindFile || int64(len(f.Content)) != req.FileContents || !f.ContentTruncated {
		t.Errorf("sparse.bin: kind %q, %d bytes of content, truncated=%v; want %d bytes and the flag", f.Kind, len(f.Content), f.ContentTruncated, req.FileContents)
	}
}

// longNames models breaking the host's file collector with extreme
// names: a 255-byte name (the maximum), a 256-byte one (must fail), and a
// directory chain 100 levels deep whose path exceeds PATH_MAX. The run
// must end normally and the deep file must be reported with its full path
// and content.
func (h *harness) longNames(t *testing.T) {
	req := attackPy(nil, `
open("n" * 255, "w").write("x")
must_fail("create a 256-byte name", open, "m" * 256, "w")
for i in range(100):
    os.mkdir("d" * 50)
    os.chdir("d" * 50)
open("deep.txt", "w").write("deep")
print("DEPTH:" + json.dumps(len(os.getcwd())))
os.chdir("/work")
done()
`)
	req.FileContents = 100
	res := h.attack(t, req)
	if res.Error != "" {
		t.Errorf("collecting long paths reported an error: %s", res.Error)
	}
	deep := strings.Repeat(strings.Repeat("d", 50)+"/", 100) + "deep.txt"
	var long, found bool
	for _, f := range res.Files {
		if f.Path == strings.Repeat("n", 255) {
			long = true
		}
		if f.Path == deep {
			found = string(f.Content) == "deep"
		}
	}
	if !long {
		t.Errorf("the file with a 255-byte name is not reported")
	}
	if !found {
		t.Errorf("the file at depth 100 (path of %d bytes) is not reported with its content (%d files reported)", len(deep), len(res.Files))
	}
}

// filesOutAmplification models filling the host's memory or disk with a
// run's results: in a small workspace, a sparse file as large as the
// workspace allows with 30 hard links to it, and two more sparse files,
// claim 33 times the workspace. Asked for as much content per file as the
// workspace holds (as exec --out asks), the results must carry at most the
// workspace's size in all, the linked file's content once (its other names
// pointing at the first with SameFileAs); saved on the host with
// SaveFiles, they must allocate no more than that either, keep the links
// as links, and name the files that did not fit in an error.
func (h *harness) filesOutAmplification(t *testing.T) {
	const workspace = 8 << 20
	req := attackPy(nil, `
for name in ["a.bin", "b.bin", "c.bin"]:
    with open(name, "wb") as f:
        f.write(b"data" * 1024)
        f.truncate(8 << 20)
for i in range(30):
    os.link("a.bin", "a-link-%02d" % i)
done()
`)
	req.Limits = limits(sandbox.Limits{WorkspaceBytes: workspace})
	req.FileContents = workspace
	res := h.attack(t, req)
	var total int64
	var holders []string // names of a.bin's file that carry its content
	for _, f := range res.Files {
		total += int64(len(f.Content))
		if (f.Path == "a.bin" || strings.HasPrefix(f.Path, "a-link-")) && f.SameFileAs == "" {
			holders = append(holders, f.Path)
		}
	}
	if total > workspace {
		t.Errorf("CONTAINMENT FAILURE: %s of content came back from a workspace of %s", sandbox.FormatBytes(total), sandbox.FormatBytes(workspace))
	}
	if len(holders) != 1 {
		t.Errorf("a file with 31 names came back with content under %d of them: %v", len(holders), holders)
	}
	out := t.TempDir()
	rep, err := sandbox.SaveFiles(out, res.Files, workspace)
	if err == nil || !strings.Contains(err.Error(), "b.bin") {
		t.Errorf("saving files that did not fit: error %v; want one naming b.bin", err)
	}
	if n := hostAllocated(t, out); n > workspace {
		t.Errorf("CONTAINMENT FAILURE: the saved results allocate %s on the host, from a workspace of %s", sandbox.FormatBytes(n), sandbox.FormatBytes(workspace))
	}
	if len(rep.Linked) != 30 {
		t.Errorf("%d of a.bin's 30 other names saved as hard links; want all", len(rep.Linked))
	}
}

// hostAllocated is the bytes allocated on the host to the regular files
// under dir (st_blocks: holes cost nothing, a file with several names
// counts once).
func hostAllocated(t *testing.T, dir string) int64 {
	t.Helper()
	var n int64
	seen := map[uint64]bool{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		if st, ok := fi.Sys().(*syscall.Stat_t); ok && fi.Mode().IsRegular() && !seen[st.Ino] {
			seen[st.Ino] = true
			n += st.Blocks * 512
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// linksOutAndBackIn models reaching host files through a run's results
// once they are on the host: the program makes links to /etc/passwd, to a
// host canary and up the tree, a link within the workspace and a FIFO.
// Saved with SaveFiles (as exec --out saves), nothing but regular files
// and directories may appear on the host. Uploading every name again with
// ReadUpload (as exec --file reads), and names another tool may have left
// in the same directory (a link to /etc/passwd, a FIFO with no writer) or
// that a model may choose (/dev/zero), must be refused at once or give
// only what the workspace held, never a host file's content.
func (h *harness) linksOutAndBackIn(t *testing.T) {
	canary := "/etc/hostname"
	if len(h.canary.files) > 0 {
		canary = h.canary.files[0]
	}
	req := attackPy(map[string]any{"canary": canary}, `
links = {"passwd": "/etc/passwd", "canary": ARGS["canary"], "up": "../../../../../../etc/passwd",
         "dir/up": "../passwd", "inner": "ok.txt", "proc-root": "/proc/self/root/etc/passwd"}
os.makedirs("dir")
open("ok.txt", "w").write("workspace bytes")
for name, target in links.items():
    os.symlink(target, name)
os.mkfifo("fifo")
print("NAMES:" + json.dumps(sorted(links) + ["fifo", "ok.txt"]), flush=True)
done()
`)
	req.FileContents = 1 << 20
	res := h.attack(t, req)
	var names []string
	jsonLine(t, res, "NAMES:", &names)
	out := t.TempDir()
	rep, err := sandbox.SaveFiles(out, res.Files, 1<<20)
	if err != nil {
		t.Errorf("saving the results: %v", err)
	}
	if len(rep.Skipped) != len(names)-1 {
		t.Errorf("skipped %+v; want every link and the FIFO", rep.Skipped)
	}
	filepath.WalkDir(out, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.Type().IsRegular() && !d.IsDir() {
			t.Errorf("CONTAINMENT FAILURE: saving the results made %s on the host, a %v", p, d.Type())
		}
		return nil
	})
	// What another tool, or an older coderun, may have left beside them.
	if err := os.Symlink("/etc/passwd", filepath.Join(out, "left-link")); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(out, "left-fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	uploads := []string{filepath.Join(out, "left-link"), filepath.Join(out, "left-fifo"), "/dev/zero"}
	for _, n := range names {
		uploads = append(uploads, filepath.Join(out, n))
	}
	for _, p := range uploads {
		h.requireSafeUpload(t, p)
	}
}

// requireSafeUpload reads path as exec --file would and fails the test if
// that hangs, or gives anything but a workspace's own bytes.
func (h *harness) requireSafeUpload(t *testing.T, path string) {
	t.Helper()
	type upload struct {
		data []byte
		err  error
	}
	done := make(chan upload, 1)
	go func() {
		data, _, err := sandbox.ReadUpload(path, 1<<20)
		done <- upload{data, err}
	}()
	var u upload
	select {
	case u = <-done:
	case <-time.After(10 * time.Second):
		t.Errorf("CONTAINMENT FAILURE: reading %s to upload it hangs", path)
		return
	}
	passwd, _ := os.ReadFile("/etc/passwd")
	switch {
	case u.err != nil:
		t.Logf("upload %s refused: %v", path, u.err)
	case bytes.Contains(u.data, []byte(h.canary.secret)), len(passwd) > 0 && bytes.Equal(u.data, passwd):
		t.Errorf("CONTAINMENT FAILURE: uploading %s gives a host file's content", path)
	case string(u.data) != "workspace bytes":
		t.Errorf("uploading %s gives %q; want it refused, or the workspace's own bytes", path, clip(string(u.data), 80))
	}
}
