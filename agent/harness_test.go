package agent_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coderun/coderun/agent"
	"github.com/coderun/coderun/agent/agenttest"
	"github.com/coderun/coderun/llm"
	"github.com/coderun/coderun/llm/anthropic"
	"github.com/coderun/coderun/llm/llmtest"
	"github.com/coderun/coderun/llm/openai"
	"github.com/coderun/coderun/sandbox"
	"github.com/coderun/coderun/sandbox/linux"
	"github.com/coderun/coderun/sandbox/linux/linuxtest"
	"github.com/coderun/coderun/store"
	"github.com/coderun/coderun/store/sqlite"
)

// The agent is tested end to end: a scripted model behind the real OpenAI
// and Anthropic wire protocols (llmtest, through the official SDKs), the
// default policy and a real store. The loop's logic tests run the code
// nowhere: a scripted executor (agenttest) answers each execution, so
// they run without root. The tests in sandbox_test.go run code in real
// sandboxes, for what only a real sandbox shows; they skip without root.

var shared linuxtest.Shared

func TestMain(m *testing.M) {
	code := m.Run()
	shared.Close()
	os.Exit(code)
}

// runtime returns the shared sandbox runtime, or skips the test when the
// host cannot run sandboxes.
func runtime(t *testing.T) *linux.Runtime {
	t.Helper()
	return shared.Runtime(t)
}

// protocols runs f once per wire protocol.
func protocols(t *testing.T, f func(t *testing.T, protocol string)) {
	for _, p := range []string{llmtest.OpenAI, llmtest.Anthropic} {
		t.Run(p, func(t *testing.T) {
			t.Parallel()
			f(t, p)
		})
	}
}

func newProvider(t *testing.T, srv *llmtest.Server, protocol string) (llm.Provider, string) {
	t.Helper()
	cfg := llm.Config{Model: "test-model", APIKey: "sk-test", BaseURL: srv.BaseURL(protocol),
		Retry: llm.Retry{MaxAttempts: 3, BaseDelay: time.Millisecond, MaxDelay: 50 * time.Millisecond}}
	var p llm.Provider
	var err error
	if protocol == llmtest.OpenAI {
		cfg.Provider = llm.ProviderOpenAI
		p, err = openai.New(cfg)
	} else {
		cfg.Provider = llm.ProviderAnthropic
		p, err = anthropic.New(cfg)
	}
	if err != nil {
		t.Fatal(err)
	}
	return p, cfg.Spec()
}

type harness struct {
	t      *testing.T
	srv    *llmtest.Server
	store  store.Tenant
	cfg    agent.Config
	events []agent.Event
	mu     sync.Mutex
}

// newHarness scripts the model with turns and returns a harness whose
// config runs code in real sandboxes with a short time limit. It skips the
// test where sandboxes cannot run (without root): use it only for what a
// real sandbox must show.
func newHarness(t *testing.T, protocol string, turns ...llmtest.Turn) *harness {
	t.Helper()
	return harnessWith(t, protocol, agent.RuntimeBackend{Runtime: runtime(t)}, turns...)
}

// fakeHarness is a harness whose code runs nowhere: the executions are
// answered by b's script. The loop's logic tests use it; they run without
// root.
func fakeHarness(t *testing.T, protocol string, b *agenttest.Backend, turns ...llmtest.Turn) *harness {
	t.Helper()
	return harnessWith(t, protocol, b, turns...)
}

func harnessWith(t *testing.T, protocol string, backend agent.Backend, turns ...llmtest.Turn) *harness {
	t.Helper()
	srv := llmtest.NewServer(turns...)
	t.Cleanup(srv.Close)
	st := openStore(t, t.TempDir())
	p, spec := newProvider(t, srv, protocol)
	h := &harness{t: t, srv: srv, store: st}
	h.cfg = agent.Config{
		Model: p, ModelSpec: spec, Backend: backend, Store: st,
		Approval: agent.ApproveNone,
		Limits:   sandbox.Limits{WallTime: 10 * time.Second, CPUTime: 10 * time.Second},
		Observer: func(e agent.Event) {
			h.mu.Lock()
			h.events = append(h.events, e)
			h.mu.Unlock()
		},
	}
	return h
}

