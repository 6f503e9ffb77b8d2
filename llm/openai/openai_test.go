package openai_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/coderun/coderun/llm"
	"github.com/coderun/coderun/llm/llmtest"
	"github.com/coderun/coderun/llm/openai"
)

func newProvider(cfg llm.Config) (llm.Provider, error) { return openai.New(cfg) }

func TestSuite(t *testing.T) {
	for _, name := range []string{llm.ProviderOpenAI, llm.ProviderOllama, llm.ProviderOpenAICompatible} {
		t.Run(name, func(t *testing.T) {
			llmtest.RunSuite(t, llmtest.Backend{Provider: name, Protocol: llmtest.OpenAI, New: newProvider})
		})
	}
}

func newTest(t *testing.T, provider string, turns ...llmtest.Turn) (*llmtest.Server, *openai.Provider) {
	t.Helper()
	srv := llmtest.NewServer(turns...)
	t.Cleanup(srv.Close)
	p, err := openai.New(llm.Config{
		Provider: provider,
		Model:    "gpt-test",
		APIKey:   "sk-test-key",
		BaseURL:  srv.BaseURL(llmtest.OpenAI),
		Retry:    llm.Retry{MaxAttempts: 2, BaseDelay: time.Millisecond},
	})
	if err != nil {
		t.Fatal(err)
	}
	return srv, p
}

// The wire shape of a tool round trip, checked on the raw JSON.
func TestWireShape(t *testing.T) {
	srv, p := newTest(t, llm.ProviderOpenAI,
		llmtest.RunCode("call_1", "python", "print(1)"),
		llmtest.Reply("done"))
	tools := []llm.Tool{llm.RunCodeTool()}
	temp := 0.0
	msgs := []llm.Message{llm.System("sys"), llm.User("go")}
	resp, err := p.Chat(context.Background(), llm.Request{Messages: msgs, Tools: tools, Temperature: &temp})
	if err != nil {
		t.Fatal(err)
	}
	msgs = append(msgs, resp.Message(), llm.ToolResult("call_1", "1\n", false))
	if _, err := p.Chat(context.Background(), llm.Request{Messages: msgs, Tools: tools, MaxTokens: 100}); err != nil {
		t.Fatal(err)
	}
	reqs := srv.Requests()
	if got := reqs[0].Header.Get("Authorization"); got != "Bearer sk-test-key" {
		t.Errorf("Authorization = %q", got)
	}
	first := reqs[0].JSON()
	tool := first["tools"].([]any)[0].(map[string]any)
	fn := tool["function"].(map[string]any)
	if tool["type"] != "function" || fn["name"] != "run_code" || fn["parameters"].(map[string]any)["type"] != "object" {
		t.Errorf("tool sent = %v", tool)
	}
	if first["temperature"] != 0.0 || first["max_completion_tokens"] != float64(llm.DefaultMaxTokens) || first["max_tokens"] != nil {
		t.Errorf("temperature %v, max_completion_tokens %v, max_tokens %v", first["temperature"], first["max_completion_tokens"], first["max_tokens"])
	}
	second := reqs[1].JSON()
	if second["max_completion_tokens"] != 100.0 {
		t.Errorf("max_completion_tokens = %v, want 100", second["max_completion_tokens"])
	}
	wire := second["messages"].([]any)
	asst := wire[2].(map[string]any)
	call := asst["tool_calls"].([]any)[0].(map[string]any)
	if asst["role"] != "assistant" || call["id"] != "call_1" || call["type"] != "function" ||
		call["function"].(map[string]any)["arguments"] != `{"language":"python","code":"print(1)"}` {
		t.Errorf("assistant message sent = %v", asst)
	}
	res := wire[3].(map[string]any)
	if res["role"] != "tool" || res["tool_call_id"] != "call_1" || res["content"] != "1\n" {
		t.Errorf("tool message sent = %v", res)
	}
}

