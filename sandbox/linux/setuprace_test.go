package linux_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/coderun/coderun/sandbox"
	"github.com/coderun/coderun/sandbox/linux"
)

// TestProgramExitsAtOnce: an interpreter that ends at its start (here
// Python with a PYTHONHOME where there is none), many at once, is found
// gone by the host as it places the program in its cgroup or sets its
// limits. That is no set-up failure: the run answers the program's exit
// and its message. (It was a setup_error, "set rlimit 7: no such process"
// or "attach program to pids: ... no such process", for some of them.)
// Short runs, many at once, set up as well, with and without the zygote.
func TestProgramExitsAtOnce(t *testing.T) {
	for _, c := range []struct {
		name string
		opts linux.Options
	}{
		{"Cold", linux.Options{}},
		{"ZygotePooled", linux.Options{Zygote: true, Pool: 2}},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := newRuntime(t, c.opts)
			const workers, each = 8, 4
			var wg sync.WaitGroup
			errs := make(chan string, workers*each)
			for w := range workers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := range each {
						req := py("print(1)")
						broken := (w+i)%2 == 0
						if broken {
							req.Env = map[string]string{"PYTHONHOME": "/nonexistent"}
						}
						res, err := h.rt.Run(context.Background(), req)
						switch {
						case err != nil:
							errs <- fmt.Sprintf("Run: %v", err)
						case res.Reason == sandbox.ReasonSetupError:
							errs <- fmt.Sprintf("broken %v: setup error: %s", broken, res.Error)
						case broken && (res.Reason != sandbox.ReasonExited || res.ExitCode == 0 || !strings.Contains(res.Stderr, "PYTHONHOME")):
							errs <- fmt.Sprintf("an interpreter that fails at its start: %s, exit %d, stderr %.200q", res.Reason, res.ExitCode, res.Stderr)
						case !broken && (res.Reason != sandbox.ReasonExited || res.Stdout != "1\n"):
							errs <- fmt.Sprintf("print(1): %s, stdout %q, error %s", res.Reason, res.Stdout, res.Error)
						}
					}
				}()
			}
			wg.Wait()
			close(errs)
			for e := range errs {
				t.Error(e)
			}
		})
	}
}

// TestLimitedRunsSpareOthersSetUp: a run stopped by a limit waits for its
// sandbox's init, whose pidfd is then closed, and destroying the sandbox
// killed that init again through the closed descriptor's number, which by
// then could be the pidfd of another sandbox's init a zygote had just
// forked: that sandbox's set-up ended with "sandbox init ended during
// setup: EOF" (TestSuiteZygote/Cold/Conformance/Reasons/memory_limit in
// CI). Runs ended by their output limit, many at once beside plain runs
// being set up, must all set up.
func TestLimitedRunsSpareOthersSetUp(t *testing.T) {
	h := newRuntime(t, linux.Options{Zygote: true})
	const workers, each = 6, 8
	var wg sync.WaitGroup
	errs := make(chan string, workers*each)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				req := py("print(1)")
				limited := (w+i)%2 == 0
				if limited {
					req = py("while True: print('y' * 1000)")
					req.Limits.OutputBytes = 1000
				}
				res, err := h.rt.Run(context.Background(), req)
				switch {
				case err != nil:
					errs <- fmt.Sprintf("Run: %v", err)
				case res.Reason == sandbox.ReasonSetupError:
					errs <- fmt.Sprintf("limited %v: setup error: %s", limited, res.Error)
				case limited && res.Reason != sandbox.ReasonOutputLimit:
					errs <- fmt.Sprintf("output without end: %s, want output_limit: %s", res.Reason, res.Error)
				case !limited && (res.Reason != sandbox.ReasonExited || res.Stdout != "1\n"):
					errs <- fmt.Sprintf("print(1): %s, stdout %q, error %s", res.Reason, res.Stdout, res.Error)
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}
