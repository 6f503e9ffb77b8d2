// Package openai is the [llm.Provider] for the OpenAI Chat Completions API,
// built on the official openai-go SDK.
//
// The same wire protocol is spoken by Ollama, vLLM, llama.cpp's server, LM
// Studio and most proxies, so this one adapter serves the providers
// "openai", "ollama" and "openai-compatible" of an [llm.Config]; they differ
// only in the default base URL and in whether a key is required.
//
// Requests are built from the provider-neutral messages: system and user
// messages as they are, an assistant turn as content plus tool_calls (the
// arguments sent back exactly as the model wrote them), a tool result as a
// "tool" message with its tool_call_id. Tools are sent as "function" tools;
// to OpenAI itself, a tool whose schema meets strict mode
// ([llm.StrictSchema]) is declared strict. A request with tools asks for
// one tool call per turn (parallel_tool_calls: false), except of OpenAI's
// o-series models, which refuse the field; a turn with several calls
// nonetheless comes back whole, every call in order, for the caller to
// answer each. The reply bound is max_completion_tokens for OpenAI (its
// reasoning models accept only that name) and max_tokens for Ollama and
// other compatible servers (vLLM, llama.cpp), which know the older one.
//
// The SDK's own retries are switched off; the call is retried by
// [llm.Retry], and failures are classified from the HTTP exchange itself.
// Each attempt is bounded by the SDK's request timeout
// ([llm.Config.AttemptTimeout]) and a reply that stalls midway is abandoned
// ([llm.Config.ReplyStallTimeout]); both are [llm.ErrTimeout], retried.
// The SDK is used without its environment defaults: only the Config decides
// the endpoint and the key.
package openai

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	oai "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/shared"

	"github.com/coderun/coderun/llm"
	"github.com/coderun/coderun/llm/internal/classify"
)

// Provider talks to one model over Chat Completions. It is safe for
// concurrent use.
type Provider struct {
	cfg  llm.Config
	ep   classify.Endpoint
	chat oai.ChatCompletionService
}

var _ llm.Provider = (*Provider)(nil)

// New returns a provider for cfg. cfg.Provider may be "openai" (the default
// when empty; a key is required), "ollama" (base URL defaults to
// llm.DefaultOllamaBaseURL, no key needed) or "openai-compatible" (base URL
// required, key optional).
func New(cfg llm.Config) (*Provider, error) {
	if cfg.Provider == "" {
		cfg.Provider = llm.ProviderOpenAI
	}
	if cfg.Model == "" {
		return nil, fmt.Errorf("%s: no model given", cfg.Provider)
	}
	switch cfg.Provider {
	case llm.ProviderOpenAI:
		if cfg.BaseURL == "" {
			cfg.BaseURL = llm.DefaultOpenAIBaseURL
		}
		if cfg.APIKey == "" {
			return nil, &llm.Error{Kind: llm.ErrAuth, Provider: cfg.Provider, Model: cfg.Model,
				Message: "no API key: set " + llm.EnvOpenAIKey}
		}
	case llm.ProviderOllama:
		if cfg.BaseURL == "" {
			cfg.BaseURL = llm.DefaultOllamaBaseURL
		}
	case llm.ProviderOpenAICompatible:
		if cfg.BaseURL == "" {
			return nil, fmt.Errorf("%s: no base URL given (set %s)", cfg.Provider, llm.EnvBaseURL)
		}
	default:
		return nil, fmt.Errorf("openai: provider %q does not speak Chat Completions", cfg.Provider)
	}
	if u, err := url.Parse(cfg.BaseURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("%s: base URL %q: want http(s)://host[:port]/path", cfg.Provider, cfg.BaseURL)
	}

	opts := []option.RequestOption{
		option.WithBaseURL(cfg.BaseURL),
		option.WithMaxRetries(0), // llm.Retry retries
		option.WithMiddleware(classify.Middleware, classify.StallGuard(cfg.ReplyStallTimeout())),
		option.WithRequestTimeout(cfg.AttemptTimeout()),
	}
	if cfg.APIKey != "" {
		opts = append(opts, option.WithAPIKey(cfg.APIKey))
	}
	if cfg.HTTPClient != nil {
		opts = append(opts, option.WithHTTPClient(cfg.HTTPClient))
	}
	return &Provider{
		cfg: cfg,
		ep: classify.Endpoint{Provider: cfg.Provider, Model: cfg.Model,
			BaseURL: cfg.BaseURL, APIKey: cfg.APIKey},
		// The service, not openai.NewClient, so that no OPENAI_* variable
		// of the environment slips into the configuration.
		chat: oai.NewChatCompletionService(opts...),
	}, nil
}

// Chat sends one Chat Completions request, retrying as the Config's policy
// says, and returns the first choice.
func (p *Provider) Chat(ctx context.Context, req llm.Request) (*llm.Response, error) {
	params, err := p.params(req)
	if err != nil {
		return nil, err
	}
	start := time.Now()
	var completion *oai.ChatCompletion
	attempts, err := p.cfg.Retry.Do(ctx, func(ctx context.Context) error {
		actx, ex := classify.WithExchange(ctx)
		c, err := p.chat.New(actx, params)
		if err != nil {
			return p.ep.Error(ctx, ex, err)
		}
		completion = c
		return nil
	})
	if err != nil {
		return nil, err
	}
	resp, err := p.response(completion)
	if err != nil {
		return nil, err
	}
	resp.Latency = time.Since(start)
	resp.Attempts = attempts
	if resp.ToolCalls, err = llm.ParseToolCalls(resp.ToolCalls, req.Tools); err != nil {
		return resp, fmt.Errorf("%s model %q: %w", p.cfg.Provider, p.cfg.Model, err)
	}
	return resp, nil
}

