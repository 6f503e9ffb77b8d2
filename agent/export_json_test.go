package agent_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/coderun/coderun/agent/agenttest"
	"github.com/coderun/coderun/llm/llmtest"
	"github.com/coderun/coderun/sandbox"
	"github.com/coderun/coderun/store"
)

var updateGolden = flag.Bool("update", false, "rewrite the golden files in testdata")

// varying matches the values that change from one run to the next (ids,
// times, durations, the owner's lease), which the golden files hold as "_".
var (
	varying  = regexp.MustCompile(`"(id|run_id|created_at|updated_at|started_at|finished_at|lease_until|lease_expires|owner|duration_ms|active_ms|latency_ms|wall_ms|model_ms|exec_ms|at)": ("[^"]*"|[0-9.]+)`)
	duration = regexp.MustCompile(`("summary": "[^"]*?)[0-9.]+(ns|µs|ms|s)"`)
)

// The JSON of an exported run (its record, steps, files and review queue)
// and of the agent's result is what other programs read: typed outcomes,
// classes, kinds and languages must write it exactly as the strings did.
// Two scripted runs cover every one of them: a retried NameError then an
// answer, and a timeout, retried once, that ends the run with a failure
// report.
func TestExportedRunJSONIsStable(t *testing.T) {
	for _, c := range []struct {
		name    string
		backend *agenttest.Backend
		turns   []llmtest.Turn
	}{
		{"answered", agenttest.NewBackend(agenttest.On("y", agenttest.Raise("NameError", "name 'y' is not defined")), agenttest.On("", agenttest.Print("42\n"))),
			[]llmtest.Turn{llmtest.RunCode("c1", "py", "print(y)\n"), llmtest.RunCode("c2", "python", "print(6*7)\n"), llmtest.Reply("The answer is 42.")}},
		{"timeout", agenttest.NewBackend(agenttest.On("", agenttest.Stopped(sandbox.ReasonTimeout, "partial\n"))),
			[]llmtest.Turn{llmtest.RunCode("c1", "sh", "# count forever\nwhile :; do :; done\n"),
				llmtest.RunCode("c2", "sh", "# count forever, faster\nwhile true; do :; done\n"), llmtest.Reply("must not be asked")}},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := fakeHarness(t, llmtest.OpenAI, c.backend, c.turns...)
			h.cfg.Limits = sandbox.Limits{WallTime: 7 * time.Second, CPUTime: 3 * time.Second}
			res := h.run("What is six times seven?")
			exp, err := store.Gather(t.Context(), h.store, res.RunID, true)
			if err != nil {
				t.Fatal(err)
			}
			got := stableJSON(t, map[string]any{"result": res, "export": exp})
			golden := filepath.Join("testdata", "export_"+c.name+".json")
			if *updateGolden {
				if err := os.WriteFile(golden, got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				g, w := bytes.Split(got, []byte("\n")), bytes.Split(want, []byte("\n"))
				for i := 0; i < max(len(g), len(w)); i++ {
					if i >= len(g) || i >= len(w) || !bytes.Equal(g[i], w[i]) {
						t.Fatalf("the JSON differs from %s from line %d:\n got  %s\n want %s", golden, i+1, at(g, i), at(w, i))
					}
				}
			}
		})
	}
}

// stableJSON is v as indented JSON, its varying values replaced by "_".
func stableJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := json.Indent(&out, b, "", "  "); err != nil {
		t.Fatal(err)
	}
	b = varying.ReplaceAll(out.Bytes(), []byte(`"$1": "_"`))
	return append(duration.ReplaceAll(b, []byte(`${1}_"`)), '\n')
}

func at(lines [][]byte, i int) []byte {
	if i < len(lines) {
		return lines[i]
	}
	return []byte("(end)")
}
