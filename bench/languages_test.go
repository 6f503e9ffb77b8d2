package bench

import (
	"context"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/coderun/coderun/eval"
	"github.com/coderun/coderun/language"
	"github.com/coderun/coderun/sandbox"
)

// TestHelloDirectUnprivileged: run as root, the host's side of the
// languages benchmark runs its commands as an unprivileged user, so that
// the toolchains' shared caches are read-only to it as to a sandbox (root's
// Go wrote its builds into the Go build cache sandboxes share).
func TestHelloDirectUnprivileged(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
	spec := &language.Spec{Name: "probe", File: "main.sh",
		Compile: []string{"/bin/sh", "-c", `test "$(id -u)" != 0 && test -w . && test -w "$TMPDIR"`},
		Run:     []string{"/bin/sh", "{src}"},
		Env:     map[string]string{"TMPDIR": "{cache}/tmp"}}
	if _, err := helloDirect(context.Background(), spec, "/bin/sh", "test \"$(id -u)\" != 0\n"); err != nil {
		t.Fatal(err)
	}
}

// TestLanguagesRefusesTheRuntimesOwn: asked for a language it has no hello
// world for (the runtime's own Python, Bash, Node), the benchmark says so
// before it measures anything, rather than failing after the others with
// "code is empty".
func TestLanguagesRefusesTheRuntimesOwn(t *testing.T) {
	for _, l := range []language.Language{language.Node, language.Python, language.Bash} {
		_, err := Languages(context.Background(), LanguagesConfig{Languages: []language.Language{language.C, l}, Runs: 1}, io.Discard)
		if err == nil || !strings.Contains(err.Error(), "not measured here") {
			t.Errorf("%s: %v, want a refusal naming it", l, err)
		}
	}
}

// TestLanguagesReportNamesWhatDidNotPass: an item of the HumanEval-X rows
// that did not pass is named with its status and why, not only counted.
func TestLanguagesReportNamesWhatDidNotPass(t *testing.T) {
	rep := &LanguagesReport{Rows: []LanguageRow{{Language: language.CPP, Items: 2, Passed: 1, ItemsPerSecond: 1,
		NotPassed: []eval.Verdict{{TaskID: "CPP/7", Status: eval.Timeout, Reason: sandbox.ReasonTimeout}}}}}
	var out strings.Builder
	rep.Print(&out)
	if !strings.Contains(out.String(), "1/2") || !strings.Contains(out.String(), "not passed: CPP/7 timeout: timeout") {
		t.Errorf("report:\n%s", out.String())
	}
}
