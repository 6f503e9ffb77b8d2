// Package llm is coderun's provider-neutral interface to language models.
//
// The agent loop talks to a model through one method, [Provider.Chat]: it
// sends the conversation so far (system, user and assistant messages and the
// results of earlier tool calls) plus the tools the model may call, and gets
// back one assistant turn — its text, the tool calls it made, the token usage,
// the latency and why it stopped. Nothing in this package knows about
// sandboxes or sessions; nothing above it needs to know which vendor answered.
//
// The layout follows Litestream: this package holds the domain types, the
// [Provider] interface, the typed errors, the retry policy and the code-block
// extraction used for models without tool calling; each backend is its own
// package implementing [Provider]:
//
//   - llm/openai speaks the OpenAI Chat Completions API through the official
//     openai-go SDK, and so also serves every OpenAI-compatible server
//     (Ollama, vLLM, llama.cpp's server, LM Studio) given a base URL;
//   - llm/anthropic speaks the Anthropic Messages API through the official
//     anthropic-sdk-go;
//   - llm/provider turns a model spec such as "anthropic:claude-sonnet-4-5" or
//     "ollama:qwen2.5-coder" plus the environment into a ready [Provider];
//   - llm/llmtest is a scripted model server speaking both wire protocols on
//     127.0.0.1, and the conformance suite every backend passes.
//
// Errors are values to branch on, not strings to parse: every failure of a
// call wraps one of the sentinels ([ErrAuth], [ErrModelNotFound],
// [ErrRateLimited], [ErrServer], [ErrUnreachable], [ErrTimeout],
// [ErrBadRequest], [ErrBadResponse]) inside an [*Error], and tool calls whose arguments the
// model got wrong come back as [*ToolCallError] (matching
// [ErrMalformedToolCall]) next to the response, so the agent can feed the
// problem back to the model. API keys never appear in an error string or in
// the printed form of a [Config]. Rate limits and server errors are retried
// by the package's own bounded backoff, not the SDKs' ([Retry] says what and
// how long).
//
// No call waits forever on a server: every attempt is bounded by
// [Config.Timeout] ([DefaultTimeout] unless set), and a reply whose body
// stops arriving for [Config.StallTimeout] ([DefaultStallTimeout]) is
// abandoned; both fail the attempt with [ErrTimeout], which the retry
// policy retries.
//
// For models without tool calling, [ExtractCode] finds the fenced code blocks
// of a reply and [SelectCode] picks what to run by a documented rule.
package llm

import (
	"context"
	"time"
)

// Provider is a chat model behind some API. Chat sends one request and
// returns the model's next turn.
//
// Chat blocks until the model answers, the retry policy gives up, or ctx is
// done; it is safe for concurrent use. On failure it returns a nil response
// and an error wrapping one of the package's sentinel errors (or ctx's
// error). The one exception is a turn whose tool calls are malformed: Chat
// then returns the response together with an error that matches
// [ErrMalformedToolCall], so the caller can answer each bad call.
type Provider interface {
	Chat(ctx context.Context, req Request) (*Response, error)
}

// Role says who speaks a [Message].
type Role string

// The roles of a conversation.
const (
	// RoleSystem carries instructions. Providers that take the system prompt
	// apart from the conversation (Anthropic) collect every system message,
	// in order, into it.
	RoleSystem Role = "system"
	// RoleUser is the person or program asking.
	RoleUser Role = "user"
	// RoleAssistant is an earlier turn of the model, with its tool calls.
	RoleAssistant Role = "assistant"
	// RoleTool is the result of one tool call, named by ToolCallID.
	RoleTool Role = "tool"
)

