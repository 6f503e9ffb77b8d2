package eval

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/coderun/coderun/language"
	"github.com/coderun/coderun/sandbox"
	"golang.org/x/sys/unix"
)

// oneProgram is the item a HumanEval-X solution was before its tests and
// solution became two programs: prompt, solution and tests as one program,
// judged by its exit status (Rust and Go as humanEvalXItem builds them).
func oneProgram(p *Problem, solution string) Item {
	it := Item{ID: p.TaskID, TaskID: p.TaskID, Language: p.Language, Code: p.Prompt + solution + "\n" + p.Test}
	switch p.Language {
	case language.CPP:
		it.CompileArgs = []string{"-std=c++11"}
	case language.Node:
		it.Code = jsAssertPrelude + it.Code
	case language.Go:
		x := p.humanEvalX
		body := strings.Replace(p.Prompt, x.imports, "", 1) + solution
		it.Code = x.testSetup + goImports(x.imports, body, x.testSetup) + body + "\n" + p.Test
	}
	return it
}

// checkCompiledForgeries runs each forgery of problem p as the split item
// it is now and as the one program it was, beside the honest solution and
// the solutions that must pass: every forgery must fail now, the others
// pass, and at least minBefore forgeries must have passed as one program.
func checkCompiledForgeries(t *testing.T, p *Problem, forgeries []forgery, pass []forgery, minBefore int) {
	t.Helper()
	rt := toolchainRuntime(t)
	needToolchains(t)
	var its []Item
	for _, f := range forgeries {
		now, before := p.Item(f.code), oneProgram(p, f.code)
		now.ID, before.ID = f.name, "before: "+f.name
		its = append(its, now, before)
	}
	for _, f := range append([]forgery{{"honest", p.Solution}}, pass...) {
		it := p.Item(f.code)
		it.ID = f.name
		its = append(its, it)
	}
	got := map[string]Verdict{}
	lim := Options{Limits: sandbox.Limits{WallTime: 20 * time.Second, CPUTime: 20 * time.Second}}
	if err := Run(context.Background(), rt, Feed(its...), lim, func(v Verdict) error { got[v.ID] = v; return nil }); err != nil {
		t.Fatal(err)
	}
	passedBefore := 0
	for _, f := range forgeries {
		v, was := got[f.name], got["before: "+f.name]
		if v.Status == Passed || v.Status == "" {
			t.Errorf("%s: %s, want failed\n%s", f.name, v.Status, v.Stderr)
		}
		if was.Status == Passed {
			passedBefore++
		}
		t.Logf("%s: now %s (%s); as one program %s", f.name, v.Status, v.Error, was.Status)
	}
	for _, f := range append([]forgery{{"honest", p.Solution}}, pass...) {
		if v := got[f.name]; v.Status != Passed {
			t.Errorf("%s: %s %s\n%s", f.name, v.Status, v.Error, v.Stderr)
		}
	}
	if passedBefore < minBefore {
		t.Errorf("only %d forgeries passed as one program: the scenarios no longer test anything", passedBefore)
	}
}

// needLandlock skips a test that needs Landlock's file system rules and
// signal scoping (ABI 6, Linux 6.12).
func needLandlock(t *testing.T) {
	if abi, _, _ := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, 0, 0, 1); int(abi) < 6 {
		t.Skipf("Landlock ABI %d here: the solution's isolation needs 6 (Linux 6.12)", int(abi))
	}
}

