package sandboxfusion_test

import (
	"encoding/base64"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coderun/coderun/server"
	"github.com/coderun/coderun/server/sandboxfusion"
)

// /run_jupyter runs the cells of SandboxFusion's own example in one
// kernel: state carries over, results are display bundles, stderr and
// errors are the cell's, and a failed cell does not stop the next.
func TestRunJupyter(t *testing.T) {
	t.Parallel()
	srv := newServer(t, sandboxfusion.Options{})
	b64 := base64.StdEncoding.EncodeToString
	code, resp := post(t, srv.URL+"/run_jupyter", map[string]any{
		"cells": []string{"a = 123", "a", "print(a)", "import sys; sys.stderr.write(\"stderr message\")",
			"raise RuntimeError(\"error message\")", "print(open('in.txt').read()); open('out.txt', 'w').write('made')"},
		"files":       map[string]any{"in.txt": b64([]byte("given"))},
		"fetch_files": []string{"out.txt", "absent.txt"},
	})
	if code != http.StatusOK || resp["status"] != "Success" || resp["message"] != "" {
		t.Fatalf("HTTP %d: %v", code, resp)
	}
	cells := resp["cells"].([]any)
	if len(cells) != 6 {
		t.Fatalf("%d cells: %v", len(cells), cells)
	}
	cell := func(i int) map[string]any { return cells[i].(map[string]any) }
	if d := cell(1)["display"].([]any); len(d) != 1 || d[0].(map[string]any)["text/plain"] != "123" {
		t.Errorf("cell 2 displays %v", d)
	}
	if cell(2)["stdout"] != "123\n" {
		t.Errorf("cell 3 printed %q", cell(2)["stdout"])
	}
	if cell(3)["stderr"] != "stderr message" {
		t.Errorf("cell 4's stderr %q", cell(3)["stderr"])
	}
	errs := cell(4)["error"].([]any)
	if len(errs) != 1 || errs[0].(map[string]any)["ename"] != "RuntimeError" || errs[0].(map[string]any)["evalue"] != "error message" {
		t.Errorf("cell 5's error %v", errs)
	} else if tb, _ := errs[0].(map[string]any)["traceback"].([]any); len(tb) == 0 {
		t.Errorf("cell 5's error has no traceback")
	}
	if cell(5)["stdout"] != "given\n" {
		t.Errorf("cell 6 read %q from the file given", cell(5)["stdout"])
	}
	for i := range cells {
		for _, k := range []string{"stdout", "stderr", "display", "error"} {
			if cell(i)[k] == nil {
				t.Errorf("cell %d: %s is null", i+1, k)
			}
		}
	}
	files := resp["files"].(map[string]any)
	if len(files) != 1 || files["out.txt"] != b64([]byte("made")) {
		t.Errorf("files %v", files)
	}
	if d := resp["driver"].(map[string]any); d["status"] != "Finished" || d["return_code"] != float64(0) {
		t.Errorf("driver %v", d)
	}
}

// Past total_timeout the answer is Failed, the driver TimeLimitExceeded,
// and no cells, as SandboxFusion answers; a cell past cell_timeout is
// interrupted and the next cells run.
func TestRunJupyterTimeouts(t *testing.T) {
	t.Parallel()
	srv := newServer(t, sandboxfusion.Options{})
	_, resp := post(t, srv.URL+"/run_jupyter", map[string]any{
		"cells": []string{"import time", "time.sleep(30)"}, "total_timeout": 1})
	if resp["status"] != "Failed" || len(resp["cells"].([]any)) != 0 {
		t.Fatalf("past the total: %v", resp)
	}
	if d := resp["driver"].(map[string]any); d["status"] != "TimeLimitExceeded" || d["return_code"] != nil {
		t.Errorf("driver %v", d)
	}

	_, resp = post(t, srv.URL+"/run_jupyter", map[string]any{
		"cells": []string{"import time", "time.sleep(30)", "print('after')"}, "cell_timeout": 1, "total_timeout": 20})
	if resp["status"] != "Success" {
		t.Fatalf("a cell past its timeout: %v", resp)
	}
	cells := resp["cells"].([]any)
	if len(cells) != 3 || len(cells[1].(map[string]any)["error"].([]any)) != 1 || cells[2].(map[string]any)["stdout"] != "after\n" {
		t.Errorf("cells %v", cells)
	}
}

// A kernel other than python3, or no cells, is refused with 422.
func TestRunJupyterBadRequests(t *testing.T) {
	t.Parallel()
	srv := newServer(t, sandboxfusion.Options{})
	for _, body := range []string{`{"cells": ["1"], "kernel": "julia"}`, `{"kernel": "python3"}`} {
		code, resp := post(t, srv.URL+"/run_jupyter", body)
		if code != http.StatusUnprocessableEntity || !strings.Contains(strings.ToLower(stringOf(resp["detail"])), "body") {
			t.Errorf("%s: HTTP %d %v", body, code, resp)
		}
	}
}

func stringOf(v any) string {
	var b strings.Builder
	var walk func(any)
	walk = func(v any) {
		switch x := v.(type) {
		case []any:
			for _, e := range x {
				walk(e)
			}
		case map[string]any:
			for _, e := range x {
				walk(e)
			}
		case string:
			b.WriteString(x + " ")
		}
	}
	walk(v)
	return b.String()
}

// /run_jupyter's session is one of its tenant's sessions open at once
// (server.tenant_sessions): while its cells run, the tenant has no other
// place; and a request beyond the limit waits for one rather than fail.
func TestRunJupyterCountsAsASession(t *testing.T) {
	t.Parallel()
	tenants := server.NewTenants(server.TenantLimits{Sessions: 1})
	srv := newServer(t, sandboxfusion.Options{ReserveSession: sandboxfusion.TenantSessions(tenants)})
	done := make(chan map[string]any, 1)
	go func() {
		_, resp := post(t, srv.URL+"/run_jupyter", map[string]any{"cells": []string{"import time; time.sleep(3)", "print('slept')"}})
		done <- resp
	}()
	held := false
	for deadline := time.Now().Add(time.Minute); !held && time.Now().Before(deadline); {
		release, err := tenants.ReserveSession(server.DefaultTenant)
		var limit *server.LimitError
		switch {
		case errors.As(err, &limit):
			held = true
		case err != nil:
			t.Fatal(err)
		default:
			release()
			select {
			case resp := <-done:
				t.Fatalf("/run_jupyter ended without counting as a session: %v", resp)
			case <-time.After(20 * time.Millisecond):
			}
		}
	}
	if !held {
		t.Fatal("/run_jupyter's session never counted against the tenant's sessions")
	}
	resp := <-done
	if resp["status"] != "Success" {
		t.Fatalf("%v", resp)
	}
	// Its place is given back; a request beyond the limit waits for it.
	release, err := tenants.ReserveSession(server.DefaultTenant)
	if err != nil {
		t.Fatalf("the session's place was not given back: %v", err)
	}
	go func() {
		_, resp := post(t, srv.URL+"/run_jupyter", map[string]any{"cells": []string{"print(1)"}})
		done <- resp
	}()
	select {
	case resp := <-done:
		t.Fatalf("a request beyond the tenant's sessions ran at once: %v", resp)
	case <-time.After(300 * time.Millisecond):
	}
	release()
	if resp := <-done; resp["status"] != "Success" {
		t.Errorf("the request that waited: %v", resp)
	}
}
