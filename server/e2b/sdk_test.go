package e2b_test

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/coderun/coderun/server/e2b"
)

// sdkDir holds the pinned @e2b/code-interpreter that scripts/setup.sh
// installs, and the scenarios that drive it.
const sdkDir = "testdata/sdk"

// nodeSDK returns node's path, or skips the test when node or the SDK is
// absent, outside CI only: in CI (CI=true) their absence fails it.
func nodeSDK(t *testing.T) string {
	t.Helper()
	node, err := exec.LookPath("node")
	if err == nil {
		_, err = os.Stat(filepath.Join(sdkDir, "node_modules", "@e2b", "code-interpreter", "package.json"))
	}
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("node and the E2B SDK are required in CI (scripts/setup.sh installs them): %v", err)
		}
		t.Skipf("node or the E2B SDK is absent (run scripts/setup.sh): %v", err)
	}
	return node
}

// runScenario runs a scenario of testdata/sdk/scenario.mjs with env and
// decodes what it printed.
func runScenario(t *testing.T, node, scenario string, env ...string) map[string]json.RawMessage {
	t.Helper()
	cmd := exec.CommandContext(testContext(t), node, "scenario.mjs", scenario)
	cmd.Dir = sdkDir
	cmd.Env = append(os.Environ(), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("node scenario.mjs %s: %v\nstdout: %s\nstderr: %s", scenario, err, stdout.String(), stderr.String())
	}
	var out map[string]json.RawMessage
	if err := json.Unmarshal(stdout.Bytes(), &out); err != nil {
		t.Fatalf("scenario %s printed %q: %v\nstderr: %s", scenario, stdout.String(), err, stderr.String())
	}
	t.Logf("scenario %s: %s", scenario, stdout.String())
	return out
}

// field decodes out[name] into v.
func field(t *testing.T, out map[string]json.RawMessage, name string, v any) {
	t.Helper()
	raw, ok := out[name]
	if !ok {
		t.Fatalf("the scenario reported no %q", name)
	}
	if err := json.Unmarshal(raw, v); err != nil {
		t.Fatalf("%s: %s: %v", name, raw, err)
	}
}

