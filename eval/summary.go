package eval

import (
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/coderun/coderun/internal/plural"
)

// DefaultK are the k of pass@k reported by default (each only when every
// task has at least k samples).
var DefaultK = []int{1, 10, 100}

// Tally accumulates verdicts into a Summary. A verdict for an id already
// tallied replaces the earlier one (a rerun supersedes). The zero value is
// ready to use; a Tally is not safe for concurrent use.
type Tally struct {
	byID  map[string]tallied
	total []float64 // TotalMS of verdicts made in this session
	wall  []float64 // WallMS of the same
	ran   int
}

type tallied struct {
	task   string
	status Status
	fresh  bool
}

// Add counts v; fresh says it was made in this session (rather than read
// back from an earlier one), so that its timings count for latency and
// throughput.
func (t *Tally) Add(v Verdict, fresh bool) {
	if t.byID == nil {
		t.byID = map[string]tallied{}
	}
	t.byID[v.ID] = tallied{task: v.TaskID, status: v.Status, fresh: fresh}
	if fresh {
		t.ran++
		t.total = append(t.total, v.TotalMS)
		t.wall = append(t.wall, v.WallMS)
	}
}

// Done is the number of distinct items tallied.
func (t *Tally) Done() int { return len(t.byID) }

// Passed is the number of distinct items whose verdict is Passed.
func (t *Tally) Passed() int {
	n := 0
	for _, v := range t.byID {
		if v.status == Passed {
			n++
		}
	}
	return n
}

// Summary is the outcome of an eval, for people and for programs.
type Summary struct {
	Items    int            `json:"items"` // distinct items with a verdict
	Tasks    int            `json:"tasks"`
	Counts   map[Status]int `json:"counts"`
	Passed   int            `json:"passed"`
	PassRate float64        `json:"pass_rate"` // passed / items
	// PassAtK maps "pass@k" to the mean over tasks of the unbiased
	// estimator, for each requested k that every task has enough samples for.
	PassAtK map[string]float64 `json:"pass_at_k"`
	// K lists the k in PassAtK, in the order asked.
	K []int `json:"k"`
	// SamplesMin and SamplesMax bound the number of items per task.
	SamplesMin int `json:"samples_min"`
	SamplesMax int `json:"samples_max"`
	// Ran counts the verdicts made in this session, Resumed those read back
	// from an earlier one. Timings and throughput are this session's.
	Ran            int         `json:"ran"`
	Resumed        int         `json:"resumed"`
	ElapsedS       float64     `json:"elapsed_s"`
	ItemsPerSecond float64     `json:"items_per_second"`
	TotalMS        Percentiles `json:"total_ms"` // per item, sandbox setup on the request path included
	WallMS         Percentiles `json:"wall_ms"`  // per item, the program's own run time
}

// Percentiles of a set of durations in milliseconds (nearest rank).
type Percentiles struct {
	P50 float64 `json:"p50"`
	P95 float64 `json:"p95"`
	Max float64 `json:"max"`
}

// Summary computes the summary; elapsed is this session's duration, for
// throughput. ks are the k of pass@k (DefaultK when empty).
func (t *Tally) Summary(ks []int, elapsed time.Duration) Summary {
	if len(ks) == 0 {
		ks = DefaultK
	}
	s := Summary{Counts: map[Status]int{}, PassAtK: map[string]float64{}, Ran: t.ran, ElapsedS: elapsed.Seconds()}
	type nc struct{ n, c int }
	tasks := map[string]*nc{}
	for _, v := range t.byID {
		s.Items++
		s.Counts[v.status]++
		if !v.fresh {
			s.Resumed++
		}
		tc := tasks[v.task]
		if tc == nil {
			tc = &nc{}
			tasks[v.task] = tc
		}
		tc.n++
		if v.status == Passed {
			tc.c++
			s.Passed++
		}
	}
	for _, st := range Statuses {
		s.Counts[st] += 0 // every status present, zero or not
	}
	s.Tasks = len(tasks)
	if s.Items > 0 {
		s.PassRate = float64(s.Passed) / float64(s.Items)
	}
	s.SamplesMin = math.MaxInt
	for _, tc := range tasks {
		s.SamplesMin = min(s.SamplesMin, tc.n)
		s.SamplesMax = max(s.SamplesMax, tc.n)
	}
	if len(tasks) == 0 {
		s.SamplesMin = 0
	}
	for _, k := range ks {
		if k < 1 || len(tasks) == 0 || s.SamplesMin < k {
			continue
		}
		sum := 0.0
		for _, tc := range tasks {
			sum += PassAtK(tc.n, tc.c, k)
		}
		s.PassAtK["pass@"+strconv.Itoa(k)] = sum / float64(len(tasks))
		s.K = append(s.K, k)
	}
	if elapsed > 0 {
		s.ItemsPerSecond = float64(t.ran) / elapsed.Seconds()
	}
	s.TotalMS = percentiles(t.total)
	s.WallMS = percentiles(t.wall)
	return s
}

func percentiles(xs []float64) Percentiles {
	if len(xs) == 0 {
		return Percentiles{}
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	rank := func(p float64) float64 {
		i := int(math.Ceil(p*float64(len(s)))) - 1
		return s[max(0, min(i, len(s)-1))]
	}
	return Percentiles{P50: rank(0.50), P95: rank(0.95), Max: s[len(s)-1]}
}

// WriteText writes the summary for people, a few aligned lines.
func (s Summary) WriteText(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "items     %d (%s", s.Items, plural.Count(s.Tasks, "task"))
	if s.SamplesMax > 1 {
		if s.SamplesMin == s.SamplesMax {
			fmt.Fprintf(&b, ", %d samples each", s.SamplesMax)
		} else {
			fmt.Fprintf(&b, ", %d–%d samples each", s.SamplesMin, s.SamplesMax)
		}
	}
	fmt.Fprintf(&b, "); %d run now, %d resumed\n", s.Ran, s.Resumed)
	fmt.Fprintf(&b, "passed    %d (%.2f%%)", s.Passed, 100*s.PassRate)
	for _, st := range Statuses[1:] {
		fmt.Fprintf(&b, "  %s %d", st, s.Counts[st])
	}
	b.WriteString("\n")
	if len(s.K) > 0 {
		b.WriteString("pass@k   ")
		for _, k := range s.K {
			fmt.Fprintf(&b, " pass@%d %.4f", k, s.PassAtK["pass@"+strconv.Itoa(k)])
		}
		b.WriteString("\n")
	}
	if s.Ran > 0 {
		fmt.Fprintf(&b, "per item  total p50 %.1f ms, p95 %.1f ms, max %.1f ms; in sandbox p50 %.1f ms, p95 %.1f ms\n",
			s.TotalMS.P50, s.TotalMS.P95, s.TotalMS.Max, s.WallMS.P50, s.WallMS.P95)
		fmt.Fprintf(&b, "throughput %.1f items/s (%s in %.2f s)\n", s.ItemsPerSecond, plural.Count(s.Ran, "item"), s.ElapsedS)
	}
	_, err := io.WriteString(w, b.String())
	return err
}