// openStore opens the store in dir, the default tenant's records, until
// the test ends.
func openStore(t *testing.T, dir string) store.Tenant {
	t.Helper()
	db, err := sqlite.Open(context.Background(), dir, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	tn, err := db.Tenant(store.DefaultTenant)
	if err != nil {
		t.Fatal(err)
	}
	return tn
}

func (h *harness) agent() *agent.Agent {
	h.t.Helper()
	a, err := agent.New(h.cfg)
	if err != nil {
		h.t.Fatal(err)
	}
	return a
}

func (h *harness) run(task string, files ...sandbox.File) *agent.Result {
	h.t.Helper()
	res, err := h.agent().Run(context.Background(), agent.Task{Prompt: task, Files: files})
	if err != nil {
		h.t.Fatal(err)
	}
	return res
}

// steps returns the run's stored steps as "kind" strings, and the steps.
func (h *harness) steps(runID string) ([]string, []store.Step) {
	h.t.Helper()
	steps, err := h.store.Steps(context.Background(), runID)
	if err != nil {
		h.t.Fatal(err)
	}
	kinds := make([]string, len(steps))
	for i, s := range steps {
		kinds[i] = string(s.Kind)
	}
	return kinds, steps
}

// wantKinds checks the run's step kinds in order.
func (h *harness) wantKinds(runID string, want ...store.StepKind) []store.Step {
	h.t.Helper()
	kinds, steps := h.steps(runID)
	w := make([]string, len(want))
	for i, k := range want {
		w[i] = string(k)
	}
	if strings.Join(kinds, " ") != strings.Join(w, " ") {
		h.t.Fatalf("steps:\n got  %s\n want %s", strings.Join(kinds, " "), strings.Join(w, " "))
	}
	return steps
}

// decode returns the payload of the n-th step of a kind (from 0).
func decode[T any](t *testing.T, steps []store.Step, kind store.StepKind, n int) T {
	t.Helper()
	var v T
	for _, s := range steps {
		if s.Kind != kind {
			continue
		}
		if n == 0 {
			if err := s.Decode(&v); err != nil {
				t.Fatal(err)
			}
			return v
		}
		n--
	}
	t.Fatalf("no %s step #%d", kind, n)
	return v
}

// sentMessages decodes the n-th request the model server received.
func (h *harness) sent(n int) llmtest.Sent {
	h.t.Helper()
	reqs := h.srv.Requests()
	if n >= len(reqs) {
		h.t.Fatalf("only %d requests, want #%d", len(reqs), n)
	}
	s, err := reqs[n].Decode()
	if err != nil {
		h.t.Fatal(err)
	}
	return s
}

func (h *harness) storedRun(id string) *store.Run {
	h.t.Helper()
	r, err := h.store.GetRun(context.Background(), id)
	if err != nil {
		h.t.Fatal(err)
	}
	return r
}

// conversationStoredOnce checks that the generation calls of a run store
// each message of the conversation once: every call's messages follow
// exactly the Prior messages the calls before it stored.
func conversationStoredOnce(t *testing.T, steps []store.Step) {
	t.Helper()
	n := 0
	for _, s := range steps {
		if s.Kind != agent.StepModelCall {
			continue
		}
		var mc agent.ModelCall
		if err := s.Decode(&mc); err != nil {
			t.Fatal(err)
		}
		if mc.Purpose != "generate" {
			continue
		}
		if mc.Prior != n || len(mc.Messages) == 0 {
			t.Errorf("step %d: a call after %d stored messages says it follows %d, and stores %d", s.Seq, n, mc.Prior, len(mc.Messages))
		}
		n = mc.Prior + len(mc.Messages)
	}
}

func lastUser(s llmtest.Sent) string {
	for i := len(s.Messages) - 1; i >= 0; i-- {
		if s.Messages[i].Role == llm.RoleUser || s.Messages[i].Role == llm.RoleTool {
			return s.Messages[i].Content
		}
	}
	return ""
}

func mustContain(t *testing.T, what, s string, subs ...string) {
	t.Helper()
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			t.Errorf("%s does not contain %q:\n%s", what, sub, s)
		}
	}
}

func fmtScore(s store.Scorecard) string { return fmt.Sprintf("%+v", s) }
