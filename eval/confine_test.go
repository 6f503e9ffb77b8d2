package eval

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/coderun/coderun/language"
	"github.com/coderun/coderun/sandbox"
	"github.com/coderun/coderun/sandbox/gvisor"
	"github.com/coderun/coderun/sandbox/toolchain"
)

// TestItemsNeedingLandlockAreNotJudgedWithout: on gVisor, whose kernel
// has no Landlock, a bash or node harness item or a split item would run
// its solution unconfined beside its tests (it could read their sources
// and the harness's memory, and forge a pass: they were judged there
// before); they are errors saying why, while a Python HumanEval item,
// which needs no Landlock, is judged as anywhere.
func TestItemsNeedingLandlockAreNotJudgedWithout(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the gvisor runtime needs root")
	}
	bin, err := gvisor.FindRunsc("")
	if err != nil {
		t.Skipf("no runsc: %v", err)
	}
	grt, err := gvisor.New(gvisor.Options{Runsc: bin})
	if err != nil {
		t.Skipf("gvisor runtime: %v", err)
	}
	defer grt.Close()
	rt := toolchain.Wrap(grt, toolchain.Options{})
	humaneval := loadProblems(t, "testdata/humaneval/HumanEval.jsonl.gz", ReadOptions{})[0]
	cpp := loadProblems(t, humanEvalXFiles[language.CPP], ReadOptions{})[0]
	items := []Item{
		humaneval.Reference(),
		{ID: "bash", Language: sandbox.Bash, Code: bashHarnessProgram("f() { echo 1; }"), Tests: "[ \"$(f)\" = 1 ]\n"},
		{ID: "node", Language: sandbox.Node, Code: nodeHarnessProgram("function f() { return 1 }"), Tests: "assert.strictEqual(f(), 1)\n"},
		cpp.Reference(),
	}
	got := map[string]Verdict{}
	if err := Run(context.Background(), rt, Feed(items...), Options{Concurrency: 2}, func(v Verdict) error { got[v.ID] = v; return nil }); err != nil {
		t.Fatal(err)
	}
	if v := got[humaneval.TaskID]; v.Status != Passed {
		t.Errorf("HumanEval/0 on gvisor: %s %q", v.Status, v.Error)
	}
	for _, id := range []string{"bash", "node", cpp.TaskID} {
		if v := got[id]; v.Status != Error || !strings.Contains(v.Error, "have no Landlock") {
			t.Errorf("%s on gvisor: %s %q, want an error saying the sandboxes have no Landlock", id, v.Status, v.Error)
		}
	}
}
