package policy

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/coderun/coderun/language"
)

func finding(rule string, line int) Finding {
	r, _ := LookupRule(rule)
	return Finding{Rule: rule, Severity: r.Severity, Line: line, Column: 1, Snippet: "code", Message: "does " + rule}
}

func TestDefaultPolicyActions(t *testing.T) {
	p := DefaultPolicy()
	if err := p.Validate(); err != nil {
		t.Fatal(err)
	}
	want := map[string]Action{
		RuleProcessSpawn:     Ask,
		RuleProcessSignal:    Ask,
		RuleMultiprocessing:  Allow,
		RuleNetwork:          Ask,
		RuleNativeCode:       Ask,
		RuleDynamicCode:      Ask,
		RuleOutsideWorkspace: Ask,
		RuleSystemPath:       Ask,
		RuleRmRoot:           Deny,
		RuleDiskWrite:        Deny,
		RuleFormatDisk:       Deny,
		RuleForkBomb:         Deny,
		RuleChmodRoot:        Deny,
		RulePipeToShell:      Deny,
		RulePower:            Deny,
		RuleKillAll:          Deny,
		RuleSyntaxError:      Allow,
		RuleUnavailable:      Ask,
	}
	for _, r := range Rules() {
		w, ok := want[r.ID]
		if !ok {
			t.Errorf("rule %s has no expected default action in this test", r.ID)
			continue
		}
		if got := p.ActionFor(finding(r.ID, 1)); got != w {
			t.Errorf("default action for %s = %s, want %s", r.ID, got, w)
		}
	}
}

func TestDecide(t *testing.T) {
	p := DefaultPolicy()

	d := p.Decide(nil)
	if d.Action != Allow || len(d.Causes) != 0 || !strings.Contains(d.Explanation, "found nothing") {
		t.Errorf("no findings: %+v", d)
	}

	d = p.Decide([]Finding{finding(RuleMultiprocessing, 2)})
	if d.Action != Allow || len(d.Causes) != 1 || !strings.Contains(d.Explanation, "Allowed") {
		t.Errorf("allowed finding: %+v", d)
	}

	fs := []Finding{finding(RuleNetwork, 1), finding(RuleMultiprocessing, 2), finding(RuleProcessSpawn, 3)}
	d = p.Decide(fs)
	if d.Action != Ask || len(d.Causes) != 2 || d.Causes[0].Rule != RuleNetwork || d.Causes[1].Rule != RuleProcessSpawn {
		t.Errorf("ask: %+v", d)
	}
	if len(d.Findings) != 3 {
		t.Errorf("all findings are kept: %+v", d.Findings)
	}
	for _, s := range []string{"Needs approval", "line 1", "[network]", "line 3", "[process.spawn]"} {
		if !strings.Contains(d.Explanation, s) {
			t.Errorf("explanation lacks %q: %s", s, d.Explanation)
		}
	}
	if strings.Contains(d.Explanation, "multiprocessing") {
		t.Errorf("the explanation of ask lists only what needs approval: %s", d.Explanation)
	}

	fs = append(fs, finding(RuleRmRoot, 4))
	d = p.Decide(fs)
	if d.Action != Deny || len(d.Causes) != 1 || d.Causes[0].Rule != RuleRmRoot {
		t.Errorf("deny: %+v", d)
	}
	for _, s := range []string{"Denied", "line 4", "[destructive.rm-root]", "2 operations that would need a person's approval", "Rewrite"} {
		if !strings.Contains(d.Explanation, s) {
			t.Errorf("explanation lacks %q: %s", s, d.Explanation)
		}
	}
	if strings.Count(d.Explanation, "\n") != 0 {
		t.Errorf("the explanation is one paragraph: %q", d.Explanation)
	}
}

func TestDecideManyFindings(t *testing.T) {
	var fs []Finding
	for i := 1; i <= 12; i++ {
		fs = append(fs, finding(RuleNetwork, i))
	}
	d := DefaultPolicy().Decide(fs)
	if !strings.Contains(d.Explanation, "12 operations") || !strings.Contains(d.Explanation, "and 7 more") {
		t.Errorf("explanation: %s", d.Explanation)
	}
}

