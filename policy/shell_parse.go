package policy

import (
	"strconv"
	"strings"
)

// This file reads shell source (POSIX sh and the bash extensions models
// write) into simple commands. It is not a full shell grammar: it knows
// exactly what the checks in shell_check.go need: every simple command with
// its words, assignments and redirections, where it sits in a pipeline,
// which function body it belongs to, and the scripts nested inside it
// ($(...), `...`, <(...)). It never fails: malformed input is read as far
// as it goes and the problem is recorded, because bash runs a script line
// by line and the lines before a syntax error still run.

// segKind is the kind of one piece of a word.
type segKind int

const (
	segLit     segKind = iota // literal text, quotes removed
	segParam                  // $NAME, ${...}
	segCmdSub                 // $(...) or `...`
	segProcSub                // <(...) or >(...)
	segArith                  // $((...))
	segTilde                  // an unquoted leading ~ or ~user
)

// segment is one piece of a word.
type segment struct {
	kind    segKind
	text    string    // literal text; parameter name; ~user
	quoted  bool      // literal text came from quotes or an escape
	guarded bool      // ${X:?...}: expands to a non-empty value or fails
	deflt   *string   // ${X:-word}, ${X-word}, ${X:=word}: the default's text
	sub     *shScript // the nested script of a substitution
}

// shWord is one word of a command, with its position in the source.
type shWord struct {
	pos, end int // byte offsets in the source
	segs     []segment
}

// static returns the word's value if it has no expansions.
func (w shWord) static() (string, bool) {
	var b strings.Builder
	for _, s := range w.segs {
		if s.kind != segLit {
			return "", false
		}
		b.WriteString(s.text)
	}
	return b.String(), true
}

// literal is the unquoted literal text of a one-piece word, for reserved
// words and operators: `{` is reserved, `"{"` is not.
func (w shWord) literal() string {
	if len(w.segs) == 1 && w.segs[0].kind == segLit && !w.segs[0].quoted {
		return w.segs[0].text
	}
	return ""
}

// text renders the word for messages: expansions as $NAME, $(...), ~.
func (w shWord) text() string {
	var b strings.Builder
	for _, s := range w.segs {
		switch s.kind {
		case segLit, segTilde:
			b.WriteString(s.text)
		case segParam:
			b.WriteString("$" + s.text)
		case segCmdSub:
			b.WriteString("$(...)")
		case segProcSub:
			b.WriteString("<(...)")
		case segArith:
			b.WriteString("$((...))")
		}
	}
	return b.String()
}

// pathText is the word as a path: the text up to the first expansion, where
// that is (unknown, or -1 when the whole word is known), and whether it
// starts with a tilde expansion.
func (w shWord) pathText() (p string, unknown int) {
	var b strings.Builder
	for _, s := range w.segs {
		switch s.kind {
		case segLit, segTilde:
			b.WriteString(s.text)
		default:
			return b.String(), b.Len()
		}
	}
	return b.String(), -1
}

// minimal renders the word as if every parameter that may be empty were
// empty: the value `rm -rf $DIR/` has when DIR is unset. Substitutions and
// guarded parameters read as a non-empty placeholder.
func (w shWord) minimal() string {
	var b strings.Builder
	for _, s := range w.segs {
		switch s.kind {
		case segLit, segTilde:
			b.WriteString(s.text)
		case segParam:
			switch {
			case s.guarded:
				b.WriteString("x")
			case s.deflt != nil:
				b.WriteString(*s.deflt)
			}
		default:
			b.WriteString("x")
		}
	}
	return b.String()
}

// mayBeEmptyParam reports whether the word contains a parameter expansion
// that could be empty.
func (w shWord) mayBeEmptyParam() string {
	for _, s := range w.segs {
		if s.kind == segParam && !s.guarded {
			return s.text
		}
	}
	return ""
}

// subs returns the scripts nested in the word.
func (w shWord) subs() []*shScript {
	var out []*shScript
	for _, s := range w.segs {
		if s.sub != nil {
			out = append(out, s.sub)
		}
	}
	return out
}

