package toolchain_test

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/coderun/coderun/language"
	"github.com/coderun/coderun/sandbox"
	"github.com/coderun/coderun/sandbox/linux"
	"github.com/coderun/coderun/sandbox/linux/linuxtest"
	"github.com/coderun/coderun/sandbox/toolchain"
)

// newRuntime is the linux runtime wrapped, with a state directory of its own.
func newRuntime(t *testing.T) sandbox.Runtime {
	t.Helper()
	return newRuntimeWith(t, toolchain.Options{})
}

func newRuntimeWith(t *testing.T, opts toolchain.Options) sandbox.Runtime {
	t.Helper()
	linuxtest.Require(t)
	state, err := os.MkdirTemp("/run", "coderun-toolchain-test-")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(state, 0o711); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(state) }) // after the runtime is closed
	rt := toolchain.Wrap(linuxtest.Runtime(t, linux.Options{StateDir: state, Logf: t.Logf}), opts)
	t.Cleanup(func() { rt.Close() }) // the pool's sandboxes, before the runtime's own cleanup
	return rt
}

// need skips the test when lang's toolchain is not installed (scripts/setup.sh installs it).
func need(t *testing.T, lang language.Language) {
	t.Helper()
	spec, _ := language.Lookup(lang)
	if _, err := toolchain.Find("", spec); err != nil {
		t.Skip(err)
	}
}

func run(t *testing.T, rt sandbox.Runtime, req sandbox.Request) *sandbox.Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := rt.Run(ctx, req)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	return res
}

func TestCProgramCompilesThenRuns(t *testing.T) {
	need(t, language.C)
	rt := newRuntime(t)
	res := run(t, rt, sandbox.Request{Language: language.C, Code: `#include <stdio.h>
#include <math.h>
int main(void) {
	char name[32];
	if (scanf("%31s", name) != 1) return 9;
	FILE *f = fopen("out.txt", "w");
	fprintf(f, "%.0f\n", sqrt(1764.0));
	fclose(f);
	printf("hello %s\n", name);
	fprintf(stderr, "to stderr\n");
	return 3;
}`, Stdin: []byte("world\n"), Files: []sandbox.File{{Path: "in.txt", Content: []byte("kept")}}, FileContents: 100})
	if res.Reason != sandbox.ReasonExited || res.ExitCode != 3 || res.Stdout != "hello world\n" || res.Stderr != "to stderr\n" {
		t.Fatalf("result = %+v", res)
	}
	if res.Compile == nil || !res.Compile.OK() || res.Compile.Usage.Wall <= 0 {
		t.Errorf("compile step = %+v", res.Compile)
	}
	if len(res.Files) != 1 || res.Files[0].Path != "out.txt" || string(res.Files[0].Content) != "42\n" || !res.Files[0].Created {
		t.Errorf("files = %+v; want out.txt alone (no build directory, no unchanged input)", res.Files)
	}
}

func TestCompileErrorIsItsOwnOutcome(t *testing.T) {
	need(t, language.CPP)
	rt := newRuntime(t)
	res := run(t, rt, sandbox.Request{Language: language.CPP, Code: "int main() { return undeclared; }\n"})
	if res.Reason != sandbox.ReasonCompileError || res.ExitCode == 0 || !strings.Contains(res.Stderr, "main.cpp:1") ||
		!strings.Contains(res.Stderr, "undeclared") || res.Compile == nil || res.Compile.Reason != sandbox.ReasonExited {
		t.Fatalf("result = %+v", res)
	}
	if !strings.HasPrefix(res.Summary(), "compile_error: compilation failed") {
		t.Errorf("summary = %q", res.Summary())
	}
}

func TestEachStepHasItsOwnLimits(t *testing.T) {
	need(t, language.C)
	rt := newRuntime(t)
	loop := "int main(void) { for (;;) ; }\n"
	res := run(t, rt, sandbox.Request{Language: language.C, Code: loop, Limits: sandbox.Limits{WallTime: time.Second}})
	if res.Reason != sandbox.ReasonTimeout && res.Reason != sandbox.ReasonCPULimit || res.Compile == nil || !res.Compile.OK() {
		t.Fatalf("a looping program: %+v (compile %+v); want a time limit after a good compile", res, res.Compile)
	}
	res = run(t, rt, sandbox.Request{Language: language.C, Code: loop, CompileLimits: sandbox.Limits{WallTime: 5 * time.Millisecond}})
	if res.Reason != sandbox.ReasonCompileError || res.Compile == nil || res.Compile.Reason != sandbox.ReasonTimeout {
		t.Fatalf("a compile step over its limit: %+v (compile %+v)", res, res.Compile)
	}
}

