package eval

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/coderun/coderun/language"
	"github.com/coderun/coderun/sandbox"
)

// HumanEvalX: HumanEval-X's {task_id, prompt, declaration,
// canonical_solution, test} (and Go's import and test_setup), in C++, Go,
// Java, JavaScript or Rust, named by the task id's prefix ("CPP/0",
// "JavaScript/12"). The program is built as CodeGeeX's evaluator builds
// it (see humanEvalXProgram); it passes when it compiles and exits with
// status 0 after its tests (JavaScript: and no console.assert failed).
const HumanEvalX Format = "humaneval-x"

// humanEvalX is what a HumanEval-X line adds to a Problem.
type humanEvalX struct {
	declaration string
	imports     string // Go: the prompt's import block
	testSetup   string // Go: the package clause and the tests' imports
}

// humanEvalXLanguages maps a HumanEval-X task id's prefix to its language.
var humanEvalXLanguages = map[string]language.Language{
	"CPP": language.CPP, "Go": language.Go, "Java": language.Java, "JavaScript": language.Node, "Rust": language.Rust,
}

// isHumanEvalX says whether a line has HumanEval-X's shape: its fields
// and a task id with one of its languages' prefixes.
func isHumanEvalX(f fields) bool {
	if !f.has("declaration") || !f.has("prompt") || !f.has("test") || f.has("entry_point") {
		return false
	}
	var id string
	if err := f.str("task_id", &id, true); err != nil {
		return false
	}
	prefix, _, _ := strings.Cut(id, "/")
	_, ok := humanEvalXLanguages[prefix]
	return ok
}

// parseHumanEvalX fills p from a HumanEval-X line.
func parseHumanEvalX(f fields, p *Problem) error {
	var err error
	if p.TaskID, err = f.id("task_id"); err != nil {
		return err
	}
	prefix, _, _ := strings.Cut(p.TaskID, "/")
	lang, ok := humanEvalXLanguages[prefix]
	if !ok {
		return fmt.Errorf("task id %q: want a HumanEval-X language prefix (CPP/, Go/, Java/, JavaScript/, Rust/)", p.TaskID)
	}
	p.Language = lang
	x := &humanEvalX{}
	for _, s := range []struct {
		name     string
		dst      *string
		required bool
	}{
		{"prompt", &p.Prompt, true}, {"test", &p.Test, true}, {"declaration", &x.declaration, false},
		{"import", &x.imports, false}, {"test_setup", &x.testSetup, false},
	} {
		if err := f.str(s.name, s.dst, s.required); err != nil {
			return err
		}
	}
	p.HasSolution = f.has("canonical_solution")
	if err := f.str("canonical_solution", &p.Solution, false); err != nil {
		return err
	}
	if lang == language.Go && x.testSetup == "" {
		return errors.New(`a Go task needs "test_setup" (its package clause and the tests' imports)`)
	}
	p.humanEvalX = x
	return nil
}

// humanEvalXItem is the item that runs solution (a completion of the
// prompt) against p's tests, built as CodeGeeX's evaluator builds it:
//
//	C++         prompt + solution + test, g++ -std=c++11 (and -lcrypto
//	            for the tests that include OpenSSL's headers)
//	Java        prompt + solution + test in Main.java (the tests' public
//	            class Main), javac then java Main
//	JavaScript  prompt + solution + test, with console.assert made to
//	            throw (a failed assertion only prints, and the reference
//	            evaluator fails a program that printed to stderr)
//	Go          test_setup + the standard packages prompt and solution use
//	            + prompt without its import block + solution + test, as a
//	            test (go test), testify from Debian's Go packages
//	Rust        fn main(){} + declaration + prompt + solution + test,
//	            with rustc's test harness
func (p *Problem) humanEvalXItem(solution string) Item {
	x := p.humanEvalX
	it := Item{ID: p.TaskID, TaskID: p.TaskID, Language: p.Language}
	switch p.Language {
	case language.CPP:
		it.Code = p.Prompt + solution + "\n" + p.Test
		it.CompileArgs = []string{"-std=c++11"}
		if strings.Contains(it.Code, "openssl/") {
			it.CompileArgs = append(it.CompileArgs, "-lcrypto")
		}
		it.setSplit(cppSplit(p.Prompt, solution, p.Test, it.CompileArgs))
	case language.Java:
		it.Code = p.Prompt + solution + "\n" + p.Test
		it.setSplit(javaSplit(p.Prompt, solution, p.Test))
	case language.Node:
		it.Code = jsAssertPrelude + p.Prompt + solution + "\n" + p.Test
		if _, start, _, err := openBody(p.Prompt, "//", ""); err != nil {
			it.invalid = "cannot find the entry function in the prompt: " + err.Error()
		} else {
			// The solution in a process of its own (harness.js), the tests
			// in the harness's, with the prompt's other functions (helpers
			// such as encodeCyclic), trusted as the tests are.
			it.Code, it.Tests = nodeHarnessProgram(p.Prompt+solution), jsAssertPrelude+p.Prompt[:start]+"\n"+p.Test+"\n"
		}
	case language.Go:
		body := strings.Replace(p.Prompt, x.imports, "", 1) + solution
		it.Code = x.testSetup + goImports(x.imports, body, x.testSetup) + body + "\n" + p.Test
		it.setSplit(goSplit(x, p.Prompt, solution, p.Test))
	case language.Rust:
		it.Code = "fn main(){}\n" + x.declaration + p.Prompt + solution + "\n" + p.Test
		reference := ""
		if p.HasSolution {
			reference = p.Solution
		}
		it.setSplit(rustSplit(x.declaration+p.Prompt, reference, solution, p.Test))
	}
	return it
}

