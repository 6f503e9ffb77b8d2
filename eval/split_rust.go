package eval

import (
	_ "embed"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/coderun/coderun/sandbox"
)

// wireRust is the wire of Rust items' two programs (see splitItem): each
// program's module coderun_wire, in a file of its own.
//
//go:embed wire.rs
var wireRust string

// rustItem is a top-level item of a Rust program: its text's span, its
// kind (fn, enum, struct, type, const, static, impl, trait, use, mod, …:
// the keyword) and name (for an impl, its self type's).
type rustItem struct {
	start, end int
	kind, name string
}

var rustItemHead = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^(?s)(?:#\s*!?\s*\[.*?\]\s*)*(?:pub\s*(?:\([^)]*\))?\s+)?(?:(?:default|unsafe|async|extern(?:\s+"[^"]*")?)\s+)*(fn|enum|struct|union|type|const|static|trait|impl|use|mod|macro_rules!|extern)\s*(?:fn\s+)?(?:mut\s+)?([A-Za-z_]\w*)?`)
})

// rustItems splits code (comments, strings and characters blanked: see
// blankComments) into its top-level items: each ends at a ';' or a '}'
// that closes no bracket left open.
func rustItems(code string) []rustItem {
	var items []rustItem
	depth, start := 0, 0
	add := func(end int) {
		text := strings.TrimSpace(code[start:end])
		lead := start + strings.Index(code[start:end], text)
		if text != "" {
			it := rustItem{start: lead, end: end}
			if m := rustItemHead().FindStringSubmatch(text); m != nil {
				it.kind, it.name = m[1], m[2]
				if it.kind == "const" && strings.HasPrefix(strings.TrimSpace(text[strings.Index(text, "const")+5:]), "fn") {
					it.kind = "fn"
				}
				if it.kind == "impl" {
					it.name = rustImplSelf(text)
				}
			}
			items = append(items, it)
		}
		start = end
	}
	for i := 0; i < len(code); i++ {
		switch code[i] {
		case '{', '(', '[':
			depth++
		case ')', ']':
			depth--
		case '}':
			depth--
			if depth == 0 {
				end := i + 1
				if j := len(code[end:]) - len(strings.TrimLeft(code[end:], " \t\r\n")); end+j < len(code) && code[end+j] == ';' {
					end += j + 1
				}
				add(end)
				i = end - 1
			}
		case ';':
			if depth == 0 {
				add(i + 1)
			}
		}
	}
	add(len(code))
	return items
}

// rustImplSelf is the name of the type an impl block is for.
func rustImplSelf(text string) string {
	head, _, _ := strings.Cut(text, "{")
	head = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(head[strings.Index(head, "impl")+4:]), ""))
	if strings.HasPrefix(head, "<") {
		if end := matching(head, 0); end > 0 {
			head = head[end+1:]
		}
	}
	if _, after, ok := strings.Cut(head, " for "); ok {
		head = after
	}
	m := regexp.MustCompile(`[A-Za-z_]\w*`).FindString(head)
	return m
}

// matching is the index of the bracket that closes s[open] ('<', '(',
// '[' or '{'), or -1.
func matching(s string, open int) int {
	closer := map[byte]byte{'<': '>', '(': ')', '[': ']', '{': '}'}[s[open]]
	depth := 0
	for i := open; i < len(s); i++ {
		switch s[i] {
		case s[open]:
			depth++
		case closer:
			if depth--; depth == 0 {
				return i
			}
		}
	}
	return -1
}

