package eval

import (
	_ "embed"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"

	"github.com/coderun/coderun/sandbox"
)

// wireCPP is the wire of C++ items' two programs (see splitItem).
//
//go:embed wire.hpp
var wireCPP string

// signature is an entry function's declaration: its name, its result's
// type and its parameters' types and names, as the language spells them.
type signature struct {
	name   string
	result string
	params []param
}

type param struct{ typ, name string }

// openBody finds where a HumanEval-X prompt opens its entry function's
// body: the last '{' that the prompt leaves open (outside comments,
// strings and characters), and the text between it and the statement or
// block before it (the function's head, which starts at start), or, when
// keyword is set, the last keyword before it (Go's func, whose head may
// hold braces).
func openBody(prompt, lineComment, keyword string) (head string, start, brace int, err error) {
	code := blankComments(prompt, lineComment)
	var open []int
	for i := 0; i < len(code); i++ {
		switch code[i] {
		case '{':
			open = append(open, i)
		case '}':
			if len(open) > 0 {
				open = open[:len(open)-1]
			}
		}
	}
	if len(open) == 0 {
		return "", 0, 0, errors.New("the prompt opens no function body")
	}
	brace = open[len(open)-1]
	start = strings.LastIndexAny(code[:brace], ";{}") + 1
	if keyword != "" {
		// A head that may hold braces (Go's interface{}) starts at its keyword.
		ms := regexp.MustCompile(`\b`+keyword+`\b`).FindAllStringIndex(code[:brace], -1)
		if len(ms) == 0 {
			return "", 0, 0, fmt.Errorf("the prompt's entry function has no %q", keyword)
		}
		start = ms[len(ms)-1][0]
	}
	// Preprocessor lines (C++) and attributes are not part of the head.
	var lines []string
	for _, l := range strings.Split(code[start:brace], "\n") {
		if t := strings.TrimSpace(l); t != "" && !strings.HasPrefix(t, "#") {
			lines = append(lines, t)
		}
	}
	return strings.Join(lines, " "), start, brace, nil
}

// blankComments is code with its comments, strings and character literals
// replaced by spaces (newlines kept), so that offsets stay the same.
func blankComments(code, lineComment string) string {
	b := []byte(code)
	for i := 0; i < len(b); {
		switch {
		case strings.HasPrefix(code[i:], lineComment):
			for ; i < len(b) && b[i] != '\n'; i++ {
				b[i] = ' '
			}
		case strings.HasPrefix(code[i:], "/*"):
			end := strings.Index(code[i+2:], "*/")
			stop := len(b)
			if end >= 0 {
				stop = i + 2 + end + 2
			}
			for ; i < stop; i++ {
				if b[i] != '\n' {
					b[i] = ' '
				}
			}
		case b[i] == '"' || b[i] == '\'' || b[i] == '`':
			q := b[i]
			j := i + 1
			for ; j < len(b) && b[j] != q && (q == '`' || b[j] != '\n'); j++ {
				if b[j] == '\\' && q != '`' {
					j++
				}
			}
			if q == '\'' && j-i > 4 {
				// Not a character: Rust's lifetimes ('a) and labels.
				i++
				continue
			}
			for k := i; k <= j && k < len(b); k++ {
				if b[k] != '\n' {
					b[k] = ' '
				}
			}
			i = j + 1
		default:
			i++
		}
	}
	return string(b)
}

// splitTopLevel splits s at sep where no bracket of brackets is open.
func splitTopLevel(s string, sep byte, brackets string) []string {
	var parts []string
	depth, last := 0, 0
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case strings.IndexByte(brackets, c) >= 0 && strings.IndexByte(brackets, c)%2 == 0:
			depth++
		case strings.IndexByte(brackets, c) >= 0:
			depth--
		case c == sep && depth == 0:
			parts = append(parts, s[last:i])
			last = i + 1
		}
	}
	if rest := strings.TrimSpace(s[last:]); rest != "" || len(parts) > 0 {
		parts = append(parts, s[last:])
	}
	return parts
}

