package store

import (
	"context"
	"maps"
	"slices"
	"time"
)

// Scorecard sums up a run: how many attempts it took, what went wrong on
// the way, what it cost, and how it ended.
type Scorecard struct {
	Outcome string `json:"outcome,omitempty"`
	// Attempts is the number of executions of model-written code.
	Attempts int `json:"attempts"`
	// Retries is the number of times the model was sent back to fix
	// something (an error, a malformed tool call, a reply without code).
	Retries int `json:"retries"`
	// Errors counts errors by class ("retryable", "fatal",
	// "infrastructure"); ErrorKinds by kind ("NameError", "timeout",
	// "malformed_tool_call", ...).
	Errors     map[string]int `json:"errors,omitempty"`
	ErrorKinds map[string]int `json:"error_kinds,omitempty"`
	// ModelCalls counts calls to the model; ProviderRetries the extra HTTP
	// attempts they took (rate limits, server errors).
	ModelCalls      int   `json:"model_calls"`
	ProviderRetries int   `json:"provider_retries,omitempty"`
	InputTokens     int64 `json:"input_tokens"`
	OutputTokens    int64 `json:"output_tokens"`
	// ModelMS is time spent waiting for the model, ExecMS time spent
	// running code, WallMS the run's active time (pauses for approval not
	// counted), all in milliseconds.
	ModelMS int64 `json:"model_ms"`
	ExecMS  int64 `json:"exec_ms"`
	WallMS  int64 `json:"wall_ms"`
	// Approvals counts code approved by a person or a flag, Rejections code
	// that was not.
	Approvals  int `json:"approvals,omitempty"`
	Rejections int `json:"rejections,omitempty"`
}

// AddError counts an error of a class and kind.
func (s *Scorecard) AddError(class, kind string) {
	if s.Errors == nil {
		s.Errors = map[string]int{}
	}
	if s.ErrorKinds == nil {
		s.ErrorKinds = map[string]int{}
	}
	s.Errors[class]++
	if kind != "" {
		s.ErrorKinds[kind]++
	}
}

// Tokens is input plus output tokens.
func (s Scorecard) Tokens() int64 { return s.InputTokens + s.OutputTokens }

// Stats aggregates scorecards across runs.
type Stats struct {
	Runs int `json:"runs"`
	// ByStatus counts runs by shown status; ByOutcome by outcome.
	ByStatus  map[Status]int `json:"by_status"`
	ByOutcome map[string]int `json:"by_outcome"`
	// Answered is the share of ended runs that produced an answer.
	Answered float64 `json:"answered"`
	// FirstTry is the share of answered runs that needed no retry.
	FirstTry      float64        `json:"first_try"`
	Attempts      int            `json:"attempts"`
	Retries       int            `json:"retries"`
	MeanAttempts  float64        `json:"mean_attempts"`
	Errors        map[string]int `json:"errors"`
	ErrorKinds    map[string]int `json:"error_kinds"`
	ModelCalls    int            `json:"model_calls"`
	InputTokens   int64          `json:"input_tokens"`
	OutputTokens  int64          `json:"output_tokens"`
	ModelTime     time.Duration  `json:"model_time"`
	ExecTime      time.Duration  `json:"exec_time"`
	WallTime      time.Duration  `json:"wall_time"`
	Approvals     int            `json:"approvals"`
	Rejections    int            `json:"rejections"`
	ReviewsOpen   int            `json:"reviews_open"`
	ModelsByCount map[string]int `json:"models"`
}

// Summarize aggregates the runs of a tenant that f selects, with the
// tenant's open review items.
func Summarize(ctx context.Context, t Tenant, f Filter) (Stats, error) {
	runs, err := t.ListRuns(ctx, f)
	if err != nil {
		return Stats{}, err
	}
	open, err := t.Reviews(ctx, "", false)
	if err != nil {
		return Stats{}, err
	}
	st := Aggregate(runs, time.Now())
	st.ReviewsOpen = len(open)
	return st, nil
}

// Aggregate sums up runs, their statuses as shown at now.
func Aggregate(runs []*Run, now time.Time) Stats {
	st := Stats{ByStatus: map[Status]int{}, ByOutcome: map[string]int{}, Errors: map[string]int{},
		ErrorKinds: map[string]int{}, ModelsByCount: map[string]int{}}
	ended, answered, firstTry := 0, 0, 0
	for _, r := range runs {
		sc := r.Scorecard
		st.Runs++
		st.ByStatus[r.ShownAt(now)]++
		st.ModelsByCount[r.Model]++
		if r.Outcome != "" {
			st.ByOutcome[r.Outcome]++
		}
		if r.Status.Final() {
			ended++
			if r.Answer != "" {
				answered++
				if sc.Retries == 0 {
					firstTry++
				}
			}
		}
		st.Attempts += sc.Attempts
		st.Retries += sc.Retries
		for k, v := range sc.Errors {
			st.Errors[k] += v
		}
		for k, v := range sc.ErrorKinds {
			st.ErrorKinds[k] += v
		}
		st.ModelCalls += sc.ModelCalls
		st.InputTokens += sc.InputTokens
		st.OutputTokens += sc.OutputTokens
		st.ModelTime += time.Duration(sc.ModelMS) * time.Millisecond
		st.ExecTime += time.Duration(sc.ExecMS) * time.Millisecond
		st.WallTime += time.Duration(sc.WallMS) * time.Millisecond
		st.Approvals += sc.Approvals
		st.Rejections += sc.Rejections
	}
	if ended > 0 {
		st.Answered = float64(answered) / float64(ended)
	}
	if answered > 0 {
		st.FirstTry = float64(firstTry) / float64(answered)
	}
	if st.Runs > 0 {
		st.MeanAttempts = float64(st.Attempts) / float64(st.Runs)
	}
	return st
}

// SortedKeys returns a map's keys in order, for rendering.
func SortedKeys[K ~string, V any](m map[K]V) []K {
	return slices.Sorted(maps.Keys(m))
}
