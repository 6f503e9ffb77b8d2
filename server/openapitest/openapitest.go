// Package openapitest holds a server's answers to its OpenAPI document in
// tests: each answer's status must be documented for its route and
// method, its Content-Type too, and a JSON body must validate against the
// documented schema (JSON Schema draft 2020-12, as OpenAPI 3.1 has it).
package openapitest

import (
	"bytes"
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// Checker checks answers against one document.
type Checker struct {
	doc    map[string]any
	routes []route

	mu   sync.Mutex
	comp *jsonschema.Compiler
}

type route struct {
	template string
	re       *regexp.Regexp
}

const base = "https://coderun.test/openapi.json"

// New reads the document served at url (".../openapi.json").
func New(url string) (*Checker, error) {
	resp, err := http.Get(url)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	doc, err := jsonschema.UnmarshalJSON(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("openapitest: the document: %w", err)
	}
	m, ok := doc.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("openapitest: the document is not an object")
	}
	c := &Checker{doc: m, comp: jsonschema.NewCompiler()}
	if err := c.comp.AddResource(base, doc); err != nil {
		return nil, err
	}
	paths, _ := m["paths"].(map[string]any)
	param := regexp.MustCompile(`\\\{[^}]+\\\}`)
	for tmpl := range paths {
		re := param.ReplaceAllStringFunc(regexp.QuoteMeta(tmpl), func(p string) string {
			if strings.Contains(p, "path") {
				return ".+" // a workspace path may hold slashes
			}
			return "[^/]+"
		})
		c.routes = append(c.routes, route{template: tmpl, re: regexp.MustCompile("^" + re + "$")})
	}
	return c, nil
}

// Check holds an answer (its status, Content-Type and body) to the
// operation the document has for method and the request's path.
func (c *Checker) Check(method, path string, status int, contentType string, body []byte) error {
	tmpl := ""
	for _, r := range c.routes {
		if r.re.MatchString(path) && (tmpl == "" || len(r.template) > len(tmpl)) {
			tmpl = r.template
		}
	}
	if tmpl == "" {
		return fmt.Errorf("%s %s: no documented path matches", method, path)
	}
	if lookup(c.doc, operation(method, tmpl)) == nil {
		return fmt.Errorf("%s %s: %s has no %s operation", method, path, tmpl, method)
	}
	return c.CheckOperation(method, tmpl, status, contentType, body)
}

// CheckOperation is Check for a request to the document's path template
// tmpl ("/v1/sessions/{id}").
func (c *Checker) CheckOperation(method, tmpl string, status int, contentType string, body []byte) error {
	op := operation(method, tmpl)
	if lookup(c.doc, op) == nil {
		return fmt.Errorf("%s %s: the document has no such operation", method, tmpl)
	}
	resp, _ := lookup(c.doc, op+"/responses/"+strconv.Itoa(status)).(map[string]any)
	if resp == nil {
		return fmt.Errorf("%s %s answered %d, which the document does not list: %s", method, tmpl, status, body)
	}
	content, _ := resp["content"].(map[string]any)
	if len(content) == 0 {
		if len(bytes.TrimSpace(body)) > 0 {
			return fmt.Errorf("%s %s %d: the document says no body; got %q", method, tmpl, status, body)
		}
		return nil
	}
	ct := strings.TrimSpace(strings.Split(contentType, ";")[0])
	if content[ct] == nil {
		// A media type range covers it ("image/*", "*/*").
		major, _, _ := strings.Cut(ct, "/")
		if content[major+"/*"] != nil || content["*/*"] != nil {
			return nil
		}
		return fmt.Errorf("%s %s %d: Content-Type %q is not documented", method, tmpl, status, ct)
	}
	if ct != "application/json" {
		return nil
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("%s %s %d: not JSON: %v", method, tmpl, status, err)
	}
	if err := c.validate(op+"/responses/"+strconv.Itoa(status)+"/content/application~1json/schema", v); err != nil {
		return fmt.Errorf("%s %s %d: the answer does not match the document: %w\n%s", method, tmpl, status, err, body)
	}
	return nil
}

// CheckRequest holds a JSON request body (v, as json.Unmarshal into an
// any reads it) to the document's for method and the path template tmpl.
func (c *Checker) CheckRequest(method, tmpl string, v any) error {
	if err := c.validate(operation(method, tmpl)+"/requestBody/content/application~1json/schema", v); err != nil {
		return fmt.Errorf("%s %s: the request does not match the document: %w", method, tmpl, err)
	}
	return nil
}

// AssertFormat has the schemas' formats ("date-time", ...) checked too;
// call it before the first check.
func (c *Checker) AssertFormat() { c.comp.AssertFormat() }

// validate checks v against the schema at the document's JSON pointer.
func (c *Checker) validate(ptr string, v any) error {
	c.mu.Lock()
	sch, err := c.comp.Compile(base + "#" + ptr)
	c.mu.Unlock()
	if err != nil {
		return fmt.Errorf("compile %s: %w", ptr, err)
	}
	return sch.Validate(v)
}

// operation is the JSON pointer of the operation of method on the path
// template tmpl.
func operation(method, tmpl string) string {
	return "/paths/" + pointer(tmpl) + "/" + strings.ToLower(method)
}

// Event checks the data of a Server-Sent Event against a component schema.
func (c *Checker) Event(schema string, data []byte) error {
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	if err != nil {
		return fmt.Errorf("event data: %w", err)
	}
	c.mu.Lock()
	sch, err := c.comp.Compile(base + "#/components/schemas/" + pointer(schema))
	c.mu.Unlock()
	if err != nil {
		return err
	}
	if err := sch.Validate(v); err != nil {
		return fmt.Errorf("event data does not match %s: %v\n%s", schema, err, data)
	}
	return nil
}

func pointer(tok string) string {
	return strings.ReplaceAll(strings.ReplaceAll(tok, "~", "~0"), "/", "~1")
}

// lookup follows a JSON pointer in doc, and $refs on the way.
func lookup(doc any, ptr string) any {
	cur := doc
	for _, tok := range strings.Split(strings.TrimPrefix(ptr, "/"), "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		m, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		if ref, ok := m["$ref"].(string); ok {
			cur = lookup(doc, strings.TrimPrefix(ref, "#"))
			m, _ = cur.(map[string]any)
		}
		if cur = m[tok]; cur == nil {
			return nil
		}
	}
	return cur
}
