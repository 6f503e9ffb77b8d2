package eval

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// harnessCheck is Python run after the harness's definitions (not its
// _run): the codec between the solution's process and the tests', checked
// in one interpreter. It prints "ok" when every check holds.
const harnessCheck = `
import collections, json, math

def roundtrip(v):
    return _decode(json.loads(json.dumps(_encode(v, lambda o: ["r", 1, type(o).__name__]))), lambda x: ("ref", x[2]))

cases = [None, True, False, 0, -5, 2**53, -2**53, 2**200, -2**70, 1.5, math.inf, -math.inf, -0.0, 5e-324,
         1-2j, "", "x\udc80y\u2028", b"\x00\xff", [], [1, (2, 3)], (), (1,), {(1, 2): {3}}, frozenset({1, "a"}),
         collections.Counter("aab"), collections.OrderedDict([("b", 1), ("a", 2)]), collections.defaultdict(list, {1: [2]}),
         collections.deque([1, 2], 5), int, str, [[[[]]]]]
for v in cases:
    r = roundtrip(v)
    assert type(r) is type(v), (v, r)
    assert r == v and repr(r) == repr(v), (v, r)
assert math.isnan(roundtrip(math.nan))
assert roundtrip(collections.defaultdict(list)).default_factory is list
assert roundtrip(collections.defaultdict(lambda: 1)).default_factory is None

# What is not plain data, exactly, is a handle: subclasses, objects, nesting too deep.
class Int(int):
    def __eq__(self, other):
        return True
for v in [Int(1), object(), (i for i in ()), [Int(2)], print]:
    r = roundtrip(v)
    assert r == ("ref", type(v).__name__) or r == [("ref", "Int")], (v, r)
deep = []
for _ in range(200):
    deep = [deep]
assert "ref" in repr(roundtrip(deep))

# Malformed or hostile values are refused, never run.
for bad in [1.5, {"a": 1}, [], [7], ["x", 1], ["l", "notalist"], ["d", [[1]]], ["d", [[[1], 2]]], ["f", "nope"],
            ["i", "zz"], ["T", "eval"], ["T", ["list"]], ["D", [], "os.system"], ["Q", [], "5"], ["c", "0x1p0"],
            ["__import__", "os"]]:
    try:
        _decode(bad, lambda x: (_ for _ in ()).throw(SolutionProtocolError("ref")))
    except (SolutionProtocolError, ValueError, TypeError):
        pass
    else:
        raise AssertionError("accepted %r" % (bad,))
# A module crosses as T's own copy only under its own name, and only a
# standard one the tests may use.
import sys as the_sys
link = _Link(0, None)
assert link.ref(["m", 1, "sys"], "sys") is the_sys
for x, name in [(["m", 1, "cmath"], "math"), (["m", 1, "os"], "os"), (["m", 1, "sys"], None), (["r", 1, "sys"], "sys")]:
    assert type(link.ref(x, name)) is SolutionObject, (x, name)
print("ok")
`

func TestHarnessCodec(t *testing.T) {
	py := "/usr/bin/python3"
	if _, err := os.Stat(py); err != nil {
		t.Skip("no " + py)
	}
	out, err := exec.Command(py, "-c", harnessSource+"\n"+harnessCheck).CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "ok" {
		t.Fatalf("%v\n%s", err, out)
	}
}
