package linux

import (
	"errors"
	"os/exec"
	"strings"
	"testing"
)

// A sandbox init that dies during set-up is reported with how it ended and
// what it wrote on its standard error, not only as the end of its events.
func TestSetupFailureSaysHowInitEnded(t *testing.T) {
	cmd := exec.Command("/bin/sh", "-c", "echo 'fatal error: runtime: cannot allocate memory' >&2; kill -9 $$")
	cmd.Stderr = &tailWriter{max: 2048}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	b := &box{init: &initProc{pid: cmd.Process.Pid, cmd: cmd, pidfd: -1}}
	err := b.setupFailure(errors.New("sandbox init ended during setup: EOF"))
	for _, want := range []string{"sandbox init ended during setup: EOF", "signal: killed", "fatal error: runtime: cannot allocate memory"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q lacks %q", err, want)
		}
	}
}

func TestTailWriterKeepsTheEnd(t *testing.T) {
	w := &tailWriter{max: 5}
	w.Write([]byte("abc"))
	w.Write([]byte("defg"))
	if got := w.String(); got != "cdefg" {
		t.Errorf("tail %q, want %q", got, "cdefg")
	}
}
