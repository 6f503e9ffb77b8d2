package eval

import (
	"context"
	"fmt"
	"os"
	"path"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/coderun/coderun/language"
	"github.com/coderun/coderun/sandbox"
	"github.com/coderun/coderun/sandbox/toolchain"
)

// splitItem is an item of a compiled language whose tests and solution are
// two programs, compiled apart and run as two processes (see the package
// documentation, "Compiled languages"): the tests, T, call the solution's
// entry function through a stub that sends its arguments to the solution's
// program, U, over a pair of pipes, and decode its answer by the function's
// declared type.
type splitItem struct {
	tests, solution splitProgram
}

// splitProgram is one of a split item's two programs: its source files
// (the first is the one the language's plan compiles; the others are
// named in its compile arguments), and its compile arguments.
type splitProgram struct {
	files []sandbox.File
	args  []string
}

// Where the two programs are built: T in the workspace's build directory,
// U in a directory of its own in /tmp, the only one its Landlock domain
// may write to (it may read none of the workspace, where T's sources are).
const (
	splitTestsDir    = sandbox.WorkDir + "/" + toolchain.BuildDir + "/t"
	splitSolutionDir = "/tmp/coderun-u"
	splitPipesDir    = "/tmp/coderun-pipes"
	// splitOutputShown is how much of what U printed a run shows.
	splitOutputShown = 16 << 10
)

// runSplitItem builds and runs a split item in one sandbox of rt, which
// must keep sandboxes (sandbox.Interactive): one step compiles both
// programs at once, U in its Landlock domain; the next starts U in it,
// runs T, and prints the run's marker when T exited with status 0.
func runSplitItem(ctx context.Context, rt sandbox.Runtime, it *Item, v *Verdict, defaults sandbox.Limits) (*Verdict, error) {
	s := it.split
	irt, ok := rt.(sandbox.Interactive)
	spec, known := language.Lookup(it.Language)
	if !ok || !known {
		v.Status, v.Error = Error, fmt.Sprintf("the %s runtime keeps no sandboxes, which an item's tests and solution in %s need (two programs)", rt.Name(), it.Language)
		v.Finished = time.Now()
		return v, nil
	}
	tool, err := toolchain.Find("", spec)
	if err != nil {
		v.Status, v.Error = Error, err.Error()
		v.Finished = time.Now()
		return v, nil
	}
	exists := func(p string) bool { _, err := os.Stat(p); return err == nil }
	tb, err := spec.Plan(tool, splitTestsDir, toolchain.CacheDir, s.tests.files[0].Path, string(s.tests.files[0].Content), s.tests.args, exists)
	if err != nil {
		return nil, fmt.Errorf("eval: item %s: the tests' build: %w", it.ID, err)
	}
	ub, err := spec.Plan(tool, splitSolutionDir, splitSolutionDir+"/cache", s.solution.files[0].Path, string(s.solution.files[0].Content), s.solution.args, exists)
	if err != nil {
		return nil, fmt.Errorf("eval: item %s: the solution's build: %w", it.ID, err)
	}
	if it.Language == language.Java {
		// No shared-memory performance file in /tmp, which U may not write.
		tb.Run = slices.Insert(tb.Run, 1, "-XX:-UsePerfData")
		ub.Run = slices.Insert(ub.Run, 1, "-XX:-UsePerfData")
	}
	marker, _, err := withMarker(sandbox.Bash, "")
	if err != nil {
		return nil, err
	}
	runLim := it.Limits.WithDefaults(defaults).WithDefaults(sandbox.DefaultLimits)
	compLim := sandbox.DefaultCompileLimits
	boxLim := runLim
	boxLim.WorkspaceBytes = max(runLim.WorkspaceBytes, compLim.WorkspaceBytes)

	start := time.Now()
	defer func() { v.TotalMS, v.Finished = ms(time.Since(start)), time.Now() }()
	sb, err := irt.NewSandbox(ctx, sandbox.Spec{Limits: boxLim})
	if err != nil {
		if ctx.Err() != nil {
			return nil, nil
		}
		v.Status, v.Error, v.Reason = Error, "create sandbox: "+err.Error(), sandbox.ReasonSetupError
		return v, nil
	}
	defer sb.Close()
	for dir, p := range map[string]splitProgram{"t": s.tests, "u": s.solution} {
		for _, f := range p.files {
			if err := sb.WriteFile(toolchain.BuildDir+"/"+dir+"/"+f.Path, f.Content, 0o644); err != nil {
				v.Status, v.Error, v.Reason = Error, "write source: "+err.Error(), sandbox.ReasonSetupError
				return v, nil
			}
		}
	}
	compiled, err := sandbox.RunIn(ctx, sb, sandbox.Program{Language: sandbox.Bash, Code: splitCompileScript(tb, ub)}, compLim, nil)
	if ctx.Err() != nil {
		return nil, nil
	}
	if err != nil {
		v.Status, v.Error, v.Reason = Error, "compile: "+err.Error(), sandbox.ReasonSetupError
		return v, nil
	}
	switch {
	case compiled.Reason == sandbox.ReasonExited && compiled.ExitCode == 2 && compiled.Signal == "":
		// The tests did not compile: the harness's fault, not the solution's.
		judge(v, compiled, marker)
		v.Status, v.Error = Error, strings.TrimPrefix(firstLine(compiled.Stderr), "coderun eval: ")+" "+harnessError(compiled.Stderr)
		return v, nil
	case !compiled.OK():
		judgeToolchain(v, compileError(compiled))
		return v, nil
	}
	res, err := sandbox.RunIn(ctx, sb, sandbox.Program{Language: sandbox.Bash, Code: splitRunScript(tb, ub)}, runLim, []byte(marker+"\n"))
	if ctx.Err() != nil {
		return nil, nil
	}
	if err != nil {
		v.Status, v.Error, v.Reason = Error, "run: "+err.Error(), sandbox.ReasonSetupError
		return v, nil
	}
	res.Compile = compiled
	judge(v, res, marker)
	return v, nil
}

