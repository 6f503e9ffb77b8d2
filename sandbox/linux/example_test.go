package linux_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/coderun/coderun/sandbox"
	"github.com/coderun/coderun/sandbox/linux"
)

// Run a program once, with limits, and read exactly what happened.
func ExampleRuntime_Run() {
	rt, err := linux.New(linux.Options{Pool: 2})
	if err != nil {
		log.Fatal(err) // e.g. a required isolation layer is missing; see coderun doctor
	}
	defer rt.Close()

	res, err := rt.Run(context.Background(), sandbox.Request{
		Language: sandbox.Python,
		Code:     "import csv\nrows = list(csv.DictReader(open('data.csv')))\nprint(sum(float(r['x']) for r in rows) / len(rows))",
		Files:    []sandbox.File{{Path: "data.csv", Content: []byte("x\n120\n80\n200\n150\n")}},
		Limits:   sandbox.Limits{WallTime: 5 * time.Second, Memory: 128 << 20},
	})
	if err != nil {
		log.Fatal(err) // the request was invalid: nothing ran
	}
	fmt.Print(res.Stdout)
	fmt.Println(res.Reason, res.ExitCode)
}

// Keep a workspace across programs and talk to a running one.
func ExampleRuntime_NewSandbox() {
	rt, err := linux.New(linux.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer rt.Close()
	ctx := context.Background()
	sb, err := rt.NewSandbox(ctx, sandbox.Spec{})
	if err != nil {
		log.Fatal(err)
	}
	defer sb.Close()
	p, err := sb.Start(ctx, sandbox.Program{Language: sandbox.Bash, Code: "read name; echo hello $name > greeting.txt"})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Fprintln(p.Stdin(), "world")
	res := p.Wait(ctx)
	data, _, _ := sb.ReadFile("greeting.txt", 1<<10)
	fmt.Print(res.Reason, " ", string(data))
}
