package sandbox_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/coderun/coderun/sandbox"
)

func TestValidateRejects(t *testing.T) {
	ok := sandbox.Request{Language: sandbox.Python, Code: "print(1)"}
	for _, c := range []struct {
		name   string
		mutate func(*sandbox.Request)
		want   string
	}{
		{"unknown language", func(r *sandbox.Request) { r.Language = "cobol" }, `unknown language "cobol"`},
		{"empty code", func(r *sandbox.Request) { r.Code = " \n\t" }, "code is empty"},
		{"oversized code", func(r *sandbox.Request) { r.Code = strings.Repeat("#", sandbox.MaxCodeBytes+1) }, "more than the 1.0 MiB"},
		{"NUL in code", func(r *sandbox.Request) { r.Code = "print(1)\x00" }, "NUL"},
		{"negative memory", func(r *sandbox.Request) { r.Limits.Memory = -1 }, "memory"},
		{"tiny memory", func(r *sandbox.Request) { r.Limits.Memory = 1 << 10 }, "memory 1.0 KiB is out of range"},
		{"huge wall time", func(r *sandbox.Request) { r.Limits.WallTime = 48 * time.Hour }, "wall time 48h0m0s is out of range"},
		{"too many processes", func(r *sandbox.Request) { r.Limits.Processes = 1 << 20 }, "processes"},
		{"absolute path", func(r *sandbox.Request) { r.Files = []sandbox.File{{Path: "/etc/passwd"}} }, "is absolute"},
		{"dot-dot path", func(r *sandbox.Request) { r.Files = []sandbox.File{{Path: "a/../../x"}} }, `contains ".."`},
		{"workspace itself", func(r *sandbox.Request) { r.Files = []sandbox.File{{Path: "./"}} }, "names the workspace itself"},
		{"long name", func(r *sandbox.Request) { r.Files = []sandbox.File{{Path: strings.Repeat("a", 256)}} }, "longer than 255"},
		{"duplicate", func(r *sandbox.Request) { r.Files = []sandbox.File{{Path: "a"}, {Path: "./a"}} }, "given twice"},
		{"too big for workspace", func(r *sandbox.Request) {
			r.Limits.WorkspaceBytes = 1 << 20
			r.Files = []sandbox.File{{Path: "big", Content: make([]byte, 1<<20)}}
		}, "more than the workspace"},
		{"bad env name", func(r *sandbox.Request) { r.Env = map[string]string{"A=B": "x"} }, "environment variable name"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := ok
			c.mutate(&r)
			_, err := r.Validate(sandbox.DefaultLimits)
			if !errors.Is(err, sandbox.ErrInvalid) {
				t.Fatalf("err = %v, want ErrInvalid", err)
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %q, want it to mention %q", err, c.want)
			}
		})
	}
}

func TestValidateFillsDefaults(t *testing.T) {
	r := sandbox.Request{Language: sandbox.Bash, Code: "true", Limits: sandbox.Limits{Memory: 64 << 20}}
	in, err := r.Validate(sandbox.DefaultLimits)
	if err != nil {
		t.Fatal(err)
	}
	if in.Path != "/usr/bin/bash" {
		t.Errorf("interpreter %s", in.Path)
	}
	want := sandbox.DefaultLimits
	want.Memory = 64 << 20
	if r.Limits != want {
		t.Errorf("limits %+v, want %+v", r.Limits, want)
	}
}