// TestSDKControlPlane drives the SDK through coderun's E2B control plane
// and one sandbox URL (E2B_API_URL and E2B_SANDBOX_URL), with an API key
// of coderun's: code, results, a plot, errors, state, contexts, files and
// commands, and two sandboxes side by side.
func TestSDKControlPlane(t *testing.T) {
	node := nodeSDK(t)
	_, ts := newServer(t, e2b.Options{Keys: testKeys})
	out := runScenario(t, node, "main",
		"E2B_API_URL="+ts.URL, "E2B_SANDBOX_URL="+ts.URL, "E2B_API_KEY=key-alice", "E2B_DEBUG=", "E2B_DOMAIN=")

	var hello struct {
		Stdout   []string `json:"stdout"`
		Text     string   `json:"text"`
		Count    int      `json:"count"`
		Streamed []string `json:"streamed"`
	}
	field(t, out, "hello", &hello)
	if strings.Join(hello.Stdout, "") != "hello from coderun\n" || hello.Text != "42" || hello.Count != 1 || len(hello.Streamed) == 0 {
		t.Errorf("hello: %+v, want stdout 'hello from coderun', main result 42, execution count 1, streamed stdout", hello)
	}

	var plot struct {
		Results []struct {
			PNG     *string  `json:"png"`
			Main    bool     `json:"main"`
			Formats []string `json:"formats"`
		} `json:"results"`
		Error *string `json:"error"`
	}
	field(t, out, "plot", &plot)
	if len(plot.Results) != 1 || plot.Results[0].PNG == nil || !strings.HasPrefix(*plot.Results[0].PNG, "iVBORw0KGgo") || plot.Error != nil {
		t.Errorf("plot: %+v, want one PNG result (base64 of a PNG: iVBORw0KGgo...)", plot)
	}

	var errOut struct{ Name, Value, Traceback string }
	field(t, out, "error", &errOut)
	if errOut.Name != "ZeroDivisionError" || errOut.Value != "division by zero" || !strings.Contains(errOut.Traceback, "1 / 0") {
		t.Errorf("error: %+v, want ZeroDivisionError with a traceback showing the line", errOut)
	}

	var state struct {
		Text  string `json:"text"`
		Count int    `json:"count"`
	}
	field(t, out, "state", &state)
	if state.Text != "42" {
		t.Errorf("state across two runCode calls: %+v, want 42", state)
	}

	var ctxs struct {
		A, B, InA, InB, Cwd, Language string
		Listed, AfterRemove           []string
	}
	field(t, out, "contexts", &ctxs)
	if ctxs.InA != "'only in a'" && ctxs.InA != "only in a" {
		t.Errorf("contexts: a variable is not there in its own context: %+v", ctxs)
	}
	if ctxs.InB != "NameError" {
		t.Errorf("contexts: a variable of one context is visible in another: %+v", ctxs)
	}
	if !contains(ctxs.Listed, ctxs.A) || !contains(ctxs.Listed, ctxs.B) || contains(ctxs.AfterRemove, ctxs.B) || !contains(ctxs.AfterRemove, ctxs.A) {
		t.Errorf("contexts: listed %v, after removing %s: %v", ctxs.Listed, ctxs.B, ctxs.AfterRemove)
	}
	if ctxs.Cwd != e2b.Workdir || ctxs.Language != "python" {
		t.Errorf("contexts: cwd %q language %q", ctxs.Cwd, ctxs.Language)
	}

	var envs struct {
		During string   `json:"during"`
		After  []string `json:"after"`
	}
	field(t, out, "envs", &envs)
	if envs.During != "'hi there'" || strings.Join(envs.After, "") != "None\n" {
		t.Errorf("envs: %+v, want the variable set during the execution only", envs)
	}

	var bash struct{ Stdout []string }
	field(t, out, "bash", &bash)
	if strings.Join(bash.Stdout, "") != "x is 5\n" {
		t.Errorf("bash: %+v", bash)
	}

	var files struct {
		Written, Read, FromCode, Made, Mtime, Missing string
		List                                          []struct{ Name, Type, Path string }
		Deep, After                                   []string
		Exists, MissingExists                         bool
		Size                                          int
	}
	field(t, out, "files", &files)
	if files.Written != "/home/user/data.csv" || files.Read != "a,b\n1,2\n" || files.FromCode != "'a,b\\n1,2\\n'" || files.Made != "written in a cell" {
		t.Errorf("files: write/read/read in code/written by code: %+v", files)
	}
	names := map[string]string{}
	for _, e := range files.List {
		names[e.Name] = e.Type
	}
	if names["data.csv"] != "file" || names["sub"] != "dir" || names["made_by_code.txt"] != "file" || len(names) != 3 {
		t.Errorf("files.list: %+v, want data.csv, made_by_code.txt and the directory sub", files.List)
	}
	if strings.Join(files.Deep, ",") != "/home/user/sub/dir,/home/user/sub/dir/inner.txt" {
		t.Errorf("files.list depth 2: %v", files.Deep)
	}
	if !files.Exists || files.MissingExists || files.Size != 8 || files.Mtime == "" {
		t.Errorf("files.exists/getInfo: %+v", files)
	}
	if strings.Join(files.After, ",") != "made_by_code.txt,renamed.csv" {
		t.Errorf("after rename and remove: %v", files.After)
	}
	if files.Missing != "NotFoundError" && files.Missing != "FileNotFoundError" {
		t.Errorf("reading a missing file threw %q, want the SDK's not-found error", files.Missing)
	}

	var multi struct {
		Paths, Both []string
		Bytes       []int
	}
	field(t, out, "multiWrite", &multi)
	if strings.Join(multi.Paths, ",") != "/home/user/m/one.txt,/home/user/m/two.txt" || strings.Join(multi.Both, ",") != "one,two" || len(multi.Bytes) != 3 || multi.Bytes[0] != 't' {
		t.Errorf("files.write of two files: %+v", multi)
	}

	var cmd struct {
		Stdout, Stderr string
		ExitCode       int
	}
	field(t, out, "commands", &cmd)
	if !strings.HasPrefix(cmd.Stdout, "out\n") || !strings.Contains(cmd.Stdout, "renamed.csv") || cmd.Stderr != "err\n" || cmd.ExitCode != 0 {
		t.Errorf("commands.run: %+v, want out (and the workspace's files) on stdout, err on stderr, exit 0", cmd)
	}
	var exit struct {
		Thrown   string
		ExitCode int
		Stdout   string
	}
	field(t, out, "commandExit", &exit)
	if !strings.HasPrefix(exit.Thrown, "CommandExitError") || exit.ExitCode != 3 || exit.Stdout != "before\n" {
		t.Errorf("a command exiting 3: %+v, want CommandExitError with exit code 3", exit)
	}
	var stdin struct {
		Stdout   string
		ExitCode int
	}
	field(t, out, "commandStdin", &stdin)
	if stdin.Stdout != "got hello stdin\n" || stdin.ExitCode != 0 {
		t.Errorf("a command reading stdin: %+v", stdin)
	}
	var kill struct {
		Killed   bool
		Waited   string
		ExitCode int
	}
	field(t, out, "commandKill", &kill)
	if !kill.Killed || kill.Waited != "CommandExitError" {
		t.Errorf("killing a command: %+v", kill)
	}

	var timeout struct {
		Thrown, Next string
		MS           int
	}
	field(t, out, "commandTimeout", &timeout)
	if timeout.Thrown == "" || timeout.Next != "next\n" || timeout.MS > 20000 {
		t.Errorf("a command past its timeoutMs: %+v, want an error, then the next command at once", timeout)
	}

	var two struct {
		Here, There, Other, InfoID string
		Listed, ListedAfter        []string
		Killed                     bool
		EnvInCode, EnvInCommand    string
		Filtered                   []string
		Metadata                   map[string]string
	}
	field(t, out, "twoSandboxes", &two)
	var sbxID string
	field(t, out, "sandboxId", &sbxID)
	if two.Here != "41" || two.There != "1000" {
		t.Errorf("two sandboxes side by side: here %q there %q, want 41 and 1000", two.Here, two.There)
	}
	if two.EnvInCode != "'from create'" || two.EnvInCommand != "from create\n" {
		t.Errorf("Sandbox.create's envs: in code %q, in a command %q", two.EnvInCode, two.EnvInCommand)
	}
	if strings.Join(two.Filtered, ",") != two.Other || two.Metadata["purpose"] != "second" {
		t.Errorf("metadata: list filtered by it %v, getInfo %v", two.Filtered, two.Metadata)
	}
	if !contains(two.Listed, sbxID) || !contains(two.Listed, two.Other) || contains(two.ListedAfter, two.Other) || !two.Killed || two.InfoID != two.Other {
		t.Errorf("Sandbox.list/getInfo/kill: %+v", two)
	}
	var end struct {
		ViaConnect string `json:"viaConnect"`
		Running    any    `json:"running"`
	}
	field(t, out, "kill", &end)
	if end.ViaConnect != "41" || end.Running != false {
		t.Errorf("connect and kill: %+v", end)
	}
}

// TestSDKDebugMode drives the SDK in its debug mode (E2B_DEBUG=true: no
// control plane) at one sandbox URL, on a server opened without keys.
func TestSDKDebugMode(t *testing.T) {
	node := nodeSDK(t)
	_, ts := newServer(t, e2b.Options{InsecureLocal: true})
	out := runScenario(t, node, "debug", "E2B_DEBUG=true", "E2B_SANDBOX_URL="+ts.URL, "E2B_API_URL=", "E2B_API_KEY=")
	var hello struct{ Stdout []string }
	field(t, out, "hello", &hello)
	var files struct{ Read string }
	field(t, out, "files", &files)
	var cmd struct {
		Stdout   string
		ExitCode int
	}
	field(t, out, "commands", &cmd)
	if strings.Join(hello.Stdout, "") != "debug mode\n" || files.Read != "from debug mode" || cmd.Stdout != "from debug mode" || cmd.ExitCode != 0 {
		t.Errorf("debug mode: %s", mustJSON(out))
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

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
