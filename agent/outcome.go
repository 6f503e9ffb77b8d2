package agent

// Outcome names how a run ended: with an answer, or why without one. The
// store keeps it as the string it is (store.Run.Outcome, the scorecard).
type Outcome string

// Outcomes of a run.
const (
	OutcomeAnswered         Outcome = "answered"            // an answer resting on the output
	OutcomeUnverified       Outcome = "answered_unverified" // an answer quoting values the output does not show
	OutcomeRetriesExhausted Outcome = "retries_exhausted"
	OutcomeStuck            Outcome = "stuck" // the same error twice in a row
	OutcomeTimeout          Outcome = "timeout"
	OutcomeCPULimit         Outcome = "cpu_limit"
	OutcomeMemoryLimit      Outcome = "memory_limit"
	OutcomeOutputLimit      Outcome = "output_limit"
	OutcomeDenied           Outcome = "denied"   // the policy denied the code
	OutcomeRejected         Outcome = "rejected" // a person (or the non-interactive default) rejected it
	OutcomeStepBudget       Outcome = "step_budget"
	OutcomeTokenBudget      Outcome = "token_budget"
	OutcomeTimeBudget       Outcome = "time_budget"
	OutcomeProviderError    Outcome = "provider_error"
	OutcomeSetupError       Outcome = "setup_error"
	OutcomeExecutorError    Outcome = "executor_error"
	OutcomeCancelled        Outcome = "cancelled"
)

// Outcomes lists every outcome a run can end with.
func Outcomes() []Outcome {
	return []Outcome{OutcomeAnswered, OutcomeUnverified, OutcomeRetriesExhausted, OutcomeStuck,
		OutcomeTimeout, OutcomeCPULimit, OutcomeMemoryLimit, OutcomeOutputLimit, OutcomeDenied,
		OutcomeRejected, OutcomeStepBudget, OutcomeTokenBudget, OutcomeTimeBudget,
		OutcomeProviderError, OutcomeSetupError, OutcomeExecutorError, OutcomeCancelled}
}

// Classes lists every class of outcome.
func Classes() []Class {
	return []Class{ClassSuccess, ClassRetryable, ClassFatal, ClassInfrastructure, ClassCancelled}
}

// Kind names what an outcome was: the exception a program died of
// ("NameError", "TypeError"; any name a program raises), or one of the
// kinds below. The store counts errors by it (the scorecard's error kinds).
type Kind string

// The kinds the agent names itself.
const (
	// Limits the code ran into.
	KindTimeout     Kind = "timeout"
	KindCPULimit    Kind = "cpu_limit"
	KindMemoryLimit Kind = "memory_limit"
	KindOutputLimit Kind = "output_limit"
	KindTimeBudget  Kind = "time_budget"
	KindTokenBudget Kind = "token_budget"
	KindStepBudget  Kind = "step_budget"
	// How a program ended without an exception it named.
	KindExitStatus Kind = "exit_status"
	KindSignal     Kind = "signal"
	KindNoOutput   Kind = "no_output"
	KindCancelled  Kind = "cancelled"
	KindKilled     Kind = "killed"
	// The sandbox or executor failing.
	KindSetupError     Kind = "setup_error"
	KindExecutorError  Kind = "executor_error"
	KindInvalidRequest Kind = "invalid_request"
	// The model's replies.
	KindNoCode            Kind = "no_code"
	KindTruncatedReply    Kind = "truncated_reply"
	KindMalformedToolCall Kind = "malformed_tool_call"
	KindUngroundedAnswer  Kind = "ungrounded_answer"
	KindEmptyAnswer       Kind = "empty_answer"
	// The interpretation found that the output does not answer the task.
	KindNotAnswered Kind = "not_answered"
	// The loop's own judgements.
	KindPolicyDenied Kind = "policy_denied"
	KindStuck        Kind = "stuck"
)
