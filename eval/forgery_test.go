package eval

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/coderun/coderun/sandbox"
	"golang.org/x/sys/unix"
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

// genericItem is a generic {id, code, test} Python problem's item for code.
func genericItem(t *testing.T, id, code, test string) (now, before Item) {
	t.Helper()
	line, err := json.Marshal(map[string]string{"id": id, "code": code, "test": test})
	if err != nil {
		t.Fatal(err)
	}
	ps, err := ReadProblems(bytes.NewReader(line), ReadOptions{}, StopAtBadLine)
	if err != nil {
		t.Fatal(err)
	}
	now = ps[0].Reference()
	// The item as generic items ran before they got the harness: solution
	// then tests, one program.
	before = Item{ID: id, TaskID: id, Code: code + "\n" + test}
	return now, before
}

// A generic item's solution that fails its tests must not pass by forging
// the verdict: by echoing its standard input (the marker), leaving early
// with status 0, patching the builtins or the tests, replacing an assertion
// with an object equal to everything, or reaching the tests' process
// (killing or stopping it, its /proc entries, its memory). Each forgery
// below fails `f(2) == 4` and the other tests, and most of them passed when
// a generic item was one program.
func TestForgedGenericVerdicts(t *testing.T) {
	const test = "assert f(2) == 4\nassert sorted(f([3, 1])) == [1, 1, 3, 3]\nassert len(f('ab')) == 4\n"
	forgeries := []forgery{
		{"stdin echoed at load", "import os, sys\nos.write(1, b'\\n' + sys.stdin.buffer.read())\nos._exit(0)\n"},
		{"stdin echoed by the function", "def f(x):\n    import os, sys\n    os.write(1, b'\\n' + sys.stdin.buffer.read())\n    os._exit(0)\n"},
		{"stdin echoed in an atexit hook", "import atexit, os, sys\natexit.register(lambda: (os.write(1, b'\\n' + sys.stdin.buffer.read()), os._exit(0)))\ndef f(x):\n    return x\n"},
		{"stdin read through /proc", "def f(x):\n    import os\n    for fd in ('/proc/self/fd/0', '/proc/%d/fd/0' % os.getppid()):\n        try:\n            os.write(1, b'\\n' + open(fd, 'rb').read())\n        except OSError:\n            pass\n    os._exit(0)\n"},
		{"sys.exit(0) at load", "import sys\nsys.exit(0)\n"},
		{"os._exit(0) in the function", "def f(x):\n    import os\n    os._exit(0)\n"},
		{"SystemExit raised in an atexit hook", "import atexit\ndef stop():\n    raise SystemExit(0)\natexit.register(stop)\ndef f(x):\n    return x\n"},
		{"always equal", "def f(x):\n    class E:\n        def __eq__(self, other):\n            return True\n        def __len__(self):\n            return 4\n        def __iter__(self):\n            return iter([3, 1, 3, 1])\n    return E()\n"},
		{"builtins replaced", "import builtins\nbuiltins.AssertionError = type('Nothing', (Exception,), {})\nbuiltins.sorted = lambda x: [1, 1, 3, 3]\nbuiltins.len = lambda x: 4\ndef f(x):\n    return 4 if x == 2 else None\n"},
		{"builtins shadowed", "def f(x):\n    return 4 if x == 2 else None\ndef sorted(x):\n    return [1, 1, 3, 3]\ndef len(x):\n    return 4\n"},
		{"test globals patched through frames and gc", "import gc, sys\ndef f(x):\n    f = sys._getframe(1)\n    while f:\n        f.f_globals['sorted'] = lambda x: [1, 1, 3, 3]\n        f.f_globals['len'] = lambda x: 4\n        f.f_builtins['AssertionError'] = type('Nothing', (Exception,), {})\n        f = f.f_back\n    return 4\n"},
		{"parent killed", "def f(x):\n    import os, signal\n    os.kill(os.getppid(), signal.SIGKILL)\n    return 4\n"},
		{"parent terminated, then exit 0", "def f(x):\n    import os, signal\n    os.kill(os.getppid(), signal.SIGTERM)\n    os._exit(0)\n"},
		{"parent's process group signalled", "def f(x):\n    import os, signal\n    os.killpg(0, signal.SIGINT)\n    return 4\n"},
		{"parent's stdin, stdout and memory through /proc", "def f(x):\n    import os\n    pp = os.getppid()\n    for path in ('/proc/%d/fd/0' % pp, '/proc/%d/mem' % pp):\n        try:\n            data = open(path, 'rb').read(1 << 16)\n        except OSError:\n            continue\n        with open('/proc/%d/fd/1' % pp, 'wb') as out:\n            out.write(b'\\n' + data)\n    os._exit(0)\n"},
		{"marker shape", "import os\nprint('\\ncoderun-eval-done-' + os.urandom(12).hex())\nos._exit(0)\n"},
	}
	checkForgeries(t, genericItem, test, "def f(x):\n    return x * 2\n", forgeries, 5*time.Second, 6)
}