// harnessError is the line that says what went wrong in a compile step's
// standard error that the harness failed: the first after its own that
// says "error", or else the first that is no compiler's heading.
func harnessError(stderr string) string {
	lines := strings.Split(stderr, "\n")[1:]
	for _, l := range lines {
		if strings.Contains(strings.ToLower(l), "error") {
			return strings.TrimSpace(l)
		}
	}
	for _, l := range lines {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
			return l
		}
	}
	return ""
}

// firstLine is s's first line.
func firstLine(s string) string {
	l, _, _ := strings.Cut(s, "\n")
	return l
}

// compileError is the result of a run whose compile step made no program,
// as the toolchain reports it.
func compileError(c *sandbox.Result) *sandbox.Result {
	res := *c
	res.Reason, res.Compile = sandbox.ReasonCompileError, c
	if c.Reason == sandbox.ReasonExited {
		res.Error = "compilation failed: " + c.Summary()
	} else {
		res.Error = "compilation stopped: " + c.Summary()
	}
	return &res
}

// splitLandlock enters a Landlock domain nested in the sandbox's and
// executes its arguments after the first two: the directory the domain
// may write to, and one whose files it may open, for reading or writing
// (the pipes of U, so that it can open them again as /proc/self/fd/3 and
// 4, as Java must; it can neither remove nor make files there). The domain may not signal or trace processes
// outside it (nor read their memory, descriptors or environment), and of
// the file system it may read the system's directories and the /dev
// devices, and read and write its own directory: the workspace, where the
// tests' sources and program are, is out of its reach. Without Landlock
// (Linux before 5.13) it executes its arguments as they are.
const splitLandlock = `import ctypes, os, struct, sys
libc = ctypes.CDLL(None, use_errno=True)
abi = libc.syscall(444, None, 0, 1)
def fail(what):
    sys.stderr.write("coderun eval: cannot enter a Landlock domain: %s: %s\n" % (what, os.strerror(ctypes.get_errno())))
    sys.exit(125)
if abi >= 1:
    fs = (1 << 13) - 1
    for v, bit in ((2, 13), (3, 14), (5, 15)):
        if abi >= v:
            fs |= 1 << bit
    attr = struct.pack("QQQ", fs, 0, 3) if abi >= 6 else struct.pack("Q", fs)
    fd = libc.syscall(444, attr, len(attr), 0)
    if fd < 0:
        fail("create")
    read = 1 | 4 | 8
    dev = read | 2 | (1 << 15 if abi >= 5 else 0)
    for path, access in [("/usr", read), ("/bin", read), ("/sbin", read), ("/lib", read), ("/lib32", read), ("/lib64", read),
                         ("/libx32", read), ("/etc", read), ("/opt", read), ("/proc", read), ("/sys", read), ("/dev", dev), (sys.argv[1], fs), (sys.argv[2], 2 | 4)]:
        try:
            pfd = os.open(path, os.O_PATH | os.O_CLOEXEC)
        except OSError:
            continue
        rule = struct.pack("=Qi", access & fs, pfd)
        if libc.syscall(445, fd, 1, rule, 0) != 0:
            fail("add a rule for " + path)
        os.close(pfd)
    if libc.prctl(38, 1, 0, 0, 0) != 0 or libc.syscall(446, fd, 0) != 0:
        fail("enter")
    os.close(fd)
os.execv(sys.argv[3], sys.argv[3:])`

