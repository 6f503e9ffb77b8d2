package policy

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"
)

func TestLoadPolicyFiles(t *testing.T) {
	strict, err := LoadPolicy(filepath.Join("testdata", "strict.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for rule, want := range map[string]Action{
		RuleNetwork:         Deny, // overridden
		RuleMultiprocessing: Ask,  // overridden
		RuleProcessSpawn:    Ask,  // from the default base
		RuleRmRoot:          Deny, // from the default base
	} {
		if got := strict.ActionFor(finding(rule, 1)); got != want {
			t.Errorf("strict.yaml: %s = %s, want %s", rule, got, want)
		}
	}

	perm, err := LoadPolicy(filepath.Join("testdata", "permissive.json"))
	if err != nil {
		t.Fatal(err)
	}
	for rule, want := range map[string]Action{
		RuleSystemPath:   Allow, // group
		RuleDynamicCode:  Ask,   // rule
		RuleRmRoot:       Deny,  // severity critical
		RuleProcessSpawn: Allow, // default: base none has no high entry
	} {
		if got := perm.ActionFor(finding(rule, 1)); got != want {
			t.Errorf("permissive.json: %s = %s, want %s", rule, got, want)
		}
	}
}

func TestLoadPolicyErrors(t *testing.T) {
	tests := map[string][]string{
		"bad_rule.yaml":     {"bad_rule.yaml", `unknown rule "netwrok"`, `did you mean "network"?`},
		"bad_action.yaml":   {"rules: network", `unknown action "block"`, "allow, ask or deny"},
		"bad_field.yaml":    {"field rule not found"},
		"bad_severity.yaml": {`unknown severity "severe"`},
		"bad_group.yaml":    {`unknown rule group "shell.*"`, "destructive.*"},
		"bad_yaml.yaml":     {"policy file:"},
		"missing.yaml":      {"missing.yaml", "no such file"},
	}
	for name, wants := range tests {
		_, err := LoadPolicy(filepath.Join("testdata", name))
		if err == nil {
			t.Errorf("%s: want an error", name)
			continue
		}
		for _, w := range wants {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: error %q lacks %q", name, err, w)
			}
		}
	}
}

func TestParsePolicy(t *testing.T) {
	for _, tt := range []struct {
		text string
		err  string
	}{
		{"", ""},
		{"# only a comment\n", ""},
		{"{}", ""},
		{"version: 1\nbase: none\n", ""},
		{"version: 2\n", "unsupported version 2"},
		{"base: strict\n", `unknown base "strict"`},
		{"default: maybe\n", `unknown action "maybe"`},
		{"severities:\n  high: sometimes\n", `unknown action "sometimes"`},
		{"rules:\n  network: deny\n  network: allow\n", "already"},
		{`{"rules": {"process.spawn": "deny"}}`, ""},
		{`{"rules": {"process.spawn": "deny"}, "extra": 1}`, "extra"},
	} {
		_, err := ParsePolicy([]byte(tt.text))
		switch {
		case tt.err == "" && err != nil:
			t.Errorf("ParsePolicy(%q): %v", tt.text, err)
		case tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)):
			t.Errorf("ParsePolicy(%q): error %v, want one containing %q", tt.text, err, tt.err)
		}
	}

	// An empty file is the default policy.
	p, err := ParsePolicy(nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := p.ActionFor(finding(RuleRmRoot, 1)); got != Deny {
		t.Errorf("empty file: rm-root = %s", got)
	}
	// base: none starts from nothing.
	p, err = ParsePolicy([]byte("base: none\n"))
	if err != nil {
		t.Fatal(err)
	}
	if got := p.ActionFor(finding(RuleRmRoot, 1)); got != Allow {
		t.Errorf("base none: rm-root = %s", got)
	}
}

func TestDefaultPolicyFile(t *testing.T) {
	text := DefaultPolicyFile()
	p, err := ParsePolicy(text)
	if err != nil {
		t.Fatal(err)
	}
	d := DefaultPolicy()
	for _, r := range Rules() {
		if p.ActionFor(finding(r.ID, 1)) != d.ActionFor(finding(r.ID, 1)) {
			t.Errorf("%s: the default file and DefaultPolicy disagree", r.ID)
		}
	}
	text[0] = 'X' // a copy: the package's text is not changed
	if bytes.Equal(text, DefaultPolicyFile()) {
		t.Error("DefaultPolicyFile returned shared memory")
	}
}
