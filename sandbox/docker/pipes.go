package docker

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// pipes are the named pipes through which the host talks to a container's
// init (cmd/coderun-docker-init --supervise) and its program, made in the
// box's code directory (the container's read-only /.coderun) before the
// container starts. The host opens its ends first: in and payload for
// writing (read-write, so that the init's opens do not wait), out, err,
// ready and status for reading, each with a write end of its own held until
// the container has opened its end (a reader of a pipe no one has opened
// for writing yet would see its end at once). Once the program is ready the
// names are removed: nothing in the container can open them again.
type pipes struct {
	dir                     string
	in, payload             *os.File // the host writes
	out, err, ready, status *os.File // the host reads (through the poller)
	holds                   []int    // write ends held until the container opened its own
	// keepOutputs leaves out and err to their reader, who closes them at
	// their end (a long-lived sandbox's program: interactive.go).
	keepOutputs bool
}

// pipeNames are the pipes, as the init program names them.
var pipeNames = []string{"in", "payload", "out", "err", "ready", "status"}

// newPipes makes the pipes in dir, for uid (the container's user) to open.
// in stays root's, readable by others: no one in the container can open it
// for writing (a program given it as its stdin included: /proc/self/fd/0).
func newPipes(dir string, uid int) (*pipes, error) {
	p := &pipes{dir: dir}
	for _, n := range pipeNames {
		path := filepath.Join(dir, n)
		if err := unix.Mkfifo(path, 0o600); err != nil {
			p.close()
			return nil, fmt.Errorf("making the pipe %s: %w", n, err)
		}
		var err error
		if n == "in" {
			err = os.Chmod(path, 0o644)
		} else {
			err = os.Chown(path, uid, uid)
		}
		if err != nil {
			p.close()
			return nil, err
		}
	}
	var err error
	open := func(n string, flag int) *os.File {
		if err != nil {
			return nil
		}
		var f *os.File
		f, err = os.OpenFile(filepath.Join(dir, n), flag|unix.O_CLOEXEC, 0)
		return f
	}
	p.in, p.payload = open("in", os.O_RDWR), open("payload", os.O_RDWR)
	p.out, p.err = open("out", os.O_RDONLY|unix.O_NONBLOCK), open("err", os.O_RDONLY|unix.O_NONBLOCK)
	p.ready, p.status = open("ready", os.O_RDONLY|unix.O_NONBLOCK), open("status", os.O_RDONLY|unix.O_NONBLOCK)
	for _, n := range []string{"out", "err", "ready", "status"} {
		if err != nil {
			break
		}
		var fd int
		fd, err = unix.Open(filepath.Join(dir, n), unix.O_WRONLY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
		if err == nil {
			p.holds = append(p.holds, fd)
		}
	}
	if err != nil {
		p.close()
		return nil, fmt.Errorf("opening the pipes: %w", err)
	}
	return p, nil
}

// release lets go of the held write ends and removes the pipes' names.
func (p *pipes) release() {
	for _, fd := range p.holds {
		unix.Close(fd)
	}
	p.holds = nil
	for _, n := range pipeNames {
		os.Remove(filepath.Join(p.dir, n))
	}
}

// close closes the host's ends (but for kept outputs).
func (p *pipes) close() {
	p.release()
	files := []*os.File{p.in, p.payload, p.ready, p.status}
	if !p.keepOutputs {
		files = append(files, p.out, p.err)
	}
	for _, f := range files {
		if f != nil {
			f.Close()
		}
	}
}

// readStatus reads the wait status the init writes when the program ends.
func readStatus(f *os.File) (unix.WaitStatus, error) {
	line, err := bufio.NewReader(f).ReadString('\n')
	if err != nil {
		if errors.Is(err, os.ErrClosed) {
			return 0, errors.New("the container's init did not report the program's end")
		}
		return 0, fmt.Errorf("the container's init did not report the program's end: %w", err)
	}
	n, err := strconv.ParseUint(strings.TrimSpace(line), 10, 32)
	if err != nil {
		return 0, fmt.Errorf("the container's init reported %q", line)
	}
	return unix.WaitStatus(n), nil
}
