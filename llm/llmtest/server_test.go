package llmtest

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

func post(t *testing.T, srv *Server, path, body string, header ...string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, srv.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

// The server refuses what the real APIs refuse, without playing a turn.
func TestValidation(t *testing.T) {
	srv := NewServer(Reply("ok").Forever())
	defer srv.Close()
	const av = "Anthropic-Version"
	cases := []struct {
		name, path, body string
		header           []string
		want             string // "" means accepted
	}{
		{"openai ok", "/v1/chat/completions", `{"model":"m","messages":[{"role":"user","content":"hi"}]}`, nil, ""},
		{"openai no model", "/v1/chat/completions", `{"messages":[{"role":"user","content":"hi"}]}`, nil, "model: field required"},
		{"openai no messages", "/v1/chat/completions", `{"model":"m","messages":[]}`, nil, "at least one message"},
		{"openai stray tool result", "/v1/chat/completions",
			`{"model":"m","messages":[{"role":"user","content":"hi"},{"role":"tool","tool_call_id":"c1","content":"x"}]}`, nil,
			"not a tool call of the preceding assistant turn"},
		{"openai unanswered call", "/v1/chat/completions",
			`{"model":"m","messages":[{"role":"user","content":"hi"},{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}}]},{"role":"user","content":"?"}]}`, nil,
			"tool call c1 has no tool result"},
		{"openai answered call", "/v1/chat/completions",
			`{"model":"m","messages":[{"role":"user","content":"hi"},{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{"}}]},{"role":"tool","tool_call_id":"c1","content":"x"}]}`, nil,
			""},
		{"openai answered twice", "/v1/chat/completions",
			`{"model":"m","messages":[{"role":"user","content":"hi"},{"role":"assistant","tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}}]},{"role":"tool","tool_call_id":"c1","content":"x"},{"role":"tool","tool_call_id":"c1","content":"x"}]}`, nil,
			"second tool result"},
		{"anthropic ok", "/v1/messages", `{"model":"m","max_tokens":10,"system":"s","messages":[{"role":"user","content":"hi"}]}`, []string{av, "2023-06-01"}, ""},
		{"anthropic no version", "/v1/messages", `{"model":"m","max_tokens":10,"messages":[{"role":"user","content":"hi"}]}`, nil, "anthropic-version"},
		{"anthropic no max_tokens", "/v1/messages", `{"model":"m","messages":[{"role":"user","content":"hi"}]}`, []string{av, "1"}, "max_tokens"},
		{"anthropic assistant first", "/v1/messages", `{"model":"m","max_tokens":1,"messages":[{"role":"assistant","content":"hi"}]}`, []string{av, "1"}, "first message"},
		{"anthropic input not an object", "/v1/messages",
			`{"model":"m","max_tokens":1,"messages":[{"role":"user","content":"hi"},{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"f","input":"x"}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1"}]}]}`,
			[]string{av, "1"}, "valid dictionary"},
		{"anthropic empty text block", "/v1/messages",
			`{"model":"m","max_tokens":1,"messages":[{"role":"user","content":"hi"},{"role":"assistant","content":[{"type":"text","text":""}]}]}`,
			[]string{av, "1"}, "non-empty"},
		{"anthropic round trip", "/v1/messages",
			`{"model":"m","max_tokens":1,"messages":[{"role":"user","content":"hi"},{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"f","input":{}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"out","is_error":true}]}]}`,
			[]string{av, "1"}, ""},
		{"not json", "/v1/messages", `hello`, []string{av, "1"}, "not a messages request"},
	}
	for _, c := range cases {
		status, body := post(t, srv, c.path, c.body, c.header...)
		if c.want == "" {
			if status != 200 {
				t.Errorf("%s: %d %s, want 200", c.name, status, body)
			}
			continue
		}
		if status != 400 || !strings.Contains(body, c.want) {
			t.Errorf("%s: %d %s, want 400 with %q", c.name, status, body, c.want)
		}
	}
	if got := srv.Pending(); got != 1 {
		t.Errorf("Pending = %d, want the Forever turn still there", got)
	}
	reqs := srv.Requests()
	if len(reqs) != len(cases) || reqs[0].Protocol != OpenAI || reqs[len(reqs)-1].Protocol != Anthropic || reqs[1].Status != 400 {
		t.Errorf("recorded %d requests: %+v", len(reqs), reqs[0])
	}
	sent, err := reqs[13].Decode()
	if err != nil || len(sent.Messages) != 3 || !sent.Messages[2].IsError || sent.Messages[2].Content != "out" {
		t.Errorf("decoded round trip = %+v, %v", sent, err)
	}
}

func TestScript(t *testing.T) {
	srv := NewServer(Reply("one"))
	defer srv.Close()
	const chat = `{"model":"m","messages":[{"role":"user","content":"hi"}]}`
	if status, body := post(t, srv, "/v1/chat/completions", chat); status != 200 || !strings.Contains(body, `"one"`) {
		t.Errorf("first: %d %s", status, body)
	}
	if status, body := post(t, srv, "/v1/chat/completions", chat); status != 400 || !strings.Contains(body, "no scripted turn left for request 2") {
		t.Errorf("exhausted: %d %s", status, body)
	}
	srv.Push(Fail(503, "later").WithHeader("Retry-After", "7"))
	if status, body := post(t, srv, "/v1/chat/completions", chat); status != 503 || !strings.Contains(body, "later") || !strings.Contains(body, "server_error") {
		t.Errorf("pushed failure: %d %s", status, body)
	}
	if status, _ := post(t, srv, "/v1/embeddings", chat); status != 404 {
		t.Errorf("unknown path: %d", status)
	}
	srv.RequireKey("k1")
	srv.Push(Reply("two"))
	if status, body := post(t, srv, "/v1/chat/completions", chat, "Authorization", "Bearer nope"); status != 401 || !strings.Contains(body, "nope") {
		t.Errorf("wrong key: %d %s", status, body)
	}
	if status, body := post(t, srv, "/v1/chat/completions", chat, "X-Api-Key", "k1"); status != 200 || !strings.Contains(body, `"two"`) {
		t.Errorf("right key: %d %s", status, body)
	}
	if last, ok := srv.Last(); !ok || last.Status != 200 || last.JSON()["model"] != "m" {
		t.Errorf("Last = %+v", last)
	}
}
