package llm

import (
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// The providers a model spec can name.
const (
	// ProviderOpenAI is the OpenAI API (Chat Completions).
	ProviderOpenAI = "openai"
	// ProviderAnthropic is the Anthropic Messages API.
	ProviderAnthropic = "anthropic"
	// ProviderOllama is a local Ollama server, through its OpenAI-compatible
	// API at DefaultOllamaBaseURL unless configured otherwise. No key is sent.
	ProviderOllama = "ollama"
	// ProviderOpenAICompatible is any server speaking Chat Completions
	// (vLLM, llama.cpp's server, LM Studio, a proxy); it needs a base URL.
	ProviderOpenAICompatible = "openai-compatible"
)

// Default endpoints.
const (
	DefaultOpenAIBaseURL    = "https://api.openai.com/v1"
	DefaultAnthropicBaseURL = "https://api.anthropic.com"
	DefaultOllamaBaseURL    = "http://localhost:11434/v1"
)

// DefaultMaxTokens bounds a reply when neither the request nor the
// configuration says. Anthropic requires a bound; the others get it too so
// that a run costs the same whichever model answers.
const DefaultMaxTokens = 4096

// DefaultTimeout bounds one attempt of a call (one HTTP request and its
// whole reply) when [Config.Timeout] does not, unless the reply bound asks
// for more (see [Config.AttemptTimeout]). It is long enough for a
// DefaultMaxTokens reply from a hosted model; slow local models writing long
// replies may need more.
const DefaultTimeout = 2 * time.Minute

// slowestReplyRate is the rate, in tokens per second, at which the default
// attempt timeout lets a reply of the configured bound be written.
const slowestReplyRate = 40

// DefaultStallTimeout is how long a reply that has begun may go without a
// byte before the attempt is abandoned, when [Config.StallTimeout] does not
// say.
const DefaultStallTimeout = 30 * time.Second

// Providers returns the provider names a spec may use.
func Providers() []string {
	return []string{ProviderOpenAI, ProviderAnthropic, ProviderOllama, ProviderOpenAICompatible}
}

// ParseSpec splits a model spec "provider:model" — "openai:gpt-4.1-mini",
// "anthropic:claude-sonnet-4-5", "ollama:qwen2.5-coder:7b",
// "openai-compatible:my-model" — at its first colon. The provider must be one
// of [Providers]; the model is everything after the colon (Ollama tags keep
// their own colon).
func ParseSpec(spec string) (provider, model string, err error) {
	spec = strings.TrimSpace(spec)
	provider, model, ok := strings.Cut(spec, ":")
	provider = strings.ToLower(strings.TrimSpace(provider))
	model = strings.TrimSpace(model)
	if !ok || provider == "" || model == "" {
		return "", "", fmt.Errorf("model spec %q: want provider:model, provider one of %s",
			spec, strings.Join(Providers(), ", "))
	}
	for _, p := range Providers() {
		if p == provider {
			return provider, model, nil
		}
	}
	return "", "", fmt.Errorf("model spec %q: unknown provider %q (want one of %s)",
		spec, provider, strings.Join(Providers(), ", "))
}

// Config is everything needed to build a provider. The zero value of each
// optional field means the default.
//
// Config's printed forms (%v, %+v, %#v, slog) show whether a key is set but
// never the key.
type Config struct {
	// Provider is one of [Providers].
	Provider string
	// Model is the model name as the provider knows it.
	Model string
	// APIKey authenticates; Ollama needs none.
	APIKey string
	// BaseURL overrides the provider's default endpoint; required for
	// ProviderOpenAICompatible. For OpenAI-style servers it ends in /v1.
	BaseURL string
	// MaxTokens bounds each reply unless the request says; 0 means
	// DefaultMaxTokens.
	MaxTokens int
	// Timeout bounds each attempt — the request and its whole reply — (not
	// the whole call, which ctx and Retry bound); 0 means DefaultTimeout,
	// or more for a large MaxTokens ([Config.AttemptTimeout]). An attempt
	// that runs out fails with ErrTimeout and is retried.
	Timeout time.Duration
	// StallTimeout bounds the silence within a reply: once the server has
	// sent its headers, an attempt whose body then delivers no byte for this
	// long fails with ErrTimeout and is retried; 0 means
	// DefaultStallTimeout. (Before the headers the server is still writing
	// the reply; only Timeout bounds that wait.)
	StallTimeout time.Duration
	// Retry is the retry policy.
	Retry Retry
	// HTTPClient, if set, carries the requests (proxies, custom TLS).
	HTTPClient *http.Client
}

// AttemptTimeout returns the bound of one attempt: Timeout if set, else
// DefaultTimeout, or longer when the configured reply bound (MaxTokens)
// would take more than that to write at 40 tokens a second — so that a
// default never cuts a reply the configuration asked for.
func (c Config) AttemptTimeout() time.Duration {
	if c.Timeout > 0 {
		return c.Timeout
	}
	write := time.Duration(c.MaxTokensFor(Request{})) * time.Second / slowestReplyRate
	return max(DefaultTimeout, write)
}

// ReplyStallTimeout returns the longest silence allowed within a reply:
// StallTimeout, else DefaultStallTimeout.
func (c Config) ReplyStallTimeout() time.Duration {
	if c.StallTimeout > 0 {
		return c.StallTimeout
	}
	return DefaultStallTimeout
}

// Spec returns the config's model spec, "provider:model".
func (c Config) Spec() string { return c.Provider + ":" + c.Model }

// MaxTokensFor returns the reply bound for a request: the request's, else the
// config's, else DefaultMaxTokens.
func (c Config) MaxTokensFor(req Request) int {
	switch {
	case req.MaxTokens > 0:
		return req.MaxTokens
	case c.MaxTokens > 0:
		return c.MaxTokens
	}
	return DefaultMaxTokens
}

func (c Config) keyState() string {
	if c.APIKey == "" {
		return "unset"
	}
	return "set"
}

// String shows the config without the key.
func (c Config) String() string {
	return fmt.Sprintf("llm.Config{Provider:%q Model:%q BaseURL:%q APIKey:%s MaxTokens:%d Timeout:%s StallTimeout:%s Retry:%+v}",
		c.Provider, c.Model, c.BaseURL, c.keyState(), c.MaxTokens, c.Timeout, c.StallTimeout, c.Retry)
}

// GoString is String, so that %#v does not print the key either.
func (c Config) GoString() string { return c.String() }

// LogValue shows the config to log/slog without the key.
func (c Config) LogValue() slog.Value {
	return slog.GroupValue(
		slog.String("provider", c.Provider),
		slog.String("model", c.Model),
		slog.String("base_url", c.BaseURL),
		slog.String("api_key", c.keyState()),
	)
}

// The environment variables [ConfigFromEnv] reads.
const (
	EnvModel         = "CODERUN_MODEL"         // model spec when none is given
	EnvBaseURL       = "CODERUN_BASE_URL"      // base URL of an openai-compatible server
	EnvAPIKey        = "CODERUN_API_KEY"       // key for CODERUN_BASE_URL
	EnvMaxTokens     = "CODERUN_MAX_TOKENS"    // default reply bound
	EnvTimeout       = "CODERUN_MODEL_TIMEOUT" // bound of one model request, a Go duration ("3m")
	EnvOpenAIKey     = "OPENAI_API_KEY"        // key for openai (and OPENAI_BASE_URL)
	EnvOpenAIBaseURL = "OPENAI_BASE_URL"       // endpoint for openai, or an openai-compatible server
	EnvAnthropicKey  = "ANTHROPIC_API_KEY"     // key for anthropic
	EnvAnthropicURL  = "ANTHROPIC_BASE_URL"    // endpoint for anthropic
	EnvOllamaHost    = "OLLAMA_HOST"           // Ollama's own "host:port" or URL
)

// ConfigFromEnv builds a Config from a model spec and the environment, read
// through getenv (os.Getenv, or a map in tests). An empty spec means
// $CODERUN_MODEL.
//
// Keys go only where they belong, so that no key reaches a server it was not
// issued for:
//
//   - openai: OPENAI_API_KEY, and OPENAI_BASE_URL if set;
//   - anthropic: ANTHROPIC_API_KEY, and ANTHROPIC_BASE_URL if set;
//   - ollama: no key; OLLAMA_HOST ("host:port" or an URL) if set, else
//     DefaultOllamaBaseURL;
//   - openai-compatible: CODERUN_BASE_URL with CODERUN_API_KEY, or else
//     OPENAI_BASE_URL with OPENAI_API_KEY (the usual pairing for such
//     servers); one of the base URLs is required.
//
// CODERUN_MAX_TOKENS, if set, is the default reply bound;
// CODERUN_MODEL_TIMEOUT, if set, is Timeout (a Go duration such as "3m").
// Retry, stall timeout and HTTP client are left at their defaults for the
// caller to set.
func ConfigFromEnv(spec string, getenv func(string) string) (Config, error) {
	if spec == "" {
		spec = getenv(EnvModel)
	}
	if strings.TrimSpace(spec) == "" {
		return Config{}, fmt.Errorf("no model: pass provider:model or set %s (e.g. %s=openai:gpt-4.1-mini)", EnvModel, EnvModel)
	}
	provider, model, err := ParseSpec(spec)
	if err != nil {
		return Config{}, err
	}
	cfg := Config{Provider: provider, Model: model}
	switch provider {
	case ProviderOpenAI:
		cfg.APIKey = getenv(EnvOpenAIKey)
		cfg.BaseURL = getenv(EnvOpenAIBaseURL)
	case ProviderAnthropic:
		cfg.APIKey = getenv(EnvAnthropicKey)
		cfg.BaseURL = getenv(EnvAnthropicURL)
	case ProviderOllama:
		if host := getenv(EnvOllamaHost); host != "" {
			cfg.BaseURL = ollamaBaseURL(host)
		}
	case ProviderOpenAICompatible:
		switch {
		case getenv(EnvBaseURL) != "":
			cfg.BaseURL, cfg.APIKey = getenv(EnvBaseURL), getenv(EnvAPIKey)
		case getenv(EnvOpenAIBaseURL) != "":
			cfg.BaseURL, cfg.APIKey = getenv(EnvOpenAIBaseURL), getenv(EnvOpenAIKey)
		default:
			return Config{}, fmt.Errorf("model spec %q: %s needs a base URL: set %s (or %s)",
				spec, provider, EnvBaseURL, EnvOpenAIBaseURL)
		}
	}
	if v := getenv(EnvMaxTokens); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 {
			return Config{}, fmt.Errorf("%s=%q: want a positive integer", EnvMaxTokens, v)
		}
		cfg.MaxTokens = n
	}
	if v := getenv(EnvTimeout); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			return Config{}, fmt.Errorf("%s=%q: want a positive duration such as 3m or 90s", EnvTimeout, v)
		}
		cfg.Timeout = d
	}
	return cfg, nil
}

// ollamaBaseURL turns OLLAMA_HOST into the URL of Ollama's OpenAI-compatible
// API, reading it as Ollama does: "host", "host:port" or "scheme://host[:port]",
// port 11434 when neither port nor scheme is given, 0.0.0.0 (listen
// everywhere) meaning this machine.
func ollamaBaseURL(host string) string {
	host = strings.TrimSpace(host)
	scheme, hostport, explicit := strings.Cut(host, "://")
	if !explicit {
		scheme, hostport = "http", host
	}
	hostport, path, _ := strings.Cut(hostport, "/")
	h, port, err := net.SplitHostPort(hostport)
	if err != nil {
		h, port = strings.Trim(hostport, "[]"), ""
		if !explicit {
			port = "11434"
		}
	}
	if h == "" || h == "0.0.0.0" || h == "::" {
		h = "localhost"
	}
	if port != "" {
		hostport = net.JoinHostPort(h, port)
	} else if strings.Contains(h, ":") {
		hostport = "[" + h + "]"
	} else {
		hostport = h
	}
	if path = strings.Trim(path, "/"); path != "" {
		path = "/" + path
	}
	return scheme + "://" + hostport + path + "/v1"
}
