package eval

import "math"

// PassAtK is the unbiased estimator of pass@k for one task from n samples
// of which c passed (Chen et al. 2021, "Evaluating Large Language Models
// Trained on Code"): the probability that at least one of k samples drawn
// without replacement from the n passes,
//
//	1 - C(n-c, k) / C(n, k).
//
// It is computed as 1 - ∏_{i=n-c+1}^{n} (1 - k/i), which never forms the
// binomial coefficients and so neither overflows nor loses precision for
// large n. It returns NaN when k < 1, n < k or c is outside [0, n].
func PassAtK(n, c, k int) float64 {
	if k < 1 || n < k || c < 0 || c > n {
		return math.NaN()
	}
	if n-c < k {
		return 1
	}
	p := 1.0
	for i := n - c + 1; i <= n; i++ {
		p *= 1 - float64(k)/float64(i)
	}
	return 1 - p
}
