package agent_test

import (
	"context"
	"fmt"
	"log"

	"github.com/coderun/coderun/agent"
	"github.com/coderun/coderun/llm/provider"
	"github.com/coderun/coderun/sandbox"
	"github.com/coderun/coderun/sandbox/linux"
	"github.com/coderun/coderun/store"
	"github.com/coderun/coderun/store/sqlite"
)

// A run from the task to the answer, pausing when the policy asks for a
// person's approval and continuing once it is given.
func Example() {
	ctx := context.Background()
	rt, err := linux.New(linux.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer rt.Close()
	db, err := sqlite.Open(ctx, "/var/lib/coderun", sqlite.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	st, err := db.Tenant(store.DefaultTenant) // every record belongs to a tenant
	if err != nil {
		log.Fatal(err)
	}
	model, err := provider.FromEnv("openai:gpt-4.1-mini")
	if err != nil {
		log.Fatal(err)
	}
	a, err := agent.New(agent.Config{
		Model: model, ModelSpec: "openai:gpt-4.1-mini",
		Backend: agent.RuntimeBackend{Runtime: rt},
		Store:   st,
	})
	if err != nil {
		log.Fatal(err)
	}
	res, err := a.Run(ctx, agent.Task{
		Prompt: "What is the mean of the sales column?",
		Files:  []sandbox.File{{Path: "sales.csv", Content: []byte("month,sales\nJan,120\nFeb,80\nMar,200\nApr,150\n")}},
	})
	if err != nil {
		log.Fatal(err)
	}
	if res.Status == store.StatusAwaitingApproval {
		fmt.Println(res.Pending.Explanation)
		if _, err := agent.Decide(ctx, st, res.RunID, agent.Approve, "example", ""); err != nil {
			log.Fatal(err)
		}
		if res, err = a.Resume(ctx, res.RunID); err != nil {
			log.Fatal(err)
		}
	}
	switch {
	case res.Answer != nil:
		fmt.Println(res.Answer.Text)
	case res.Failure != nil:
		fmt.Println("no answer:", res.Failure.Summary)
	}
}