// Compatible servers get max_tokens, and Ollama gets no key at all.
func TestCompatibleServers(t *testing.T) {
	srv, p := newTest(t, llm.ProviderOpenAICompatible, llmtest.Reply("hi"))
	if _, err := p.Chat(context.Background(), llm.Request{Messages: []llm.Message{llm.User("x")}}); err != nil {
		t.Fatal(err)
	}
	req, _ := srv.Last()
	if body := req.JSON(); body["max_tokens"] != float64(llm.DefaultMaxTokens) || body["max_completion_tokens"] != nil {
		t.Errorf("compatible server got max_tokens %v, max_completion_tokens %v", body["max_tokens"], body["max_completion_tokens"])
	}

	srv = llmtest.NewServer(llmtest.Reply("hi"))
	defer srv.Close()
	o, err := openai.New(llm.Config{Provider: llm.ProviderOllama, Model: "qwen2.5-coder:7b", BaseURL: srv.BaseURL(llmtest.OpenAI)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := o.Chat(context.Background(), llm.Request{Messages: []llm.Message{llm.User("x")}}); err != nil {
		t.Fatal(err)
	}
	req, _ = srv.Last()
	if body := req.JSON(); body["max_tokens"] != float64(llm.DefaultMaxTokens) || body["max_completion_tokens"] != nil {
		t.Errorf("ollama got max_tokens %v, max_completion_tokens %v", body["max_tokens"], body["max_completion_tokens"])
	}
	if a := req.Header.Get("Authorization"); a != "" {
		t.Errorf("ollama request carries Authorization %q", a)
	}
	if req.JSON()["model"] != "qwen2.5-coder:7b" {
		t.Errorf("model sent = %v", req.JSON()["model"])
	}
}

// Ollama reports finish_reason "stop" with tool calls; the call still wins.
func TestToolCallsWithStopFinish(t *testing.T) {
	_, p := newTest(t, llm.ProviderOllama, llmtest.RunCode("", "bash", "ls"))
	resp, err := p.Chat(context.Background(), llm.Request{Messages: []llm.Message{llm.User("x")}, Tools: []llm.Tool{llm.RunCodeTool()}})
	if err != nil {
		t.Fatal(err)
	}
	if resp.StopReason != llm.StopToolUse || resp.ToolCalls[0].ID == "" {
		t.Errorf("stop %q, call %+v", resp.StopReason, resp.ToolCalls[0])
	}
}

func TestNewValidates(t *testing.T) {
	cases := []struct {
		cfg  llm.Config
		want string
	}{
		{llm.Config{Model: "gpt-4.1-mini"}, "no API key"},
		{llm.Config{Provider: "openai"}, "no model"},
		{llm.Config{Provider: "openai-compatible", Model: "m"}, "no base URL"},
		{llm.Config{Provider: "anthropic", Model: "m", APIKey: "k"}, "does not speak"},
		{llm.Config{Provider: "ollama", Model: "m", BaseURL: "localhost:11434"}, "base URL"},
	}
	for _, c := range cases {
		_, err := openai.New(c.cfg)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("New(%v) = %v, want error containing %q", c.cfg, err, c.want)
		}
	}
	if _, err := openai.New(llm.Config{Model: "gpt-4.1-mini"}); !errors.Is(err, llm.ErrAuth) {
		t.Errorf("missing key: %v, want ErrAuth", err)
	}
	p, err := openai.New(llm.Config{Provider: "ollama", Model: "m"})
	if err != nil || p == nil {
		t.Errorf("ollama with defaults: %v", err)
	}
}

// A model without tool calling answers in text; its code is in the fences.
func Example() {
	srv := llmtest.NewServer(
		llmtest.Reply("Here you go:\n```py\nprint(6*7)\n```").WithUsage(21, 9),
	)
	defer srv.Close()

	p, err := openai.New(llm.Config{
		Provider: llm.ProviderOllama,
		Model:    "qwen2.5-coder",
		BaseURL:  srv.BaseURL(llmtest.OpenAI), // default: http://localhost:11434/v1
	})
	if err != nil {
		panic(err)
	}
	resp, err := p.Chat(context.Background(), llm.Request{
		Messages: []llm.Message{llm.User("What is 6*7? Answer with Python code.")},
	})
	if err != nil {
		panic(err)
	}
	code, ok := llm.SelectCode(llm.ExtractCode(resp.Text, llm.Python))
	fmt.Println(ok, code.Language)
	fmt.Print(code.Code)
	fmt.Println(resp.Usage.InputTokens, resp.Usage.OutputTokens, resp.StopReason)
	// Output:
	// true python
	// print(6*7)
	// 21 9 end
}

// The run_code tool round trip: the model calls, the agent runs the code and
// answers with the result.
func Example_toolCall() {
	srv := llmtest.NewServer(
		llmtest.RunCode("call_1", "python", "print(6*7)"),
		llmtest.Reply("6*7 is 42."),
	)
	defer srv.Close()

	p, err := openai.New(llm.Config{Model: "gpt-4.1-mini", APIKey: "sk-example", BaseURL: srv.BaseURL(llmtest.OpenAI)})
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	tools := []llm.Tool{llm.RunCodeTool()}
	msgs := []llm.Message{llm.User("What is 6*7?")}
	for {
		resp, err := p.Chat(ctx, llm.Request{Messages: msgs, Tools: tools})
		if err != nil {
			panic(err)
		}
		msgs = append(msgs, resp.Message())
		if len(resp.ToolCalls) == 0 {
			fmt.Println(resp.Text)
			return
		}
		for _, call := range resp.ToolCalls {
			args, _ := call.RunCode()
			fmt.Printf("run %s: %s\n", args.Language, args.Code)
			msgs = append(msgs, llm.ToolResult(call.ID, "42\n", false)) // the sandbox's output
		}
	}
	// Output:
	// run python: print(6*7)
	// 6*7 is 42.
}

// OpenAI gets strict tools and one tool call per turn; compatible servers
// get parallel_tool_calls but not strict; o-series models, which refuse
// parallel_tool_calls, do not get it; a request without tools gets neither.
// A turn with several calls comes back whole.
func TestToolDeclaration(t *testing.T) {
	twoCalls := llmtest.Turn{ToolCalls: []llmtest.Call{
		{ID: "call_a", Name: "run_code", Arguments: `{"language":"python","code":"print(1)"}`},
		{ID: "call_b", Name: "run_code", Arguments: `{"language":"python","code":"print(2)"}`},
	}}
	loose := llm.Tool{Name: "note", Parameters: map[string]any{"type": "object",
		"properties": map[string]any{"text": map[string]any{"type": "string"}}}}
	tools := []llm.Tool{llm.RunCodeTool(), loose}
	cases := []struct {
		provider, model string
		strict          bool // run_code declared strict
		parallel        any  // parallel_tool_calls sent
	}{
		{llm.ProviderOpenAI, "gpt-4.1-mini", true, false},
		{llm.ProviderOpenAI, "o4-mini", true, nil},
		{llm.ProviderOpenAI, "o3", true, nil},
		{llm.ProviderOllama, "o3-local", false, false},
		{llm.ProviderOpenAICompatible, "qwen", false, false},
	}
	for _, c := range cases {
		srv := llmtest.NewServer(twoCalls, llmtest.Reply("plain"))
		defer srv.Close()
		p, err := openai.New(llm.Config{Provider: c.provider, Model: c.model, APIKey: "sk-test-key",
			BaseURL: srv.BaseURL(llmtest.OpenAI), Retry: llm.NoRetry()})
		if err != nil {
			t.Fatal(err)
		}
		resp, err := p.Chat(context.Background(), llm.Request{Messages: []llm.Message{llm.User("go")}, Tools: tools})
		if err != nil {
			t.Fatalf("%s:%s: %v", c.provider, c.model, err)
		}
		if len(resp.ToolCalls) != 2 || resp.ToolCalls[0].ID != "call_a" || resp.ToolCalls[1].ID != "call_b" {
			t.Errorf("%s:%s: tool calls = %+v, want call_a and call_b", c.provider, c.model, resp.ToolCalls)
		}
		body := srv.Requests()[0].JSON()
		if body["parallel_tool_calls"] != c.parallel {
			t.Errorf("%s:%s: parallel_tool_calls = %v, want %v", c.provider, c.model, body["parallel_tool_calls"], c.parallel)
		}
		sent := body["tools"].([]any)
		runCode := sent[0].(map[string]any)["function"].(map[string]any)
		if strict, _ := runCode["strict"].(bool); strict != c.strict {
			t.Errorf("%s:%s: run_code strict = %v, want %v", c.provider, c.model, runCode["strict"], c.strict)
		}
		if note := sent[1].(map[string]any)["function"].(map[string]any); note["strict"] != nil {
			t.Errorf("%s:%s: a tool with optional properties sent strict = %v", c.provider, c.model, note["strict"])
		}

		if _, err := p.Chat(context.Background(), llm.Request{Messages: []llm.Message{llm.User("hi")}}); err != nil {
			t.Fatal(err)
		}
		if body := srv.Requests()[1].JSON(); body["parallel_tool_calls"] != nil || body["tools"] != nil {
			t.Errorf("%s:%s: request without tools sent parallel_tool_calls %v, tools %v", c.provider, c.model, body["parallel_tool_calls"], body["tools"])
		}
	}
}
