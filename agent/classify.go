package agent

import (
	"fmt"
	"regexp"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/coderun/coderun/language"
	"github.com/coderun/coderun/sandbox"
)

// Class is what an outcome means for the loop.
type Class string

// The classes of outcome.
const (
	// Success: the code ran to completion; its output is evidence.
	ClassSuccess Class = "success"
	// Retryable: an error in the code that the model can fix (a Python
	// exception, a non-zero exit status, a malformed tool call, a reply
	// without code).
	ClassRetryable Class = "retryable"
	// Fatal: the run stops (CPU, memory or output limit, a timeout once
	// its retries are spent, policy denial, the same error twice in a row).
	ClassFatal Class = "fatal"
	// Infrastructure: the sandbox could not be set up, or the model's API
	// kept failing; nothing the model wrote is at fault.
	ClassInfrastructure Class = "infrastructure"
	// Cancelled: the run was cancelled (Ctrl-C, the caller's context).
	ClassCancelled Class = "cancelled"
)

// retryableErrors are the Python exceptions named in coderun's contract as
// code errors the model can fix. Other exceptions are retryable too (they
// are the code's own errors), except fatalErrors.
var retryableErrors = map[Kind]bool{
	"SyntaxError": true, "IndentationError": true, "TabError": true,
	"NameError": true, "UnboundLocalError": true,
	"ImportError": true, "ModuleNotFoundError": true,
	"IndexError": true, "KeyError": true, "TypeError": true, "ValueError": true,
	"AttributeError": true, "ZeroDivisionError": true, "AssertionError": true,
	"FileNotFoundError": true,
}

// fatalErrors are exceptions a retry would only reproduce: the memory ran
// out, or the program was interrupted.
var fatalErrors = map[Kind]Class{
	"MemoryError":       ClassFatal,
	"KeyboardInterrupt": ClassCancelled,
}

// verdict is the classification of one outcome.
type verdict struct {
	Class   Class
	Kind    Kind
	Message string // the error line
	// Detail is the trimmed traceback or stderr tail that goes back to the
	// model.
	Detail string
	Why    string
}

func (v verdict) signature() string {
	return string(v.Kind) + ": " + normalizeMessage(v.Message)
}

func (v verdict) record() Classification {
	c := Classification{Class: v.Class, Kind: v.Kind, Message: v.Message, Why: v.Why}
	if v.Class != ClassSuccess {
		c.Signature = v.signature()
	}
	return c
}

// errorLine is "Kind: message", or Kind alone.
func (v verdict) errorLine() string {
	if v.Message == "" {
		return string(v.Kind)
	}
	return string(v.Kind) + ": " + v.Message
}

var (
	hexAddr = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`0x[0-9a-fA-F]+`) })
	spaces  = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`\s+`) })
)

// normalizeMessage drops what changes between two runs of the same error:
// object addresses and spacing.
func normalizeMessage(s string) string {
	s = hexAddr().ReplaceAllString(s, "0x…")
	return strings.TrimSpace(spaces().ReplaceAllString(s, " "))
}

// classify says what an execution's outcome means. cancelled reports
// whether the caller's context was done when the run was killed.
func classify(ex *ExecutionRecord, cancelled bool) verdict {
	limit := func(kind Kind, what string) verdict {
		return verdict{Class: ClassFatal, Kind: kind, Message: ex.Error, Detail: tail(ex.Stderr, 20, 2000),
			Why: what + "; the run stops at this limit"}
	}
	switch ex.Reason {
	case sandbox.ReasonTimeout:
		// The model may write faster code: a timeout is retried (up to
		// DefaultTimeoutRetries times, retry.go) with the limit stated in
		// the feedback, then ends the run.
		return verdict{Class: ClassRetryable, Kind: KindTimeout, Message: ex.Error, Detail: tail(ex.Stderr, 20, 2000),
			Why: "the code ran past its wall-time limit; faster code may finish within it"}
	case sandbox.ReasonCPULimit:
		return limit(KindCPULimit, "the code used up its CPU-time limit")
	case sandbox.ReasonMemoryLimit:
		return limit(KindMemoryLimit, "the code went over its memory limit")
	case sandbox.ReasonOutputLimit:
		return limit(KindOutputLimit, "the code printed more than the output limit")
	case sandbox.ReasonKilled:
		if cancelled {
			return verdict{Class: ClassCancelled, Kind: KindCancelled, Why: "the run was cancelled while the code ran"}
		}
		return verdict{Class: ClassInfrastructure, Kind: KindKilled, Message: ex.Error,
			Why: "the sandbox was stopped from outside"}
	case sandbox.ReasonSetupError:
		return verdict{Class: ClassInfrastructure, Kind: KindSetupError, Message: ex.Error,
			Why: "the sandbox could not be set up; the code did not run"}
	}
	// Exited. A session reports exceptions as error outputs.
	for _, o := range ex.Outputs {
		if o.OutputType == "error" {
			return exceptionVerdict(o.Ename, o.Evalue, tail(strings.Join(o.Traceback, "\n"), 25, 3000))
		}
	}
	if ex.ExitCode == 0 && ex.Signal == "" {
		return verdict{Class: ClassSuccess, Why: "the code ran to completion"}
	}
	if ename, evalue, ok := parseException(ex.Language, ex.Stderr); ok {
		return exceptionVerdict(ename, evalue, tail(ex.Stderr, 25, 3000))
	}
	if ex.Signal != "" {
		return verdict{Class: ClassRetryable, Kind: KindSignal, Message: "terminated by " + ex.Signal,
			Detail: tail(ex.Stderr, 20, 2000), Why: "the program crashed (" + ex.Signal + ")"}
	}
	msg := lastLine(ex.Stderr)
	if msg == "" {
		msg = lastLine(ex.Stdout)
	}
	return verdict{Class: ClassRetryable, Kind: KindExitStatus, Message: fmt.Sprintf("exit status %d: %s", ex.ExitCode, msg),
		Detail: tail(ex.Stderr, 20, 2000), Why: fmt.Sprintf("the program exited with status %d", ex.ExitCode)}
}

