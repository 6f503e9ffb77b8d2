// Package anthropic is the [llm.Provider] for the Anthropic Messages API,
// built on the official anthropic-sdk-go.
//
// The provider-neutral conversation is mapped onto the Messages shape:
// system messages, in order, become the request's system blocks; an
// assistant turn becomes text plus tool_use blocks (its arguments sent back
// as the input object); consecutive tool results become the tool_result
// blocks of one user message, with is_error when the result reports a
// failure. Tools are sent with their JSON Schema as input_schema, without
// "strict" (only some Claude models accept it), and a request with tools
// asks for one tool call per turn (tool_choice auto with
// disable_parallel_tool_use); a turn with several tool_use blocks
// nonetheless comes back whole, every call in order.
//
// The SDK's own retries are switched off; the call is retried by
// [llm.Retry], and failures are classified from the HTTP exchange itself
// (Anthropic's 529 "overloaded" is a server error, retried). Each attempt is
// bounded by the SDK's request timeout ([llm.Config.AttemptTimeout]) and a
// reply that stalls midway is abandoned ([llm.Config.ReplyStallTimeout]);
// both are [llm.ErrTimeout], retried. The SDK is used
// without its environment defaults: only the Config decides the endpoint
// and the key.
package anthropic

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"time"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"

	"github.com/coderun/coderun/llm"
	"github.com/coderun/coderun/llm/internal/classify"
)

// Provider talks to one model over the Messages API. It is safe for
// concurrent use.
type Provider struct {
	cfg      llm.Config
	ep       classify.Endpoint
	messages sdk.MessageService
}

var _ llm.Provider = (*Provider)(nil)

// New returns a provider for cfg. cfg.Provider must be "anthropic" or empty;
// a key is required; the base URL defaults to llm.DefaultAnthropicBaseURL.
func New(cfg llm.Config) (*Provider, error) {
	if cfg.Provider == "" {
		cfg.Provider = llm.ProviderAnthropic
	}
	if cfg.Provider != llm.ProviderAnthropic {
		return nil, fmt.Errorf("anthropic: provider %q does not speak the Messages API", cfg.Provider)
	}
	if cfg.Model == "" {
		return nil, fmt.Errorf("%s: no model given", cfg.Provider)
	}
	if cfg.APIKey == "" {
		return nil, &llm.Error{Kind: llm.ErrAuth, Provider: cfg.Provider, Model: cfg.Model,
			Message: "no API key: set " + llm.EnvAnthropicKey}
	}
	if cfg.BaseURL == "" {
		cfg.BaseURL = llm.DefaultAnthropicBaseURL
	}
	if u, err := url.Parse(cfg.BaseURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("%s: base URL %q: want http(s)://host[:port]", cfg.Provider, cfg.BaseURL)
	}
	opts := []option.RequestOption{
		option.WithoutEnvironmentDefaults(), // no ANTHROPIC_* from the environment
		option.WithBaseURL(cfg.BaseURL),
		option.WithAPIKey(cfg.APIKey),
		option.WithMaxRetries(0), // llm.Retry retries
		option.WithMiddleware(classify.Middleware, classify.StallGuard(cfg.ReplyStallTimeout())),
		// Always explicit: it bounds each attempt, and it keeps the SDK from
		// refusing a large max_tokens without streaming.
		option.WithRequestTimeout(cfg.AttemptTimeout()),
	}
	if cfg.HTTPClient != nil {
		opts = append(opts, option.WithHTTPClient(cfg.HTTPClient))
	}
	client := sdk.NewClient(opts...)
	return &Provider{
		cfg: cfg,
		ep: classify.Endpoint{Provider: cfg.Provider, Model: cfg.Model,
			BaseURL: cfg.BaseURL, APIKey: cfg.APIKey},
		messages: client.Messages,
	}, nil
}

// Chat sends one Messages request, retrying as the Config's policy says.
func (p *Provider) Chat(ctx context.Context, req llm.Request) (*llm.Response, error) {
	params, err := p.params(req)
	if err != nil {
		return nil, err
	}
	var callOpts []option.RequestOption
	if req.Temperature != nil {
		// Not a field of this SDK's params; sent as is.
		callOpts = append(callOpts, option.WithJSONSet("temperature", *req.Temperature))
	}
	start := time.Now()
	var msg *sdk.Message
	attempts, err := p.cfg.Retry.Do(ctx, func(ctx context.Context) error {
		actx, ex := classify.WithExchange(ctx)
		m, err := p.messages.New(actx, params, callOpts...)
		if err != nil {
			return p.ep.Error(ctx, ex, err)
		}
		msg = m
		return nil
	})
	if err != nil {
		return nil, err
	}
	if msg == nil || (msg.Type != "" && msg.Type != "message") {
		return nil, p.ep.BadResponse("reply is not a message")
	}
	resp := response(msg)
	resp.Latency = time.Since(start)
	resp.Attempts = attempts
	if resp.ToolCalls, err = llm.ParseToolCalls(resp.ToolCalls, req.Tools); err != nil {
		return resp, fmt.Errorf("%s model %q: %w", p.cfg.Provider, p.cfg.Model, err)
	}
	return resp, nil
}

