package eval

import (
	"testing"

	"github.com/coderun/coderun/sandbox"
)

// A solution that fails its tests must not pass by mimicking the harness's
// signal of a finished run: by printing whatever it finds in its own
// source, code objects, memory, environment or files, by printing a line
// of the marker's shape, or by leaving early with status 0. Each item
// below ends with a failing test, which it tries to skip.
func TestForgedEndOfTests(t *testing.T) {
	const failing = "\nassert False, 'the tests fail'\n"
	// Everything a Python program can find about itself, printed, then an
	// exit that skips the rest (the failing test, and what follows it).
	const leak = `import gc, os, sys
seen = []
def consts(code):
    for c in code.co_consts:
        if isinstance(c, str):
            seen.append(c)
        elif hasattr(c, "co_consts"):
            consts(c)
consts(sys._getframe().f_code)
for o in gc.get_objects():
    if hasattr(o, "co_consts"):
        consts(o)
    elif hasattr(o, "get_source"):
        try:
            seen.append(o.get_source("__main__") or "")
        except Exception:
            pass
seen += [k + "=" + v for k, v in os.environ.items()]
for root, dirs, files in os.walk("/work"):
    for f in files:
        try:
            seen.append(open(os.path.join(root, f)).read())
        except Exception:
            pass
try:
    seen.append(open("/proc/self/cmdline").read())
except Exception:
    pass
for s in seen:
    for line in s.splitlines():
        os.write(1, ("\n" + line.strip().strip("'\")") + "\n").encode())
`
	items := []Item{
		{ID: "own source and memory, _exit", Code: leak + "os._exit(0)" + failing},
		{ID: "own source and memory, sys.exit", Code: leak + "sys.exit(0)" + failing},
		{ID: "marker shape", Code: "import os\nprint('\\ncoderun-eval-done-' + os.urandom(12).hex())\nos._exit(0)" + failing},
		{ID: "sys.exit(0)", Code: "import sys\nsys.exit(0)" + failing},
		{ID: "os._exit(0)", Code: "import os\nos._exit(0)" + failing},
		{ID: "raise SystemExit", Code: "raise SystemExit" + failing},
		{ID: "node source, process.exit(0)", Language: sandbox.Node, Code: "for (const m of arguments.callee.toString().match(/coderun-eval-done-[0-9a-f]+/g) || []) console.log('\\n' + m);\nprocess.exit(0);\nthrow new Error('the tests fail');"},
		{ID: "bash variables, exit 0", Language: sandbox.Bash, Code: "for m in $(set | grep -ao 'coderun-eval-done-[0-9a-f]*'); do printf '\\n%s\\n' \"$m\"; done; exit 0\nfalse"},
		// And a solution that passes still passes.
		{ID: "honest", Code: "def f():\n    return 1\nassert f() == 1\n"},
	}
	got, _, _ := runReal(t, items, Options{Concurrency: 2})
	for _, it := range items {
		v, ok := got[it.ID]
		want := Failed
		if it.ID == "honest" {
			want = Passed
		}
		if !ok || v.Status != want {
			t.Errorf("%s: %s (%s), want %s", it.ID, v.Status, v.Error, want)
		}
	}
}
