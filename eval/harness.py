# coderun eval harness (see the eval package's documentation, "Verdicts a
# solution cannot forge"). This process, T, is trusted: it forks the
# solution's process, U, before any of the solution's code exists in memory,
# then reads the run's marker and the tests from its standard input (which U
# no longer has), runs the tests with the solution's names standing for calls
# into U, and prints the marker only when every test passed. U answers with
# plain data only, decoded here without running any of U's code.
import builtins
import collections
import ctypes
import json
import os
import signal
import struct
import sys
import types

_FILE = sys._getframe().f_code.co_filename
_MAX_MESSAGE = 256 << 20
_MAX_DEPTH = 100
# Modules the tests may get by name when the solution imported them under
# that name (MBPP's tests use the solution's `import sys`): T imports its
# own copy. Another module, or one under another name, stays a handle.
_MODULES = frozenset(("bisect", "cmath", "collections", "copy", "datetime", "decimal", "fractions", "functools", "heapq", "itertools", "math", "operator", "random", "re", "statistics", "string", "sys", "time", "typing"))
_PLAIN = "only plain data crosses it (None, bool, int, float, complex, str, bytes, list, tuple, dict, set, frozenset, collections' Counter, OrderedDict, defaultdict and deque, builtin types)"
# Builtin types that cross by name (MBPP 533 passes int to the solution), and
# the only default factories a defaultdict keeps when it crosses.
_TYPES = {t.__name__: t for t in (bool, bytes, complex, dict, float, frozenset, int, list, object, set, str, tuple, type)}
_MUTABLE = (list, dict, set, collections.Counter, collections.OrderedDict, collections.defaultdict, collections.deque)
_DICTS = {collections.Counter: "C", collections.OrderedDict: "O", collections.defaultdict: "D"}


class SolutionProtocolError(Exception):
    """The solution's process sent something that is not a valid answer."""


class _SolutionEnded(Exception):
    """The solution's process ended (or closed its side) during the tests."""


class SolutionObject:
    """An object of the solution's that is not plain data: it stays in the
    solution's process; the tests can call it and pass it back, nothing else."""

    __slots__ = ("_id", "_type", "_link")

    def __init__(self, ident, typ, link):
        self._id, self._type, self._link = ident, typ, link

    def __call__(self, *args, **kwargs):
        return self._link.call(self, args, kwargs)

    def __repr__(self):
        return "<the solution's %s object>" % self._type

    def _refuse(self, what):
        return TypeError("the solution's %s object cannot be %s across the process boundary: %s" % (self._type, what, _PLAIN))

    def __eq__(self, other):
        if type(other) is SolutionObject and other._id == self._id:
            return True
        raise self._refuse("compared")

    def __ne__(self, other):
        return not self.__eq__(other)

    def __hash__(self):
        return hash(("SolutionObject", self._id))

    def __bool__(self):
        raise self._refuse("tested for truth")

    def __iter__(self):
        raise self._refuse("iterated")

    def __len__(self):
        raise self._refuse("measured")

    def __getitem__(self, key):
        raise self._refuse("indexed")

    def __contains__(self, item):
        raise self._refuse("searched")

    def __getattr__(self, name):
        if self._link.attributes and not (name.startswith("__") and name.endswith("__")):
            return self._link.getattr(self, name)
        raise AttributeError("the solution's %s object's attribute %r cannot be read across the process boundary: %s" % (self._type, name, _PLAIN))


