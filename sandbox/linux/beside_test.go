package linux_test

import (
	"bufio"
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/coderun/coderun/sandbox"
	"github.com/coderun/coderun/sandbox/linux"
)

// TestStartBeside: a long-lived sandbox runs programs beside the one Start
// started, at the same time and over the same workspace; each is a process
// tree of its own (it cannot see the others' processes); Close ends them
// all, and Start still refuses a second program of its own.
func TestStartBeside(t *testing.T) {
	h := newRuntime(t, linux.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	lim := sandbox.Limits{Memory: 256 << 20, Processes: 64, OpenFiles: 256, WorkspaceBytes: 64 << 20}
	sb, err := h.rt.NewSandbox(ctx, sandbox.Spec{Limits: lim})
	if err != nil {
		t.Fatal(err)
	}
	defer sb.Close()
	side, ok := sb.(sandbox.SideBySide)
	if !ok {
		t.Fatal("the linux runtime's sandboxes do not run programs side by side")
	}
	// The first program waits for a line, then prints what the second wrote.
	first, err := sb.Start(ctx, sandbox.Program{Language: sandbox.Bash, Code: `read -r _; cat /work/from-second; cat /proc/[0-9]*/comm`})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sb.Start(ctx, sandbox.Program{Language: sandbox.Bash, Code: "true"}); err == nil {
		t.Error("Start started a second program of its own while the first runs")
	}
	second, err := side.StartBeside(ctx, sandbox.Program{Language: sandbox.Bash, Code: `echo written-beside > /work/from-second; echo done; sleep 600`})
	if err != nil {
		t.Fatalf("StartBeside while a program runs: %v", err)
	}
	line, err := bufio.NewReader(second.Stdout()).ReadString('\n')
	if err != nil || line != "done\n" {
		t.Fatalf("the second program said %q, %v", line, err)
	}
	go io.Copy(io.Discard, second.Stderr())
	if _, err := first.Stdin().Write([]byte("go\n")); err != nil {
		t.Fatal(err)
	}
	out, _ := io.ReadAll(first.Stdout())
	res := first.Wait(ctx)
	fields := strings.Fields(string(out))
	if res.ExitCode != 0 || len(fields) < 2 || fields[0] != "written-beside" {
		t.Fatalf("the first program: exit %d, output %q, want the second's file", res.ExitCode, out)
	}
	// Its own processes only: nothing of the second program's.
	for _, comm := range fields[1:] {
		if comm == "sleep" {
			t.Errorf("the first program sees the second's processes: %q", fields[1:])
		}
	}
	// A third beside the second, after the first has ended.
	third, err := side.StartBeside(ctx, sandbox.Program{Language: sandbox.Bash, Code: `cat /work/from-second`})
	if err != nil {
		t.Fatal(err)
	}
	out, _ = io.ReadAll(third.Stdout())
	if res := third.Wait(ctx); res.ExitCode != 0 || string(out) != "written-beside\n" {
		t.Errorf("the third program: exit %d, output %q", res.ExitCode, out)
	}
	waited := make(chan *sandbox.Result, 1)
	go func() { waited <- second.Wait(context.Background()) }()
	if err := sb.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case res := <-waited:
		if res.Reason != sandbox.ReasonKilled {
			t.Errorf("the program beside, when its sandbox closed: %s, want killed", res.Reason)
		}
	case <-ctx.Done():
		t.Fatal("Close left the program beside running")
	}
}
