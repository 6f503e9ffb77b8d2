package llm

// StrictSchema reports whether a tool's parameter schema meets what OpenAI's
// strict mode for function calling requires of its structure, so that the
// tool can be declared strict (the model's arguments then always match the
// schema): every object schema in it — the top level, nested properties,
// array items — sets "additionalProperties": false and lists every one of
// its properties in "required". A schema with an optional property does not
// qualify; it is sent without strict rather than rewritten.
//
// [RunCodeTool]'s schema qualifies.
func StrictSchema(schema map[string]any) bool {
	if schema == nil {
		return false
	}
	return strictObject(schema)
}

func strictObject(s map[string]any) bool {
	if t, _ := s["type"].(string); t != "object" {
		return false
	}
	if ap, ok := s["additionalProperties"].(bool); !ok || ap {
		return false
	}
	props, _ := s["properties"].(map[string]any)
	required := map[string]bool{}
	for _, name := range stringList(s["required"]) {
		required[name] = true
	}
	for name, p := range props {
		if !required[name] {
			return false
		}
		prop, ok := p.(map[string]any)
		if !ok || !strictValue(prop) {
			return false
		}
	}
	return true
}

// strictValue checks the schema of one value: objects as above, arrays by
// their items, anything else as is.
func strictValue(s map[string]any) bool {
	switch t, _ := s["type"].(string); t {
	case "object":
		return strictObject(s)
	case "array":
		items, ok := s["items"].(map[string]any)
		return !ok || strictValue(items)
	}
	return true
}