def _encode(v, ref, depth=0):
    """Plain data as JSON-able values, exact types kept; anything else is
    what ref(v) returns (U: a handle; T: an error)."""
    t = type(v)
    if v is None or t is bool or t is str:
        return v
    if t is int:
        return v if -(1 << 53) < v < (1 << 53) else ["i", format(v, "x")]
    if t is float:
        return ["f", v.hex()]
    if depth < _MAX_DEPTH:
        if t is list or t is tuple or t is set or t is frozenset:
            tag = {list: "l", tuple: "t", set: "S", frozenset: "F"}[t]
            return [tag, [_encode(x, ref, depth + 1) for x in v]]
        if t is dict or t in _DICTS:
            items = [[_encode(k, ref, depth + 1), _encode(x, ref, depth + 1)] for k, x in dict.items(v)]
            if t is collections.defaultdict:
                f = v.default_factory
                return ["D", items, f.__name__ if type(f) is type and _TYPES.get(f.__name__) is f else None]
            return [_DICTS.get(t, "d"), items]
        if t is collections.deque:
            return ["Q", [_encode(x, ref, depth + 1) for x in v], v.maxlen]
        if t is complex:
            return ["c", v.real.hex(), v.imag.hex()]
        if t is bytes:
            return ["b", v.hex()]
        if t is type and _TYPES.get(v.__name__) is v:
            return ["T", v.__name__]
    return ref(v)


def _decode(x, ref):
    """The inverse of _encode, by hand: builds only plain data, and calls
    ref(item) for a handle; anything malformed raises SolutionProtocolError."""
    t = type(x)
    if x is None or t is bool or t is int or t is str:
        return x
    if t is not list or not x or type(x[0]) is not str:
        raise SolutionProtocolError("malformed value")
    tag = x[0]
    if tag in ("d", "C", "O", "D") and len(x) == (3 if tag == "D" else 2) and type(x[1]) is list:
        if tag == "D":
            if x[2] is not None and (type(x[2]) is not str or x[2] not in _TYPES):
                raise SolutionProtocolError("malformed defaultdict")
            out = collections.defaultdict(_TYPES.get(x[2]))
        else:
            out = {"d": dict, "C": collections.Counter, "O": collections.OrderedDict}[tag]()
        for kv in x[1]:
            if type(kv) is not list or len(kv) != 2:
                raise SolutionProtocolError("malformed dict")
            out[_decode(kv[0], ref)] = _decode(kv[1], ref)
        return out
    if tag == "Q" and len(x) == 3 and type(x[1]) is list and (x[2] is None or type(x[2]) is int):
        return collections.deque([_decode(i, ref) for i in x[1]], x[2])
    if tag == "T" and len(x) == 2 and type(x[1]) is str and x[1] in _TYPES:
        return _TYPES[x[1]]
    if tag in ("l", "t", "S", "F") and len(x) == 2 and type(x[1]) is list:
        items = [_decode(i, ref) for i in x[1]]
        return {"l": list, "t": tuple, "S": set, "F": frozenset}[tag](items)
    if len(x) == 2 and type(x[1]) is str:
        if tag == "i":
            return int(x[1], 16)
        if tag == "f":
            return float.fromhex(x[1])
        if tag == "b":
            return bytes.fromhex(x[1])
    if tag == "c" and len(x) == 3 and type(x[1]) is str and type(x[2]) is str:
        return complex(float.fromhex(x[1]), float.fromhex(x[2]))
    if tag in ("r", "m"):
        return ref(x)
    raise SolutionProtocolError("malformed value")


class _Conn:
    """Length-prefixed JSON messages over a pair of pipes."""

    def __init__(self, rfd, wfd):
        self.rfd, self.wfd = rfd, wfd

    def send(self, msg):
        data = json.dumps(msg, separators=(",", ":")).encode()
        data = struct.pack(">Q", len(data)) + data
        while data:
            data = data[os.write(self.wfd, data):]

    def _read(self, n):
        parts = []
        while n:
            b = os.read(self.rfd, min(n, 1 << 20))
            if not b:
                raise _SolutionEnded()
            parts.append(b)
            n -= len(b)
        return b"".join(parts)

    def recv(self):
        (n,) = struct.unpack(">Q", self._read(8))
        if n > _MAX_MESSAGE:
            raise SolutionProtocolError("message of %d bytes" % n)
        try:
            return json.loads(self._read(n))
        except (ValueError, RecursionError) as e:
            raise SolutionProtocolError("undecodable message: %s" % e) from None


_SOURCES = {}


