package policy

import (
	"fmt"
	"slices"
	"strings"
)

// Action is what a policy decides to do with code.
type Action string

// Actions, from the most to the least permissive.
const (
	// Allow lets the code run.
	Allow Action = "allow"
	// Ask holds the code until a person approves it.
	Ask Action = "ask"
	// Deny refuses to run the code.
	Deny Action = "deny"
)

// ParseAction reads "allow", "ask" or "deny".
func ParseAction(name string) (Action, error) {
	a, err := parseAction(name)
	if err != nil {
		return "", fmt.Errorf("policy: %w", err)
	}
	return a, nil
}

func parseAction(name string) (Action, error) {
	switch a := Action(strings.ToLower(strings.TrimSpace(name))); a {
	case Allow, Ask, Deny:
		return a, nil
	}
	return "", fmt.Errorf("unknown action %q (want allow, ask or deny)", name)
}

// rank orders actions: allow < ask < deny.
func (a Action) rank() int {
	switch a {
	case Ask:
		return 1
	case Deny:
		return 2
	}
	return 0
}

// Policy maps findings to actions. An entry for the finding's rule id wins,
// then one for its group ("destructive.*"), then one for its severity, then
// Default. The zero Policy allows everything; a nil *Policy is
// [DefaultPolicy].
type Policy struct {
	// Rules maps rule ids, or groups written "group.*", to actions.
	Rules map[string]Action `json:"rules,omitempty"`
	// Severities maps severities to actions.
	Severities map[Severity]Action `json:"severities,omitempty"`
	// Default applies to findings nothing else covers; "" means allow.
	Default Action `json:"default,omitempty"`
}

// DefaultPolicy returns coderun's default policy (see default_policy.yaml):
// destructive commands are denied; process spawning, signals, network,
// native code, dynamic code, paths outside the workspace and code that could
// not be analysed need a person's approval; multiprocessing and syntax
// errors are allowed.
func DefaultPolicy() *Policy {
	p := &Policy{}
	f, err := decodePolicyFile(defaultPolicyFile)
	if err == nil {
		err = f.apply(p)
	}
	if err != nil {
		panic("policy: the embedded default policy is invalid: " + err.Error())
	}
	return p
}

// Validate checks that every rule id or group is known and every action valid.
func (p *Policy) Validate() error {
	if p == nil {
		return nil
	}
	keys := make([]string, 0, len(p.Rules))
	for k := range p.Rules {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if err := checkRuleKey(k); err != nil {
			return fmt.Errorf("policy: %w", err)
		}
		if _, err := parseAction(string(p.Rules[k])); err != nil {
			return fmt.Errorf("policy: rule %s: %w", k, err)
		}
	}
	for s, a := range p.Severities {
		if s < Info || s > Critical {
			return fmt.Errorf("policy: unknown severity %d", int(s))
		}
		if _, err := parseAction(string(a)); err != nil {
			return fmt.Errorf("policy: severity %s: %w", s, err)
		}
	}
	if p.Default != "" {
		if _, err := parseAction(string(p.Default)); err != nil {
			return fmt.Errorf("policy: default: %w", err)
		}
	}
	return nil
}

// checkRuleKey accepts a rule id or a group of rules written "group.*".
func checkRuleKey(k string) error {
	if group, ok := strings.CutSuffix(k, ".*"); ok {
		for _, r := range catalogue {
			if ruleGroup(r.ID) == group {
				return nil
			}
		}
		return fmt.Errorf("unknown rule group %q (known groups: %s)", k, strings.Join(knownGroups(), ", "))
	}
	if _, ok := rulesByID[k]; ok {
		return nil
	}
	msg := fmt.Sprintf("unknown rule %q", k)
	if s := closestRule(k); s != "" {
		msg += fmt.Sprintf(" (did you mean %q?)", s)
	}
	return fmt.Errorf("%s; known rules: %s", msg, strings.Join(knownIDs(), ", "))
}

func knownIDs() []string {
	ids := make([]string, len(catalogue))
	for i, r := range catalogue {
		ids[i] = r.ID
	}
	return ids
}

func knownGroups() []string {
	var gs []string
	for _, r := range catalogue {
		g := ruleGroup(r.ID) + ".*"
		if !slices.Contains(gs, g) {
			gs = append(gs, g)
		}
	}
	return gs
}

// closestRule suggests a rule id for a misspelt one.
func closestRule(k string) string {
	best, bestD := "", len(k)/2+1
	for _, r := range catalogue {
		if d := editDistance(k, r.ID); d < bestD {
			best, bestD = r.ID, d
		}
	}
	return best
}

func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// ActionFor returns the action the policy takes for one finding.
func (p *Policy) ActionFor(f Finding) Action {
	if p == nil {
		p = DefaultPolicy()
	}
	if a, ok := p.Rules[f.Rule]; ok {
		return a
	}
	if a, ok := p.Rules[ruleGroup(f.Rule)+".*"]; ok {
		return a
	}
	if a, ok := p.Severities[f.Severity]; ok {
		return a
	}
	if p.Default != "" {
		return p.Default
	}
	return Allow
}

// Decision is the outcome of a review.
type Decision struct {
	// Action is the strictest action any finding called for; Allow when
	// there are none.
	Action Action `json:"action"`
	// Causes are the findings that called for Action.
	Causes []Finding `json:"causes,omitempty"`
	// Findings are all findings, in source order.
	Findings []Finding `json:"findings,omitempty"`
	// Explanation is a paragraph for a person, or to give back to the model.
	Explanation string `json:"explanation"`
}

// Decide maps findings to a decision, for code that will run where the
// network may be reachable.
func (p *Policy) Decide(findings []Finding) Decision {
	return p.decide(findings, false)
}

// DecideOffline maps findings to a decision for code that will run in a
// sandbox without network access. It is [Policy.Decide] except for network
// findings: where the policy would ask a person about one, the code is
// denied instead, because approving it cannot make it work — it would only
// fail later — and the explanation says so, for the model to rewrite the
// code without the network. A policy that allows network code still allows
// it (the code runs and fails, and its output says why), with a note in
// the explanation; one that denies it still denies it.
func (p *Policy) DecideOffline(findings []Finding) Decision {
	return p.decide(findings, true)
}

func (p *Policy) decide(findings []Finding, offline bool) Decision {
	if p == nil {
		p = DefaultPolicy()
	}
	d := Decision{Action: Allow, Findings: findings}
	actions := make([]Action, len(findings))
	for i, f := range findings {
		actions[i] = p.ActionFor(f)
		if offline && f.Rule == RuleNetwork && actions[i] == Ask {
			actions[i] = Deny
		}
		if actions[i].rank() > d.Action.rank() {
			d.Action = actions[i]
		}
	}
	var asked []Finding
	for i, f := range findings {
		switch {
		case actions[i] == d.Action:
			d.Causes = append(d.Causes, f)
		case actions[i] == Ask:
			asked = append(asked, f)
		}
	}
	d.Explanation = explain(d, asked, offline)
	return d
}
