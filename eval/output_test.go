package eval

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func writeVerdicts(t *testing.T, path string, vs ...Verdict) {
	t.Helper()
	out, done, err := OpenOutput(path, StopAtBadLine)
	if err != nil {
		t.Fatal(err)
	}
	_ = done
	for _, v := range vs {
		if err := out.Write(v); err != nil {
			t.Fatal(err)
		}
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestOutputRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "v.jsonl")
	a := Verdict{ID: "a", TaskID: "a", Status: Passed, Hash: "h1"}
	b := Verdict{ID: "b", TaskID: "b", Status: Failed, Error: "AssertionError", Hash: "h2"}
	writeVerdicts(t, path, a)
	writeVerdicts(t, path, b) // appends
	out, done, err := OpenOutput(path, StopAtBadLine)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	if len(done) != 2 || done[0].ID != "a" || done[1].Error != "AssertionError" {
		t.Fatalf("read back %+v", done)
	}
}

func TestOutputRepairsPartialLastLine(t *testing.T) {
	path := filepath.Join(t.TempDir(), "v.jsonl")
	writeVerdicts(t, path, Verdict{ID: "a", TaskID: "a", Status: Passed}, Verdict{ID: "b", TaskID: "b", Status: Passed})
	whole, _ := os.ReadFile(path)
	// A crash in the middle of writing the third line.
	third, _ := json.Marshal(Verdict{ID: "c", TaskID: "c", Status: Failed})
	if err := os.WriteFile(path, append(append([]byte{}, whole...), third[:len(third)/2]...), 0o644); err != nil {
		t.Fatal(err)
	}
	out, done, err := OpenOutput(path, StopAtBadLine)
	if err != nil {
		t.Fatal(err)
	}
	if len(done) != 2 {
		t.Fatalf("read back %d verdicts, want 2", len(done))
	}
	if err := out.Write(Verdict{ID: "c", TaskID: "c", Status: Passed}); err != nil {
		t.Fatal(err)
	}
	out.Close()
	data, _ := os.ReadFile(path)
	if !bytes.HasPrefix(data, whole) || bytes.Count(data, []byte("\n")) != 3 || !bytes.HasSuffix(data, []byte("\n")) {
		t.Fatalf("file after repair and append:\n%s", data)
	}
	out, done, err = OpenOutput(path, StopAtBadLine)
	if err != nil || len(done) != 3 || done[2].Status != Passed {
		t.Fatalf("%v %+v", err, done)
	}
	out.Close()

	// A whole verdict that only lacks its line ending is kept.
	if err := os.WriteFile(path, append(append([]byte{}, whole...), third...), 0o644); err != nil {
		t.Fatal(err)
	}
	out, done, err = OpenOutput(path, StopAtBadLine)
	if err != nil || len(done) != 3 || done[2].ID != "c" {
		t.Fatalf("%v %+v", err, done)
	}
	out.Write(Verdict{ID: "d", TaskID: "d", Status: Passed})
	out.Close()
	out, done, err = OpenOutput(path, StopAtBadLine)
	if err != nil || len(done) != 4 {
		t.Fatalf("%v %+v", err, done)
	}
	out.Close()
}

func TestOutputReportsBadLinesWithNumbers(t *testing.T) {
	path := filepath.Join(t.TempDir(), "v.jsonl")
	content := `{"id":"a","task_id":"a","status":"passed"}
garbage
{"id":"b","task_id":"b","status":"weird"}

{"task_id":"c","status":"passed"}
{"id":"d","task_id":"d","status":"failed"}
`
	os.WriteFile(path, []byte(content), 0o644)
	var bad collect
	out, done, err := OpenOutput(path, bad.bad)
	if err != nil {
		t.Fatal(err)
	}
	out.Close()
	if len(done) != 2 || done[1].ID != "d" {
		t.Errorf("done %+v", done)
	}
	if got := bad.lines(); !equalInts(got, []int{2, 3, 5}) {
		t.Errorf("bad lines %v: %v", got, bad)
	}
	if out, _, err := OpenOutput(path, StopAtBadLine); err == nil || !strings.Contains(err.Error(), "v.jsonl:2:") {
		if out != nil {
			out.Close()
		}
		t.Errorf("strict: %v", err)
	}
}

func TestOutputIsLocked(t *testing.T) {
	path := filepath.Join(t.TempDir(), "v.jsonl")
	out, _, err := OpenOutput(path, StopAtBadLine)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := OpenOutput(path, StopAtBadLine); err == nil || !strings.Contains(err.Error(), "another eval") {
		t.Errorf("second open: %v", err)
	}
	out.Close()
	out, _, err = OpenOutput(path, StopAtBadLine)
	if err != nil {
		t.Fatalf("after close: %v", err)
	}
	out.Close()
}

func TestPlan(t *testing.T) {
	its := items("a", "b", "c", "d")
	done := []Verdict{
		{ID: "t0", Status: Passed, Hash: its[0].Hash()},
		{ID: "t1", Status: Error, Hash: its[1].Hash()},
		{ID: "t2", Status: Error, Hash: its[2].Hash()},
		{ID: "t2", Status: Failed, Hash: its[2].Hash()}, // a later verdict supersedes
		{ID: "zz", Status: Passed},
	}
	todo, kept, unknown, err := Plan(its, done, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(todo) != 1 || todo[0].ID != "t3" || len(kept) != 3 || kept[2].Status != Failed || unknown != 1 {
		t.Errorf("todo %v kept %v unknown %d", todo, kept, unknown)
	}
	todo, kept, _, _ = Plan(its, done, func(v Verdict) bool { return v.Status == Error })
	if len(todo) != 2 || todo[0].ID != "t1" || len(kept) != 2 {
		t.Errorf("retrying errors: todo %v kept %v", todo, kept)
	}
	done[0].Hash = "something else"
	if _, _, _, err := Plan(its, done, nil); err == nil || !strings.Contains(err.Error(), "different program") {
		t.Errorf("hash mismatch: %v", err)
	}
}
