package jobs

import (
	"github.com/coderun/coderun/server"
	"github.com/coderun/coderun/server/input"
)

// Doc is the jobs API's part of the OpenAPI 3.1 document: every route of
// Patterns, with its request and response bodies.
func Doc() *server.APIDoc {
	id := map[string]any{"name": "id", "in": "path", "required": true, "description": "The job's id.", "schema": map[string]any{"type": "string"}}
	after := map[string]any{"name": "after", "in": "query", "required": false, "description": "Skip the first N verdicts.",
		"schema": map[string]any{"type": "integer", "minimum": 0}}
	errTexts := map[string]string{
		"429": "Beyond the tenant's request rate, or its running jobs; retry after Retry-After seconds.",
		"400": "Bad input: malformed JSON, an unknown field, no usable line (or, strict, a bad one), a bad format, k or limit.",
		"404": "No such job of the tenant's (unknown, another tenant's, or forgotten).",
		"409": "The job is not in the state the request needs: cancel a job that has ended, or one another server runs; resume one that is not interrupted.",
	}
	errs := func(codes ...string) map[string]any { return server.ErrorResponses(errTexts, codes...) }
	with, jsonResp := server.WithResponse, server.JSONResponse
	op := func(summary string, params []any, responses map[string]any) map[string]any {
		o := map[string]any{"summary": summary, "tags": []any{"jobs"}, "responses": responses}
		if params != nil {
			o["parameters"] = params
		}
		return o
	}
	submit := op("Submit a batch of programs to score against their tests (coderun eval's formats) as a job.", nil,
		with(errs("400", "413", "503"), "202", jsonResp("The job, running.", "Job")))
	submit["requestBody"] = server.JSONBody("JobRequest", true)
	return &server.APIDoc{
		Paths: map[string]any{
			"/v1/jobs": map[string]any{
				"post": submit,
				"get":  op("List the tenant's jobs, newest first.", nil, with(errs(), "200", jsonResp("The jobs.", "JobList"))),
			},
			"/v1/jobs/{id}": map[string]any{"get": op("Get a job: its status, progress and summary so far.", []any{id},
				with(errs("404"), "200", jsonResp("The job.", "Job")))},
			"/v1/jobs/{id}/events": map[string]any{"get": op("Follow a job as Server-Sent Events: `verdict` (id: its number) for each verdict, "+
				"`progress` (the Job) after each batch, `end` (the Job) when it has ended or was interrupted. A server shutting down stops its running "+
				"jobs, which are then interrupted (their verdicts kept, resumable) and end their streams.", []any{id, after},
				with(errs("400", "404"), "200", map[string]any{"description": "The stream of events.", "content": map[string]any{"text/event-stream": map[string]any{
					"schema": map[string]any{"type": "string", "description": "event: verdict|progress|end; data: a Verdict or the Job."}}}}))},
			"/v1/jobs/{id}/verdicts": map[string]any{"get": op("The job's verdicts in the order they were made.", []any{id, after},
				with(errs("400", "404"), "200", jsonResp("The verdicts.", "JobVerdicts")))},
			"/v1/jobs/{id}/summary": map[string]any{"get": op("The summary of the job's verdicts so far: counts, pass rate, pass@k, latencies.", []any{id},
				with(errs("404"), "200", jsonResp("The summary.", "EvalSummary")))},
			"/v1/jobs/{id}/cancel": map[string]any{"post": op("Cancel a running (or interrupted) job; its verdicts so far are kept.", []any{id},
				with(errs("404", "409"), "202", jsonResp("The job, being cancelled.", "Job")))},
			"/v1/jobs/{id}/resume": map[string]any{"post": op("Resume an interrupted job (its server stopped or died before it ended): "+
				"the items without a verdict run, after the verdicts kept.", []any{id},
				with(errs("404", "409", "503"), "202", jsonResp("The job, running again.", "Job")))},
		},
		Schemas: schemas(),
	}
}

