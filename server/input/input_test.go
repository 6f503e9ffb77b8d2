package input_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/coderun/coderun/sandbox"
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

// ExecLimits read every limit of an execution, laid over the defaults;
// a negative one is refused, naming it.
func TestExecLimits(t *testing.T) {
	var l input.ExecLimits
	if err := json.Unmarshal([]byte(`{"wall_time": "2s", "memory": "64MiB", "processes": 8, "output_bytes": "1KiB", "workspace_bytes": 4096, "open_files": 32}`), &l); err != nil {
		t.Fatal(err)
	}
	got, err := l.Over(sandbox.Limits{CPUTime: 7 * time.Second, Processes: 64})
	want := sandbox.Limits{WallTime: 2 * time.Second, CPUTime: 7 * time.Second, Memory: 64 << 20, Processes: 8, OutputBytes: 1 << 10, WorkspaceBytes: 4096, OpenFiles: 32}
	if err != nil || got != want {
		t.Fatalf("limits %+v, %v; want %+v", got, err, want)
	}
	if _, err := (input.ExecLimits{Processes: -1}).Over(sandbox.Limits{}); !errors.Is(err, sandbox.ErrInvalid) || !strings.Contains(err.Error(), "limits.processes") {
		t.Errorf("negative processes: %v", err)
	}
	if err := json.Unmarshal([]byte(`{"wall_time": "1s", "threads": 3}`), &l); err != nil {
		t.Fatal(err) // unknown fields are the decoder's to refuse (server.DecodeJSON)
	}
}

// FilesWithMode keeps permission bits and refuses anything else; every
// refusal is an invalid request.
func TestFilesWithMode(t *testing.T) {
	text := "#!/bin/sh\n"
	files, err := input.FilesWithMode([]input.FileWithMode{{File: input.File{Path: "run.sh", Content: &text}, Mode: 0o755}}, 0)
	if err != nil || len(files) != 1 || files[0].Mode != 0o755 || string(files[0].Content) != text {
		t.Fatalf("files %+v, %v", files, err)
	}
	var f input.FileWithMode
	if err := json.Unmarshal([]byte(`{"path": "a", "content": "x", "mode": 420}`), &f); err != nil || f.Path != "a" || *f.Content != "x" || f.Mode != 0o644 {
		t.Fatalf("read %+v, %v", f, err)
	}
	for name, in := range map[string][]input.FileWithMode{
		"setuid":   {{File: input.File{Path: "a", Content: &text}, Mode: 0o4755}},
		"twice":    {{File: input.File{Path: "a", Content: &text}}, {File: input.File{Path: "a", Content: &text}}},
		"outside":  {{File: input.File{Path: "/etc/x", Content: &text}}},
		"too many": {{File: input.File{Path: "a", Content: &text}}, {File: input.File{Path: "b", Content: &text}}},
	} {
		max := int64(0)
		if name == "too many" {
			max = int64(len(text))
		}
		if _, err := input.FilesWithMode(in, max); !errors.Is(err, sandbox.ErrInvalid) {
			t.Errorf("%s: %v, want an invalid request", name, err)
		}
	}
}
