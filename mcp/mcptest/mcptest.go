// Package mcptest drives coderun's MCP server with the official MCP
// TypeScript SDK client (@modelcontextprotocol/sdk from npm, pinned in
// mcp/testdata/tsclient and installed there by scripts/setup.sh), under
// node, and checks what came back. The same scenario runs over stdio
// (against the built coderun binary, in cmd/coderun's tests) and over
// Streamable HTTP (in package mcp's tests).
package mcptest

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// ClientDir is the directory of the TypeScript client: its package.json,
// its lock file, client.mjs, and (once installed) node_modules.
func ClientDir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "testdata", "tsclient")
}

// NeedClient skips t when node or the installed SDK is missing, saying
// why; under CI (CI=true), where scripts/setup.sh has installed them, it
// fails instead.
func NeedClient(t testing.TB) {
	t.Helper()
	why := ""
	if _, err := exec.LookPath("node"); err != nil {
		why = "node is not installed"
	} else if _, err := os.Stat(filepath.Join(ClientDir(), "node_modules", "@modelcontextprotocol", "sdk", "package.json")); err != nil {
		why = "the MCP TypeScript SDK is not installed in " + ClientDir()
	}
	if why == "" {
		return
	}
	why += " (scripts/setup.sh installs it)"
	if os.Getenv("CI") == "true" {
		t.Fatal(why)
	}
	t.Skip(why)
}

// Call is one tool call's result as the client saw it.
type Call struct {
	IsError    bool             `json:"isError"`
	Text       string           `json:"text"`
	Structured map[string]any   `json:"structured"`
	Types      []string         `json:"types"`
	Content    []map[string]any `json:"content"`
}

// Report is what client.mjs's scenario brought back.
type Report struct {
	Fatal  string `json:"fatal"`
	Server struct {
		Name    string `json:"name"`
		Version string `json:"version"`
	} `json:"server"`
	Tools []struct {
		Name        string `json:"name"`
		HasInput    bool   `json:"hasInput"`
		HasOutput   bool   `json:"hasOutput"`
		Description string `json:"description"`
	} `json:"tools"`
	Set, Get Call
	Plot     struct {
		IsError bool     `json:"isError"`
		Text    string   `json:"text"`
		Types   []string `json:"types"`
		Images  []struct {
			MIMEType string `json:"mimeType"`
			Data     string `json:"data"`
		} `json:"images"`
	} `json:"plot"`
	Error, Upload, Compute, List, Read Call
	Resource                           []struct {
		URI      string `json:"uri"`
		MIMEType string `json:"mimeType"`
		Text     string `json:"text"`
	} `json:"resource"`
	Cancel struct {
		Resolved bool   `json:"resolved"`
		Rejected bool   `json:"rejected"`
		Message  string `json:"message"`
		AfterMS  int    `json:"afterMS"`
	} `json:"cancel"`
	Progress []struct {
		Progress float64 `json:"progress"`
		Message  string  `json:"message"`
	} `json:"progress"`
	AfterCancel   Call `json:"afterCancel"`
	AfterCancelMS int  `json:"afterCancelMS"`
	OneShot       Call `json:"oneShot"`
	OneShotFail   Call `json:"oneShotFail"`
	Sessions      Call `json:"sessions"`
	Closed        Call `json:"closed"`
}

