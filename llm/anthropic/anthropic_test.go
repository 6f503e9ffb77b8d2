package anthropic_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coderun/coderun/llm"
	"github.com/coderun/coderun/llm/anthropic"
	"github.com/coderun/coderun/llm/llmtest"
)

func TestSuite(t *testing.T) {
	llmtest.RunSuite(t, llmtest.Backend{
		Provider: llm.ProviderAnthropic,
		Protocol: llmtest.Anthropic,
		New:      func(cfg llm.Config) (llm.Provider, error) { return anthropic.New(cfg) },
	})
}

func newTest(t *testing.T, turns ...llmtest.Turn) (*llmtest.Server, *anthropic.Provider) {
	t.Helper()
	srv := llmtest.NewServer(turns...)
	t.Cleanup(srv.Close)
	p, err := anthropic.New(llm.Config{
		Model:   "claude-test",
		APIKey:  "sk-ant-test-key",
		BaseURL: srv.BaseURL(llmtest.Anthropic),
		Retry:   llm.Retry{MaxAttempts: 3, BaseDelay: time.Millisecond},
	})
	if err != nil {
		t.Fatal(err)
	}
	return srv, p
}

// The Messages wire shape: system apart, tool_use blocks echoed, tool
// results of one turn grouped in one user message with is_error.
func TestWireShape(t *testing.T) {
	srv, p := newTest(t,
		llmtest.Turn{Text: "Two things.", ToolCalls: []llmtest.Call{
			{ID: "toolu_1", Name: "run_code", Arguments: `{"language":"python","code":"print(1)"}`},
			{ID: "toolu_2", Name: "run_code", Arguments: `{"language":"bash","code":"false"}`},
		}},
		llmtest.Reply("done"))
	tools := []llm.Tool{llm.RunCodeTool()}
	temp := 0.5
	msgs := []llm.Message{llm.System("be brief"), llm.System("use python"), llm.User("go")}
	resp, err := p.Chat(context.Background(), llm.Request{Messages: msgs, Tools: tools, Temperature: &temp})
	if err != nil {
		t.Fatal(err)
	}
	msgs = append(msgs, resp.Message(),
		llm.ToolResult("toolu_1", "1\n", false),
		llm.ToolResult("toolu_2", "exit status 1", true))
	if _, err := p.Chat(context.Background(), llm.Request{Messages: msgs, Tools: tools}); err != nil {
		t.Fatal(err)
	}
	reqs := srv.Requests()
	if reqs[0].Header.Get("Anthropic-Version") == "" {
		t.Error("no anthropic-version header")
	}
	if a, k := reqs[0].Header.Get("Authorization"), reqs[0].Header.Get("X-Api-Key"); a != "Bearer sk-ant-test-key" && k != "sk-ant-test-key" {
		t.Errorf("key not sent: Authorization %q, X-Api-Key %q", a, k)
	}
	first := reqs[0].JSON()
	system := first["system"].([]any)
	if len(system) != 2 || system[0].(map[string]any)["text"] != "be brief" {
		t.Errorf("system = %v", system)
	}
	if first["temperature"] != 0.5 || first["max_tokens"] != float64(llm.DefaultMaxTokens) {
		t.Errorf("temperature %v max_tokens %v", first["temperature"], first["max_tokens"])
	}
	tool := first["tools"].([]any)[0].(map[string]any)
	schema := tool["input_schema"].(map[string]any)
	if tool["name"] != "run_code" || schema["type"] != "object" || schema["additionalProperties"] != false ||
		len(schema["required"].([]any)) != 2 || schema["properties"].(map[string]any)["code"] == nil {
		t.Errorf("tool sent = %v", tool)
	}

	wire := reqs[1].JSON()["messages"].([]any)
	if len(wire) != 3 {
		t.Fatalf("messages sent = %v, want user, assistant, user", wire)
	}
	asst := wire[1].(map[string]any)
	blocks := asst["content"].([]any)
	if asst["role"] != "assistant" || len(blocks) != 3 ||
		blocks[0].(map[string]any)["type"] != "text" ||
		blocks[1].(map[string]any)["type"] != "tool_use" || blocks[1].(map[string]any)["id"] != "toolu_1" ||
		blocks[1].(map[string]any)["input"].(map[string]any)["code"] != "print(1)" {
		t.Errorf("assistant turn sent = %v", asst)
	}
	results := wire[2].(map[string]any)
	rb := results["content"].([]any)
	if results["role"] != "user" || len(rb) != 2 {
		t.Fatalf("tool results sent = %v, want one user message with two blocks", results)
	}
	r1, r2 := rb[0].(map[string]any), rb[1].(map[string]any)
	if r1["type"] != "tool_result" || r1["tool_use_id"] != "toolu_1" || r1["is_error"] != nil {
		t.Errorf("first result = %v", r1)
	}
	if r2["tool_use_id"] != "toolu_2" || r2["is_error"] != true {
		t.Errorf("second result = %v, want is_error true", r2)
	}
}

// Anthropic's 529 "overloaded" is retried like a 5xx.
func TestOverloadedRetried(t *testing.T) {
	_, p := newTest(t, llmtest.Fail(529, "Overloaded"), llmtest.Reply("ok"))
	resp, err := p.Chat(context.Background(), llm.Request{Messages: []llm.Message{llm.User("x")}})
	if err != nil || resp.Attempts != 2 {
		t.Fatalf("resp %+v err %v, want success on attempt 2", resp, err)
	}
}

// 403 (permission_error) is an auth failure too.
func TestForbidden(t *testing.T) {
	_, p := newTest(t, llmtest.Fail(http.StatusForbidden, "not allowed"))
	_, err := p.Chat(context.Background(), llm.Request{Messages: []llm.Message{llm.User("x")}})
	if !errors.Is(err, llm.ErrAuth) {
		t.Fatalf("err = %v, want ErrAuth", err)
	}
}

