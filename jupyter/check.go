package jupyter

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/coderun/coderun/sandbox"
)

// NotebookError says where a notebook file is malformed and what was
// expected there, in the file's own terms (JSON keys, cell numbers), never
// Go's. It wraps sandbox.ErrInvalid.
type NotebookError struct {
	// Line and Column (1-based, in bytes) of the offending spot; 0 when the
	// problem is the notebook as a whole.
	Line, Column int
	// Offset is the byte offset of that spot.
	Offset int64
	// Msg says what is wrong and what was expected.
	Msg string
}

func (e *NotebookError) Error() string {
	if e.Line == 0 {
		return e.Msg
	}
	return fmt.Sprintf("line %d, column %d: %s", e.Line, e.Column, e.Msg)
}

func (e *NotebookError) Unwrap() error { return sandbox.ErrInvalid }

// jvalue is a parsed JSON value with the byte offset where it starts.
type jvalue struct {
	kind  string // "an object", "a list", "a string", "a number", "true", "false", "null"
	off   int64
	num   json.Number
	keys  map[string]*jvalue
	elems []*jvalue
	// members are an object's keys and values in order, repeated keys
	// included (keys holds only the last value of each).
	members []jmember
}

// jmember is one key of an object and its value.
type jmember struct {
	key string
	val *jvalue
}

// field returns the members that Read decodes into the struct
// field named key, in order: encoding/json gives a field the value of every
// key that matches its name regardless of case ("CELLS", "ſource"), the
// last one winning, so each must be checked.
func (v *jvalue) field(key string) []jmember {
	var out []jmember
	for _, m := range v.members {
		if strings.EqualFold(m.key, key) {
			out = append(out, m)
		}
	}
	return out
}

// checkNotebook parses data as JSON, keeping every value's position, and
// checks the shape of an nbformat 4 notebook, so that what Read
// decodes afterwards cannot fail without saying where.
func checkNotebook(data []byte) error {
	p := &jparser{data: data, dec: json.NewDecoder(bytes.NewReader(data))}
	p.dec.UseNumber()
	if len(bytes.TrimSpace(data)) == 0 {
		return &NotebookError{Msg: "the file is empty: expected a notebook (a JSON object with \"cells\", \"metadata\" and \"nbformat\")"}
	}
	root, err := p.value()
	if err != nil {
		return err
	}
	if _, err := p.dec.Token(); err != io.EOF {
		off := p.start(p.dec.InputOffset())
		return p.errAt(off, "unexpected text after the end of the notebook: expected nothing after its closing '}'")
	}
	return p.checkShape(root)
}

// maxNesting is the deepest nesting of lists and objects that
// encoding/json decodes (its own limit, which it does not export).
const maxNesting = 10000

type jparser struct {
	data []byte
	dec  *json.Decoder
	open []int64 // offsets of the objects and lists not yet closed
}

// start skips what separates tokens (white space, ':' and ',') from off
// to where the next token starts.
func (p *jparser) start(off int64) int64 {
	for off < int64(len(p.data)) && strings.IndexByte(" \t\r\n:,", p.data[off]) >= 0 {
		off++
	}
	return off
}

func (p *jparser) errAt(off int64, format string, args ...any) *NotebookError {
	line, col := 1, 1
	for _, b := range p.data[:min(off, int64(len(p.data)))] {
		if b == '\n' {
			line, col = line+1, 1
		} else {
			col++
		}
	}
	return &NotebookError{Line: line, Column: col, Offset: off, Msg: fmt.Sprintf(format, args...)}
}

// token reads the next token, turning the decoder's errors into positioned
// ones; expected names what should come next, for the decoder's errors
// that do not say.
func (p *jparser) token(expected string) (json.Token, int64, error) {
	off := p.start(p.dec.InputOffset())
	t, err := p.dec.Token()
	if err == nil {
		return t, off, nil
	}
	var se *json.SyntaxError
	switch {
	case errors.As(err, &se):
		return nil, 0, p.errAt(se.Offset, "%s", syntaxWords(se.Error(), expected)) // the offending byte's offset
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		msg := "the file ends in the middle of the notebook"
		if n := len(p.open); n > 0 {
			o := p.errAt(p.open[n-1], "")
			c := p.data[p.open[n-1]]
			msg += fmt.Sprintf(": the '%c' at line %d, column %d is never closed (expected more, then '%c')", c, o.Line, o.Column, map[byte]byte{'{': '}', '[': ']'}[c])
		} else {
			msg += ": expected the rest of a value"
		}
		return nil, 0, p.errAt(int64(len(p.data)), "%s", msg)
	}
	return nil, 0, p.errAt(off, "%v", err)
}