def _register(name, source):
    """Keeps the source compiled under name, for tracebacks (linecache and
    traceback are imported only to print one: a passing item never pays
    for them)."""
    _SOURCES[name] = source


def _frames(tb):
    import linecache
    import traceback

    for name, source in _SOURCES.items():
        linecache.cache[name] = (len(source), None, source.splitlines(True), name)
    return "".join(traceback.format_list([f for f in traceback.extract_tb(tb) if f.filename != _FILE]))


def _exception_only(e):
    import traceback

    return "".join(traceback.format_exception_only(type(e), e))


def _parse(source, name="<string>"):
    """source's syntax tree, without importing ast (PyCF_ONLY_AST)."""
    return compile(source, name, "exec", 0x400)


def _walk(node, into=lambda n: True):
    """node and the nodes under it (below those for which into is false)."""
    todo = [node]
    while todo:
        n = todo.pop()
        yield n
        if not into(n):
            continue
        for f in n._fields:
            v = getattr(n, f, None)
            if type(v) is list:
                todo.extend(x for x in v if hasattr(x, "_fields"))
            elif hasattr(v, "_fields"):
                todo.append(v)


# --- U: the solution's process -------------------------------------------

def _solution(source, setup, conn):
    module = types.ModuleType("__main__")
    sys.modules["__main__"] = module
    g = module.__dict__
    refs = {}

    def ref(v):
        refs[len(refs) + 1] = v
        if type(v) is types.ModuleType:
            return ["m", len(refs), getattr(v, "__name__", "")]
        return ["r", len(refs), type(v).__name__]

    def deref(x):
        if x[0] != "r" or x[1] not in refs:
            raise SolutionProtocolError("unknown object")
        return refs[x[1]]

    def fail(e):
        sys.stdout.flush()
        sys.stderr.flush()
        try:
            args = _encode(e.args, lambda v: (_ for _ in ()).throw(TypeError()))
        except Exception:
            args = None
        try:
            only = _exception_only(e)
        except Exception:
            only = type(e).__name__ + "\n"
        conn.send(["E", type(e).__name__, [c.__name__ for c in type(e).__mro__], args, _frames(e.__traceback__), only])

    try:
        _register("<solution>", source)
        exec(compile(source, "<solution>", "exec"), g)
        if setup:
            _register("<setup>", setup)
            exec(compile(setup, "<setup>", "exec"), g)
    except BaseException as e:
        fail(e)
        return
    sys.stdout.flush()
    sys.stderr.flush()
    conn.send(["ready"])
    while True:
        msg = conn.recv()
        if msg[0] == "N":
            conn.send(["R", [[n, _encode(g[n], ref)] for n in msg[1] if n in g and not (n.startswith("__") and n.endswith("__"))]])
            continue
        if msg[0] == "A":
            try:
                result = getattr(deref(msg[1]), msg[2])
                reply = ["R", _encode(result, ref), []]
            except BaseException as e:
                fail(e)
                continue
            conn.send(reply)
            continue
        fn = deref(msg[1])
        args = [_decode(a, deref) for a in msg[2]]
        kwargs = {k: _decode(v, deref) for k, v in msg[3]}
        try:
            result = fn(*args, **kwargs)
        except BaseException as e:
            fail(e)
            continue
        try:
            back = [[i, _encode(a, ref)] for i, a in enumerate(args) if type(a) in _MUTABLE]
            back += [[k, _encode(a, ref)] for k, a in kwargs.items() if type(a) in _MUTABLE]
            reply = ["R", _encode(result, ref), back]
        except BaseException as e:
            fail(e)
            continue
        sys.stdout.flush()
        sys.stderr.flush()
        conn.send(reply)


# --- T: the tests' process -----------------------------------------------