func exceptionVerdict(ename, evalue, detail string) verdict {
	name := ename
	if i := strings.LastIndexByte(name, '.'); i >= 0 {
		name = name[i+1:]
	}
	kind := Kind(name)
	if c, ok := fatalErrors[kind]; ok {
		why := "the program ran out of memory; a retry would do the same"
		if c == ClassCancelled {
			why = "the program was interrupted"
		}
		return verdict{Class: c, Kind: kind, Message: evalue, Detail: detail, Why: why}
	}
	why := "the code raised " + name + ", an error the model can fix"
	if !retryableErrors[kind] {
		why = "the code raised " + name + "; the model may fix it"
	}
	return verdict{Class: ClassRetryable, Kind: kind, Message: evalue, Detail: detail, Why: why}
}

var (
	pyExceptionLine = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`^([A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*)(?::\s?(.*))?$`)
	})
	jsErrorLine = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`^(?:Uncaught )?([A-Za-z_$][A-Za-z0-9_$]*(?:Error|Exception))(?::\s?(.*))?$`)
	})
)

// parseException finds the exception a program died of in its stderr: for
// Python the last line of a traceback ("NameError: name 'y' is not
// defined", or a SyntaxError after its location), for Node the error line
// before the stack.
func parseException(lang language.Language, stderr string) (ename, evalue string, ok bool) {
	lines := strings.Split(strings.TrimRight(stderr, "\n"), "\n")
	if lang == sandbox.Node {
		for _, l := range lines {
			if m := jsErrorLine().FindStringSubmatch(strings.TrimSpace(l)); m != nil {
				return m[1], m[2], true
			}
		}
		return "", "", false
	}
	if lang != "" && lang != sandbox.Python {
		return "", "", false
	}
	sawTrace := false
	for _, l := range lines {
		if strings.HasPrefix(l, "Traceback (most recent call last):") || strings.HasPrefix(l, "  File \"") {
			sawTrace = true
			break
		}
	}
	if !sawTrace {
		return "", "", false
	}
	for i := len(lines) - 1; i >= 0; i-- {
		l := lines[i]
		if strings.TrimSpace(l) == "" || strings.HasPrefix(l, " ") {
			continue
		}
		m := pyExceptionLine().FindStringSubmatch(l)
		if m == nil {
			continue
		}
		name := m[1]
		base := name[strings.LastIndexByte(name, '.')+1:]
		if strings.HasSuffix(base, "Error") || strings.HasSuffix(base, "Exception") ||
			strings.HasSuffix(base, "Warning") || base == "KeyboardInterrupt" || base == "StopIteration" ||
			base == "SystemExit" || base == "GeneratorExit" || base == "Exit" {
			return name, m[2], true
		}
	}
	return "", "", false
}

// tail returns the last lines of s, at most maxLines lines and maxBytes
// bytes, marking what was cut.
func tail(s string, maxLines, maxBytes int) string {
	s = strings.TrimRight(s, "\n")
	if s == "" {
		return ""
	}
	lines := strings.Split(s, "\n")
	cut := false
	if len(lines) > maxLines {
		lines, cut = lines[len(lines)-maxLines:], true
	}
	out := strings.Join(lines, "\n")
	if len(out) > maxBytes {
		out, cut = out[runeStartAfter(out, len(out)-maxBytes):], true
		if i := strings.IndexByte(out, '\n'); i >= 0 && i < len(out)-1 {
			out = out[i+1:]
		}
	}
	if cut {
		out = "[… earlier output cut …]\n" + out
	}
	return out
}