func (p *Provider) params(req llm.Request) (sdk.MessageNewParams, error) {
	params := sdk.MessageNewParams{
		Model:     sdk.Model(p.cfg.Model),
		MaxTokens: int64(p.cfg.MaxTokensFor(req)),
	}
	toolResults := false // the last message holds tool results
	for i, m := range req.Messages {
		switch m.Role {
		case llm.RoleSystem:
			params.System = append(params.System, sdk.TextBlockParam{Text: m.Content})
			toolResults = false
		case llm.RoleUser:
			params.Messages = append(params.Messages, sdk.NewUserMessage(sdk.NewTextBlock(m.Content)))
			toolResults = false
		case llm.RoleAssistant:
			var blocks []sdk.ContentBlockParamUnion
			if m.Content != "" {
				blocks = append(blocks, sdk.NewTextBlock(m.Content))
			}
			for _, c := range m.ToolCalls {
				blocks = append(blocks, sdk.NewToolUseBlock(c.ID, toolInput(c.Arguments), c.Name))
			}
			if len(blocks) > 0 { // the API rejects empty turns
				params.Messages = append(params.Messages, sdk.NewAssistantMessage(blocks...))
			}
			toolResults = false
		case llm.RoleTool:
			if m.ToolCallID == "" {
				return params, fmt.Errorf("%s: message %d: tool result without a tool call id", p.cfg.Provider, i)
			}
			result := sdk.ToolResultBlockParam{ToolUseID: m.ToolCallID}
			if m.Content != "" { // the API rejects empty text blocks
				result.Content = []sdk.ToolResultBlockParamContentUnion{{OfText: &sdk.TextBlockParam{Text: m.Content}}}
			}
			if m.IsError {
				result.IsError = sdk.Bool(true)
			}
			block := sdk.ContentBlockParamUnion{OfToolResult: &result}
			if toolResults {
				last := &params.Messages[len(params.Messages)-1]
				last.OfUser.Content = append(last.OfUser.Content, block)
			} else {
				params.Messages = append(params.Messages, sdk.NewUserMessage(block))
			}
			toolResults = true
		default:
			return params, fmt.Errorf("%s: message %d: unknown role %q", p.cfg.Provider, i, m.Role)
		}
	}
	for _, t := range req.Tools {
		tool := sdk.ToolParam{Name: t.Name, InputSchema: inputSchema(t.Parameters)}
		if t.Description != "" {
			tool.Description = sdk.String(t.Description)
		}
		params.Tools = append(params.Tools, sdk.ToolUnionParam{OfTool: &tool})
	}
	if len(req.Tools) > 0 {
		// One call per turn: the agent runs one program at a time.
		params.ToolChoice = sdk.ToolChoiceUnionParam{OfAuto: &sdk.ToolChoiceAutoParam{
			DisableParallelToolUse: sdk.Bool(true),
		}}
	}
	return params, nil
}

// toolInput returns the arguments of an earlier call as the JSON object the
// API wants back; arguments that are not an object (a malformed call the
// model is being told about) go back as {}.
func toolInput(args string) any {
	var obj map[string]json.RawMessage
	if json.Unmarshal([]byte(args), &obj) != nil || obj == nil {
		return map[string]any{}
	}
	return json.RawMessage(args)
}

func inputSchema(params map[string]any) sdk.ToolInputSchemaParam {
	var s sdk.ToolInputSchemaParam
	for k, v := range params {
		switch k {
		case "type":
		case "properties":
			s.Properties = v
		case "required":
			switch r := v.(type) {
			case []string:
				s.Required = r
			case []any:
				for _, x := range r {
					if x, ok := x.(string); ok {
						s.Required = append(s.Required, x)
					}
				}
			}
		default:
			if s.ExtraFields == nil {
				s.ExtraFields = map[string]any{}
			}
			s.ExtraFields[k] = v
		}
	}
	return s
}

func response(m *sdk.Message) *llm.Response {
	resp := &llm.Response{
		Model:         m.Model,
		RawStopReason: string(m.StopReason),
		StopReason:    stopReason(m.StopReason),
		Usage: llm.Usage{
			InputTokens:  m.Usage.InputTokens + m.Usage.CacheCreationInputTokens + m.Usage.CacheReadInputTokens,
			OutputTokens: m.Usage.OutputTokens,
		},
	}
	var text []string
	for _, b := range m.Content {
		switch b.Type {
		case "text":
			text = append(text, b.Text)
		case "tool_use":
			resp.ToolCalls = append(resp.ToolCalls, llm.ToolCall{ID: b.ID, Name: b.Name, Arguments: string(b.Input)})
		}
	}
	resp.Text = strings.Join(text, "\n")
	if len(resp.ToolCalls) > 0 {
		resp.StopReason = llm.StopToolUse
	}
	return resp
}

func stopReason(r sdk.StopReason) llm.StopReason {
	switch r {
	case sdk.StopReasonEndTurn, sdk.StopReasonStopSequence, "":
		return llm.StopEnd
	case sdk.StopReasonToolUse:
		return llm.StopToolUse
	case sdk.StopReasonMaxTokens, sdk.StopReasonModelContextWindowExceeded:
		return llm.StopMaxTokens
	case sdk.StopReasonRefusal:
		return llm.StopRefusal
	}
	return llm.StopOther
}