// Tool input that is not an object (a proxy's mangling) is a malformed call.
func TestToolInputNotObject(t *testing.T) {
	_, p := newTest(t, llmtest.CallTool("toolu_1", "run_code", `"print(1)"`))
	_, err := p.Chat(context.Background(), llm.Request{Messages: []llm.Message{llm.User("x")}, Tools: []llm.Tool{llm.RunCodeTool()}})
	if !errors.Is(err, llm.ErrMalformedToolCall) || !strings.Contains(err.Error(), "want a JSON object") {
		t.Fatalf("err = %v, want ErrMalformedToolCall", err)
	}
}

func TestNewValidates(t *testing.T) {
	if _, err := anthropic.New(llm.Config{Model: "claude-sonnet-4-5"}); !errors.Is(err, llm.ErrAuth) {
		t.Errorf("missing key: %v, want ErrAuth", err)
	}
	if _, err := anthropic.New(llm.Config{Provider: "openai", Model: "m", APIKey: "k"}); err == nil {
		t.Error("provider openai accepted")
	}
	if _, err := anthropic.New(llm.Config{APIKey: "k"}); err == nil {
		t.Error("empty model accepted")
	}
	// Large max_tokens does not trip the SDK's streaming guard.
	_, p := newTest(t, llmtest.Reply("ok"))
	if _, err := p.Chat(context.Background(), llm.Request{Messages: []llm.Message{llm.User("x")}, MaxTokens: 64000}); err != nil {
		t.Errorf("MaxTokens 64000: %v", err)
	}
}

func Example() {
	srv := llmtest.NewServer(llmtest.RunCode("toolu_1", "bash", "echo hi").WithUsage(40, 15))
	defer srv.Close()

	p, err := anthropic.New(llm.Config{
		Model:   "claude-sonnet-4-5",
		APIKey:  "sk-ant-example",
		BaseURL: srv.BaseURL(llmtest.Anthropic), // default: https://api.anthropic.com
	})
	if err != nil {
		panic(err)
	}
	resp, err := p.Chat(context.Background(), llm.Request{
		Messages: []llm.Message{llm.System("Use the run_code tool."), llm.User("Say hi from a shell.")},
		Tools:    []llm.Tool{llm.RunCodeTool()},
	})
	if err != nil {
		panic(err)
	}
	args, err := resp.ToolCalls[0].RunCode()
	fmt.Println(resp.StopReason, args.Language, args.Code, err)
	fmt.Println(resp.Usage.InputTokens, resp.Usage.OutputTokens)
	// Output:
	// tool_use bash echo hi <nil>
	// 40 15
}

// A program that prints nothing gives an empty result, sent without a text
// block (the API rejects empty ones).
func TestEmptyToolResult(t *testing.T) {
	srv, p := newTest(t, llmtest.RunCode("toolu_1", "python", "x = 1"), llmtest.Reply("ok"))
	tools := []llm.Tool{llm.RunCodeTool()}
	msgs := []llm.Message{llm.User("x")}
	resp, err := p.Chat(context.Background(), llm.Request{Messages: msgs, Tools: tools})
	if err != nil {
		t.Fatal(err)
	}
	msgs = append(msgs, resp.Message(), llm.ToolResult("toolu_1", "", false))
	if _, err := p.Chat(context.Background(), llm.Request{Messages: msgs, Tools: tools}); err != nil {
		t.Fatal(err)
	}
	req, _ := srv.Last()
	result := req.JSON()["messages"].([]any)[2].(map[string]any)["content"].([]any)[0].(map[string]any)
	if result["type"] != "tool_result" || result["content"] != nil {
		t.Errorf("empty result sent = %v", result)
	}
}

// A request with tools asks for one tool call per turn; a turn that makes
// several anyway comes back whole, for the caller to answer each. A request
// without tools names no tool_choice (the API rejects one without tools).
func TestOneToolCallPerTurn(t *testing.T) {
	srv, p := newTest(t,
		llmtest.Turn{ToolCalls: []llmtest.Call{
			{ID: "toolu_1", Name: "run_code", Arguments: `{"language":"python","code":"print(1)"}`},
			{ID: "toolu_2", Name: "run_code", Arguments: `{"language":"python","code":"print(2)"}`},
		}},
		llmtest.Reply("plain"))
	resp, err := p.Chat(context.Background(), llm.Request{Messages: []llm.Message{llm.User("go")}, Tools: []llm.Tool{llm.RunCodeTool()}})
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.ToolCalls) != 2 || resp.ToolCalls[0].ID != "toolu_1" || resp.ToolCalls[1].ID != "toolu_2" {
		t.Errorf("tool calls = %+v, want toolu_1 and toolu_2", resp.ToolCalls)
	}
	body := srv.Requests()[0].JSON()
	choice, _ := body["tool_choice"].(map[string]any)
	if choice["type"] != "auto" || choice["disable_parallel_tool_use"] != true {
		t.Errorf("tool_choice = %v, want auto with disable_parallel_tool_use", body["tool_choice"])
	}
	tool := body["tools"].([]any)[0].(map[string]any)
	if _, ok := tool["strict"]; ok {
		t.Errorf("tool sent with strict: %v", tool)
	}

	if _, err := p.Chat(context.Background(), llm.Request{Messages: []llm.Message{llm.User("hi")}}); err != nil {
		t.Fatal(err)
	}
	if body := srv.Requests()[1].JSON(); body["tool_choice"] != nil {
		t.Errorf("tool_choice without tools = %v", body["tool_choice"])
	}
}
