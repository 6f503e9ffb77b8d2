package api

import (
	"github.com/coderun/coderun/language"
	"github.com/coderun/coderun/server"
)

// Doc is the API's part of the OpenAPI 3.1 document: every route of
// routes, with its request and response bodies.
func Doc() *server.APIDoc {
	id := param("id", "path", "The session's id.")
	path := param("path", "path", "A path relative to the workspace, without \"..\".")
	errs := func(codes ...string) map[string]any {
		out := map[string]any{
			"400": server.ErrorResponse("Bad input: malformed JSON, an unknown field, invalid limits, a bad path."),
			"401": server.ErrorResponse("No API key, or an unknown one."),
			"429": withRetryAfter(server.ErrorResponse("Beyond the tenant's request rate, executions or sessions; retry after Retry-After seconds.")),
			"500": server.ErrorResponse("The server failed: a sandbox that could not be started, say."),
		}
		for _, c := range codes {
			switch c {
			case "404":
				out[c] = server.ErrorResponse("No such session of the tenant's (unknown, another tenant's, closed or evicted), or no such file.")
			case "409":
				out[c] = server.ErrorResponse("The path names the wrong kind of file: a directory to download or to write over, or a file where a directory must be.")
			case "413":
				out[c] = server.ErrorResponse("The request body is larger than the server's cap.")
			case "408":
				out[c] = server.ErrorResponse("The request body was sent too slowly (see server.body_timeout and server.body_min_rate).")
			case "415":
				out[c] = server.ErrorResponse("The body is not application/json.")
			case "503":
				out[c] = withRetryAfter(server.ErrorResponse("The server has no room for another session: every session is busy."))
			}
		}
		return out
	}
	with := server.WithResponse
	sessionOp := func(summary string, responses map[string]any) map[string]any {
		return map[string]any{"summary": summary, "tags": []any{"sessions"}, "parameters": []any{id}, "responses": responses}
	}
	return &server.APIDoc{
		Paths: map[string]any{
			"/v1/exec": map[string]any{"post": map[string]any{
				"summary":     "Run code once in a fresh sandbox.",
				"description": "Answers the sandbox's result: output, exit code or signal, the reason the run ended, usage and the files it created or changed. A run that hit a limit is a 200 with that reason.",
				"tags":        []any{"exec"}, "requestBody": server.JSONBody("ExecRequest", true),
				"responses": with(with(errs("413", "415"), "200", server.JSONResponse("The run's result.", "Result")),
					"503", server.ErrorResponse("The server is shutting down: the run, still running at the end of its grace period, was stopped.")),
			}},
			"/v1/sessions": map[string]any{
				"post": map[string]any{"summary": "Create a session: an interpreter whose state carries from cell to cell.", "tags": []any{"sessions"},
					"requestBody": server.JSONBody("SessionRequest", true),
					"responses":   with(errs("413", "415", "503"), "201", withHeader(server.JSONResponse("The session.", "Session"), "Location", "The session's URL.")),
				},
				"get": map[string]any{"summary": "List the tenant's sessions, oldest first.", "tags": []any{"sessions"},
					"responses": with(errs(), "200", server.JSONResponse("The sessions.", "SessionList"))},
			},
			"/v1/sessions/{id}": map[string]any{
				"get":    sessionOp("Get a session.", with(errs("404"), "200", server.JSONResponse("The session.", "Session"))),
				"delete": sessionOp("Close a session and remove its sandbox and files.", with(errs("404"), "204", map[string]any{"description": "Closed."})),
			},
			"/v1/sessions/{id}/execute": map[string]any{"post": map[string]any{
				"summary": "Execute a cell.",
				"description": "With Accept: text/event-stream the outputs are sent as Server-Sent Events as they happen: " +
					"`output` events (a Jupyter output each), then one `done` event with the cell; an `error` event if the cell could not be run after the stream began, " +
					"or (code unavailable) if the server shut down while it ran; " +
					"a comment line (`: keep-alive`) every 15 seconds without events. " +
					"Otherwise the cell is answered once it has ended. A client that goes away interrupts its cell.",
				"tags": []any{"sessions"}, "parameters": []any{id}, "requestBody": server.JSONBody("ExecuteRequest", true),
				"responses": with(with(errs("404", "413", "415"), "503", server.ErrorResponse("The server is shutting down: the cell, still running at the end of its grace period, was interrupted.")),
					"200", map[string]any{"description": "The cell, or its stream of events.",
						"content": map[string]any{
							"application/json":  map[string]any{"schema": server.Ref("Cell")},
							"text/event-stream": map[string]any{"schema": map[string]any{"type": "string", "description": "event: output|done|error, data: an Output, the Cell, or an Error's body."}},
						}}),
			}},
			"/v1/sessions/{id}/interrupt": map[string]any{"post": sessionOp("Interrupt the running cell (KeyboardInterrupt in Python, SIGINT in bash); the state is kept.",
				with(errs("404"), "204", map[string]any{"description": "Interrupted (or nothing was running)."}))},
			"/v1/sessions/{id}/restart": map[string]any{"post": sessionOp("Restart the interpreter: variables and imports are gone, files and the history are kept.",
				with(errs("404"), "200", server.JSONResponse("The session.", "Session")))},
			"/v1/sessions/{id}/cells": map[string]any{"get": sessionOp("The session's cells, oldest first.",
				with(errs("404"), "200", server.JSONResponse("The cells.", "CellList")))},
			"/v1/sessions/{id}/files": map[string]any{"get": sessionOp("List the workspace's files (symbolic links as links, never followed).",
				with(errs("404"), "200", server.JSONResponse("The files.", "FileList")))},
			"/v1/sessions/{id}/files/{path}": map[string]any{
				"get": map[string]any{"summary": "Download a regular file of the workspace.", "tags": []any{"sessions"}, "parameters": []any{id, path},
					"responses": with(errs("404", "409", "413"), "200", map[string]any{"description": "The file's bytes, streamed from the workspace, with its Content-Length, Content-Disposition and Last-Modified; if the file changes or vanishes while it is read, the body ends short of its Content-Length.",
						"content": map[string]any{"application/octet-stream": map[string]any{"schema": map[string]any{"type": "string", "contentMediaType": "application/octet-stream"}}}})},
				"put": map[string]any{"summary": "Upload a file into the workspace (replacing one of that path), streamed: bounded by the session's workspace size (413 beyond), not by the server's cap on bodies.", "tags": []any{"sessions"},
					"parameters": []any{id, path, map[string]any{"name": "mode", "in": "query", "required": false, "description": "Octal permission bits (default 0644).",
						"schema": map[string]any{"type": "string", "pattern": "^0?[0-7]{1,3}$"}}},
					"requestBody": map[string]any{"required": true, "content": map[string]any{"application/octet-stream": map[string]any{"schema": map[string]any{"type": "string", "contentMediaType": "application/octet-stream"}}}},
					"responses":   with(errs("404", "408", "409", "413"), "201", server.JSONResponse("Written.", "Upload"))},
			},
			"/v1/sessions/{id}/notebook": map[string]any{"get": sessionOp("Export the session as a Jupyter notebook (nbformat 4).",
				with(errs("404"), "200", map[string]any{"description": "The notebook.",
					"content": map[string]any{"application/x-ipynb+json": map[string]any{"schema": server.Ref("Notebook")}}}))},
		},
		Schemas: schemas(),
	}
}

