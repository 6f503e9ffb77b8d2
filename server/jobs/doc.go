// Package jobs is the batch-eval part of coderun's HTTP API: a JSON Lines
// batch in the formats of `coderun eval` (HumanEval, MBPP, generic
// {id, code, test}; reference solutions, or a model's samples joined to
// their problems) is submitted as a job, run by eval.Run in fresh
// sandboxes, and followed as it runs: its progress (also as Server-Sent
// Events), its verdicts, its summary (counts, pass@k, latencies).
//
// Every job belongs to the tenant the server authenticated the request as
// (server.TenantFrom); another tenant's job id answers 404. Jobs live in
// the server's memory: a restarted server has none, and a shutdown stops
// the jobs running (status cancelled, their verdicts so far kept until
// then).
package jobs
