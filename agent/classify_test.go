package agent

import (
	"strings"
	"testing"

	"github.com/coderun/coderun/sandbox"
)

func TestClassify(t *testing.T) {
	for _, c := range []struct {
		name  string
		ex    ExecutionRecord
		class Class
		kind  Kind
	}{
		{"ok", ExecutionRecord{Reason: "exited"}, ClassSuccess, ""},
		{"name error", ExecutionRecord{Language: "python", Reason: "exited", ExitCode: 1,
			Stderr: "Traceback (most recent call last):\n  File \"/work/main.py\", line 1, in <module>\nNameError: name 'y' is not defined\n"}, ClassRetryable, "NameError"},
		{"syntax error", ExecutionRecord{Language: "python", Reason: "exited", ExitCode: 1,
			Stderr: "  File \"/work/main.py\", line 1\n    def f(:\n          ^\nSyntaxError: invalid syntax\n"}, ClassRetryable, "SyntaxError"},
		{"dotted", ExecutionRecord{Language: "python", Reason: "exited", ExitCode: 1,
			Stderr: "Traceback (most recent call last):\n  x\njson.decoder.JSONDecodeError: Expecting value: line 1 column 1 (char 0)\n"}, ClassRetryable, "JSONDecodeError"},
		{"memory error", ExecutionRecord{Language: "python", Reason: "exited", ExitCode: 1,
			Stderr: "Traceback (most recent call last):\n  x\nMemoryError\n"}, ClassFatal, "MemoryError"},
		{"shell", ExecutionRecord{Language: "bash", Reason: "exited", ExitCode: 2, Stderr: "ls: cannot access 'x': No such file or directory\n"}, ClassRetryable, "exit_status"},
		{"node", ExecutionRecord{Language: "node", Reason: "exited", ExitCode: 1, Stderr: "/work/main.js:1\nfoo()\n^\n\nReferenceError: foo is not defined\n    at Object.<anonymous>\n"}, ClassRetryable, "ReferenceError"},
		{"session error", ExecutionRecord{Language: "python", Reason: "exited", ExitCode: 1, Outputs: []Output{{OutputType: "error", Ename: "KeyError", Evalue: "'a'"}}}, ClassRetryable, "KeyError"},
		{"signal", ExecutionRecord{Language: "python", Reason: "exited", ExitCode: -1, Signal: "SIGSEGV"}, ClassRetryable, "signal"},
		{"timeout", ExecutionRecord{Reason: sandbox.ReasonTimeout}, ClassRetryable, "timeout"},
		{"cpu", ExecutionRecord{Reason: sandbox.ReasonCPULimit}, ClassFatal, "cpu_limit"},
		{"memory", ExecutionRecord{Reason: sandbox.ReasonMemoryLimit}, ClassFatal, "memory_limit"},
		{"output", ExecutionRecord{Reason: sandbox.ReasonOutputLimit}, ClassFatal, "output_limit"},
		{"setup", ExecutionRecord{Reason: sandbox.ReasonSetupError, Error: "no cgroup"}, ClassInfrastructure, "setup_error"},
	} {
		v := classify(&c.ex, false)
		if v.Class != c.class || v.Kind != c.kind {
			t.Errorf("%s: %s %s, want %s %s", c.name, v.Class, v.Kind, c.class, c.kind)
		}
	}
	if v := classify(&ExecutionRecord{Reason: sandbox.ReasonKilled}, true); v.Class != ClassCancelled {
		t.Errorf("killed while cancelled: %s", v.Class)
	}
	a := verdict{Kind: "TypeError", Message: "<object at 0x7f00aa>"}
	b := verdict{Kind: "TypeError", Message: "<object  at 0x7f11bb>"}
	if a.signature() != b.signature() {
		t.Errorf("signatures differ: %q %q", a.signature(), b.signature())
	}
}

func TestGround(t *testing.T) {
	for _, c := range []struct {
		answer, output, task string
		unsupported          string
	}{
		{"The mean is 137.5.", "mean: 137.5", "", ""},
		{"The mean is 137.50, about 138.", "mean: 137.5", "", ""},
		{"Total: 1,234,567.", "total 1234567", "", ""},
		{"The share is 25%.", "share 0.25", "", ""},
		{"The mean is 140.", "mean: 137.5", "", "140"},
		{"It has 3 columns and a mean of 12.25.", "3 columns, mean 12.254", "", ""},
		{"It has 3 columns and a mean of 12.3.", "3 columns, mean 12.254", "", ""},
		{"It has 3 columns and a mean of 12.4.", "3 columns, mean 12.254", "", "12.4"},
		{"Row x86 and id a1b2 are fine; value 99.", "value 99", "", ""},
		{"The result is -42.", "-42", "", ""},
		{"The result is 1.5e3.", "1500", "", ""},
		// Small integers are checked too.
		{"It has 4 columns.", "3 columns", "", "4"},
		// A number merely restated from the task is not a result.
		{"The mean is 150.", "mean: 137.5", "What is the mean of 120, 80, 200, 150?", "150"},
		{"The mean of 120, 80, 200 and 150 is 137.5.", "mean: 137.5", "What is the mean of 120, 80, 200, 150?", ""},
		{"The mean of 120, 80, 200 and 150 is 150.", "mean: 137.5", "What is the mean of 120, 80, 200, 150?", "120,80,200,150"},
		{"The mean is 137.5. The largest value is 150.", "mean: 137.5", "What is the mean of 120, 80, 200, 150?", "150"},
		{"The mean of 120, 80, 200 and 150 is 137.5. The largest is 150.", "mean: 137.5", "What is the mean of 120, 80, 200, 150?", "150"},
		// Ranges and scaled forms.
		{"Values range over 120-200.", "min 120 max 200", "", ""},
		{"Values range over 120-250.", "min 120 max 200", "", "250"},
		{"About 1.2 million rows, 3.4k errors, revenue 2bn.", "rows 1234567 errors 3401 revenue 2000000000", "", ""},
		{"About 1.3 million rows.", "rows 1234567", "", "1.3 million"},
		{"About 3.5k errors.", "errors 3401", "", "3.5k"},
	} {
		g := ground(c.answer, []string{c.output}, []string{c.task})
		if got := strings.Join(g.Unsupported, ","); got != c.unsupported {
			t.Errorf("%q vs %q: unsupported %q, want %q", c.answer, c.output, got, c.unsupported)
		}
	}
}

func TestDescribe(t *testing.T) {
	in := Describe(sandbox.File{Path: "d/sales.csv", Content: []byte("a,b\n1,2\n3,4\n5,6\n")})
	if in.Path != "d/sales.csv" || !strings.Contains(in.Summary, "3 data rows") || !strings.Contains(in.Summary, `"a", "b"`) || in.Size != 16 {
		t.Errorf("csv: %+v", in)
	}
	if in := Describe(sandbox.File{Path: "x.json", Content: []byte(`[{"k": 1, "j": 2}]`)}); !strings.Contains(in.Summary, `array of 1 items (objects with keys "j", "k")`) {
		t.Errorf("json: %+v", in)
	}
	if in := Describe(sandbox.File{Path: "notes.txt", Content: []byte("a\nb")}); !strings.Contains(in.Summary, "2 lines") {
		t.Errorf("text: %+v", in)
	}
	if in := Describe(sandbox.File{Path: "x.bin", Content: []byte{0, 1, 2}}); !strings.HasPrefix(in.Summary, "binary") {
		t.Errorf("binary: %+v", in)
	}
}
