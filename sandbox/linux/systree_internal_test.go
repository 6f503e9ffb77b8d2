package linux

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestSystemTreesAreMadeAgain: the first sandbox gets none (its init makes
// its own), the next ones clones of the same trees, and trees older than
// treeMaxAge are made again (a host's package upgrade reaches the
// sandboxes started after it).
func TestSystemTreesAreMadeAgain(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
	root := t.TempDir()
	for _, d := range []string{"usr/lib", "etc/ssl"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	st, err := newSystemTrees(root, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer st.close()
	devs := func() map[string]uint64 {
		t.Helper()
		files, paths, err := st.clones()
		if err != nil {
			t.Fatal(err)
		}
		if len(paths) != 2 || paths[0] != "usr" || paths[1] != "etc/ssl" {
			t.Fatalf("trees %v, want usr and etc/ssl", paths)
		}
		out := map[string]uint64{}
		for i, f := range files {
			var s unix.Stat_t
			if err := unix.Fstat(int(f.Fd()), &s); err != nil {
				t.Fatal(err)
			}
			out[paths[i]] = s.Dev
			f.Close()
		}
		return out
	}
	if files, paths, err := st.clones(); err != nil || len(files)+len(paths) > 0 {
		t.Fatalf("the first sandbox got trees %v (%v): its init makes its own", paths, err)
	}
	first, second := devs(), devs()
	if first["usr"] != second["usr"] || first["etc/ssl"] != second["etc/ssl"] {
		t.Errorf("two sandboxes got different trees within treeMaxAge: %v, %v", first, second)
	}
	st.made = time.Now().Add(-2 * treeMaxAge)
	if third := devs(); third["usr"] == first["usr"] || third["etc/ssl"] == first["etc/ssl"] {
		t.Errorf("trees older than treeMaxAge were not made again: %v, then %v", first, third)
	}
}

// TestMakingTreesEndsNoThread: a child started with a parent-death signal
// (every sandbox init and the zygote are) gets it when the OS thread that
// started it ends, not the process. Making the trees must end no thread:
// it once did its work on a thread of its own that it let the Go runtime
// retire, which could be the one that had started the zygote.
func TestMakingTreesEndsNoThread(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
	state := t.TempDir()
	if err := os.Mkdir(filepath.Join(state, emptyLayer), 0o755); err != nil {
		t.Fatal(err)
	}
	// Started from a thread that is not the main one (which the Go
	// runtime never ends), then left to the runtime's pool of threads.
	hold := make(chan struct{})
	defer close(hold)
	var child *exec.Cmd
	for child == nil {
		started := make(chan *exec.Cmd)
		go func() {
			runtime.LockOSThread()
			if unix.Gettid() == unix.Getpid() {
				started <- nil
				<-hold // keep the main thread out of the way
				return
			}
			c := exec.Command("sleep", "60")
			c.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
			if err := c.Start(); err != nil {
				t.Error(err)
				c = &exec.Cmd{}
			}
			runtime.UnlockOSThread()
			started <- c
		}()
		child = <-started
	}
	if child.Process == nil {
		t.FailNow()
	}
	defer child.Process.Kill()
	exited := make(chan error, 1)
	go func() { exited <- child.Wait() }()
	for range 20 {
		trees, err := makeSystemTrees("/", state)
		if err != nil {
			t.Fatal(err)
		}
		closeTrees(trees)
	}
	select {
	case err := <-exited:
		t.Fatalf("the child started before making the trees ended: %v", err)
	case <-time.After(200 * time.Millisecond):
	}
}
