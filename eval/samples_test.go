package eval

import (
	"strings"
	"testing"
)

func TestSamplesJoinToProblems(t *testing.T) {
	problems := `{"task_id": "T/0", "prompt": "def f():\n", "canonical_solution": "    return 0\n", "test": "def check(c):\n    assert c() == 0\n", "entry_point": "f"}
{"task_id": 3, "code": "def g(): return 3", "test_list": ["assert g() == 3"]}`
	ps, err := ReadProblems(strings.NewReader(problems), ReadOptions{}, StopAtBadLine)
	if err != nil {
		t.Fatal(err)
	}
	samples := `{"task_id": "T/0", "completion": "    return 0\n"}
{"task_id": "T/0", "completion": "    return 1\n"}
{"task_id": 3, "completion": "def g(): return 4"}
{"task_id": "nope", "completion": ""}
{"task_id": "T/0"}
{"task_id": "3", "completion": "def g(): return 3"}
not json
{"task_id": "T/0", "completion": ""}`
	var bad collect
	items, err := ReadSamples(strings.NewReader(samples), "s.jsonl", ps, bad.bad)
	if err != nil {
		t.Fatal(err)
	}
	if got := bad.lines(); !equalInts(got, []int{4, 5, 7}) {
		t.Fatalf("bad lines %v: %v", got, bad)
	}
	if !strings.Contains(bad[0].Error(), `s.jsonl:4: unknown task_id "nope"`) {
		t.Errorf("unknown task: %v", bad[0])
	}
	if !strings.Contains(bad[1].Error(), `missing field "completion"`) {
		t.Errorf("missing completion: %v", bad[1])
	}
	var ids []string
	for _, it := range items {
		ids = append(ids, it.ID)
	}
	if want := "T/0#0 T/0#1 3#0 3#1 T/0#2"; strings.Join(ids, " ") != want {
		t.Fatalf("ids %q, want %q", ids, want)
	}
	if want := ps[0].Item("    return 1\n"); items[1].Code != want.Code || items[1].Tests != want.Tests || items[1].TaskID != "T/0" || items[1].Sample != 1 {
		t.Errorf("item = %+v", items[1])
	}
	if !strings.HasSuffix(items[2].Code, "_run(\"def g(): return 4\", \"\", \"\", \"\")\n") || !strings.Contains(items[2].Tests, "assert g() == 3") {
		t.Errorf("an MBPP completion replaces the code: %q", items[2].Code)
	}
	if items[0].Hash() == items[1].Hash() || items[0].Hash() != ps[0].Reference().Hash() {
		t.Error("hash must follow the program")
	}
}
