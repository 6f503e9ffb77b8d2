// Package agent is coderun's agent loop: a task goes to a model that writes
// code, the code is reviewed on the trusted side, run in a sandbox, and its
// real output is interpreted into an answer — or, when that cannot be done,
// into an honest failure report.
//
// A run is a typed state machine. Its state (the checkpoint: phase,
// conversation, pending code, attempts, retries, cells, scorecard) is
// stored with every step, so any process can take the run up where it
// stopped. Each phase is a function in its own file that reads the state,
// does its work and returns a transition (loop.go: the steps to record,
// what else changes in the store with them, and the next phase — or a
// pause, or an end with its outcome); one driver commits each transition
// (records the steps with the checkpoint in one store update, tells the
// observer) and runs the next phase:
//
//  1. generate (generate.go): the task, the shapes of the user's input
//     files (a CSV's header and row count, never its data) and the
//     conversation so far go to the model ([llm.Provider]), which answers
//     with the native run_code tool or, for models without tool calling, a
//     fenced code block ([FormatFenced], llm.ExtractCode and
//     llm.SelectCode). A malformed call or a reply without code goes back
//     to the model (retry.go).
//  2. review (review.go): the pre-flight policy (package policy) allows,
//     asks a person, or denies. A denial ends the run with the policy's
//     explanation.
//  3. approve (approve.go): what the policy asks about is decided by the
//     [Approver] (a person at the terminal: yes, no or always), by the
//     [ApprovalMode] (approve all, or reject all as non-interactive runs do
//     by default), or later: the run pauses in awaiting_approval, and
//     [Decide] plus [Agent.Resume] continue it from any process, after a
//     restart too. A person's rejection, with the note, goes back to the
//     model as its call's result, and the model may rewrite the code
//     within the retry budget.
//  4. execute (execute.go): an [Executor] runs the code with the run's
//     limits — [RuntimeBackend] (a fresh one-shot sandbox per program,
//     files carried over) or [SessionBackend] (a persistent IPython
//     session, what [ModeSteps] needs; a resumed session starts from the
//     files as they were before its first successful cell, replays the
//     successful cells for the interpreter's state, then has its workspace
//     set to the files of the checkpoint (checkpoint.go,
//     session_restore.go), so effects on files happen once and failed
//     cells' files come back). The outcome is classified
//     (classify.go): success; a retryable code error (SyntaxError,
//     NameError, ImportError, KeyError, a non-zero exit status, …), whose
//     traceback or stderr tail goes back to the model up to MaxRetries
//     (default 3); a timeout, retried once with the limit stated in the
//     feedback; fatal (CPU, memory or output limit, a second timeout, the
//     same error twice in a row); infrastructure (sandbox setup, the
//     model's API failing after its retries); cancelled. A run whose
//     context is cancelled with [ErrSuspended] (a server shutting down)
//     is not ended but left at its checkpoint, to be resumed.
//  5. interpret (interpret.go): a separate call with the task, the code and
//     its real output returns a verdict — the answer, or that the output
//     does not answer the task (retryable, with the reason fed back). The
//     numbers an answer quotes are grounded only by the output (ground.go);
//     an answer quoting values the output does not show is sent back once,
//     then flagged answered_unverified and queued for review. A run whose
//     interpretation call failed stays at this step and can be resumed.
//  6. finish (finish.go): a transition that ends the run is completed by
//     the driver: an answer, or — when a limit, a budget (steps, tokens,
//     time), the retries, the policy or a person stops the run — an honest
//     [FailureReport] (what the code was trying to do, the error that kept
//     occurring, the partial output of the last attempt), never an answer,
//     which goes to the review queue. Every way a run ends without an
//     answer is a row of one table (classify.go, endings): its outcome,
//     the class and kind it is classified as, and its summary.
//
// Package agent/agenttest is a scripted [Backend] (exit statuses, output,
// tracebacks, limits, files, code that runs until cancelled): the loop's
// logic is tested with it without root or sandboxes.
//
// The records are the agent's: record.go names the kinds of step and
// their payloads ([ModelCall], [CodeRecord], [ExecutionRecord], ...), which
// the store keeps as JSON it never reads, and notebook.go renders a run as
// a Jupyter notebook. The agent needs a few methods of a store ([Store]; a
// store.Tenant has them): a run is owned by lease while a process drives
// it (renewed in the background, store.KeepAlive), so that a run whose
// process died can be resumed by another once the lease has expired. The
// conversation with the model is stored once: each model call records the
// messages it sent first, the checkpoint those not sent yet.
//
// Each run keeps a scorecard (attempts, errors by class and kind, retries,
// tokens, model time against execution time, outcome) and emits
// OpenTelemetry spans after the GenAI semantic conventions (trace.go):
// invoke_agent, chat and execute_tool. Package agent/telemetry exports them
// over OTLP when configured.
package agent
