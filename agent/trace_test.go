package agent_test

import (
	"context"
	"strings"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/coderun/coderun/agent"
	"github.com/coderun/coderun/agent/agenttest"
	"github.com/coderun/coderun/llm/llmtest"
	"github.com/coderun/coderun/store"
)

func attrs(s tracetest.SpanStub) map[string]any {
	m := map[string]any{}
	for _, kv := range s.Attributes {
		m[string(kv.Key)] = kv.Value.AsInterface()
	}
	return m
}

func TestSpansFollowGenAIConventions(t *testing.T) {
	protocols(t, func(t *testing.T, protocol string) {
		exp := tracetest.NewInMemoryExporter()
		tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
		defer tp.Shutdown(context.Background())
		h := fakeHarness(t, protocol, agenttest.NewBackend(
			agenttest.On("undefined_name", agenttest.Raise("NameError", "name 'undefined_name' is not defined")),
			agenttest.On("41 + 1", agenttest.Print("answer 42\n"))),
			llmtest.RunCode("call_7", "python", "print(undefined_name)\n").WithUsage(50, 10),
			llmtest.RunCode("call_8", "python", "print('answer', 41 + 1)\n").WithUsage(70, 10),
			llmtest.Reply("The answer is 42.").WithUsage(30, 5),
		)
		h.cfg.Tracer = tp
		res := h.run("Add 41 and 1.")
		if res.Outcome != agent.OutcomeAnswered {
			t.Fatalf("outcome %s", res.Outcome)
		}
		spans := exp.GetSpans()
		var root tracetest.SpanStub
		var names []string
		for _, s := range spans {
			names = append(names, s.Name)
			if s.Name == "invoke_agent coderun" {
				root = s
			}
		}
		want := []string{"chat test-model", "execute_tool run_code", "chat test-model", "execute_tool run_code", "chat test-model", "invoke_agent coderun"}
		if len(names) != len(want) {
			t.Fatalf("spans %v, want %v", names, want)
		}
		for i := range want {
			if names[i] != want[i] {
				t.Fatalf("spans %v, want %v", names, want)
			}
		}
		ra := attrs(root)
		if ra["gen_ai.operation.name"] != "invoke_agent" || ra["gen_ai.conversation.id"] != res.RunID ||
			ra["gen_ai.provider.name"] != protocol || ra["coderun.outcome"] != "answered" {
			t.Errorf("invoke_agent attributes: %v", ra)
		}
		var inTokens int64
		for _, s := range spans {
			a := attrs(s)
			if s.Name == "invoke_agent coderun" {
				continue
			}
			if s.Parent.SpanID() != root.SpanContext.SpanID() {
				t.Errorf("%s is not a child of invoke_agent", s.Name)
			}
			switch a["gen_ai.operation.name"] {
			case "chat":
				inTokens += a["gen_ai.usage.input_tokens"].(int64)
				if a["gen_ai.request.model"] != "test-model" || a["gen_ai.response.model"] != "test-model" {
					t.Errorf("chat attributes: %v", a)
				}
			case "execute_tool":
				if a["gen_ai.tool.name"] != "run_code" || a["gen_ai.tool.type"] != "function" {
					t.Errorf("execute_tool attributes: %v", a)
				}
			default:
				t.Errorf("span %s without a GenAI operation: %v", s.Name, a)
			}
		}
		if inTokens != 150 {
			t.Errorf("input tokens over chat spans: %d, want 150", inTokens)
		}
		first := attrs(spans[1])
		if first["gen_ai.tool.call.id"] != "call_7" || first["error.type"] != "NameError" || spans[1].Status.Code.String() != "Error" {
			t.Errorf("failed execute_tool span: %v %v", first, spans[1].Status)
		}
	})
}

func TestTokenBudget(t *testing.T) {
	protocols(t, func(t *testing.T, protocol string) {
		h := fakeHarness(t, protocol, agenttest.NewBackend(agenttest.On("nope", agenttest.Raise("NameError", "name 'nope' is not defined"))),
			llmtest.RunCode("c1", "python", "print(nope)\n").WithUsage(900, 200),
			llmtest.Reply("must not be asked"),
		)
		h.cfg.MaxTokens = 1000
		res := h.run("Anything.")
		if res.Outcome != agent.OutcomeTokenBudget || res.Status != store.StatusFailed {
			t.Fatalf("outcome %s", res.Outcome)
		}
		if n := len(h.srv.Requests()); n != 1 {
			t.Errorf("%d model calls after the budget was spent", n-1)
		}
		if res.Failure.Attempts != 1 || !strings.Contains(res.Failure.Error, "NameError") {
			t.Errorf("failure: %+v", res.Failure)
		}
	})
}

func TestCancelLeavesConsistentRecord(t *testing.T) {
	protocols(t, func(t *testing.T, protocol string) {
		h := fakeHarness(t, protocol, agenttest.NewBackend(agenttest.On("time.sleep(30)", agenttest.Result{Stdout: "working\n", UntilCancelled: true})),
			llmtest.RunCode("c1", "python", "import time\nprint('working', flush=True)\ntime.sleep(30)\n"),
		)
		ctx, cancel := context.WithCancel(context.Background())
		h.cfg.Observer = func(e agent.Event) {
			if e.Step.Kind == agent.StepReview {
				go func() { time.Sleep(300 * time.Millisecond); cancel() }()
			}
		}
		a := h.agent()
		start := time.Now()
		res, err := a.Run(ctx, agent.Task{Prompt: "Work for a while."})
		if err != nil {
			t.Fatal(err)
		}
		if time.Since(start) > 10*time.Second {
			t.Errorf("cancellation took %s", time.Since(start))
		}
		if res.Status != store.StatusCancelled || res.Outcome != agent.OutcomeCancelled {
			t.Fatalf("status %s outcome %s", res.Status, res.Outcome)
		}
		// On a loaded machine the cancellation may come before the sandbox
		// started; then no execution is recorded. Either way the record
		// ends with the failure step.
		kinds, steps := h.steps(res.RunID)
		got := strings.Join(kinds, " ")
		if got != "start model_call code review execution failure" && got != "start model_call code review failure" {
			t.Fatalf("steps: %s", got)
		}
		if len(kinds) == 6 {
			if ex := decode[agent.ExecutionRecord](t, steps, agent.StepExecution, 0); ex.Reason != "killed" {
				t.Errorf("execution: %+v", ex)
			}
		}
		if f := decode[agent.FailureReport](t, steps, agent.StepFailure, 0); f.Outcome != agent.OutcomeCancelled {
			t.Errorf("failure: %+v", f)
		}
		run := h.storedRun(res.RunID)
		if run.Status != store.StatusCancelled || run.Owner != "" || run.Steps != len(steps) {
			t.Errorf("stored run: %+v", run)
		}
		if items, _ := h.store.Reviews(context.Background(), res.RunID, true); len(items) != 0 {
			t.Errorf("a cancelled run went to the review queue: %+v", items)
		}
	})
}
