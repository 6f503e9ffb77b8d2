package llm_test

import (
	"bytes"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/coderun/coderun/llm"
)

func TestParseSpec(t *testing.T) {
	cases := []struct {
		spec, provider, model string
		err                   string
	}{
		{"openai:gpt-4.1-mini", "openai", "gpt-4.1-mini", ""},
		{"anthropic:claude-sonnet-4-5", "anthropic", "claude-sonnet-4-5", ""},
		{"ollama:qwen2.5-coder", "ollama", "qwen2.5-coder", ""},
		{"ollama:qwen2.5-coder:7b", "ollama", "qwen2.5-coder:7b", ""},
		{"openai-compatible:Qwen/Qwen2.5-Coder-7B-Instruct", "openai-compatible", "Qwen/Qwen2.5-Coder-7B-Instruct", ""},
		{" OpenAI : gpt-4o ", "openai", "gpt-4o", ""},
		{"gpt-4.1-mini", "", "", "want provider:model"},
		{"openai:", "", "", "want provider:model"},
		{":gpt-4o", "", "", "want provider:model"},
		{"", "", "", "want provider:model"},
		{"gemini:gemini-2.5-pro", "", "", `unknown provider "gemini"`},
	}
	for _, c := range cases {
		p, m, err := llm.ParseSpec(c.spec)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("ParseSpec(%q) error = %v, want %q", c.spec, err, c.err)
			}
			continue
		}
		if err != nil || p != c.provider || m != c.model {
			t.Errorf("ParseSpec(%q) = %q, %q, %v; want %q, %q", c.spec, p, m, err, c.provider, c.model)
		}
	}
}

func TestConfigFromEnv(t *testing.T) {
	env := map[string]string{
		"OPENAI_API_KEY":     "sk-openai",
		"ANTHROPIC_API_KEY":  "sk-ant",
		"ANTHROPIC_BASE_URL": "https://proxy.example/anthropic",
		"CODERUN_MODEL":      "anthropic:claude-sonnet-4-5",
	}
	getenv := func(k string) string { return env[k] }
	cases := []struct {
		spec  string
		extra map[string]string
		want  llm.Config
		err   string
	}{
		{spec: "openai:gpt-4.1-mini", want: llm.Config{Provider: "openai", Model: "gpt-4.1-mini", APIKey: "sk-openai"}},
		{spec: "openai:gpt-4.1-mini", extra: map[string]string{"CODERUN_MODEL_TIMEOUT": "3m"},
			want: llm.Config{Provider: "openai", Model: "gpt-4.1-mini", APIKey: "sk-openai", Timeout: 3 * time.Minute}},
		{spec: "openai:gpt-4.1-mini", extra: map[string]string{"CODERUN_MODEL_TIMEOUT": "90"}, err: "CODERUN_MODEL_TIMEOUT"},
		{spec: "openai:gpt-4.1-mini", extra: map[string]string{"CODERUN_MODEL_TIMEOUT": "-1s"}, err: "CODERUN_MODEL_TIMEOUT"},
		{spec: "openai:gpt-4.1-mini", extra: map[string]string{"OPENAI_BASE_URL": "https://gw.example/v1"},
			want: llm.Config{Provider: "openai", Model: "gpt-4.1-mini", APIKey: "sk-openai", BaseURL: "https://gw.example/v1"}},
		{spec: "", want: llm.Config{Provider: "anthropic", Model: "claude-sonnet-4-5", APIKey: "sk-ant", BaseURL: "https://proxy.example/anthropic"}},
		// Ollama never gets a key, whatever the environment holds.
		{spec: "ollama:qwen2.5-coder", want: llm.Config{Provider: "ollama", Model: "qwen2.5-coder"}},
		{spec: "ollama:qwen2.5-coder", extra: map[string]string{"OLLAMA_HOST": "gpu-box:11500"},
			want: llm.Config{Provider: "ollama", Model: "qwen2.5-coder", BaseURL: "http://gpu-box:11500/v1"}},
		{spec: "ollama:qwen2.5-coder", extra: map[string]string{"OLLAMA_HOST": "0.0.0.0"},
			want: llm.Config{Provider: "ollama", Model: "qwen2.5-coder", BaseURL: "http://localhost:11434/v1"}},
		{spec: "ollama:qwen2.5-coder", extra: map[string]string{"OLLAMA_HOST": "https://ollama.example/"},
			want: llm.Config{Provider: "ollama", Model: "qwen2.5-coder", BaseURL: "https://ollama.example/v1"}},
		{spec: "ollama:qwen2.5-coder", extra: map[string]string{"OLLAMA_HOST": "[::1]:11434"},
			want: llm.Config{Provider: "ollama", Model: "qwen2.5-coder", BaseURL: "http://[::1]:11434/v1"}},
		{spec: "ollama:qwen2.5-coder", extra: map[string]string{"OLLAMA_HOST": "http://box/ollama"},
			want: llm.Config{Provider: "ollama", Model: "qwen2.5-coder", BaseURL: "http://box/ollama/v1"}},
		// A compatible server gets the key paired with its base URL only.
		{spec: "openai-compatible:m", extra: map[string]string{"CODERUN_BASE_URL": "http://127.0.0.1:8000/v1"},
			want: llm.Config{Provider: "openai-compatible", Model: "m", BaseURL: "http://127.0.0.1:8000/v1"}},
		{spec: "openai-compatible:m", extra: map[string]string{"CODERUN_BASE_URL": "http://127.0.0.1:8000/v1", "CODERUN_API_KEY": "vllm-key"},
			want: llm.Config{Provider: "openai-compatible", Model: "m", BaseURL: "http://127.0.0.1:8000/v1", APIKey: "vllm-key"}},
		{spec: "openai-compatible:m", extra: map[string]string{"OPENAI_BASE_URL": "http://127.0.0.1:1234/v1"},
			want: llm.Config{Provider: "openai-compatible", Model: "m", BaseURL: "http://127.0.0.1:1234/v1", APIKey: "sk-openai"}},
		{spec: "openai-compatible:m", err: "needs a base URL"},
		{spec: "openai:gpt-4o", extra: map[string]string{"CODERUN_MAX_TOKENS": "2048"},
			want: llm.Config{Provider: "openai", Model: "gpt-4o", APIKey: "sk-openai", MaxTokens: 2048}},
		{spec: "openai:gpt-4o", extra: map[string]string{"CODERUN_MAX_TOKENS": "lots"}, err: "positive integer"},
		{spec: "nope", err: "provider:model"},
	}
	for _, c := range cases {
		get := getenv
		if c.extra != nil {
			get = func(k string) string {
				if v, ok := c.extra[k]; ok {
					return v
				}
				return env[k]
			}
		}
		got, err := llm.ConfigFromEnv(c.spec, get)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("ConfigFromEnv(%q, %v) error = %v, want %q", c.spec, c.extra, err, c.err)
			}
			continue
		}
		if err != nil || got.Provider != c.want.Provider || got.Model != c.want.Model ||
			got.APIKey != c.want.APIKey || got.BaseURL != c.want.BaseURL || got.MaxTokens != c.want.MaxTokens ||
			got.Timeout != c.want.Timeout {
			t.Errorf("ConfigFromEnv(%q, %v) = %v (key %q), %v; want %v (key %q)", c.spec, c.extra, got, got.APIKey, err, c.want, c.want.APIKey)
		}
	}
	if _, err := llm.ConfigFromEnv("", func(string) string { return "" }); err == nil || !strings.Contains(err.Error(), "CODERUN_MODEL") {
		t.Errorf("no spec and no CODERUN_MODEL: %v", err)
	}
}

