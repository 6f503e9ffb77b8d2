package mcp_test

import (
	"context"
	"strings"
	"testing"

	"github.com/coderun/coderun/store"
)

// TestRunList: run_list gives the tenant's runs newest first, filtered
// by status and bounded by limit, as structured content; bad input is an
// error result.
func TestRunList(t *testing.T) {
	e := newEnv(t)
	cs := e.connect("alice", nil)
	ctx := context.Background()
	st, err := e.db.Tenant("alice")
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, task := range []string{"first task", "second task", "third task"} {
		r, err := st.CreateRun(ctx, store.NewRun{Task: task, Model: "openai:test-model", Mode: "single", Owner: "test"})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, r.ID)
	}
	if _, err := st.Record(ctx, ids[1], "test", store.Update{Status: store.StatusSucceeded}); err != nil {
		t.Fatal(err)
	}
	runsOf := func(args map[string]any) []map[string]any {
		t.Helper()
		r := call(t, cs, "run_list", args)
		if r.IsError {
			t.Fatalf("run_list %v: %s", args, text(r))
		}
		var out []map[string]any
		for _, x := range structured(t, r)["runs"].([]any) {
			out = append(out, x.(map[string]any))
		}
		return out
	}
	all := runsOf(map[string]any{})
	if len(all) != 3 || all[0]["task"] != "third task" || all[2]["uri"] != "coderun://runs/"+ids[0] {
		t.Errorf("all runs: %v", all)
	}
	if done := runsOf(map[string]any{"status": "succeeded"}); len(done) != 1 || done[0]["run"] != ids[1] || done[0]["status"] != "succeeded" {
		t.Errorf("succeeded runs: %v", done)
	}
	if one := runsOf(map[string]any{"limit": 1}); len(one) != 1 || one[0]["run"] != ids[2] {
		t.Errorf("limit 1: %v", one)
	}
	if bob := call(t, e.connect("bob", nil), "run_list", map[string]any{}); len(structured(t, bob)["runs"].([]any)) != 0 {
		t.Errorf("bob lists alice's runs: %s", text(bob))
	}
	for _, args := range []map[string]any{{"status": "done"}, {"limit": 1000}, {"limit": -1}} {
		if r := call(t, cs, "run_list", args); !r.IsError || !strings.Contains(text(r), "want") {
			t.Errorf("run_list %v: %s", args, text(r))
		}
	}
}
