package mcp_test

import (
	"bytes"
	"context"
	"encoding/json"
	"image/png"
	"strings"
	"sync"
	"testing"

	"github.com/coderun/coderun/agent"
	"github.com/coderun/coderun/llm/llmtest"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// flagged is code the default policy asks a person about (it starts a
// process), which also saves a plot.
const flagged = "import subprocess\nimport matplotlib\nmatplotlib.use('Agg')\nimport matplotlib.pyplot as plt\n" +
	"out = subprocess.run(['echo', 'words:', '42'], capture_output=True, text=True).stdout\nprint('child said', out)\n" +
	"plt.plot([1, 2, 3]); plt.savefig('chart.png')\n"

// TestAskAsksTheClientsUser: code the policy flags is put to the client's
// user by elicitation; approved, it runs, and the answer comes back with
// the plot the run saved as a PNG image and a link to the run's file.
func TestAskAsksTheClientsUser(t *testing.T) {
	e := newEnv(t, llmtest.RunCode("c1", "python", flagged), llmtest.Reply("The child process said 42; the chart is chart.png."))
	var mu sync.Mutex
	var asked []string
	cs := e.connect("alice", &sdk.ClientOptions{ElicitationHandler: func(_ context.Context, req *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
		mu.Lock()
		asked = append(asked, req.Params.Message)
		mu.Unlock()
		return &sdk.ElicitResult{Action: "accept", Content: map[string]any{"decision": "approve"}}, nil
	}})
	r := call(t, cs, "ask", map[string]any{"task": "What does a child process echo?"})
	if r.IsError {
		t.Fatalf("ask: %s", text(r))
	}
	out := structured(t, r)
	if out["status"] != "succeeded" || !strings.Contains(out["answer"].(string), "42") {
		t.Errorf("ask: %v", out)
	}
	mu.Lock()
	if len(asked) != 1 || !strings.Contains(asked[0], "subprocess.run") {
		t.Errorf("elicitations: %q", asked)
	}
	mu.Unlock()
	var img *sdk.ImageContent
	var link *sdk.ResourceLink
	for _, c := range r.Content {
		switch c := c.(type) {
		case *sdk.ImageContent:
			img = c
		case *sdk.ResourceLink:
			if c.Name == "chart.png" {
				link = c
			}
		}
	}
	if img == nil || img.MIMEType != "image/png" {
		t.Fatalf("no PNG image in %v", r.Content)
	}
	if _, err := png.Decode(bytes.NewReader(img.Data)); err != nil {
		t.Errorf("the image does not decode as a PNG: %v", err)
	}
	if link == nil {
		t.Fatalf("no resource link to chart.png in %v", r.Content)
	}
	rr, err := cs.ReadResource(context.Background(), &sdk.ReadResourceParams{URI: link.URI})
	if err != nil || len(rr.Contents) != 1 || !bytes.Equal(rr.Contents[0].Blob, img.Data) {
		t.Errorf("reading %s: %v %v", link.URI, rr, err)
	}
}

// TestAskPausesForRunDecide: a client that cannot be asked gets a paused
// run with the pending code; run_decide approves it and the run resumes
// to its answer; the run's record reads as a resource.
func TestAskPausesForRunDecide(t *testing.T) {
	e := newEnv(t, llmtest.RunCode("c1", "python", flagged), llmtest.Reply("The child process said 42."))
	cs := e.connect("alice", nil)
	r := call(t, cs, "ask", map[string]any{"task": "What does a child process echo?"})
	out := structured(t, r)
	if r.IsError || out["status"] != "awaiting_approval" || !strings.Contains(text(r), "run_decide") {
		t.Fatalf("ask: %s %v", text(r), out)
	}
	pending, _ := out["pending"].(map[string]any)
	if pending == nil || !strings.Contains(pending["code"].(string), "subprocess.run") || len(pending["findings"].([]any)) == 0 {
		t.Errorf("pending: %v", out["pending"])
	}
	id := out["run"].(string)

	if g := structured(t, call(t, cs, "run_get", map[string]any{"run": id})); g["status"] != "awaiting_approval" {
		t.Errorf("run_get: %v", g)
	}
	if bad := call(t, cs, "run_decide", map[string]any{"run": id, "decision": "maybe"}); !bad.IsError {
		t.Errorf("decision maybe: %s", text(bad))
	}
	d := call(t, cs, "run_decide", map[string]any{"run": id, "decision": "approve", "note": "fine"})
	if d.IsError || structured(t, d)["status"] != "succeeded" || !strings.Contains(text(d), "42") {
		t.Fatalf("run_decide approve: %s", text(d))
	}

	rr, err := cs.ReadResource(context.Background(), &sdk.ReadResourceParams{URI: "coderun://runs/" + id})
	if err != nil {
		t.Fatal(err)
	}
	var rec struct {
		Task   string            `json:"task"`
		Status string            `json:"status"`
		Steps  []json.RawMessage `json:"steps"`
	}
	if err := json.Unmarshal([]byte(rr.Contents[0].Text), &rec); err != nil || rec.Task != "What does a child process echo?" ||
		rec.Status != "succeeded" || len(rec.Steps) < 5 {
		t.Errorf("the run's record: %v %+v", err, rec)
	}

	// Another tenant has no such run.
	bob := e.connect("bob", nil)
	if g := call(t, bob, "run_get", map[string]any{"run": id}); !g.IsError {
		t.Errorf("bob reads alice's run: %s", text(g))
	}
	if _, err := bob.ReadResource(context.Background(), &sdk.ReadResourceParams{URI: "coderun://runs/" + id}); err == nil {
		t.Errorf("bob reads alice's run record")
	}
}

// TestBadInputIsAnErrorResult: bad arguments are tool errors the model can
// read, never protocol errors; a cell past its time limit keeps the state.
func TestBadInputIsAnErrorResult(t *testing.T) {
	e := newEnv(t)
	cs := e.connect("alice", nil)
	for _, c := range []struct {
		tool string
		args map[string]any
		want string
	}{
		{"session_run", map[string]any{"session": "bad name!", "code": "1"}, "session name"},
		{"session_run", map[string]any{"session": "s", "code": "1", "language": "cobol"}, "language"},
		{"session_run", map[string]any{"code": "1"}, "session"},
		{"files_read", map[string]any{"session": "s", "path": "../etc/passwd"}, ".."},
		{"session_close", map[string]any{"session": "never"}, "no such session"},
		{"run_code", map[string]any{"code": "print(1)", "files": []any{map[string]any{"path": "x", "content_base64": "%%%"}}}, "base64"},
		{"run_get", map[string]any{"run": "nosuchrun"}, "nosuchrun"},
	} {
		r := call(t, cs, c.tool, c.args)
		if !r.IsError || !strings.Contains(text(r), c.want) {
			t.Errorf("%s %v: error %v, %q (want %q)", c.tool, c.args, r.IsError, text(r), c.want)
		}
	}

	call(t, cs, "session_run", map[string]any{"session": "slow", "code": "kept = 7"})
	r := call(t, cs, "session_run", map[string]any{"session": "slow", "code": "import time\ntime.sleep(30)", "timeout_seconds": 1})
	if out := structured(t, r); !r.IsError || out["status"] != "timeout" || !strings.Contains(text(r), "KeyboardInterrupt") {
		t.Errorf("a cell past its limit: %s %v", text(r), out)
	}
	if r := call(t, cs, "session_run", map[string]any{"session": "slow", "code": "print(kept)"}); structured(t, r)["stdout"] != "7\n" {
		t.Errorf("after the time limit: %s", text(r))
	}
	if r := call(t, cs, "session_restart", map[string]any{"session": "slow"}); r.IsError {
		t.Errorf("restart: %s", text(r))
	}
	if r := call(t, cs, "session_run", map[string]any{"session": "slow", "code": "print(kept)"}); !r.IsError || !strings.Contains(text(r), "NameError") {
		t.Errorf("after a restart: %s", text(r))
	}
}

// TestAskElicitationNote: the user's note in the elicitation form is
// recorded with the decision.
func TestAskElicitationNote(t *testing.T) {
	e := newEnv(t, llmtest.RunCode("c1", "python", flagged), llmtest.Reply("The child process said 42; the chart is chart.png."))
	var schema any
	cs := e.connect("alice", &sdk.ClientOptions{ElicitationHandler: func(_ context.Context, req *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
		schema = req.Params.RequestedSchema
		return &sdk.ElicitResult{Action: "accept", Content: map[string]any{"decision": "approve", "note": "  echo is harmless  "}}, nil
	}})
	r := call(t, cs, "ask", map[string]any{"task": "What does a child process echo?"})
	if r.IsError {
		t.Fatalf("ask: %s", text(r))
	}
	if b, _ := json.Marshal(schema); !strings.Contains(string(b), `"note"`) {
		t.Errorf("the elicitation form asks for no note: %s", b)
	}
	rr, err := cs.ReadResource(context.Background(), &sdk.ReadResourceParams{URI: structured(t, r)["uri"].(string)})
	if err != nil {
		t.Fatal(err)
	}
	var rec struct {
		Steps []struct {
			Kind string          `json:"kind"`
			Data json.RawMessage `json:"data"`
		} `json:"steps"`
	}
	if err := json.Unmarshal([]byte(rr.Contents[0].Text), &rec); err != nil {
		t.Fatal(err)
	}
	var notes []string
	for _, s := range rec.Steps {
		var a agent.Approval
		if s.Kind == string(agent.StepApproval) && json.Unmarshal(s.Data, &a) == nil && a.Decision == "approved" {
			notes = append(notes, a.Note)
		}
	}
	if len(notes) != 1 || notes[0] != "echo is harmless" {
		t.Errorf("the approval's notes: %q\n%s", notes, rr.Contents[0].Text)
	}
}
