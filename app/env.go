package app

import "github.com/coderun/coderun/llm"

// EnvEntry is an environment variable the model providers read
// themselves (llm.ConfigFromEnv), not part of Config: a key or an
// endpoint. Value is "set" or "unset" for a secret, else the variable's
// value ("" when unset).
type EnvEntry struct {
	Name   string
	Value  string
	Secret bool
}

// ModelEnvironment lists the variables the model providers read, as
// getenv sees them; secrets (API keys) only as set or unset.
func ModelEnvironment(getenv func(string) string) []EnvEntry {
	vars := []struct {
		name   string
		secret bool
	}{
		{llm.EnvOpenAIKey, true}, {llm.EnvOpenAIBaseURL, false},
		{llm.EnvAnthropicKey, true}, {llm.EnvAnthropicURL, false},
		{llm.EnvOllamaHost, false},
		{llm.EnvBaseURL, false}, {llm.EnvAPIKey, true},
		{llm.EnvMaxTokens, false},
	}
	out := make([]EnvEntry, len(vars))
	for i, v := range vars {
		val := getenv(v.name)
		if v.secret {
			val = "unset"
			if getenv(v.name) != "" {
				val = "set"
			}
		}
		out[i] = EnvEntry{Name: v.name, Value: val, Secret: v.secret}
	}
	return out
}