// languages are the languages one-shot runs take: every language of the
// table (compiled ones through sandbox/toolchain).
func languages() []string { return language.Names() }

func param(name, in, desc string) map[string]any {
	return map[string]any{"name": name, "in": in, "required": true, "description": desc, "schema": map[string]any{"type": "string"}}
}

func withHeader(resp map[string]any, name, desc string) map[string]any {
	resp["headers"] = map[string]any{name: map[string]any{"description": desc, "schema": map[string]any{"type": "string"}}}
	return resp
}

func withRetryAfter(resp map[string]any) map[string]any {
	resp["headers"] = map[string]any{"Retry-After": map[string]any{"description": "Seconds to wait.", "schema": map[string]any{"type": "integer"}}}
	return resp
}

// Schema helpers.
func obj(required []string, props map[string]any) map[string]any {
	o := map[string]any{"type": "object", "properties": props, "additionalProperties": false}
	if len(required) > 0 {
		o["required"] = strs(required...)
	}
	return o
}

func strs(ss ...string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

func typ(t string, desc string) map[string]any { return map[string]any{"type": t, "description": desc} }

func arr(items any) map[string]any { return map[string]any{"type": "array", "items": items} }

func enum(desc string, values ...string) map[string]any {
	return map[string]any{"type": "string", "enum": strs(values...), "description": desc}
}

func schemas() map[string]any {
	durationOrSeconds := map[string]any{"oneOf": []any{map[string]any{"type": "string", "description": "A duration such as \"10s\" or \"1m30s\"."},
		map[string]any{"type": "number", "minimum": 0, "description": "Seconds."}}}
	sizeOrBytes := map[string]any{"oneOf": []any{map[string]any{"type": "integer", "minimum": 0, "description": "Bytes."},
		map[string]any{"type": "string", "description": "A size such as \"256MiB\"."}}}
	reasons := []string{"exited", "timeout", "cpu_limit", "memory_limit", "output_limit", "killed", "setup_error", "compile_error"}
	usage := obj([]string{"wall_ms", "cpu_user_ms", "cpu_system_ms", "peak_memory_bytes"}, map[string]any{
		"wall_ms": typ("number", "Elapsed time."), "cpu_user_ms": typ("number", "User CPU time."),
		"cpu_system_ms": typ("number", "System CPU time."), "peak_memory_bytes": typ("integer", "Peak memory of the whole sandbox."),
	})
	bundle := map[string]any{"type": "object", "description": "A MIME bundle: text/plain, text/html, image/png (base64), image/svg+xml, application/json...", "additionalProperties": true}
	return map[string]any{
		"Limits": map[string]any{"type": "object", "additionalProperties": false,
			"description": "Limits of a run, or of a session's sandbox and each of its cells. Absent or zero fields take the server's defaults.",
			"properties": map[string]any{
				"wall_time": durationOrSeconds, "cpu_time": durationOrSeconds, "memory": sizeOrBytes,
				"processes": map[string]any{"type": "integer", "minimum": 0}, "output_bytes": sizeOrBytes,
				"workspace_bytes": sizeOrBytes, "open_files": map[string]any{"type": "integer", "minimum": 0},
			}},
		"FileIn": obj([]string{"path"}, map[string]any{
			"path":           typ("string", "Relative to the workspace, '/'-separated, without \"..\"."),
			"content":        typ("string", "The content as text."),
			"content_base64": typ("string", "The content, base64-encoded (instead of content)."),
			"mode":           map[string]any{"type": "integer", "minimum": 0, "maximum": 511, "description": "Permission bits; default 0644."},
		}),
		"ExecRequest": obj([]string{"code"}, map[string]any{
			"language":      enum("The language; default python.", languages()...),
			"code":          typ("string", "The program."),
			"name":          typ("string", "The file name the code runs as (analysis.py)."),
			"stdin":         typ("string", "The program's standard input."),
			"files":         arr(server.Ref("FileIn")),
			"env":           map[string]any{"type": "object", "additionalProperties": map[string]any{"type": "string"}},
			"limits":        server.Ref("Limits"),
			"file_contents": sizeOrBytes,
			"compile_args":  map[string]any{"type": "array", "items": map[string]any{"type": "string"}, "description": "Arguments added to a compiled language's compiler (-std=c++20, -O2)."},
			"runtime":       typ("string", "The runtime to run on (linux, gvisor, docker): one the server enables (server.runtimes), else 400 naming them; default the server's own."),
		}),
		"FileInfo": obj([]string{"path", "kind", "size", "mode", "created"}, map[string]any{
			"path": typ("string", "Relative to the workspace."), "kind": enum("", "file", "dir", "symlink", "other"),
			"size": typ("integer", "Apparent size in bytes."), "mode": typ("integer", "Go's fs.FileMode bits."),
			"link_target": typ("string", "A symbolic link's target (never followed)."), "created": typ("boolean", "False: an input file that changed."),
			"same_file_as": typ("string", "The earlier path that is the same file (a hard link)."),
			"content":      typ("string", "Base64 of up to file_contents bytes."), "content_truncated": typ("boolean", ""),
		}),
		"Usage": usage,
		"Result": obj([]string{"stdout", "stderr", "stdout_truncated", "stderr_truncated", "exit_code", "reason", "usage", "runtime", "pooled"}, map[string]any{
			"stdout": typ("string", ""), "stderr": typ("string", ""),
			"stdout_truncated": typ("boolean", ""), "stderr_truncated": typ("boolean", ""),
			"exit_code": typ("integer", "-1 when a signal ended the program."), "signal": typ("string", "The signal that ended it (SIGKILL)."),
			"reason": enum("Why the run ended.", reasons...), "error": typ("string", "A setup error's explanation, or detail."),
			"usage": server.Ref("Usage"), "files": arr(server.Ref("FileInfo")), "files_truncated": typ("boolean", ""),
			"removed": map[string]any{"type": "array", "items": map[string]any{"type": "string"}, "description": "The input files the run removed."},
			"runtime": typ("string", "The runtime that ran it."), "pooled": typ("boolean", "A pre-started sandbox served it."),
			"compile": server.Ref("Result"),
		}),
		"SessionRequest": obj(nil, map[string]any{
			"language":     enum("The language; default python.", language.NativeNames()...),
			"limits":       server.Ref("Limits"),
			"files":        arr(server.Ref("FileIn")),
			"env":          map[string]any{"type": "object", "additionalProperties": map[string]any{"type": "string"}},
			"idle_timeout": durationOrSeconds,
			"runtime":      typ("string", "The runtime whose sandbox the session runs in (linux, gvisor, docker): one the server enables (server.runtimes), else 400 naming them; default the server's own."),
		}),
		"Session": obj([]string{"id", "language", "created", "last_used", "cells", "busy", "alive", "pooled", "idle_timeout"}, map[string]any{
			"id": typ("string", ""), "tenant": typ("string", ""), "language": typ("string", ""),
			"created":   map[string]any{"type": "string", "format": "date-time"},
			"last_used": map[string]any{"type": "string", "format": "date-time"},
			"cells":     typ("integer", "Cells run."), "busy": typ("boolean", "A cell is running."),
			"alive":  typ("boolean", "The interpreter is up (false: the next cell restarts it)."),
			"pooled": typ("boolean", ""), "interpreter": typ("string", "Python 3.11.2, IPython 8.5.0"),
			"closed": typ("string", ""), "idle_timeout": typ("string", "Closed after this long unused."),
			"runtime": typ("string", "The runtime whose sandbox the session runs in."),
		}),
		"SessionList": obj([]string{"sessions"}, map[string]any{"sessions": arr(server.Ref("Session"))}),
		"ExecuteRequest": obj([]string{"code"}, map[string]any{
			"code": typ("string", "The cell's code."), "timeout": durationOrSeconds,
		}),
		"Output": map[string]any{"type": "object", "required": strs("output_type"), "description": "A Jupyter output (nbformat 4).",
			"properties": map[string]any{
				"output_type": enum("", "stream", "display_data", "execute_result", "error", "clear_output", "update_display_data"),
				"name":        enum("A stream's name.", "stdout", "stderr"), "text": typ("string", ""),
				"data": bundle, "metadata": map[string]any{"type": "object"},
				"execution_count": map[string]any{"type": []any{"integer", "null"}},
				"ename":           typ("string", ""), "evalue": typ("string", ""), "traceback": arr(map[string]any{"type": "string"}),
				"wait": typ("boolean", ""), "display_id": typ("string", ""),
			}, "additionalProperties": false},
		"Ending": obj([]string{"reason", "exit_code", "message", "usage"}, map[string]any{
			"reason": enum("", reasons...), "exit_code": typ("integer", ""), "signal": typ("string", ""),
			"message": typ("string", ""), "diagnostics": typ("string", ""), "usage": server.Ref("Usage"), "idle": typ("boolean", ""),
		}),
		"Cell": obj([]string{"index", "execution_count", "code", "outputs", "status", "started", "duration_ms"}, map[string]any{
			"index": typ("integer", "Position in the history, from 1."), "execution_count": typ("integer", ""),
			"code": typ("string", ""), "outputs": arr(server.Ref("Output")),
			"status":      enum("How the cell ended.", "ok", "error", "interrupted", "timeout", "died"),
			"exit_status": typ("integer", "A bash cell's last command's status."),
			"started":     map[string]any{"type": "string", "format": "date-time"}, "duration_ms": typ("number", ""),
			"output_truncated": typ("boolean", ""), "ended": server.Ref("Ending"), "restarted": typ("boolean", ""),
			"limit": enum("The limit that stopped a timed-out cell.", "timeout", "cpu_limit"), "restart_error": typ("string", ""),
			"retry_of": typ("integer", ""), "retried_by": typ("integer", ""),
		}),
		"CellList": obj([]string{"cells"}, map[string]any{"cells": arr(server.Ref("Cell"))}),
		"FileList": obj([]string{"files", "truncated"}, map[string]any{"files": arr(server.Ref("FileInfo")), "truncated": typ("boolean", "More files than listed.")}),
		"Upload":   obj([]string{"path", "size", "mode"}, map[string]any{"path": typ("string", ""), "size": typ("integer", ""), "mode": typ("integer", "")}),
		"Notebook": map[string]any{"type": "object", "required": strs("nbformat", "nbformat_minor", "metadata", "cells"), "description": "A Jupyter notebook, nbformat 4."},
	}
}
