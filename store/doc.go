// Package store defines coderun's records of agent runs and the interface
// a database of them implements; the databases are packages of their own
// (store/sqlite, the default; a PostgreSQL one for several servers would
// be another), and package store/storetest is the suite each must pass.
//
// An agent run is a task handed to a model that writes code, a policy
// review, perhaps a person's approval, the execution in a sandbox, the
// classification of what happened, retries with feedback, and in the end an
// answer resting on computed values or an honest failure report. Every one
// of those steps is a [Step] appended to its [Run] before the next step
// starts, in the same transaction as the agent's checkpoint (its opaque
// state), the run's status and scorecard, and the files the step produced.
// So a crash loses at most the step in flight, the record is consistent at
// every instant, and a run that paused for approval — or whose process died
// — can be resumed from its last checkpoint by another process, even after
// a restart.
//
// Three rules hold for every backend:
//
//   - Tenants: every run, step, file and review item belongs to a tenant,
//     and all access goes through [Store.Tenant], a [Tenant] that sees one
//     tenant's records and nothing else. The CLI is [DefaultTenant].
//   - Leases: a run is driven by one [Owner] at a time, which holds a lease
//     in the database ([DefaultLease], renewed by [KeepAlive] and by every
//     record). A run whose owner died, on this host or another, becomes
//     claimable once the lease expires, and shows as interrupted; its old
//     owner can no longer record into it.
//   - Atomic records: [Tenant.Record] applies an [Update] whole or not at
//     all.
//
// The story of the package, file by file:
//
//   - store.go holds the [Store] and [Tenant] interfaces and the errors;
//   - run.go holds [Run], its statuses and the [Update] a record applies;
//   - lease.go holds owners and [KeepAlive];
//   - step.go holds [Step], whose payload is JSON the store never reads:
//     the kinds of step and their payloads are the agent's (package
//     agent), as are a run's failure report and pending approval;
//   - files.go describes the run's input files and the files its code
//     produced, so that a resumed run gets its workspace back;
//   - review.go is the review queue: failed runs, unverified answers and
//     code waiting for a person's approval;
//   - stats.go holds the [Scorecard] and aggregates scorecards across
//     runs ([Summarize]);
//   - export.go gathers a run's whole record ([Gather]);
//   - job.go holds the records of batch-eval jobs ([Job], [JobRecords]):
//     what was submitted, opaque to the store, and the verdicts as they
//     are made, so that a restarted server still serves a finished job
//     and shows an unfinished one as interrupted, resumable.
//
// To add a backend, write a package whose type implements [Store] and run
// storetest.Run against it in its tests.
package store
