package runs

import (
	"github.com/coderun/coderun/server"
	"github.com/coderun/coderun/server/input"
)

// Doc is the runs API's part of the OpenAPI 3.1 document: every route of
// Patterns, with its request and response bodies.
func Doc() *server.APIDoc {
	id := map[string]any{"name": "id", "in": "path", "required": true, "description": "The run's id (or a unique prefix of at least 4 characters).",
		"schema": map[string]any{"type": "string"}}
	errTexts := map[string]string{
		"429": "Beyond the tenant's request rate, or the runs it may have running at once; retry after Retry-After seconds.",
		"400": "Bad input: malformed JSON, an unknown field, a bad setting, model, path or filter.",
		"404": "No such run of the tenant's (unknown, or another tenant's), or no such file.",
		"409": "The run is not in a state that allows this (ended, not awaiting approval, driven by another process).",
	}
	errs := func(codes ...string) map[string]any { return server.ErrorResponses(errTexts, codes...) }
	with, jsonResp := server.WithResponse, server.JSONResponse
	body := server.JSONBody
	op := func(summary, desc string, params []any, responses map[string]any) map[string]any {
		o := map[string]any{"summary": summary, "tags": []any{"runs"}, "responses": responses}
		if desc != "" {
			o["description"] = desc
		}
		if params != nil {
			o["parameters"] = params
		}
		return o
	}
	query := func(name, desc string, schema map[string]any) map[string]any {
		return map[string]any{"name": name, "in": "query", "required": false, "description": desc, "schema": schema}
	}
	str := map[string]any{"type": "string"}
	statuses := []any{"running", "awaiting_approval", "succeeded", "failed", "cancelled", "interrupted"}
	decide := func(what string) map[string]any {
		o := op(what, "Records the decision about the code the run waits on (awaiting_approval) and resumes the run: an approval runs the code; "+
			"a rejection goes back to the model with the note, and the model may rewrite the code within the retry budget.",
			[]any{id}, with(errs("400", "404", "409", "503"), "200", jsonResp("The run, resumed.", "Run")))
		o["requestBody"] = body("RunDecision", false)
		return o
	}
	start := op("Start an agent run.", "The run is created and driven by the server; the answer is 202 as soon as its first step is recorded. "+
		"Follow it with GET /v1/runs/{id}/events.", nil, with(errs("400", "413", "503"), "202", jsonResp("The run, started.", "Run")))
	start["requestBody"] = body("RunStartRequest", true)
	return &server.APIDoc{
		Paths: map[string]any{
			"/v1/runs": map[string]any{
				"post": start,
				"get": op("List the tenant's runs, newest first.", "", []any{
					query("status", "Keep runs shown with this status.", map[string]any{"type": "string", "enum": statuses}),
					query("q", "Keep runs whose id, task, model, outcome or answer contains this text (case-insensitive).", str),
					query("limit", "At most this many runs (1 to 1000, default 100).", map[string]any{"type": "integer", "minimum": 1, "maximum": 1000}),
				}, with(errs("400"), "200", jsonResp("The runs.", "RunList"))),
			},
			"/v1/runs/{id}": map[string]any{"get": op("Get a run: its status, result (answer or failure report), pending code, scorecard.", "",
				[]any{id}, with(errs("404"), "200", jsonResp("The run.", "Run")))},
			"/v1/runs/{id}/steps": map[string]any{"get": op("The run's recorded steps, in order.", "", []any{id},
				with(errs("404"), "200", jsonResp("The steps.", "RunStepList")))},
			"/v1/runs/{id}/events": map[string]any{"get": op("Follow the run as Server-Sent Events.",
				"Events: `step` (id: the step's seq; data: a RunStep) for each recorded step, `status` (data: the Run) whenever its shown status changes, "+
					"and `end` (data: the Run) once it has ended, after which the stream closes. A run awaiting approval keeps its stream open. "+
					"When the server shuts down the stream ends with `shutdown` (data: the Run as it is; a run the server was driving is suspended, to be resumed). "+
					"Last-Event-ID or ?after=SEQ resumes after that step.",
				[]any{id, query("after", "Send the steps after this seq.", map[string]any{"type": "integer", "minimum": 0})},
				with(errs("400", "404"), "200", map[string]any{"description": "The stream of events.",
					"content": map[string]any{"text/event-stream": map[string]any{"schema": map[string]any{"type": "string",
						"description": "event: step|status|end|shutdown; data: a RunStep or a Run."}}}}))},
			"/v1/runs/{id}/files": map[string]any{"get": op("The run's files (inputs, and what its code wrote) without their contents.", "",
				[]any{id, query("role", "input or output.", map[string]any{"type": "string", "enum": []any{"input", "output"}})},
				with(errs("400", "404"), "200", jsonResp("The files.", "RunFileList")))},
			"/v1/runs/{id}/files/{path}": map[string]any{"get": op("Download one of the run's files (the output of that path, else the input).", "",
				[]any{id, map[string]any{"name": "path", "in": "path", "required": true, "description": "The file's path in the workspace.", "schema": str},
					query("role", "input or output.", map[string]any{"type": "string", "enum": []any{"input", "output"}})},
				with(errs("400", "404"), "200", map[string]any{"description": "The file's bytes (as far as they were kept: X-Coderun-Truncated says when not all).",
					"content": map[string]any{"*/*": map[string]any{"schema": map[string]any{"type": "string", "format": "binary",
						"description": "The file's bytes, typed by its name's extension (application/octet-stream for HTML, SVG and scripts, which are not for the browser to run)."}}}}))},
			"/v1/runs/{id}/notebook": map[string]any{"get": op("The run as a Jupyter notebook (nbformat 4.5).", "", []any{id},
				with(errs("404"), "200", map[string]any{"description": "The notebook.",
					"content": map[string]any{"application/x-ipynb+json": map[string]any{"schema": map[string]any{"type": "object"}}}}))},
			"/v1/runs/{id}/approve": map[string]any{"post": decide("Approve the code the run waits on.")},
			"/v1/runs/{id}/reject":  map[string]any{"post": decide("Reject the code the run waits on, with a note for the model.")},
			"/v1/runs/{id}/cancel": map[string]any{"post": op("Cancel a run.",
				"A run this server drives stops at once; one awaiting approval or interrupted is taken up only to be ended. It ends cancelled, with a failure report.",
				[]any{id}, with(errs("404", "409", "503"), "202", jsonResp("The run, being cancelled.", "Run")))},
			"/v1/runs/{id}/resume": map[string]any{"post": op("Resume an interrupted run from its last checkpoint.",
				"A run is interrupted when the process driving it stopped: a crash, or a server shutdown, which leaves runs resumable rather than failed.",
				[]any{id}, with(errs("404", "409", "503"), "202", jsonResp("The run, resumed.", "Run")))},
			"/v1/review": map[string]any{"get": op("The tenant's review queue: runs a person should look at, oldest first.", "", []any{
				query("all", "Closed items too.", map[string]any{"type": "boolean"}),
				query("run", "One run's items.", str),
			}, with(errs("400"), "200", jsonResp("The items.", "ReviewList")))},
			"/v1/stats": map[string]any{"get": op("The tenant's runs summed up, and per day.", "", []any{
				query("since", "Runs created since this time (RFC 3339) or this long ago (\"24h\", \"7d\").", str),
			}, with(errs("400"), "200", jsonResp("The stats.", "RunStats")))},
		},
		Schemas: schemas(statuses),
	}
}

