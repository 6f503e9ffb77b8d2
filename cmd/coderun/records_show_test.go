package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/coderun/coderun/llm/llmtest"
)

// runs show and the live progress show a steps-mode cell's result (its
// last expression) and, when it raised, its traceback; runs show -v shows
// tool calls whole, and --width how much of each message.
func TestRunsShowCellResultsTracebacksAndToolCalls(t *testing.T) {
	t.Parallel()
	for _, protocol := range []string{llmtest.OpenAI, llmtest.Anthropic} {
		t.Run(protocol, func(t *testing.T) {
			t.Parallel()
			long := "xs = [4, 8, 15, 16, 23, 42]  # " + strings.Repeat("a long comment ", 30) + "END-OF-CALL"
			e := newAskEnv(t, protocol,
				llmtest.RunCode("c1", "python", long+"\nsum(xs)\n"),
				llmtest.RunCode("c2", "python", "xs[6]\n"),
				llmtest.RunCode("c3", "python", "max(xs)\n"),
				llmtest.Reply("Finished."),
				llmtest.Reply("The sum is 108 and the largest is 42."),
			)
			r := e.run("ask", "What are the sum and the largest of 4, 8, 15, 16, 23, 42?", "--model", e.model, "--mode", "steps")
			if r.code != 0 {
				t.Fatalf("ask: exit %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
			}
			run := e.onlyRun()
			for what, text := range map[string]string{"live progress": r.stderr, "runs show": e.run("runs", "show", run.ID).stdout} {
				mustHave(t, what, text, "result [1]:", "│ 108", "error: IndexError: list index out of range",
					"xs[6]", "│ 42")
				if strings.Contains(text, "\x1b[") {
					t.Errorf("%s has terminal escapes:\n%q", what, text)
				}
			}
			show := e.run("runs", "show", run.ID, "-v").stdout
			mustHave(t, "runs show -v", show, "tool call run_code (c1): ", "END-OF-CALL", "tool call run_code (c3)")
			if n := strings.Count(show, "a long comment"); n < 30 {
				t.Errorf("runs show -v clipped the tool call (%d repeats):\n%s", n, show)
			}
			narrow := e.run("runs", "show", run.ID, "-v", "--width", "40").stdout
			whole := e.run("runs", "show", run.ID, "-v", "--width", "0").stdout
			if len(whole) <= len(narrow) || !strings.Contains(whole, "What are the sum and the largest of 4, 8, 15, 16, 23, 42?") {
				t.Errorf("--width 0 (%d bytes) does not show more than --width 40 (%d bytes)", len(whole), len(narrow))
			}
			if r := e.run("runs", "show", run.ID, "--width", "-1"); r.code != 2 {
				t.Errorf("--width -1: exit %d", r.code)
			}
			// Every --json uses snake_case keys, and its durations say
			// their unit.
			for _, args := range [][]string{{"runs", "stats", "--json"}, {"runs", "show", run.ID, "--json"},
				{"runs", "list", "--json"}, {"review", "list", "--json"}} {
				out := e.run(args...)
				var v any
				if err := json.Unmarshal([]byte(out.stdout), &v); err != nil {
					t.Fatalf("%v: %v\n%s", args, err, out.stdout)
				}
				checkJSONKeys(t, strings.Join(args[:2], " "), "", v)
			}
			var stats map[string]any
			json.Unmarshal([]byte(e.run("runs", "stats", "--json").stdout), &stats)
			if ms, ok := stats["exec_ms"].(float64); !ok || ms <= 0 || ms > 60000 {
				t.Errorf("runs stats --json: exec_ms %v", stats["exec_ms"])
			}
			// The notebook is written too (the export is tested in the agent).
			nb := filepath.Join(t.TempDir(), "run.ipynb")
			if r := e.run("runs", "export", run.ID, "--format", "ipynb", "-o", nb); r.code != 0 {
				t.Fatalf("export: %s", r.stderr)
			}
			data, err := os.ReadFile(nb)
			if err != nil || !json.Valid(data) {
				t.Fatalf("notebook: %v", err)
			}
		})
	}
}

// checkJSONKeys fails for a key that is not snake_case, and for a number
// that is a time or a duration whose key does not say its unit (_ms).
func checkJSONKeys(t *testing.T, what, at string, v any) {
	t.Helper()
	switch x := v.(type) {
	case map[string]any:
		for k, val := range x {
			if k != strings.ToLower(k) || strings.ContainsAny(k, " -") {
				t.Errorf("%s: key %s%s is not snake_case", what, at, k)
			}
			// A count of something timed ("timeout_retries") is no duration.
			if _, num := val.(float64); num && !strings.HasSuffix(k, "_ms") && !strings.HasSuffix(k, "_retries") &&
				(strings.Contains(k, "time") || strings.Contains(k, "duration") || strings.Contains(k, "latency")) {
				t.Errorf("%s: %s%s = %v has no unit", what, at, k, val)
			}
			switch k {
			case "data", "args", "error_kinds", "errors", "models", "by_status", "by_outcome", "error_counts":
				continue // keyed by data: MIME types, kinds, models, statuses
			}
			checkJSONKeys(t, what, at+k+".", val)
		}
	case []any:
		for _, e := range x {
			checkJSONKeys(t, what, at, e)
		}
	}
}
