package sandboxfusion

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"sort"
	"strings"
)

// A request SandboxFusion's server would not accept is answered as its
// framework (FastAPI) answers it: 422 with a list of what is wrong, each
// with where it is ("loc": ["body", field]). Authentication failures and
// oversized bodies answer {"detail": "..."}, FastAPI's shape for an
// HTTPException.

// Problem is one entry of a 422 answer's detail.
type Problem struct {
	Type  string `json:"type"`
	Loc   []any  `json:"loc"`
	Msg   string `json:"msg"`
	Input any    `json:"input"`
}

// validationError is a request that does not fit the schema.
type validationError struct {
	problems []Problem
}

func (e *validationError) Error() string {
	var parts []string
	for _, p := range e.problems {
		parts = append(parts, fmt.Sprintf("%v: %s", p.Loc, p.Msg))
	}
	return "invalid request: " + strings.Join(parts, "; ")
}

func invalid(typ, field, msg string, input any) *validationError {
	loc := []any{"body"}
	if field != "" {
		loc = append(loc, field)
	}
	return &validationError{problems: []Problem{{Type: typ, Loc: loc, Msg: msg, Input: input}}}
}

// decode reads a JSON body into v, as FastAPI would judge it: a body that
// is not JSON, or a field of the wrong type, is a *validationError; a body
// past the server's cap an *http.MaxBytesError.
func decode(r *http.Request, v any) error {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return tooBig
		}
		return fmt.Errorf("read the request: %w", err)
	}
	if len(strings.TrimSpace(string(body))) == 0 {
		return invalid("missing", "", "Field required", nil)
	}
	if err := json.Unmarshal(body, v); err != nil {
		var typeErr *json.UnmarshalTypeError
		var syntaxErr *json.SyntaxError
		switch {
		case errors.As(err, &typeErr) && typeErr.Field != "":
			return wrongType(body, typeErr)
		case errors.As(err, &typeErr):
			return invalid("model_attributes_type", "", "Input should be a valid dictionary or object to extract fields from", nil)
		case errors.As(err, &syntaxErr):
			return &validationError{problems: []Problem{{Type: "json_invalid", Loc: []any{"body", syntaxErr.Offset},
				Msg: "JSON decode error", Input: map[string]any{}}}}
		}
		return invalid("json_invalid", "", "JSON decode error: "+err.Error(), nil)
	}
	return nil
}

// wrongType is pydantic v2's error item for a field of the wrong type:
// its type and msg name the type wanted (string_type, "Input should be a
// valid string"), loc the field's path, input the value sent.
func wrongType(body []byte, e *json.UnmarshalTypeError) *validationError {
	var doc any
	dec := json.NewDecoder(strings.NewReader(string(body)))
	dec.UseNumber() // the input as sent: 1 stays 1
	_ = dec.Decode(&doc)
	loc, input := fieldPath(doc, e.Field)
	t := e.Type
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if m, ok := input.(map[string]any); ok && t.Kind() != reflect.Map && t.Kind() != reflect.Struct {
		// A map's value (encoding/json names the map only): the first
		// value, in key order, not of the type wanted.
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			if !fits(m[k], t.Kind()) {
				loc, input = append(loc, k), m[k]
				break
			}
		}
	}
	_, isString := input.(string)
	typ, msg := "", ""
	switch t.Kind() {
	case reflect.String:
		typ, msg = "string_type", "Input should be a valid string"
	case reflect.Float32, reflect.Float64:
		typ, msg = "float_type", "Input should be a valid number"
		if isString {
			typ, msg = "float_parsing", "Input should be a valid number, unable to parse string as a number"
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		typ, msg = "int_type", "Input should be a valid integer"
		if n, ok := input.(json.Number); ok && strings.ContainsAny(string(n), ".eE") {
			typ, msg = "int_from_float", "Input should be a valid integer, got a number with a fractional part"
		} else if isString {
			typ, msg = "int_parsing", "Input should be a valid integer, unable to parse string as an integer"
		}
	case reflect.Bool:
		typ, msg = "bool_type", "Input should be a valid boolean"
		if isString {
			typ, msg = "bool_parsing", "Input should be a valid boolean, unable to interpret input"
		}
	case reflect.Map:
		typ, msg = "dict_type", "Input should be a valid dictionary"
	case reflect.Slice, reflect.Array:
		typ, msg = "list_type", "Input should be a valid list"
	default:
		typ, msg = "model_attributes_type", "Input should be a valid dictionary or object to extract fields from"
	}
	return &validationError{problems: []Problem{{Type: typ, Loc: append([]any{"body"}, loc...), Msg: msg, Input: input}}}
}

// fits reports whether a JSON value (numbers as json.Number) decodes
// into a Go value of kind k.
func fits(v any, k reflect.Kind) bool {
	switch v.(type) {
	case string:
		return k == reflect.String
	case json.Number:
		return k >= reflect.Int && k <= reflect.Float64
	case bool:
		return k == reflect.Bool
	case nil:
		return true
	}
	return false
}

func appendSplit(loc []any, field string) []any {
	for _, f := range strings.Split(field, ".") {
		loc = append(loc, f)
	}
	return loc
}

// fieldPath splits encoding/json's dotted field path ("files.a.txt") into
// pydantic's loc (["files", "a.txt"]) by the keys of the document sent,
// and returns the value there.
func fieldPath(doc any, field string) ([]any, any) {
	var loc []any
	for field != "" {
		m, ok := doc.(map[string]any)
		if !ok {
			return appendSplit(loc, field), nil
		}
		key := field
		if _, ok := m[key]; !ok {
			// The longest key that is a prefix of the path.
			key = ""
			for k := range m {
				if strings.HasPrefix(field, k+".") && len(k) > len(key) {
					key = k
				}
			}
			if key == "" {
				return appendSplit(loc, field), nil
			}
		}
		loc, doc = append(loc, key), m[key]
		field = strings.TrimPrefix(strings.TrimPrefix(field, key), ".")
	}
	return loc, doc
}

// writeJSON answers v with status.
func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		status = http.StatusInternalServerError
		b, _ = json.Marshal(map[string]any{"detail": "encode the answer: " + err.Error(), "traceback": []string{}})
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

// writeRequestError answers a request that could not be read or does not
// fit the schema.
func writeRequestError(w http.ResponseWriter, err error) {
	var v *validationError
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &v):
		writeJSON(w, http.StatusUnprocessableEntity, map[string]any{"detail": v.problems})
	case errors.As(err, &tooBig):
		writeJSON(w, http.StatusRequestEntityTooLarge, map[string]any{
			"detail": fmt.Sprintf("the request body is larger than the server accepts (%d bytes)", tooBig.Limit)})
	default:
		writeJSON(w, http.StatusBadRequest, map[string]any{"detail": err.Error()})
	}
}
