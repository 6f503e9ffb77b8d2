package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Every command follows one table of exit codes (main.go).
func TestExitCodeTable(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name   string
		args   []string
		env    []string
		code   int
		stdout string // a line the output must contain
		stderr string
	}{
		{"version flag", []string{"--version"}, nil, 0, "coderun " + release, ""},
		{"version command", []string{"version"}, nil, 0, "coderun " + release, ""},
		{"help of a group", []string{"runs"}, nil, 0, "Usage:", ""},
		{"unknown command", []string{"bogus"}, nil, exitUsage, "", `unknown command "bogus" for "coderun"`},
		{"unknown subcommand of a group", []string{"runs", "bogus"}, nil, exitUsage, "", `unknown command "bogus" for "coderun runs"`},
		{"suggestion", []string{"review", "lst"}, nil, exitUsage, "", `did you mean "list"?`},
		{"missing argument", []string{"eval"}, nil, exitUsage, "", "accepts 1 arg(s), received 0"},
		{"too many arguments", []string{"doctor", "extra"}, nil, exitUsage, "", "unknown command"},
		{"unknown flag", []string{"exec", "--bogus"}, nil, exitUsage, "", "unknown flag: --bogus"},
		{"no API key", []string{"ask", "what is 2+2"}, []string{"CODERUN_MODEL=openai:gpt-4.1-mini", "OPENAI_API_KEY="}, exitUsage, "", "no API key"},
		{"no model", []string{"ask", "what is 2+2"}, []string{"CODERUN_MODEL="}, exitUsage, "", "no model"},
	} {
		t.Run(c.name, func(t *testing.T) {
			cmd := exec.Command(binary, c.args...)
			cmd.Env = append(os.Environ(), c.env...)
			cmd.Env = append(cmd.Env, "CODERUN_DATA_DIR="+t.TempDir())
			var out, errb strings.Builder
			cmd.Stdout, cmd.Stderr = &out, &errb
			code := 0
			if err := cmd.Run(); err != nil {
				ee, ok := err.(*exec.ExitError)
				if !ok {
					t.Fatal(err)
				}
				code = ee.ExitCode()
			}
			if code != c.code {
				t.Errorf("exit %d, want %d\nstdout: %s\nstderr: %s", code, c.code, out.String(), errb.String())
			}
			if !strings.Contains(out.String(), c.stdout) {
				t.Errorf("stdout lacks %q:\n%s", c.stdout, out.String())
			}
			if !strings.Contains(errb.String(), c.stderr) {
				t.Errorf("stderr lacks %q:\n%s", c.stderr, errb.String())
			}
		})
	}
}

// Without root the sandbox cannot be set up: 125, with the reason.
func TestExitCodeNotRoot(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to switch to an unprivileged user")
	}
	setpriv, err := exec.LookPath("setpriv")
	if err != nil {
		t.Skip("setpriv not installed")
	}
	dir, err := os.MkdirTemp("", "coderun-nonroot")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	bin := filepath.Join(dir, "coderun")
	data, err := os.ReadFile(binary)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, data, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(setpriv, "--reuid=65534", "--regid=65534", "--clear-groups", bin, "exec", "-c", "print(1)")
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	ee, ok := err.(*exec.ExitError)
	if !ok || ee.ExitCode() != exitSetup {
		t.Fatalf("err %v, want exit %d\n%s", err, exitSetup, out)
	}
	if !strings.Contains(string(out), "needs root") {
		t.Errorf("the reason is missing:\n%s", out)
	}
}

// The runtime's flags are offered by the commands that start sandboxes and
// by no other.
func TestRuntimeFlagsWhereTheyApply(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		args []string
		want bool
	}{
		{[]string{"exec", "--help"}, true},
		{[]string{"eval", "--help"}, true},
		{[]string{"notebook", "run", "--help"}, true},
		{[]string{"review", "approve", "--help"}, true},
		{[]string{"runs", "list", "--help"}, false},
		{[]string{"runs", "show", "--help"}, false},
		{[]string{"review", "list", "--help"}, false},
		{[]string{"version", "--help"}, false},
	} {
		r := coderun(t, "", c.args...)
		if got := strings.Contains(r.stdout, "--rootfs"); got != c.want || r.code != 0 {
			t.Errorf("%v: exit %d, offers --rootfs: %v, want %v", c.args, r.code, got, c.want)
		}
	}
	if r := coderun(t, "", "runs", "list", "--rootfs", "/"); r.code != exitUsage {
		t.Errorf("runs list --rootfs: exit %d, want %d", r.code, exitUsage)
	}
}

// -o means one thing on every command: --output, a file; the directory a
// run's files are saved to is --out, with no short form.
func TestShortOptionsMeanOneThing(t *testing.T) {
	t.Parallel()
	for _, c := range [][]string{{"exec"}, {"ask"}, {"eval"}, {"notebook", "run"}, {"runs", "export"}} {
		r := coderun(t, "", append(c, "--help")...)
		if strings.Contains(r.stdout, "-o, --out ") {
			t.Errorf("%v: -o is --out (a directory):\n%s", c, r.stdout)
		}
		if strings.Contains(r.stdout, "-o,") && !strings.Contains(r.stdout, "-o, --output ") {
			t.Errorf("%v: -o is not --output:\n%s", c, r.stdout)
		}
	}
	for _, c := range [][]string{{"ask"}, {"eval"}, {"notebook", "run"}} {
		if r := coderun(t, "", append(c, "--help")...); !strings.Contains(r.stdout, "-q, --quiet") {
			t.Errorf("%v has no -q, --quiet", c)
		}
	}
}
