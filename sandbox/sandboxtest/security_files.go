//go:build linux

package sandboxtest

import (
	"bytes"
	"os"
	"strings"
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