var rustIdent = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z_]\w*$`) })

// rustSignature parses a Rust function head: "fn f<'a>(mut a: i32, s: &'a str) -> Vec<String>".
// Only lifetimes may be generic, and no parameter may be borrowed mutably
// (a change to it could not come back).
func rustSignature(head string) (*signature, error) {
	head = strings.TrimSpace(head)
	m := regexp.MustCompile(`^(?s)fn\s+([A-Za-z_]\w*)\s*`).FindStringSubmatch(head)
	if m == nil {
		return nil, fmt.Errorf("cannot read the function's declaration %q", head)
	}
	sig := &signature{name: m[1]}
	rest := head[len(m[0]):]
	if strings.HasPrefix(rest, "<") {
		end := matching(rest, 0)
		if end < 0 {
			return nil, fmt.Errorf("cannot read the generic parameters of %q", head)
		}
		for _, g := range splitTopLevel(rest[1:end], ',', "<>()") {
			if g = strings.TrimSpace(g); g != "" && !strings.HasPrefix(g, "'") {
				return nil, fmt.Errorf("%s is generic over %q, which cannot cross between processes", sig.name, g)
			}
		}
		rest = strings.TrimSpace(rest[end+1:])
	}
	if !strings.HasPrefix(rest, "(") {
		return nil, fmt.Errorf("cannot read the parameters of %q", head)
	}
	end := matching(rest, 0)
	if end < 0 {
		return nil, fmt.Errorf("cannot read the parameters of %q", head)
	}
	for _, p := range splitTopLevel(rest[1:end], ',', "<>()[]") {
		if p = strings.TrimSpace(p); p == "" {
			continue
		}
		colon := regexp.MustCompile(`[^:]:[^:]`).FindStringIndex(p)
		if colon == nil {
			return nil, fmt.Errorf("cannot pass the parameter %q of %s between processes", p, sig.name)
		}
		name := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(p[:colon[0]+1]), "mut "))
		typ := strings.TrimSpace(p[colon[0]+2:])
		if !rustIdent().MatchString(name) || name == "self" || name == "_" {
			return nil, fmt.Errorf("cannot pass the parameter %q of %s between processes", p, sig.name)
		}
		if err := rustCrossable(typ); err != nil {
			return nil, fmt.Errorf("cannot pass the parameter %q of %s between processes: %w", p, sig.name, err)
		}
		sig.params = append(sig.params, param{typ: typ, name: name})
	}
	rest = strings.TrimSpace(rest[end+1:])
	switch {
	case rest == "":
		sig.result = "()"
	case strings.HasPrefix(rest, "->"):
		sig.result = strings.TrimSpace(rest[2:])
	default:
		return nil, fmt.Errorf("cannot read the result of %q", head)
	}
	if regexp.MustCompile(`\bwhere\b`).MatchString(sig.result) {
		return nil, fmt.Errorf("%s has a where clause, which cannot cross between processes", sig.name)
	}
	if err := rustCrossable(sig.result); err != nil {
		return nil, fmt.Errorf("the result of %s cannot cross between processes: %w", sig.name, err)
	}
	return sig, nil
}

// rustCrossable refuses the types whose values cannot cross as data:
// mutable borrows, pointers, functions and closures, impl Trait.
func rustCrossable(typ string) error {
	for _, bad := range []*regexp.Regexp{regexp.MustCompile(`&\s*('\w+\s+)?mut\b`), regexp.MustCompile(`\*\s*(const|mut)\b`),
		regexp.MustCompile(`\b(impl|fn|Fn|FnMut|FnOnce)\b`)} {
		if m := bad.FindString(typ); m != "" {
			return fmt.Errorf("%q is no plain data", typ)
		}
	}
	return nil
}

// rustKnown are the names of types (and keywords in types) the wire
// knows; any other name in a crossing type is the program's own.
var rustKnown = map[string]bool{}

func init() {
	for _, n := range strings.Fields("i8 i16 i32 i64 i128 isize u8 u16 u32 u64 u128 usize f32 f64 bool char str String Vec VecDeque " +
		"HashMap HashSet BTreeMap BTreeSet Option Box dyn Any std collections any string vec option boxed Send Sync static") {
		rustKnown[n] = true
	}
}

var rustWord = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`'?\b[A-Za-z_]\w*\b`) })