func schemas(statuses []any) map[string]any {
	typ, obj, arr := server.Type, server.Object, server.Array
	duration := map[string]any{"type": []any{"string", "number"}, "description": "A duration such as \"10s\", or a number of seconds."}
	counts := map[string]any{"type": "object", "additionalProperties": map[string]any{"type": "integer"}}
	return map[string]any{
		"RunStartRequest": func() map[string]any {
			o := obj([]string{"task"}, map[string]any{
				"task":            typ("string", "The task in the user's words."),
				"model":           typ("string", "provider:model; empty: the server's model."),
				"mode":            map[string]any{"type": "string", "enum": []any{"single", "steps"}},
				"format":          map[string]any{"type": "string", "enum": []any{"tool", "fenced"}},
				"approve":         map[string]any{"type": "string", "enum": []any{"defer", "all", "none"}, "description": "Code the policy asks about: defer (default) pauses the run for a decision through the API; all approves, none rejects."},
				"files":           arr(server.Ref("RunFileIn")),
				"max_retries":     map[string]any{"type": "integer", "minimum": 0},
				"timeout_retries": map[string]any{"type": "integer", "minimum": 0},
				"max_steps":       map[string]any{"type": "integer", "minimum": 0},
				"max_tokens":      map[string]any{"type": "integer", "minimum": 0},
				"max_time":        duration,
				"limits":          server.Ref("RunLimits"),
			})
			o["additionalProperties"] = false
			return o
		}(),
		"RunFileIn": func() map[string]any {
			o := obj([]string{"path"}, map[string]any{"path": typ("string", "Where the file goes in the workspace (no \"..\")."),
				"content": typ("string", "The content as text."), "content_base64": typ("string", "The content, base64-encoded.")})
			o["additionalProperties"] = false
			return o
		}(),
		"RunLimits": input.LimitsSchema(),
		"RunDecision": func() map[string]any {
			o := obj(nil, map[string]any{"note": typ("string", "The reviewer's note; a rejection's goes to the model."),
				"by": typ("string", "Who decided (default \"api\")."), "always": typ("boolean", "Approve code flagged by the same rules for the rest of the run.")})
			o["additionalProperties"] = false
			return o
		}(),
		"Run": obj([]string{"id", "tenant", "task", "model", "mode", "status", "created_at", "updated_at", "scorecard", "steps", "driven"}, map[string]any{
			"id": typ("string", ""), "tenant": typ("string", ""), "task": typ("string", ""), "model": typ("string", ""), "mode": typ("string", ""),
			"status":     map[string]any{"type": "string", "enum": statuses, "description": "As shown now: interrupted for a run no process drives."},
			"created_at": typ("string", ""), "updated_at": typ("string", ""), "finished_at": typ("string", ""),
			"outcome":     typ("string", "How the run ended (answered, retries_exhausted, timeout, cancelled, ...)."),
			"answer":      typ("string", ""),
			"failure":     typ("object", "The honest failure report of a run without an answer."),
			"pending":     typ("object", "The code awaiting approval: language, code, explanation, findings."),
			"scorecard":   server.Ref("Scorecard"),
			"inputs":      map[string]any{"type": []any{"array", "null"}, "items": typ("object", "")},
			"config":      typ("object", "The run's settings."),
			"owner":       typ("string", ""),
			"lease_until": typ("string", ""),
			"steps":       typ("integer", "The number of steps recorded."),
			"driven":      typ("boolean", "This server drives the run now."),
			"standing":    typ("object", "More about a run that waits or was interrupted: what resuming does."),
		}),
		"RunList":     obj([]string{"runs"}, map[string]any{"runs": arr(server.Ref("Run"))}),
		"RunStep":     obj([]string{"seq", "at", "kind", "summary", "data"}, map[string]any{"seq": typ("integer", ""), "at": typ("string", ""), "kind": map[string]any{"type": "string", "enum": []any{"start", "model_call", "code", "review", "approval", "execution", "classification", "retry", "answer", "failure", "resume"}}, "attempt": typ("integer", ""), "summary": typ("string", ""), "data": typ("object", "The kind's payload (package agent's records).")}),
		"RunStepList": obj([]string{"steps"}, map[string]any{"steps": arr(server.Ref("RunStep"))}),
		"RunFile": obj([]string{"role", "path", "kind", "size", "mode"}, map[string]any{"role": map[string]any{"type": "string", "enum": []any{"input", "output"}},
			"path": typ("string", ""), "kind": typ("string", ""), "size": typ("integer", ""), "mode": typ("integer", ""), "link_target": typ("string", ""),
			"truncated": typ("boolean", ""), "step": typ("integer", "")}),
		"RunFileList": obj([]string{"files"}, map[string]any{"files": arr(server.Ref("RunFile"))}),
		"Scorecard": obj([]string{"attempts", "retries", "model_calls", "input_tokens", "output_tokens", "model_ms", "exec_ms", "wall_ms"}, map[string]any{
			"outcome": typ("string", ""), "attempts": typ("integer", ""), "retries": typ("integer", ""), "errors": counts, "error_kinds": counts,
			"model_calls": typ("integer", ""), "provider_retries": typ("integer", ""), "input_tokens": typ("integer", ""), "output_tokens": typ("integer", ""),
			"model_ms": typ("integer", ""), "exec_ms": typ("integer", ""), "wall_ms": typ("integer", ""), "approvals": typ("integer", ""), "rejections": typ("integer", "")}),
		"ReviewItem": obj([]string{"id", "run_id", "kind", "reason", "created_at", "status"}, map[string]any{"id": typ("integer", ""), "tenant": typ("string", ""),
			"run_id": typ("string", ""), "kind": map[string]any{"type": "string", "enum": []any{"approval", "failure", "unverified_answer"}}, "reason": typ("string", ""),
			"created_at": typ("string", ""), "status": map[string]any{"type": "string", "enum": []any{"open", "closed"}}, "closed_at": typ("string", ""),
			"resolution": typ("string", ""), "note": typ("string", "")}),
		"ReviewList": obj([]string{"items"}, map[string]any{"items": arr(server.Ref("ReviewItem"))}),
		"RunStats": obj([]string{"runs", "by_status", "by_outcome", "answered", "first_try", "days"}, map[string]any{
			"runs": typ("integer", ""), "by_status": counts, "by_outcome": counts, "answered": typ("number", "Share of ended runs with an answer."),
			"first_try": typ("number", "Share of answers that needed no retry."), "attempts": typ("integer", ""), "retries": typ("integer", ""),
			"mean_attempts": typ("number", ""), "errors": counts, "error_kinds": counts, "model_calls": typ("integer", ""),
			"input_tokens": typ("integer", ""), "output_tokens": typ("integer", ""), "model_ms": typ("integer", ""), "exec_ms": typ("integer", ""),
			"wall_ms": typ("integer", ""), "approvals": typ("integer", ""), "rejections": typ("integer", ""), "reviews_open": typ("integer", ""), "models": counts,
			"days": arr(server.Ref("RunStatsDay"))}),
		"RunStatsDay": obj([]string{"date", "runs", "ended", "answered", "failed", "outcomes", "tokens", "model_ms", "exec_ms", "model_calls"}, map[string]any{
			"date": typ("string", "YYYY-MM-DD (UTC)."), "runs": typ("integer", ""), "ended": typ("integer", ""), "answered": typ("integer", ""),
			"failed": typ("integer", ""), "outcomes": counts, "tokens": typ("integer", ""), "model_ms": typ("integer", ""), "exec_ms": typ("integer", ""),
			"model_calls": typ("integer", "")}),
	}
}
