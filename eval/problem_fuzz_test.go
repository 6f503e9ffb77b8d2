package eval

import (
	"bufio"
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
)

// FuzzReadProblems feeds the problem reader arbitrary JSON Lines. Reading
// from memory never fails: every non-blank line is either a problem or a
// bad line reported with its number, never both; task ids are unique and
// not empty; and each problem, written back in its own format, reads back
// as the same problem (nothing the harness uses is lost or invented).
func FuzzReadProblems(f *testing.F) {
	for _, s := range []string{
		`{"task_id": "HumanEval/0", "prompt": "def f(x):\n", "canonical_solution": "    return x\n", "test": "def check(c):\n    assert c(1) == 1\n", "entry_point": "f"}`,
		`{"task_id": 7, "text": "t", "code": "def g(): return 1", "test_list": ["assert g() == 1"], "test_setup_code": "", "challenge_test_list": []}`,
		`{"id": "a", "code": "x = 1", "test": "assert x == 1"}`,
		`{"task_id": "b", "code": "echo hi", "test": "true", "language": "bash"}`,
		`{"id": "c", "test": "assert True", "language": "cobol"}`,
		`{"id": 1.5, "test": "t"}`,
		`{"id": "", "test": "t"}`,
		`{"task_id": "x", "test_list": []}`,
		`{"task_id": "y", "prompt": "p", "test": "t", "entry_point": ""}`,
		`{"id": "d", "test": "t"} {"id": "e"}`,
		`null`, `[1]`, `{"id": "a", "test": "t"}` + "\n" + `{"id": "a", "test": "u"}`,
		"\n\n  \r\n" + `{"id": "z", "test": "t", "code": null}` + "\r\n",
		`{"id": "\ud800", "test": "\xff"}`,
		`{"task_id": 12345678901234567890, "test_list": ["a"]}`,
	} {
		f.Add([]byte(s))
	}
	for _, name := range []string{"testdata/humaneval/HumanEval.jsonl.gz", "testdata/mbpp/mbpp.jsonl.gz"} {
		r, err := Open(name)
		if err != nil {
			f.Fatal(err)
		}
		br := bufio.NewReader(r)
		for range 2 {
			line, _ := br.ReadBytes('\n')
			f.Add(line)
		}
		r.Close()
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		var bad collect
		problems, err := ReadProblems(bytes.NewReader(in), ReadOptions{Name: "in"}, bad.bad)
		if err != nil {
			t.Fatalf("reading from memory failed: %v", err)
		}
		// The lines, numbered from 1, as the reader counts them.
		lines := bytes.Split(in, []byte("\n"))
		if len(lines[len(lines)-1]) == 0 {
			lines = lines[:len(lines)-1]
		}
		nonBlank := map[int]bool{}
		for i, l := range lines {
			if len(bytes.TrimSpace(l)) > 0 {
				nonBlank[i+1] = true
			}
		}
		seen := map[int]bool{}
		ids := map[string]bool{}
		for _, p := range problems {
			if !nonBlank[p.Line] || seen[p.Line] || p.Source != "in" {
				t.Fatalf("problem %q from line %d (source %q)", p.TaskID, p.Line, p.Source)
			}
			seen[p.Line] = true
			if p.TaskID == "" || ids[p.TaskID] {
				t.Fatalf("task id %q on line %d empty or given before", p.TaskID, p.Line)
			}
			ids[p.TaskID] = true
			checkProblemRoundTrip(t, p)
		}
		for _, e := range bad {
			if !nonBlank[e.Line] || seen[e.Line] || e.File != "in" || e.Err == nil {
				t.Fatalf("bad line %d (%v) is blank, a problem, or reported twice", e.Line, e)
			}
			seen[e.Line] = true
		}
		if len(seen) != len(nonBlank) {
			t.Fatalf("%d non-blank lines, %d problems and %d bad lines", len(nonBlank), len(problems), len(bad))
		}
	})
}

// checkProblemRoundTrip writes p back as a line of its format and checks
// that it reads back as p.
func checkProblemRoundTrip(t *testing.T, p *Problem) {
	t.Helper()
	line := map[string]any{}
	switch p.Format {
	case HumanEval:
		line = map[string]any{"task_id": p.TaskID, "prompt": p.Prompt, "test": p.Test, "entry_point": p.EntryPoint}
		if p.HasSolution {
			line["canonical_solution"] = p.Solution
		}
	case MBPP:
		line = map[string]any{"task_id": p.TaskID, "test_list": p.Tests, "test_setup_code": p.Setup}
		if p.HasSolution {
			line["code"] = p.Solution
		}
	case Generic:
		line = map[string]any{"id": p.TaskID, "test": p.Test, "language": p.Language}
		if p.HasSolution {
			line["code"] = p.Solution
		}
	default:
		t.Fatalf("problem %q of format %q", p.TaskID, p.Format)
	}
	data, err := json.Marshal(line)
	if err != nil {
		t.Fatal(err)
	}
	back, err := ReadProblems(bytes.NewReader(data), ReadOptions{Name: p.Source}, StopAtBadLine)
	if err != nil || len(back) != 1 {
		t.Fatalf("problem %+v written as %s does not read back: %v", p, data, err)
	}
	want := *p
	want.Line = 1
	if !p.HasSolution && p.Solution != "" {
		t.Fatalf("problem %q has no solution but Solution %q", p.TaskID, p.Solution)
	}
	if !reflect.DeepEqual(*back[0], want) {
		t.Fatalf("problem\n%+v\nwritten as %s reads back as\n%+v", want, data, *back[0])
	}
}