// rustNames are the names a text uses (lifetimes excluded).
func rustNames(text string) []string {
	var names []string
	for _, w := range rustWord().FindAllString(text, -1) {
		if !strings.HasPrefix(w, "'") && !slices.Contains(names, w) {
			names = append(names, w)
		}
	}
	return names
}

// rustProgram is a program's text and its top-level items.
type rustProgram struct {
	code, blank string
	items       []rustItem
}

func newRustProgram(code string) *rustProgram {
	blank := blankComments(code, "//")
	return &rustProgram{code: code, blank: blank, items: rustItems(blank)}
}

func (p *rustProgram) text(it rustItem) string { return p.code[it.start:it.end] }

// find is the program's item of that name and one of kinds, if any.
func (p *rustProgram) find(name string, kinds ...string) (rustItem, bool) {
	for _, it := range p.items {
		if it.name == name && slices.Contains(kinds, it.kind) {
			return it, true
		}
	}
	return rustItem{}, false
}

var rustTypeKinds = []string{"enum", "struct", "union", "type"}

// crossing are the program's own types that values of types cross in:
// those named, and those their definitions name, transitively.
func (p *rustProgram) crossing(types []string) []string {
	var out []string
	var visit func(text string)
	visit = func(text string) {
		for _, n := range rustNames(text) {
			if rustKnown[n] || slices.Contains(out, n) {
				continue
			}
			if it, ok := p.find(n, rustTypeKinds...); ok {
				out = append(out, n)
				visit(p.blank[it.start:it.end])
			}
		}
	}
	for _, t := range types {
		visit(t)
	}
	return out
}

// rustWireImpls are the wire's Put and Get for the program's own types
// (enums and structs; type aliases need none), from their definitions in
// the program. A definition the wire cannot read is an error.
func (p *rustProgram) wireImpls(types []string) (string, error) {
	var b strings.Builder
	for _, n := range types {
		it, _ := p.find(n, rustTypeKinds...)
		if it.kind == "type" {
			continue
		}
		impl, err := rustWireImpl(p.blank[it.start:it.end], it.kind, n)
		if err != nil {
			return "", err
		}
		b.WriteString(impl)
	}
	return b.String(), nil
}

// rustFields is a variant's or a struct's fields: their names (named
// fields) or their number (a tuple's), and whether they are braced.
type rustFields struct {
	names  []string
	count  int
	braced bool
	tuple  bool
}

// parseRustFields reads "(A, B)", "{ a: A, pub b: B }" or "" (unit).
func parseRustFields(s string) (rustFields, error) {
	s = strings.TrimSpace(s)
	var f rustFields
	switch {
	case s == "" || strings.HasPrefix(s, "="):
	case strings.HasPrefix(s, "("):
		f.tuple = true
		for _, t := range splitTopLevel(s[1:len(s)-1], ',', "<>()[]{}") {
			if strings.TrimSpace(t) != "" {
				f.count++
			}
		}
	case strings.HasPrefix(s, "{"):
		f.braced = true
		for _, fd := range splitTopLevel(s[1:len(s)-1], ',', "<>()[]{}") {
			fd = strings.TrimSpace(regexp.MustCompile(`(?s)^(#\s*\[.*?\]\s*)*`).ReplaceAllString(strings.TrimSpace(fd), ""))
			if fd == "" {
				continue
			}
			m := regexp.MustCompile(`^(?:pub\s*(?:\([^)]*\))?\s+)?([A-Za-z_]\w*)\s*:`).FindStringSubmatch(fd)
			if m == nil {
				return f, fmt.Errorf("cannot read the field %q", fd)
			}
			f.names = append(f.names, m[1])
		}
	default:
		return f, fmt.Errorf("cannot read the fields %q", s)
	}
	return f, nil
}