func TestOutputLimitStopsTheProgram(t *testing.T) {
	need(t, language.C)
	rt := newRuntime(t)
	res := run(t, rt, sandbox.Request{Language: language.C, Code: "#include <stdio.h>\nint main(void) { for (;;) puts(\"yes\"); }\n",
		Limits: sandbox.Limits{OutputBytes: 4096}})
	if res.Reason != sandbox.ReasonOutputLimit || !res.StdoutTruncated || len(res.Stdout) != 4096 {
		t.Fatalf("result = %s, truncated %v, %d bytes", res.Summary(), res.StdoutTruncated, len(res.Stdout))
	}
}

func TestCompileArgsReachTheCompiler(t *testing.T) {
	need(t, language.CPP)
	rt := newRuntime(t)
	code := "#include <cstdio>\nint main() { std::printf(\"%ld %d\\n\", __cplusplus, V); }\n"
	res := run(t, rt, sandbox.Request{Language: language.CPP, Code: code, CompileArgs: []string{"-std=c++20", "-DV=7"}})
	if !res.OK() || res.Stdout != "202002 7\n" {
		t.Fatalf("result = %+v", res)
	}
	if _, err := rt.Run(context.Background(), sandbox.Request{Language: language.Ruby, Code: "puts 1", CompileArgs: []string{"-w"}}); !errors.Is(err, sandbox.ErrInvalid) {
		t.Errorf("compile arguments for Ruby: %v, want ErrInvalid", err)
	}
	if _, err := rt.Run(context.Background(), sandbox.Request{Language: language.Python, Code: "print(1)", CompileArgs: []string{"-O"}}); !errors.Is(err, sandbox.ErrInvalid) {
		t.Errorf("compile arguments for Python: %v, want ErrInvalid", err)
	}
}

// TestEveryLanguageSaysHello runs a hello-world program in each language
// whose toolchain is installed.
func TestEveryLanguageSaysHello(t *testing.T) {
	rt := newRuntime(t)
	for lang, code := range map[language.Language]string{
		language.C:          "#include <stdio.h>\nint main(void) { puts(\"hello\"); }\n",
		language.CPP:        "#include <iostream>\nint main() { std::cout << \"hello\" << std::endl; }\n",
		language.Go:         "package main\nimport \"fmt\"\nfunc main() { fmt.Println(\"hello\") }\n",
		language.Java:       "public class Hello { public static void main(String[] a) { System.out.println(\"hello\"); } }\n",
		language.Rust:       "fn main() { println!(\"hello\"); }\n",
		language.TypeScript: "const greeting: string = \"hello\";\nconsole.log(greeting);\n",
		language.Ruby:       "puts 'hello'\n",
		language.PHP:        "<?php echo \"hello\\n\";\n",
		language.Perl:       "print \"hello\\n\";\n",
		language.Lua:        "print('hello')\n",
		language.R:          "cat('hello\\n')\n",
	} {
		t.Run(string(lang), func(t *testing.T) {
			need(t, lang)
			res := run(t, rt, sandbox.Request{Language: lang, Code: code})
			if !res.OK() || res.Stdout != "hello\n" {
				c := res.Compile
				if c == nil {
					c = &sandbox.Result{}
				}
				t.Fatalf("result: %s\nstdout %q\nstderr %q\ncompile: %s %q", res.Summary(), res.Stdout, res.Stderr, c.Summary(), c.Stderr)
			}
		})
	}
}

func TestMissingToolchainIsRefused(t *testing.T) {
	spec, _ := language.Lookup(language.Rust)
	_, err := toolchain.Find(t.TempDir(), spec)
	if !errors.Is(err, sandbox.ErrUnavailable) || !errors.Is(err, sandbox.ErrInvalid) ||
		!strings.Contains(err.Error(), "/usr/bin/rustc") || !strings.Contains(err.Error(), "rustc") {
		t.Fatalf("Find in an empty root: %v", err)
	}
}

