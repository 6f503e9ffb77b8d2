package main

import (
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestExecLeakedDescriptors: a shell that runs coderun exec with
// descriptors open without close-on-exec (a directory, "exec 7</etc" and
// one far above the runtime's own, and a socket listening on loopback)
// gives none of them to the program: it holds only 0, 1 and 2, and cannot
// read /etc/passwd through any of them.
func TestExecLeakedDescriptors(t *testing.T) {
	needSandbox(t)
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	sock, err := ln.(*net.TCPListener).File() // a duplicate; the child's copy is inheritable
	if err != nil {
		t.Fatal(err)
	}
	defer sock.Close()
	prog := `import os
held = sorted(int(f) for f in os.listdir("/proc/self/fd") if int(f) < 3 or os.path.exists("/proc/self/fd/" + f))
print("FDS", held)
for fd in range(3, 1024):
    try:
        print("READ", fd, os.read(os.open("passwd", os.O_RDONLY, dir_fd=fd), 64))
    except OSError:
        pass
`
	// The socket is the shell's fd 3; the shell copies it to 50 as well.
	script := `exec 7</etc; exec 77</etc; exec 50<&3; exec "$0" exec -c "$1"`
	cmd := exec.Command("bash", "-c", script, binary, prog)
	cmd.ExtraFiles = []*os.File{sock}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("coderun exec: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "FDS [0, 1, 2]\n") {
		t.Errorf("the program holds more than its standard streams:\n%s", out)
	}
	if strings.Contains(string(out), "READ") {
		t.Errorf("the program read the host's /etc/passwd through a leaked descriptor:\n%s", out)
	}
}
