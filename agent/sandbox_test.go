package agent_test

// The tests in this file run code in real sandboxes (the linux runtime):
// they show what only a real sandbox can — a session keeping variables
// across cells and rebuilt by replay, pandas and matplotlib writing a
// real PNG, the limits of a run enforced. They skip without root; the
// loop's logic is tested with a scripted executor in the other files.

import (
	"bytes"
	"context"
	"image/png"
	"strings"
	"testing"
	"time"

	"github.com/coderun/coderun/agent"
	"github.com/coderun/coderun/llm/llmtest"
	"github.com/coderun/coderun/sandbox"
	"github.com/coderun/coderun/store"
)

const salesCSV = "month,region,sales\nJan,north,120\nJan,south,80\nFeb,north,200\nFeb,south,150\n"

func stepsHarness(t *testing.T, protocol string, turns ...llmtest.Turn) *harness {
	h := newHarness(t, protocol, turns...)
	h.cfg.Mode = agent.ModeSteps
	h.cfg.Backend = agent.SessionBackend{Runtime: runtime(t)}
	return h
}

// Three cells share one interpreter: the second and third use variables
// the earlier ones defined, which fails with NameError unless the state
// persisted.
func TestStepsModeAcrossThreeCells(t *testing.T) {
	protocols(t, func(t *testing.T, protocol string) {
		h := stepsHarness(t, protocol,
			llmtest.RunCode("c1", "python", "import pandas as pd\ndf = pd.read_csv('sales.csv')\nprint(df.shape)\n"),
			llmtest.RunCode("c2", "python", "by_region = df.groupby('region')['sales'].sum()\nprint(by_region.to_string())\n"),
			llmtest.RunCode("c3", "python", "best = by_region.idxmax()\nprint('best region:', best, int(by_region[best]))\n"),
			llmtest.Reply("Done: the outputs answer the task."),
			llmtest.Reply("The north region sold the most: 320."),
		)
		res := h.run("Which region sold the most, and how much?", sandbox.File{Path: "sales.csv", Content: []byte(salesCSV)})
		if res.Outcome != agent.OutcomeAnswered || !res.Answer.Grounded {
			t.Fatalf("outcome %s answer %+v failure %+v", res.Outcome, res.Answer, res.Failure)
		}
		var cells []agent.ExecutionRecord
		_, steps := h.steps(res.RunID)
		for i := 0; i < 3; i++ {
			cells = append(cells, decode[agent.ExecutionRecord](t, steps, agent.StepExecution, i))
		}
		want := []string{"(4, 3)\n", "region\nnorth    320\nsouth    230\n", "best region: north 320\n"}
		for i, c := range cells {
			if c.Stdout != want[i] || c.Executor != "session" || c.ExecutionCount != i+1 {
				t.Errorf("cell %d: stdout %q executor %s count %d", i+1, c.Stdout, c.Executor, c.ExecutionCount)
			}
		}
		// Each observation went back to the model before the next cell.
		third := h.sent(2)
		mustContain(t, "observation", lastUser(third), "north    320")
		// The interpretation saw all three cells.
		mustContain(t, "interpretation", lastUser(h.sent(4)), "Cell 1", "Cell 3", "best region: north 320")
		if sc := res.Scorecard; sc.Attempts != 3 || sc.ModelCalls != 5 || sc.Retries != 0 {
			t.Errorf("scorecard: %s", fmtScore(sc))
		}
		nb, err := agent.Notebook(context.Background(), h.store, res.RunID)
		if err != nil || strings.Count(string(nb), `"cell_type": "code"`) != 3 {
			t.Errorf("notebook: %v\n%s", err, nb)
		}
	})
}

