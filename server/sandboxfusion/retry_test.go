package sandboxfusion_test

import (
	"context"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/coderun/coderun/sandbox"
	"github.com/coderun/coderun/server/sandboxfusion"
)

// flaky is a runtime whose first failures sandboxes cannot be set up.
type flaky struct {
	failures int32
	calls    atomic.Int32
}

func (f *flaky) Name() string { return "flaky" }
func (f *flaky) Close() error { return nil }
func (f *flaky) Run(ctx context.Context, req sandbox.Request) (*sandbox.Result, error) {
	if f.calls.Add(1) <= f.failures {
		return &sandbox.Result{Reason: sandbox.ReasonSetupError, ExitCode: -1, Error: "attach to cpuacct: no such process"}, nil
	}
	return &sandbox.Result{Reason: sandbox.ReasonExited, Stdout: "42\n"}, nil
}

// A sandbox that could not be set up ran nothing of the code: the run is
// tried again (up to 3 times in all) before answering a SandboxError,
// which verl would score as a failed sample.
func TestSetupErrorIsRetried(t *testing.T) {
	for _, c := range []struct {
		failures int32
		calls    int32
		status   string
	}{{0, 1, "Success"}, {2, 3, "Success"}, {5, 3, "SandboxError"}} {
		rt := &flaky{failures: c.failures}
		h, err := sandboxfusion.New(sandboxfusion.Options{Runtime: rt, InsecureLocal: true})
		if err != nil {
			t.Fatal(err)
		}
		srv := httptest.NewServer(h)
		_, resp := post(t, srv.URL+"/run_code", verlRequest("print(42)", nil, 10, "python"))
		srv.Close()
		if resp["status"] != c.status || rt.calls.Load() != c.calls {
			t.Errorf("%d setup failures: %s after %d runs, want %s after %d: %v", c.failures, resp["status"], rt.calls.Load(), c.status, c.calls, resp)
		}
		if c.status == "SandboxError" && resp["message"] == "" {
			t.Errorf("a SandboxError without a message: %v", resp)
		}
	}
}
