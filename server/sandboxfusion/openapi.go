package sandboxfusion

import (
	"github.com/coderun/coderun/server"
)

// Doc is the surface's part of coderun's OpenAPI document: its three
// routes, with SandboxFusion's schemas (named SandboxFusion*).
func Doc() *server.APIDoc {
	num := func(desc string) map[string]any { return map[string]any{"type": "number", "description": desc} }
	nullable := func(t, desc string) map[string]any {
		return map[string]any{"type": []any{t, "null"}, "description": desc}
	}
	files := map[string]any{"type": "object", "additionalProperties": map[string]any{"type": []any{"string", "null"}},
		"description": "Files placed in the workspace before the run: path to base64 content (null: skipped)."}
	fetch := map[string]any{"type": "array", "items": map[string]any{"type": "string"},
		"description": "Workspace paths read back after the run; one that is not there is left out."}
	fetched := map[string]any{"type": "object", "additionalProperties": map[string]any{"type": "string"},
		"description": "The fetched files: path to base64 content."}
	status := map[string]any{"type": "string", "enum": []any{"Success", "Failed", "SandboxError"},
		"description": "Success: every step exited 0. Failed: a step exited non-zero or reached its time limit. SandboxError: coderun could not run the code (message says why)."}
	auth := server.ErrorResponse("No key and no keyless tenant, or an unknown key. Body: {\"detail\": \"...\"}.")
	invalid := map[string]any{"description": "The body is not SandboxFusion's (FastAPI's shape): {\"detail\": [{\"type\", \"loc\", \"msg\", \"input\"}]}.",
		"content": map[string]any{"application/json": map[string]any{"schema": server.Ref("SandboxFusionValidationError")}}}
	body := func(schema string) map[string]any { return server.JSONBody(schema, true) }
	ok := server.JSONResponse
	return &server.APIDoc{
		Paths: map[string]any{
			"/run_code": map[string]any{"post": map[string]any{
				"summary":     "SandboxFusion: run a program in a fresh sandbox.",
				"description": "SandboxFusion's /run_code, as verl's reward function and code tool call it. Authenticates on its own: a bearer key, X-API-Key, the key as the password of Basic authentication, or (no key) the operator's keyless tenant (server.sandboxfusion_tenant). Requests beyond the server's capacity wait their turn.",
				"tags":        []any{"sandboxfusion"}, "requestBody": body("SandboxFusionRunCodeRequest"),
				"responses": map[string]any{"200": ok("The run, whatever its status.", "SandboxFusionRunCodeResponse"),
					"401": auth, "422": invalid},
			}},
			"/run_jupyter": map[string]any{"post": map[string]any{
				"summary":     "SandboxFusion: run cells one after another in a fresh Python session.",
				"description": "SandboxFusion's /run_jupyter. Past total_timeout the status is Failed, the driver TimeLimitExceeded and there are no cells.",
				"tags":        []any{"sandboxfusion"}, "requestBody": body("SandboxFusionRunJupyterRequest"),
				"responses": map[string]any{"200": ok("The cells, whatever the status.", "SandboxFusionRunJupyterResponse"),
					"401": auth, "422": invalid},
			}},
			"/v1/ping": map[string]any{"get": map[string]any{
				"summary": "SandboxFusion: health check; needs no key.", "tags": []any{"sandboxfusion"},
				"responses": map[string]any{"200": map[string]any{"description": "The JSON string \"pong\".",
					"content": map[string]any{"application/json": map[string]any{"schema": map[string]any{"type": "string", "const": "pong"}}}}},
			}},
		},
		Schemas: map[string]any{
			"SandboxFusionRunCodeRequest": map[string]any{"type": "object", "required": []any{"code"},
				"properties": map[string]any{
					"code":            map[string]any{"type": "string"},
					"language":        map[string]any{"type": "string", "enum": toAny(sfLanguages), "default": "python", "description": "SandboxFusion's language name; one coderun does not run answers a SandboxError naming it."},
					"compile_timeout": num("Seconds for a compiled language's compile step (default 10)."),
					"run_timeout":     num("Seconds of wall time for the run (default 10)."),
					"memory_limit_MB": map[string]any{"type": "integer", "description": "Memory of the run in MiB; 0 or less: the server's default."},
					"stdin":           nullable("string", "Written to the program's standard input, which is then closed."),
					"files":           files, "fetch_files": fetch,
					"args": map[string]any{"type": "array", "items": map[string]any{"type": "string"}, "description": "Accepted, not used."},
				}},
			"SandboxFusionCommandRunResult": map[string]any{"type": "object", "required": []any{"status"},
				"properties": map[string]any{
					"status":         map[string]any{"type": "string", "enum": []any{"Finished", "Error", "TimeLimitExceeded"}},
					"execution_time": nullable("number", "Wall time in seconds."),
					"return_code":    nullable("integer", "Exit status (negative: the signal that ended it); null past the time limit or on Error."),
					"stdout":         nullable("string", "A string whenever the step ran."),
					"stderr":         nullable("string", "A string whenever the step ran; on Error, why it could not run."),
				}},
			"SandboxFusionRunCodeResponse": map[string]any{"type": "object",
				"required": []any{"status", "message", "compile_result", "run_result", "executor_pod_name", "files"},
				"properties": map[string]any{
					"status": status, "message": map[string]any{"type": "string"},
					"compile_result":    map[string]any{"oneOf": []any{server.Ref("SandboxFusionCommandRunResult"), map[string]any{"type": "null"}}, "description": "null for interpreted languages."},
					"run_result":        map[string]any{"oneOf": []any{server.Ref("SandboxFusionCommandRunResult"), map[string]any{"type": "null"}}, "description": "null when compiling failed or nothing could run."},
					"executor_pod_name": nullable("string", "$MY_POD_NAME of the server, or null."),
					"files":             fetched,
				}},
			"SandboxFusionRunJupyterRequest": map[string]any{"type": "object", "required": []any{"cells"},
				"properties": map[string]any{
					"cells":           map[string]any{"type": "array", "items": map[string]any{"type": "string"}},
					"cell_timeout":    num("Seconds per cell (0, the default: only the total bounds it)."),
					"total_timeout":   num("Seconds for all the cells (default 45)."),
					"memory_limit_MB": map[string]any{"type": "integer"},
					"kernel":          map[string]any{"type": "string", "const": "python3"},
					"files":           files, "fetch_files": fetch,
				}},
			"SandboxFusionRunJupyterResponse": map[string]any{"type": "object",
				"required": []any{"status", "message", "driver", "cells", "executor_pod_name", "files"},
				"properties": map[string]any{
					"status": status, "message": map[string]any{"type": "string"},
					"driver": map[string]any{"oneOf": []any{server.Ref("SandboxFusionCommandRunResult"), map[string]any{"type": "null"}}},
					"cells": map[string]any{"type": "array", "items": map[string]any{"type": "object",
						"required": []any{"stdout", "stderr", "display", "error"},
						"properties": map[string]any{
							"stdout":  map[string]any{"type": "string"},
							"stderr":  map[string]any{"type": "string"},
							"display": map[string]any{"type": "array", "items": map[string]any{"type": "object"}, "description": "MIME bundles of the cell's results and displays."},
							"error":   map[string]any{"type": "array", "items": map[string]any{"type": "object"}, "description": "ename, evalue, traceback."},
						}}},
					"executor_pod_name": nullable("string", "$MY_POD_NAME of the server, or null."),
					"files":             fetched,
				}},
			"SandboxFusionValidationError": map[string]any{"type": "object", "required": []any{"detail"},
				"properties": map[string]any{"detail": map[string]any{"type": "array", "items": map[string]any{"type": "object",
					"properties": map[string]any{"type": map[string]any{"type": "string"}, "loc": map[string]any{"type": "array"},
						"msg": map[string]any{"type": "string"}, "input": map[string]any{}}}}}},
		},
	}
}

func toAny(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}
