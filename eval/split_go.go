package eval

import (
	_ "embed"
	"fmt"
	"regexp"
	"strings"
	"sync"

	"github.com/coderun/coderun/sandbox"
)

// wireGo is the wire of Go items' two programs (see splitItem), without
// its package clause and imports (wireGoImports).
//
//go:embed wire.go.txt
var wireGo string

const wireGoImports = "import (\n\t\"bufio\"\n\t\"fmt\"\n\t\"math\"\n\t\"os\"\n\t\"reflect\"\n\t\"strconv\"\n)\n"

var goHead = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^(?s)func\s+([A-Za-z_]\w*)\s*\((.*?)\)\s*(.*)$`) })

// goSignature parses a Go function head: "func F(a, b int, s []string) [2]int".
func goSignature(head string) (*signature, error) {
	m := goHead().FindStringSubmatch(strings.TrimSpace(head))
	if m == nil || strings.TrimSpace(m[3]) == "" {
		return nil, fmt.Errorf("cannot read the entry function's declaration %q", head)
	}
	sig := &signature{name: m[1], result: strings.TrimSpace(m[3])}
	if strings.HasPrefix(sig.result, "(") {
		return nil, fmt.Errorf("%s returns several values, which cannot cross between processes", sig.name)
	}
	var pending []string
	for _, p := range splitTopLevel(m[2], ',', "[](){}") {
		f := strings.Fields(p)
		switch {
		case len(f) == 1:
			pending = append(pending, f[0])
		case len(f) >= 2:
			typ := strings.Join(f[1:], " ")
			if strings.HasPrefix(typ, "...") {
				return nil, fmt.Errorf("cannot pass the variadic parameter %q of %s between processes", p, sig.name)
			}
			for _, n := range append(pending, f[0]) {
				sig.params = append(sig.params, param{typ: typ, name: n})
			}
			pending = nil
		}
	}
	if len(pending) > 0 {
		return nil, fmt.Errorf("cannot read the parameters of %q", head)
	}
	return sig, nil
}

// goImportBlock matches a Go import block or line.
var goImportBlock = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(?m)^import\s*(\([^)]*\)|"[^"]*")\s*$`) })

// goSetupFor is test_setup (a package clause and imports) less the
// imports that code does not use: Go refuses an unused import, and the
// tests' program lacks the solution that may have used them.
func goSetupFor(setup, code string) string {
	code = stripGoComments(code)
	return goImportBlock().ReplaceAllStringFunc(setup, func(block string) string {
		var keep []string
		for _, m := range regexp.MustCompile(`(?m)^\s*(?:import\s*\(?)?\s*([A-Za-z_.]\w*\s+)?"([^"]+)"`).FindAllStringSubmatch(block, -1) {
			alias, path := strings.TrimSpace(m[1]), m[2]
			name := alias
			if name == "" {
				name = path[strings.LastIndex(path, "/")+1:]
			}
			if name == "_" || name == "." || regexp.MustCompile(`\b`+regexp.QuoteMeta(name)+`\.`).MatchString(code) {
				keep = append(keep, strings.TrimSpace(alias+" ")+`"`+path+`"`)
			}
		}
		if len(keep) == 0 {
			return ""
		}
		return "import (\n\t" + strings.Join(keep, "\n\t") + "\n)"
	})
}

// goSplit is the split item of a Go HumanEval-X solution. T, a test, is
// test_setup (the imports it uses), the prompt up to its entry function's
// body (without its imports) with a stub body, and the tests, plus the
// wire in a file of its own; U is a main package of the prompt and the
// solution (with the imports they use), plus the wire and a main that
// serves the tests' calls, in a file of its own.
func goSplit(x *humanEvalX, prompt, solution, tests string) (*splitItem, error) {
	head, _, brace, err := openBody(prompt, "//", "func")
	if err != nil {
		return nil, err
	}
	sig, err := goSignature(head)
	if err != nil {
		return nil, err
	}
	var stub strings.Builder
	fmt.Fprintf(&stub, "\n\tvar coderunResult %s\n\tcoderunCall(&coderunResult", sig.result)
	for _, p := range sig.params {
		fmt.Fprintf(&stub, ", &%s", p.name)
	}
	stub.WriteString(")\n\treturn coderunResult\n}\n")
	tbody := strings.Replace(prompt[:brace+1], x.imports, "", 1) + stub.String()
	tcode := tbody + "\n" + tests
	setup := goSetupFor(x.testSetup, tcode)
	t := setup + goImports(x.imports, tcode, setup) + tcode

	ubody := strings.Replace(prompt, x.imports, "", 1) + solution
	u := "package main\n" + goImports(x.imports+x.testSetup, ubody, "") + ubody + "\n"
	var serve strings.Builder
	serve.WriteString("package main\n\n" + wireGoImports + wireGo + "\nfunc main() {\n")
	var ptrs, names []string
	for i, p := range sig.params {
		fmt.Fprintf(&serve, "\tvar coderunA%d %s\n", i, p.typ)
		ptrs, names = append(ptrs, fmt.Sprintf("&coderunA%d", i)), append(names, fmt.Sprintf("coderunA%d", i))
	}
	fmt.Fprintf(&serve, "\tvar coderunResult %s\n\tcoderunServe([]interface{}{%s}, &coderunResult, func() { coderunResult = %s(%s) })\n}\n",
		sig.result, strings.Join(ptrs, ", "), sig.name, strings.Join(names, ", "))
	return &splitItem{
		tests: splitProgram{files: []sandbox.File{{Path: "main_test.go", Content: []byte(t)},
			{Path: "coderun_wire_test.go", Content: []byte("package main\n\n" + wireGoImports + wireGo)}}, args: []string{"coderun_wire_test.go"}},
		solution: splitProgram{files: []sandbox.File{{Path: "main.go", Content: []byte(u)},
			{Path: "coderun_serve.go", Content: []byte(serve.String())}}, args: []string{"coderun_serve.go"}},
	}, nil
}
