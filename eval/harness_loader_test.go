package eval

import (
	"os"
	"strings"
	"testing"
)

// The harness reaches the sandbox compiled by the host's own Python, and
// an interpreter of another build (an alternative root) compiles its
// source instead: the two programs give the same verdicts.
func TestHarnessLoader(t *testing.T) {
	if _, err := os.Stat("/usr/bin/python3"); err != nil {
		t.Skip("no /usr/bin/python3 on this host")
	}
	if got := harnessLoader(); !strings.Contains(got, "_marshal.loads(") {
		t.Fatalf("the harness is not compiled ahead:\n%.300s", got)
	}
	p := &Problem{TaskID: "T", Format: HumanEval, Language: "python", EntryPoint: "f",
		Prompt: "def f(x):\n    \"\"\"doc\"\"\"\n",
		Test:   "def check(candidate):\n    assert candidate(1) == 2\n    assert candidate(2) == 4\n"}
	var its []Item
	for _, c := range []struct{ id, completion string }{{"right", "    return 2 * x\n"}, {"wrong", "    return 2\n"}} {
		compiled := p.Item(c.completion)
		compiled.ID = "compiled " + c.id
		source := compiled
		source.ID = "source " + c.id
		// As an interpreter whose sys.version differs would run it.
		source.Code = strings.Replace(source.Code, harnessLoader(), loader("another build", "unused"), 1)
		if source.Code == compiled.Code {
			t.Fatal("the program does not start with the loader")
		}
		its = append(its, compiled, source)
	}
	got, _, _ := runReal(t, its, Options{})
	for _, how := range []string{"compiled", "source"} {
		if v := got[how+" right"]; v.Status != Passed {
			t.Errorf("%s: right answer %s %q\n%s", how, v.Status, v.Error, v.Stderr)
		}
		if v := got[how+" wrong"]; v.Status != Failed || v.Line != "assert candidate(2) == 4" {
			t.Errorf("%s: wrong answer %s %q at %q\n%s", how, v.Status, v.Error, v.Line, v.Stderr)
		}
	}
}
