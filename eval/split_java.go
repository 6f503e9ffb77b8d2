package eval

import (
	_ "embed"
	"fmt"
	"regexp"
	"strings"
	"sync"

	"github.com/coderun/coderun/sandbox"
)

// wireJava is the wire of Java items' two programs (see splitItem): a
// class CoderunWire, placed after each program's own classes.
//
//go:embed wire.java
var wireJava string

var javaModifiers = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`\b(public|private|protected|static|final|synchronized|abstract)\s+`)
})
var javaClass = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`\bclass\s+([A-Za-z_]\w*)`) })

// javaSignature parses a Java method head: "public List<Integer> f(List<Integer> l, int k) throws E".
func javaSignature(head string) (*signature, error) {
	if i := strings.Index(head, ")"); i >= 0 {
		if j := strings.LastIndex(head, ")"); strings.Contains(head[j:], "throws") {
			head = head[:j+1]
		}
	}
	head = strings.TrimSpace(javaModifiers().ReplaceAllString(head+" ", ""))
	m := cppHead().FindStringSubmatch(head)
	if m == nil || strings.TrimSpace(m[1]) == "" {
		return nil, fmt.Errorf("cannot read the entry method's declaration %q", head)
	}
	sig := &signature{name: m[2], result: strings.TrimSpace(m[1])}
	for _, p := range splitTopLevel(m[3], ',', "<>()") {
		p = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(p), "final "))
		if p == "" {
			continue
		}
		pm := cppParam().FindStringSubmatch(p)
		if pm == nil || strings.TrimSpace(pm[1]) == "" || strings.Contains(pm[1], "...") {
			return nil, fmt.Errorf("cannot pass the parameter %q of %s between processes", p, sig.name)
		}
		sig.params = append(sig.params, param{typ: strings.TrimSpace(pm[1]), name: pm[2]})
	}
	if sig.result == "void" {
		return nil, fmt.Errorf("%s returns nothing: there is no answer to check", sig.name)
	}
	return sig, nil
}

// javaBoxes are the classes of Java's primitive types.
var javaBoxes = map[string]string{"int": "Integer", "long": "Long", "double": "Double", "float": "Float", "boolean": "Boolean", "char": "Character", "short": "Short", "byte": "Byte"}

// javaSplit is the split item of a Java HumanEval-X solution: T is the
// prompt up to its entry method's body, a stub body that ends the method
// and its class, the tests (their public class Main) and the wire; U is
// the prompt, the solution, a public class Main that serves the tests'
// calls on one instance of the solution's class, and the wire.
func javaSplit(prompt, solution, tests string) (*splitItem, error) {
	head, _, brace, err := openBody(prompt, "//", "")
	if err != nil {
		return nil, err
	}
	sig, err := javaSignature(head)
	if err != nil {
		return nil, err
	}
	code := blankComments(prompt[:brace], "//")
	classes := javaClass().FindAllStringSubmatch(code, -1)
	if len(classes) == 0 {
		return nil, fmt.Errorf("the entry method %s is in no class", sig.name)
	}
	class := classes[len(classes)-1][1]
	result := sig.result
	if b, ok := javaBoxes[result]; ok {
		result = b
	}
	var names, params, casts []string
	for i, p := range sig.params {
		names = append(names, p.name)
		params = append(params, p.typ+" "+p.name)
		casts = append(casts, fmt.Sprintf("(%s) a[%d]", p.typ, i))
	}
	stub := fmt.Sprintf("\n        return (%s) CoderunWire.call(CoderunWire.method(%s.class, %q)%s);\n    }\n}\n",
		result, class, sig.name, strings.Join(append([]string{""}, names...), ", "))
	t := prompt[:brace+1] + stub + "\n" + tests + "\n" + wireJava
	serve := fmt.Sprintf("\npublic class Main {\n    static %s coderunSignature(%s) { throw new Error(); }\n"+
		"    public static void main(String[] args) {\n        final %s s = new %s();\n"+
		"        CoderunWire.serve(CoderunWire.method(Main.class, \"coderunSignature\"), a -> s.%s(%s));\n    }\n}\n",
		sig.result, strings.Join(params, ", "), class, class, sig.name, strings.Join(casts, ", "))
	u := prompt + solution + "\n" + serve + wireJava
	return &splitItem{
		tests:    splitProgram{files: []sandbox.File{{Path: "Main.java", Content: []byte(t)}}},
		solution: splitProgram{files: []sandbox.File{{Path: "Main.java", Content: []byte(u)}}},
	}, nil
}
