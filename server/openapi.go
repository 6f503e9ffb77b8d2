package server

import (
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
)

// APIInfo describes the API in the OpenAPI document's info object.
type APIInfo struct {
	Title   string
	Version string
}

// APIDoc is a surface's part of the OpenAPI 3.1 document served at
// /openapi.json: the path items of its routes and the component schemas
// they reference (as "#/components/schemas/Name"). Every route a surface
// serves under /v1 must be documented here; the tests of the composed
// server hold every surface to it.
type APIDoc struct {
	// Paths maps an OpenAPI path ("/v1/sessions/{id}") to its path item
	// (operations by lower-case method).
	Paths map[string]any
	// Schemas are added to components.schemas. A name two surfaces define
	// differently is an error.
	Schemas map[string]any
}

// ErrorSchema is the component schema of Error's body, which every
// surface's document may reference as "#/components/schemas/Error".
var errorSchema = map[string]any{
	"type": "object", "required": []any{"error"}, "additionalProperties": false,
	"properties": map[string]any{"error": map[string]any{
		"type": "object", "required": []any{"code", "message"}, "additionalProperties": false,
		"properties": map[string]any{
			"code": map[string]any{"type": "string", "enum": []any{CodeBadRequest, CodeAuth, CodeForbidden, CodeNotFound, CodeMethod, CodeConflict,
				CodeTooLarge, CodeMediaType, CodeRateLimited, CodeUnavailable, CodeInternal}},
			"message": map[string]any{"type": "string"},
		},
	}},
}

// ErrorResponse is the OpenAPI response object of an error status: the
// Error body. Surfaces use it in their documents.
func ErrorResponse(description string) map[string]any {
	return map[string]any{"description": description,
		"content": map[string]any{"application/json": map[string]any{"schema": Ref("Error")}}}
}

// Type is a schema of JSON type t ("string", "integer", ...), with its
// description when desc is not empty.
func Type(t, desc string) map[string]any {
	m := map[string]any{"type": t}
	if desc != "" {
		m["description"] = desc
	}
	return m
}

// Object is the schema of an object with these properties, of which the
// required ones must be present (other properties are allowed).
func Object(required []string, props map[string]any) map[string]any {
	o := map[string]any{"type": "object", "properties": props}
	if len(required) > 0 {
		o["required"] = toAny(required)
	}
	return o
}

// Array is the schema of an array of items.
func Array(items map[string]any) map[string]any {
	return map[string]any{"type": "array", "items": items}
}

// Ref is a reference to the component schema name.
func Ref(name string) map[string]any { return map[string]any{"$ref": "#/components/schemas/" + name} }

// JSONResponse is the OpenAPI response object of a JSON body of the
// component schema.
func JSONResponse(description, schema string) map[string]any {
	return map[string]any{"description": description,
		"content": map[string]any{"application/json": map[string]any{"schema": Ref(schema)}}}
}

// JSONBody is the OpenAPI request body object of a JSON body of the
// component schema.
func JSONBody(schema string, required bool) map[string]any {
	return map[string]any{"required": required,
		"content": map[string]any{"application/json": map[string]any{"schema": Ref(schema)}}}
}

// ErrorResponses is a route's error responses: 401 and 429 always, and
// those of codes. texts describes 429 and the surface's own codes; 401,
// 413 and 503 have the server's texts unless texts has them.
func ErrorResponses(texts map[string]string, codes ...string) map[string]any {
	text := func(c string) string {
		if t, ok := texts[c]; ok {
			return t
		}
		return serverErrorTexts[c]
	}
	out := map[string]any{"401": ErrorResponse(text("401")), "429": ErrorResponse(text("429"))}
	for _, c := range codes {
		if t := text(c); t != "" {
			out[c] = ErrorResponse(t)
		}
	}
	return out
}

var serverErrorTexts = map[string]string{
	"401": "No API key, or an unknown one.",
	"413": "The request body is larger than the server's cap.",
	"503": "The server is shutting down.",
}