// clip shortens s to at most max bytes, keeping its head and tail; it
// cuts between UTF-8 characters, never inside one.
func clip(s string, max int) string {
	if len(s) <= max {
		return s
	}
	head := runeStartBefore(s, max*2/3)
	tl := runeStartAfter(s, len(s)-(max-max*2/3))
	return s[:head] + fmt.Sprintf("\n[… %d bytes cut …]\n", tl-head) + s[tl:]
}

// runeStartBefore is the start of the character at byte i of s, or i when
// a character starts there: s[:i] ends with a whole character.
func runeStartBefore(s string, i int) int {
	for j := 0; j < utf8.UTFMax && i > 0 && i < len(s) && !utf8.RuneStart(s[i]); j++ {
		i--
	}
	return i
}

// runeStartAfter is the start of the first character at or after byte i
// of s: s[i:] begins with a whole character.
func runeStartAfter(s string, i int) int {
	for j := 0; j < utf8.UTFMax && i < len(s) && !utf8.RuneStart(s[i]); j++ {
		i++
	}
	return i
}

func lastLine(s string) string {
	s = strings.TrimRight(s, "\n")
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		s = s[i+1:]
	}
	return strings.TrimSpace(s)
}

// An ending is a way a run ends without an answer. Every ending goes
// through the one table [endings]: the run's outcome, the class of error
// it counts as, the kind its classification step records, and the summary
// that opens its failure report.
type ending string

// The endings.
const (
	endTimeout         ending = "timeout"           // the code ran past its wall-time limit
	endCPULimit        ending = "cpu_limit"         // ... its CPU-time limit
	endMemoryLimit     ending = "memory_limit"      // ... its memory limit (killed by the kernel)
	endMemoryError     ending = "MemoryError"       // ... its memory limit (Python's MemoryError)
	endOutputLimit     ending = "output_limit"      // ... the output limit
	endSetupError      ending = "setup_error"       // the sandbox of an execution could not be set up
	endExecutorSetup   ending = "executor_setup"    // the executor could not be opened
	endExecutorError   ending = "executor_error"    // the executor could not run the code at all
	endStopped         ending = "stopped"           // any other fatal or infrastructure outcome of the code
	endCodeTimeBudget  ending = "code_time_budget"  // the time budget ran out while the code ran
	endModelTimeBudget ending = "model_time_budget" // ... while the model was asked
	endTimeBudget      ending = "time_budget"       // ... between steps
	endTokenBudget     ending = "token_budget"
	endStepBudget      ending = "step_budget"
	endProviderError   ending = "provider_error" // the model's API failed after its retries
	endEmptyAnswer     ending = "empty_answer"   // the model wrote no answer
	endDenied          ending = "policy_denied"
	endRejectedByMode  ending = "rejected_by_mode" // --approve none
	endRejected        ending = "rejected"         // a person rejected the code
	endStuck           ending = "stuck"
	endRetries         ending = "retries_exhausted"
	endCancelled       ending = "cancelled"
)

// endFacts are what a summary may tell.
type endFacts struct {
	limits sandbox.Limits
	// v is the classification of the outcome that ends the run.
	v verdict
	// detail is the error at hand, or who rejected the code, or the
	// policy's explanation.
	detail string
	// explanation is the policy's explanation of code a person rejected.
	explanation string
	// used and budget are the spent budget and its size.
	used, budget string
	// errors tallies the errors of the code the run met ("4 errors, all
	// different"); finish fills it in.
	errors string
}

// endRule is a row of [endings].
type endRule struct {
	outcome Outcome
	class   Class
	// kind is the kind the classification step records; empty: the kind
	// of the outcome at hand (facts.v.Kind, or the model API error's).
	// An empty class likewise means the verdict's class.
	kind Kind
	// own says that the phase records the classification itself (or that
	// there is none: a rejection, a cancellation); otherwise the ending
	// records one of class and kind, with the summary as its reason.
	own     bool
	summary func(f endFacts) string
}

const sameLimit = " The run stops at this limit; it is not retried."