// A steps run paused for approval resumes in a new session: the cells that
// ran before are replayed, so the approved cell finds their variables.
func TestStepsModeResumeReplaysCells(t *testing.T) {
	protocols(t, func(t *testing.T, protocol string) {
		h := stepsHarness(t, protocol,
			llmtest.RunCode("c1", "python", "xs = [10, 20, 30]\nprint('sum', sum(xs))\n"),
			llmtest.RunCode("c2", "python", "import subprocess\nout = subprocess.run(['echo', 'total', str(sum(xs))], capture_output=True, text=True).stdout\nprint(out)\n"),
		)
		h.cfg.Approval = agent.ApproveAsk
		res := h.run("Sum 10, 20, 30 and echo it from a child process.")
		if res.Status != store.StatusAwaitingApproval {
			t.Fatalf("status %s", res.Status)
		}
		if _, err := agent.Decide(context.Background(), h.store, res.RunID, agent.Approve, "test", ""); err != nil {
			t.Fatal(err)
		}
		h2 := stepsHarness(t, protocol, llmtest.Reply("Done."), llmtest.Reply("The child echoed total 60."))
		h2.cfg.Store, h2.store = h.store, h.store
		res2, err := h2.agent().Resume(context.Background(), res.RunID)
		if err != nil {
			t.Fatal(err)
		}
		if res2.Outcome != agent.OutcomeAnswered || !res2.Answer.Grounded {
			t.Fatalf("outcome %s answer %+v failure %+v", res2.Outcome, res2.Answer, res2.Failure)
		}
		_, steps := h2.steps(res.RunID)
		if ex := decode[agent.ExecutionRecord](t, steps, agent.StepExecution, 1); ex.Stdout != "total 60\n\n" {
			t.Errorf("approved cell after replay: %q %q", ex.Stdout, ex.Stderr)
		}
		if r := decode[agent.Resume](t, steps, agent.StepResume, 1); r.From != "replay" || !strings.Contains(r.Note, "1 successful cells") {
			t.Errorf("replay note: %+v", r)
		}
		// The resumed run put its conversation together again from the
		// stored model calls and its checkpoint: the task, both cells'
		// results.
		var sent []string
		for _, m := range h2.sent(0).Messages {
			sent = append(sent, m.Content)
		}
		mustContain(t, "the first request after resuming", strings.Join(sent, "\n"), "Sum 10, 20, 30", "sum 60", "total 60")
		if protocol == llmtest.OpenAI && len(sent) != 6 {
			t.Errorf("%d messages sent after resuming, want 6 (system, task, two calls and their results)", len(sent))
		}
		conversationStoredOnce(t, steps)
	})
}

func TestCSVAnalysisWithPlot(t *testing.T) {
	protocols(t, func(t *testing.T, protocol string) {
		code := `import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
import pandas as pd
df = pd.read_csv("sales.csv")
by_month = df.groupby("month", sort=False)["sales"].sum()
print("total by month:")
print(by_month.to_string())
print("mean sales:", df["sales"].mean())
ax = by_month.plot(kind="bar")
ax.set_ylabel("sales")
plt.savefig("sales_by_month.png")
print("saved sales_by_month.png")
`
		h := newHarness(t, protocol,
			llmtest.RunCode("c1", "python", code),
			llmtest.Reply("January sold 200 and February 350; the mean sale is 137.5. The chart is in sales_by_month.png."),
		)
		res := h.run("Total sales by month, the mean sale, and a bar chart.", sandbox.File{Path: "sales.csv", Content: []byte(salesCSV)})
		if res.Outcome != agent.OutcomeAnswered || !res.Answer.Grounded {
			t.Fatalf("outcome %s answer %+v failure %+v", res.Outcome, res.Answer, res.Failure)
		}
		// The model was told the file's shape, not its data.
		mustContain(t, "task prompt", h.sent(0).Messages[1].Content, "sales.csv", "4 data rows", `"month", "region", "sales"`)
		if strings.Contains(h.sent(0).Messages[1].Content, "north") {
			t.Errorf("the task prompt leaked the data")
		}
		files, err := h.store.Files(t.Context(), res.RunID, store.RoleOutput)
		if err != nil {
			t.Fatal(err)
		}
		var plot *store.File
		for i := range files {
			if files[i].Path == "sales_by_month.png" {
				plot = &files[i]
			}
		}
		if plot == nil {
			t.Fatalf("no plot among the outputs: %+v", files)
		}
		img, err := png.Decode(bytes.NewReader(plot.Content))
		if err != nil || img.Bounds().Dx() < 100 {
			t.Fatalf("plot is not a PNG image: %v", err)
		}
		inputs, _ := h.store.Files(t.Context(), res.RunID, store.RoleInput)
		if len(inputs) != 1 || string(inputs[0].Content) != salesCSV {
			t.Errorf("inputs: %+v", inputs)
		}
		nb, err := agent.Notebook(t.Context(), h.store, res.RunID)
		if err != nil || !bytes.Contains(nb, []byte(`"image/png"`)) || !bytes.Contains(nb, []byte("total by month")) {
			t.Errorf("notebook: %v\n%.400s", err, nb)
		}
	})
}

// A steps-mode cell is bounded by the run's CPU-time limit, as a
// single-mode program is (the limit used to stop at the session).
func TestStepsModeCPULimit(t *testing.T) {
	protocols(t, func(t *testing.T, protocol string) {
		h := stepsHarness(t, protocol,
			llmtest.RunCode("c1", "python", "x = 0\nwhile True:\n    x += 1\n"),
		)
		h.cfg.Limits.CPUTime = time.Second
		h.cfg.Limits.WallTime = 30 * time.Second
		res := h.run("Count as far as you can.")
		_, steps := h.steps(res.RunID)
		cell := decode[agent.ExecutionRecord](t, steps, agent.StepExecution, 0)
		if cell.Reason != sandbox.ReasonCPULimit {
			t.Fatalf("the cell ended by %q, want %q: %+v", cell.Reason, sandbox.ReasonCPULimit, cell)
		}
		if res.Outcome == agent.OutcomeAnswered {
			t.Fatalf("answered: %+v", res.Answer)
		}
	})
}