// A C++ solution that fails its tests (HumanEval-X's greatest common
// divisor, answered a + b) must not pass by leaving before the tests run,
// disabling or renaming what the tests run with, catching their failure,
// ending or signalling the tests' process, or writing on the wire; and it
// cannot read the tests' sources or program.
func TestForgedCPPVerdicts(t *testing.T) {
	needLandlock(t)
	p := loadProblems(t, humanEvalXFiles[language.CPP], ReadOptions{})[13]
	const wrong = "    return a + b;\n}\n"
	forgeries := []forgery{
		{"static constructor exits", wrong + "#include <cstdlib>\nstruct CrExit { CrExit() { std::exit(0); } } cr_exit;\n"},
		{"assert disabled", wrong + "#include <assert.h>\n#define __assert_fail(...) ((void)0)\n"},
		{"main renamed", wrong + "int main() { return 0; }\n#define main cr_not_main\n"},
		{"abort caught", wrong + "#include <csignal>\n#include <unistd.h>\nstatic int cr_h = (std::signal(SIGABRT, [](int) { _exit(0); }), 0);\n"},
		{"tests' process signalled", wrong + "#include <csignal>\n#include <unistd.h>\nstatic int cr_k = (kill(getppid(), SIGKILL), kill(-1, SIGKILL), 0);\n"},
		{"junk on the wire", wrong + "#include <unistd.h>\nstatic int cr_j = (write(4, \"junk\\n\", 5), write(1, \"R1 \\n\", 4), 0);\n"},
		{"answer of another type on the wire", "    if (write(4, \"R1.5\\n\", 5)) {}\n    return 1;\n}\n"},
		{"solution's process ends at its first call", "    _exit(0);\n}\n"},
	}
	// Right only when the tests' sources, program and process are out of
	// reach, wrong when any can be read.
	const hidden = "    char self[64];\n    snprintf(self, sizeof self, \"/proc/%d/environ\", (int)getppid());\n" +
		"    const char* paths[] = {\"/work/.coderun/t/main.cpp\", \"/work/.coderun/t/main\", self};\n" +
		"    for (const char* p : paths) if (FILE* f = fopen(p, \"r\")) { fclose(f); return -1; }\n" +
		"    while (b) { int t = a % b; a = b; b = t; }\n    return a;\n}\n"
	checkCompiledForgeries(t, p, forgeries, []forgery{{"tests out of reach", hidden}}, 4)
}

// A Java solution that fails its tests (greatest common divisor, answered
// a + b) must not pass by leaving from its class's static initializer,
// shadowing the AssertionError the tests throw, turning the tests' failure
// into status 0 (a shutdown hook that halts, an uncaught exception
// handler), or writing on the wire.
func TestForgedJavaVerdicts(t *testing.T) {
	needLandlock(t)
	p := loadProblems(t, humanEvalXFiles[language.Java], ReadOptions{})[13]
	const wrong = "        return a + b;\n    }\n"
	forgeries := []forgery{
		{"static initializer exits", wrong + "    static { System.exit(0); }\n}\n"},
		{"AssertionError shadowed", wrong + "}\nclass AssertionError extends RuntimeException { AssertionError() { System.exit(0); } }\n"},
		{"shutdown hook halts with 0", wrong + "    static { Runtime.getRuntime().addShutdownHook(new Thread(() -> Runtime.getRuntime().halt(0))); }\n}\n"},
		{"uncaught exceptions exit 0", wrong + "    static { Thread.setDefaultUncaughtExceptionHandler((t, e) -> System.exit(0)); }\n}\n"},
		{"junk on the wire", wrong + "    static { try { new java.io.FileOutputStream(\"/proc/self/fd/4\").write(\"R1 \\nR1 \\n\".getBytes()); } catch (Exception e) {} }\n}\n"},
		{"solution's process ends at its first call", "        Runtime.getRuntime().halt(0);\n        return 0;\n    }\n}\n"},
	}
	const hidden = "        for (String p : new String[] {\"/work/.coderun/t/Main.java\", \"/work/.coderun/t/classes/Main.class\", \"/proc/\" + ProcessHandle.current().parent().get().pid() + \"/environ\"}) {\n" +
		"            try { new java.io.FileInputStream(p).close(); return -1; } catch (Exception e) {}\n        }\n" +
		"        while (b != 0) { int t = a % b; a = b; b = t; }\n        return a;\n    }\n}\n"
	checkCompiledForgeries(t, p, forgeries, []forgery{{"tests out of reach", hidden}}, 4)
}