// Generic items whose tests use the solution the ways generic tests do
// still pass through the harness: its functions, classes and their
// methods (Solution().f(x)), objects with state, its module-level values,
// the modules it imported, its exceptions; and a wrong answer still fails
// at the assertion's line.
func TestGenericItemsThroughTheHarness(t *testing.T) {
	cases := []struct {
		name, code, test string
		status           Status
		line             string
	}{
		{"function", "def f(x):\n    return x + 1\n", "assert f(1) == 2\n", Passed, ""},
		{"module-level value", "x = [1, 2]\ny = {'a': (1, 2.5)}\n", "assert x == [1, 2] and y['a'][1] == 2.5\n", Passed, ""},
		{"class with methods", "class Solution:\n    def twoSum(self, nums, target):\n        seen = {}\n        for i, n in enumerate(nums):\n            if target - n in seen:\n                return [seen[target - n], i]\n            seen[n] = i\n", "assert Solution().twoSum([2, 7, 11, 15], 9) == [0, 1]\ns = Solution()\nassert s.twoSum([3, 3], 6) == [0, 1]\n", Passed, ""},
		{"object with state", "class Stack:\n    def __init__(self):\n        self.items = []\n    def push(self, x):\n        self.items.append(x)\n    def pop(self):\n        return self.items.pop()\n    @property\n    def size(self):\n        return len(self.items)\n", "s = Stack()\ns.push(1)\ns.push(2)\nassert s.size == 2\nassert s.pop() == 2 and s.items == [1]\n", Passed, ""},
		{"the solution's imports", "import math\nimport collections as c\ndef area(r):\n    return math.pi * r * r\n", "assert area(1) == math.pi\nassert c.Counter('aab')['a'] == 2\n", Passed, ""},
		{"tests with helpers and exceptions", "def f(x):\n    if x < 0:\n        raise ValueError('negative')\n    return x\n", "def check(g):\n    try:\n        g(-1)\n    except ValueError as e:\n        assert str(e) == 'negative'\n    else:\n        raise AssertionError('no error')\ncheck(f)\n", Passed, ""},
		{"wrong answer", "def f(x):\n    return x\n", "assert f(1) == 1\nassert f(2) == 3, 'f(2) is wrong'\n", Failed, "assert f(2) == 3, 'f(2) is wrong'"},
		{"missing name", "def g(x):\n    return x\n", "assert f(1) == 1\n", Failed, "assert f(1) == 1"},
		{"a returned object is not a value", "def f():\n    class E:\n        def __eq__(self, o):\n            return True\n    return E()\n", "assert f() == 3\n", Failed, "assert f() == 3"},
	}
	var its []Item
	for _, c := range cases {
		it, _ := genericItem(t, c.name, c.code, c.test)
		its = append(its, it)
	}
	got, _, _ := runReal(t, its, Options{})
	for _, c := range cases {
		v := got[c.name]
		t.Logf("%s: %s %q at %q", c.name, v.Status, v.Error, v.Line)
		if v.Status != c.status || (c.line != "" && v.Line != c.line) {
			t.Errorf("%s: %s %q at %q, want %s at %q\n%s", c.name, v.Status, v.Error, v.Line, c.status, c.line, v.Stderr)
		}
	}
}

