package toolchain_test

import (
	"strings"
	"testing"
	"time"

	"github.com/coderun/coderun/language"
	"github.com/coderun/coderun/sandbox"
	"github.com/coderun/coderun/sandbox/toolchain"
)

// forgeReport is a compile-step wrapper (gcc -wrapper) that looks for the
// driver's marker in the memory of every process it may read, and when
// it finds it, writes a forged report: the compile step "ended" an hour
// from now, having used an hour of CPU.
const forgeReport = `import os, re, sys, time
pat = re.compile(rb"coderun-compiled-[0-9a-f]{32}:")
found = None
for pid in os.listdir("/proc"):
    if not pid.isdigit() or int(pid) == os.getpid():
        continue
    try:
        maps = open("/proc/%s/maps" % pid).read().splitlines()
        mem = open("/proc/%s/mem" % pid, "rb", 0)
    except OSError as e:
        sys.stderr.write("pid %s: %s\n" % (pid, e))
        continue
    for l in maps:
        a, b = [int(x, 16) for x in l.split()[0].split("-")]
        if "rw" not in l.split()[1]:
            continue
        try:
            mem.seek(a)
            m = pat.search(mem.read(b - a))
        except (OSError, OverflowError, ValueError):
            continue
        if m:
            found = m.group(0)
            break
    if found:
        break
if found:
    m = found.decode()
    sys.stderr.write(m)
    report = "0 %.6f\n60m0.000s 0m0.000s\n0m0.000s 0m0.000s\nforged\n" % (time.time() + 3600)
    if os.path.exists("/work/report"):
        report = open("/work/report").read()
    sys.stdout.write(m + report)
    sys.stdout.flush()
    sys.stderr.flush()
else:
    sys.stderr.write("no marker found\n")
os.execvp(sys.argv[1], sys.argv[1:])
`

// TestCompileStepCannotForgeTheReport: a compile step that runs code of
// the request's (gcc -wrapper: its compile arguments are the tenant's)
// can read the driver's marker from the driver's memory and write a
// report of its own, one that says the compile step ended an hour from
// now after an hour of CPU. The host's clock and CPU account bound what
// the report says: the run step is still stopped at its own wall time
// (with the forged end it ran on to the sandbox's backstop), and neither
// step's usage is the forger's, pooled or not. (What the compile step
// prints after a forged marker is the run step's output: its own, moved.)
func TestCompileStepCannotForgeTheReport(t *testing.T) {
	need(t, language.C)
	for _, pooled := range []bool{false, true} {
		rt := newRuntimeWith(t, toolchainOptions(pooled))
		if pooled {
			waitPool(t, rt, 1)
		}
		res := run(t, rt, sandbox.Request{Language: language.C, Code: "#include <unistd.h>\nint main(void) { sleep(8); return 0; }\n",
			CompileArgs: []string{"-wrapper", "/usr/bin/python3,/work/forge.py"}, Limits: sandbox.Limits{WallTime: 2 * time.Second},
			Files: []sandbox.File{{Path: "forge.py", Content: []byte(forgeReport)}}})
		if !strings.Contains(res.Stdout, "forged") || res.Compile == nil {
			t.Fatalf("pooled %v: the forger found no marker (the scenario tests nothing): %s, stdout %q, stderr %q", pooled, res.Summary(), res.Stdout, res.Stderr)
		}
		if res.Pooled != pooled {
			t.Errorf("pooled %v: ran pooled %v", pooled, res.Pooled)
		}
		if res.Reason != sandbox.ReasonTimeout || !strings.Contains(res.Error, "2s") {
			t.Errorf("pooled %v: the run step was not held to its own wall time: %s", pooled, res.Summary())
		}
		if u := res.Compile.Usage; u.Wall > time.Minute || u.CPU() > time.Minute {
			t.Errorf("pooled %v: the compile step's usage is the forged report's: %+v", pooled, u)
		}
	}
}