func TestBuildDirectoryIsNotTheRequests(t *testing.T) {
	err := toolchain.Validate(&sandbox.Request{Language: language.C, Code: "int main(){}", Files: []sandbox.File{{Path: ".coderun/main", Content: []byte("x")}}})
	if !errors.Is(err, sandbox.ErrInvalid) {
		t.Fatalf("a file in the build directory: %v", err)
	}
	if err := toolchain.Validate(&sandbox.Request{Language: language.C, Code: "int main(){}"}); err != nil {
		t.Fatalf("a good request: %v", err)
	}
}

func TestCheckSaysVersionOrWhyNot(t *testing.T) {
	need(t, language.C)
	rt := newRuntime(t)
	st := toolchain.Check(context.Background(), rt, "", language.C)
	if !st.Available || !strings.Contains(st.Version, "gcc") || st.Tool != "/usr/bin/gcc" || !st.Compiled {
		t.Errorf("C: %+v", st)
	}
	st = toolchain.Check(context.Background(), rt, t.TempDir(), language.Rust)
	if st.Available || !strings.Contains(st.Reason, "Rust is not installed") || !strings.Contains(st.Reason, "rustc") {
		t.Errorf("Rust in an empty root: %+v", st)
	}
}

// TestInterpreterRunsInOneRun: an interpreted language is one run of the
// runtime, with the request's stdin, files and environment, and its build
// directory left out of the files reported.
func TestInterpreterRunsInOneRun(t *testing.T) {
	need(t, language.Ruby)
	rt := newRuntime(t)
	res := run(t, rt, sandbox.Request{Language: language.Ruby, Name: "tool.rb",
		Code:  "name = STDIN.read.strip\nFile.write('out.txt', File.read('in.txt') + ENV['X'])\nputs \"hi #{name} #{File.basename(__FILE__)}\"\nexit 5\n",
		Stdin: []byte("ann\n"), Env: map[string]string{"X": "!"}, Files: []sandbox.File{{Path: "in.txt", Content: []byte("data")}}, FileContents: 64})
	if res.Reason != sandbox.ReasonExited || res.ExitCode != 5 || res.Stdout != "hi ann tool.rb\n" || res.Compile != nil {
		t.Fatalf("result = %+v", res)
	}
	if len(res.Files) != 1 || res.Files[0].Path != "out.txt" || string(res.Files[0].Content) != "data!" {
		t.Errorf("files = %+v", res.Files)
	}
}

// TestEachStepHasItsOwnOutput: the compiler's diagnostics are the compile
// step's, the program's output the run step's, each bounded by its own
// output limit; the run step sees the request's environment, not the
// toolchain's, and its own CPU time.
func TestEachStepHasItsOwnOutput(t *testing.T) {
	need(t, language.C)
	rt := newRuntime(t)
	code := "#include <stdio.h>\n#include <stdlib.h>\n#warning from the compiler\nint main(void) { const char *t = getenv(\"TMPDIR\"); printf(\"%s %s\\n\", getenv(\"X\"), t ? t : \"-\"); fputs(\"from the program\\n\", stderr); }\n"
	res := run(t, rt, sandbox.Request{Language: language.C, Code: code, Env: map[string]string{"X": "x"}})
	if !res.OK() || !strings.HasPrefix(res.Stdout, "x ") || strings.Contains(res.Stdout, toolchain.CacheDir) || res.Stderr != "from the program\n" {
		t.Fatalf("run step: %s, stdout %q, stderr %q", res.Summary(), res.Stdout, res.Stderr)
	}
	c := res.Compile
	if c == nil || !c.OK() || !strings.Contains(c.Stderr, "from the compiler") || strings.Contains(c.Stderr, "from the program") || c.Stdout != "" {
		t.Fatalf("compile step: %+v", c)
	}
	if c.Usage.CPU() <= 0 || c.Usage.Wall <= 0 || res.Usage.Wall <= 0 || res.Usage.CPU() >= c.Usage.CPU() {
		t.Errorf("usage: compile %+v, run %+v; want the compiler's CPU in the compile step's", c.Usage, res.Usage)
	}
	warnings := strings.Repeat("#warning a long warning to fill the compile step's output\n", 100)
	res = run(t, rt, sandbox.Request{Language: language.C, Code: warnings + "int main(void) { return 0; }\n", CompileLimits: sandbox.Limits{OutputBytes: 256}})
	if res.Reason != sandbox.ReasonCompileError || res.Compile == nil || res.Compile.Reason != sandbox.ReasonOutputLimit ||
		len(res.Compile.Stderr) != 256 || !res.Compile.StderrTruncated {
		t.Fatalf("a compile step past its output limit: %s (compile %+v)", res.Summary(), res.Compile)
	}
	res = run(t, rt, sandbox.Request{Language: language.C, Code: "int main(void) { for (;;) ; }\n", Limits: sandbox.Limits{CPUTime: 500 * time.Millisecond, WallTime: 20 * time.Second}})
	if res.Reason != sandbox.ReasonCPULimit || !strings.Contains(res.Error, "500ms") || res.Compile == nil || !res.Compile.OK() {
		t.Fatalf("a program past its CPU time: %s (compile %+v)", res.Summary(), res.Compile)
	}
}

