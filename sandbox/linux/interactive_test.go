package linux_test

import (
	"bufio"
	"context"
	"io"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/coderun/coderun/sandbox"
	"github.com/coderun/coderun/sandbox/linux"
)

func newInteractive(t *testing.T, opts linux.Options) *linux.Runtime {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("the linux runtime needs root")
	}
	if err := linux.Probe().Require(nil); err != nil {
		t.Skip(err)
	}
	rt, err := linux.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close() })
	return rt
}

// A long-lived sandbox keeps its workspace across programs, talks to a
// running program through its pipes, and delivers signals to it.
func TestSandboxConversationAndRestart(t *testing.T) {
	t.Run("Init", func(t *testing.T) { conversationAndRestart(t, linux.Options{}) })
	// The zygote builds the programs of a long-lived sandbox too, in its
	// one workspace.
	t.Run("Zygote", func(t *testing.T) { conversationAndRestart(t, linux.Options{Zygote: true}) })
}

func conversationAndRestart(t *testing.T, opts linux.Options) {
	rt := newInteractive(t, opts)
	ctx := context.Background()
	sb, err := rt.NewSandbox(ctx, sandbox.Spec{Files: []sandbox.File{{Path: "in.txt", Content: []byte("seed")}}})
	if err != nil {
		t.Fatal(err)
	}
	defer sb.Close()
	echo := `import os, sys, signal
def onint(*a):
    os.write(1, b"interrupted\n")
signal.signal(signal.SIGINT, onint)
for line in sys.stdin:
    print("got", line.strip(), open("in.txt").read(), flush=True)
    open("out.txt", "a").write(line)
`
	p, err := sb.Start(ctx, sandbox.Program{Language: sandbox.Python, Code: echo})
	if err != nil {
		t.Fatal(err)
	}
	out := bufio.NewReader(p.Stdout())
	io.WriteString(p.Stdin(), "hello\n")
	if line, _ := out.ReadString('\n'); line != "got hello seed\n" {
		t.Fatalf("first reply %q", line)
	}
	if err := p.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	if line, _ := out.ReadString('\n'); line != "interrupted\n" {
		res := p.Wait(ctx)
		b, _ := io.ReadAll(p.Stderr())
		t.Fatalf("after SIGINT %q: %s %s", line, res.Summary(), b)
	}
	if _, err := sb.Start(ctx, sandbox.Program{Language: sandbox.Bash, Code: "true"}); err == nil {
		t.Fatal("a second program started while the first runs")
	}
	p.Stdin().Close()
	rest, _ := io.ReadAll(out)
	res := p.Wait(ctx)
	if !res.OK() || len(rest) != 0 {
		t.Fatalf("end: %s, rest %q", res.Summary(), rest)
	}
	// Restart: a new program in fresh namespaces sees the files, not the processes.
	p2, err := sb.Start(ctx, sandbox.Program{Language: sandbox.Bash, Code: "cat out.txt; ls /proc | grep -c '^[0-9]'"})
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(p2.Stdout())
	if res := p2.Wait(ctx); !res.OK() {
		t.Fatal(res.Summary())
	}
	if lines := strings.Fields(string(got)); len(lines) != 2 || lines[0] != "hello" {
		t.Fatalf("second program saw %q", got)
	}
	data, truncated, err := sb.ReadFile("out.txt", 100)
	if err != nil || truncated || string(data) != "hello\n" {
		t.Fatalf("ReadFile: %q %v %v", data, truncated, err)
	}
}

// Wait with a cancelled context kills the program and every process it made.
func TestSandboxWaitCancelled(t *testing.T) {
	rt := newInteractive(t, linux.Options{})
	sb, err := rt.NewSandbox(context.Background(), sandbox.Spec{})
	if err != nil {
		t.Fatal(err)
	}
	defer sb.Close()
	p, err := sb.Start(context.Background(), sandbox.Program{Language: sandbox.Bash, Code: "sleep 1000 & sleep 1000"})
	if err != nil {
		t.Fatal(err)
	}
	go io.Copy(io.Discard, p.Stdout())
	go io.Copy(io.Discard, p.Stderr())
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	res := p.Wait(ctx)
	if res.Reason != sandbox.ReasonKilled {
		t.Fatalf("reason %s", res.Reason)
	}
}

// AwaitingInput is true only while the program's main thread is blocked
// reading its stdin: not while it computes, nor while it is blocked reading
// another pipe, whatever it writes; and the program cannot open its stdin
// pipe for writing, to wake itself after the host has looked.
func TestSandboxAwaitingInput(t *testing.T) {
	t.Run("Init", func(t *testing.T) { awaitingInput(t, linux.Options{}) })
	t.Run("Zygote", func(t *testing.T) { awaitingInput(t, linux.Options{Zygote: true}) })
}

func awaitingInput(t *testing.T, opts linux.Options) {
	rt := newInteractive(t, opts)
	ctx := context.Background()
	sb, err := rt.NewSandbox(ctx, sandbox.Spec{})
	if err != nil {
		t.Fatal(err)
	}
	defer sb.Close()
	prog := `import os
r, w = os.pipe()
try:
    open("/proc/self/fd/0", "wb")
    os.write(1, b"stdin writable\n")
except OSError as e:
    os.write(1, b"stdin not writable\n")
while True:
    cmd = os.read(0, 100).strip()
    os.write(1, cmd + b"\n")
    if cmd == b"other":
        os.read(r, 1)  # blocked, but not on stdin
    elif cmd == b"spin":
        while True:
            pass
`
	p, err := sb.Start(ctx, sandbox.Program{Language: sandbox.Python, Code: prog})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Kill()
	go io.Copy(io.Discard, p.Stderr())
	out := bufio.NewReader(p.Stdout())
	if line, _ := out.ReadString('\n'); line != "stdin not writable\n" {
		t.Fatalf("the program could open its stdin for writing: %q", line)
	}
	if !eventually(t, p, true) {
		t.Fatal("a program blocked reading its stdin is not seen awaiting input")
	}
	for _, cmd := range []string{"other", "spin"} {
		t.Run(cmd, func(t *testing.T) {
			io.WriteString(p.Stdin(), cmd+"\n")
			if line, _ := out.ReadString('\n'); line != cmd+"\n" {
				t.Fatalf("reply %q", line)
			}
			for range 50 {
				if eventually(t, p, true) {
					t.Fatalf("%s: seen awaiting input", cmd)
				}
			}
		})
		if cmd == "other" {
			p.Kill()
			p.Wait(ctx)
			p, err = sb.Start(ctx, sandbox.Program{Language: sandbox.Python, Code: prog})
			if err != nil {
				t.Fatal(err)
			}
			go io.Copy(io.Discard, p.Stderr())
			out = bufio.NewReader(p.Stdout())
			out.ReadString('\n')
		}
	}
	p.Kill()
	p.Wait(ctx)
	if _, err := p.AwaitingInput(); err == nil {
		t.Fatal("no error for a program that has ended")
	}
}

// eventually asks p whether it awaits input, a few times over 10 ms when
// want is true (the program may not have reached its read yet), and
// reports the answer.
func eventually(t *testing.T, p sandbox.Process, want bool) bool {
	t.Helper()
	for range 20 {
		ok, err := p.AwaitingInput()
		if err != nil {
			t.Fatal(err)
		}
		if ok == want {
			return ok
		}
		time.Sleep(500 * time.Microsecond)
	}
	return !want
}