// Message is one entry of a conversation.
type Message struct {
	Role Role `json:"role"`
	// Content is the text of the message; for RoleTool, the tool's output.
	Content string `json:"content,omitempty"`
	// ToolCalls are the calls an assistant message made (RoleAssistant only).
	ToolCalls []ToolCall `json:"tool_calls,omitempty"`
	// ToolCallID names the call a tool result answers (RoleTool only).
	ToolCallID string `json:"tool_call_id,omitempty"`
	// IsError marks a tool result that reports a failure (RoleTool only).
	// Anthropic sends it as is_error; OpenAI has no such flag and relies on
	// the content.
	IsError bool `json:"is_error,omitempty"`
}

// System returns a system message.
func System(text string) Message { return Message{Role: RoleSystem, Content: text} }

// User returns a user message.
func User(text string) Message { return Message{Role: RoleUser, Content: text} }

// Assistant returns an assistant message with text and, optionally, the tool
// calls it made. [Response.Message] builds the same from a model's reply.
func Assistant(text string, calls ...ToolCall) Message {
	return Message{Role: RoleAssistant, Content: text, ToolCalls: calls}
}

// ToolResult returns the message answering the tool call with the given id.
func ToolResult(callID, content string, isError bool) Message {
	return Message{Role: RoleTool, ToolCallID: callID, Content: content, IsError: isError}
}

// Request is one chat call.
type Request struct {
	Messages []Message `json:"messages"`
	// Tools the model may call; none means a plain text turn.
	Tools []Tool `json:"tools,omitempty"`
	// MaxTokens bounds the reply; 0 means the provider's configured default
	// (see [Config.MaxTokens]).
	MaxTokens int `json:"max_tokens,omitempty"`
	// Temperature, when set, is passed through; nil leaves the model's default
	// (some reasoning models reject any explicit value).
	Temperature *float64 `json:"temperature,omitempty"`
}

// Response is the model's turn.
type Response struct {
	// Model is the model that answered, as the server names it.
	Model string `json:"model"`
	// Text is the assistant's text, the text blocks joined by newlines.
	Text string `json:"text"`
	// ToolCalls are the tool calls the model made, in order.
	ToolCalls []ToolCall `json:"tool_calls,omitempty"`
	// Usage is the token count of this call (the successful attempt).
	Usage Usage `json:"usage"`
	// Latency is the wall time of the whole call, retries and waits included.
	Latency time.Duration `json:"latency"`
	// Attempts is how many HTTP requests the call took (1 without retries).
	Attempts int `json:"attempts"`
	// StopReason says, provider-neutrally, why the model stopped.
	StopReason StopReason `json:"stop_reason"`
	// RawStopReason is the provider's own word for it ("tool_calls",
	// "end_turn", "length", ...).
	RawStopReason string `json:"raw_stop_reason,omitempty"`
}

// Message returns the response as an assistant message, ready to append to
// the conversation before the tool results that answer it.
func (r *Response) Message() Message {
	return Assistant(r.Text, r.ToolCalls...)
}

// Usage counts the tokens of one call.
type Usage struct {
	// InputTokens is every prompt token, cached or not.
	InputTokens int64 `json:"input_tokens"`
	// OutputTokens is every generated token, reasoning included.
	OutputTokens int64 `json:"output_tokens"`
}

// Add returns the sum of two usages, for totals over a run.
func (u Usage) Add(v Usage) Usage {
	return Usage{InputTokens: u.InputTokens + v.InputTokens, OutputTokens: u.OutputTokens + v.OutputTokens}
}

// StopReason is why the model ended its turn, from a closed set.
type StopReason string

// The stop reasons.
const (
	// StopEnd: the model finished (or hit a stop sequence).
	StopEnd StopReason = "end"
	// StopToolUse: the model wants its tool calls run.
	StopToolUse StopReason = "tool_use"
	// StopMaxTokens: the reply was cut at the token limit.
	StopMaxTokens StopReason = "max_tokens"
	// StopRefusal: the provider's filters withheld or cut the reply.
	StopRefusal StopReason = "refusal"
	// StopOther: anything else; see Response.RawStopReason.
	StopOther StopReason = "other"
)