// genericBashItem is a generic bash problem's item for code, and the item
// as it ran before it had a harness (solution then tests, one program).
func genericBashItem(t *testing.T, id, code, test string) (now, before Item) {
	t.Helper()
	line, err := json.Marshal(map[string]string{"id": id, "code": code, "test": test, "language": "bash"})
	if err != nil {
		t.Fatal(err)
	}
	ps, err := ReadProblems(bytes.NewReader(line), ReadOptions{}, StopAtBadLine)
	if err != nil {
		t.Fatal(err)
	}
	return ps[0].Reference(), Item{ID: id, TaskID: id, Language: sandbox.Bash, Code: code + "\n" + test}
}

// markerScan is a Python program, run from a bash solution, that looks for
// the marker in every process it can see: their memory (through maps and
// mem), environment, command line and standard input, and prints what it
// finds on a line of its own.
const markerScan = `python3 - <<'PY'
import os, re
found = set()
for pid in [p for p in os.listdir("/proc") if p.isdigit()]:
    for what in ("environ", "cmdline", "fd/0"):
        try:
            with open("/proc/%s/%s" % (pid, what), "rb") as f:
                found.update(re.findall(rb"coderun-eval-done-[0-9a-f]{24}", f.read(1 << 20)))
        except OSError:
            pass
    try:
        maps = open("/proc/%s/maps" % pid).read().splitlines()
        mem = open("/proc/%s/mem" % pid, "rb")
    except OSError:
        continue
    for line in maps:
        lo, hi = (int(x, 16) for x in line.split()[0].split("-"))
        if "rw" not in line.split()[1] or hi - lo > 1 << 26:
            continue
        try:
            mem.seek(lo)
            found.update(re.findall(rb"coderun-eval-done-[0-9a-f]{24}", mem.read(hi - lo)))
        except (OSError, ValueError, OverflowError):
            pass
for m in found:
    os.write(1, b"\n" + m + b"\n")
PY`

// A bash solution that fails its tests must not pass by forging the
// verdict: reading the marker from its standard input, the harness's
// memory, environment or descriptors, ending the tests' shell, redefining
// the builtins the tests use ([, test, exit) or the PATH they find
// commands on. Each forgery fails `[ "$(f 2)" = 4 ]`, and most passed when
// a bash item was one program.
func TestForgedBashVerdicts(t *testing.T) {
	const test = "[ \"$(f 2)\" = 4 ] || exit 1\n[ \"$(f 3)\" = 6 ] || exit 1\necho 3 | grep -q 3 || exit 1\n"
	forgeries := []forgery{
		{"stdin echoed at load", "IFS= read -r m; printf '\\n%s\\n' \"$m\"; exit 0\nf() { echo 0; }"},
		{"stdin echoed by the function", "f() { IFS= read -r m; printf '\\n%s\\n' \"$m\" >&2; cat >&2; exit 0; }"},
		{"marker found in any process's memory", "f() {\n" + markerScan + "\n}\n" + markerScan},
		{"parent's stdin and stdout through /proc", "f() { cat /proc/$PPID/fd/0 > /proc/$PPID/fd/1; kill -9 $PPID; }"},
		{"exit and [ redefined", "exit() { :; }\n[() { return 0; }\ntest() { return 0; }\nf() { echo 0; }"},
		{"PATH hijacked", "mkdir -p /tmp/fake && printf '#!/bin/sh\\nexit 0\\n' > /tmp/fake/grep && chmod +x /tmp/fake/grep\nPATH=/tmp/fake:$PATH\nexit() { :; }\nf() { echo 0; }"},
		{"exit 0 at load", "exit 0"},
		{"tests' shell killed", "f() { kill -9 $PPID; kill -9 0; }"},
		{"EXIT trap prints stdin", "trap 'printf \"\\n%s\\n\" \"$(cat)\"; exit 0' EXIT\nf() { echo 0; }"},
		{"marker shape", "printf '\\ncoderun-eval-done-%s\\n' 0123456789abcdef01234567; exit 0"},
	}
	checkForgeries(t, genericBashItem, test, "f() { echo $(( $1 * 2 )); }", forgeries, 10*time.Second, 4)
}

