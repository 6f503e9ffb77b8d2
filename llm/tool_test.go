package llm_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/coderun/coderun/llm"
)

func TestParseToolCall(t *testing.T) {
	tools := []llm.Tool{llm.RunCodeTool()}
	cases := []struct {
		args string
		err  string // "" means valid
	}{
		{`{"language":"python","code":"print(1)"}`, ""},
		{` {"language":"py","code":"x"} `, ""},
		{`{"language":"python","code":"print(1)`, "not valid JSON"},
		{`{"language":"python"}`, `missing argument "code"`},
		{`{"code":"x"}`, `missing argument "language"`},
		{`{"language":"python","code":5}`, `argument "code" is a JSON integer, want string`},
		{`{"language":["python"],"code":"x"}`, `argument "language" is a JSON array, want string`},
		{`"print(1)"`, "arguments are a JSON string, want a JSON object"},
		{`[1]`, "arguments are a JSON array, want a JSON object"},
		{`null`, "arguments are null"},
		{``, `missing argument "language"`},
	}
	for _, c := range cases {
		call, err := llm.ParseToolCall(llm.ToolCall{ID: "c1", Name: "run_code", Arguments: c.args}, tools)
		if c.err == "" {
			if err != nil || call.Args == nil {
				t.Errorf("%s: %v, Args %v", c.args, err, call.Args)
			}
			continue
		}
		var tce *llm.ToolCallError
		if !errors.As(err, &tce) || !errors.Is(err, llm.ErrMalformedToolCall) || !strings.Contains(err.Error(), c.err) {
			t.Errorf("%s: err = %v, want a ToolCallError containing %q", c.args, err, c.err)
			continue
		}
		if tce.ID != "c1" || tce.Arguments != c.args {
			t.Errorf("%s: ToolCallError = %+v", c.args, tce)
		}
	}
	if _, err := llm.ParseToolCall(llm.ToolCall{ID: "c2", Name: "shell", Arguments: `{}`}, tools); err == nil ||
		!strings.Contains(err.Error(), "unknown tool (available: run_code)") {
		t.Errorf("unknown tool: %v", err)
	}
}

func TestParseToolCallsJoins(t *testing.T) {
	calls := []llm.ToolCall{
		{ID: "a", Name: "run_code", Arguments: `{"language":"python","code":"1"}`},
		{ID: "b", Name: "run_code", Arguments: `{`},
		{ID: "c", Name: "nope", Arguments: `{}`},
	}
	calls, err := llm.ParseToolCalls(calls, []llm.Tool{llm.RunCodeTool()})
	bad := llm.ToolCallErrors(fmt.Errorf("wrapped: %w", err))
	if len(bad) != 2 || bad[0].ID != "b" || bad[1].ID != "c" {
		t.Fatalf("ToolCallErrors = %+v", bad)
	}
	if calls[0].Args["code"] != "1" || calls[1].Args != nil {
		t.Errorf("Args = %v, %v", calls[0].Args, calls[1].Args)
	}
	if llm.ToolCallErrors(nil) != nil || llm.ToolCallErrors(errors.New("x")) != nil {
		t.Error("ToolCallErrors of non tool-call errors")
	}
}

func TestRunCode(t *testing.T) {
	cases := []struct {
		args string
		want llm.RunCodeArgs
		err  string
	}{
		{`{"language":"python","code":"print(1)"}`, llm.RunCodeArgs{Language: "python", Code: "print(1)"}, ""},
		{`{"language":"Py","code":"x"}`, llm.RunCodeArgs{Language: "python", Code: "x"}, ""},
		{`{"language":"sh","code":"ls"}`, llm.RunCodeArgs{Language: "bash", Code: "ls"}, ""},
		{`{"language":"node","code":"1"}`, llm.RunCodeArgs{Language: "node", Code: "1"}, ""},
		{`{"language":"ruby","code":"puts 1"}`, llm.RunCodeArgs{}, `unsupported language "ruby" (use one of python, bash, node)`},
		{`{"language":"python","code":"  "}`, llm.RunCodeArgs{}, `missing argument "code"`},
		{`{"language":"python","code":1}`, llm.RunCodeArgs{}, `argument "code" is a JSON number`},
		{`{"language":`, llm.RunCodeArgs{}, "not valid JSON"},
	}
	for _, c := range cases {
		got, err := llm.ToolCall{ID: "x", Name: "run_code", Arguments: c.args}.RunCode()
		if c.err != "" {
			if !errors.Is(err, llm.ErrMalformedToolCall) || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%s: err = %v, want %q", c.args, err, c.err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("%s: %+v, %v; want %+v", c.args, got, err, c.want)
		}
	}
	if _, err := (llm.ToolCall{Name: "other", Arguments: `{}`}).RunCode(); err == nil {
		t.Error("RunCode on another tool")
	}
}

func TestRunCodeToolSchema(t *testing.T) {
	tool := llm.RunCodeTool()
	b, err := json.Marshal(tool.Parameters)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"additionalProperties":false,"properties":{"code":{"description":"The complete program to run.","type":"string"},"language":{"description":"Language of the code: python (Python 3), bash, or node (JavaScript).","enum":["python","bash","node"],"type":"string"}},"required":["language","code"],"type":"object"}`
	if string(b) != want {
		t.Errorf("schema =\n%s\nwant\n%s", b, want)
	}
	// Each call returns a fresh value: changing one does not change the next.
	tool.Parameters["type"] = "changed"
	if llm.RunCodeTool().Parameters["type"] != "object" {
		t.Error("RunCodeTool shares state")
	}
}

func TestMessageRoundTrip(t *testing.T) {
	resp := &llm.Response{Text: "hi", ToolCalls: []llm.ToolCall{{ID: "1", Name: "run_code", Arguments: `{`}}}
	m := resp.Message()
	if m.Role != llm.RoleAssistant || m.Content != "hi" || len(m.ToolCalls) != 1 {
		t.Errorf("Message() = %+v", m)
	}
	// A malformed call still marshals (Arguments is a string).
	if _, err := json.Marshal(m); err != nil {
		t.Errorf("marshal: %v", err)
	}
	if u := (llm.Usage{InputTokens: 1, OutputTokens: 2}).Add(llm.Usage{InputTokens: 10, OutputTokens: 20}); u != (llm.Usage{InputTokens: 11, OutputTokens: 22}) {
		t.Errorf("Add = %+v", u)
	}
}