// TestMalformedReportIsTheCompileSteps: a report the host cannot read
// (a marker followed by junk, or by more than a report's length) is not
// the driver's, which writes none: the compile step wrote it, and the run
// is that step's failure, stopped there, not a setup error of the host's
// (the program ran on, under the compile step's limits, its output
// dropped), pooled or not.
func TestMalformedReportIsTheCompileSteps(t *testing.T) {
	need(t, language.C)
	for _, pooled := range []bool{false, true} {
		rt := newRuntimeWith(t, toolchainOptions(pooled))
		for _, report := range []string{"junk\n\n\n", strings.Repeat("1", 4096)} {
			if pooled {
				waitPool(t, rt, 1)
			}
			res := run(t, rt, sandbox.Request{Language: language.C, Code: "#include <stdio.h>\n#include <unistd.h>\nint main(void) { sleep(8); puts(\"ran\"); return 0; }\n",
				CompileArgs: []string{"-wrapper", "/usr/bin/python3,/work/forge.py"},
				Files:       []sandbox.File{{Path: "forge.py", Content: []byte(forgeReport)}, {Path: "report", Content: []byte(report)}}})
			if res.Reason != sandbox.ReasonCompileError || res.Compile == nil || !strings.Contains(res.Error, "not the driver's") || res.Usage.Wall > 5*time.Second {
				t.Errorf("pooled %v, report %.10q: %s (error %q, wall %v); want a compile error, stopped", pooled, report, res.Summary(), res.Error, res.Usage.Wall)
			}
		}
	}
}

func toolchainOptions(pooled bool) toolchain.Options {
	if pooled {
		return toolchain.Options{Pool: 1}
	}
	return toolchain.Options{}
}

// shellIn is a C program that runs script with /bin/sh and exits with
// its status.
func shellIn(script string) string {
	return "#include <stdlib.h>\nint main(void) { return system(\"" + strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`).Replace(script) + "\") ? 1 : 0; }\n"
}

// TestPooledRunLeavesNothingToTheNext: a pooled run that signals every
// process it can (the next pooled sandbox's driver waits beside it),
// leaves a process behind, files in /tmp, /dev/shm and the workspace, a
// FIFO, and a shell start-up file in the cache's HOME, changes nothing
// the next pooled run sees: that run starts, finds none of it, and sees
// no process but its own.
func TestPooledRunLeavesNothingToTheNext(t *testing.T) {
	need(t, language.C)
	rt := newRuntimeWith(t, toolchain.Options{Pool: 2})
	waitPool(t, rt, 2)
	killer := run(t, rt, sandbox.Request{Language: language.C, Code: shellIn(`kill -9 -1; exit 0`)})
	if !killer.Pooled {
		t.Fatalf("the killer's run was not pooled: %s", killer.Summary())
	}
	waitPool(t, rt, 2)
	first := run(t, rt, sandbox.Request{Language: language.C, Code: shellIn(`for p in /proc/[0-9]*; do case ${p#/proc/} in $$|$PPID) ;; *) kill -STOP ${p#/proc/} 2>/dev/null;; esac; done
setsid sh -c 'while :; do echo x >> /tmp/left; sleep 0.05; done' </dev/null >/dev/null 2>&1 &
echo x > /dev/shm/left; echo x > /work/left; mkfifo /tmp/fifo /work/fifo
echo 'echo hijacked' > "$HOME/.bashrc"; echo 'echo hijacked' > "$HOME/.profile"
echo 'echo hijacked' > "$TMPDIR/x"
exit 0`)})
	if !first.Pooled {
		t.Fatalf("first run: %s, pooled %v, stderr %q", first.Summary(), first.Pooled, first.Stderr)
	}
	second := run(t, rt, sandbox.Request{Language: language.C, Code: shellIn(`sleep 0.3
ls -A /tmp /dev/shm /work "$HOME" "$TMPDIR"
for p in /proc/[0-9]*; do printf '%s ' "$(tr '\0' ' ' < $p/cmdline)"; echo; done`)})
	if !second.OK() || !second.Pooled {
		t.Fatalf("second run: %s, pooled %v, stderr %q", second.Summary(), second.Pooled, second.Stderr)
	}
	for _, left := range []string{"left", "fifo", "hijacked", ".bashrc", ".profile", "while"} {
		if strings.Contains(second.Stdout, left) {
			t.Errorf("the second run sees %q of the first:\n%s", left, second.Stdout)
		}
	}
	t.Logf("second run:\n%s", second.Stdout)
}

// TestPooledCompileErrorSaysPooled: a run whose compile step failed in a
// pooled sandbox says it was pooled (the server's metrics count pooled
// starts by it), as a run that compiled does.
func TestPooledCompileErrorSaysPooled(t *testing.T) {
	need(t, language.C)
	rt := newRuntimeWith(t, toolchain.Options{Pool: 1})
	waitPool(t, rt, 1)
	res := run(t, rt, sandbox.Request{Language: language.C, Code: "int main(void) { return x; }\n"})
	if res.Reason != sandbox.ReasonCompileError || !res.Pooled || res.Compile == nil || !res.Compile.Pooled {
		t.Errorf("%s: pooled %v (compile step: %+v)", res.Summary(), res.Pooled, res.Compile)
	}
}
