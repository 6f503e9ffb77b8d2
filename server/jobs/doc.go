// Package jobs is the batch-eval part of coderun's HTTP API: a JSON Lines
// batch in the formats of `coderun eval` (HumanEval, MBPP, generic
// {id, code, test}; reference solutions, or a model's samples joined to
// their problems) is submitted as a job, run by eval.Run in fresh
// sandboxes, and followed as it runs: its progress (also as Server-Sent
// Events), its verdicts, its summary (counts, pass@k, latencies).
//
// Every job belongs to the tenant the server authenticated the request as
// (server.TenantFrom); another tenant's job id answers 404. Jobs are kept
// in the store (store.JobRecords): what was submitted, and each verdict as
// it is made, so that a restarted server still serves a finished job's
// verdicts and summary. A job is run by one server at a time, under a
// lease it renews; a server that shuts down releases its running jobs, and
// one that dies lets its lease expire: either way the job shows as
// interrupted, its verdicts kept, and POST /v1/jobs/{id}/resume runs the
// items that have none yet (matched by id and program hash).
package jobs
