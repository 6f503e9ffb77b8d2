package agent_test

import (
	"bytes"
	"image/png"
	"strings"
	"testing"

	"github.com/coderun/coderun/agent"
	"github.com/coderun/coderun/llm"
	"github.com/coderun/coderun/llm/llmtest"
	"github.com/coderun/coderun/sandbox"
	"github.com/coderun/coderun/store"
)

func TestRateLimitThenSuccess(t *testing.T) {
	protocols(t, func(t *testing.T, protocol string) {
		h := newHarness(t, protocol,
			llmtest.Fail(429, "slow down").WithHeader("Retry-After-Ms", "20"),
			llmtest.RunCode("c1", "python", "print('product', 6 * 7)\n"),
			llmtest.Reply("The product is 42."),
		)
		res := h.run("Multiply 6 by 7.")
		if res.Outcome != agent.OutcomeAnswered {
			t.Fatalf("outcome %s: %+v", res.Outcome, res.Failure)
		}
		_, steps := h.steps(res.RunID)
		if mc := decode[agent.ModelCall](t, steps, agent.StepModelCall, 0); mc.Attempts != 2 || mc.Error != "" {
			t.Errorf("first model call: attempts %d error %q", mc.Attempts, mc.Error)
		}
		if sc := res.Scorecard; sc.ProviderRetries != 1 || sc.ModelCalls != 2 || sc.Retries != 0 || len(sc.Errors) != 0 {
			t.Errorf("scorecard: %s", fmtScore(sc))
		}
		if n := len(h.srv.Requests()); n != 3 {
			t.Errorf("%d HTTP requests, want 3", n)
		}
	})
}

func TestServerErrorEveryCall(t *testing.T) {
	protocols(t, func(t *testing.T, protocol string) {
		h := newHarness(t, protocol, llmtest.Fail(500, "internal error").Forever())
		res := h.run("Multiply 6 by 7.")
		if res.Status != store.StatusFailed || res.Outcome != agent.OutcomeProviderError || res.Answer != nil {
			t.Fatalf("status %s outcome %s", res.Status, res.Outcome)
		}
		steps := h.wantKinds(res.RunID, agent.StepStart, agent.StepModelCall, agent.StepClassification, agent.StepFailure)
		mc := decode[agent.ModelCall](t, steps, agent.StepModelCall, 0)
		if mc.Attempts != 3 || !strings.Contains(mc.Error, "HTTP 500") {
			t.Errorf("model call: attempts %d error %q", mc.Attempts, mc.Error)
		}
		c := decode[agent.Classification](t, steps, agent.StepClassification, 0)
		if c.Class != "infrastructure" || c.Kind != "server_error" {
			t.Errorf("classification: %+v", c)
		}
		if !strings.Contains(res.Failure.Summary, "server error") || res.Failure.Attempts != 0 {
			t.Errorf("failure: %+v", res.Failure)
		}
		if sc := res.Scorecard; sc.ProviderRetries != 2 || sc.Errors["infrastructure"] != 1 || sc.Attempts != 0 {
			t.Errorf("scorecard: %s", fmtScore(sc))
		}
		if n := len(h.srv.Requests()); n != 3 {
			t.Errorf("%d HTTP requests, want 3 (the provider's retry budget)", n)
		}
	})
}

func TestMalformedToolCallFedBack(t *testing.T) {
	protocols(t, func(t *testing.T, protocol string) {
		h := newHarness(t, protocol,
			llmtest.CallTool("c1", llm.RunCodeToolName, `{"language": "python", "code": "print(2 ** 10)"`),
			llmtest.RunCode("c2", "python", "print('power', 2 ** 10)\n"),
			llmtest.Reply("2 to the 10th is 1024."),
		)
		res := h.run("What is 2 to the 10th?")
		if res.Outcome != agent.OutcomeAnswered {
			t.Fatalf("outcome %s: %+v", res.Outcome, res.Failure)
		}
		steps := h.wantKinds(res.RunID, agent.StepStart, agent.StepModelCall, agent.StepClassification, agent.StepRetry,
			agent.StepModelCall, agent.StepCode, agent.StepReview, agent.StepExecution, agent.StepClassification,
			agent.StepModelCall, agent.StepAnswer)
		c := decode[agent.Classification](t, steps, agent.StepClassification, 0)
		if c.Class != "retryable" || c.Kind != "malformed_tool_call" {
			t.Errorf("classification: %+v", c)
		}
		// The second request answers the bad call with an error result.
		second := h.sent(1)
		last := second.Messages[len(second.Messages)-1]
		if last.Role != llm.RoleTool || !strings.Contains(last.Content, "malformed") {
			t.Errorf("feedback: %+v", last)
		}
		if sc := res.Scorecard; sc.Retries != 1 || sc.Attempts != 1 || sc.ErrorKinds["malformed_tool_call"] != 1 {
			t.Errorf("scorecard: %s", fmtScore(sc))
		}
	})
}

func TestReplyWithoutCodeIsSentBack(t *testing.T) {
	protocols(t, func(t *testing.T, protocol string) {
		h := newHarness(t, protocol,
			llmtest.Reply("The answer is obviously 1000."),
			llmtest.RunCode("c1", "python", "print('sum', sum(range(1, 45)))\n"),
			llmtest.Reply("The sum is 990."),
		)
		res := h.run("Sum the integers from 1 to 44.")
		if res.Outcome != agent.OutcomeAnswered || res.Answer.Text != "The sum is 990." {
			t.Fatalf("outcome %s answer %+v", res.Outcome, res.Answer)
		}
		mustContain(t, "feedback", lastUser(h.sent(1)), "No code was run")
		if sc := res.Scorecard; sc.ErrorKinds["no_code"] != 1 || sc.Retries != 1 {
			t.Errorf("scorecard: %s", fmtScore(sc))
		}
	})
}

func TestUngroundedAnswerIsCorrectedOrFlagged(t *testing.T) {
	protocols(t, func(t *testing.T, protocol string) {
		h := newHarness(t, protocol,
			llmtest.RunCode("c1", "python", "print('median:', sorted([7, 1, 9, 4, 12])[2])\n"),
			llmtest.Reply("The median is 8.5."),
			llmtest.Reply("The median is 7."),
		)
		res := h.run("Median of 7, 1, 9, 4, 12?")
		if res.Outcome != agent.OutcomeAnswered || res.Answer.Text != "The median is 7." {
			t.Fatalf("outcome %s answer %+v", res.Outcome, res.Answer)
		}
		mustContain(t, "grounding feedback", lastUser(h.sent(2)), "8.5", "does not show")

		h2 := newHarness(t, protocol,
			llmtest.RunCode("c1", "python", "print('median:', sorted([7, 1, 9, 4, 12])[2])\n"),
			llmtest.Reply("The median is 8.5."),
			llmtest.Reply("The median is 8.5, trust me."),
		)
		res = h2.run("Median of 7, 1, 9, 4, 12?")
		if res.Outcome != agent.OutcomeUnverified || res.Answer.Grounded || res.Answer.Unsupported[0] != "8.5" {
			t.Fatalf("outcome %s answer %+v", res.Outcome, res.Answer)
		}
		items, _ := h2.store.Reviews(t.Context(), res.RunID, false)
		if len(items) != 1 || items[0].Kind != store.ReviewUnverified {
			t.Errorf("review queue: %+v", items)
		}
	})
}

const salesCSV = "month,region,sales\nJan,north,120\nJan,south,80\nFeb,north,200\nFeb,south,150\n"

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