var cppHead = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^(?s)(.*?)\b([A-Za-z_]\w*)\s*\((.*)\)\s*$`) })
var cppParam = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^(?s)(.*?)\b([A-Za-z_]\w*)$`) })

// cppSignature parses a C++ function head: "vector<int> f(vector<int>l, int t)".
func cppSignature(head string) (*signature, error) {
	m := cppHead().FindStringSubmatch(head)
	if m == nil || strings.TrimSpace(m[1]) == "" {
		return nil, fmt.Errorf("cannot read the entry function's declaration %q", head)
	}
	sig := &signature{name: m[2], result: strings.TrimSpace(m[1])}
	for _, p := range splitTopLevel(m[3], ',', "<>()") {
		p = strings.TrimSpace(p)
		if p == "" || p == "void" {
			continue
		}
		pm := cppParam().FindStringSubmatch(p)
		if pm == nil || strings.TrimSpace(pm[1]) == "" || strings.ContainsAny(pm[1], "*&=") {
			return nil, fmt.Errorf("cannot pass the parameter %q of %s between processes", p, sig.name)
		}
		sig.params = append(sig.params, param{typ: strings.TrimSpace(pm[1]), name: pm[2]})
	}
	return sig, nil
}

// cppSplit is the split item of a C++ HumanEval-X solution: T is the
// prompt up to its entry function's body, a stub body, and the tests; U is
// the prompt, the solution and a main that serves the tests' calls. Both
// include the wire (coderun_wire.hpp) just before the entry function's
// head, after the prompt's includes.
func cppSplit(prompt, solution, tests string, args []string) (*splitItem, error) {
	head, start, brace, err := openBody(prompt, "//", "")
	if err != nil {
		return nil, err
	}
	sig, err := cppSignature(head)
	if err != nil {
		return nil, err
	}
	// The wire, a header of its own, included after the prompt's includes
	// (so that it knows which containers they declared): the program's
	// lines keep their numbers but for the three this adds.
	include := func(peer string) string {
		boost := ""
		if strings.Contains(prompt, "boost/any") {
			boost = "#define CODERUN_WIRE_BOOST 1\n"
		}
		return "\n" + boost + "#define CODERUN_WIRE_PEER \"" + peer + "\"\n#include \"coderun_wire.hpp\"\n"
	}
	var stub strings.Builder
	stub.WriteString("\n")
	for _, p := range sig.params {
		fmt.Fprintf(&stub, "    coderun_wire::put(coderun_wire::wire().out, %s);\n", p.name)
	}
	fmt.Fprintf(&stub, "    return coderun_wire::result<%s>();\n}\n", sig.result)
	t := prompt[:start] + include("the solution's process (during the tests)") + prompt[start:brace+1] + stub.String() + tests

	var serve strings.Builder
	serve.WriteString("\nint main() {\n  coderun_wire::Wire& w = coderun_wire::wire();\n  while (w.in.more()) {\n")
	var names []string
	for i, p := range sig.params {
		fmt.Fprintf(&serve, "    %s coderun_a%d{};\n    coderun_wire::get(w.in, coderun_a%d);\n", p.typ, i, i)
		names = append(names, fmt.Sprintf("coderun_a%d", i))
	}
	serve.WriteString("    w.in.expect('\\n');\n    try {\n")
	fmt.Fprintf(&serve, "      coderun_wire::answer<%s>(%s(%s));\n", sig.result, sig.name, strings.Join(names, ", "))
	serve.WriteString("    } catch (const std::exception& e) {\n      coderun_wire::failed(e.what());\n" +
		"    } catch (...) {\n      coderun_wire::failed(\"an exception that is no std::exception\");\n    }\n  }\n}\n")
	u := prompt[:start] + include("the tests' process") + prompt[start:] + solution + "\n" + serve.String()
	return &splitItem{
		tests:    splitProgram{files: []sandbox.File{{Path: "main.cpp", Content: []byte(t)}, {Path: "coderun_wire.hpp", Content: []byte(wireCPP)}}, args: args},
		solution: splitProgram{files: []sandbox.File{{Path: "main.cpp", Content: []byte(u)}, {Path: "coderun_wire.hpp", Content: []byte(wireCPP)}}, args: args},
	}, nil
}