func TestConfigNeverPrintsKey(t *testing.T) {
	const key = "sk-secret-0123456789"
	cfg := llm.Config{Provider: "openai", Model: "gpt-4o", APIKey: key}
	var buf bytes.Buffer
	slog.New(slog.NewJSONHandler(&buf, nil)).Info("config", "llm", cfg)
	slog.New(slog.NewTextHandler(&buf, nil)).Info("config", "llm", cfg)
	for _, s := range []string{
		fmt.Sprint(cfg), fmt.Sprintf("%v %+v %#v %s", cfg, cfg, cfg, cfg), fmt.Sprintf("%+v", &cfg), buf.String(),
	} {
		if strings.Contains(s, key) {
			t.Errorf("key printed: %s", s)
		}
		if !strings.Contains(s, "gpt-4o") {
			t.Errorf("config not printed: %s", s)
		}
	}
	if !strings.Contains(cfg.String(), "APIKey:set") || !strings.Contains(llm.Config{}.String(), "APIKey:unset") {
		t.Errorf("String = %s", cfg)
	}
}

func TestMaxTokensFor(t *testing.T) {
	if got := (llm.Config{}).MaxTokensFor(llm.Request{}); got != llm.DefaultMaxTokens {
		t.Errorf("default = %d", got)
	}
	if got := (llm.Config{MaxTokens: 100}).MaxTokensFor(llm.Request{}); got != 100 {
		t.Errorf("config = %d", got)
	}
	if got := (llm.Config{MaxTokens: 100}).MaxTokensFor(llm.Request{MaxTokens: 7}); got != 7 {
		t.Errorf("request = %d", got)
	}
}

func TestTimeouts(t *testing.T) {
	var zero llm.Config
	if zero.AttemptTimeout() != llm.DefaultTimeout || zero.ReplyStallTimeout() != llm.DefaultStallTimeout {
		t.Errorf("defaults = %v, %v; want %v, %v", zero.AttemptTimeout(), zero.ReplyStallTimeout(), llm.DefaultTimeout, llm.DefaultStallTimeout)
	}
	if llm.DefaultTimeout <= 0 || llm.DefaultStallTimeout <= 0 || llm.DefaultStallTimeout > llm.DefaultTimeout {
		t.Errorf("DefaultTimeout %v, DefaultStallTimeout %v: want both set, the stall bound the shorter", llm.DefaultTimeout, llm.DefaultStallTimeout)
	}
	// A large reply bound raises the default (32000 tokens at 40 a second),
	// never an explicit Timeout.
	if got := (llm.Config{MaxTokens: 32000}).AttemptTimeout(); got != 800*time.Second {
		t.Errorf("default for MaxTokens 32000 = %v, want 800s", got)
	}
	if got := (llm.Config{MaxTokens: 32000, Timeout: time.Minute}).AttemptTimeout(); got != time.Minute {
		t.Errorf("explicit Timeout with MaxTokens 32000 = %v, want 1m", got)
	}
	c := llm.Config{Timeout: time.Second, StallTimeout: time.Millisecond}
	if c.AttemptTimeout() != time.Second || c.ReplyStallTimeout() != time.Millisecond {
		t.Errorf("set = %v, %v; want 1s, 1ms", c.AttemptTimeout(), c.ReplyStallTimeout())
	}
}