// syntaxWords rewords encoding/json's syntax errors.
func syntaxWords(msg, expected string) string {
	for _, r := range []struct{ suffix, words string }{
		{"looking for beginning of value", "where a value (object, list, string, number, true, false or null) was expected"},
		{"looking for beginning of object key string", `where a key in double quotes (or '}') was expected`},
		{"after object key", "where ':' was expected after a key"},
		{"after object key:value pair", "where ',' or '}' was expected after a value in an object"},
		{"after array element", "where ',' or ']' was expected after a value in a list"},
		{"after top-level value", "after the end of the notebook: expected nothing more"},
		{"in string literal", "inside a string (a control character must be escaped, as \\n or \\t)"},
		{"in string escape code", `in an escape in a string (expected \", \\, \/, \b, \f, \n, \r, \t or \uXXXX)`},
		{"in \\u hexadecimal character escape", "in a \\uXXXX escape (expected 4 hexadecimal digits)"},
		{"in numeric literal", "in a number"},
	} {
		if what, ok := strings.CutPrefix(msg, "invalid character "); ok {
			if c, found := strings.CutSuffix(what, " "+r.suffix); found {
				return "found " + c + " " + r.words
			}
		}
	}
	if c, ok := strings.CutPrefix(msg, "invalid character "); ok && !strings.Contains(c, " ") {
		return "found " + c + " where " + expected + " was expected"
	}
	return "not valid JSON: " + msg
}

func (p *jparser) value() (*jvalue, error) {
	t, off, err := p.token("a value (object, list, string, number, true, false or null)")
	if err != nil {
		return nil, err
	}
	v := &jvalue{off: off}
	switch t := t.(type) {
	case json.Delim:
		p.open = append(p.open, off)
		if len(p.open) > maxNesting {
			return nil, p.errAt(off, "lists and objects nested more than %d deep: expected at most %d levels", maxNesting, maxNesting)
		}
		if t == '{' {
			v.kind, v.keys = "an object", map[string]*jvalue{}
			for p.dec.More() {
				kt, _, err := p.token(`a key in double quotes`)
				if err != nil {
					return nil, err
				}
				k := kt.(string) // the decoder checks keys are strings
				e, err := p.value()
				if err != nil {
					return nil, err
				}
				v.keys[k] = e
				v.members = append(v.members, jmember{k, e})
			}
		} else {
			v.kind = "a list"
			for p.dec.More() {
				e, err := p.value()
				if err != nil {
					return nil, err
				}
				v.elems = append(v.elems, e)
			}
		}
		if _, _, err := p.token("the end of the " + v.kind[strings.IndexByte(v.kind, ' ')+1:]); err != nil { // the closing delimiter
			return nil, err
		}
		p.open = p.open[:len(p.open)-1]
	case string:
		v.kind = "a string"
	case json.Number:
		// What Read decodes into float64 must fit one.
		if _, err := strconv.ParseFloat(string(t), 64); err != nil {
			return nil, p.errAt(off, "the number %s is too large: expected a number of at most about 1.8e308", clip(string(t), 20))
		}
		v.kind, v.num = "a number", t
	case bool:
		v.kind = fmt.Sprint(t)
	case nil:
		v.kind = "null"
	}
	return v, nil
}

// checkShape checks what Read decodes: the notebook's fields, each
// cell's and each output's.
func (p *jparser) checkShape(root *jvalue) error {
	if root.kind != "an object" {
		return p.errAt(root.off, "expected a notebook (a JSON object with \"cells\", \"metadata\" and \"nbformat\"), found %s", root.kind)
	}
	if _, ok := root.keys["nbformat"]; !ok {
		return &NotebookError{Msg: `no "nbformat": expected "nbformat": 4 (is this a Jupyter notebook?)`}
	}
	for _, m := range root.field("nbformat") {
		if nbf := m.val; nbf.num != "4" {
			return p.errAt(nbf.off, `%q is %s: expected 4 (only nbformat 4 notebooks are read; nbconvert --to notebook upgrades older ones)`, m.key, p.show(nbf))
		}
	}
	if err := p.want(root, "nbformat_minor", "", isInt); err != nil {
		return err
	}
	if err := p.want(root, "metadata", "", isObject); err != nil {
		return err
	}
	if err := p.want(root, "cells", "", isList); err != nil {
		return err
	}
	for _, cells := range root.field("cells") {
		for i, c := range cells.val.elems {
			if err := p.checkCell(c, fmt.Sprintf("cell %d", i+1)); err != nil {
				return err
			}
		}
	}
	return nil
}

