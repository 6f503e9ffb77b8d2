package eval

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

func TestTallyLaterVerdictSupersedes(t *testing.T) {
	var tl Tally
	tl.Add(Verdict{ID: "a", TaskID: "a", Status: Error}, false)
	tl.Add(Verdict{ID: "b", TaskID: "b", Status: Passed}, false)
	tl.Add(Verdict{ID: "a", TaskID: "a", Status: Passed, TotalMS: 5, WallMS: 4}, true)
	s := tl.Summary(nil, time.Second)
	if s.Items != 2 || s.Passed != 2 || s.Counts[Error] != 0 || s.Ran != 1 || s.Resumed != 1 {
		t.Fatalf("summary = %+v", s)
	}
	if s.TotalMS.P50 != 5 || s.WallMS.Max != 4 {
		t.Errorf("latency counts only this session's verdicts: %+v %+v", s.TotalMS, s.WallMS)
	}
	var b bytes.Buffer
	if err := s.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"items     2 (2 tasks); 1 run now, 1 resumed", "passed    2 (100.00%)", "pass@1 1.0000", "throughput 1.0 items/s"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("text summary lacks %q:\n%s", want, b.String())
		}
	}
}

func TestPercentilesNearestRank(t *testing.T) {
	var xs []float64
	for i := 100; i >= 1; i-- {
		xs = append(xs, float64(i))
	}
	p := percentiles(xs)
	if p.P50 != 50 || p.P95 != 95 || p.Max != 100 {
		t.Errorf("percentiles = %+v", p)
	}
	if p := percentiles([]float64{7}); p.P50 != 7 || p.P95 != 7 {
		t.Errorf("one value: %+v", p)
	}
	if p := percentiles(nil); p != (Percentiles{}) {
		t.Errorf("none: %+v", p)
	}
}