// RunScenario runs client.mjs with args ("stdio", binary, "mcp" or "http",
// url, token) in env (nil: this process's) and returns its report.
func RunScenario(t testing.TB, env []string, args ...string) *Report {
	t.Helper()
	NeedClient(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", append([]string{"client.mjs"}, args...)...)
	cmd.Dir = ClientDir()
	cmd.Env = env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("node client.mjs %s: %v\nstderr:\n%s\nstdout:\n%s", strings.Join(args, " "), err, stderr.String(), stdout.String())
	}
	var r Report
	if err := json.Unmarshal(stdout.Bytes(), &r); err != nil {
		t.Fatalf("the client's report: %v\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
	}
	if r.Fatal != "" {
		t.Fatalf("the client failed: %s\nstderr:\n%s", r.Fatal, stderr.String())
	}
	return &r
}

// Tools are the tools every coderun MCP server lists.
var Tools = []string{"run_code", "session_run", "session_create", "session_list", "session_restart", "session_close",
	"files_upload", "files_list", "files_read", "run_get", "run_list"}

// CheckScenario checks a report: the tools listed with schemas and
// descriptions, state kept across two calls in one session, a plot that
// decodes as a PNG, an exception as an error result with its traceback, a
// file round trip (through the tools and the resource link), cancellation
// interrupting a long cell with progress notifications before it, the
// session working after, and one-shot runs.
func CheckScenario(t *testing.T, r *Report) {
	t.Helper()
	if r.Server.Name != "coderun" {
		t.Errorf("server name %q", r.Server.Name)
	}
	listed := map[string]bool{}
	for _, tool := range r.Tools {
		listed[tool.Name] = true
		if !tool.HasInput || !tool.HasOutput || len(tool.Description) < 40 {
			t.Errorf("tool %s: input schema %v, output schema %v, description %q", tool.Name, tool.HasInput, tool.HasOutput, tool.Description)
		}
	}
	for _, name := range Tools {
		if !listed[name] {
			t.Errorf("tool %s not listed (listed: %v)", name, listed)
		}
	}

	if r.Set.IsError || r.Set.Structured["created"] != true {
		t.Errorf("x = 41: %+v", r.Set)
	}
	if r.Get.IsError || r.Get.Structured["stdout"] != "42\n" || !strings.Contains(r.Get.Text, "42") {
		t.Errorf("print(x + 1) in the same session: %+v", r.Get)
	}

	if r.Plot.IsError || len(r.Plot.Images) != 1 {
		t.Errorf("plot: error %v, content %v, %d images; text %q", r.Plot.IsError, r.Plot.Types, len(r.Plot.Images), r.Plot.Text)
	}
	for _, img := range r.Plot.Images {
		data, err := base64.StdEncoding.DecodeString(img.Data)
		if err != nil {
			t.Errorf("plot image: not base64: %v", err)
			continue
		}
		cfg, err := png.DecodeConfig(bytes.NewReader(data))
		if img.MIMEType != "image/png" || err != nil || cfg.Width < 100 || cfg.Height < 100 {
			t.Errorf("plot image: %s, %v, %dx%d", img.MIMEType, err, cfg.Width, cfg.Height)
		}
		if _, err := png.Decode(bytes.NewReader(data)); err != nil {
			t.Errorf("plot image does not decode as a PNG: %v", err)
		}
	}

	e := r.Error
	if !e.IsError || !strings.Contains(e.Text, "ZeroDivisionError") || !strings.Contains(e.Text, "return 1 / 0") {
		t.Errorf("1 / 0: want an error result with the traceback, got %+v", e)
	}
	if errv, _ := e.Structured["error"].(map[string]any); errv["name"] != "ZeroDivisionError" || e.Structured["status"] != "error" ||
		!strings.Contains(errv["traceback"].(string), "f()") {
		t.Errorf("1 / 0: structured %v", e.Structured)
	}

	if r.Upload.IsError || !contains(r.Upload.Types, "resource_link") {
		t.Errorf("upload: %+v", r.Upload)
	}
	if r.Compute.IsError {
		t.Errorf("compute on the uploaded file: %+v", r.Compute)
	}
	if r.List.IsError || !strings.Contains(r.List.Text, "data.csv") || !strings.Contains(r.List.Text, "sum.txt") {
		t.Errorf("files_list: %+v", r.List)
	}
	if r.Read.IsError || r.Read.Text != "6" || !contains(r.Read.Types, "resource") {
		t.Errorf("files_read sum.txt: %+v", r.Read)
	}
	if len(r.Resource) != 1 || r.Resource[0].Text != "6" || !strings.HasSuffix(r.Resource[0].URI, "/files/sum.txt") {
		t.Errorf("resources/read of sum.txt's link: %+v", r.Resource)
	}

	if !r.Cancel.Rejected || r.Cancel.AfterMS > 30000 {
		t.Errorf("cancelling the long cell: %+v", r.Cancel)
	}
	ticks := 0
	for i, p := range r.Progress {
		if i > 0 && p.Progress <= r.Progress[i-1].Progress {
			t.Errorf("progress does not grow: %+v", r.Progress)
		}
		if strings.Contains(p.Message, "stdout: tick") {
			ticks++
		}
	}
	if ticks < 3 {
		t.Errorf("progress notifications showing the cell's output before the cancellation: %+v", r.Progress)
	}
	if r.AfterCancel.IsError || r.AfterCancel.Structured["stdout"] != "still 41\n" || r.AfterCancelMS > 20000 {
		t.Errorf("the session after the cancellation (%d ms): %+v", r.AfterCancelMS, r.AfterCancel)
	}

	if r.OneShot.IsError || r.OneShot.Structured["stdout"] != "42\n" || r.OneShot.Structured["reason"] != "exited" {
		t.Errorf("run_code print(6 * 7): %+v", r.OneShot)
	}
	f := r.OneShotFail
	if !f.IsError || f.Structured["exit_code"] != float64(3) || f.Structured["stderr"] != "bad\n" || !strings.Contains(f.Text, "bad") {
		t.Errorf("run_code sys.exit(3): %+v", f)
	}
	if ss, _ := r.Sessions.Structured["sessions"].([]any); len(ss) != 1 {
		t.Errorf("session_list: %+v", r.Sessions)
	}
	if r.Closed.IsError || r.Closed.Structured["done"] != "closed" {
		t.Errorf("session_close: %+v", r.Closed)
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
