package policy

import (
	"fmt"
	"strings"
)

// maxExplained bounds how many findings an explanation lists.
const maxExplained = 5

// explain writes the decision's paragraph. asked are findings that would
// need approval when the decision is deny; offline says the sandbox has no
// network.
func explain(d Decision, asked []Finding, offline bool) string {
	var b strings.Builder
	var network []Finding // network causes, when offline
	if offline {
		network = byRule(d.Causes, RuleNetwork, true)
	}
	switch {
	case d.Action == Deny && len(network) > 0:
		others := byRule(d.Causes, RuleNetwork, false)
		if len(others) > 0 {
			fmt.Fprintf(&b, "Denied: the code was not run because it contains %s the policy forbids: ", count(len(others), "operation"))
			list(&b, others, maxExplained)
			b.WriteString(" It also uses the network, which this sandbox does not have: ")
		} else {
			b.WriteString("Denied: the code was not run because it uses the network, and this sandbox has no network access, so it would fail: ")
		}
		list(&b, network, maxExplained)
		if len(asked) > 0 {
			fmt.Fprintf(&b, " It also contains %s that would need a person's approval: ", count(len(asked), "operation"))
			list(&b, asked, 3)
		}
		b.WriteString(" Rewrite the code to do the task without the network: use the files in the workspace, or compute what is needed locally.")
	case d.Action == Deny:
		fmt.Fprintf(&b, "Denied: the code was not run because it contains %s the policy forbids: ", count(len(d.Causes), "operation"))
		list(&b, d.Causes, maxExplained)
		if len(asked) > 0 {
			fmt.Fprintf(&b, " It also contains %s that would need a person's approval: ", count(len(asked), "operation"))
			list(&b, asked, 3)
		}
		b.WriteString(" Rewrite the code to do the task inside the workspace without these operations.")
	case d.Action == Ask:
		fmt.Fprintf(&b, "Needs approval: a person must approve this code before it runs, because it contains %s the policy asks about: ", count(len(d.Causes), "operation"))
		list(&b, d.Causes, maxExplained)
		if len(d.Causes) == 1 {
			b.WriteString(" If the task can be done without it, rewriting the code avoids the wait.")
		} else {
			b.WriteString(" If the task can be done without them, rewriting the code avoids the wait.")
		}
	default:
		if len(d.Causes) == 0 {
			return "Allowed: the review found nothing the policy restricts."
		}
		fmt.Fprintf(&b, "Allowed: the review noted %s that the policy allows: ", count(len(d.Causes), "finding"))
		list(&b, d.Causes, maxExplained)
		if len(network) > 0 {
			b.WriteString(" Note: this sandbox has no network access, so the network operations will fail.")
		}
	}
	return b.String()
}

// byRule returns the findings of rule (with is true) or of every other
// rule (with is false).
func byRule(fs []Finding, rule string, with bool) []Finding {
	var out []Finding
	for _, f := range fs {
		if (f.Rule == rule) == with {
			out = append(out, f)
		}
	}
	return out
}

func count(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// list writes findings as "line 3 (`rm -rf /`): message [rule]; ...".
func list(b *strings.Builder, fs []Finding, limit int) {
	for i, f := range fs {
		if i == limit {
			fmt.Fprintf(b, "; and %d more", len(fs)-i)
			break
		}
		if i > 0 {
			b.WriteString("; ")
		}
		fmt.Fprintf(b, "line %d", f.Line)
		if f.Snippet != "" {
			s := f.Snippet
			if r := []rune(s); len(r) > 60 {
				s = string(r[:59]) + "…"
			}
			fmt.Fprintf(b, " (`%s`)", s)
		}
		fmt.Fprintf(b, ": %s [%s]", f.Message, f.Rule)
	}
	b.WriteString(".")
}
