package eval_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"time"

	"github.com/coderun/coderun/eval"
	"github.com/coderun/coderun/sandbox"
	"github.com/coderun/coderun/sandbox/linux"
)

// Score HumanEval's reference solutions: read the problems, run each in a
// fresh sandbox two at a time, and tally the verdicts as they arrive.
func ExampleRun() {
	rt, err := linux.New(linux.Options{Pool: 4}) // needs root
	if err != nil {
		log.Fatal(err)
	}
	defer rt.Close()

	r, err := eval.Open("testdata/humaneval/HumanEval.jsonl.gz")
	if err != nil {
		log.Fatal(err)
	}
	defer r.Close()
	problems, err := eval.ReadProblems(r, eval.ReadOptions{}, func(e *eval.LineError) error {
		fmt.Fprintln(os.Stderr, "skipped", e) // or return e to stop
		return nil
	})
	if err != nil {
		log.Fatal(err)
	}
	items, _ := eval.References(problems, eval.SkipBadLines)

	var tally eval.Tally
	start := time.Now()
	opts := eval.Options{Concurrency: 2, Limits: sandbox.Limits{WallTime: 10 * time.Second}}
	err = eval.Run(context.Background(), rt, eval.Feed(items...), opts, func(v eval.Verdict) error {
		if v.Status != eval.Passed {
			fmt.Println(v.ID, v.Status, v.Error, v.Line)
		}
		tally.Add(v, true)
		return nil
	})
	if err != nil {
		log.Fatal(err)
	}
	tally.Summary(nil, time.Since(start)).WriteText(os.Stdout)
}

// Score a model's completions, several per task, for pass@k.
func ExampleReadSamples() {
	pr, _ := eval.Open("testdata/humaneval/HumanEval.jsonl.gz")
	defer pr.Close()
	problems, _ := eval.ReadProblems(pr, eval.ReadOptions{}, eval.StopAtBadLine)

	sr, err := eval.Open("samples.jsonl") // {"task_id": "HumanEval/0", "completion": "..."} per line
	if err != nil {
		log.Fatal(err)
	}
	defer sr.Close()
	items, err := eval.ReadSamples(sr, "samples.jsonl", problems, eval.StopAtBadLine)
	if err != nil {
		log.Fatal(err) // names the file and line: "samples.jsonl:12: unknown task_id ..."
	}
	fmt.Println(len(items), "samples to run") // then eval.Run, and Tally.Summary([]int{1, 10, 100}, ...)
}

func ExamplePassAtK() {
	// 200 samples of which 10 passed.
	fmt.Printf("pass@1 %.3f  pass@10 %.3f  pass@100 %.4f\n", eval.PassAtK(200, 10, 1), eval.PassAtK(200, 10, 10), eval.PassAtK(200, 10, 100))
	// Output: pass@1 0.050  pass@10 0.409  pass@100 0.9992
}
