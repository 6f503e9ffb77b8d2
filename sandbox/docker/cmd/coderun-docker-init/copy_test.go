package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// lockedBuffer is a bytes.Buffer safe for a writer and a reader.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// threadInRead reports whether a thread of this process is in read(2) on fd.
func threadInRead(t *testing.T, fd int) bool {
	t.Helper()
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		t.Fatal(err)
	}
	for _, task := range tasks {
		data, err := os.ReadFile(filepath.Join("/proc/self/task", task.Name(), "syscall"))
		if err != nil {
			continue // the thread is gone
		}
		f := strings.Fields(string(data))
		if len(f) > 1 && f[0] == "0" && f[1] == fmt.Sprintf("0x%x", fd) {
			return true
		}
	}
	return false
}

// TestCopyWhenReadableNeverWaitsInRead: the init's copy of a named pipe
// that has a writer but no data waits in poll, not in read, even where
// the pipe's reads block whatever its flags say (gVisor's Sentry, which
// opens a host FIFO without O_NONBLOCK: there a read waiting for data
// holds the init's address space, and its next fork waits for the host).
// It copies what comes and ends at the writer's close. (io.Copy over the
// pipe, the init's copy before, waits in read: this test failed with it.)
func TestCopyWhenReadableNeverWaitsInRead(t *testing.T) {
	path := filepath.Join(t.TempDir(), "in")
	if err := unix.Mkfifo(path, 0o600); err != nil {
		t.Fatal(err)
	}
	fifo, err := unix.Open(path, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fifo)
	writer, err := unix.Open(path, unix.O_WRONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	// As under gVisor: the reader's reads block.
	if err := unix.SetNonblock(fifo, false); err != nil {
		t.Fatal(err)
	}
	var out lockedBuffer
	done := make(chan struct{})
	go func() {
		copyWhenReadable(&out, fifo)
		close(done)
	}()
	deadline := time.Now().Add(300 * time.Millisecond)
	for time.Now().Before(deadline) {
		if threadInRead(t, fifo) {
			unix.Close(writer)
			t.Fatal("the copy waits in read(2) on a pipe without data")
		}
		time.Sleep(5 * time.Millisecond)
	}
	for _, s := range []string{"code ", "and stdin"} {
		if _, err := unix.Write(writer, []byte(s)); err != nil {
			t.Fatal(err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	unix.Close(writer)
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("the copy did not end at the writer's close")
	}
	if got := out.String(); got != "code and stdin" {
		t.Errorf("copied %q, want %q", got, "code and stdin")
	}
}