// isParam reports whether the word is exactly one parameter expansion, with
// an optional literal suffix, such as $HOME or "${HOME}/".
func (w shWord) param() (name, rest string, ok bool) {
	if len(w.segs) == 0 || w.segs[0].kind != segParam {
		return "", "", false
	}
	for _, s := range w.segs[1:] {
		if s.kind != segLit {
			return "", "", false
		}
		rest += s.text
	}
	return w.segs[0].text, rest, true
}

// shRedir is one redirection.
type shRedir struct {
	pos     int
	fd      string // "" for the default
	op      string // > >> >| < <> << <<- <<< &> &>> >& <&
	target  shWord // the file, the here-string, or the here-document delimiter
	heredoc *heredoc
}

// output reports whether the redirection writes to its target.
func (r shRedir) output() bool {
	switch r.op {
	case ">", ">>", ">|", "&>", "&>>", "<>":
		return true
	case ">&":
		s, _ := r.target.static()
		return s != "-" && strings.Trim(s, "0123456789") != ""
	}
	return false
}

// heredoc is the body of a here-document.
type heredoc struct {
	delim   string
	strip   bool // <<-: leading tabs are removed
	body    string
	bodyPos int // byte offset of the body in the source
}

// pipeRef places a command in a pipeline: which one, and which stage of it.
type pipeRef struct{ pipe, stage int }

// shCommand is one simple command.
type shCommand struct {
	pos, end   int
	assigns    []shWord // NAME=value words before the command
	words      []shWord
	redirs     []*shRedir
	pipes      []pipeRef // one per enclosing group: the pipeline it is part of at that level
	background bool      // its pipeline ends with &
	fn         string    // the innermost function whose body holds it
	keyword    bool      // the header of for, select, case or [[ ]]: not a command
}

// shFunc is a function definition.
type shFunc struct {
	name string
	pos  int
}

// shError is a problem found while reading.
type shError struct {
	pos int
	msg string
}

// shScript is a parsed piece of shell.
type shScript struct {
	cmds  []*shCommand
	funcs []shFunc
	errs  []shError
}

// maxShellDepth bounds nesting of substitutions; deeper text is left unread.
const maxShellDepth = 64

// shParser reads one source. Nested $(...) are read by the same parser in
// place; backquotes and here-documents by a child parser whose positions
// are mapped back.
type shParser struct {
	src     string
	i       int
	pending []*shRedir // here-documents whose bodies start after the next newline
	pipeSeq *int
	errs    *[]shError
	depth   int
}

// parseShell reads a whole script.
func parseShell(src string) *shScript {
	seq := 0
	var errs []shError
	p := &shParser{src: src, pipeSeq: &seq, errs: &errs}
	sc := p.parseList(false)
	sc.errs = errs
	return sc
}

func (p *shParser) child(src string) *shParser {
	return &shParser{src: src, pipeSeq: p.pipeSeq, errs: new([]shError), depth: p.depth + 1}
}

func (p *shParser) fail(pos int, msg string) {
	*p.errs = append(*p.errs, shError{pos, msg})
}

func (p *shParser) newPipe() int {
	*p.pipeSeq++
	return *p.pipeSeq
}

func (p *shParser) peek(off int) byte {
	if p.i+off < len(p.src) {
		return p.src[p.i+off]
	}
	return 0
}

func (p *shParser) has(s string) bool { return strings.HasPrefix(p.src[p.i:], s) }

func isBlank(c byte) bool { return c == ' ' || c == '\t' || c == '\r' }

func isOpChar(c byte) bool { return strings.IndexByte(";&|()<>\n", c) >= 0 }

