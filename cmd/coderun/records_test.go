package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Commands that only read the records never create a database, answer
// an unknown id with a usage error, and check their filters.
func TestReadOnlyRecordCommands(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "data")
	for _, c := range []struct {
		args   []string
		code   int
		output string
	}{
		{[]string{"runs", "list"}, 0, "STATUS"},
		{[]string{"runs", "stats", "--since", "7d"}, 0, "runs:"},
		{[]string{"runs", "stats", "--since", "1d12h"}, 0, "runs:"},
		{[]string{"review", "list"}, 0, "ITEM"},
		{[]string{"runs", "show", "3f9a2c"}, exitUsage, "not found"},
		{[]string{"runs", "export", "3f9a2c"}, exitUsage, "not found"},
		{[]string{"review", "show", "3f9a2c"}, exitUsage, "not found"},
		{[]string{"runs", "list", "--status", "bogus"}, exitUsage, "want one of running, interrupted"},
		{[]string{"runs", "stats", "--since", "7x"}, exitUsage, "want a duration such as"},
	} {
		cmd := exec.Command(binary, append(c.args, "--data-dir", dir)...)
		out, err := cmd.CombinedOutput()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		if code != c.code || !strings.Contains(string(out), c.output) {
			t.Errorf("%v: exit %d, want %d and %q:\n%s", c.args, code, c.code, c.output, out)
		}
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("read-only commands created %s (%v)", dir, err)
	}
}

func TestSinceFlag(t *testing.T) {
	for in, want := range map[string]time.Duration{
		"90m": 90 * time.Minute, "24h": 24 * time.Hour, "7d": 7 * 24 * time.Hour, "1d12h": 36 * time.Hour, "0d": 0,
	} {
		var f sinceFlag
		if err := f.Set(in); err != nil || time.Duration(f) != want {
			t.Errorf("%q: %v %v, want %v", in, time.Duration(f), err, want)
		}
	}
	for _, in := range []string{"7x", "d", "-1d", "1d-3h", "week"} {
		var f sinceFlag
		if err := f.Set(in); err == nil {
			t.Errorf("%q accepted as %v", in, time.Duration(f))
		}
	}
}
