package runs

import (
	"fmt"
	"net/http"
	"sort"
	"time"

	"github.com/coderun/coderun/server"
	"github.com/coderun/coderun/store"
)

// Stats is the answer of GET /v1/stats: the tenant's runs summed up (as
// `coderun runs stats --json` shows them, times in milliseconds), and the
// same per day, oldest first, for a chart of pass rates, outcomes and
// costs over time.
type Stats struct {
	store.Stats
	ModelTime any   `json:"model_time,omitempty"`
	ExecTime  any   `json:"exec_time,omitempty"`
	WallTime  any   `json:"wall_time,omitempty"`
	ModelMS   int64 `json:"model_ms"`
	ExecMS    int64 `json:"exec_ms"`
	WallMS    int64 `json:"wall_ms"`
	Days      []Day `json:"days"`
}

// Day sums up the runs created on one day (UTC).
type Day struct {
	// Date is "2006-01-02".
	Date string `json:"date"`
	Runs int    `json:"runs"`
	// Ended, Answered and Failed count ended runs, those with an answer,
	// and those that failed (cancelled runs are ended, neither).
	Ended      int            `json:"ended"`
	Answered   int            `json:"answered"`
	Failed     int            `json:"failed"`
	Outcomes   map[string]int `json:"outcomes"`
	Tokens     int64          `json:"tokens"`
	ModelMS    int64          `json:"model_ms"`
	ExecMS     int64          `json:"exec_ms"`
	ModelCalls int            `json:"model_calls"`
}

func (s *Service) stats(w http.ResponseWriter, r *http.Request, st store.Tenant) {
	var f store.Filter
	if v := r.URL.Query().Get("since"); v != "" {
		t, err := parseSince(v, time.Now())
		if err != nil {
			server.WriteError(w, http.StatusBadRequest, server.CodeBadRequest, err.Error())
			return
		}
		f.Since = t
	}
	runs, err := st.ListRuns(r.Context(), f)
	if err != nil {
		server.WriteError(w, http.StatusInternalServerError, server.CodeInternal, err.Error())
		return
	}
	open, err := st.Reviews(r.Context(), "", false)
	if err != nil {
		server.WriteError(w, http.StatusInternalServerError, server.CodeInternal, err.Error())
		return
	}
	agg := store.Aggregate(runs, time.Now())
	agg.ReviewsOpen = len(open)
	server.WriteJSON(w, http.StatusOK, Stats{Stats: agg, ModelMS: agg.ModelTime.Milliseconds(), ExecMS: agg.ExecTime.Milliseconds(),
		WallMS: agg.WallTime.Milliseconds(), Days: days(runs)})
}

// parseSince reads a time (RFC 3339) or a duration back from now ("24h",
// "7d").
func parseSince(v string, now time.Time) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339, v); err == nil {
		return t, nil
	}
	var n int
	if _, err := fmt.Sscanf(v, "%dd", &n); err == nil && fmt.Sprintf("%dd", n) == v && n >= 0 {
		return now.AddDate(0, 0, -n), nil
	}
	if d, err := time.ParseDuration(v); err == nil && d >= 0 {
		return now.Add(-d), nil
	}
	return time.Time{}, fmt.Errorf("since %q: want a time (RFC 3339) or a duration back from now (24h, 7d)", v)
}

func days(runs []*store.Run) []Day {
	byDate := map[string]*Day{}
	for _, r := range runs {
		date := r.CreatedAt.UTC().Format("2006-01-02")
		d := byDate[date]
		if d == nil {
			d = &Day{Date: date, Outcomes: map[string]int{}}
			byDate[date] = d
		}
		d.Runs++
		if r.Status.Final() {
			d.Ended++
			switch {
			case r.Answer != "":
				d.Answered++
			case r.Status == store.StatusFailed:
				d.Failed++
			}
		}
		if r.Outcome != "" {
			d.Outcomes[r.Outcome]++
		}
		d.Tokens += r.Scorecard.Tokens()
		d.ModelMS += r.Scorecard.ModelMS
		d.ExecMS += r.Scorecard.ExecMS
		d.ModelCalls += r.Scorecard.ModelCalls
	}
	out := make([]Day, 0, len(byDate))
	for _, d := range byDate {
		out = append(out, *d)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Date < out[j].Date })
	return out
}