// Generic bash items use the solution as bash tests do: its functions with
// arguments, standard input and exit status, inside $(...) and pipelines;
// its variables; the tests' own helpers. A failure still fails.
func TestBashItemsThroughTheHarness(t *testing.T) {
	cases := []struct {
		name, code, test string
		status           Status
	}{
		{"function, stdin and status", "up() { tr a-z A-Z; }\nis_even() { (( $1 % 2 == 0 )); }",
			"[ \"$(echo abc | up)\" = ABC ] || exit 1\nis_even 4 || exit 1\n! is_even 3 || exit 1\n", Passed},
		{"variables and output at load", "echo loading\nLIMIT=10\nname='a b'\nadd() { echo $(( $1 + $2 )); }",
			"[ \"$LIMIT\" = 10 ] && [ \"$name\" = 'a b' ] || exit 1\n[ $(add $LIMIT 5) -eq 15 ] || exit 1\n", Passed},
		{"the tests' own helpers", "sq() { echo $(( $1 * $1 )); }",
			"check() { [ \"$(sq $1)\" = \"$2\" ] || { echo \"sq $1\" >&2; exit 1; }; }\ncheck 3 9\ncheck 4 16\n", Passed},
		{"wrong answer", "sq() { echo $(( $1 + $1 )); }", "[ \"$(sq 3)\" = 9 ] || exit 1\n", Failed},
		{"missing function", "sq2() { :; }", "[ \"$(sq 3)\" = 9 ] || exit 1\n", Failed},
	}
	var its []Item
	for _, c := range cases {
		it, _ := genericBashItem(t, c.name, c.code, c.test)
		its = append(its, it)
	}
	got, _, _ := runReal(t, its, Options{})
	for _, c := range cases {
		v := got[c.name]
		t.Logf("%s: %s %q", c.name, v.Status, v.Error)
		if v.Status != c.status {
			t.Errorf("%s: %s %q, want %s\n%s", c.name, v.Status, v.Error, c.status, v.Stderr)
		}
	}
}

// genericNodeItem is a generic node problem's item for code, and the item
// as it ran before it had a harness (solution then tests, one program).
func genericNodeItem(t *testing.T, id, code, test string) (now, before Item) {
	t.Helper()
	line, err := json.Marshal(map[string]string{"id": id, "code": code, "test": test, "language": "node"})
	if err != nil {
		t.Fatal(err)
	}
	ps, err := ReadProblems(bytes.NewReader(line), ReadOptions{}, StopAtBadLine)
	if err != nil {
		t.Fatal(err)
	}
	return ps[0].Reference(), Item{ID: id, TaskID: id, Language: sandbox.Node, Code: code + "\n" + test}
}

