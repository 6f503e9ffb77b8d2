package input_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/coderun/coderun/server/input"
)

func TestLimitsRead(t *testing.T) {
	var l input.Limits
	if err := json.Unmarshal([]byte(`{"wall_time": "1m30s", "cpu_time": 2.5, "memory": "256MiB"}`), &l); err != nil {
		t.Fatal(err)
	}
	got, err := l.Limits()
	if err != nil || got.WallTime != 90*time.Second || got.CPUTime != 2500*time.Millisecond || got.Memory != 256<<20 {
		t.Fatalf("limits %+v, %v", got, err)
	}
	for _, bad := range []string{`{"wall_time": "soon"}`, `{"memory": "lots"}`, `{"cpu_time": true}`} {
		if err := json.Unmarshal([]byte(bad), &l); err == nil {
			t.Errorf("%s: no error", bad)
		}
	}
	if _, err := (input.Limits{Memory: -1}).Limits(); err == nil || !strings.Contains(err.Error(), "limits.memory") {
		t.Errorf("negative memory: %v", err)
	}
}

func TestFiles(t *testing.T) {
	text, b64, bad := "a,b\n1,2\n", "aGVsbG8=", "%%"
	files, err := input.Files([]input.File{{Path: "data/in.csv", Content: &text}, {Path: "./hello.txt", ContentBase64: &b64}}, 1<<10)
	if err != nil || len(files) != 2 || string(files[0].Content) != text || files[1].Path != "hello.txt" || string(files[1].Content) != "hello" {
		t.Fatalf("files %+v, %v", files, err)
	}
	for name, c := range map[string]struct {
		in   []input.File
		want string
	}{
		"out of the workspace": {[]input.File{{Path: "../x", Content: &text}}, "files[0]"},
		"twice":                {[]input.File{{Path: "a", Content: &text}, {Path: "./a", Content: &text}}, "twice"},
		"both contents":        {[]input.File{{Path: "a", Content: &text, ContentBase64: &b64}}, "not both"},
		"not base64":           {[]input.File{{Path: "a", ContentBase64: &bad}}, "base64"},
		"too large":            {[]input.File{{Path: "a", Content: &text}, {Path: "b", Content: &text}}, "more than"},
	} {
		max := int64(1 << 10)
		if name == "too large" {
			max = int64(len(text)) + 1
		}
		if _, err := input.Files(c.in, max); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v", name, err)
		}
	}
}