// pattern and construct are a variant's or struct's pattern binding its
// fields (coderun_f0…) and the expression that reads them from the wire.
func (f rustFields) pattern(path string) string {
	switch {
	case f.braced:
		var ps []string
		for i, n := range f.names {
			ps = append(ps, fmt.Sprintf("%s: coderun_f%d", n, i))
		}
		return path + " { " + strings.Join(ps, ", ") + " }"
	case f.tuple:
		var ps []string
		for i := range f.count {
			ps = append(ps, fmt.Sprintf("coderun_f%d", i))
		}
		return path + "(" + strings.Join(ps, ", ") + ")"
	}
	return path
}

func (f rustFields) puts() string {
	var b strings.Builder
	if f.braced {
		for i, n := range f.names {
			fmt.Fprintf(&b, " o.name(%q); coderun_wire::Put::put(coderun_f%d, o);", n, i)
		}
	}
	for i := range f.count {
		fmt.Fprintf(&b, " coderun_wire::Put::put(coderun_f%d, o);", i)
	}
	return b.String()
}

func (f rustFields) construct(path string) string {
	switch {
	case f.braced:
		var ps []string
		for _, n := range f.names {
			ps = append(ps, fmt.Sprintf("%s: { i.field(%q); coderun_wire::Get::get(i) }", n, n))
		}
		return path + " { " + strings.Join(ps, ", ") + " }"
	case f.tuple:
		return path + "(" + strings.Repeat("coderun_wire::Get::get(i), ", f.count) + ")"
	}
	return path
}

// rustWireImpl is Put and Get for one enum or struct, from its
// definition (blanked).
func rustWireImpl(def, kind, name string) (string, error) {
	i := regexp.MustCompile(`\b` + kind + `\s+` + name + `\b`).FindStringIndex(def)
	if i == nil || kind == "union" {
		return "", fmt.Errorf("cannot read the definition of %s", name)
	}
	rest := strings.TrimSpace(def[i[1]:])
	var params []string
	if strings.HasPrefix(rest, "<") {
		end := matching(rest, 0)
		if end < 0 {
			return "", fmt.Errorf("cannot read the generic parameters of %s", name)
		}
		for _, g := range splitTopLevel(rest[1:end], ',', "<>()") {
			g, _, _ = strings.Cut(strings.TrimSpace(g), "=")
			if g = strings.TrimSpace(g); g == "" {
				continue
			}
			if strings.HasPrefix(g, "'") || strings.HasPrefix(g, "const ") {
				return "", fmt.Errorf("%s has the generic parameter %q, which the wire does not carry", name, g)
			}
			params = append(params, g)
		}
		rest = strings.TrimSpace(rest[end+1:])
	}
	if regexp.MustCompile(`^where\b`).MatchString(rest) {
		return "", fmt.Errorf("%s has a where clause, which the wire does not carry", name)
	}
	rest = strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), ";"))
	bounds := func(trait string) (string, string) {
		var ps, args []string
		for _, g := range params {
			n, b, ok := strings.Cut(g, ":")
			if ok {
				ps = append(ps, n+": "+strings.TrimSpace(b)+" + "+trait)
			} else {
				ps = append(ps, n+": "+trait)
			}
			args = append(args, strings.TrimSpace(n))
		}
		if len(ps) == 0 {
			return "", name
		}
		return "<" + strings.Join(ps, ", ") + ">", name + "<" + strings.Join(args, ", ") + ">"
	}
	pg, self := bounds("coderun_wire::Put")
	gg, _ := bounds("coderun_wire::Get")
	var put, get strings.Builder
	if kind == "struct" {
		f, err := parseRustFields(rest)
		if err != nil {
			return "", fmt.Errorf("%s: %w", name, err)
		}
		fmt.Fprintf(&put, "        let %s = self;%s\n", f.pattern(name), f.puts())
		fmt.Fprintf(&get, "        %s\n", f.construct(name))
	} else {
		if !strings.HasPrefix(rest, "{") || !strings.HasSuffix(rest, "}") {
			return "", fmt.Errorf("cannot read the variants of %s", name)
		}
		put.WriteString("        match self {\n")
		get.WriteString("        let v = i.name();\n        match v.as_str() {\n")
		for _, v := range splitTopLevel(rest[1:len(rest)-1], ',', "<>()[]{}") {
			v = strings.TrimSpace(regexp.MustCompile(`(?s)^(#\s*\[.*?\]\s*)*`).ReplaceAllString(strings.TrimSpace(v), ""))
			if v == "" {
				continue
			}
			m := regexp.MustCompile(`^[A-Za-z_]\w*`).FindString(v)
			if m == "" {
				return "", fmt.Errorf("cannot read the variant %q of %s", v, name)
			}
			f, err := parseRustFields(v[len(m):])
			if err != nil {
				return "", fmt.Errorf("%s::%s: %w", name, m, err)
			}
			path := name + "::" + m
			fmt.Fprintf(&put, "            %s => { o.name(%q);%s }\n", f.pattern(path), m, f.puts())
			fmt.Fprintf(&get, "            %q => %s,\n", m, f.construct(path))
		}
		put.WriteString("        }\n")
		fmt.Fprintf(&get, "            _ => i.bad(&format!(\"a %s of no variant named {:?}\", v)),\n        }\n", name)
	}
	return fmt.Sprintf("\n#[allow(unused_variables, non_shorthand_field_patterns)]\nimpl%s coderun_wire::Put for %s {\n    fn put(&self, o: &mut coderun_wire::Out) {\n%s    }\n}\n"+
		"#[allow(unused_variables)]\nimpl%s coderun_wire::Get for %s {\n    fn get(i: &mut coderun_wire::In) -> Self {\n%s    }\n}\n",
		pg, self, put.String(), gg, self, get.String()), nil
}