// A node solution that fails its tests must not pass by forging the
// verdict: reading the marker from its standard input, the harness's
// memory or descriptors, patching the assert module the tests use,
// catching the tests' failure to print what it read, ending or signalling
// the tests' process, or returning an object where a value was expected.
func TestForgedNodeVerdicts(t *testing.T) {
	const test = "const assert = require('assert');\nassert.strictEqual(f(2), 4);\nassert.deepStrictEqual(g([3, 1]), [1, 3]);\nif (f(3) != 6) throw new Error('f(3) is wrong');\n"
	const wrong = "\nfunction f(x) { return x === 3 ? 6 : 0; }\nfunction g(x) { return x; }\n"
	forgeries := []forgery{
		{"stdin echoed at load", "const fs = require('fs');\nfs.writeSync(1, '\\n' + fs.readFileSync(0));\nprocess.exit(0);" + wrong},
		{"stdin echoed when the tests fail", "const fs = require('fs');\nprocess.on('uncaughtException', () => { fs.writeSync(1, '\\n' + fs.readFileSync(0, 'latin1')); process.exit(0); });" + wrong},
		{"assert patched", "const a = require('assert');\na.strictEqual = a.deepStrictEqual = () => {};" + wrong},
		{"parent's stdin and stdout through /proc", "const fs = require('fs');\nfunction f(x) { fs.writeFileSync('/proc/' + process.ppid + '/fd/1', '\\n' + fs.readFileSync('/proc/' + process.ppid + '/fd/0')); return 0; }\nfunction g(x) { return x; }"},
		{"parent killed", "function f(x) { process.kill(process.ppid, 'SIGKILL'); return 4; }\nfunction g(x) { return x; }"},
		{"marker found in any process's memory", "function f(x) { require('child_process').execSync(" + strconv.Quote(markerScan) + ", {stdio: 'inherit', shell: '/bin/bash'}); return 0; }\nfunction g(x) { return x; }"},
		{"object equal to everything", "function f(x) { return { valueOf() { return x * 2; }, toString() { return String(x * 2); } }; }\nfunction g(x) { return new Proxy([1, 3], {}); }"},
		{"exit 0 at load", "process.exit(0);" + wrong},
		{"marker shape", "console.log('\\ncoderun-eval-done-0123456789abcdef01234567'); process.exit(0);" + wrong},
	}
	checkForgeries(t, genericNodeItem, test, "function f(x) { return 2 * x; }\nconst g = (xs) => [...xs].sort((a, b) => a - b);", forgeries, 15*time.Second, 3)
}

// Generic node items use the solution as JavaScript tests do: functions
// and arrow functions (declared with function, const or module.exports),
// classes with state, methods and getters, exact values (NaN, -0,
// undefined, BigInt, Map, Set), its errors by class; a failure still fails.
func TestNodeItemsThroughTheHarness(t *testing.T) {
	const assert = "const assert = require('assert');\n"
	cases := []struct {
		name, code, test string
		status           Status
	}{
		{"functions", "function add(a, b) { return a + b; }\nconst mul = (a, b) => a * b;\nmodule.exports = { sub: (a, b) => a - b };",
			assert + "assert.strictEqual(add(2, 3), 5);\nassert.strictEqual(mul(2, 3), 6);\nassert.strictEqual(sub(2, 3), -1);\n", Passed},
		{"exact values", "const vals = () => [NaN, -0, undefined, 10n ** 20n, new Map([[1, 'a']]), new Set(['x']), { __proto__: null, k: [1.5] }, 'é'];",
			assert + "const v = vals();\nassert.ok(Number.isNaN(v[0]) && Object.is(v[1], -0) && v[2] === undefined && v[3] === 10n ** 20n);\nassert.deepStrictEqual(v[4], new Map([[1, 'a']]));\nassert.deepStrictEqual(v[5], new Set(['x']));\nassert.deepStrictEqual(v[6].k, [1.5]);\nassert.strictEqual(v[7], 'é');\n", Passed},
		{"class with state", "class Stack { constructor() { this.items = []; } push(x) { this.items.push(x); return this; } pop() { return this.items.pop(); } get size() { return this.items.length; } }",
			assert + "const s = new Stack();\ns.push(1).push(2);\nassert.strictEqual(s.size, 2);\nassert.strictEqual(s.pop(), 2);\nassert.deepStrictEqual(s.items, [1]);\n", Passed},
		{"errors by class", "function f(x) { if (x < 0) throw new RangeError('negative'); return x; }",
			assert + "assert.throws(() => f(-1), RangeError);\nassert.throws(() => f(-1), /negative/);\nassert.strictEqual(f(1), 1);\n", Passed},
		{"asynchronous tests", "function f(x) { return 2 * x; }",
			assert + "(async () => { await new Promise((r) => setTimeout(r, 10)); assert.strictEqual(f(2), 4); })();\n", Passed},
		{"asynchronous tests failing", "function f(x) { return 2 * x; }",
			assert + "(async () => { await new Promise((r) => setTimeout(r, 10)); assert.strictEqual(f(2), 5); })();\n", Failed},
		{"wrong answer", "function f(x) { return x; }", assert + "assert.strictEqual(f(2), 4);\n", Failed},
		{"missing function", "function g(x) { return x; }", assert + "assert.strictEqual(f(2), 4);\n", Failed},
		{"syntax error", "function f(x) { return x", assert + "assert.strictEqual(f(2), 2);\n", Failed},
	}
	var its []Item
	for _, c := range cases {
		it, _ := genericNodeItem(t, c.name, c.code, c.test)
		its = append(its, it)
	}
	got, _, _ := runReal(t, its, Options{Limits: sandbox.Limits{WallTime: 15 * time.Second}})
	for _, c := range cases {
		v := got[c.name]
		t.Logf("%s: %s %q", c.name, v.Status, v.Error)
		if v.Status != c.status {
			t.Errorf("%s: %s %q, want %s\n%s", c.name, v.Status, v.Error, c.status, v.Stderr)
		}
	}
}