func (p *Provider) params(req llm.Request) (oai.ChatCompletionNewParams, error) {
	params := oai.ChatCompletionNewParams{Model: shared.ChatModel(p.cfg.Model)}
	for i, m := range req.Messages {
		msg, err := message(m)
		if err != nil {
			return params, fmt.Errorf("%s: message %d: %w", p.cfg.Provider, i, err)
		}
		params.Messages = append(params.Messages, msg)
	}
	for _, t := range req.Tools {
		def := shared.FunctionDefinitionParam{
			Name:       t.Name,
			Parameters: shared.FunctionParameters(t.Parameters),
		}
		if t.Description != "" {
			def.Description = oai.String(t.Description)
		}
		if p.cfg.Provider == llm.ProviderOpenAI && llm.StrictSchema(t.Parameters) {
			// OpenAI then holds the arguments to the schema; compatible
			// servers may not know the field.
			def.Strict = oai.Bool(true)
		}
		params.Tools = append(params.Tools, oai.ChatCompletionFunctionTool(def))
	}
	if len(req.Tools) > 0 && p.acceptsParallelToolCalls() {
		// One call per turn: the agent runs one program at a time.
		params.ParallelToolCalls = oai.Bool(false)
	}
	maxTokens := int64(p.cfg.MaxTokensFor(req))
	if p.cfg.Provider == llm.ProviderOpenAI {
		// OpenAI's reasoning models accept only the newer name.
		params.MaxCompletionTokens = oai.Int(maxTokens)
	} else {
		// Compatible servers know the older one.
		params.MaxTokens = oai.Int(maxTokens)
	}
	if req.Temperature != nil {
		params.Temperature = oai.Float(*req.Temperature)
	}
	return params, nil
}

// acceptsParallelToolCalls reports whether the model takes the
// parallel_tool_calls field: OpenAI's o-series reasoning models (o1, o3,
// o4-mini, ...) reject it with HTTP 400; compatible servers that do not
// know it ignore it.
func (p *Provider) acceptsParallelToolCalls() bool {
	if p.cfg.Provider != llm.ProviderOpenAI {
		return true
	}
	m := p.cfg.Model
	return !(len(m) >= 2 && m[0] == 'o' && m[1] >= '0' && m[1] <= '9')
}

func message(m llm.Message) (oai.ChatCompletionMessageParamUnion, error) {
	switch m.Role {
	case llm.RoleSystem:
		return oai.SystemMessage(m.Content), nil
	case llm.RoleUser:
		return oai.UserMessage(m.Content), nil
	case llm.RoleAssistant:
		var a oai.ChatCompletionAssistantMessageParam
		if m.Content != "" || len(m.ToolCalls) == 0 {
			a.Content.OfString = oai.String(m.Content)
		}
		for _, c := range m.ToolCalls {
			a.ToolCalls = append(a.ToolCalls, oai.ChatCompletionMessageToolCallUnionParam{
				OfFunction: &oai.ChatCompletionMessageFunctionToolCallParam{
					ID: c.ID,
					Function: oai.ChatCompletionMessageFunctionToolCallFunctionParam{
						Name:      c.Name,
						Arguments: c.Arguments,
					},
				},
			})
		}
		return oai.ChatCompletionMessageParamUnion{OfAssistant: &a}, nil
	case llm.RoleTool:
		if m.ToolCallID == "" {
			return oai.ChatCompletionMessageParamUnion{}, errors.New("tool result without a tool call id")
		}
		return oai.ToolMessage(m.Content, m.ToolCallID), nil
	}
	return oai.ChatCompletionMessageParamUnion{}, fmt.Errorf("unknown role %q", m.Role)
}

func (p *Provider) response(c *oai.ChatCompletion) (*llm.Response, error) {
	if c == nil || len(c.Choices) == 0 {
		return nil, p.ep.BadResponse("reply has no choices")
	}
	choice := c.Choices[0]
	resp := &llm.Response{
		Model:         c.Model,
		Text:          choice.Message.Content,
		RawStopReason: choice.FinishReason,
		StopReason:    stopReason(choice.FinishReason),
		Usage: llm.Usage{
			InputTokens:  c.Usage.PromptTokens,
			OutputTokens: c.Usage.CompletionTokens,
		},
	}
	if resp.Text == "" && choice.Message.Refusal != "" {
		resp.Text = choice.Message.Refusal
		resp.StopReason = llm.StopRefusal
	}
	for i, tc := range choice.Message.ToolCalls {
		call := llm.ToolCall{ID: tc.ID, Name: tc.Function.Name, Arguments: tc.Function.Arguments}
		if tc.Type == "custom" {
			call.Name, call.Arguments = tc.Custom.Name, tc.Custom.Input
		}
		if call.ID == "" {
			// Some compatible servers leave it out; the result must name it.
			call.ID = fmt.Sprintf("call_%d", i)
		}
		resp.ToolCalls = append(resp.ToolCalls, call)
	}
	if len(resp.ToolCalls) > 0 {
		// Ollama and others say "stop" even when they called a tool.
		resp.StopReason = llm.StopToolUse
	}
	return resp, nil
}

func stopReason(finish string) llm.StopReason {
	switch strings.ToLower(finish) {
	case "stop", "eos", "":
		return llm.StopEnd
	case "tool_calls", "function_call":
		return llm.StopToolUse
	case "length":
		return llm.StopMaxTokens
	case "content_filter":
		return llm.StopRefusal
	}
	return llm.StopOther
}
