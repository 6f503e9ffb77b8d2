package policy

import (
	"reflect"
	"strings"
	"testing"
)

// words renders each command of a script as its words' text, joined by |,
// after the commands nested in its words.
func words(sc *shScript) []string {
	var out []string
	for _, c := range sc.cmds {
		for _, w := range append(append([]shWord{}, c.assigns...), c.words...) {
			for _, sub := range w.subs() {
				out = append(out, words(sub)...)
			}
		}
		var ws []string
		for _, w := range c.assigns {
			ws = append(ws, w.text())
		}
		for _, w := range c.words {
			ws = append(ws, w.text())
		}
		for _, r := range c.redirs {
			ws = append(ws, r.fd+r.op+r.target.text())
		}
		out = append(out, strings.Join(ws, "|"))
	}
	return out
}

func TestParseShellWords(t *testing.T) {
	tests := []struct {
		src  string
		want []string
	}{
		{"echo a b", []string{"echo|a|b"}},
		{"echo 'a b' \"c d\" e\\ f", []string{"echo|a b|c d|e f"}},
		{`echo "a \"q\" \$x \\ \z"`, []string{`echo|a "q" $x \ \z`}},
		{"echo a'b'\"c\"d", []string{"echo|abcd"}},
		{"echo $'a\\tb\\x41\\101\\''", []string{"echo|a\tbAA'"}},
		{"echo $HOME ${X} ${Y:-d} $1 $@ $?", []string{"echo|$HOME|$X|$Y|$1|$@|$?"}},
		{"a; b && c || d & e\nf", []string{"a", "b", "c", "d", "e", "f"}},
		{"a | b |& c", []string{"a", "b", "c"}},
		{"ls \\\n -l", []string{"ls|-l"}},
		{"echo a # comment ; rm x\necho b", []string{"echo|a", "echo|b"}},
		{"echo a#b", []string{"echo|a#b"}},
		{"x=1 y=2 cmd arg", []string{"x=1|y=2|cmd|arg"}},
		{"x=(1 2 3)", []string{"x=(1 2 3)"}},
		{"cmd > out 2>&1 < in >> log &> all", []string{"cmd|>out|2>&1|<in|>>log|&>all"}},
		{"echo $(date) `whoami` $((1+2))", []string{"date", "whoami", "echo|$(...)|$(...)|$((...))"}},
		{"diff <(a) >(b)", []string{"a", "b", "diff|<(...)|<(...)"}},
		{"if a; then b; elif c; then d; else e; fi", []string{"a", "b", "c", "d", "e"}},
		{"while a; do b; done; until c; do d; done", []string{"a", "b", "c", "d"}},
		{"for x in 1 2; do b; done", []string{"for|x|in|1|2", "b"}},
		{"case $x in a|b) c;; (d) e;; *) f;; esac; g", []string{"case|$x|in", "c", "e", "f", "g"}},
		{"{ a; b; } > out", []string{"a", "b", ">out"}},
		{"(a; b) | c", []string{"a", "b", "c"}},
		{"f() { a; }; f", []string{"a", "f"}},
		{"function g { a; }", []string{"a"}},
		{"[[ a < b && -f c ]] && d", []string{"[[|a|<|b|&&|-f|c|]]", "d"}},
		{"(( i++ )); echo", []string{"echo"}},
		{"! a", []string{"a"}},
		{"time a", []string{"a"}},
		{"cat <<EOF\nhello $x\nEOF\necho after", []string{"cat|<<EOF", "echo|after"}},
		{"cat <<-'E' | sort\n\tb\n\ta\n\tE\necho after", []string{"cat|<<-E", "sort", "echo|after"}},
		{"cat <<A <<B\n1\nA\n2\nB\nz", []string{"cat|<<A|<<B", "z"}},
		{"x=$(cat <<EOF\n)\nEOF\n)\necho", []string{"cat|<<EOF", "x=$(...)", "echo"}},
		{"echo ~ ~/x ~user/y '~'", []string{"echo|~|~/x|~user/y|~"}},
		{"echo \"$(echo \"in)side\")\"", []string{"echo|in)side", "echo|$(...)"}},
		{"echo $(case x in x) echo y;; esac)", []string{"case|x|in", "echo|y", "echo|$(...)"}},
		{"a\r\nb\r\n", []string{"a", "b"}},
	}
	for _, tt := range tests {
		sc := parseShell(tt.src)
		if got := words(sc); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("parseShell(%q):\n got %q\nwant %q", tt.src, got, tt.want)
		}
		if len(sc.errs) > 0 {
			t.Errorf("parseShell(%q): unexpected errors %v", tt.src, sc.errs)
		}
	}
}

func TestParseShellErrors(t *testing.T) {
	for _, src := range []string{
		`echo "open`,
		`echo 'open`,
		`echo $(open`,
		"echo `open",
		"cat <<EOF\nno end",
		"echo ${open",
		"a )",
		"fi",
		"echo $((1 + 2",
	} {
		sc := parseShell(src)
		if len(sc.errs) == 0 {
			t.Errorf("parseShell(%q): want an error", src)
		}
	}
}

