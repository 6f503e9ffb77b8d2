package gvisor_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/coderun/coderun/sandbox"
	"github.com/coderun/coderun/sandbox/gvisor"
)

// The process limit (RLIMIT_NPROC, counted by the Sentry per user) holds
// each program of a long-lived sandbox to its own count: the processes of
// a program that ended, killed with it, count no more against the next.
func TestProcessLimitPerProgram(t *testing.T) {
	rt := newRuntime(t, gvisor.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const procs = 8
	lim := sandbox.Limits{Processes: procs}
	sb, err := rt.NewSandbox(ctx, sandbox.Spec{Limits: lim.WithDefaults(sandbox.DefaultLimits)})
	if err != nil {
		t.Fatal(err)
	}
	defer sb.Close()
	const forks = `import os, time
n = 0
while n < 100:
    try:
        pid = os.fork()
    except OSError:
        break
    if pid == 0:
        time.sleep(1000)
        os._exit(0)
    n += 1
print(n, flush=True)
if n == 0:  # what counts against the limit, for the failure's message
    for p in os.listdir("/proc"):
        if p.isdigit():
            st = open("/proc/%s/status" % p).read().split("\n")
            print(p, [l for l in st if l.split(":")[0] in ("Name", "State", "PPid", "Uid", "Threads")], flush=True)
`
	for i := range 3 {
		p, err := sb.Start(ctx, sandbox.Program{Language: sandbox.Python, Code: forks})
		if err != nil {
			t.Fatal(err)
		}
		p.Stdin().Close()
		// The children keep stdout open: one line, then the program's end.
		br := bufio.NewReader(p.Stdout())
		out, _ := br.ReadString('\n')
		if strings.TrimSpace(out) == "0" {
			rest, _ := io.ReadAll(br)
			t.Logf("%s", rest)
		}
		res := p.Wait(ctx)
		if got := strings.TrimSpace(out); got != fmt.Sprint(procs-1) {
			t.Fatalf("program %d forked %s children under a limit of %d processes (want %d): %+v", i, got, procs, procs-1, res)
		}
	}
}
