package mcp_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/coderun/coderun/store"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// listURIs is every resource resources/list gives, through its pages, and
// the number of pages.
func listURIs(t *testing.T, cs *sdk.ClientSession) (map[string]*sdk.Resource, int) {
	t.Helper()
	all := map[string]*sdk.Resource{}
	pages := 0
	params := &sdk.ListResourcesParams{}
	for {
		res, err := cs.ListResources(context.Background(), params)
		if err != nil {
			t.Fatalf("resources/list: %v", err)
		}
		pages++
		for _, r := range res.Resources {
			all[r.URI] = r
		}
		if res.NextCursor == "" {
			return all, pages
		}
		params = &sdk.ListResourcesParams{Cursor: res.NextCursor}
	}
}

// TestResourcesList: resources/list gives the tenant's session files and
// recent runs (not another tenant's), a page at a time; the client is told
// when the list changes, and a closed session's files leave it.
func TestResourcesList(t *testing.T) {
	e := newEnv(t)
	changed := make(chan struct{}, 100)
	cs := e.connect("alice", &sdk.ClientOptions{ResourceListChangedHandler: func(context.Context, *sdk.ResourceListChangedRequest) {
		changed <- struct{}{}
	}})
	st, err := e.db.Tenant("alice")
	if err != nil {
		t.Fatal(err)
	}
	run, err := st.CreateRun(context.Background(), store.NewRun{Task: "count the rows of sales.csv", Model: "openai:test-model", Mode: "single", Owner: "test"})
	if err != nil {
		t.Fatal(err)
	}
	r := call(t, cs, "session_run", map[string]any{"session": "plots", "code": "for i in range(150):\n    open(f'f{i:03}.txt', 'w').write(str(i))"})
	if r.IsError {
		t.Fatalf("writing files: %s", text(r))
	}
	select {
	case <-changed:
	case <-time.After(5 * time.Second):
		t.Error("no notifications/resources/list_changed after a cell wrote files")
	}
	id := structured(t, call(t, cs, "session_list", map[string]any{}))["sessions"].([]any)[0].(map[string]any)["id"].(string)

	all, pages := listURIs(t, cs)
	if pages < 2 {
		t.Errorf("151 resources in %d page(s), want them paginated", pages)
	}
	f := all["coderun://sessions/"+id+"/files/f007.txt"]
	if f == nil || f.Size != 1 || !strings.HasPrefix(f.MIMEType, "text/plain") || !strings.Contains(f.Name, "plots") {
		t.Errorf("session file f007.txt listed as %+v", f)
	}
	if n := len(all); n != 151 {
		t.Errorf("%d resources listed, want 150 files and 1 run", n)
	}
	rr := all["coderun://runs/"+run.ID]
	if rr == nil || rr.Title != run.Task || rr.MIMEType != "application/json" {
		t.Fatalf("run %s listed as %+v", run.ID, rr)
	}
	got, err := cs.ReadResource(context.Background(), &sdk.ReadResourceParams{URI: f.URI})
	if err != nil || got.Contents[0].Text != "7" {
		t.Errorf("reading a listed file: %v %v", err, got)
	}

	if bob, _ := listURIs(t, e.connect("bob", nil)); len(bob) != 0 {
		t.Errorf("bob lists alice's resources: %v", bob)
	}

	for len(changed) > 0 {
		<-changed
	}
	call(t, cs, "session_close", map[string]any{"session": "plots"})
	select {
	case <-changed:
	case <-time.After(5 * time.Second):
		t.Error("no notifications/resources/list_changed after a session was closed")
	}
	if all, _ := listURIs(t, cs); len(all) != 1 || all["coderun://runs/"+run.ID] == nil {
		t.Errorf("after closing the session: %v", all)
	}
}
