package policy

import (
	"reflect"
	"strings"
	"testing"
	"time"
)

// walkShell calls fn for every command of sc and of the scripts nested in
// its words, with nested set for commands of nested scripts.
func walkShell(sc *shScript, nested bool, fn func(c *shCommand, nested bool)) {
	for _, c := range sc.cmds {
		fn(c, nested)
		for _, ws := range [][]shWord{c.assigns, c.words} {
			for _, w := range ws {
				for _, sub := range w.subs() {
					walkShell(sub, true, fn)
				}
			}
		}
		for _, r := range c.redirs {
			for _, sub := range r.target.subs() {
				walkShell(sub, true, fn)
			}
		}
	}
}

// FuzzParseShell feeds the shell tokenizer and the shell rules arbitrary
// text. The parser never fails, so the properties are about what it gives
// back: it ends (in bounded time), every position lies in the source, a
// plain word is the very text of the source at its position, parsing is
// deterministic, and every finding points at a line of the source.
func FuzzParseShell(f *testing.F) {
	for _, s := range []string{
		"echo a b", "echo 'a b' \"c d\" e\\ f", `echo "a \"q\" \$x \\ \z"`, "echo $'a\\tb\\x41\\101\\''",
		"echo $HOME ${X} ${Y:-d} $1 $@ $?", "a; b && c || d & e\nf", "a | b |& c", "ls \\\n -l",
		"echo a # comment ; rm x\necho b", "x=1 y=2 cmd arg", "x=(1 2 3)", "cmd > out 2>&1 < in >> log &> all",
		"echo $(date) `whoami` $((1+2))", "diff <(a) >(b)", "if a; then b; elif c; then d; else e; fi",
		"for x in 1 2; do b; done", "case $x in a|b) c;; (d) e;; *) f;; esac; g", "{ a; b; } > out",
		"f() { a; }; f", "[[ a < b && -f c ]] && d", "cat <<EOF\nhello $x\nEOF\necho after",
		"cat <<-'E' | sort\n\tb\n\ta\n\tE\necho after", "x=$(cat <<EOF\n)\nEOF\n)\necho",
		"echo \"$(echo \"in)side\")\"", "a\r\nb\r\n", "curl x | tee f | sh; a & b\n:(){ :|:& };:",
		"rm -rf / ~ \"$HOME\"/*", "python3 -c 'import os; os.system(\"rm -rf /\")'", "bash -c \"$x\"",
		"base64 -d <<< aGk= | sh", "echo `echo \\`ls\\``", "cat <<A <<B\n1\nA\n2\nB\nz",
		"(((((", "$($($($(", "``````", "<<<<<<", "case x in", "f() {", "$'\\", "echo ${a:-${b:-${c}}}",
		"echo {a,b}{c,d} ~user/x", "eval \"$(curl -s x)\"", "sudo env A=1 nohup rm -rf /etc &",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		start := time.Now()
		sc := parseShell(src)
		if d := time.Since(start); d > 5*time.Second {
			t.Fatalf("parsing %d bytes took %v", len(src), d)
		}
		in := func(what string, pos int) {
			if pos < 0 || pos > len(src) {
				t.Fatalf("%s at %d, outside the source of %d bytes", what, pos, len(src))
			}
		}
		for _, e := range sc.errs {
			in("error "+e.msg, e.pos)
		}
		for _, fn := range sc.funcs {
			in("function "+fn.name, fn.pos)
		}
		walkShell(sc, false, func(c *shCommand, nested bool) {
			in("command", c.pos)
			in("command end", c.end)
			for _, ws := range [][]shWord{c.assigns, c.words} {
				for _, w := range ws {
					in("word", w.pos)
					in("word end", w.end)
					if w.pos > w.end {
						t.Fatalf("word %q from %d to %d", w.text(), w.pos, w.end)
					}
					if nested {
						continue // backquotes' and here-documents' words are placed at the substitution
					}
					raw := src[w.pos:w.end]
					if plainWord(w) && !strings.ContainsAny(raw, "\\'\"") && w.text() != raw {
						t.Fatalf("plain word %q is %q in the source at %d", w.text(), raw, w.pos)
					}
				}
			}
			for _, r := range c.redirs {
				in("redirection", r.pos)
				in("redirection target", r.target.pos)
				if h := r.heredoc; h != nil {
					in("here-document", h.bodyPos)
					if !nested && !h.strip && h.body != "" && !strings.HasPrefix(src[min(h.bodyPos, len(src)):], h.body) {
						t.Fatalf("here-document body %q is not the source at %d", h.body, h.bodyPos)
					}
				}
			}
		})
		if again := parseShell(src); !reflect.DeepEqual(words(again), words(sc)) || len(again.errs) != len(sc.errs) {
			t.Fatalf("two parses differ: %q, then %q", words(sc), words(again))
		}
		// The shell rules read what the parser gives: every finding is on
		// a line of the source.
		source := newSource(src)
		res := &shResults{}
		newShChecker(source, newWorkspace(nil), res).check(sc)
		for _, fd := range res.findings {
			if fd.line < 1 || fd.line > len(source.lines) {
				t.Fatalf("finding %s %q on line %d of %d", fd.rule, fd.msg, fd.line, len(source.lines))
			}
			if _, ok := rulesByID[fd.rule]; !ok {
				t.Fatalf("finding of unknown rule %q", fd.rule)
			}
		}
	})
}

// plainWord reports whether w is unquoted literal text only.
func plainWord(w shWord) bool {
	for _, s := range w.segs {
		if s.kind != segLit || s.quoted {
			return false
		}
	}
	return len(w.segs) > 0
}