func isNameStart(c byte) bool { return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

func isNameChar(c byte) bool { return isNameStart(c) || c >= '0' && c <= '9' }

// skipBlanks skips spaces, tabs and line continuations.
func (p *shParser) skipBlanks() {
	for p.i < len(p.src) {
		switch {
		case isBlank(p.src[p.i]):
			p.i++
		case p.has("\\\n"):
			p.i += 2
		default:
			return
		}
	}
}

// shLevel is one open group: the script itself, { }, ( ), if/fi, loops, case.
type shLevel struct {
	closer      string // "}", ")", "fi", "done", "esac"; "" for the top
	fn          string // function name if this group is a function body
	pipe, stage int
	members     []*shCommand // commands of the current pipeline at this level
	isCase      bool
	casePattern bool // reading a case pattern, up to its )
}

// listState is the parser's state within one list (a script or a $(...)).
type listState struct {
	p           *shParser
	sc          *shScript
	levels      []*shLevel
	cur         *shCommand
	header      bool   // reading the words of a for/select/case header
	caseHeader  bool   // the header is case's: it ends at "in"
	dblBracket  bool   // inside [[ ]]
	pendingFunc string // a function name waiting for its body
	wantName    bool   // after the keyword "function"
	continued   bool   // after | && ||: a newline does not end the list
}

func (st *listState) top() *shLevel { return st.levels[len(st.levels)-1] }

func (st *listState) atCmd() bool {
	return len(st.cur.words) == 0 && !st.header && !st.dblBracket
}

// finish ends the current simple command.
func (st *listState) finish() {
	c := st.cur
	st.cur = &shCommand{pos: -1}
	st.header, st.caseHeader, st.dblBracket = false, false, false
	if len(c.words) == 0 && len(c.assigns) == 0 && len(c.redirs) == 0 {
		return
	}
	for _, w := range c.assigns {
		c.end = max(c.end, w.end)
	}
	for _, w := range c.words {
		c.end = max(c.end, w.end)
	}
	for _, r := range c.redirs {
		c.end = max(c.end, r.target.end)
	}
	for _, l := range st.levels {
		c.pipes = append(c.pipes, pipeRef{l.pipe, l.stage})
		l.members = append(l.members, c)
		if l.fn != "" {
			c.fn = l.fn
		}
	}
	st.sc.cmds = append(st.sc.cmds, c)
}

// separate ends a pipeline: ; & && || newline, or a then/do/else.
func (st *listState) separate() {
	st.finish()
	t := st.top()
	t.pipe, t.stage, t.members = st.p.newPipe(), 0, nil
}

func (st *listState) push(closer string) *shLevel {
	st.finish()
	l := &shLevel{closer: closer, pipe: st.p.newPipe(), fn: st.pendingFunc}
	st.pendingFunc = ""
	st.levels = append(st.levels, l)
	return l
}

func (st *listState) pop(closer string, pos int) {
	st.finish()
	for i := len(st.levels) - 1; i > 0; i-- {
		if st.levels[i].closer == closer {
			st.levels = st.levels[:i]
			return
		}
	}
	st.p.fail(pos, "unexpected "+closer)
}

func (st *listState) addWord(w shWord) {
	if st.cur.pos < 0 {
		st.cur.pos = w.pos
	}
	if st.wantName {
		st.wantName = false
		if name, ok := w.static(); ok {
			st.pendingFunc = name
			st.sc.funcs = append(st.sc.funcs, shFunc{name, w.pos})
			return
		}
	}
	if st.top().casePattern {
		if w.literal() == "esac" {
			st.top().casePattern = false
			st.pop("esac", w.pos)
		}
		return // a pattern, not a command
	}
	if st.dblBracket {
		st.cur.words = append(st.cur.words, w)
		if w.literal() == "]]" {
			st.dblBracket = false
		}
		return
	}
	if st.header {
		st.cur.words = append(st.cur.words, w)
		if st.caseHeader && w.literal() == "in" {
			st.finish()
			st.top().casePattern = true
		}
		return
	}
	if st.atCmd() {
		lit := w.literal()
		if st.pendingFunc != "" && lit != "{" && lit != "(" {
			st.pendingFunc = ""
		}
		switch lit {
		case "{":
			st.push("}")
			return
		case "}":
			st.pop("}", w.pos)
			return
		case "if":
			st.push("fi")
			return
		case "while", "until":
			st.push("done")
			return
		case "then", "do", "else", "elif":
			st.separate()
			return
		case "fi", "done", "esac":
			st.pop(lit, w.pos)
			return
		case "!", "time", "coproc":
			return
		case "function":
			st.wantName = true
			return
		case "for", "select":
			st.push("done")
			st.cur.pos = w.pos
			st.cur.keyword, st.header = true, true
			st.cur.words = append(st.cur.words, w)
			return
		case "case":
			st.push("esac").isCase = true
			st.cur.pos = w.pos
			st.cur.keyword, st.header, st.caseHeader = true, true, true
			st.cur.words = append(st.cur.words, w)
			return
		case "[[":
			st.cur.pos = w.pos
			st.cur.keyword, st.dblBracket = true, true
			st.cur.words = append(st.cur.words, w)
			return
		}
		if isAssignment(w) {
			st.cur.assigns = append(st.cur.assigns, w)
			return
		}
	}
	st.cur.words = append(st.cur.words, w)
}

// isAssignment reports whether w is NAME=value or NAME+=value.
func isAssignment(w shWord) bool {
	if len(w.segs) == 0 || w.segs[0].kind != segLit || w.segs[0].quoted {
		return false
	}
	t := w.segs[0].text
	i := 0
	for i < len(t) && isNameChar(t[i]) {
		i++
	}
	if i == 0 || !isNameStart(t[0]) {
		return false
	}
	return strings.HasPrefix(t[i:], "=") || strings.HasPrefix(t[i:], "+=")
}

// parseList reads commands until the end of the source or, in a
// substitution, the unmatched ")" that closes it (which it consumes).
func (p *shParser) parseList(inSub bool) *shScript {
	sc := &shScript{}
	st := &listState{p: p, sc: sc, levels: []*shLevel{{pipe: p.newPipe()}}, cur: &shCommand{pos: -1}}
	if p.depth > maxShellDepth {
		p.fail(p.i, "nesting too deep to read")
		p.i = len(p.src)
		return sc
	}
	for {
		p.skipBlanks()
		if p.i >= len(p.src) {
			st.finish()
			if inSub {
				p.fail(p.i, "unterminated substitution: missing )")
			}
			return sc
		}
		c := p.src[p.i]
		start := p.i
		if st.cur.pos < 0 && c != '\n' && c != ';' && c != '#' {
			st.cur.pos = p.i
		}
		if c != '\n' && c != '#' {
			st.continued = false
		}
		if st.dblBracket && strings.IndexByte("<>()!|&", c) >= 0 {
			j := p.i
			for j < len(p.src) && strings.IndexByte("<>()!|&=", p.src[j]) >= 0 {
				j++
			}
			st.addWord(shWord{pos: p.i, end: j, segs: []segment{{kind: segLit, text: p.src[p.i:j]}}})
			p.i = j
			continue
		}
		switch c {
		case '#':
			for p.i < len(p.src) && p.src[p.i] != '\n' {
				p.i++
			}
		case '\n':
			p.i++
			if !st.continued {
				st.separate()
			}
			p.readHeredocs()
		case ';':
			n := 1
			switch {
			case p.has(";;&"):
				n = 3
			case p.has(";;"), p.has(";&"):
				n = 2
			}
			p.i += n
			st.separate()
			if n > 1 && st.top().isCase {
				st.top().casePattern = true
			}
		case '&':
			switch {
			case p.has("&&"):
				p.i += 2
				st.separate()
				st.continued = true
			case p.has("&>"):
				p.readRedirect(st, "")
			default:
				p.i++
				st.finish()
				for _, m := range st.top().members {
					m.background = true
				}
				st.separate()
			}
		case '|':
			switch {
			case st.top().casePattern:
				p.i++
			case p.has("||"):
				p.i += 2
				st.separate()
				st.continued = true
			default:
				p.i++
				if p.peek(0) == '&' {
					p.i++
				}
				st.finish()
				st.top().stage++
				st.continued = true
			}
		case '(':
			switch {
			case st.top().casePattern:
				p.i++
			case p.has("((") && st.atCmd():
				p.skipArith(2)
			case len(st.cur.words) == 1 && len(st.cur.assigns) == 0 && p.emptyParens():
				name, _ := st.cur.words[0].static()
				st.sc.funcs = append(st.sc.funcs, shFunc{name, st.cur.words[0].pos})
				st.cur = &shCommand{pos: -1}
				st.pendingFunc = name
			case st.pendingFunc != "" && st.atCmd() && p.emptyParens():
				// function name () { ... }
			case st.atCmd():
				p.i++
				st.push(")")
			default:
				p.fail(p.i, "unexpected (")
				p.i++
			}
		case ')':
			p.i++
			switch {
			case st.top().casePattern:
				st.top().casePattern = false
			case st.top().closer == ")":
				st.pop(")", start)
			case inSub && len(st.levels) == 1:
				st.finish()
				return sc
			default:
				p.fail(start, "unexpected )")
			}
		case '<', '>':
			if p.peek(1) == '(' {
				st.addWord(p.readWord())
			} else {
				p.readRedirect(st, "")
			}
		default:
			if c >= '0' && c <= '9' {
				j := p.i
				for j < len(p.src) && p.src[j] >= '0' && p.src[j] <= '9' {
					j++
				}
				if j < len(p.src) && (p.src[j] == '<' || p.src[j] == '>') && (j+1 >= len(p.src) || p.src[j+1] != '(') {
					fd := p.src[p.i:j]
					p.i = j
					p.readRedirect(st, fd)
					continue
				}
			}
			st.addWord(p.readWord())
		}
		if p.i == start {
			p.i++ // never stall
		}
	}
}

// emptyParens consumes "( )" (blanks allowed) and reports whether it was there.
func (p *shParser) emptyParens() bool {
	j := p.i + 1
	for j < len(p.src) && isBlank(p.src[j]) {
		j++
	}
	if j < len(p.src) && p.src[j] == ')' {
		p.i = j + 1
		return true
	}
	return false
}

// skipArith skips an arithmetic expression after its n opening characters,
// up to the matching "))".
func (p *shParser) skipArith(n int) {
	start := p.i
	p.i += n
	depth := 2
	for p.i < len(p.src) {
		switch p.src[p.i] {
		case '(':
			depth++
		case ')':
			depth--
			if depth == 0 {
				p.i++
				return
			}
		}
		p.i++
	}
	p.fail(start, "unterminated arithmetic")
}

// readRedirect reads a redirection operator and its target.
func (p *shParser) readRedirect(st *listState, fd string) {
	r := &shRedir{pos: p.i, fd: fd}
	if st.cur.pos < 0 {
		st.cur.pos = p.i
	}
	for _, op := range []string{"<<<", "<<-", "&>>", "<<", "<&", "<>", ">>", ">|", ">&", "&>", "<", ">"} {
		if p.has(op) {
			r.op = op
			p.i += len(op)
			break
		}
	}
	p.skipBlanks()
	if p.i >= len(p.src) || isOpChar(p.src[p.i]) && !(p.src[p.i] == '<' || p.src[p.i] == '>') || p.src[p.i] == '\n' {
		p.fail(r.pos, "redirection without a target")
		return
	}
	r.target = p.readWord()
	if r.op == "<<" || r.op == "<<-" {
		d, _ := r.target.static()
		if d == "" {
			d = r.target.text()
		}
		r.heredoc = &heredoc{delim: d, strip: r.op == "<<-"}
		p.pending = append(p.pending, r)
	}
	st.cur.redirs = append(st.cur.redirs, r)
}

// readHeredocs reads the bodies of pending here-documents; p.i is at the
// start of the line after the command.
func (p *shParser) readHeredocs() {
	pending := p.pending
	p.pending = nil
	for _, r := range pending {
		h := r.heredoc
		h.bodyPos = p.i
		for {
			if p.i >= len(p.src) {
				h.body = p.src[h.bodyPos:]
				p.fail(r.pos, "here-document delimited by end of file (wanted "+strconv.Quote(h.delim)+")")
				break
			}
			end := strings.IndexByte(p.src[p.i:], '\n')
			line := p.src[p.i:]
			next := len(p.src)
			if end >= 0 {
				line = p.src[p.i : p.i+end]
				next = p.i + end + 1
			}
			check := strings.TrimSuffix(line, "\r")
			if h.strip {
				check = strings.TrimLeft(check, "\t")
			}
			if check == h.delim {
				h.body = p.src[h.bodyPos:p.i]
				p.i = next
				break
			}
			p.i = next
		}
	}
}

// wordBuilder collects the segments of a word.
type wordBuilder struct {
	segs   []segment
	lit    strings.Builder
	quoted bool
}

func (b *wordBuilder) addLit(s string, quoted bool) {
	if b.lit.Len() > 0 && b.quoted != quoted {
		b.flush()
	}
	b.quoted = quoted
	b.lit.WriteString(s)
}

func (b *wordBuilder) flush() {
	if b.lit.Len() > 0 {
		b.segs = append(b.segs, segment{kind: segLit, text: b.lit.String(), quoted: b.quoted})
		b.lit.Reset()
	}
}

func (b *wordBuilder) add(s segment) {
	b.flush()
	b.segs = append(b.segs, s)
}

// readWord reads one word starting at p.i.
func (p *shParser) readWord() shWord {
	w := shWord{pos: p.i}
	var b wordBuilder
	if p.peek(0) == '~' {
		j := p.i + 1
		for j < len(p.src) && (isNameChar(p.src[j]) || p.src[j] == '.' || p.src[j] == '-') {
			j++
		}
		if j >= len(p.src) || p.src[j] == '/' || isBlank(p.src[j]) || isOpChar(p.src[j]) {
			b.add(segment{kind: segTilde, text: p.src[p.i:j]})
			p.i = j
		}
	}
loop:
	for p.i < len(p.src) {
		c := p.src[p.i]
		switch {
		case c == '\\':
			switch {
			case p.i+1 >= len(p.src):
				p.i++
			case p.src[p.i+1] == '\n':
				p.i += 2
			default:
				b.addLit(p.src[p.i+1:p.i+2], true)
				p.i += 2
			}
		case c == '\'':
			end := strings.IndexByte(p.src[p.i+1:], '\'')
			if end < 0 {
				p.fail(p.i, "unterminated single quote")
				b.addLit(p.src[p.i+1:], true)
				p.i = len(p.src)
			} else {
				b.addLit(p.src[p.i+1:p.i+1+end], true)
				p.i += end + 2
			}
		case c == '"':
			p.i++
			p.readDouble(&b)
		case c == '$':
			p.readDollar(&b, false)
		case c == '`':
			p.readBackquote(&b)
		case (c == '<' || c == '>') && p.peek(1) == '(':
			pos := p.i
			p.i += 2
			sub := p.parseSub()
			b.add(segment{kind: segProcSub, text: p.src[pos:min(p.i, len(p.src))], sub: sub})
		case c == '(' && b.lit.Len() > 0 && !b.quoted && len(b.segs) == 0 && strings.HasSuffix(b.lit.String(), "="):
			// an array assignment: a=(x y z)
			start := p.i
			depth := 0
			for p.i < len(p.src) {
				ch := p.src[p.i]
				if ch == '(' {
					depth++
				} else if ch == ')' {
					depth--
					if depth == 0 {
						p.i++
						break
					}
				}
				p.i++
			}
			b.addLit(p.src[start:p.i], false)
		case isBlank(c) || isOpChar(c):
			break loop
		default:
			b.addLit(p.src[p.i:p.i+1], false)
			p.i++
		}
	}
	b.flush()
	w.segs = b.segs
	w.end = p.i
	return w
}

// readDouble reads the inside of "..." after the opening quote.
func (p *shParser) readDouble(b *wordBuilder) {
	start := p.i - 1
	for p.i < len(p.src) {
		c := p.src[p.i]
		switch c {
		case '"':
			p.i++
			if b.lit.Len() == 0 && len(b.segs) == 0 {
				// "" is an empty word, not no word
				b.segs = append(b.segs, segment{kind: segLit, quoted: true})
			}
			return
		case '\\':
			n := p.peek(1)
			switch n {
			case '\n':
				p.i += 2
			case '$', '`', '"', '\\':
				b.addLit(string(n), true)
				p.i += 2
			default:
				b.addLit("\\", true)
				p.i++
			}
		case '$':
			p.readDollar(b, true)
		case '`':
			p.readBackquote(b)
		default:
			b.addLit(p.src[p.i:p.i+1], true)
			p.i++
		}
	}
	p.fail(start, "unterminated double quote")
}

// parseSub reads a nested list up to its closing ")".
func (p *shParser) parseSub() *shScript {
	p.depth++
	defer func() { p.depth-- }()
	return p.parseList(true)
}

// readDollar reads an expansion starting at "$".
func (p *shParser) readDollar(b *wordBuilder, inDouble bool) {
	start := p.i
	n := p.peek(1)
	switch {
	case p.has("$(("):
		p.skipArith(3)
		b.add(segment{kind: segArith, text: p.src[start:p.i]})
	case n == '(':
		p.i += 2
		sub := p.parseSub()
		b.add(segment{kind: segCmdSub, text: p.src[start:min(p.i, len(p.src))], sub: sub})
	case n == '{':
		p.readBraced(b)
	case n == '\'' && !inDouble:
		p.i += 2
		b.addLit(p.readANSI(), true)
	case n == '"' && !inDouble:
		p.i += 2
		p.readDouble(b)
	case isNameStart(n):
		j := p.i + 1
		for j < len(p.src) && isNameChar(p.src[j]) {
			j++
		}
		b.add(segment{kind: segParam, text: p.src[p.i+1 : j]})
		p.i = j
	case n >= '0' && n <= '9' || n != 0 && strings.IndexByte("@*#?$!-", n) >= 0:
		b.add(segment{kind: segParam, text: string(n)})
		p.i += 2
	default:
		b.addLit("$", inDouble)
		p.i++
	}
}

// readBraced reads ${...}.
func (p *shParser) readBraced(b *wordBuilder) {
	start := p.i
	p.i += 2
	depth := 1
	var quote byte
	for p.i < len(p.src) && depth > 0 {
		c := p.src[p.i]
		switch {
		case quote != 0:
			if c == '\\' && quote == '"' {
				p.i++
			} else if c == quote {
				quote = 0
			}
		case c == '\\':
			p.i++
		case c == '\'' || c == '"':
			quote = c
		case c == '{':
			depth++
		case c == '}':
			depth--
		}
		p.i++
	}
	if depth > 0 {
		p.fail(start, "unterminated ${")
		b.add(segment{kind: segParam, text: p.src[start+2:]})
		return
	}
	inner := p.src[start+2 : p.i-1]
	s := segment{kind: segParam}
	j := 0
	if strings.HasPrefix(inner, "#") || strings.HasPrefix(inner, "!") {
		s.text = inner // a length or an indirection: may well be empty
		b.add(s)
		return
	}
	for j < len(inner) && isNameChar(inner[j]) {
		j++
	}
	if j == 0 && len(inner) > 0 {
		j = 1 // a special parameter: ${@}, ${?}
	}
	s.text = inner[:j]
	rest := inner[j:]
	switch {
	case strings.HasPrefix(rest, ":?"), strings.HasPrefix(rest, "?"):
		s.guarded = true
	case strings.HasPrefix(rest, ":-"), strings.HasPrefix(rest, ":="):
		d := unquoteSimple(rest[2:])
		s.deflt = &d
	case strings.HasPrefix(rest, "-"), strings.HasPrefix(rest, "="):
		d := unquoteSimple(rest[1:])
		s.deflt = &d
	}
	b.add(s)
}

// unquoteSimple removes the quotes of a default value like '/' or "/tmp".
func unquoteSimple(s string) string {
	if len(s) >= 2 && (s[0] == '\'' || s[0] == '"') && s[len(s)-1] == s[0] {
		return s[1 : len(s)-1]
	}
	return s
}

// readANSI reads the inside of $'...' after the opening quote and decodes it.
func (p *shParser) readANSI() string {
	start := p.i - 2
	var b strings.Builder
	for p.i < len(p.src) {
		c := p.src[p.i]
		if c == '\'' {
			p.i++
			return b.String()
		}
		if c != '\\' || p.i+1 >= len(p.src) {
			b.WriteByte(c)
			p.i++
			continue
		}
		n := p.src[p.i+1]
		p.i += 2
		switch n {
		case 'n':
			b.WriteByte('\n')
		case 't':
			b.WriteByte('\t')
		case 'r':
			b.WriteByte('\r')
		case 'a':
			b.WriteByte('\a')
		case 'b':
			b.WriteByte('\b')
		case 'e', 'E':
			b.WriteByte(0x1b)
		case 'f':
			b.WriteByte('\f')
		case 'v':
			b.WriteByte('\v')
		case 'x':
			j := p.i
			for j < len(p.src) && j < p.i+2 && strings.IndexByte("0123456789abcdefABCDEF", p.src[j]) >= 0 {
				j++
			}
			if v, err := strconv.ParseUint(p.src[p.i:j], 16, 8); err == nil {
				b.WriteByte(byte(v))
			}
			p.i = j
		case '0', '1', '2', '3', '4', '5', '6', '7':
			j := p.i - 1
			for j < len(p.src) && j < p.i+2 && p.src[j] >= '0' && p.src[j] <= '7' {
				j++
			}
			if v, err := strconv.ParseUint(p.src[p.i-1:j], 8, 8); err == nil {
				b.WriteByte(byte(v))
			}
			p.i = j
		default:
			b.WriteByte(n) // \\ \' \" and unknown escapes
		}
	}
	p.fail(start, "unterminated $'")
	return b.String()
}

// readBackquote reads `...`, the old form of $(...).
func (p *shParser) readBackquote(b *wordBuilder) {
	start := p.i
	p.i++
	var inner strings.Builder
	closed := false
	for p.i < len(p.src) {
		c := p.src[p.i]
		if c == '`' {
			p.i++
			closed = true
			break
		}
		if c == '\\' && p.i+1 < len(p.src) && strings.IndexByte("$`\\", p.src[p.i+1]) >= 0 {
			inner.WriteByte(p.src[p.i+1])
			p.i += 2
			continue
		}
		inner.WriteByte(c)
		p.i++
	}
	if !closed {
		p.fail(start, "unterminated `")
	}
	cp := p.child(inner.String())
	sub := cp.parseList(false)
	for _, e := range *cp.errs {
		p.fail(start, e.msg)
	}
	remapScript(sub, func(int) int { return start })
	b.add(segment{kind: segCmdSub, text: p.src[start:p.i], sub: sub})
}

// parseAt reads src, a piece of the outer source starting at byte offset
// base (a here-document body), with positions in the outer source.
func parseAt(src string, base int) *shScript {
	sc := parseShell(src)
	remapScript(sc, func(pos int) int { return pos + base })
	return sc
}

// remapScript rewrites every position in sc with f.
func remapScript(sc *shScript, f func(int) int) {
	if sc == nil {
		return
	}
	word := func(w *shWord) {
		w.pos, w.end = f(w.pos), f(w.end)
		for i := range w.segs {
			remapScript(w.segs[i].sub, f)
		}
	}
	for _, c := range sc.cmds {
		c.pos, c.end = f(c.pos), f(c.end)
		for i := range c.assigns {
			word(&c.assigns[i])
		}
		for i := range c.words {
			word(&c.words[i])
		}
		for _, r := range c.redirs {
			r.pos = f(r.pos)
			word(&r.target)
			if r.heredoc != nil {
				r.heredoc.bodyPos = f(r.heredoc.bodyPos)
			}
		}
	}
	for i := range sc.funcs {
		sc.funcs[i].pos = f(sc.funcs[i].pos)
	}
	for i := range sc.errs {
		sc.errs[i].pos = f(sc.errs[i].pos)
	}
}
