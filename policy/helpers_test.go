package policy

import (
	"context"
	"strings"
	"testing"
	"time"
)

// ruleCase is one snippet that must produce a finding of rule (on line,
// when line is not 0).
type ruleCase struct {
	name string
	code string
	rule string
	line int
}

// analyze runs the default reviewer on code and fails the test on error.
func analyze(t *testing.T, lang Language, code string) []Finding {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var r Reviewer
	fs, err := r.Analyze(ctx, lang, code)
	if err != nil {
		t.Fatalf("Analyze(%q): %v", code, err)
	}
	return fs
}

func dump(fs []Finding) string {
	if len(fs) == 0 {
		return "  (no findings)"
	}
	var b strings.Builder
	for _, f := range fs {
		b.WriteString("  " + f.String() + "  | " + f.Snippet + "\n")
	}
	return b.String()
}

func hasRule(fs []Finding, rule string, line int) bool {
	for _, f := range fs {
		if f.Rule == rule && (line == 0 || f.Line == line) {
			return true
		}
	}
	return false
}

// runRuleCases checks that every case finds its rule.
func runRuleCases(t *testing.T, lang Language, cases []ruleCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			fs := analyze(t, lang, tc.code)
			if !hasRule(fs, tc.rule, tc.line) {
				t.Errorf("code:\n%s\nwant a %s finding (line %d), got:\n%s", tc.code, tc.rule, tc.line, dump(fs))
			}
			for _, f := range fs {
				if f.Line < 1 || f.Snippet == "" || f.Message == "" {
					t.Errorf("finding without position, snippet or message: %+v", f)
				}
			}
		})
	}
}

// runCleanCases checks that none of the snippets produces any finding.
func runCleanCases(t *testing.T, lang Language, cases map[string]string) {
	t.Helper()
	for name, code := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			if fs := analyze(t, lang, code); len(fs) > 0 {
				t.Errorf("code:\n%s\nwant no findings, got:\n%s", code, dump(fs))
			}
		})
	}
}
