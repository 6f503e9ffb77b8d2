package mcp

import (
	"context"
	"fmt"
	"sync"

	"github.com/coderun/coderun/sandbox"
	"github.com/coderun/coderun/store"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// What resources/list shows: the files of the tenant's open sessions and
// its most recent run records, a page at a time. The SDK lists the
// resources added to its server and tells the client's sessions when that
// list changes (notifications/resources/list_changed), so the tenant's
// server keeps its resources in step with the sessions and records: before
// each resources/list and after each tool call (one may write files, start
// a run or close a session).
const (
	listPageSize       = 100 // resources per resources/list page
	maxListedRuns      = 100 // the most recent runs listed
	maxListedFilesEach = 200 // the files listed of each session
)

// listed is the set of resources a tenant's server lists, by URI, each
// with what it was listed as (a change re-lists it).
type listed struct {
	mu   sync.Mutex // held through a sync: syncs do not interleave
	uris map[string]sdk.Resource
}

// listedMiddleware keeps the listed resources in step (see listPageSize).
func (t *tenant) listedMiddleware(next sdk.MethodHandler) sdk.MethodHandler {
	return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
		switch method {
		case "resources/list":
			if err := t.syncResources(ctx); err != nil {
				return nil, fmt.Errorf("resources/list: %w", err)
			}
		case "tools/call":
			res, err := next(ctx, method, req)
			if serr := t.syncResources(context.WithoutCancel(ctx)); serr != nil {
				t.svc.opts.Logger.Warn("mcp: keeping the resource list", "tenant", t.name, "err", serr)
			}
			return res, err
		}
		return next(ctx, method, req)
	}
}

// syncResources makes the server's resources the tenant's session files
// and recent runs, adding and removing only what changed.
func (t *tenant) syncResources(ctx context.Context) error {
	t.listed.mu.Lock()
	defer t.listed.mu.Unlock()
	want, err := t.wantedResources(ctx)
	if err != nil {
		return err
	}
	var gone []string
	for uri := range t.listed.uris {
		if _, ok := want[uri]; !ok {
			gone = append(gone, uri)
			delete(t.listed.uris, uri)
		}
	}
	if len(gone) > 0 {
		t.server.RemoveResources(gone...)
	}
	for uri, r := range want {
		if old, ok := t.listed.uris[uri]; ok && sameResource(old, r) {
			continue
		}
		t.listed.uris[uri] = r
		t.server.AddResource(&r, t.readResource)
	}
	return nil
}

func sameResource(a, b sdk.Resource) bool {
	return a.Name == b.Name && a.Title == b.Title && a.Description == b.Description && a.MIMEType == b.MIMEType && a.Size == b.Size
}

// wantedResources are the resources to list now, by URI.
func (t *tenant) wantedResources(ctx context.Context) (map[string]sdk.Resource, error) {
	want := map[string]sdk.Resource{}
	for _, in := range t.list() {
		s, err := t.sessions.Get(in.ID)
		if err != nil {
			continue // closed or evicted meanwhile
		}
		files, _, err := s.Files()
		if err != nil {
			continue
		}
		name := in.Name
		if name == "" {
			name = in.ID
		}
		n := 0
		for _, f := range files {
			if f.Kind != sandbox.KindFile || n == maxListedFilesEach {
				continue
			}
			n++
			uri := sessionFileURI(in.ID, f.Path)
			want[uri] = sdk.Resource{URI: uri, Name: name + "/" + f.Path, Title: f.Path + " (session " + name + ")",
				Description: "A file in session " + name + "'s workspace.", MIMEType: mimeOf(f.Path, nil), Size: f.Size}
		}
	}
	if t.svc.opts.Records == nil {
		return want, nil
	}
	st, err := t.records(ctx)
	if err != nil {
		return nil, err
	}
	runs, err := st.ListRuns(ctx, store.Filter{Limit: maxListedRuns})
	if err != nil {
		return nil, fmt.Errorf("the recent runs: %w", err)
	}
	for _, r := range runs {
		uri := runURI(r.ID)
		want[uri] = sdk.Resource{URI: uri, Name: "run " + r.ID, Title: clip(r.Task, 80),
			Description: "An agent run's record (" + string(r.Shown()) + ").", MIMEType: "application/json"}
	}
	return want, nil
}
