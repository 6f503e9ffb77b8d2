//go:build linux

package sandboxtest

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/coderun/coderun/sandbox"
	"golang.org/x/sys/unix"
)

// leakedFDs are descriptors the test process holds without close-on-exec,
// as a shell's "exec 7</etc" or a careless agent framework leaves them: a
// directory of the host holding a secret file, a TCP socket listening on
// the host's loopback, and one end of a Unix socket pair.
type leakedFDs struct {
	fds    []int
	secret string
}

// leakFDs opens the descriptors (closed when the test ends).
func leakFDs(t *testing.T) *leakedFDs {
	t.Helper()
	l := &leakedFDs{secret: "leaked-fd-secret-" + randomHex(12)}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "secret"), []byte(l.secret), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	// syscall.Open and syscall.Socket add no O_CLOEXEC of their own.
	d, err := syscall.Open(dir, syscall.O_RDONLY|syscall.O_DIRECTORY, 0)
	if err != nil {
		t.Fatal(err)
	}
	l.fds = append(l.fds, d)
	s, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	l.fds = append(l.fds, s)
	if err := syscall.Bind(s, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Listen(s, 1); err != nil {
		t.Fatal(err)
	}
	pair, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	l.fds = append(l.fds, pair[0], pair[1])
	// Low numbers may be taken over by the descriptors the runtime hands
	// its children on purpose: copies at high numbers come along as is.
	for i, fd := range l.fds[:3] {
		high := highFD(t, 900+i)
		if err := unix.Dup3(fd, high, 0); err != nil {
			t.Fatal(err)
		}
		l.fds = append(l.fds, high)
	}
	t.Cleanup(func() {
		for _, fd := range l.fds {
			syscall.Close(fd)
		}
	})
	return l
}

// highFD returns the first descriptor number from n up that is not open.
func highFD(t *testing.T, n int) int {
	t.Helper()
	for ; n < 1024; n++ {
		if _, err := unix.FcntlInt(uintptr(n), unix.F_GETFD, 0); err == unix.EBADF {
			return n
		}
	}
	t.Fatal("no free descriptor number below 1024")
	return -1
}

// fdProbe is a Python program that reports every descriptor it holds:
// those /proc/self/fd lists (its own listing's excepted) and every number
// from 3 to 1023 that fstat accepts, trying to open the secret file, to
// fchdir and to accept a connection through each. Only 0, 1 and 2 may be
// there: the bootstrap has closed its request and ready pipes before the
// user's code runs.
const fdProbe = `
def is_open(fd):
    try:
        os.fstat(fd)
        return True
    except OSError:
        return False

# The listing's own descriptor is closed again once it is read.
listed = [fd for fd in map(int, os.listdir("/proc/self/fd")) if is_open(fd)]
held = []
for fd in range(3, 1024):
    try:
        st = os.fstat(fd)
    except OSError:
        continue
    held.append(fd)
    escaped("descriptor %d is open in the sandbox (mode %o)" % (fd, st.st_mode))
    try:
        f = os.open("secret", os.O_RDONLY, dir_fd=fd)
        escaped("read through descriptor %d: %r" % (fd, os.read(f, 100)))
    except OSError as e:
        blocked("openat through %d" % fd, ename(e.errno))
    try:
        os.fchdir(fd)
        escaped("fchdir through descriptor %d to %s" % (fd, os.listdir(".")))
    except OSError as e:
        blocked("fchdir through %d" % fd, ename(e.errno))
    try:
        s = socket.socket(fileno=fd)
        s.setblocking(False)
        s.accept()
        escaped("accepted through descriptor %d" % fd)
    except OSError as e:
        blocked("accept through %d" % fd, ename(e.errno) if e.errno else repr(e))
print("FDS:" + json.dumps({"listed": sorted(listed), "held": held}))
done()
`

// inheritedDescriptors models descriptors the process embedding coderun
// (or the shell that started it) leaves open without close-on-exec: a
// directory of the host, through which openat reads and writes host files,
// and sockets, one listening on the host's loopback. Whatever the runtime
// starts must not hand them on: the sandboxed program (Python, and bash
// through its init) must hold only its standard streams, and nothing it
// prints may come from the leaked directory.
func (h *harness) inheritedDescriptors(t *testing.T) {
	leak := leakFDs(t)
	for _, req := range []sandbox.Request{
		attackPy(nil, fdProbe),
		sh(`for n in $(seq 3 1023); do
  if [ -e /proc/$$/fd/$n ]; then
    echo "ESCAPED: bash holds descriptor $n -> $(readlink /proc/$$/fd/$n)"
    cat /proc/$$/fd/$n/secret 2>/dev/null
  fi
done
echo DONE`),
	} {
		res := h.attack(t, req)
		if strings.Contains(res.Stdout+res.Stderr, leak.secret) {
			t.Errorf("CONTAINMENT FAILURE: the %s program read the host's secret through a leaked descriptor", req.Language)
		}
		if req.Language != sandbox.Python {
			continue
		}
		var got struct{ Listed, Held []int }
		jsonLine(t, res, "FDS:", &got)
		if len(got.Listed) != 3 || got.Listed[0] != 0 || got.Listed[1] != 1 || got.Listed[2] != 2 || len(got.Held) != 0 {
			t.Errorf("the program holds descriptors %v (probed: %v); want only 0, 1, 2 (leaked on the host: %v)", got.Listed, got.Held, leak.fds)
		}
	}
}