// endings is the one table from a way a run ends to its outcome,
// classification and summary.
var endings = map[ending]endRule{
	endTimeout: {OutcomeTimeout, ClassFatal, "", false, func(f endFacts) string {
		s := fmt.Sprintf("The code ran past its wall-time limit of %s and was stopped", f.limits.WallTime)
		switch f.budget {
		case "", "0":
			return s + "; timeouts are not retried in this run."
		case "1":
			return s + ", again after the model was told the limit and rewrote it once; the run stops here."
		}
		return fmt.Sprintf("%s, again after the model was told the limit and rewrote it %s times; the run stops here.", s, f.budget)
	}},
	endCPULimit: {OutcomeCPULimit, ClassFatal, "", false, func(f endFacts) string {
		return fmt.Sprintf("The code used up its CPU-time limit of %s and was stopped."+sameLimit, f.limits.CPUTime)
	}},
	endMemoryLimit: {OutcomeMemoryLimit, ClassFatal, "", false, memorySummary},
	endMemoryError: {OutcomeMemoryLimit, ClassFatal, "", false, memorySummary},
	endOutputLimit: {OutcomeOutputLimit, ClassFatal, "", false, func(f endFacts) string {
		return fmt.Sprintf("The code printed more than the output limit of %s per stream and was stopped."+sameLimit, sandbox.FormatBytes(f.limits.OutputBytes))
	}},
	endSetupError: {OutcomeSetupError, ClassInfrastructure, "", false, func(f endFacts) string {
		return "The sandbox could not be set up, so the code did not run: " + f.v.Message
	}},
	endExecutorSetup: {OutcomeSetupError, ClassInfrastructure, KindSetupError, false, func(f endFacts) string {
		return "The sandbox for the code could not be set up: " + f.detail
	}},
	endExecutorError: {OutcomeExecutorError, ClassInfrastructure, KindExecutorError, false, func(f endFacts) string {
		return "The code could not be run: " + f.detail
	}},
	endStopped:        {OutcomeExecutorError, "", "", false, stoppedSummary},
	endCodeTimeBudget: {OutcomeTimeBudget, ClassFatal, "", false, stoppedSummary},
	endModelTimeBudget: {OutcomeTimeBudget, ClassFatal, KindTimeBudget, false, func(f endFacts) string {
		return fmt.Sprintf("The run used up its time budget of %s while waiting for the model.", f.budget)
	}},
	endTimeBudget: {OutcomeTimeBudget, ClassFatal, KindTimeBudget, false, func(f endFacts) string {
		return fmt.Sprintf("The run used up its time budget of %s before the task was done.", f.budget)
	}},
	endTokenBudget: {OutcomeTokenBudget, ClassFatal, KindTokenBudget, false, func(f endFacts) string {
		return fmt.Sprintf("The run used %s tokens, its budget of %s, before the task was done.", f.used, f.budget)
	}},
	endStepBudget: {OutcomeStepBudget, ClassFatal, KindStepBudget, false, func(f endFacts) string {
		return fmt.Sprintf("The step budget of %s cells was used up before the task was done.", f.budget)
	}},
	endProviderError: {OutcomeProviderError, ClassInfrastructure, "", false, func(f endFacts) string {
		return "The model's API failed and its retries were used up: " + f.detail
	}},
	endEmptyAnswer: {OutcomeProviderError, ClassInfrastructure, KindEmptyAnswer, false, func(endFacts) string {
		return "The code ran, but the model wrote no answer from its output."
	}},
	endDenied: {OutcomeDenied, ClassFatal, KindPolicyDenied, true, func(f endFacts) string { return f.detail }},
	endRejectedByMode: {OutcomeRejected, "", "", true, func(f endFacts) string {
		return "The code needs a person's approval and none was given: non-interactive runs reject " +
			"such code unless it is approved by flag (--approve all) or allowed by the policy. " + f.explanation
	}},
	endRejected: {OutcomeRejected, "", "", true, func(f endFacts) string {
		return "The code was rejected " + f.detail + "; it did not run. " + f.explanation
	}},
	endStuck: {OutcomeStuck, ClassFatal, KindStuck, true, func(f endFacts) string {
		return fmt.Sprintf("The run was stopped because the same error occurred twice in a row (%s): "+
			"the model was not making progress.", oneLine(f.v.errorLine(), 200))
	}},
	endRetries: {OutcomeRetriesExhausted, "", "", true, func(f endFacts) string {
		return fmt.Sprintf("Every attempt failed (%s) and the %s retries allowed were used up; the last error was %s.",
			f.errors, f.budget, oneLine(f.v.errorLine(), 200))
	}},
	endCancelled: {OutcomeCancelled, ClassCancelled, "", true, func(endFacts) string {
		return "The run was cancelled before it finished."
	}},
}

func memorySummary(f endFacts) string {
	return fmt.Sprintf("The code went over its memory limit of %s and was stopped."+sameLimit, sandbox.FormatBytes(f.limits.Memory))
}

func stoppedSummary(f endFacts) string {
	return fmt.Sprintf("The code was stopped: %s (%s)."+sameLimit, f.v.Why, f.v.errorLine())
}

// executionEnding is how a fatal or infrastructure outcome of the code
// ends the run.
func executionEnding(v verdict) ending {
	switch e := ending(v.Kind); e {
	case endTimeout, endCPULimit, endMemoryLimit, endMemoryError, endOutputLimit, endSetupError:
		return e
	case ending(KindTimeBudget):
		return endCodeTimeBudget
	}
	return endStopped
}