// The solution's process cannot signal the tests' process (Landlock's
// signal scope, Linux 6.12): a solution that stops it (which left the item
// to run out its wall time) or kills it fails at once, with the error its
// attempt met.
func TestSolutionCannotSignalTheTests(t *testing.T) {
	// landlock_create_ruleset(NULL, 0, LANDLOCK_CREATE_RULESET_VERSION)
	if abi, _, _ := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, 0, 0, 1); int(abi) < 6 {
		t.Skipf("Landlock ABI %d here: signal scoping needs 6 (Linux 6.12)", int(abi))
	}
	its := []Item{}
	for _, sig := range []string{"SIGSTOP", "SIGKILL", "SIGTERM"} {
		it, _ := genericItem(t, sig, "def f(x):\n    import os, signal\n    os.kill(os.getppid(), signal."+sig+")\n    return 2 * x\n", "assert f(1) == 2\n")
		its = append(its, it)
	}
	got, _, _ := runReal(t, its, Options{Limits: sandbox.Limits{WallTime: 5 * time.Second}})
	for _, it := range its {
		v := got[it.ID]
		t.Logf("%s: %s %q", it.ID, v.Status, v.Error)
		if v.Status != Failed || !strings.Contains(v.Error, "PermissionError") {
			t.Errorf("%s sent to the tests' process: %s %q, want failed with the solution's PermissionError", it.ID, v.Status, v.Error)
		}
	}
}

// forgery is a solution that tries to be scored passed without passing.
type forgery struct{ name, code string }

// checkForgeries runs each forgery's item through its harness and, for
// comparison, as the one program a generic item used to be (item returns
// both), beside an honest solution: every forgery must fail now and the
// honest one pass, and at least minBefore forgeries must have passed as
// one program, or the scenarios no longer test anything.
func checkForgeries(t *testing.T, item func(t *testing.T, id, code, test string) (now, before Item), test, honest string, forgeries []forgery, wall time.Duration, minBefore int) {
	t.Helper()
	var its, before []Item
	for _, f := range forgeries {
		now, old := item(t, f.name, f.code, test)
		its, before = append(its, now), append(before, old)
	}
	h, _ := item(t, "honest", honest, test)
	its = append(its, h)
	lim := Options{Limits: sandbox.Limits{WallTime: wall}}
	got, _, _ := runReal(t, its, lim)
	was, _, _ := runReal(t, before, lim)
	passedBefore := 0
	for _, f := range forgeries {
		v := got[f.name]
		if v.Status == Passed || v.Status == "" {
			t.Errorf("%s: %s, want failed\n%s", f.name, v.Status, v.Stderr)
		}
		if was[f.name].Status == Passed {
			passedBefore++
		}
		t.Logf("%s: now %s (%s); as one program %s", f.name, v.Status, v.Error, was[f.name].Status)
	}
	if v := got["honest"]; v.Status != Passed {
		t.Errorf("the honest solution: %s %s\n%s", v.Status, v.Error, v.Stderr)
	}
	if passedBefore < minBefore {
		t.Errorf("only %d forgeries passed as one program: the scenarios no longer test anything", passedBefore)
	}
}
