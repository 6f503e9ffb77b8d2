// Package runs is the agent-runs part of coderun's HTTP API: start a task
// (model, mode, files, budgets, approval mode), follow its steps as
// Server-Sent Events, read its status, result, steps and files, approve or
// reject the code it waits on (with a note), cancel it, resume it; and the
// read-only views of the runs, the review queue and the stats.
//
// Every run belongs to the tenant the server authenticated the request as
// (server.TenantFrom): the service reads and writes only that tenant's
// records, so another tenant's run id answers 404.
//
// The service drives the runs it starts or resumes in goroutines of its
// own, detached from the request that started them. [Service.Close]
// suspends them (agent.ErrSuspended): each is left at its last checkpoint,
// shown interrupted, and resumes from there (POST /v1/runs/{id}/resume),
// in this process or another.
package runs
