package llm

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/coderun/coderun/language"
)

// Tool is a function the model may call.
type Tool struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	// Parameters is the JSON Schema of the arguments, an object schema with
	// "properties" and, usually, "required".
	Parameters map[string]any `json:"parameters"`
}

// ToolCall is one call the model made.
type ToolCall struct {
	// ID pairs the call with its result ([ToolResult]).
	ID   string `json:"id"`
	Name string `json:"name"`
	// Arguments is the JSON text of the arguments exactly as the model wrote
	// it. It is a string, not a json.RawMessage, because it may be invalid.
	Arguments string `json:"arguments"`
	// Args is Arguments parsed; nil when they are not a JSON object.
	Args map[string]any `json:"-"`
}

// RunCodeToolName is the name of the native code tool.
const RunCodeToolName = "run_code"

// RunCodeTool returns the definition of the native tool "run_code", whose
// arguments are a language (one of [Languages]) and the code to run.
func RunCodeTool() Tool {
	return Tool{
		Name: RunCodeToolName,
		Description: "Run code in a fresh, isolated sandbox and return its standard output, " +
			"standard error and exit status. Use it to compute, check or inspect anything " +
			"rather than guessing. Print whatever you need to see.",
		Parameters: map[string]any{
			"type": "object",
			"properties": map[string]any{
				"language": map[string]any{
					"type":        "string",
					"enum":        language.NativeNames(),
					"description": "Language of the code: python (Python 3), bash, or node (JavaScript).",
				},
				"code": map[string]any{
					"type":        "string",
					"description": "The complete program to run.",
				},
			},
			"required":             []string{"language", "code"},
			"additionalProperties": false,
		},
	}
}

// RunCodeArgs are the arguments of a run_code call.
type RunCodeArgs struct {
	Language language.Language `json:"language"`
	Code     string            `json:"code"`
}

// RunCode decodes the call's arguments as run_code arguments. The language is
// normalised ("py" → "python", "js" → "node"); an unknown language,
// empty code, or arguments that are not a JSON object give a *ToolCallError,
// whose message is written to be shown to the model.
func (c ToolCall) RunCode() (RunCodeArgs, error) {
	if c.Name != RunCodeToolName {
		return RunCodeArgs{}, c.fail(fmt.Errorf("is not %s", RunCodeToolName))
	}
	var raw struct {
		Language *string `json:"language"`
		Code     *string `json:"code"`
	}
	if err := json.Unmarshal([]byte(c.Arguments), &raw); err != nil {
		return RunCodeArgs{}, c.fail(argumentSyntax(err))
	}
	if raw.Code == nil || strings.TrimSpace(*raw.Code) == "" {
		return RunCodeArgs{}, c.fail(errors.New(`missing argument "code"`))
	}
	if raw.Language == nil {
		return RunCodeArgs{}, c.fail(errors.New(`missing argument "language"`))
	}
	lang, ok := NormalizeLanguage(*raw.Language)
	if !ok {
		return RunCodeArgs{}, c.fail(fmt.Errorf("unsupported language %q (use one of %s)",
			*raw.Language, strings.Join(language.NativeNames(), ", ")))
	}
	return RunCodeArgs{Language: lang, Code: *raw.Code}, nil
}

func (c ToolCall) fail(err error) *ToolCallError {
	return &ToolCallError{ID: c.ID, Name: c.Name, Arguments: c.Arguments, Err: err}
}

// ParseToolCall returns the call with Args filled in, and a *ToolCallError
// when the call does not fit the tools offered: an unknown tool, arguments
// that are not a JSON object, a required argument missing, or an argument of
// the wrong JSON type. Providers run it on every call they return.
func ParseToolCall(call ToolCall, tools []Tool) (ToolCall, error) {
	var tool *Tool
	for i := range tools {
		if tools[i].Name == call.Name {
			tool = &tools[i]
			break
		}
	}
	if tool == nil && len(tools) == 0 {
		return call, call.fail(errors.New("unknown tool (no tools were offered)"))
	}
	if tool == nil {
		names := make([]string, len(tools))
		for i, t := range tools {
			names[i] = t.Name
		}
		return call, call.fail(fmt.Errorf("unknown tool (available: %s)", strings.Join(names, ", ")))
	}
	args := strings.TrimSpace(call.Arguments)
	if args == "" {
		// Some servers send "" for a call without arguments.
		args = "{}"
	}
	var parsed map[string]any
	if err := json.Unmarshal([]byte(args), &parsed); err != nil {
		return call, call.fail(argumentSyntax(err))
	}
	if parsed == nil {
		return call, call.fail(errors.New("arguments are null, want a JSON object"))
	}
	call.Args = parsed
	if err := checkSchema(parsed, tool.Parameters); err != nil {
		return call, call.fail(err)
	}
	return call, nil
}

// ParseToolCalls applies [ParseToolCall] to each call and joins the errors.
func ParseToolCalls(calls []ToolCall, tools []Tool) ([]ToolCall, error) {
	var errs []error
	for i := range calls {
		var err error
		calls[i], err = ParseToolCall(calls[i], tools)
		if err != nil {
			errs = append(errs, err)
		}
	}
	return calls, errors.Join(errs...)
}

func argumentSyntax(err error) error {
	var typeErr *json.UnmarshalTypeError
	if errors.As(err, &typeErr) && typeErr.Field == "" {
		return fmt.Errorf("arguments are a JSON %s, want a JSON object", typeErr.Value)
	}
	if errors.As(err, &typeErr) {
		return fmt.Errorf("argument %q is a JSON %s, want %s", typeErr.Field, typeErr.Value, typeErr.Type)
	}
	return fmt.Errorf("arguments are not valid JSON: %w", err)
}

// checkSchema checks the parts of an object schema that models get wrong in
// practice: required properties and the JSON type of each property. It is not
// a JSON Schema validator.
func checkSchema(args map[string]any, schema map[string]any) error {
	for _, name := range stringList(schema["required"]) {
		if _, ok := args[name]; !ok {
			return fmt.Errorf("missing argument %q", name)
		}
	}
	props, _ := schema["properties"].(map[string]any)
	for name, value := range args {
		prop, _ := props[name].(map[string]any)
		want, _ := prop["type"].(string)
		if want == "" {
			continue
		}
		if got := jsonType(value); got != want && !(want == "number" && got == "integer") {
			return fmt.Errorf("argument %q is a JSON %s, want %s", name, got, want)
		}
	}
	return nil
}

func stringList(v any) []string {
	switch v := v.(type) {
	case []string:
		return v
	case []any:
		out := make([]string, 0, len(v))
		for _, s := range v {
			if s, ok := s.(string); ok {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}

func jsonType(v any) string {
	switch v := v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case string:
		return "string"
	case float64:
		if v == float64(int64(v)) {
			return "integer"
		}
		return "number"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return fmt.Sprintf("%T", v)
}