func schemas() map[string]any {
	typ, obj, arr := server.Type, server.Object, server.Array
	counts := map[string]any{"type": "object", "additionalProperties": map[string]any{"type": "integer"}}
	percentiles := obj([]string{"p50", "p95", "max"}, map[string]any{"p50": typ("number", ""), "p95": typ("number", ""), "max": typ("number", "")})
	req := obj([]string{"problems"}, map[string]any{
		"problems":       typ("string", "JSON Lines: HumanEval, MBPP or generic {id, code, test} problems."),
		"samples":        typ("string", "JSON Lines of a model's completions ({task_id, completion}), scored instead of the reference solutions."),
		"format":         map[string]any{"type": "string", "enum": []any{"auto", "humaneval", "mbpp", "generic"}},
		"mbpp_challenge": typ("boolean", "Add MBPP's challenge tests."),
		"strict":         typ("boolean", "Refuse the batch for one bad line instead of skipping it."),
		"k":              arr(map[string]any{"type": "integer", "minimum": 1}),
		"concurrency":    map[string]any{"type": "integer", "minimum": 0},
		"limits":         server.Ref("RunLimits"),
	})
	req["additionalProperties"] = false
	return map[string]any{
		"JobRequest": req,
		"RunLimits":  input.LimitsSchema(),
		"Job": obj([]string{"id", "status", "created_at", "total", "done", "passed", "skipped", "summary"}, map[string]any{
			"id": typ("string", ""), "status": map[string]any{"type": "string", "enum": []any{"running", "succeeded", "failed", "cancelled", "interrupted"},
				"description": "interrupted: the server running the job stopped or died before it ended; its verdicts are kept and it can be resumed."},
			"created_at": typ("string", ""), "finished_at": typ("string", ""), "error": typ("string", "Why a failed job failed, or why an interrupted one stopped."),
			"total": typ("integer", ""), "done": typ("integer", ""), "passed": typ("integer", ""),
			"skipped": arr(obj([]string{"input", "line", "error"}, map[string]any{"input": typ("string", ""), "line": typ("integer", ""), "error": typ("string", "")})),
			"summary": server.Ref("EvalSummary"),
		}),
		"JobList": obj([]string{"jobs"}, map[string]any{"jobs": arr(server.Ref("Job"))}),
		"Verdict": obj([]string{"id", "task_id", "sample", "status", "exit_code", "wall_ms", "cpu_ms", "total_ms", "hash", "finished"}, map[string]any{
			"id": typ("string", ""), "task_id": typ("string", ""), "sample": typ("integer", ""),
			"status": map[string]any{"type": "string", "enum": []any{"passed", "failed", "timeout", "memory", "error"}},
			"error":  typ("string", ""), "line": typ("string", ""), "stderr": typ("string", ""), "reason": typ("string", ""),
			"exit_code": typ("integer", ""), "signal": typ("string", ""), "wall_ms": typ("number", ""), "cpu_ms": typ("number", ""),
			"total_ms": typ("number", ""), "peak_memory": typ("integer", ""), "pooled": typ("boolean", ""), "hash": typ("string", ""), "finished": typ("string", ""),
		}),
		"JobVerdicts": obj([]string{"verdicts"}, map[string]any{"verdicts": arr(server.Ref("Verdict"))}),
		"EvalSummary": obj([]string{"items", "tasks", "counts", "passed", "pass_rate", "pass_at_k", "k"}, map[string]any{
			"items": typ("integer", ""), "tasks": typ("integer", ""), "counts": counts, "passed": typ("integer", ""), "pass_rate": typ("number", ""),
			"pass_at_k": map[string]any{"type": "object", "additionalProperties": map[string]any{"type": "number"}}, "k": arr(typ("integer", "")),
			"samples_min": typ("integer", ""), "samples_max": typ("integer", ""), "ran": typ("integer", ""), "resumed": typ("integer", ""),
			"elapsed_s": typ("number", ""), "items_per_second": typ("number", ""), "total_ms": percentiles, "wall_ms": percentiles,
		}),
	}
}
