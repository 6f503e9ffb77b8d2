package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/coderun/coderun/sandbox"
	"github.com/coderun/coderun/sandbox/linux"
)

// The CLI is tested end to end: the real binary, built once, in real sandboxes.

var binary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "coderun-cli")
	if err != nil {
		panic(err)
	}
	binary = filepath.Join(dir, "coderun")
	// Built as scripts/run.sh builds it: static (no cgo: the dynamic
	// loader's start is saved on every run) and without file paths.
	build := exec.Command("go", "build", "-trimpath", "-o", binary, ".")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		panic(string(out))
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

type cliResult struct {
	stdout, stderr string
	code           int
}

func coderun(t *testing.T, stdin string, args ...string) cliResult {
	t.Helper()
	cmd := exec.Command(binary, args...)
	cmd.Stdin = strings.NewReader(stdin)
	return runCLI(t, cmd)
}

// runCLI runs cmd and returns its output and exit status.
func runCLI(t *testing.T, cmd *exec.Cmd) cliResult {
	t.Helper()
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return cliResult{out.String(), errb.String(), code}
}

func needSandbox(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("the linux runtime needs root")
	}
	if err := linux.Probe().Require(nil); err != nil {
		t.Skip(err)
	}
}

func TestExecMirrorsTheRun(t *testing.T) {
	needSandbox(t)
	t.Parallel()
	for _, c := range []struct {
		name   string
		stdin  string
		args   []string
		code   int
		stdout string
		stderr string
	}{
		{"mean", "", []string{"exec", "-c", "print(sum([120, 80, 200, 150]) / 4)"}, 0, "137.5\n", ""},
		{"exit code", "", []string{"exec", "--lang", "bash", "-c", "echo out; echo err >&2; exit 3"}, 3, "out\n", "err\n"},
		{"code from stdin", "console.log(6*7)", []string{"exec", "--lang", "node"}, 0, "42\n", ""},
		{"program stdin", "", []string{"exec", "-c", "import sys; print(sys.stdin.read().upper())", "--stdin", "/etc/hostname"}, 0, "", ""},
		{"env", "", []string{"exec", "--lang", "bash", "-c", "echo $GREETING", "-e", "GREETING=hi"}, 0, "hi\n", ""},
		{"cpu limit", "", []string{"exec", "-c", "while True: pass", "--cpu-time", "200ms", "--timeout", "20s"}, 124, "", "coderun: cpu_limit: CPU time limit of 200ms reached"},
		{"sleep timeout", "", []string{"exec", "-c", "import time; time.sleep(60)", "--timeout", "300ms"}, 124, "", "coderun: timeout: wall time limit of 300ms reached"},
		{"memory", "", []string{"exec", "-c", "x = bytearray(400 << 20); print(len(x))", "--memory", "100MiB"}, 137, "", "coderun: memory_limit"},
		{"signal", "", []string{"exec", "--lang", "bash", "-c", "kill -TERM $$"}, 143, "", "coderun: terminated by SIGTERM"},
		{"output limit", "", []string{"exec", "-c", "print('x' * 5000)", "--output-limit", "1KiB"}, 141, strings.Repeat("x", 1024), "coderun: stdout truncated at 1.0 KiB"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			r := coderun(t, c.stdin, c.args...)
			if r.code != c.code {
				t.Fatalf("exit %d, want %d\nstdout: %s\nstderr: %s", r.code, c.code, r.stdout, r.stderr)
			}
			if c.stdout != "" && r.stdout != c.stdout {
				t.Errorf("stdout %q, want %q", r.stdout, c.stdout)
			}
			if !strings.Contains(r.stderr, c.stderr) {
				t.Errorf("stderr %q does not contain %q", r.stderr, c.stderr)
			}
		})
	}
}