// TestCompileStepGetsItsOwnMemory: the compile step may use more memory
// than the run step (the defaults: 2 GiB and 512 MiB): a compile that
// needs more than the run's limit still succeeds, and the program runs
// under its own limit.
func TestCompileStepGetsItsOwnMemory(t *testing.T) {
	need(t, language.CPP)
	rt := newRuntime(t)
	code := "#include <iostream>\n#include <vector>\nint main() { std::vector<char> v(64 << 20, 1); std::cout << \"hello \" << int(v[7]) << std::endl; }\n"
	small := sandbox.Limits{Memory: 16 << 20}
	res := run(t, rt, sandbox.Request{Language: language.CPP, Code: "int main() {}\n#include <iostream>\n", CompileLimits: small})
	if res.Reason != sandbox.ReasonCompileError || res.Compile == nil || res.Compile.Reason != sandbox.ReasonMemoryLimit {
		t.Fatalf("g++ under 16 MiB: %s (compile %+v); the test needs a compile step larger than that", res.Summary(), res.Compile)
	}
	res = run(t, rt, sandbox.Request{Language: language.CPP, Code: code, Limits: small})
	if res.Reason != sandbox.ReasonMemoryLimit || res.Compile == nil || !res.Compile.OK() {
		t.Fatalf("a 64 MiB program under 16 MiB: %s (compile %s %q)", res.Summary(), res.Compile.Summary(), res.Compile.Stderr)
	}
	res = run(t, rt, sandbox.Request{Language: language.CPP, Code: code, Limits: sandbox.Limits{Memory: 128 << 20}})
	if !res.OK() || res.Stdout != "hello 1\n" {
		t.Fatalf("the same program under 128 MiB: %s %q", res.Summary(), res.Stderr)
	}
}

// TestEachStepHasItsOwnProcesses: the run step's process limit holds
// while the compile step has its own.
func TestEachStepHasItsOwnProcesses(t *testing.T) {
	need(t, language.C)
	rt := newRuntime(t)
	code := `#include <stdio.h>
#include <unistd.h>
int main(void) {
	int n = 0;
	for (int i = 0; i < 40; i++) { pid_t p = fork(); if (p == 0) { pause(); _exit(0); } if (p > 0) n++; }
	printf("%d\n", n);
	return 0;
}`
	res := run(t, rt, sandbox.Request{Language: language.C, Code: code, Limits: sandbox.Limits{Processes: 8}})
	if !res.OK() || res.Compile == nil || !res.Compile.OK() {
		t.Fatalf("result: %s %q (compile %+v)", res.Summary(), res.Stderr, res.Compile)
	}
	if n := strings.TrimSpace(res.Stdout); n == "40" || n == "" {
		t.Fatalf("forked %s children under a limit of 8 processes", n)
	}
}

