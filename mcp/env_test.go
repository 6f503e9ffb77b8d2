package mcp_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/coderun/coderun/agent"
	"github.com/coderun/coderun/llm"
	"github.com/coderun/coderun/llm/llmtest"
	"github.com/coderun/coderun/llm/openai"
	"github.com/coderun/coderun/mcp"
	"github.com/coderun/coderun/sandbox/linux"
	"github.com/coderun/coderun/server"
	"github.com/coderun/coderun/session"
	"github.com/coderun/coderun/store"
	"github.com/coderun/coderun/store/sqlite"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

var shared struct {
	once sync.Once
	rt   *linux.Runtime
	err  error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if shared.rt != nil {
		shared.rt.Close()
	}
	os.Exit(code)
}

// runtimeFor is the linux runtime the tests share; it needs root and
// Debian's IPython.
func runtimeFor(t *testing.T) *linux.Runtime {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("the MCP server's tests run code in the linux runtime, which needs root")
	}
	if err := linux.Probe().Require(nil); err != nil {
		t.Skip(err)
	}
	if _, err := os.Stat("/usr/lib/python3/dist-packages/IPython"); err != nil {
		t.Skip("Debian's python3-ipython is not installed")
	}
	shared.once.Do(func() { shared.rt, shared.err = linux.New(linux.Options{}) })
	if shared.err != nil {
		t.Fatal(shared.err)
	}
	return shared.rt
}

// env is an MCP service over the real runtime, with its records in a
// fresh store and its agent's model scripted (llmtest), served over
// Streamable HTTP behind a test authentication: the bearer token
// "<tenant>-key" is tenant.
type env struct {
	t     *testing.T
	svc   *mcp.Service
	db    *sqlite.DB
	model *llmtest.Server
	srv   *httptest.Server
}

func newEnv(t *testing.T, turns ...llmtest.Turn) *env {
	t.Helper()
	return newEnvWith(t, nil, turns...)
}

// newEnvWith is newEnv with the service's options changed by opt.
func newEnvWith(t *testing.T, opt func(*mcp.Options), turns ...llmtest.Turn) *env {
	t.Helper()
	rt := runtimeFor(t)
	mgr := session.NewManager(rt, session.ManagerOptions{})
	t.Cleanup(func() { mgr.Close() })
	db, err := sqlite.Open(context.Background(), t.TempDir(), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	model := llmtest.NewServer(turns...)
	t.Cleanup(model.Close)
	e := &env{t: t, db: db, model: model}
	opts := mcp.Options{
		Runtime:  rt,
		Sessions: mgr,
		Records: func(_ context.Context, tenant string) (store.Tenant, error) {
			return db.Tenant(tenant)
		},
		Agents: func(st store.Tenant, ap agent.Approver, mode agent.Mode, observe func(agent.Event)) (*agent.Agent, error) {
			p, err := openai.New(llm.Config{Model: "test-model", APIKey: "k", BaseURL: model.BaseURL(llmtest.OpenAI)})
			if err != nil {
				return nil, err
			}
			return agent.New(agent.Config{Model: p, ModelSpec: "openai:test-model", Store: st, Mode: mode,
				Backend: agent.RuntimeBackend{Runtime: rt}, Approval: agent.ApproveAsk, Approver: ap, Observer: observe})
		},
		Version: "test",
	}
	if opt != nil {
		opt(&opts)
	}
	e.svc, err = mcp.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	e.srv = httptest.NewServer(testAuth(e.svc.Handler(mcp.HTTPOptions{AllowedOrigins: []string{"https://allowed.example"}})))
	t.Cleanup(e.srv.Close)
	return e
}

// testAuth stands in for the server's authentication: a bearer token
// "<tenant>-key" authenticates as tenant; no token, as no one.
func testAuth(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok {
			tenant, ok := strings.CutSuffix(tok, "-key")
			if !ok {
				http.Error(w, "bad key", http.StatusUnauthorized)
				return
			}
			r = r.WithContext(server.WithTenant(r.Context(), tenant))
		}
		h.ServeHTTP(w, r)
	})
}

// bearer adds an Authorization header to every request.
type bearer struct {
	token string
	base  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.base.RoundTrip(r)
}

// connect opens an MCP session as tenant with the Go SDK's client.
func (e *env) connect(tenant string, opts *sdk.ClientOptions) *sdk.ClientSession {
	e.t.Helper()
	c := sdk.NewClient(&sdk.Implementation{Name: "go-test-client", Version: "1"}, opts)
	cs, err := c.Connect(context.Background(), &sdk.StreamableClientTransport{Endpoint: e.srv.URL,
		HTTPClient: &http.Client{Transport: bearer{tenant + "-key", http.DefaultTransport}}}, nil)
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { cs.Close() })
	return cs
}

// call calls a tool and fails the test on a protocol error.
func call(t *testing.T, cs *sdk.ClientSession, name string, args map[string]any) *sdk.CallToolResult {
	t.Helper()
	r, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return r
}

// text is a result's text content.
func text(r *sdk.CallToolResult) string {
	var b strings.Builder
	for _, c := range r.Content {
		if tc, ok := c.(*sdk.TextContent); ok {
			b.WriteString(tc.Text)
			b.WriteString("\n")
		}
	}
	return b.String()
}

// structured is a result's structured content as a map.
func structured(t *testing.T, r *sdk.CallToolResult) map[string]any {
	t.Helper()
	m, ok := r.StructuredContent.(map[string]any)
	if !ok {
		t.Fatalf("structured content %T: %v", r.StructuredContent, r.StructuredContent)
	}
	return m
}