func (p *jparser) checkCell(c *jvalue, where string) error {
	if c.kind != "an object" {
		return p.errAt(c.off, "%s: expected a cell (an object with \"cell_type\" and \"source\"), found %s", where, c.kind)
	}
	if _, ok := c.keys["cell_type"]; !ok {
		return p.errAt(c.off, `%s: no "cell_type": expected "code", "markdown" or "raw"`, where)
	}
	for _, m := range c.field("cell_type") {
		if t := m.val; t.kind != "a string" || !strings.Contains(`"code" "markdown" "raw"`, `"`+p.str(t)+`"`) {
			return p.errAt(t.off, `%s: %q is %s: expected "code", "markdown" or "raw"`, where, m.key, p.show(t))
		}
	}
	for _, f := range []struct {
		key  string
		want func(*jvalue) string
	}{
		{"id", isString}, {"source", isLines}, {"metadata", isObject}, {"execution_count", isIntOrNull},
		{"outputs", isList}, {"attachments", isObject},
	} {
		if err := p.want(c, f.key, where, f.want); err != nil {
			return err
		}
	}
	for _, outs := range c.field("outputs") {
		for j, o := range outs.val.elems {
			if err := p.checkOutput(o, fmt.Sprintf("%s, output %d", where, j+1)); err != nil {
				return err
			}
		}
	}
	return nil
}

func (p *jparser) checkOutput(o *jvalue, where string) error {
	if o.kind != "an object" {
		return p.errAt(o.off, "%s: expected an output (an object with \"output_type\"), found %s", where, o.kind)
	}
	for _, f := range []struct {
		key  string
		want func(*jvalue) string
	}{
		{"output_type", isString}, {"name", isString}, {"text", isLines}, {"data", isObject}, {"metadata", isObject},
		{"execution_count", isIntOrNull}, {"ename", isString}, {"evalue", isString}, {"traceback", isStrings},
		{"wait", isBool}, {"display_id", isString}, {"transient", isStringMap},
	} {
		if err := p.want(o, f.key, where, f.want); err != nil {
			return err
		}
	}
	return nil
}

// want checks each value of obj's key (see field) with check, which names
// what it expected or returns "".
func (p *jparser) want(obj *jvalue, key, where string, check func(*jvalue) string) error {
	for _, m := range obj.field(key) {
		if expected := check(m.val); expected != "" {
			if where != "" {
				where += ": "
			}
			return p.errAt(m.val.off, "%s%q is %s: expected %s", where, m.key, p.show(m.val), expected)
		}
	}
	return nil
}

// show describes a value for a message: short strings and numbers as
// themselves, anything else by its kind.
func (p *jparser) show(v *jvalue) string {
	switch v.kind {
	case "a number":
		return string(v.num)
	case "a string":
		if s := p.str(v); len(s) <= 20 {
			return fmt.Sprintf("%q", s)
		}
	}
	return v.kind
}

func (p *jparser) str(v *jvalue) string {
	var s string
	dec := json.NewDecoder(bytes.NewReader(p.data[v.off:]))
	_ = dec.Decode(&s)
	return s
}

func isString(v *jvalue) string  { return unless(v.kind == "a string", "a string") }
func isObject(v *jvalue) string  { return unless(v.kind == "an object", "an object") }
func isList(v *jvalue) string    { return unless(v.kind == "a list", "a list") }
func isBool(v *jvalue) string    { return unless(v.kind == "true" || v.kind == "false", "true or false") }
func isInt(v *jvalue) string     { return unless(v.kind == "a number" && integer(v.num), "a whole number") }
func isStrings(v *jvalue) string { return unless(allStrings(v), "a list of strings") }

func isIntOrNull(v *jvalue) string {
	return unless(v.kind == "null" || v.kind == "a number" && integer(v.num), "a whole number or null")
}

func isLines(v *jvalue) string {
	return unless(v.kind == "a string" || allStrings(v), "a string or a list of strings")
}

func isStringMap(v *jvalue) string {
	ok := v.kind == "an object"
	for _, m := range v.members { // repeated keys included: each is decoded
		ok = ok && m.val.kind == "a string"
	}
	return unless(ok, "an object of strings")
}

func allStrings(v *jvalue) bool {
	if v.kind != "a list" {
		return false
	}
	for _, e := range v.elems {
		if e.kind != "a string" {
			return false
		}
	}
	return true
}

func integer(n json.Number) bool {
	_, err := n.Int64()
	return err == nil
}

func unless(ok bool, expected string) string {
	if ok {
		return ""
	}
	return expected
}

// clip shortens s to about n bytes for a message, never cutting a
// character in two.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}