func TestPolicyPrecedence(t *testing.T) {
	p := &Policy{
		Rules:      map[string]Action{"network": Deny, "fs.*": Allow, "fs.system-path": Ask},
		Severities: map[Severity]Action{High: Ask, Low: Deny},
		Default:    Ask,
	}
	if err := p.Validate(); err != nil {
		t.Fatal(err)
	}
	for rule, want := range map[string]Action{
		RuleNetwork:          Deny,  // rule id
		RuleSystemPath:       Ask,   // rule id beats group
		RuleOutsideWorkspace: Allow, // group beats severity
		RuleProcessSpawn:     Ask,   // severity high
		RuleMultiprocessing:  Deny,  // severity low
		RuleSyntaxError:      Ask,   // default
	} {
		if got := p.ActionFor(finding(rule, 1)); got != want {
			t.Errorf("%s: got %s, want %s", rule, got, want)
		}
	}
}

func TestZeroAndNilPolicy(t *testing.T) {
	var zero Policy
	if got := zero.Decide([]Finding{finding(RuleRmRoot, 1)}).Action; got != Allow {
		t.Errorf("the zero policy allows everything; got %s", got)
	}
	var nilp *Policy
	if got := nilp.Decide([]Finding{finding(RuleRmRoot, 1)}).Action; got != Deny {
		t.Errorf("a nil policy is the default policy; got %s", got)
	}
}

func TestValidate(t *testing.T) {
	for _, p := range []*Policy{
		{Rules: map[string]Action{"nope": Deny}},
		{Rules: map[string]Action{"nope.*": Deny}},
		{Rules: map[string]Action{"network": "block"}},
		{Severities: map[Severity]Action{Severity(9): Deny}},
		{Severities: map[Severity]Action{High: "maybe"}},
		{Default: "sometimes"},
	} {
		if err := p.Validate(); err == nil {
			t.Errorf("Validate(%+v): want an error", p)
		}
	}
}

func TestParseHelpers(t *testing.T) {
	for _, s := range []string{"allow", "ASK", " deny "} {
		if _, err := ParseAction(s); err != nil {
			t.Errorf("ParseAction(%q): %v", s, err)
		}
	}
	if _, err := ParseAction("block"); err == nil || !strings.Contains(err.Error(), "allow, ask or deny") {
		t.Errorf("ParseAction(block): %v", err)
	}
	for s, want := range map[string]Severity{"info": Info, "Low": Low, "medium": Medium, "HIGH": High, "critical": Critical} {
		if got, err := ParseSeverity(s); err != nil || got != want {
			t.Errorf("ParseSeverity(%q) = %v, %v", s, got, err)
		}
	}
	if _, err := ParseSeverity("severe"); err == nil {
		t.Error("ParseSeverity(severe): want an error")
	}
	for s, want := range map[string]Language{"python": Python, "py": Python, "Python3": Python, "bash": Shell, "sh": Shell, "shell": Shell} {
		if got, err := ParseLanguage(s); err != nil || got != want {
			t.Errorf("ParseLanguage(%q) = %v, %v", s, got, err)
		}
	}
	if _, err := ParseLanguage("ruby"); err == nil || !strings.Contains(err.Error(), `"ruby"`) {
		t.Errorf("ParseLanguage(ruby): %v", err)
	}
	// Node is a language coderun runs, but not one the review reads.
	for _, s := range []string{"node", "js", "javascript"} {
		if got, err := ParseLanguage(s); err == nil {
			t.Errorf("ParseLanguage(%q) = %v, want an error", s, got)
		}
	}
	if _, err := Review(context.Background(), language.Node, "console.log(1)"); err == nil {
		t.Error("Review of node code: want an error")
	}
}

func TestFindingJSON(t *testing.T) {
	f := finding(RuleNetwork, 3)
	b, err := json.Marshal(f)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"severity":"high"`) || !strings.Contains(string(b), `"rule":"network"`) {
		t.Errorf("json: %s", b)
	}
	var back Finding
	if err := json.Unmarshal(b, &back); err != nil || back != f {
		t.Errorf("round trip: %+v, %v", back, err)
	}
}

func TestCatalogue(t *testing.T) {
	seen := map[string]bool{}
	for _, r := range Rules() {
		if seen[r.ID] {
			t.Errorf("duplicate rule %s", r.ID)
		}
		seen[r.ID] = true
		if r.Summary == "" {
			t.Errorf("rule %s has no summary", r.ID)
		}
		if got, ok := LookupRule(r.ID); !ok || got != r {
			t.Errorf("LookupRule(%s) = %+v, %v", r.ID, got, ok)
		}
	}
}