func TestParseShellStructure(t *testing.T) {
	sc := parseShell("curl x | tee f | sh; a & b\n:(){ :|:& };:")
	byName := map[string][]*shCommand{}
	for _, c := range sc.cmds {
		n := commandName(c.words[0])
		byName[n] = append(byName[n], c)
	}
	curl, tee, sh := byName["curl"][0], byName["tee"][0], byName["sh"][0]
	if curl.pipes[0].pipe != sh.pipes[0].pipe || curl.pipes[0].stage != 0 || tee.pipes[0].stage != 1 || sh.pipes[0].stage != 2 {
		t.Errorf("pipeline stages: curl %v tee %v sh %v", curl.pipes, tee.pipes, sh.pipes)
	}
	multi := parseShell("curl x |\n  # comment\n  sh &&\n\n  echo done")
	if len(multi.cmds) != 3 || multi.cmds[0].pipes[0] != (pipeRef{multi.cmds[1].pipes[0].pipe, 0}) || multi.cmds[1].pipes[0].stage != 1 {
		t.Errorf("a newline after | continues the pipeline: %q %+v", words(multi), multi.cmds)
	}
	if !byName["a"][0].background || byName["b"][0].background {
		t.Error("a & b: a is in the background, b is not")
	}
	if len(sc.funcs) != 1 || sc.funcs[0].name != ":" {
		t.Fatalf("funcs = %+v", sc.funcs)
	}
	colons := byName[":"]
	if len(colons) != 3 || colons[0].fn != ":" || colons[1].fn != ":" || colons[2].fn != "" {
		t.Errorf("the body of : holds two calls, the third call is outside it: %+v", colons)
	}
	if !colons[0].background || !colons[1].background || colons[2].background {
		t.Error(":|:& runs in the background")
	}
}

func TestParseShellPositions(t *testing.T) {
	src := "echo hi\n  rm -rf \\\n   /tmp/x \"$(ls /etc)\"\ncat <<E\nbody\nE\n"
	sc := parseShell(src)
	s := newSource(src)
	var rm, ls *shCommand
	for _, c := range sc.cmds {
		if commandName(c.words[0]) == "rm" {
			rm = c
		}
	}
	ls = rm.words[3].subs()[0].cmds[0]
	if l, c := s.position(rm.pos); l != 2 || c != 3 {
		t.Errorf("rm at %d:%d, want 2:3", l, c)
	}
	if l, c := s.position(rm.words[2].pos); l != 3 || c != 4 {
		t.Errorf("/tmp/x at %d:%d, want 3:4", l, c)
	}
	if l, c := s.position(ls.words[1].pos); l != 3 || c != 17 {
		t.Errorf("/etc at %d:%d, want 3:17", l, c)
	}
	var cat *shCommand
	for _, c := range sc.cmds {
		if commandName(c.words[0]) == "cat" {
			cat = c
		}
	}
	h := cat.redirs[0].heredoc
	if h.body != "body\n" {
		t.Errorf("heredoc body %q", h.body)
	}
	if l, c := s.position(h.bodyPos); l != 5 || c != 1 {
		t.Errorf("heredoc body at %d:%d, want 5:1", l, c)
	}
}

func TestWordForms(t *testing.T) {
	w := parseShell(`x "$DIR"/* ${A:?}/b ${B:-/} ~/.ssh`).cmds[0].words
	if got := w[1].minimal(); got != "/*" {
		t.Errorf(`minimal("$DIR"/*) = %q`, got)
	}
	if got := w[2].minimal(); got != "x/b" {
		t.Errorf(`minimal(${A:?}/b) = %q`, got)
	}
	if got := w[3].minimal(); got != "/" {
		t.Errorf(`minimal(${B:-/}) = %q`, got)
	}
	if p, unknown := w[4].pathText(); p != "~/.ssh" || unknown != -1 {
		t.Errorf("pathText(~/.ssh) = %q, %d", p, unknown)
	}
	if p, unknown := w[1].pathText(); p != "" || unknown != 0 {
		t.Errorf(`pathText("$DIR"/*) = %q, %d`, p, unknown)
	}
}

func TestParseShellNeverHangs(t *testing.T) {
	// Odd input must terminate and not panic.
	for _, src := range []string{
		"(((((", ")))))", "{{{{", "}}}}", "$($($($(", "``````", "<<<<<<", ">>>>>", "&&&&", ";;;;",
		"case", "case x in", "for", "function", "f()", "f() {", "[[", "]]", "$'\\", "\\",
		strings.Repeat("$(", 200), strings.Repeat("\"$(", 100), "echo ${a:-${b:-${c}}}",
	} {
		parseShell(src)
	}
}
