package sandboxfusion

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
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
			return invalid(typeErr.Value+"_type", typeErr.Field,
				fmt.Sprintf("Input should be a valid %s", jsonKind(typeErr.Type.Kind().String())), nil)
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

// jsonKind names a Go kind as pydantic names the type it wants.
func jsonKind(kind string) string {
	switch kind {
	case "string":
		return "string"
	case "float64", "float32":
		return "number"
	case "int", "int64":
		return "integer"
	case "map", "struct":
		return "dictionary"
	case "slice":
		return "list"
	}
	return kind
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