// rustRemote is a function of the solution's that the tests call: its
// head as the reference (or the declaration) spells it, and its signature.
type rustRemote struct {
	head string
	sig  *signature
}

// rustSplit is the split item of a Rust HumanEval-X solution. The tests
// call the declaration's function and, in some problems, other functions
// the reference solution defines (make_palindrome, encode_cyclic,
// decode_shift), which the solution must define too: all are the
// solution's, in U, and T has a stub of each that calls it over the wire,
// its head as the declaration or the reference spells it. The types the
// tests name that the reference defines (Rust/137's RtnType) are T's
// copy, from the reference, trusted as the tests are; a type the answers
// cross in is encoded by its definition in each program (by variant and
// field names, so a solution's type of other variants fails to decode).
//
// T is fn main(){}, the declaration up to its function's body, the stub
// bodies, the reference's types the tests use, the tests (under rustc's
// test harness) and the module coderun_wire; U is the declaration, the
// prompt, the solution (its own #[test] functions left out, so that it is
// no test binary), a main that serves the tests' calls, and the module.
func rustSplit(lead, reference, solution, tests string) (*splitItem, error) {
	head, _, brace, err := openBody(lead, "//", "fn")
	if err != nil {
		return nil, err
	}
	entry, err := rustSignature(head)
	if err != nil {
		return nil, err
	}
	remotes := []rustRemote{{sig: entry}}
	var ref *rustProgram
	var own []rustItem // the reference's items after the entry function
	if reference != "" {
		ref = newRustProgram(lead + reference)
		for _, it := range ref.items {
			if it.start > brace {
				own = append(own, it)
			}
		}
	}
	testNames := rustNames(blankComments(tests, "//"))
	for _, it := range own {
		if it.kind != "fn" || it.name == entry.name || !slices.Contains(testNames, it.name) {
			continue
		}
		text := ref.blank[it.start:it.end]
		b := strings.IndexByte(text, '{')
		if b < 0 {
			return nil, fmt.Errorf("the reference's function %s has no body", it.name)
		}
		h := strings.TrimSpace(text[:b])
		h = h[strings.Index(h, "fn"):]
		sig, err := rustSignature(strings.Join(strings.Fields(h), " "))
		if err != nil {
			return nil, err
		}
		remotes = append(remotes, rustRemote{head: ref.code[it.start : it.start+b], sig: sig})
	}

	// The types: those the tests and the remote functions' signatures
	// name, from the reference, with the types they name and their impls.
	var sigTypes []string
	for _, r := range remotes {
		for _, p := range r.sig.params {
			sigTypes = append(sigTypes, p.typ)
		}
		sigTypes = append(sigTypes, r.sig.result)
	}
	var types strings.Builder
	var crossing []string
	var tImpls string
	if ref != nil {
		trusted := &rustProgram{code: ref.code, blank: ref.blank, items: own}
		named := trusted.crossing(append(slices.Clone(sigTypes), strings.Join(testNames, " ")))
		for _, it := range own {
			if slices.Contains(rustTypeKinds, it.kind) && slices.Contains(named, it.name) ||
				it.kind == "impl" && slices.Contains(named, it.name) {
				types.WriteString("\n" + ref.code[it.start:it.end] + "\n")
			}
		}
		crossing = trusted.crossing(sigTypes)
		if tImpls, err = trusted.wireImpls(crossing); err != nil {
			return nil, err
		}
	}

	var t strings.Builder
	t.WriteString("fn main(){}\n")
	t.WriteString(lead[:brace+1])
	for i, r := range remotes {
		if i > 0 {
			t.WriteString("\n" + r.head + "{")
		}
		var args []string
		for _, p := range r.sig.params {
			args = append(args, "&"+p.name+" as &dyn coderun_wire::Put")
		}
		fmt.Fprintf(&t, "\n    coderun_wire::call(%d, %q, &[%s])\n}\n", i, r.sig.name, strings.Join(args, ", "))
	}
	t.WriteString(types.String())
	t.WriteString("\n" + tests + "\n\nmod coderun_wire;\n" + tImpls)

	body := lead + rustNoTests().ReplaceAllString(solution, "#[cfg(test)]")
	var u strings.Builder
	u.WriteString(body + "\n\nfn main() {\n    let mut coderun_w = coderun_wire::Serve::new();\n    while let Some(coderun_f) = coderun_w.next() {\n        match coderun_f {\n")
	for i, r := range remotes {
		var names []string
		fmt.Fprintf(&u, "            %d => {\n", i)
		for j := range r.sig.params {
			fmt.Fprintf(&u, "                let coderun_a%d = coderun_w.arg();\n", j)
			names = append(names, fmt.Sprintf("coderun_a%d", j))
		}
		fmt.Fprintf(&u, "                coderun_w.answer(move || %s(%s));\n            }\n", r.sig.name, strings.Join(names, ", "))
	}
	u.WriteString("            _ => coderun_wire::fail(\"the tests called a function the solution does not serve\"),\n        }\n    }\n}\n\nmod coderun_wire;\n")
	// The solution's own definitions of the types that cross: one the
	// wire cannot read gets no impl, and U does not compile, saying so.
	uProg := newRustProgram(body)
	for _, n := range uProg.crossing(sigTypes) {
		if impl, err := uProg.wireImpls([]string{n}); err == nil {
			u.WriteString(impl)
		}
	}
	wire := sandbox.File{Path: "coderun_wire.rs", Content: []byte(wireRust)}
	return &splitItem{
		tests:    splitProgram{files: []sandbox.File{{Path: "main.rs", Content: []byte(t.String())}, wire}, args: rustSplitArgs},
		solution: splitProgram{files: []sandbox.File{{Path: "main.rs", Content: []byte(u.String())}, wire}, args: rustSplitArgs},
	}, nil
}

// rustSplitArgs compile each of the two programs in one codegen unit:
// for programs this small, a quarter less CPU than rustc's 16 (problem 0's
// T and U: 0.8 -> 0.6 s each on the host), and no slower.
var rustSplitArgs = []string{"-C", "codegen-units=1"}

// rustNoTests finds a solution's #[test] attributes: U is no test binary.
var rustNoTests = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`#\s*\[\s*test\s*\]`) })