func TestExecFilesInAndOut(t *testing.T) {
	needSandbox(t)
	t.Parallel()
	dir := t.TempDir()
	csv := filepath.Join(dir, "data.csv")
	os.WriteFile(csv, []byte("x\n120\n80\n200\n150\n"), 0o644)
	prog := filepath.Join(dir, "analyse.py")
	os.WriteFile(prog, []byte(`import csv, os
rows = [int(r["x"]) for r in csv.DictReader(open("input/data.csv"))]
os.makedirs("results", exist_ok=True)
open("results/mean.txt", "w").write(str(sum(rows) / len(rows)))
os.symlink("/etc/passwd", "results/passwd")
print("done")
`), 0o644)
	out := filepath.Join(dir, "out")
	r := coderun(t, "", "exec", prog, "--file", csv+":input/data.csv", "--out", out, "--json")
	if r.code != 0 {
		t.Fatalf("exit %d: %s %s", r.code, r.stdout, r.stderr)
	}
	var res sandbox.Result
	if err := json.Unmarshal([]byte(r.stdout), &res); err != nil {
		t.Fatalf("--json output: %v\n%s", err, r.stdout)
	}
	if res.Stdout != "done\n" || res.Reason != sandbox.ReasonExited || res.Usage.Wall <= 0 {
		t.Fatalf("result: %+v", res)
	}
	got, err := os.ReadFile(filepath.Join(out, "results", "mean.txt"))
	if err != nil || string(got) != "137.5" {
		t.Fatalf("results/mean.txt: %q %v", got, err)
	}
	// The link is listed in the result, but does not come back to the host
	// (see files_test.go).
	if _, err := os.Lstat(filepath.Join(out, "results", "passwd")); err == nil {
		t.Fatal("results/passwd, a link to /etc/passwd, was recreated on the host")
	}
	if _, err := os.Stat(filepath.Join(out, "input", "data.csv")); err == nil {
		t.Error("an unchanged input file was copied out")
	}
}

func TestExecRejectsBadInput(t *testing.T) {
	t.Parallel()
	big := filepath.Join(t.TempDir(), "big.py")
	os.WriteFile(big, bytes.Repeat([]byte("#"), sandbox.MaxCodeBytes+1), 0o644)
	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"unknown language", []string{"exec", "--lang", "cobol", "-c", "x"}, `unknown language "cobol"`},
		{"empty code", []string{"exec", "-c", "  "}, "code is empty"},
		{"oversized code", []string{"exec", big}, "more than the 1.0 MiB allowed"},
		{"memory out of range", []string{"exec", "-c", "1", "--memory", "1KiB"}, "memory 1.0 KiB is out of range"},
		{"bad unit", []string{"exec", "-c", "1", "--memory", "lots"}, "use a number with a unit"},
		{"absolute upload", []string{"exec", "-c", "1", "--file", "/etc/hostname:/etc/x"}, "is absolute"},
		{"dotdot upload", []string{"exec", "-c", "1", "--file", "/etc/hostname:../x"}, `contains ".."`},
		{"missing upload", []string{"exec", "-c", "1", "--file", "/nonexistent"}, "no such file"},
		{"upload over workspace", []string{"exec", "-c", "1", "--file", big, "--workspace-size", "1MiB"}, "more than the workspace"},
		{"both code sources", []string{"exec", "-c", "1", big}, "not both"},
		{"unknown flag", []string{"exec", "--frobnicate"}, "unknown flag"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := coderun(t, "", c.args...)
			if r.code != exitUsage {
				t.Fatalf("exit %d, want %d\n%s", r.code, exitUsage, r.stderr)
			}
			if !strings.Contains(r.stderr, c.want) {
				t.Fatalf("stderr %q does not contain %q", r.stderr, c.want)
			}
		})
	}
}

func TestDoctor(t *testing.T) {
	needSandbox(t)
	t.Parallel()
	r := coderun(t, "", "doctor", "--json")
	var rep struct {
		OK     bool
		Layers []linux.Layer
		Trials []struct {
			Language string
			OK       bool
		}
	}
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatal(err, r.stdout)
	}
	if r.code != 0 || !rep.OK || len(rep.Layers) < 10 {
		t.Fatalf("doctor: exit %d %+v\n%s", r.code, rep, r.stderr)
	}
	for _, tr := range rep.Trials {
		if tr.Language == "python" && !tr.OK {
			t.Fatal("python trial failed")
		}
	}
}