class _Link:
    """T's side of the conversation with U. With attributes, the tests may
    read the attributes of the solution's objects (generic items, whose
    tests use the solution's classes: Solution().method(...)), each read
    answered by U as a call is; and a module of the solution's crosses as
    T's own copy of a module of that name from the installation, if any."""

    def __init__(self, pid, conn, attributes=False):
        self.pid, self.conn, self.attributes = pid, conn, attributes
        self.classes = {}

    def ref(self, x, name=None):
        """A SolutionObject for a handle; for a module the solution bound to
        name, with that name (its `import sys`), T's own copy of it when it
        is a standard one that the tests may use."""
        if len(x) != 3 or type(x[1]) is not int or type(x[2]) is not str:
            raise SolutionProtocolError("malformed object")
        if x[0] == "m" and x[2] == name and name in _MODULES:
            return __import__(name)
        if x[0] == "m" and self.attributes:
            module = _installed_module(x[2])
            if module is not None:
                return module
        return SolutionObject(x[1], x[2], self)

    def getattr(self, target, name):
        self.conn.send(["A", ["r", target._id], name])
        msg = self.recv()
        if len(msg) != 3:
            raise SolutionProtocolError("malformed attribute")
        return _decode(msg[1], self.ref)

    def recv(self):
        msg = self.conn.recv()
        if type(msg) is not list or not msg or msg[0] not in ("R", "E", "ready"):
            raise SolutionProtocolError("unexpected message")
        if msg[0] == "E":
            raise self.exception(msg)
        return msg

    def exception(self, msg):
        if len(msg) != 6 or type(msg[1]) is not str or type(msg[2]) is not list or type(msg[4]) is not str or type(msg[5]) is not str:
            raise SolutionProtocolError("malformed exception")
        name = msg[1]
        cls = getattr(builtins, name, None)
        if not (type(cls) is type and issubclass(cls, BaseException)):
            base = Exception
            for b in msg[2]:
                c = getattr(builtins, b, None) if type(b) is str else None
                if type(c) is type and issubclass(c, BaseException):
                    base = c
                    break
            key = (name, base)
            if key not in self.classes:
                try:
                    self.classes[key] = type(name, (base,), {"__module__": "solution"})
                except Exception:
                    self.classes[key] = type("SolutionError", (base,), {"__module__": "solution"})
            cls = self.classes[key]
        args = None
        if msg[3] is not None:
            try:
                args = _decode(msg[3], self.ref)
            except Exception:
                args = None
        if type(args) is not tuple:
            args = (msg[5].rstrip("\n").partition(": ")[2],)
        try:
            e = cls(*args)
        except Exception:
            try:
                e = cls.__new__(cls)
                e.args = args
            except Exception:
                e = Exception(*args)
        try:
            e._coderun_remote = (msg[4], msg[5])
        except Exception:
            pass
        return e

    def resolve(self, names):
        self.conn.send(["N", sorted(names)])
        msg = self.recv()
        out = {}
        for item in msg[1] if len(msg) == 2 and type(msg[1]) is list else ():
            if type(item) is not list or len(item) != 2 or type(item[0]) is not str or item[0] not in names:
                raise SolutionProtocolError("malformed name")
            out[item[0]] = _decode(item[1], lambda x, name=item[0]: self.ref(x, name))
        return out

    def call(self, target, args, kwargs):
        def refuse(v):
            if type(v) is SolutionObject and v._link is self:
                return ["r", v._id]
            raise TypeError("the tests passed a %s to the solution, which cannot cross the process boundary: %s" % (type(v).__name__, _PLAIN))

        self.conn.send(["C", ["r", target._id], [_encode(a, refuse) for a in args], [[k, _encode(v, refuse)] for k, v in kwargs.items()]])
        msg = self.recv()
        if len(msg) != 3 or type(msg[2]) is not list:
            raise SolutionProtocolError("malformed result")
        result = _decode(msg[1], self.ref)
        for item in msg[2]:
            if type(item) is not list or len(item) != 2:
                raise SolutionProtocolError("malformed argument")
            k, v = item
            if type(k) is int and 0 <= k < len(args):
                _copy_back(args[k], _decode(v, self.ref))
            elif type(k) is str and k in kwargs:
                _copy_back(kwargs[k], _decode(v, self.ref))
        return result


