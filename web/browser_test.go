package web_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/coderun/coderun/app"
	"github.com/coderun/coderun/llm/llmtest"
	"github.com/coderun/coderun/sandbox/linux"
	"github.com/coderun/coderun/server"
	"github.com/coderun/coderun/server/runs"
)

// The web view is tested as a person uses it: Debian's chromium, driven
// headless by playwright-core (web/testdata/browser, installed by
// scripts/setup.sh), against coderun serve as it is built (its key, its
// runs and sessions APIs), real sandboxes and a scripted model. Screenshots go to
// web/testdata/artifacts (ignored by git).

const testKey = "web-view-test-key-0123456789"

// need skips the test, saying why, where the browser, its driver or
// sandboxes are missing; in CI (CI=true) it fails it instead.
func need(t *testing.T) (chromium, driver string) {
	t.Helper()
	missing := func(why string) {
		if os.Getenv("CI") == "true" {
			t.Fatalf("the browser test needs %s (scripts/setup.sh installs it)", why)
		}
		t.Skipf("skipped: no %s here (scripts/setup.sh installs it)", why)
	}
	_, file, _, _ := runtime.Caller(0)
	driver = filepath.Join(filepath.Dir(file), "testdata", "browser")
	var err error
	if chromium, err = exec.LookPath("chromium"); err != nil {
		missing("chromium (Debian's package)")
	}
	if _, err := exec.LookPath("node"); err != nil {
		missing("node")
	}
	if _, err := os.Stat(filepath.Join(driver, "node_modules", "playwright-core", "package.json")); err != nil {
		missing("playwright-core (npm ci in web/testdata/browser)")
	}
	if os.Geteuid() != 0 {
		missing("root, for sandboxes,")
	}
	if err := linux.Probe().Require(nil); err != nil {
		missing("sandbox isolation: " + err.Error())
	}
	return chromium, driver
}

// artifacts is the directory of the test's screenshots, made anew.
func artifacts(t *testing.T) string {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	dir := filepath.Join(filepath.Dir(file), "testdata", "artifacts", t.Name())
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshots in %s", dir)
	return dir
}

type site struct {
	t   *testing.T
	url string
}

func (s *site) call(method, path string, body, out any) int {
	s.t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, s.url+path, rd)
	req.Header.Set("Authorization", "Bearer "+testKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if out != nil && resp.StatusCode < 300 {
		if err := json.Unmarshal(b, out); err != nil {
			s.t.Fatalf("%s %s: %v %s", method, path, err, b)
		}
	}
	if resp.StatusCode >= 300 {
		s.t.Fatalf("%s %s: %d %s", method, path, resp.StatusCode, b)
	}
	return resp.StatusCode
}

func (s *site) await(id, status string) {
	s.t.Helper()
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		var v runs.RunView
		s.call("GET", "/v1/runs/"+id, nil, &v)
		if string(v.Status) == status {
			return
		}
	}
	s.t.Fatalf("run %s never became %s", id, status)
}

const plotCode = "import matplotlib\nmatplotlib.use('Agg')\nimport matplotlib.pyplot as plt\n" +
	"plt.plot([1, 2, 3], [2, 5, 1])\nplt.title('sales')\nplt.savefig('plot.png')\nprint('peak at x = 2')\n"

const childCode = "import subprocess\nout = subprocess.run(['echo', 'words:', '42'], capture_output=True, text=True).stdout\nprint('child said', out)\n"

func TestWebViewInChromium(t *testing.T) {
	chromium, driver := need(t)
	shots := artifacts(t)
	model := llmtest.NewServer(
		llmtest.RunCode("c1", "python", plotCode).WithUsage(120, 40),
		llmtest.Reply("The peak is at x = 2.").WithUsage(80, 10),
		llmtest.RunCode("c2", "python", childCode).WithUsage(100, 30),
		llmtest.Reply("The child said 42.").WithUsage(70, 9),
		llmtest.RunCode("c3", "python", "import csv\nrows = list(csv.DictReader(open('sales.csv')))\nprint('total', sum(int(r['amount']) for r in rows))\n"),
		llmtest.Reply("The total is 350."),
	)
	defer model.Close()
	// coderun serve as it is built, with a key for the default tenant
	// (the CLI's records); the model's endpoint is read from the
	// environment, as the server reads it.
	t.Setenv("OPENAI_API_KEY", "sk-test")
	t.Setenv("OPENAI_BASE_URL", model.BaseURL(llmtest.OpenAI))
	cfg := app.Defaults(func(string) string { return "" })
	for k, v := range map[string]string{"store.data_dir": t.TempDir(), "server.api_keys": server.DefaultTenant + ":" + testKey,
		"limits.timeout": "30s", "limits.cpu_time": "30s", "runtime.linux.pool": "0"} {
		if err := cfg.Set(k, v, app.Flag(k)); err != nil {
			t.Fatal(err)
		}
	}
	srv, err := cfg.NewServer(app.ServeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	hs := httptest.NewServer(srv.Server.Handler())
	defer hs.Close()
	s := &site{t: t, url: hs.URL}

	var finished, pending runs.RunView
	s.call("POST", "/v1/runs", map[string]any{"task": "Plot the sales and say where they peak.", "model": "openai:test-model"}, &finished)
	s.await(finished.ID, "succeeded")
	s.call("POST", "/v1/runs", map[string]any{"task": "Ask a child process for a number.", "model": "openai:test-model"}, &pending)
	s.await(pending.ID, "awaiting_approval")

	steps := []map[string]any{
		{"do": "finished", "run": finished.ID, "code": "plt.savefig('plot.png')", "output": "peak at x = 2", "answer": "The peak is at x = 2."},
		{"do": "list", "run": finished.ID, "search": "sales"},
		{"do": "approve", "run": pending.ID, "answer": "The child said 42."},
		{"do": "start", "task": "What is the total amount?", "file": "sales.csv", "content": "month,amount\njan,150\nfeb,200\n",
			"model": "openai:test-model", "output": "total 350", "answer": "The total is 350."},
		{"do": "stats", "runs": 3},
		{"do": "session", "code": "x = 6 * 7\nprint('x is', x)", "output": "x is 42",
			"plot": "import matplotlib.pyplot as plt\nplt.plot([1, 2, 3], [3, 1, 2])\nplt.show()"},
	}
	plan, _ := json.Marshal(map[string]any{"chromium": chromium, "url": hs.URL, "key": testKey, "shots": shots, "steps": steps})
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", filepath.Join(driver, "drive.mjs"), string(plan))
	cmd.Dir = driver
	out, err := cmd.CombinedOutput()
	t.Logf("browser:\n%s", out)
	if err != nil {
		t.Fatalf("the browser scenarios failed: %v (screenshots in %s)", err, shots)
	}
}