// WithResponse adds resp to responses as status's, and returns responses.
func WithResponse(responses map[string]any, status string, resp map[string]any) map[string]any {
	responses[status] = resp
	return responses
}

// ownDoc documents the server's own routes.
func ownDoc() APIDoc {
	status := func(desc string, codes ...string) map[string]any {
		return map[string]any{"description": desc, "content": map[string]any{"application/json": map[string]any{"schema": map[string]any{
			"type": "object", "required": []any{"status"}, "properties": map[string]any{"status": map[string]any{"type": "string", "enum": toAny(codes)}}}}}}
	}
	op := func(summary string, responses map[string]any) map[string]any {
		return map[string]any{"get": map[string]any{"summary": summary, "tags": []any{"operations"}, "security": []any{}, "responses": responses}}
	}
	return APIDoc{Paths: map[string]any{
		"/healthz": op("Liveness: the process serves HTTP.", map[string]any{"200": status("Alive.", "ok")}),
		"/readyz": op("Readiness: the server takes requests (503 when not; a server shutting down stops accepting connections at once).", map[string]any{
			"200": status("Ready.", "ready"), "503": ErrorResponse("Not ready.")}),
		"/metrics": op("Prometheus metrics in the text exposition format.", map[string]any{
			"200": map[string]any{"description": "The metrics.", "content": map[string]any{"text/plain": map[string]any{"schema": map[string]any{"type": "string"}}}}}),
		"/openapi.json": op("This document.", map[string]any{
			"200": map[string]any{"description": "The OpenAPI 3.1 document.", "content": map[string]any{"application/json": map[string]any{"schema": map[string]any{"type": "object"}}}}}),
	}, Schemas: map[string]any{"Error": errorSchema}}
}

func toAny(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

// document merges the server's own part and every surface's into the
// OpenAPI document.
func (s *Server) document() ([]byte, error) {
	info := s.opts.Info
	if info.Title == "" {
		info.Title = "coderun"
	}
	if info.Version == "" {
		info.Version = "dev"
	}
	paths, schemas := map[string]any{}, map[string]any{}
	parts := []struct {
		name string
		doc  *APIDoc
	}{{"server", ptr(ownDoc())}}
	for _, sf := range s.opts.Surfaces {
		if sf.OpenAPI != nil {
			parts = append(parts, struct {
				name string
				doc  *APIDoc
			}{sf.Name, sf.OpenAPI})
		}
	}
	for _, p := range parts {
		for _, path := range slices.Sorted(maps.Keys(p.doc.Paths)) {
			if _, dup := paths[path]; dup {
				return nil, fmt.Errorf("OpenAPI document: surface %s documents %s, which another surface documents", p.name, path)
			}
			paths[path] = p.doc.Paths[path]
		}
		for name, sch := range p.doc.Schemas {
			if have, dup := schemas[name]; dup && !reflect.DeepEqual(have, sch) {
				return nil, fmt.Errorf("OpenAPI document: surface %s defines schema %s differently from another surface", p.name, name)
			}
			schemas[name] = sch
		}
	}
	doc := map[string]any{
		"openapi": "3.1.0",
		"info": map[string]any{"title": info.Title, "version": info.Version,
			"description": "coderun runs untrusted code in sandboxes and says exactly what happened. Authenticate with Authorization: Bearer KEY (or X-API-Key: KEY)."},
		"paths": paths,
		"components": map[string]any{
			"schemas": schemas,
			"securitySchemes": map[string]any{
				"bearer": map[string]any{"type": "http", "scheme": "bearer"},
				"apiKey": map[string]any{"type": "apiKey", "in": "header", "name": "X-API-Key"},
			},
		},
		"security": []any{map[string]any{"bearer": []any{}}, map[string]any{"apiKey": []any{}}},
	}
	out, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("OpenAPI document: %w", err)
	}
	return out, nil
}

func ptr[T any](v T) *T { return &v }
