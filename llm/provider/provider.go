// Package provider builds an [llm.Provider] from a model spec or an
// [llm.Config]. It is the one place that knows every backend, so that
// commands and servers select a model with a string:
//
//	p, err := provider.FromEnv("")                          // $CODERUN_MODEL
//	p, err := provider.FromEnv("ollama:qwen2.5-coder")      // local Ollama
//	p, err := provider.New(llm.Config{Provider: "anthropic", Model: "claude-sonnet-4-5", APIKey: key})
//
// The root package cannot do this itself: the backends import it.
package provider

import (
	"fmt"
	"os"

	"github.com/coderun/coderun/llm"
	"github.com/coderun/coderun/llm/anthropic"
	"github.com/coderun/coderun/llm/openai"
)

// New returns the provider that cfg.Provider names: "openai", "ollama" and
// "openai-compatible" are served by llm/openai, "anthropic" by
// llm/anthropic.
func New(cfg llm.Config) (llm.Provider, error) {
	switch cfg.Provider {
	case llm.ProviderOpenAI, llm.ProviderOllama, llm.ProviderOpenAICompatible:
		return openai.New(cfg)
	case llm.ProviderAnthropic:
		return anthropic.New(cfg)
	}
	return nil, fmt.Errorf("llm: unknown provider %q (want one of %v)", cfg.Provider, llm.Providers())
}

// FromEnv returns the provider for spec ("provider:model"; empty means
// $CODERUN_MODEL) configured from the process environment as
// [llm.ConfigFromEnv] describes, with the default retry policy. To change
// the policy or the HTTP client, call llm.ConfigFromEnv, adjust, then New.
func FromEnv(spec string) (llm.Provider, error) {
	cfg, err := llm.ConfigFromEnv(spec, os.Getenv)
	if err != nil {
		return nil, err
	}
	return New(cfg)
}
