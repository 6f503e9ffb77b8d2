package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"

	"github.com/coderun/coderun/sandbox"
	"github.com/coderun/coderun/store"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// The resources: a file of a session's workspace, a run's record, a file
// a run produced. All are read through one handler that parses the URI.
const (
	sessionFileTemplate = "coderun://sessions/{session}/files/{+path}"
	runTemplate         = "coderun://runs/{run}"
	runFileTemplate     = "coderun://runs/{run}/files/{+path}"
)

func (t *tenant) addResources() {
	t.server.AddResourceTemplate(&sdk.ResourceTemplate{
		Name: "session-file", Title: "A file in a session's workspace", URITemplate: sessionFileTemplate,
		Description: "A file of a session's workspace (/work), by the session's id and the file's path; files_list and files_upload give these links.",
	}, t.readResource)
	if t.svc.opts.Records == nil {
		return
	}
	t.server.AddResourceTemplate(&sdk.ResourceTemplate{
		Name: "run", Title: "An agent run's record", URITemplate: runTemplate, MIMEType: "application/json",
		Description: "An agent run (ask) as recorded: task, status, answer or failure report, pending code, scorecard, steps.",
	}, t.readResource)
	t.server.AddResourceTemplate(&sdk.ResourceTemplate{
		Name: "run-file", Title: "A file an agent run produced", URITemplate: runFileTemplate,
		Description: "A file (a plot, a table) that an agent run's code wrote, the latest version of each path.",
	}, t.readResource)
}

// readResource reads any of the tenant's resources.
func (t *tenant) readResource(ctx context.Context, req *sdk.ReadResourceRequest) (*sdk.ReadResourceResult, error) {
	uri := req.Params.URI
	rest, ok := strings.CutPrefix(uri, "coderun://")
	if !ok {
		return nil, sdk.ResourceNotFoundError(uri)
	}
	parts := strings.SplitN(rest, "/", 4)
	for i, p := range parts {
		u, err := url.PathUnescape(p)
		if err != nil {
			return nil, sdk.ResourceNotFoundError(uri)
		}
		parts[i] = u
	}
	switch {
	case len(parts) == 4 && parts[0] == "sessions" && parts[2] == "files":
		return t.readSessionFile(uri, parts[1], unescapePath(rest, 3))
	case len(parts) == 2 && parts[0] == "runs" && t.svc.opts.Records != nil:
		return t.readRun(ctx, uri, parts[1])
	case len(parts) == 4 && parts[0] == "runs" && parts[2] == "files" && t.svc.opts.Records != nil:
		return t.readRunFile(ctx, uri, parts[1], unescapePath(rest, 3))
	}
	return nil, sdk.ResourceNotFoundError(uri)
}

// unescapePath is what follows the n-th '/' of s, each segment unescaped.
func unescapePath(s string, n int) string {
	parts := strings.SplitN(s, "/", n+1)
	if len(parts) <= n {
		return ""
	}
	segs := strings.Split(parts[n], "/")
	for i, g := range segs {
		if u, err := url.PathUnescape(g); err == nil {
			segs[i] = u
		}
	}
	return strings.Join(segs, "/")
}

func (t *tenant) readSessionFile(uri, id, p string) (*sdk.ReadResourceResult, error) {
	p, err := sandbox.CleanPath(p)
	if err != nil {
		return nil, sdk.ResourceNotFoundError(uri)
	}
	s, err := t.sessions.Get(id)
	if err != nil {
		return nil, sdk.ResourceNotFoundError(uri)
	}
	data, _, err := s.Download(p, maxRead)
	if err != nil {
		return nil, sdk.ResourceNotFoundError(uri)
	}
	return &sdk.ReadResourceResult{Contents: []*sdk.ResourceContents{resourceContents(uri, p, data)}}, nil
}

func resourceContents(uri, name string, data []byte) *sdk.ResourceContents {
	rc := &sdk.ResourceContents{URI: uri, MIMEType: mimeOf(name, data)}
	if isText(data) && !strings.HasPrefix(rc.MIMEType, "image/") {
		rc.Text = string(data)
	} else {
		rc.Blob = data
	}
	return rc
}

func (t *tenant) records(ctx context.Context) (store.Tenant, error) {
	st, err := t.svc.opts.Records(ctx, t.name)
	if err != nil {
		return nil, fmt.Errorf("the run records: %w", err)
	}
	return st, nil
}

func (t *tenant) readRun(ctx context.Context, uri, id string) (*sdk.ReadResourceResult, error) {
	st, err := t.records(ctx)
	if err != nil {
		return nil, err
	}
	run, err := st.GetRun(ctx, id)
	if err != nil {
		return nil, sdk.ResourceNotFoundError(uri)
	}
	steps, err := st.Steps(ctx, run.ID)
	if err != nil {
		return nil, err
	}
	b, err := json.MarshalIndent(struct {
		*store.Run
		Steps []store.Step `json:"steps"`
	}{run, steps}, "", "  ")
	if err != nil {
		return nil, err
	}
	return &sdk.ReadResourceResult{Contents: []*sdk.ResourceContents{{URI: uri, MIMEType: "application/json", Text: string(b)}}}, nil
}

func (t *tenant) readRunFile(ctx context.Context, uri, id, p string) (*sdk.ReadResourceResult, error) {
	st, err := t.records(ctx)
	if err != nil {
		return nil, err
	}
	files, err := st.Files(ctx, id, store.RoleOutput)
	if err != nil {
		return nil, sdk.ResourceNotFoundError(uri)
	}
	// The latest version of the path: the one the latest step produced.
	var found *store.File
	for i := range files {
		if files[i].Path == p && files[i].Kind == string(sandbox.KindFile) && (found == nil || files[i].Step >= found.Step) {
			found = &files[i]
		}
	}
	if found == nil {
		return nil, sdk.ResourceNotFoundError(uri)
	}
	return &sdk.ReadResourceResult{Contents: []*sdk.ResourceContents{resourceContents(uri, p, found.Content)}}, nil
}