// splitCompileScript compiles both programs at once: T in the build
// directory, U (its sources moved to its own directory first) in its
// Landlock domain. It exits with status 2 when the tests did not compile
// (their compiler's output on standard error), 1 when the solution did not
// (its compiler's output), 0 when both did.
func splitCompileScript(tb, ub *language.Build) string {
	var b strings.Builder
	t, u := shellQuote(splitTestsDir), shellQuote(splitSolutionDir)
	fmt.Fprintf(&b, "mkdir -p %s %s %s/cache/tmp %s/cache/home && cp -R %s/. %s/ && rm -r %s || { echo 'coderun eval: cannot place the solution in its directory' >&2; exit 2; }\n",
		shellQuote(toolchain.CacheDir+"/tmp"), shellQuote(toolchain.CacheDir+"/home"), u, u,
		shellQuote(path.Dir(splitTestsDir)+"/u"), u, shellQuote(path.Dir(splitTestsDir)+"/u"))
	fmt.Fprintf(&b, "(cd %s && exec python3 -I -c %s %s %s /usr/bin/env %s) </dev/null >%s/compile.log 2>&1 &\nu=$!\n",
		u, shellQuote(splitLandlock), u, u, shellCommand(ub.Env, ub.Compile), u)
	fmt.Fprintf(&b, "(cd %s && exec /usr/bin/env %s) </dev/null >%s/compile.log 2>&1\nts=$?\nwait $u\nus=$?\n", t, shellCommand(tb.Env, tb.Compile), t)
	fmt.Fprintf(&b, "if [ $ts != 0 ]; then echo 'coderun eval: the tests did not compile:' >&2; cat %s/compile.log >&2; exit 2; fi\n", t)
	fmt.Fprintf(&b, "if [ $us != 0 ]; then cat %s/compile.log; exit 1; fi\n", u)
	return b.String()
}

// splitRunScript starts U, its descriptors 3 and 4 its ends of two pipes
// (FIFOs in a directory where its Landlock domain may open files but
// neither make nor remove them), 0 /dev/null, and 1 and 2 a file of its
// directory; reads the run's marker (so that U, started first, never had
// it in its memory); runs T with the other ends as its descriptors 3 and
// 4, its standard error in a file of the build directory; kills U; writes
// on standard error what U printed (its start), then what T did, so that
// the last line is T's and a verdict's error never U's; and prints the
// marker when T exited with status 0. A T that a signal ended ends the script by the same
// signal. (Not a coprocess: bash makes its descriptors, and copies of
// them, close-on-exec.)
func splitRunScript(tb, ub *language.Build) string {
	var b strings.Builder
	p := shellQuote(splitPipesDir)
	fmt.Fprintf(&b, "mkdir -m 700 %s && mkfifo %s/calls %s/answers || exit 125\n", p, p, p)
	u := shellQuote(splitSolutionDir)
	fmt.Fprintf(&b, "(exec 3<%s/calls 4>%s/answers </dev/null >%s/output 2>&1 && cd %s && exec python3 -I -c %s %s %s /usr/bin/env %s) &\nup=$!\ndisown $up\n",
		p, p, u, u, shellQuote(splitLandlock), u, p, shellCommand(ub.Env, ub.Run))
	b.WriteString("IFS= read -r m\n")
	fmt.Fprintf(&b, "(exec 4>%s/calls 3<%s/answers </dev/null 2>%s/stderr && cd %s && exec /usr/bin/env %s)\ns=$?\n",
		p, p, shellQuote(splitTestsDir), shellQuote(sandbox.WorkDir), shellCommand(tb.Env, tb.Run))
	b.WriteString("kill -9 $up 2>/dev/null\n")
	fmt.Fprintf(&b, "if [ -s %s/output ]; then echo 'coderun eval: the solution printed:'; head -c %d %s/output; echo; fi >&2\n", u, splitOutputShown, u)
	fmt.Fprintf(&b, "cat %s/stderr >&2\n", shellQuote(splitTestsDir))
	b.WriteString("if [ $s = 0 ]; then printf '\\n%s\\n' \"$m\"; exit 0; fi\n")
	b.WriteString("if [ $s -gt 128 ]; then trap - $((s - 128)); kill -s $((s - 128)) $$; fi\nexit $s\n")
	return b.String()
}

// shellCommand is env's arguments (sorted) then cmd's, quoted for the shell.
func shellCommand(env map[string]string, cmd []string) string {
	var words []string
	keys := make([]string, 0, len(env))
	for k := range env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		words = append(words, shellQuote(k+"="+env[k]))
	}
	for _, a := range cmd {
		words = append(words, shellQuote(a))
	}
	return strings.Join(words, " ")
}