// A Go solution that fails its tests (greatest common divisor, answered
// a + b) must not pass by leaving from an init function, or taking over
// the test binary's main (TestMain), or writing on the wire.
func TestForgedGoVerdicts(t *testing.T) {
	needLandlock(t)
	p := loadProblems(t, humanEvalXFiles[language.Go], ReadOptions{})[13]
	const wrong = "    return a + b\n}\n"
	forgeries := []forgery{
		{"init exits", wrong + "func init() { os.Exit(0) }\n"},
		{"TestMain takes over", wrong + "func TestMain(m *testing.M) { os.Exit(0) }\n"},
		{"junk on the wire", wrong + "func init() { os.NewFile(4, \"w\").Write([]byte(\"R1 \\nR1 \\n\")) }\n"},
		{"solution's process ends at its first call", "    os.Exit(0)\n    return 0\n}\n"},
	}
	const hidden = "    for _, p := range []string{\"/work/.coderun/t/main_test.go\", \"/work/.coderun/t/main\", fmt.Sprintf(\"/proc/%d/environ\", os.Getppid())} {\n" +
		"        if f, err := os.Open(p); err == nil { f.Close(); return -1 }\n    }\n" +
		"    for b != 0 { a, b = b, a%b }\n    return a\n}\n"
	checkCompiledForgeries(t, p, forgeries, []forgery{{"tests out of reach", hidden}}, 2)
}

// Every HumanEval-X problem in C++, Java and Go splits into two programs:
// its entry function's declaration is read, the tests' program holds no
// solution and the solution's no tests.
func TestEveryHumanEvalXProblemSplits(t *testing.T) {
	for _, lang := range []language.Language{language.CPP, language.Java, language.Go} {
		for _, p := range loadProblems(t, humanEvalXFiles[lang], ReadOptions{}) {
			it := p.Reference()
			if it.invalid != "" || it.split == nil {
				t.Errorf("%s: %s", p.TaskID, it.invalid)
				continue
			}
			if strings.Contains(it.Tests, p.Solution) || strings.Contains(it.Code, p.Test) {
				t.Errorf("%s: the tests' program holds the solution, or the solution's the tests", p.TaskID)
			}
		}
	}
}

func TestSignatures(t *testing.T) {
	for _, c := range []struct {
		parse func(string) (*signature, error)
		head  string
		want  string
	}{
		{cppSignature, "vector<int> f(vector<int>l, int t)", "f vector<int> [{vector<int> l} {int t}]"},
		{cppSignature, "long long  g( map<string,string> dict,vector<vector<int>> grid)", "g long long [{map<string,string> dict} {vector<vector<int>> grid}]"},
		{javaSignature, "public Optional<String> md5(String text) throws NoSuchAlgorithmException", "md5 Optional<String> [{String text}]"},
		{javaSignature, "public Map<String, Integer> histogram(Map<Object, Object> d, int k)", "histogram Map<String, Integer> [{Map<Object, Object> d} {int k}]"},
		{goSignature, "func F(a, b interface{}, xs [][]int) [2]interface{}", "F [2]interface{} [{interface{} a} {interface{} b} {[][]int xs}]"},
	} {
		sig, err := c.parse(c.head)
		if err != nil {
			t.Errorf("%s: %v", c.head, err)
			continue
		}
		if got := fmt.Sprintf("%s %s %v", sig.name, sig.result, sig.params); got != c.want {
			t.Errorf("%s: %s, want %s", c.head, got, c.want)
		}
	}
	for _, bad := range []string{"int f(int* p)", "void g(string& s)", "f(x)"} {
		if _, err := cppSignature(bad); err == nil {
			t.Errorf("%s: no error", bad)
		}
	}
	if _, err := goSignature("func F(a int) (int, error)"); err == nil {
		t.Error("a Go function of two results: no error")
	}
}

// A JavaScript HumanEval-X solution that fails its tests (greatest common
// divisor, answered a + b) must not pass by disabling console.assert, or
// by printing the run's marker, read from its standard input, at load or
// when the tests fail: it runs in a process of its own (harness.js).
func TestForgedJavaScriptHumanEvalXVerdicts(t *testing.T) {
	needLandlock(t)
	p := loadProblems(t, humanEvalXFiles[language.Node], ReadOptions{})[13]
	const wrong = "  return a + b;\n}\n"
	forgeries := []forgery{
		{"console.assert disabled", wrong + "console.assert = () => {};\n"},
		{"stdin echoed at load", wrong + "require('fs').writeSync(1, '\\n' + require('fs').readFileSync(0, 'latin1'));\nprocess.exit(0);\n"},
		{"stdin echoed when the tests fail", wrong + "process.on('uncaughtException', () => { require('fs').writeSync(1, '\\n' + require('fs').readFileSync(0, 'latin1')); process.exit(0); });\n"},
		{"exit 0 at load", wrong + "process.exit(0);\n"},
	}
	checkCompiledForgeries(t, p, forgeries, nil, 3)
}
