package llmtest

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/coderun/coderun/llm"
)

// Sent is a recorded request read back into package llm's terms, for tests
// to compare with what they asked a provider to send.
type Sent struct {
	Model    string
	Messages []llm.Message
	Tools    []llm.Tool
	// MaxTokens is max_tokens or max_completion_tokens, 0 if absent.
	MaxTokens   int
	Temperature *float64
}

// JSON decodes the request body into a generic value, for checks on the raw
// wire shape.
func (r Request) JSON() map[string]any {
	var v map[string]any
	_ = json.Unmarshal(r.Body, &v)
	return v
}

// Decode reads the request back as a conversation. Anthropic system blocks
// become one system message per block, at the front; a user message's
// tool_result blocks become one tool message each, before its text.
func (r Request) Decode() (Sent, error) {
	if r.Protocol == OpenAI {
		return decodeOpenAI(r.Body)
	}
	return decodeAnthropic(r.Body)
}

// validate checks the request against the protocol's rules, as the real
// API would before answering, and returns the model asked for.
func validate(r Request) (string, error) {
	sent, err := r.Decode()
	if err != nil {
		return "", err
	}
	if sent.Model == "" {
		return "", errors.New("model: field required")
	}
	if r.Protocol == Anthropic {
		if r.Header.Get("Anthropic-Version") == "" {
			return "", errors.New("anthropic-version: header is required")
		}
		if sent.MaxTokens <= 0 {
			return "", errors.New("max_tokens: field required")
		}
	}
	return sent.Model, checkConversation(r.Protocol, sent.Messages)
}

// checkConversation enforces the pairing of tool calls and results that both
// APIs enforce: every tool result answers a call of the assistant turn just
// before it, and every call of a turn is answered before the conversation
// goes on.
func checkConversation(protocol string, msgs []llm.Message) error {
	if len(msgs) == 0 {
		return errors.New("messages: at least one message is required")
	}
	open := map[string]bool{} // calls of the last assistant turn, not yet answered
	unanswered := func(at int) error {
		for id, pending := range open {
			if pending {
				return fmt.Errorf("messages.%d: tool call %s has no tool result after it", at, id)
			}
		}
		return nil
	}
	first := true
	for i, m := range msgs {
		switch m.Role {
		case llm.RoleTool:
			pending, known := open[m.ToolCallID]
			if !known {
				return fmt.Errorf("messages.%d: tool result for %q, which is not a tool call of the preceding assistant turn", i, m.ToolCallID)
			}
			if !pending {
				return fmt.Errorf("messages.%d: second tool result for %q", i, m.ToolCallID)
			}
			open[m.ToolCallID] = false
		case llm.RoleAssistant:
			if protocol == Anthropic && first {
				return fmt.Errorf("messages.%d: the first message must use the user role", i)
			}
			if err := unanswered(i); err != nil {
				return err
			}
			open = map[string]bool{}
			for _, c := range m.ToolCalls {
				if c.ID == "" {
					return fmt.Errorf("messages.%d: tool call without id", i)
				}
				if protocol == Anthropic && !isJSONObject(c.Arguments) {
					return fmt.Errorf("messages.%d: tool_use.input: Input should be a valid dictionary", i)
				}
				open[c.ID] = true
			}
		case llm.RoleSystem:
			if protocol == Anthropic {
				break // collected apart from the messages
			}
			fallthrough
		default:
			if err := unanswered(i); err != nil {
				return err
			}
			open = map[string]bool{}
		}
		if m.Role != llm.RoleSystem {
			first = false
		}
	}
	return unanswered(len(msgs))
}

func isJSONObject(s string) bool {
	var v map[string]json.RawMessage
	return json.Unmarshal([]byte(s), &v) == nil && v != nil
}

// --- OpenAI Chat Completions ---

type openAIRequest struct {
	Model    string `json:"model"`
	Messages []struct {
		Role      string          `json:"role"`
		Content   json.RawMessage `json:"content"`
		ToolCalls []struct {
			ID       string `json:"id"`
			Type     string `json:"type"`
			Function struct {
				Name      string `json:"name"`
				Arguments string `json:"arguments"`
			} `json:"function"`
		} `json:"tool_calls"`
		ToolCallID string `json:"tool_call_id"`
	} `json:"messages"`
	Tools []struct {
		Type     string `json:"type"`
		Function struct {
			Name        string         `json:"name"`
			Description string         `json:"description"`
			Parameters  map[string]any `json:"parameters"`
		} `json:"function"`
	} `json:"tools"`
	MaxTokens           int      `json:"max_tokens"`
	MaxCompletionTokens int      `json:"max_completion_tokens"`
	Temperature         *float64 `json:"temperature"`
}

