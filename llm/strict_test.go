package llm_test

import (
	"testing"

	"github.com/coderun/coderun/llm"
)

func TestStrictSchema(t *testing.T) {
	obj := func(props map[string]any, required []string, additional any) map[string]any {
		s := map[string]any{"type": "object", "properties": props, "required": required}
		if additional != nil {
			s["additionalProperties"] = additional
		}
		return s
	}
	str := map[string]any{"type": "string"}
	cases := []struct {
		name   string
		schema map[string]any
		want   bool
	}{
		{"run_code", llm.RunCodeTool().Parameters, true},
		{"all required, closed", obj(map[string]any{"a": str}, []string{"a"}, false), true},
		{"no properties, closed", obj(nil, nil, false), true},
		{"required as []any", map[string]any{"type": "object", "properties": map[string]any{"a": str},
			"required": []any{"a"}, "additionalProperties": false}, true},
		{"optional property", obj(map[string]any{"a": str, "b": str}, []string{"a"}, false), false},
		{"additionalProperties unset", obj(map[string]any{"a": str}, []string{"a"}, nil), false},
		{"additionalProperties true", obj(map[string]any{"a": str}, []string{"a"}, true), false},
		{"open nested object", obj(map[string]any{"o": obj(map[string]any{"x": str}, []string{"x"}, nil)}, []string{"o"}, false), false},
		{"closed nested object", obj(map[string]any{"o": obj(map[string]any{"x": str}, []string{"x"}, false)}, []string{"o"}, false), true},
		{"open object in array", obj(map[string]any{"l": map[string]any{"type": "array", "items": obj(nil, nil, nil)}}, []string{"l"}, false), false},
		{"not an object", map[string]any{"type": "string"}, false},
		{"nil", nil, false},
	}
	for _, c := range cases {
		if got := llm.StrictSchema(c.schema); got != c.want {
			t.Errorf("%s: StrictSchema = %v, want %v", c.name, got, c.want)
		}
	}
}
