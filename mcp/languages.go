package mcp

import (
	"fmt"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/coderun/coderun/language"
	"github.com/coderun/coderun/sandbox"
)

// The languages the tools' texts name are the code's, not a list written
// here: run_code takes the runtime's own languages (sandbox.Languages, what
// parseLanguage accepts), a session those with a session driver
// (language.Native: Python, Bash and Node).

// runLanguages lists run_code's languages for its texts: "python
// (default), bash or node".
func runLanguages() string {
	var names []string
	for _, l := range sandbox.Languages() {
		names = append(names, string(l))
	}
	return orList(names, string(sandbox.Python))
}

// sessionLanguages lists the languages a session may have, for the
// session tools' texts.
func sessionLanguages() string {
	return orList(language.NativeNames(), string(sandbox.Python))
}

// orList is "a (default), b or c", the default first.
func orList(names []string, def string) string {
	var out []string
	for _, n := range names {
		if n == def {
			out = append([]string{n + " (default)"}, out...)
		} else {
			out = append(out, n)
		}
	}
	if len(out) < 2 {
		return strings.Join(out, "")
	}
	return strings.Join(out[:len(out)-1], ", ") + " or " + out[len(out)-1]
}

// inputSchema is T's input schema, inferred as the SDK does, with its
// "language" property described by language (a struct tag cannot say
// what the code supports).
func inputSchema[T any](language string) *jsonschema.Schema {
	s, err := jsonschema.For[T](&jsonschema.ForOptions{})
	if err != nil {
		panic(fmt.Sprintf("mcp: input schema of %T: %v", *new(T), err))
	}
	p, ok := s.Properties["language"]
	if !ok {
		panic(fmt.Sprintf("mcp: input schema of %T has no language", *new(T)))
	}
	p.Description = strings.ReplaceAll(p.Description, "{languages}", language)
	return s
}