// TestPoolServesDefaultRuns: with a pool, a run with the default limits
// and no environment takes a sandbox whose driver has started; its files,
// stdin, compile arguments (non-ASCII ones too) and results are as
// without; a run with an environment of its own starts its own sandbox.
func TestPoolServesDefaultRuns(t *testing.T) {
	need(t, language.C)
	rt := newRuntimeWith(t, toolchain.Options{Pool: 1})
	ready := func() {
		t.Helper()
		deadline := time.Now().Add(time.Minute)
		for rt.(interface{ PoolReady() int }).PoolReady() < 1 {
			if time.Now().After(deadline) {
				t.Fatal("the pool made no sandbox in a minute")
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	code := "#include <stdio.h>\n#include <stdlib.h>\nint main(void) { char l[64] = \"\"; FILE *f = fopen(\"in.txt\", \"r\"); fgets(l, sizeof l, f); char s[64]; scanf(\"%63s\", s);" +
		" printf(\"%s %s %s %s\\n\", l, s, NAME, getenv(\"X\") ? getenv(\"X\") : \"-\"); return 0; }\n"
	for _, c := range []struct {
		env    map[string]string
		pooled bool
		want   string
	}{
		{nil, true, "kept world caf\u00e9 -\n"},
		{map[string]string{"X": "x"}, false, "kept world caf\u00e9 x\n"},
	} {
		ready()
		res := run(t, rt, sandbox.Request{Language: language.C, Code: code, Stdin: []byte("world\n"), Env: c.env,
			CompileArgs: []string{"-DNAME=\"caf\u00e9\""}, Files: []sandbox.File{{Path: "in.txt", Content: []byte("kept")}}})
		if !res.OK() || res.Stdout != c.want || res.Pooled != c.pooled {
			t.Fatalf("env %v: %s, stdout %q, pooled %v (compile %q)", c.env, res.Summary(), res.Stdout, res.Pooled, res.Compile.Stderr)
		}
		if res.Compile == nil || !res.Compile.OK() || res.Compile.Usage.Wall <= 0 || res.Usage.Wall < 0 {
			t.Errorf("env %v: compile step %+v, run usage %+v", c.env, res.Compile, res.Usage)
		}
	}
}

// TestRemovedInputsAreReported: an input file the program removed is in
// Result.Removed, whether the steps ran apart, together in a pooled
// sandbox, or the language is interpreted (its source, in the build
// directory, is never among them); one it kept is not.
func TestRemovedInputsAreReported(t *testing.T) {
	files := []sandbox.File{{Path: "kept.txt", Content: []byte("k")}, {Path: "d/gone.txt", Content: []byte("g")}}
	cCode := "#include <stdio.h>\nint main(void) { return remove(\"d/gone.txt\") != 0; }\n"
	for _, c := range []struct {
		name string
		lang language.Language
		code string
		opts toolchain.Options
	}{
		{"compiled", language.C, cCode, toolchain.Options{}},
		{"compiled pooled", language.C, cCode, toolchain.Options{Pool: 1}},
		{"interpreted", language.Ruby, "File.delete('d/gone.txt')\nsystem('rm', '-rf', '.coderun') or exit 7\n", toolchain.Options{}},
	} {
		t.Run(c.name, func(t *testing.T) {
			need(t, c.lang)
			rt := newRuntimeWith(t, c.opts)
			if c.opts.Pool > 0 {
				deadline := time.Now().Add(time.Minute)
				for rt.(interface{ PoolReady() int }).PoolReady() < 1 && time.Now().Before(deadline) {
					time.Sleep(10 * time.Millisecond)
				}
			}
			res := run(t, rt, sandbox.Request{Language: c.lang, Code: c.code, Files: files})
			if !res.OK() {
				t.Fatalf("%s (stderr %q)", res.Summary(), res.Stderr)
			}
			if c.opts.Pool > 0 && !res.Pooled {
				t.Errorf("not served by the pool")
			}
			if strings.Join(res.Removed, " ") != "d/gone.txt" {
				t.Errorf("removed %q; want [d/gone.txt]", res.Removed)
			}
		})
	}
}

// waitPool waits until rt's pool holds n sandboxes.
func waitPool(t *testing.T, rt sandbox.Runtime, n int) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for rt.(interface{ PoolReady() int }).PoolReady() < n {
		if time.Now().After(deadline) {
			t.Fatal("the pool made no sandbox in a minute")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestPoolServesRunsWithinItsLimits: a run with time limits of its own
// (SandboxFusion's run_timeout and compile_timeout) or smaller processes
// and output takes a pool's sandbox (only runs with exactly the default
// limits did); one with another memory limit or workspace starts its own.
func TestPoolServesRunsWithinItsLimits(t *testing.T) {
	need(t, language.C)
	rt := newRuntimeWith(t, toolchain.Options{Pool: 1})
	code := "#include <stdio.h>\nint main(void) { puts(\"hi\"); return 0; }\n"
	for _, c := range []struct {
		name         string
		lim, compLim sandbox.Limits
		pooled       bool
	}{
		{"sandboxfusion's times", sandbox.Limits{WallTime: 10 * time.Second, CPUTime: 20 * time.Second}, sandbox.Limits{WallTime: 10 * time.Second, CPUTime: 20 * time.Second}, true},
		{"longer times", sandbox.Limits{WallTime: 2 * time.Minute}, sandbox.Limits{WallTime: 2 * time.Minute}, false},
		{"fewer processes, less output", sandbox.Limits{Processes: 8, OutputBytes: 1 << 10}, sandbox.Limits{Processes: 100}, true},
		{"more memory", sandbox.Limits{Memory: 1 << 30}, sandbox.Limits{}, false},
		{"a smaller workspace", sandbox.Limits{WorkspaceBytes: 64 << 20}, sandbox.Limits{WorkspaceBytes: 64 << 20}, false},
	} {
		waitPool(t, rt, 1)
		res := run(t, rt, sandbox.Request{Language: language.C, Code: code, Limits: c.lim, CompileLimits: c.compLim})
		if !res.OK() || res.Stdout != "hi\n" || res.Pooled != c.pooled {
			t.Errorf("%s: %s, stdout %q, pooled %v, want %v", c.name, res.Summary(), res.Stdout, res.Pooled, c.pooled)
		}
	}
}

// TestPoolRefillsAfterTheRun: the pool makes the sandbox that replaces one
// a run took once that run has ended, not beside it (a sandbox's set-up
// competed with the run for the CPU: a pooled C hello world took as long
// as a fresh one on a loaded host); then it is ready again.
func TestPoolRefillsAfterTheRun(t *testing.T) {
	need(t, language.C)
	rt := newRuntimeWith(t, toolchain.Options{Pool: 1})
	waitPool(t, rt, 1)
	pr := rt.(interface{ PoolReady() int })
	done := make(chan *sandbox.Result)
	go func() {
		res, _ := rt.Run(context.Background(), sandbox.Request{Language: language.C,
			Code: "#include <stdio.h>\n#include <unistd.h>\nint main(void) { sleep(3); puts(\"slept\"); return 0; }\n"})
		done <- res
	}()
	refilled := false
	var res *sandbox.Result
	for res == nil {
		select {
		case res = <-done:
		case <-time.After(10 * time.Millisecond):
			refilled = refilled || pr.PoolReady() > 0
		}
	}
	if res == nil || !res.OK() || !res.Pooled || res.Stdout != "slept\n" {
		t.Fatalf("run: %+v", res)
	}
	if refilled {
		t.Error("the pool made a sandbox while the run that took one was running")
	}
	waitPool(t, rt, 1)
}

// TestGoLinksWithoutDebugInfo: Go programs, test binaries too, are linked
// without DWARF and the symbol table (a quarter of a hello world's build
// CPU), and a panic still names its functions.
func TestGoLinksWithoutDebugInfo(t *testing.T) {
	need(t, language.Go)
	rt := newRuntime(t)
	probe := `
func sections() string {
	exe, err := os.Executable()
	if err != nil {
		return err.Error()
	}
	f, err := elf.Open(exe)
	if err != nil {
		return err.Error()
	}
	defer f.Close()
	return fmt.Sprintf("dwarf=%v symtab=%v", f.Section(".debug_info") != nil || f.Section(".zdebug_info") != nil, f.Section(".symtab") != nil)
}
`
	for _, c := range []struct {
		name, code, want string
	}{
		{"program", "package main\n\nimport (\n\t\"debug/elf\"\n\t\"fmt\"\n\t\"os\"\n)\n" + probe + "\nfunc main() { fmt.Println(sections()) }\n", "dwarf=false symtab=false\n"},
		{"test binary", "package main\n\nimport (\n\t\"debug/elf\"\n\t\"fmt\"\n\t\"os\"\n\t\"testing\"\n)\n" + probe + "\nfunc TestSections(t *testing.T) { fmt.Println(sections()) }\n", "dwarf=false symtab=false\n"},
	} {
		res := run(t, rt, sandbox.Request{Language: language.Go, Code: c.code})
		if !res.OK() {
			t.Fatalf("%s: %s, stdout %q, stderr %q, compile %q", c.name, res.Summary(), res.Stdout, res.Stderr, res.Compile.Stderr)
		}
		if !strings.Contains(res.Stdout, c.want) {
			t.Errorf("%s: %q, want %q", c.name, res.Stdout, c.want)
		}
	}
	res := run(t, rt, sandbox.Request{Language: language.Go, Code: "package main\n\nfunc boom() { panic(\"boom\") }\n\nfunc main() { boom() }\n"})
	if res.ExitCode != 2 || !strings.Contains(res.Stderr, "main.boom") {
		t.Errorf("a panic: exit %d, stderr %q", res.ExitCode, res.Stderr)
	}
}
