package eval

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coderun/coderun/language"
	"github.com/coderun/coderun/sandbox"
	"github.com/coderun/coderun/sandbox/linux"
	"github.com/coderun/coderun/sandbox/toolchain"
)

// BenchmarkHumanEvalXSplit prices running a HumanEval-X item as two
// programs: problems 0 and 13 of C++, Java, Go and Rust (and JavaScript,
// through harness.js), each canonical solution
// as the one program it was (oneProgram) and as the split item it is now,
// interleaved item by item at concurrency 1 with the runtime's defaults
// (no pool, no zygote), and prints the medians of the items' CPU time
// (both steps, compile and run, in their sandboxes) and wall time (the
// item's, end to end), and their ratios. CODERUN_BENCH_LANGS (a
// comma-separated list, "rust,cpp") limits it to those languages.
//
//	go test ./eval -run '^$' -bench HumanEvalXSplit -benchtime 1x
func BenchmarkHumanEvalXSplit(b *testing.B) {
	if os.Geteuid() != 0 {
		b.Skip("the linux sandbox runtime needs root")
	}
	inner, err := linux.New(linux.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer inner.Close()
	rec := &usageRecorder{Runtime: inner, Interactive: inner, cpu: map[string]time.Duration{}}
	rt := toolchain.Wrap(rec, toolchain.Options{})
	const rounds = 3
	host, _ := os.Hostname()
	fmt.Printf("host %s, %d CPUs, load %s\n", host, runtime.NumCPU(), loadAverage())
	for range b.N {
		for _, lang := range []language.Language{language.CPP, language.Java, language.Go, language.Rust, language.Node} {
			if only := os.Getenv("CODERUN_BENCH_LANGS"); only != "" && !slices.Contains(strings.Split(only, ","), string(lang)) {
				continue
			}
			ps := loadProblems(b, humanEvalXFiles[lang], ReadOptions{})
			cpu, wall := map[string][]float64{}, map[string][]float64{}
			for r := range rounds {
				for _, i := range []int{0, 13} {
					for _, mode := range []string{"one program", "split"} {
						it := ps[i].Reference()
						if mode == "one program" {
							it = oneProgram(ps[i], ps[i].Solution)
						}
						it.ID = fmt.Sprintf("%s %s %d", mode, ps[i].TaskID, r)
						rec.start(it.ID)
						err := Run(context.Background(), rt, Feed(it), Options{Concurrency: 1}, func(v Verdict) error {
							if v.Status != Passed {
								return fmt.Errorf("%s: %s %s", v.ID, v.Status, v.Error)
							}
							wall[mode] = append(wall[mode], v.TotalMS)
							return nil
						})
						if err != nil {
							b.Fatal(err)
						}
						cpu[mode] = append(cpu[mode], ms(rec.stop(it.ID)))
					}
				}
			}
			oc, ow, sc, sw := harnessMedian(cpu["one program"]), harnessMedian(wall["one program"]), harnessMedian(cpu["split"]), harnessMedian(wall["split"])
			fmt.Printf("%-5s one program: CPU %6.0f ms, wall %6.0f ms   split: CPU %6.0f ms, wall %6.0f ms   ratio CPU %.2f, wall %.2f (median of %d items)\n",
				lang, oc, ow, sc, sw, sc/oc, sw/ow, 2*rounds)
		}
	}
}

func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	return strings.Join(strings.Fields(string(b))[:3], " ")
}

// usageRecorder is a runtime whose sandboxes' programs add their CPU time
// to the item being measured (one at a time).
type usageRecorder struct {
	sandbox.Runtime
	sandbox.Interactive
	mu      sync.Mutex
	current string
	cpu     map[string]time.Duration
}

func (u *usageRecorder) start(id string) { u.mu.Lock(); u.current = id; u.mu.Unlock() }

func (u *usageRecorder) stop(id string) time.Duration {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.cpu[id]
}

func (u *usageRecorder) add(d time.Duration) {
	u.mu.Lock()
	u.cpu[u.current] += d
	u.mu.Unlock()
}

func (u *usageRecorder) Run(ctx context.Context, req sandbox.Request) (*sandbox.Result, error) {
	res, err := u.Runtime.Run(ctx, req)
	if res != nil {
		u.add(res.Usage.CPU())
	}
	return res, err
}

func (u *usageRecorder) NewSandbox(ctx context.Context, spec sandbox.Spec) (sandbox.Sandbox, error) {
	sb, err := u.Interactive.NewSandbox(ctx, spec)
	if err != nil {
		return nil, err
	}
	return &recordedSandbox{Sandbox: sb, u: u}, nil
}

type recordedSandbox struct {
	sandbox.Sandbox
	u *usageRecorder
}

func (s *recordedSandbox) Start(ctx context.Context, prog sandbox.Program) (sandbox.Process, error) {
	p, err := s.Sandbox.Start(ctx, prog)
	if err != nil {
		return nil, err
	}
	return &recordedProcess{Process: p, u: s.u}, nil
}

type recordedProcess struct {
	sandbox.Process
	u *usageRecorder
}

func (p *recordedProcess) Wait(ctx context.Context) *sandbox.Result {
	res := p.Process.Wait(ctx)
	p.u.add(res.Usage.CPU())
	return res
}
