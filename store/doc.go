// Package store keeps coderun's agent runs as records, in SQLite.
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
// The story of the package, file by file:
//
//   - store.go opens the database (modernc.org/sqlite, pure Go) in a data
//     directory ([DefaultDir]: $CODERUN_DATA_DIR, else
//     $XDG_DATA_HOME/coderun, else ~/.local/share/coderun) and migrates its
//     schema;
//   - run.go holds [Run] and its lifecycle: create, claim (a lease naming
//     the live process that drives the run; a run whose owner is gone shows
//     as interrupted), record, finish;
//   - step.go holds [Step] and the payload types of each step kind (model
//     calls with their messages, tokens and latency; code; policy reviews;
//     approvals; executions; classifications; retries; answers; failure
//     reports);
//   - files.go keeps the run's input files and the files its code produced,
//     so that a resumed run gets its workspace back and `--out` works on any
//     run;
//   - review.go is the review queue: failed runs, unverified answers and
//     code waiting for a person's approval;
//   - stats.go aggregates scorecards across runs;
//   - export.go writes a run as JSON and as a Jupyter notebook (nbformat 4).
//
// The store knows nothing of models or sandboxes beyond the shapes of what
// they returned; the agent package decides what the steps mean.
package store
