package eval

import (
	"math"
	"math/big"
	"testing"
)

// exactPassAtK computes 1 - C(n-c,k)/C(n,k) with exact rationals.
func exactPassAtK(n, c, k int) float64 {
	if n-c < k {
		return 1
	}
	num := new(big.Int).Binomial(int64(n-c), int64(k))
	den := new(big.Int).Binomial(int64(n), int64(k))
	r := new(big.Rat).SetFrac(num, den)
	r.Sub(big.NewRat(1, 1), r)
	f, _ := r.Float64()
	return f
}

func TestPassAtKKnownValues(t *testing.T) {
	for _, c := range []struct {
		n, c, k int
		want    float64
	}{
		{1, 1, 1, 1},
		{1, 0, 1, 0},
		{10, 1, 1, 0.1},
		{10, 3, 1, 0.3},
		{10, 0, 10, 0},
		{10, 1, 10, 1},
		{5, 2, 2, 1 - 3.0/10},              // C(3,2)/C(5,2)
		{10, 5, 5, 1 - 1.0/252},            // C(5,5)/C(10,5)
		{4, 1, 2, 0.5},                     // C(3,2)/C(4,2) = 3/6
		{200, 10, 100, 0.9992289739372822}, // Python: 1 - comb(190,100)/comb(200,100)
	} {
		got := PassAtK(c.n, c.c, c.k)
		if math.Abs(got-c.want) > 1e-12 {
			t.Errorf("PassAtK(%d,%d,%d) = %.12g, want %.12g", c.n, c.c, c.k, got, c.want)
		}
	}
}

func TestPassAtKMatchesExactRationals(t *testing.T) {
	for _, n := range []int{1, 2, 3, 7, 10, 20, 50, 100, 200, 1000} {
		for c := 0; c <= n; c += max(1, n/13) {
			for _, k := range []int{1, 2, 5, 10, 100, 1000} {
				if k > n {
					continue
				}
				got, want := PassAtK(n, c, k), exactPassAtK(n, c, k)
				if math.Abs(got-want) > 1e-9 {
					t.Errorf("PassAtK(%d,%d,%d) = %.15g, exact %.15g", n, c, k, got, want)
				}
			}
		}
	}
}

func TestPassAtKUndefined(t *testing.T) {
	for _, a := range [][3]int{{5, 1, 6}, {5, 6, 1}, {5, -1, 1}, {5, 1, 0}} {
		if v := PassAtK(a[0], a[1], a[2]); !math.IsNaN(v) {
			t.Errorf("PassAtK%v = %v, want NaN", a, v)
		}
	}
}

func TestSummaryPassAtKIsTheMeanOverTasks(t *testing.T) {
	var tl Tally
	add := func(task string, n, c int) {
		for i := range n {
			st := Failed
			if i < c {
				st = Passed
			}
			tl.Add(Verdict{ID: SampleID(task, i), TaskID: task, Sample: i, Status: st, TotalMS: float64(i + 1)}, true)
		}
	}
	add("a", 10, 3)
	add("b", 10, 0)
	add("c", 12, 12)
	s := tl.Summary([]int{1, 10, 100}, 2e9)
	want1 := (0.3 + 0 + 1) / 3
	want10 := (PassAtK(10, 3, 10) + 0 + 1) / 3
	if math.Abs(s.PassAtK["pass@1"]-want1) > 1e-12 || math.Abs(s.PassAtK["pass@10"]-want10) > 1e-12 {
		t.Errorf("pass@k = %v, want pass@1 %v pass@10 %v", s.PassAtK, want1, want10)
	}
	if _, ok := s.PassAtK["pass@100"]; ok || len(s.K) != 2 {
		t.Errorf("pass@100 reported with 10 samples per task: %v", s.PassAtK)
	}
	if s.Items != 32 || s.Passed != 15 || s.Tasks != 3 || s.SamplesMin != 10 || s.SamplesMax != 12 || s.Counts[Failed] != 17 || s.Counts[Timeout] != 0 {
		t.Errorf("summary = %+v", s)
	}
	if s.ItemsPerSecond != 16 {
		t.Errorf("throughput %v, want 32 items / 2 s", s.ItemsPerSecond)
	}
}
