package policy

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/coderun/coderun/language"
)

// Language is the language of the code under review: the one
// [language.Language] every package shares.
type Language = language.Language

// Languages the review understands.
const (
	Python = language.Python
	Shell  = language.Bash
)

// ParseLanguage reads a language name. It accepts "python" (also "py",
// "python3", "ipython") and "shell" (also "sh", "bash"), and gives Python or
// Shell; a language the review does not understand ("node") is an error.
func ParseLanguage(name string) (Language, error) {
	if l, ok := language.Parse(name); ok && (l == Python || l == Shell) {
		return l, nil
	}
	return "", fmt.Errorf("policy: unknown language %q (want python or shell)", name)
}

// Finding is one thing the review noticed in the code.
type Finding struct {
	// Rule is the id of the rule that matched, from [Rules].
	Rule string `json:"rule"`
	// Severity is the rule's severity.
	Severity Severity `json:"severity"`
	// Line is 1-based. Column is 1-based and counts characters (Unicode code
	// points), not bytes; 0 means unknown. Code reached through a string
	// (os.system("..."), bash -c '...') is reported at the string's position.
	Line   int `json:"line"`
	Column int `json:"column,omitempty"`
	// Snippet is the source line the finding is on, trimmed and shortened.
	Snippet string `json:"snippet"`
	// Message explains the finding in a sentence.
	Message string `json:"message"`
}

// String formats the finding as "line L:C: rule (severity): message".
func (f Finding) String() string {
	pos := fmt.Sprintf("line %d", f.Line)
	if f.Column > 0 {
		pos += fmt.Sprintf(":%d", f.Column)
	}
	return fmt.Sprintf("%s: %s (%s): %s", pos, f.Rule, f.Severity, f.Message)
}

// maxSnippet bounds the length of a snippet, in characters.
const maxSnippet = 160

// source indexes a piece of code by line for positions and snippets.
type source struct {
	text  string
	lines []string // split on "\n"
	start []int    // byte offset of each line
}

func newSource(text string) *source {
	s := &source{text: text, lines: strings.Split(text, "\n")}
	off := 0
	for _, l := range s.lines {
		s.start = append(s.start, off)
		off += len(l) + 1
	}
	return s
}

// position converts a byte offset to a 1-based line and 1-based character column.
func (s *source) position(offset int) (line, col int) {
	offset = max(0, min(offset, len(s.text)))
	i, found := slices.BinarySearch(s.start, offset)
	if !found {
		i--
	}
	lineText := s.text[s.start[i]:offset]
	return i + 1, utf8.RuneCountInString(lineText) + 1
}

// snippet returns line (1-based), trimmed and shortened.
func (s *source) snippet(line int) string {
	if line < 1 || line > len(s.lines) {
		return ""
	}
	t := strings.TrimSpace(strings.TrimSuffix(s.lines[line-1], "\r"))
	if utf8.RuneCountInString(t) > maxSnippet {
		r := []rune(t)
		t = string(r[:maxSnippet-1]) + "…"
	}
	return t
}

// finding builds a finding of rule at line and column with the catalogue's severity.
func (s *source) finding(rule string, line, col int, msg string) Finding {
	r, ok := rulesByID[rule]
	if !ok {
		panic("policy: internal error: unknown rule " + rule)
	}
	return Finding{Rule: rule, Severity: r.Severity, Line: line, Column: col, Snippet: s.snippet(line), Message: msg}
}

// sortFindings orders findings by position, then rule, and drops duplicates.
// Path findings are kept once per rule and line: one line that builds a path
// out of pieces (open(os.path.join("/etc", name))) is one finding, not two.
func sortFindings(fs []Finding) []Finding {
	slices.SortStableFunc(fs, func(a, b Finding) int {
		return cmp.Or(cmp.Compare(a.Line, b.Line), cmp.Compare(a.Column, b.Column), cmp.Compare(b.Severity, a.Severity), strings.Compare(a.Rule, b.Rule), strings.Compare(a.Message, b.Message))
	})
	type key struct {
		rule      string
		line, col int
		msg       string
	}
	seen := make(map[key]bool)
	out := fs[:0]
	for _, f := range fs {
		k := key{f.Rule, f.Line, f.Column, f.Message}
		if ruleGroup(f.Rule) == "fs" {
			k = key{rule: f.Rule, line: f.Line}
		}
		if seen[k] {
			continue
		}
		seen[k] = true
		out = append(out, f)
	}
	return out
}