def _installed_module(name):
    """T's own copy of the module name, imported from the installation's
    directories only (_trusted_path), or None."""
    if type(name) is not str or name.startswith("_") or name.partition(".")[0] in ("this", "antigravity"):
        return None  # T's own __main__ is not the solution's; nor are modules that act when imported
    if not all(p.isidentifier() for p in name.split(".")):
        return None
    try:
        __import__(name)
        return sys.modules[name]
    except BaseException:
        return None


def _copy_back(orig, new):
    """Mutations the solution made to an argument, made to the tests' own."""
    if type(orig) is not type(new):
        return
    try:
        if orig == new:
            return
    except Exception:
        pass
    if type(orig) is list:
        orig[:] = new
    elif type(orig) is collections.deque:
        orig.clear()
        orig.extend(new)
    else:
        orig.clear()
        orig.update(new)


def _defined(source):
    """The names a module's top-level code binds (not those of its functions'
    or classes' bodies), or None when it does not parse."""
    try:
        tree = _parse(source)
    except (SyntaxError, ValueError):
        return None
    scopes = ("FunctionDef", "AsyncFunctionDef", "ClassDef", "Lambda", "ListComp", "SetComp", "DictComp", "GeneratorExp")
    names = set()
    for n in _walk(tree, lambda n: type(n).__name__ not in scopes):
        kind = type(n).__name__
        if kind in ("FunctionDef", "AsyncFunctionDef", "ClassDef"):
            names.add(n.name)
        elif kind in ("Import", "ImportFrom"):
            names.update((a.asname or a.name).partition(".")[0] for a in n.names)
        elif kind == "Name" and type(n.ctx).__name__ == "Store":
            names.add(n.id)
    return names


def _tests(link, prompt, entry, setup, tests, reference):
    """Runs the tests; which of their names stand for the solution's: for
    HumanEval the entry point only (the prompt runs here too, trusted as the
    tests are, for the helpers they use, and its entry point is then
    replaced; if the prompt alone does not compile, any name of the tests
    that is not a builtin); for MBPP the names the reference solution or
    the setup code define, or when there is no reference, any that is not a
    builtin (a solution never shadows a builtin the tests use, unless the
    reference does so too)."""
    link.recv()  # "ready", or how loading the solution failed
    g = {"__name__": "__main__", "__builtins__": builtins}
    trusted, helpers = set(), False
    if prompt:
        try:
            code = compile(prompt, "<prompt>", "exec")
        except (SyntaxError, ValueError):
            code = None
        if code is not None:
            _register("<prompt>", prompt)
            exec(code, g)
            g.pop(entry, None)  # the prompt's stub: the solution's stands for it
            trusted, helpers = set(g), True
    _register("<tests>", tests)
    if entry and helpers:
        names = {entry}
    else:
        names = {n.id for n in _walk(_parse(tests, "<tests>")) if type(n).__name__ == "Name"}
        ours = _defined(reference) if reference and not entry else None
        if ours is None:
            names = (names - set(dir(builtins))) | ({entry} if entry else set())
        else:
            names &= ours | (_defined(setup) or set())
    g.update(link.resolve(names - trusted))
    exec(compile(tests, "<tests>", "exec"), g)


def _report(e):
    remote = getattr(e, "_coderun_remote", None)
    text = "Traceback (most recent call last):\n" + _frames(e.__traceback__)
    if remote is not None:
        text += remote[0] + remote[1]
    else:
        text += _exception_only(e)
    sys.stdout.flush()
    sys.stderr.write(text)
    sys.stderr.flush()


def _stdin():
    parts = []
    while True:
        b = os.read(0, 1 << 16)
        if not b:
            return b"".join(parts)
        parts.append(b)