// setSplit makes it a split item (see splitItem): its Code the solution's
// program, its Tests the tests', or, when the problem's prompt could not
// be split, an item whose verdict is an error saying why.
func (it *Item) setSplit(s *splitItem, err error) {
	if err != nil {
		it.invalid = "cannot build the tests and the solution as two programs: " + err.Error()
		return
	}
	it.split = s
	it.Code, it.Tests = string(s.solution.files[0].Content), string(s.tests.files[0].Content)
}

// jsAssertPrelude makes console.assert throw, so that a failed assertion
// ends the program with an error (status 1) instead of a line on stderr.
const jsAssertPrelude = "console.assert = (ok, ...msg) => { if (!ok) throw new Error('Assertion failed' + (msg.length ? ': ' + msg.join(' ') : '')) };\n"

// goQuoted finds the import paths of a Go import block.
var goQuoted = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`"([a-zA-Z0-9_./]+)"`) })

// goStandard are standard packages a HumanEval-X Go solution may use
// without its prompt importing them.
var goStandard = []string{"math", "os", "strings", "sort", "strconv", "fmt", "math/rand", "time", "regexp", "bytes", "crypto/md5", "unicode", "reflect", "container/heap", "math/big", "encoding/hex"}

// goImports is an import block of the packages body uses (a package's
// name followed by a dot), from the prompt's imports and goStandard, less
// those setup imports already: Go refuses an unused import.
func goImports(promptImports, body, setup string) string {
	var pkgs []string
	for _, m := range goQuoted().FindAllStringSubmatch(promptImports, -1) {
		pkgs = append(pkgs, m[1])
	}
	pkgs = append(pkgs, goStandard...)
	code := stripGoComments(body)
	var use []string
	for _, p := range pkgs {
		name := p[strings.LastIndex(p, "/")+1:]
		if slices.Contains(use, p) || strings.Contains(setup, `"`+p+`"`) || !regexp.MustCompile(`\b`+regexp.QuoteMeta(name)+`\.`).MatchString(code) {
			continue
		}
		use = append(use, p)
	}
	if len(use) == 0 {
		return "\n"
	}
	return "\nimport (\n\t\"" + strings.Join(use, "\"\n\t\"") + "\"\n)\n"
}

// stripGoComments removes // and /* */ comments (string literals holding
// them are rare enough in these tasks not to matter).
func stripGoComments(code string) string {
	code = regexp.MustCompile(`(?s)/\*.*?\*/`).ReplaceAllString(code, "")
	return regexp.MustCompile(`//[^\n]*`).ReplaceAllString(code, "")
}

// runToolchainItem runs an item in a language with a toolchain (compiled,
// or interpreted by other than the runtime's own interpreters): it passes
// when the program compiles and exits with status 0. No marker is added:
// a program that leaves early with status 0 passes (see the package
// documentation).
func runToolchainItem(ctx context.Context, rt sandbox.Runtime, it *Item, v *Verdict, defaults sandbox.Limits) (*Verdict, error) {
	req := sandbox.Request{Language: it.Language, Code: it.Code, CompileArgs: it.CompileArgs, Limits: it.Limits.WithDefaults(defaults)}
	return execute(ctx, rt, it, v, req, func(res *sandbox.Result) { judgeToolchain(v, res) })
}

// judgeToolchain is judge for programs without a marker. A compile error
// fails the item, with reason compile_error and the compiler's first
// error line.
func judgeToolchain(v *Verdict, res *sandbox.Result) {
	if res.Reason != sandbox.ReasonCompileError {
		judge(v, res, "")
		return
	}
	v.Reason, v.ExitCode, v.Signal = res.Reason, res.ExitCode, res.Signal
	v.WallMS, v.CPUMS, v.PeakMemory = ms(res.Usage.Wall), ms(res.Usage.CPU()), res.Usage.PeakMemory
	v.Status, v.Error = Failed, "compile error: "+firstErrorLine(res)
	v.Stderr = tail(res.Stderr+res.Stdout, StderrTail)
	v.Error = clip(v.Error, maxErrorLen)
}

// firstErrorLine is the first line of a compiler's output that says
// "error", or what stopped the compile step.
func firstErrorLine(res *sandbox.Result) string {
	if res.Compile != nil && res.Compile.Reason != sandbox.ReasonExited {
		return res.Compile.Summary()
	}
	for _, l := range strings.Split(res.Stderr+"\n"+res.Stdout, "\n") {
		if strings.Contains(strings.ToLower(l), "error") {
			return strings.TrimSpace(l)
		}
	}
	return res.Error
}
