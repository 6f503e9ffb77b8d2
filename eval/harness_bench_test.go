package eval

import (
	"context"
	"fmt"
	"os"
	"sort"
	"testing"

	"github.com/coderun/coderun/sandbox"
	"github.com/coderun/coderun/sandbox/linux"
)

// BenchmarkGenericHarness prices the two-process harness of generic items:
// for Python, bash and node, the same items (a function and three tests)
// run as one program (solution then tests, as before the harness) and
// through the harness (Problem.Item), interleaved round by round at
// concurrency 2 with the runtime's defaults (no pool, no zygote), and
// prints the medians of the items' CPU time and wall time in their
// sandboxes.
//
//	go test ./eval -run '^$' -bench GenericHarness -benchtime 1x
func BenchmarkGenericHarness(b *testing.B) {
	if os.Geteuid() != 0 {
		b.Skip("the linux sandbox runtime needs root")
	}
	rt, err := linux.New(linux.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer rt.Close()
	langs := []struct {
		lang       sandbox.Language
		code, test string
	}{
		{sandbox.Python, "def f(x):\n    return 2 * x\n", "assert f(1) == 2\nassert f(2) == 4\nassert f(3) == 6\n"},
		{sandbox.Bash, "f() { echo $(( 2 * $1 )); }", "[ \"$(f 1)\" = 2 ] || exit 1\n[ \"$(f 2)\" = 4 ] || exit 1\n[ \"$(f 3)\" = 6 ] || exit 1\n"},
		{sandbox.Node, "function f(x) { return 2 * x; }", "const assert = require('assert');\nassert.strictEqual(f(1), 2);\nassert.strictEqual(f(2), 4);\nassert.strictEqual(f(3), 6);\n"},
	}
	const items, rounds = 10, 3
	for range b.N {
		for _, l := range langs {
			p := &Problem{TaskID: "t", Format: Generic, Language: l.lang, Solution: l.code, HasSolution: true, Test: l.test}
			modes := map[string][]Item{}
			for i := range items {
				h := p.Reference()
				h.ID = fmt.Sprint("harness-", i)
				modes["harness"] = append(modes["harness"], h)
				modes["one program"] = append(modes["one program"], Item{ID: fmt.Sprint("one-", i), Language: l.lang, Code: l.code + "\n" + l.test})
			}
			cpu, wall := map[string][]float64{}, map[string][]float64{}
			for range rounds {
				for _, m := range []string{"one program", "harness"} {
					err := Run(context.Background(), rt, Feed(modes[m]...), Options{Concurrency: 2}, func(v Verdict) error {
						if v.Status != Passed {
							return fmt.Errorf("%s %s: %s %s", l.lang, v.ID, v.Status, v.Error)
						}
						cpu[m], wall[m] = append(cpu[m], v.CPUMS), append(wall[m], v.WallMS)
						return nil
					})
					if err != nil {
						b.Fatal(err)
					}
				}
			}
			fmt.Printf("%-7s one program: CPU %6.1f ms, wall %6.1f ms   harness: CPU %6.1f ms, wall %6.1f ms (median of %d items)\n",
				l.lang, harnessMedian(cpu["one program"]), harnessMedian(wall["one program"]), harnessMedian(cpu["harness"]), harnessMedian(wall["harness"]), items*rounds)
		}
	}
}

func harnessMedian(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	return s[len(s)/2]
}
