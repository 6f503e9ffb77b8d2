# coderun Python bootstrap. Started ahead of the request, it reports readiness
# on fd 4 and waits on fd 3 for
# "KEY=VALUE\0...\0", the program's file name (empty for main.py) and "\0",
# and then the code, and runs the code the way "python3 /work/NAME" would:
# as __main__, with sys.argv and sys.path[0] set, tracebacks showing the
# source lines, SystemExit and uncaught exceptions turned into exit codes,
# threads joined and atexit handlers run. The code is bytes, as in a file:
# not UTF-8, it is decoded by its PEP 263 coding declaration, and without one
# it is refused with Python's own error for such a file.
# It runs in its own globals (not __main__'s), so user code cannot disturb it.
import os, sys, builtins, atexit

class _Source:
    # The code is not on disk: tracebacks get its lines from this loader,
    # through linecache's lazy lookup of a module's __loader__.
    def __init__(self, src):
        self.src = src
    def get_source(self, name):
        if isinstance(self.src, bytes):
            try:
                import importlib.util
                return importlib.util.decode_source(self.src)
            except BaseException:
                return None
        return self.src

# The interpreter's first compile() pays a one-time set-up of a few
# milliseconds: pay it now, before the code arrives.
compile("pass", "/work/main.py", "exec", dont_inherit=True)

def _coderun_run():
    # Tell init this interpreter is up and waiting (fd 4), then wait for the request.
    try:
        os.write(4, b"R")
        os.close(4)
    except OSError:
        pass
    with open(3, "rb", closefd=True) as f:
        data = f.read()
    env = {}
    i = 0
    while True:
        j = data.index(b"\0", i)
        if j == i:
            break
        k, _, v = data[i:j].decode("utf-8", "surrogateescape").partition("=")
        env[k] = v
        i = j + 1
    i += 1
    j = data.index(b"\0", i)
    name = data[i:j].decode("utf-8", "surrogateescape") or "main.py"
    src = data[j + 1:]
    try:
        src = src.decode("utf-8")
    except UnicodeDecodeError as e:
        bad = e  # compile() reads bytes as Python reads a file (PEP 263)
    else:
        bad = None
    os.environ.update(env)
    # The interpreter started before the request's files were written: forget
    # what the import system learned about directories that did not exist.
    sys.path_importer_cache.clear()
    path = "/work/" + name
    sys.argv[:] = [path]
    sys.path[0] = "/work"
    g = sys.modules["__main__"].__dict__
    g.clear()
    g.update(__name__="__main__", __file__=path, __builtins__=builtins,
             __doc__=None, __loader__=_Source(src), __spec__=None, __package__=None, __cached__=None)
    status = 0
    try:
        code = compile(src, path, "exec", dont_inherit=True)
    except SyntaxError as e:
        # As for a script: no traceback, just the error and its location.
        if bad is not None and str(e.msg).startswith("(unicode error)"):
            # What python3 says of a file that is not UTF-8 and declares no
            # coding, rather than compile()'s wording.
            line = src.count(b"\n", 0, bad.start) + 1
            byte = "'\\x%02x'" % src[bad.start]
            try:
                sys.stderr.write("SyntaxError: Non-UTF-8 code starting with %s in file %s on line %d, "
                                 "but no encoding declared; see https://peps.python.org/pep-0263/ for details\n"
                                 % (byte, path, line))
                sys.stderr.flush()
            except BaseException:
                pass
            os._exit(1)
        _report(e.with_traceback(None))
        os._exit(1)
    del src, data
    try:
        exec(code, g)
    except SystemExit as e:
        status = _exit_status(e)
    except BaseException as e:
        tb = e.__traceback__
        if tb is not None:
            tb = tb.tb_next  # hide this bootstrap's frame
        _report(e.with_traceback(tb))
        status = 130 if isinstance(e, KeyboardInterrupt) else 1
    status = _shutdown(status)
    os._exit(status)

def _report(e):
    # The interpreter's own printer reads source lines from disk; the code is
    # not on disk, so the default hook goes through the traceback module,
    # which finds them through linecache and __loader__.
    try:
        if sys.excepthook is sys.__excepthook__:
            import traceback
            lines = traceback.format_exception(e)
            hint = _suggestion(e)
            if hint and lines:
                lines[-1] = lines[-1].rstrip("\n") + ". Did you mean: %r?\n" % hint
            sys.stderr.write("".join(lines))
            sys.stderr.flush()
        else:
            sys.excepthook(type(e), e, e.__traceback__)
    except BaseException:
        pass

def _suggestion(e):
    # The interpreter's printer ends a NameError or AttributeError with
    # "Did you mean: 'x'?"; the traceback module does so only from Python
    # 3.12 on. Before that, the hint is made here, from the names the
    # failing frame (or object) has.
    if sys.version_info >= (3, 12) or not isinstance(e, (NameError, AttributeError)):
        return None
    name = getattr(e, "name", None)
    if not isinstance(name, str):
        return None
    try:
        if isinstance(e, AttributeError):
            obj = getattr(e, "obj", None)
            if obj is None:
                return None
            names = dir(obj)
        else:
            tb = e.__traceback__
            if tb is None:
                return None
            while tb.tb_next is not None:
                tb = tb.tb_next
            f = tb.tb_frame
            import builtins
            names = list(f.f_locals) + list(f.f_globals) + dir(builtins)
        import difflib
        close = difflib.get_close_matches(name, [n for n in set(names) if n != name and isinstance(n, str)], n=1, cutoff=0.6)
        return close[0] if close else None
    except Exception:
        return None

def _exit_status(e):
    c = e.code
    if c is None:
        return 0
    if isinstance(c, int):
        return c & 0xFF
    try:
        print(c, file=sys.stderr)
    except BaseException:
        pass
    return 1

def _shutdown(status):
    # What the interpreter does at exit, minus tearing down every module:
    # join non-daemon threads, run atexit handlers, flush the standard streams.
    try:
        t = sys.modules.get("threading")
        if t is not None:
            t._shutdown()
    except SystemExit as e:
        status = _exit_status(e)
    except BaseException:
        pass
    try:
        atexit._run_exitfuncs()
    except BaseException:
        pass
    for s in (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__):
        try:
            if s is not None:
                s.flush()
        except BaseException:
            if status == 0:
                status = 120
    return status

# Run when started as the bootstrap; a zygote loads this file to fork
# ready interpreters from (sandbox/linux/zygote.py) and calls it in each.
if __name__ == "_coderun":
    _coderun_run()
