package bootstrap_test

import (
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
