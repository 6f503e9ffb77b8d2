package eval

import (
	"context"
	"encoding/json"
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
	case language.Rust:
		it.Code = "fn main(){}\n" + p.humanEvalX.declaration + it.Code
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

// A Rust solution that fails its tests (greatest common divisor, answered
// a + b) must not pass by leaving at its first call (after printing the
// test harness's success line or not), turning the tests' panic into
// status 0 (a panic hook that exits), shadowing the assertion macros the
// tests use (a macro_rules! at the crate's root reaches the tests' module),
// leaving from a static constructor (.init_array), signalling every
// process it can, or writing on the wire; and it cannot read the tests'
// sources, program or process. And Rust/137's solution must not pass by
// defining the type the tests compare answers with (RtnType) as equal to
// everything: T's RtnType is the reference's.
func TestForgedRustVerdicts(t *testing.T) {
	needLandlock(t)
	ps := loadProblems(t, humanEvalXFiles[language.Rust], ReadOptions{})
	const wrong = "    return a + b;\n}\n"
	const wire = "    use std::io::Write;\n    use std::os::unix::io::FromRawFd;\n    let mut w = std::mem::ManuallyDrop::new(unsafe { std::fs::File::from_raw_fd(4) });\n"
	forgeries := []forgery{
		{"exits at its first call", "    std::process::exit(0);\n}\n"},
		{"prints the harness's success and exits", "    println!(\"\\ntest result: ok. 1 passed; 0 failed; 0 ignored\");\n    std::process::exit(0);\n}\n"},
		{"panic hook exits 0", "    std::panic::set_hook(Box::new(|_| std::process::exit(0)));\n" + wrong},
		{"assertions shadowed", wrong + "macro_rules! assert_eq { ($($t:tt)*) => {}; }\nmacro_rules! assert { ($($t:tt)*) => {}; }\n"},
		{"static constructor exits", wrong + "#[used]\n#[link_section = \".init_array\"]\nstatic CODERUN_X: extern \"C\" fn() = { extern \"C\" fn f() { std::process::exit(0) } f };\n"},
		{"every process signalled", "    let _ = std::process::Command::new(\"kill\").args([\"-9\", \"-1\"]).status();\n" + wrong},
		{"junk on the wire", wire + "    let _ = w.write_all(b\"junk\\n\");\n" + wrong},
		{"answer of another type on the wire", wire + "    let _ = w.write_all(b\"R1.5\\n\");\n    return 1;\n}\n"},
	}
	// Right only when the tests' sources, program and process are out of
	// reach, wrong when any can be read.
	const hidden = "    for p in [\"/work/.coderun/t/main.rs\".to_string(), \"/work/.coderun/t/main\".to_string(), format!(\"/proc/{}/environ\", std::os::unix::process::parent_id())] {\n" +
		"        if std::fs::File::open(&p).is_ok() { return -1; }\n    }\n" +
		"    while b != 0 { let t = a % b; a = b; b = t; }\n    return a;\n}\n"
	checkCompiledForgeries(t, ps[13], forgeries, []forgery{{"tests out of reach", hidden}}, 4)

	const everything = "    return RtnType::Empty();\n}\n\n#[derive(Debug)]\npub enum RtnType<S, F, I> { Empty(), String(S), Float(F), Int(I) }\n" +
		"impl<S, F, I> PartialEq for RtnType<S, F, I> { fn eq(&self, _: &Self) -> bool { true } }\n"
	checkCompiledForgeries(t, ps[137], []forgery{{"RtnType equal to everything", everything}}, nil, 1)
}

// Every HumanEval-X problem in C++, Java, Go and Rust splits into two
// programs: its entry function's declaration is read, the tests' program
// holds no solution and the solution's no tests.
func TestEveryHumanEvalXProblemSplits(t *testing.T) {
	for _, lang := range []language.Language{language.CPP, language.Java, language.Go, language.Rust} {
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
		{rustSignature, "fn compare_one<'a>(a:&'a dyn Any, b:&'a dyn Any) -> RtnType<String,f64,i32>", "compare_one RtnType<String,f64,i32> [{&'a dyn Any a} {&'a dyn Any b}]"},
		{rustSignature, "fn greatest_common_divisor(mut a:i32,mut b:i32) -> i32", "greatest_common_divisor i32 [{i32 a} {i32 b}]"},
		{rustSignature, "fn f(m: std::collections::HashMap<&str, (i32, Vec<f64>)>)", "f () [{std::collections::HashMap<&str, (i32, Vec<f64>)> m}]"},
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
	for _, bad := range []string{"fn f(v: &mut Vec<i32>) -> i32", "fn g<T>(x: T) -> T", "fn h(f: impl Fn(i32) -> i32) -> i32", "fn k((a, b): (i32, i32)) -> i32", "fn r(x: i32) -> *const i32"} {
		if _, err := rustSignature(bad); err == nil {
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

// A Rust solution that panics, dies or answers with a value of another
// type fails its item with a message that says so, on the verdict (the
// test harness shows a failed test's panic on its standard output only).
func TestRustSolutionFailuresSayWhy(t *testing.T) {
	needLandlock(t)
	rt := toolchainRuntime(t)
	needToolchains(t)
	p := loadProblems(t, humanEvalXFiles[language.Rust], ReadOptions{})[13]
	want := map[string]string{
		"panics":        "the solution panicked in greatest_common_divisor: gcd refused (at main.rs:",
		"dies":          "the solution's process ended",
		"answers a str": "sent something else than a well-formed value",
		"is wrong":      "panicked at",
	}
	var its []Item
	for name, code := range map[string]string{
		"panics":   "    panic!(\"gcd refused\");\n}\n",
		"dies":     "    std::process::exit(7);\n}\n",
		"is wrong": "    return a + b;\n}\n",
		"answers a str": "    use std::io::Write;\n    use std::os::unix::io::FromRawFd;\n" +
			"    let _ = std::mem::ManuallyDrop::new(unsafe { std::fs::File::from_raw_fd(4) }).write_all(b\"R3:abc\\n\");\n    std::process::exit(0);\n}\n",
	} {
		it := p.Item(code)
		it.ID = name
		its = append(its, it)
	}
	got := map[string]Verdict{}
	lim := Options{Limits: sandbox.Limits{WallTime: 20 * time.Second, CPUTime: 20 * time.Second}}
	if err := Run(context.Background(), rt, Feed(its...), lim, func(v Verdict) error { got[v.ID] = v; return nil }); err != nil {
		t.Fatal(err)
	}
	t.Logf("a wrong answer: %s", got["is wrong"].Error)
	for name, msg := range want {
		if v := got[name]; v.Status != Failed || !strings.Contains(v.Error, msg) {
			t.Errorf("%s: %s %q, want failed with %q\n%s", name, v.Status, v.Error, msg, v.Stderr)
		}
	}
}

// rustRoundTrip is a HumanEval-X Rust problem whose function takes and
// returns a value of each kind of type the wire carries: its own struct
// (named fields, tuple), enum (unit, tuple and struct variants), borrowed
// strings, a map of tuples, an Option, a slice, an array, &dyn Any and
// Box<dyn Any>, a set; and floats that only their bits keep (-0.0, NaN).
var rustRoundTrip = map[string]string{
	"task_id": "Rust/round-trip", "prompt": "\n/* Echoes what it was given. */\n",
	"declaration": "\nuse std::collections::{BTreeSet, HashMap};\nuse std::any::Any;\n\n" +
		"fn echo<'a>(a: &'a str, b: Vec<&'a str>, c: HashMap<char, (i64, f64)>, d: Option<Vec<u8>>, e: &[i32], f: [u16; 3],\n" +
		"        g: &'a dyn Any, h: Box<dyn Any>, s: Shape) -> (Report, Vec<&'a str>, BTreeSet<i8>) {\n",
	"canonical_solution": "    let mut total: i64 = c.values().map(|(n, _)| *n).sum();\n" +
		"    total += e.iter().map(|&x| x as i64).sum::<i64>() + f.iter().map(|&x| x as i64).sum::<i64>() + d.map(|v| v.len() as i64).unwrap_or(-1);\n" +
		"    let zero = c.values().map(|(_, z)| *z).find(|z| *z == 0.0).unwrap_or(1.0);\n" +
		"    let any = match (g.downcast_ref::<&str>(), h.downcast_ref::<Vec<Box<dyn Any>>>()) { (Some(s), Some(v)) => format!(\"{}:{}\", s, v.len()), _ => \"?\".to_string() };\n" +
		"    let report = Report { text: format!(\"{}|{}\", a, any), total, zero, nan: f64::NAN, shape: s.clone(), pair: Pair(-7, 'é') };\n" +
		"    let set: BTreeSet<i8> = [-128, 127].into_iter().collect();\n" +
		"    (report, b.into_iter().rev().collect(), set)\n}\n\n" +
		"#[derive(Debug, PartialEq)]\npub struct Report { pub text: String, pub total: i64, pub zero: f64, pub nan: f64, pub shape: Shape, pub pair: Pair }\n\n" +
		"#[derive(Debug, PartialEq, Clone)]\npub enum Shape { Dot, Circle(f64), Rect { w: u32, h: u32 } }\n\n" +
		"#[derive(Debug, PartialEq)]\npub struct Pair(pub i32, pub char);\n",
	"test": "\n#[cfg(test)]\nmod tests {\n    use super::*;\n\n    #[test]\n    fn round_trip() {\n" +
		"        let c = HashMap::from([('x', (5i64, -0.0f64)), ('ü', (1i64 << 40, 1.5))]);\n" +
		"        let inner: Vec<Box<dyn Any>> = vec![Box::new(1i32), Box::new(\"s\".to_string())];\n" +
		"        let (r, rev, set) = echo(\"héllo\", vec![\"a\", \"\", \"c\"], c, Some(vec![0, 255]), &[1, -2], [1, 2, 65535], &\"str\", Box::new(inner), Shape::Rect { w: 3, h: u32::MAX });\n" +
		"        assert_eq!(r.text, \"héllo|str:2\");\n        assert_eq!(r.total, (1i64 << 40) + 5 - 1 + 65538 + 2);\n" +
		"        assert!(r.zero == 0.0 && r.zero.is_sign_negative() && r.nan.is_nan());\n" +
		"        assert_eq!(r.shape, Shape::Rect { w: 3, h: u32::MAX });\n        assert_eq!(r.pair, Pair(-7, 'é'));\n" +
		"        assert_eq!(rev, vec![\"c\", \"\", \"a\"]);\n        assert_eq!(set.into_iter().collect::<Vec<_>>(), vec![-128, 127]);\n" +
		"        let (r, rev, _) = echo(\"\", vec![], HashMap::new(), None, &[], [0; 3], &1, Box::new(()), Shape::Circle(2.5));\n" +
		"        assert_eq!((r.text.as_str(), r.total, r.shape), (\"|?\", -1, Shape::Circle(2.5)));\n        assert!(rev.is_empty());\n" +
		"        assert_eq!(echo(\"\", vec![], HashMap::new(), None, &[], [0; 3], &1, Box::new(()), Shape::Dot).0.shape, Shape::Dot);\n    }\n}\n",
}

// Values of every kind of type the Rust wire carries come back as they
// left (rustRoundTrip); a solution whose own enum has a variant the
// reference's has not (T decodes the answer as the reference's) fails.
func TestRustWireRoundTrip(t *testing.T) {
	needLandlock(t)
	rt := toolchainRuntime(t)
	needToolchains(t)
	line, err := json.Marshal(rustRoundTrip)
	if err != nil {
		t.Fatal(err)
	}
	ps, err := ReadProblems(strings.NewReader(string(line)+"\n"), ReadOptions{}, StopAtBadLine)
	if err != nil {
		t.Fatal(err)
	}
	p := ps[0]
	ref := p.Reference()
	if ref.split == nil {
		t.Fatalf("not split: %s", ref.invalid)
	}
	other := strings.NewReplacer("Dot, Circle(f64)", "Dot, Circle(f64), Other", "shape: s.clone()", "shape: Shape::Other").Replace(p.Solution)
	renamed := p.Item(other)
	renamed.ID = "renamed"
	got := map[string]Verdict{}
	lim := Options{Limits: sandbox.Limits{WallTime: 30 * time.Second, CPUTime: 30 * time.Second}}
	if err := Run(context.Background(), rt, Feed(ref, renamed), lim, func(v Verdict) error { got[v.ID] = v; return nil }); err != nil {
		t.Fatal(err)
	}
	if v := got[p.TaskID]; v.Status != Passed {
		t.Errorf("the reference: %s %q\n%s", v.Status, v.Error, v.Stderr)
	}
	if v := got["renamed"]; v.Status != Failed || !strings.Contains(v.Error, `a Shape of no variant named "Other"`) {
		t.Errorf("a solution's Shape of other variants: %s %q\n%s", v.Status, v.Error, v.Stderr)
	}
}