func decodeOpenAI(body []byte) (Sent, error) {
	var req openAIRequest
	if err := json.Unmarshal(body, &req); err != nil {
		return Sent{}, fmt.Errorf("request body is not a chat completion request: %v", err)
	}
	sent := Sent{Model: req.Model, MaxTokens: max(req.MaxTokens, req.MaxCompletionTokens), Temperature: req.Temperature}
	for i, m := range req.Messages {
		text, err := openAIText(m.Content)
		if err != nil {
			return Sent{}, fmt.Errorf("messages.%d.content: %v", i, err)
		}
		msg := llm.Message{Role: llm.Role(m.Role), Content: text, ToolCallID: m.ToolCallID}
		switch msg.Role {
		case llm.RoleSystem, llm.RoleUser, llm.RoleAssistant:
		case "developer":
			msg.Role = llm.RoleSystem
		case llm.RoleTool:
			if m.ToolCallID == "" {
				return Sent{}, fmt.Errorf("messages.%d: tool_call_id: field required", i)
			}
		default:
			return Sent{}, fmt.Errorf("messages.%d.role: unknown role %q", i, m.Role)
		}
		for _, c := range m.ToolCalls {
			if c.Type != "function" {
				return Sent{}, fmt.Errorf("messages.%d.tool_calls: type %q, want function", i, c.Type)
			}
			msg.ToolCalls = append(msg.ToolCalls, llm.ToolCall{ID: c.ID, Name: c.Function.Name, Arguments: c.Function.Arguments})
		}
		sent.Messages = append(sent.Messages, msg)
	}
	for i, t := range req.Tools {
		if t.Type != "function" || t.Function.Name == "" {
			return Sent{}, fmt.Errorf("tools.%d: want a function with a name", i)
		}
		sent.Tools = append(sent.Tools, llm.Tool{Name: t.Function.Name, Description: t.Function.Description, Parameters: t.Function.Parameters})
	}
	return sent, nil
}

// openAIText reads content given as a string, null, or text parts.
func openAIText(raw json.RawMessage) (string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, nil
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", errors.New("want a string or an array of parts")
	}
	var b strings.Builder
	for _, p := range parts {
		if p.Type == "text" {
			b.WriteString(p.Text)
		}
	}
	return b.String(), nil
}

// --- Anthropic Messages ---

type anthropicBlock struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
	ToolUseID string          `json:"tool_use_id"`
	Content   json.RawMessage `json:"content"`
	IsError   bool            `json:"is_error"`
}

type anthropicRequest struct {
	Model     string          `json:"model"`
	MaxTokens int             `json:"max_tokens"`
	System    json.RawMessage `json:"system"`
	Messages  []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	} `json:"messages"`
	Tools []struct {
		Name        string         `json:"name"`
		Description string         `json:"description"`
		InputSchema map[string]any `json:"input_schema"`
	} `json:"tools"`
	Temperature *float64 `json:"temperature"`
}

func decodeAnthropic(body []byte) (Sent, error) {
	var req anthropicRequest
	if err := json.Unmarshal(body, &req); err != nil {
		return Sent{}, fmt.Errorf("request body is not a messages request: %v", err)
	}
	sent := Sent{Model: req.Model, MaxTokens: req.MaxTokens, Temperature: req.Temperature}
	system, err := anthropicBlocks(req.System)
	if err != nil {
		return Sent{}, fmt.Errorf("system: %v", err)
	}
	for _, b := range system {
		sent.Messages = append(sent.Messages, llm.System(b.Text))
	}
	for i, m := range req.Messages {
		blocks, err := anthropicBlocks(m.Content)
		if err != nil {
			return Sent{}, fmt.Errorf("messages.%d.content: %v", i, err)
		}
		switch m.Role {
		case "user":
			var text []string
			for _, b := range blocks {
				switch b.Type {
				case "tool_result":
					content, err := anthropicBlocks(b.Content)
					if err != nil {
						return Sent{}, fmt.Errorf("messages.%d.content.tool_result: %v", i, err)
					}
					var out []string
					for _, c := range content {
						out = append(out, c.Text)
					}
					sent.Messages = append(sent.Messages, llm.ToolResult(b.ToolUseID, strings.Join(out, ""), b.IsError))
				case "text":
					text = append(text, b.Text)
				default:
					return Sent{}, fmt.Errorf("messages.%d: unexpected %s block in a user message", i, b.Type)
				}
			}
			if len(text) > 0 {
				sent.Messages = append(sent.Messages, llm.User(strings.Join(text, "\n")))
			}
		case "assistant":
			msg := llm.Message{Role: llm.RoleAssistant}
			var text []string
			for _, b := range blocks {
				switch b.Type {
				case "text":
					if b.Text == "" {
						return Sent{}, fmt.Errorf("messages.%d: text content blocks must be non-empty", i)
					}
					text = append(text, b.Text)
				case "tool_use":
					msg.ToolCalls = append(msg.ToolCalls, llm.ToolCall{ID: b.ID, Name: b.Name, Arguments: string(b.Input)})
				default:
					return Sent{}, fmt.Errorf("messages.%d: unexpected %s block in an assistant message", i, b.Type)
				}
			}
			if len(blocks) == 0 {
				return Sent{}, fmt.Errorf("messages.%d: all messages must have non-empty content", i)
			}
			msg.Content = strings.Join(text, "\n")
			sent.Messages = append(sent.Messages, msg)
		default:
			return Sent{}, fmt.Errorf("messages.%d.role: unexpected role %q", i, m.Role)
		}
	}
	for i, t := range req.Tools {
		if t.Name == "" || t.InputSchema == nil {
			return Sent{}, fmt.Errorf("tools.%d: name and input_schema are required", i)
		}
		sent.Tools = append(sent.Tools, llm.Tool{Name: t.Name, Description: t.Description, Parameters: t.InputSchema})
	}
	return sent, nil
}

// anthropicBlocks reads content given as a string or as blocks.
func anthropicBlocks(raw json.RawMessage) ([]anthropicBlock, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return []anthropicBlock{{Type: "text", Text: s}}, nil
	}
	var blocks []anthropicBlock
	if err := json.Unmarshal(raw, &blocks); err != nil {
		return nil, errors.New("want a string or an array of content blocks")
	}
	return blocks, nil
}