func TestCleanPath(t *testing.T) {
	for in, want := range map[string]string{"a": "a", "./a/b/": "a/b", "a//b": "a/b", "dir/./f.txt": "dir/f.txt"} {
		got, err := sandbox.CleanPath(in)
		if err != nil || got != want {
			t.Errorf("CleanPath(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
}

func TestNeedsColdStart(t *testing.T) {
	py, _ := sandbox.LookupInterpreter(sandbox.Python)
	if !py.NeedsColdStart(map[string]string{"PYTHONHASHSEED": "0"}) || py.NeedsColdStart(map[string]string{"DATA": "x"}) {
		t.Fatal("interpreter start-up variables not recognised")
	}
}

func TestParseBytes(t *testing.T) {
	for in, want := range map[string]int64{"256MiB": 256 << 20, "1GB": 1e9, "512k": 512e3, "1048576": 1 << 20, " 2 KiB ": 2048} {
		got, err := sandbox.ParseBytes(in)
		if err != nil || got != want {
			t.Errorf("ParseBytes(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "lots", "-1MiB", "1XB"} {
		if _, err := sandbox.ParseBytes(bad); !errors.Is(err, sandbox.ErrInvalid) {
			t.Errorf("ParseBytes(%q) err = %v", bad, err)
		}
	}
}

func TestJSONShapes(t *testing.T) {
	var l sandbox.Limits
	if err := json.Unmarshal([]byte(`{"wall_time":"1.5s","cpu_time":2,"memory":1048576}`), &l); err != nil {
		t.Fatal(err)
	}
	if l.WallTime != 1500*time.Millisecond || l.CPUTime != 2*time.Second || l.Memory != 1<<20 {
		t.Fatalf("limits %+v", l)
	}
	if err := json.Unmarshal([]byte(`{"wall_time":"soon"}`), &l); !errors.Is(err, sandbox.ErrInvalid) {
		t.Fatalf("bad duration: %v", err)
	}
	out, _ := json.Marshal(sandbox.Limits{WallTime: 10 * time.Second})
	if string(out) != `{"wall_time":"10s"}` {
		t.Fatalf("limits JSON %s", out)
	}
	u := sandbox.Usage{Wall: 1500 * time.Microsecond, CPUUser: time.Millisecond, PeakMemory: 42}
	out, _ = json.Marshal(u)
	if string(out) != `{"wall_ms":1.5,"cpu_user_ms":1,"cpu_system_ms":0,"peak_memory_bytes":42}` {
		t.Fatalf("usage JSON %s", out)
	}
	var back sandbox.Usage
	if err := json.Unmarshal(out, &back); err != nil || back != u {
		t.Fatalf("usage round trip %+v %v", back, err)
	}
}

// FuzzCleanPath: whatever a caller sends, an accepted path stays inside the
// workspace: relative, no ".." component, no NUL, and already clean.
func FuzzCleanPath(f *testing.F) {
	for _, s := range []string{"a", "a/b", "../x", "/etc/passwd", "a/../../b", "./a//b/", "..", ".", "a\x00b", "…/x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, p string) {
		c, err := sandbox.CleanPath(p)
		if err != nil {
			if !errors.Is(err, sandbox.ErrInvalid) {
				t.Fatalf("CleanPath(%q): error %v does not wrap ErrInvalid", p, err)
			}
			return
		}
		if c == "" || c == "." || strings.HasPrefix(c, "/") || strings.ContainsRune(c, 0) {
			t.Fatalf("CleanPath(%q) = %q escapes or names the workspace", p, c)
		}
		for _, part := range strings.Split(c, "/") {
			if part == ".." || part == "" || part == "." {
				t.Fatalf("CleanPath(%q) = %q has component %q", p, c, part)
			}
		}
		if again, err := sandbox.CleanPath(c); err != nil || again != c {
			t.Fatalf("CleanPath(%q) = %q, but CleanPath of that = %q, %v", p, c, again, err)
		}
	})
}

func TestSpecValidate(t *testing.T) {
	s := sandbox.Spec{Limits: sandbox.Limits{Memory: 64 << 20}}
	if err := s.Validate(sandbox.DefaultLimits); err != nil {
		t.Fatal(err)
	}
	if s.Limits.WallTime != 0 || s.Limits.CPUTime != 0 || s.Limits.Memory != 64<<20 || s.Limits.Processes != sandbox.DefaultLimits.Processes {
		t.Fatalf("limits %+v: want zero wall and CPU kept, defaults for the rest", s.Limits)
	}
	for _, bad := range []sandbox.Spec{
		{Files: []sandbox.File{{Path: "../x"}}},
		{Limits: sandbox.Limits{WallTime: 48 * time.Hour}},
		{Limits: sandbox.Limits{WorkspaceBytes: 1 << 20}, Files: []sandbox.File{{Path: "big", Content: make([]byte, 1<<20)}}},
	} {
		if err := bad.Validate(sandbox.DefaultLimits); !errors.Is(err, sandbox.ErrInvalid) {
			t.Errorf("spec %+v: err = %v, want ErrInvalid", bad.Limits, err)
		}
	}
}

func TestRequestName(t *testing.T) {
	for name, ok := range map[string]bool{"": true, "analysis.py": true, "my script.sh": true, "a/b.py": false, "..": false, "x\n.py": false, "\xff.py": false, strings.Repeat("a", 256): false} {
		req := sandbox.Request{Language: sandbox.Python, Code: "pass", Name: name}
		if _, err := req.Validate(sandbox.DefaultLimits); (err == nil) != ok {
			t.Errorf("name %q: %v, want ok=%v", name, err, ok)
		}
	}
}
