package provider_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/coderun/coderun/llm"
	"github.com/coderun/coderun/llm/anthropic"
	"github.com/coderun/coderun/llm/llmtest"
	"github.com/coderun/coderun/llm/openai"
	"github.com/coderun/coderun/llm/provider"
)

// Each spec reaches the right backend, which speaks the right protocol.
func TestFromEnv(t *testing.T) {
	srv := llmtest.NewServer(llmtest.Reply("ok").Forever())
	defer srv.Close()
	t.Setenv("OPENAI_API_KEY", "sk-openai-key")
	t.Setenv("OPENAI_BASE_URL", srv.BaseURL(llmtest.OpenAI))
	t.Setenv("ANTHROPIC_API_KEY", "sk-ant-key")
	t.Setenv("ANTHROPIC_BASE_URL", srv.BaseURL(llmtest.Anthropic))
	t.Setenv("OLLAMA_HOST", srv.URL)
	t.Setenv("CODERUN_BASE_URL", srv.BaseURL(llmtest.OpenAI))
	t.Setenv("CODERUN_API_KEY", "local-key")
	t.Setenv("CODERUN_MODEL", "anthropic:claude-sonnet-4-5")

	cases := []struct {
		spec, protocol, model, auth string
	}{
		{"openai:gpt-4.1-mini", llmtest.OpenAI, "gpt-4.1-mini", "Bearer sk-openai-key"},
		{"anthropic:claude-sonnet-4-5", llmtest.Anthropic, "claude-sonnet-4-5", "Bearer sk-ant-key"},
		{"", llmtest.Anthropic, "claude-sonnet-4-5", "Bearer sk-ant-key"}, // $CODERUN_MODEL
		{"ollama:qwen2.5-coder:7b", llmtest.OpenAI, "qwen2.5-coder:7b", ""},
		{"openai-compatible:my-model", llmtest.OpenAI, "my-model", "Bearer local-key"},
	}
	for _, c := range cases {
		t.Run(c.spec, func(t *testing.T) {
			p, err := provider.FromEnv(c.spec)
			if err != nil {
				t.Fatal(err)
			}
			resp, err := p.Chat(context.Background(), llm.Request{Messages: []llm.Message{llm.User("hi")}})
			if err != nil || resp.Text != "ok" {
				t.Fatalf("Chat = %+v, %v", resp, err)
			}
			req, _ := srv.Last()
			sent, err := req.Decode()
			if err != nil {
				t.Fatal(err)
			}
			if req.Protocol != c.protocol || sent.Model != c.model {
				t.Errorf("got %s request for %q, want %s for %q", req.Protocol, sent.Model, c.protocol, c.model)
			}
			if got := req.Header.Get("Authorization"); got != c.auth && req.Header.Get("X-Api-Key") != strings.TrimPrefix(c.auth, "Bearer ") {
				t.Errorf("Authorization = %q, want %q", got, c.auth)
			}
		})
	}
}

func TestNew(t *testing.T) {
	p, err := provider.New(llm.Config{Provider: "anthropic", Model: "m", APIKey: "k"})
	if _, ok := p.(*anthropic.Provider); !ok || err != nil {
		t.Errorf("anthropic: %T, %v", p, err)
	}
	for _, name := range []string{"openai", "ollama"} {
		p, err := provider.New(llm.Config{Provider: name, Model: "m", APIKey: "k"})
		if _, ok := p.(*openai.Provider); !ok || err != nil {
			t.Errorf("%s: %T, %v", name, p, err)
		}
	}
	if _, err := provider.New(llm.Config{Provider: "gemini", Model: "m"}); err == nil || !strings.Contains(err.Error(), "unknown provider") {
		t.Errorf("unknown provider: %v", err)
	}
}

func TestFromEnvErrors(t *testing.T) {
	t.Setenv("CODERUN_MODEL", "")
	t.Setenv("OPENAI_API_KEY", "")
	t.Setenv("OPENAI_BASE_URL", "")
	t.Setenv("CODERUN_BASE_URL", "")
	if _, err := provider.FromEnv(""); err == nil || !strings.Contains(err.Error(), "CODERUN_MODEL") {
		t.Errorf("no model: %v", err)
	}
	if _, err := provider.FromEnv("openai:gpt-4.1-mini"); !errors.Is(err, llm.ErrAuth) || !strings.Contains(err.Error(), "OPENAI_API_KEY") {
		t.Errorf("no key: %v", err)
	}
	if _, err := provider.FromEnv("openai-compatible:m"); err == nil || !strings.Contains(err.Error(), "CODERUN_BASE_URL") {
		t.Errorf("no base URL: %v", err)
	}
	if _, err := provider.FromEnv("gpt-4.1-mini"); err == nil || !strings.Contains(err.Error(), "provider:model") {
		t.Errorf("no provider: %v", err)
	}
}

func ExampleFromEnv() {
	srv := llmtest.NewServer(llmtest.Reply("Hello!"))
	defer srv.Close()
	// Normally set by the user; here pointed at the test server.
	os := map[string]string{"CODERUN_MODEL": "ollama:qwen2.5-coder", "OLLAMA_HOST": srv.URL}

	cfg, err := llm.ConfigFromEnv("", func(k string) string { return os[k] })
	if err != nil {
		panic(err)
	}
	cfg.Retry = llm.Retry{MaxAttempts: 2}
	fmt.Println(cfg.Spec())
	p, err := provider.New(cfg)
	if err != nil {
		panic(err)
	}
	resp, err := p.Chat(context.Background(), llm.Request{Messages: []llm.Message{llm.User("Hi")}})
	if err != nil {
		panic(err)
	}
	fmt.Println(resp.Text)
	// Output:
	// ollama:qwen2.5-coder
	// Hello!
}