def _run(solution, prompt="", entry="", setup="", attributes=False):
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(4, 0, 0, 0, 0) != 0:  # PR_SET_DUMPABLE: U may not read T's memory or descriptors
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_DUMPABLE, 0)")
    sys.stdout.flush()
    sys.stderr.flush()
    req_r, req_w = os.pipe()
    rep_r, rep_w = os.pipe()
    pid = os.fork()
    if pid == 0:
        code = 0
        try:
            null = os.open(os.devnull, os.O_RDONLY)
            os.dup2(null, 0)
            os.close(null)
            os.close(req_w)
            os.close(rep_r)
            _own_domain(libc)
            _solution(prompt + solution, setup, _Conn(req_r, rep_w))
        except _SolutionEnded:
            pass
        except BaseException:
            code = 70
        finally:
            try:
                sys.stdout.flush()
                sys.stderr.flush()
            finally:
                os._exit(code)
    os.close(req_r)
    os.close(rep_w)
    _trusted_path()
    marker, _, payload = _stdin().partition(b"\n")
    link = _Link(pid, _Conn(rep_r, req_w), attributes)
    try:
        payload = json.loads(payload) if payload.strip() else {}
        tests = payload.get("tests") or ""
        if not marker or not tests.strip():
            raise RuntimeError("coderun eval: no tests on standard input")
        _tests(link, prompt, entry, setup, tests, payload.get("reference") or "")
    except _SolutionEnded:
        _ended(pid)
    except SystemExit:
        _stop(pid)
        raise
    except BaseException as e:
        _stop(pid)
        _report(e)
        raise SystemExit(1)
    _stop(pid)
    sys.stdout.flush()
    os.write(1, b"\n" + marker + b"\n")


def _own_domain(libc):
    """Puts U in a Landlock domain of its own, nested in the sandbox's (as
    harness.sh's __cr_landlock does for bash and node): it handles only the
    making of block devices, which nothing in a sandbox may do anyway, and,
    where the kernel scopes them (Landlock ABI 6, Linux 6.12), signals and
    abstract unix sockets, so that U cannot stop or kill T. Nothing on a
    kernel without Landlock (T's non-dumpability still keeps U out of it)."""
    abi = libc.syscall(444, None, 0, 1)  # landlock_create_ruleset(NULL, 0, LANDLOCK_CREATE_RULESET_VERSION)
    if abi < 1:
        return
    attr = struct.pack("QQQ", 1 << 11, 0, 3) if abi >= 6 else struct.pack("Q", 1 << 11)
    fd = libc.syscall(444, attr, len(attr), 0)
    if fd < 0 or libc.prctl(38, 1, 0, 0, 0) != 0 or libc.syscall(446, fd, 0) != 0:  # PR_SET_NO_NEW_PRIVS, landlock_restrict_self
        raise OSError(ctypes.get_errno(), "the solution's Landlock domain")
    os.close(fd)


def _trusted_path():
    """Leaves on T's sys.path only directories U cannot write to (the
    installation's, read-only in the sandbox), so that nothing T imports
    after the fork (a test's `import random`) can be a file U planted; the
    program's directory and the working directory go first."""
    here = {"", os.getcwd(), os.path.dirname(_FILE)}
    prefixes = tuple(os.path.join(p, "") for p in {sys.prefix, sys.base_prefix})
    sys.path[:] = [p for p in sys.path if p not in here and os.path.isdir(p) and (p.startswith(prefixes) or not os.access(p, os.W_OK))]


def _stop(pid):
    try:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
    except OSError:
        pass


def _ended(pid):
    """U ended during the tests: T ends the same way, without the marker."""
    _, status = os.waitpid(pid, 0)
    sys.stdout.flush()
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        sys.stderr.write("coderun eval: the solution's process was killed by %s\n" % signal.Signals(sig).name)
        sys.stderr.flush()
        signal.signal(sig, signal.SIG_DFL)
        os.kill(os.getpid(), sig)
    code = os.waitstatus_to_exitcode(status)
    sys.stderr.write("coderun eval: the solution's process exited with status %d during the tests\n" % code)
    sys.stderr.flush()
    raise SystemExit(code)
