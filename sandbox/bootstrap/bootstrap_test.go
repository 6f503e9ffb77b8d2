package bootstrap_test

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/coderun/coderun/sandbox"
	"github.com/coderun/coderun/sandbox/bootstrap"
)

func TestPayload(t *testing.T) {
	got := string(bootstrap.Payload(map[string]string{"B": "2", "A": "x=y"}, "a.py", "print(1)"))
	if want := "A=x=y\x00B=2\x00\x00a.py\x00print(1)"; got != want {
		t.Fatalf("payload %q, want %q", got, want)
	}
	if got := string(bootstrap.Payload(nil, "", "x")); got != "\x00\x00x" {
		t.Fatalf("empty env payload %q", got)
	}
}

// Every language the sandbox package knows has a bootstrap, and its
// command line runs it.
func TestArgvRunsTheBootstrap(t *testing.T) {
	for _, lang := range sandbox.Languages() {
		in, err := sandbox.LookupInterpreter(lang)
		if err != nil {
			t.Fatal(err)
		}
		argv, err := bootstrap.Argv(in)
		if err != nil {
			t.Fatal(err)
		}
		src := bootstrap.Source(lang)
		if src == "" || !strings.Contains(strings.Join(argv, "\x00"), src) {
			t.Errorf("%s: argv %q does not carry its bootstrap", lang, argv)
		}
	}
	if _, err := bootstrap.Argv(sandbox.Interpreter{Language: "cobol"}); err == nil {
		t.Error("argv for an unknown language")
	}
}

// TestNodeBootstrapLeaksNoNames runs the Node bootstrap on the host: the
// program must not see its variables (a sloppy "for (m in t)" assigned
// the bootstrap's const m, a HumanEval-X canonical solution failed so).
func TestNodeBootstrapLeaksNoNames(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("no node on this host")
	}
	in, err := sandbox.LookupInterpreter(sandbox.Node)
	if err != nil {
		t.Fatal(err)
	}
	argv, err := bootstrap.Argv(in)
	if err != nil {
		t.Fatal(err)
	}
	code := "for (m in {a: 1}) {}\nfile = 2; i = 3; data = 4; src = 5;\nconsole.log(typeof Module, m, file, i, data, src)\n"
	payload, err := os.CreateTemp(t.TempDir(), "payload")
	if err != nil {
		t.Fatal(err)
	}
	payload.Write(bootstrap.Payload(nil, "", code))
	payload.Seek(0, 0)
	ready, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(node, argv[1:]...)
	cmd.ExtraFiles = []*os.File{payload, ready} // fds 3 and 4
	out, err := cmd.CombinedOutput()
	if err != nil || string(out) != "undefined a 2 3 4 5\n" {
		t.Fatalf("output %q, %v", out, err)
	}
}
