package procfs

import (
	"os"
	"os/exec"
	"testing"
	"time"
)

// A process blocked reading a pipe is seen reading it (by the ID of the
// pipe's other end), not reading another pipe; a process asleep reads
// nothing; a file that is not a pipe has no ID here.
func TestReading(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	other, otherW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	defer otherW.Close()
	cat := exec.Command("cat")
	cat.Stdin = r
	if err := cat.Start(); err != nil {
		t.Fatal(err)
	}
	r.Close()
	defer func() { cat.Process.Kill(); cat.Wait() }()
	id, err := IDOf(w)
	if err != nil {
		t.Fatal(err)
	}
	otherID, err := IDOf(other)
	if err != nil {
		t.Fatal(err)
	}
	seen := false
	for deadline := time.Now().Add(10 * time.Second); !seen && time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		if seen, err = Reading(cat.Process.Pid, id); err != nil {
			t.Fatal(err)
		}
	}
	if !seen {
		t.Fatal("cat blocked reading its stdin pipe is not seen reading it")
	}
	if ok, err := Reading(cat.Process.Pid, otherID); err != nil || ok {
		t.Fatalf("cat is seen reading another pipe: %v %v", ok, err)
	}

	sleep := exec.Command("sleep", "100")
	sleep.Stdin = other
	if err := sleep.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { sleep.Process.Kill(); sleep.Wait() }()
	time.Sleep(50 * time.Millisecond)
	if ok, err := Reading(sleep.Process.Pid, otherID); err != nil || ok {
		t.Fatalf("sleep is seen reading its stdin: %v %v", ok, err)
	}
	f, err := os.CreateTemp(t.TempDir(), "regular")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := IDOf(f); err == nil {
		t.Fatal("IDOf of a regular file: no error")
	}
}
