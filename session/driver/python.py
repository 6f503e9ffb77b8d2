# coderun session driver for Python.
#
# Started by the sandbox's Python bootstrap as /work/main.py, it hosts an
# IPython InteractiveShell and talks to the host over the process's original
# standard streams, which it keeps for itself (the protocol is described in
# session/doc.go):
#
#   host -> driver  JSON lines on a private copy of fd 0: one "init", then
#                   "execute" requests
#   driver -> host  JSON lines on a private copy of fd 1: "ready", then per
#                   cell "started", outputs ("stream", "display_data",
#                   "execute_result", "error", "clear_output") and "done"
#   fd 2            the driver's own diagnostics (a fatal error's traceback)
#
# The user's fd 0 is /dev/null; the user's fd 1 and 2 are pipes that a thread
# drains into "stream" messages, so that the output of subprocesses and of
# os.write is captured like print's, and bytes that are not UTF-8 arrive
# with replacement characters. Each cell starts with fd 1 and 2, sys.stdout
# and sys.stderr pointing at those pipes again, whatever earlier cells did.
import os
import sys
import threading


class Driver:
    def __init__(self):
        self.proto_in = os.dup(0)  # os.dup makes non-inheritable copies
        self.proto_out = os.dup(1)
        self.diag = os.dup(2)
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.close(null)
        self.out_r, self.out_w = os.pipe()
        self.err_r, self.err_w = os.pipe()
        for fd in (self.out_r, self.err_r):
            os.set_blocking(fd, False)
        self.std_out = self.std_err = None
        self.reset_streams()

        import faulthandler
        faulthandler.enable(file=self.diag, all_threads=True)

        self.lock = threading.Lock()  # one writer of proto_out at a time
        # A forked child (os.fork in a cell, multiprocessing's workers) may
        # inherit the lock held by the drain thread, which does not exist in
        # the child: give it a free one.
        os.register_at_fork(after_in_child=self._after_fork)
        self.id = 0                   # the cell being run (or the last one)
        self.in_cell = False          # a cell runs: SIGINT is the user's business
        self.depth = 0                # critical sections entered by the main thread
        self.saved = None             # the SIGINT handler a critical section replaced
        self.pending = False          # a SIGINT arrived during a critical section
        self.main_ident = threading.get_ident()
        self.limit = 1 << 20          # output bytes per cell
        self.budget = self.limit
        self.truncated = False
        self.last_done = None         # the last cell's "done" message

        import codecs
        dec = codecs.getincrementaldecoder("utf-8")
        self.decoders = {self.out_r: ("stdout", dec("replace")), self.err_r: ("stderr", dec("replace"))}

        # os._exit skips every flush: send what the cell wrote first (in
        # the driver's own process only: a forked child, multiprocessing's
        # workers for one, must not touch the driver's lock or pipes).
        self.pid = os.getpid()
        real_exit = self.real_exit = os._exit

        def _exit(status):
            if os.getpid() == self.pid:
                try:
                    self.flush_streams()
                    with self.lock:
                        self.sync()
                except BaseException:
                    pass
            real_exit(status)

        _exit.__doc__ = real_exit.__doc__
        os._exit = _exit

        # SIGINT: between cells, ignored; in a cell, the cell's handler
        # (Python's default, raising KeyboardInterrupt right in the user's
        # frame, or one the user installed, kept for later cells); while
        # the driver writes a message, deferred to the end of the write.
        # The C module: the signal module's wrapper converts to and from
        # enums, which costs more than the system call.
        import _signal
        self.signal = _signal
        self.on_sigint = self._on_sigint  # one bound method, to compare with
        self.cell_handler = _signal.default_int_handler
        self.cell_active = False          # the cell's handler is installed
        _signal.signal(_signal.SIGINT, self.on_sigint)
        threading.Thread(target=self.drain_loop, name="coderun-drain", daemon=True).start()

    # --- writing to the host ---------------------------------------------

    def send(self, msg):
        """Writes one message. Callers hold the lock (see __enter__)."""
        if os.getpid() != self.pid:
            return  # a forked child speaks for no one
        import json
        data = (json.dumps(msg, default=_jsonable, separators=(",", ":")) + "\n").encode("ascii")
        while data:
            n = os.write(self.proto_out, data)
            data = data[n:]

    # "with driver:" is a critical section: it holds the lock, and a SIGINT
    # that arrives meanwhile takes effect when it ends, so that no message
    # is ever cut in half by a KeyboardInterrupt.
    def __enter__(self):
        if self.cell_active and threading.get_ident() == self.main_ident:
            self.depth += 1
            if self.depth == 1:
                self.saved = self.signal.signal(self.signal.SIGINT, self.on_sigint)
        self.lock.acquire()

    def __exit__(self, *exc):
        self.lock.release()
        if self.depth and threading.get_ident() == self.main_ident:
            self.depth -= 1
            if self.depth == 0:
                handler, self.saved = self.saved, None
                self.signal.signal(self.signal.SIGINT, handler)
                if self.pending:
                    self.pending = False
                    if callable(handler):
                        handler(self.signal.SIGINT, None)
        return False

    def _on_sigint(self, signum, frame):
        if self.in_cell:
            self.pending = True

    def enter_cell(self):
        """Hands SIGINT to the cell, delivering one that came since "started"."""
        h = self.cell_handler
        self.signal.signal(self.signal.SIGINT, h)
        self.cell_active = True
        if self.pending:
            self.pending = False
            if callable(h):
                h(self.signal.SIGINT, None)

    def leave_cell(self):
        self.cell_active = False
        h = self.signal.signal(self.signal.SIGINT, self.on_sigint)
        self.in_cell = False
        self.pending = False
        if h is not self.on_sigint and h is not None:
            self.cell_handler = h

    def take(self, n):
        """Charges up to n characters of a stream to the budget and returns
        how many fit: a stream is cut at the limit, whatever the pipe's
        reads happened to gather."""
        k = min(n, self.budget)
        self.budget -= k
        if k < n:
            self.truncated = True
        return k

    def spend(self, n):
        """Charges n bytes to the cell's output budget; False once it is spent."""
        if self.budget < n:
            self.budget = 0
            self.truncated = True
            return False
        self.budget -= n
        return True

    # --- the user's standard streams ---------------------------------------

    def reset_streams(self):
        import io
        os.dup2(self.out_w, 1)
        os.dup2(self.err_w, 2)
        if self.std_out is None or self.std_out.closed:
            self.std_out = io.TextIOWrapper(io.FileIO(1, "w", closefd=False), encoding="utf-8",
                                            errors="backslashreplace", line_buffering=True)
        if self.std_err is None or self.std_err.closed:
            self.std_err = io.TextIOWrapper(io.FileIO(2, "w", closefd=False), encoding="utf-8",
                                            errors="backslashreplace", line_buffering=True,
                                            write_through=True)
        sys.stdout = sys.__stdout__ = self.std_out
        sys.stderr = sys.__stderr__ = self.std_err

    def flush_streams(self):
        seen = set()
        for s in (sys.stdout, sys.stderr, self.std_out, self.std_err):
            if s is None or id(s) in seen:
                continue
            seen.add(id(s))
            try:
                s.flush()
            except Exception:
                pass

    def _after_fork(self):
        self.lock = threading.Lock()

    def pump(self, fd):
        """Sends what the pipe holds now. Callers hold the lock."""
        if os.getpid() != self.pid:
            return  # a forked child reading the pipes would swallow output, its own included
        name, dec = self.decoders[fd]
        chunks = []
        while True:
            try:
                b = os.read(fd, 65536)
            except BlockingIOError:
                break
            except InterruptedError:
                continue
            if not b:
                break
            chunks.append(dec.decode(b))
        text = "".join(chunks)
        keep = self.take(len(text)) if text else 0
        if keep:
            self.send({"type": "stream", "id": self.id, "name": name, "text": text[:keep]})

    def sync(self):
        """Sends all output written so far. Callers hold the lock."""
        self.pump(self.out_r)
        self.pump(self.err_r)

    def drain_loop(self):
        import select
        poller = select.poll()
        poller.register(self.out_r, select.POLLIN)
        poller.register(self.err_r, select.POLLIN)
        while True:
            for fd, _ in poller.poll():
                with self.lock:
                    self.pump(fd)

    def discard_output(self):
        if os.getpid() != self.pid:
            return
        self.flush_streams()
        with self:
            for fd in (self.out_r, self.err_r):
                try:
                    while os.read(fd, 65536):
                        pass
                except BlockingIOError:
                    pass

    def publish(self, msg):
        """Sends a rich output after the stream output that preceded it."""
        self.flush_streams()
        with self:
            self.sync()
            size = sum(len(v) if isinstance(v, str) else 64 for v in msg.get("data", {}).values())
            if self.spend(size):
                self.send(msg)

    # --- requests ------------------------------------------------------------

    def requests(self):
        import json
        buf = b""
        while True:
            i = buf.find(b"\n")
            if i >= 0:
                line, buf = buf[:i], buf[i + 1:]
                if line.strip():
                    yield json.loads(line)
                continue
            try:
                b = os.read(self.proto_in, 1 << 20)
            except KeyboardInterrupt:
                continue  # a SIGINT handler of the user's fired while idle
            if not b:
                return
            buf += b

    def main(self):
        import time
        t0 = time.monotonic()
        requests = self.requests()
        init = next(requests, None)
        if init is None:
            os._exit(0)
        self.limit = int(init.get("output_limit") or self.limit)
        for k, v in (init.get("env") or {}).items():
            os.environ[k] = str(v)
        preload = list(init.get("preload") or [])
        ready = {"type": "ready", "protocol": 1, "language": "python",
                 "version": "%d.%d.%d" % sys.version_info[:3], "preloaded": preload}
        try:
            self.shell = make_shell(self)
            import IPython
            ready["ipython"] = IPython.__version__
            for mod in preload:
                __import__(mod)
                if mod in ("matplotlib.pyplot", "pylab"):
                    # As %matplotlib inline would: activate the inline backend now.
                    import matplotlib.pyplot  # noqa: F401
                self.shell.user_ns.setdefault(_alias(mod), sys.modules[mod])
            self.discard_output()  # warnings printed while preloading are no cell's
        except BaseException as e:
            import traceback
            with self.lock:
                self.send({"type": "ready", "error": "".join(traceback.format_exception_only(type(e), e)).strip()})
            os._exit(1)
        ready["init_ms"] = round((time.monotonic() - t0) * 1000, 1)
        with self.lock:
            self.send(ready)
        for req in requests:
            if req.get("op") == "ping":
                # The host saw this process waiting and asks for the end
                # of the cell again (session/idle.go).
                if self.last_done is not None:
                    with self:
                        self.send(self.last_done)
                continue
            if req.get("op") == "execute":
                self.run_cell(req)
                if os.getpid() != self.pid:
                    # A forked child that ran to the end of the cell: what it
                    # printed is output too.
                    for stream in (sys.stdout, sys.stderr):
                        try:
                            stream.flush()
                        except BaseException:
                            pass
                    self.real_exit(0)
                if self.shell.exit_now:  # exit() or quit()
                    break
        self.flush_streams()
        os._exit(0)

    def run_cell(self, req):
        self.flush_streams()
        with self:
            self.sync()  # output of background work still belongs to the previous cell
            self.id = req["id"]
            self.budget = self.limit
            self.truncated = False
        self.reset_streams()
        shell = self.shell
        count = shell.execution_count
        status = "error"
        self.pending = False
        self.in_cell = True  # the host interrupts only after "started": keep it
        with self:
            self.send({"type": "started", "id": self.id, "execution_count": count})
        try:
            self.enter_cell()
            try:
                res = shell.run_cell(req.get("code", ""), store_history=True)
            finally:
                self.leave_cell()
            if res is not None and res.success:
                status = "ok"
        except KeyboardInterrupt:
            # Interrupted in IPython's own steps rather than in the user's code.
            shell._showtraceback(KeyboardInterrupt, KeyboardInterrupt(), ["KeyboardInterrupt"])
        except BaseException as e:
            import traceback
            shell._showtraceback(type(e), e, traceback.format_exception(e))
        self.flush_streams()
        with self:
            self.sync()
            self.last_done = {"type": "done", "id": self.id, "status": status, "execution_count": count,
                              "truncated": self.truncated, "exiting": bool(shell.exit_now)}
            self.send(self.last_done)


def _suggestion(e):
    # The "Did you mean" of a NameError or AttributeError, from the names the
    # failing frame (or object) has; Python 3.12's traceback module and
    # IPython on it make their own.
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


def _jsonable(obj):
    if isinstance(obj, (bytes, bytearray, memoryview)):
        import base64
        return base64.b64encode(bytes(obj)).decode("ascii")
    if isinstance(obj, (set, frozenset, tuple)):
        return list(obj)
    return repr(obj)


def _alias(mod):
    return {"numpy": "np", "pandas": "pd", "matplotlib.pyplot": "plt", "matplotlib": "mpl"}.get(mod, mod.split(".")[0])


def make_shell(driver):
    """Builds the InteractiveShell whose outputs become protocol messages."""
    # Figures are drawn by matplotlib's inline backend, as in Jupyter: every
    # figure still open at the end of a cell, and plt.show(), becomes a PNG
    # display_data. The variable is what ipykernel sets too, so that Python
    # subprocesses that plot do not fail.
    os.environ["MPLBACKEND"] = "module://matplotlib_inline.backend_inline"
    from traitlets.config import Config
    from IPython.core.interactiveshell import InteractiveShell
    from IPython.core.displayhook import DisplayHook
    from IPython.core.displaypub import DisplayPublisher
    from IPython.core import formatters

    speed_up_formatters(formatters)

    def bundle(data):
        out = {}
        for mime, v in (data or {}).items():
            if isinstance(v, (bytes, bytearray, memoryview)):
                v = bytes(v)
                if mime.startswith("image/") or mime == "application/pdf":
                    import base64
                    v = base64.b64encode(v).decode("ascii")
                else:
                    v = v.decode("utf-8", "replace")
            out[mime] = v
        return out

    class Hook(DisplayHook):
        def start_displayhook(self):
            self.msg = {"type": "execute_result", "id": driver.id, "data": {}, "metadata": {}}

        def write_output_prompt(self):
            self.msg["execution_count"] = self.prompt_count

        def write_format_data(self, format_dict, md_dict=None):
            self.msg["data"] = bundle(format_dict)
            self.msg["metadata"] = md_dict or {}

        def finish_displayhook(self):
            msg, self.msg = self.msg, None
            if msg and msg["data"]:
                driver.publish(msg)

    class Publisher(DisplayPublisher):
        def publish(self, data, metadata=None, source=None, *, transient=None, update=False, **kwargs):
            msg = {"type": "display_data", "id": driver.id, "data": bundle(data), "metadata": metadata or {}}
            if transient:
                msg["transient"] = transient
            if update:
                msg["update"] = True
            driver.publish(msg)

        def clear_output(self, wait=False):
            driver.flush_streams()
            with driver:
                driver.sync()
                driver.send({"type": "clear_output", "id": driver.id, "wait": bool(wait)})

    class Shell(InteractiveShell):
        displayhook_class = Hook
        display_pub_class = Publisher

        def _showtraceback(self, etype, evalue, stb):
            driver.flush_streams()
            try:
                text = str(evalue)
            except Exception:
                text = "<unprintable %s object>" % etype.__name__
            if isinstance(stb, str):
                stb = [stb]
            hint = _suggestion(evalue)
            if hint:
                # As the interpreter's own printer says it (IPython before
                # Python 3.12 does not).
                text += ". Did you mean: %r?" % hint
                stb = list(stb)
                if stb:
                    stb[-1] = stb[-1].rstrip("\n") + ". Did you mean: %r?" % hint
            with driver:
                driver.sync()
                driver.send({"type": "error", "id": driver.id, "ename": etype.__name__,
                             "evalue": text, "traceback": list(stb)})

        def ask_exit(self):
            self.exit_now = True  # exit() or quit(): the driver ends after the cell

        def enable_gui(self, gui=None):
            pass  # no event loop in a sandbox: every figure is drawn inline

        # !cmd runs with the driver's fds 1 and 2 (the capture pipes), not
        # through a pseudo-terminal as system_piped would.
        system = InteractiveShell.system_raw

    c = Config()
    c.HistoryManager.enabled = False  # no sqlite file, no saving thread
    c.InteractiveShell.colors = "NoColor"
    c.InlineBackend.figure_formats = ["png"]
    return Shell.instance(config=c)


def speed_up_formatters(formatters):
    """Removes the per-call cost of the 'decorator' package from IPython's
    formatters (about half of a trivial cell's time) and keeps what that
    decorator does: a failing formatter shows its traceback and yields None."""
    import functools

    def catching(method):
        @functools.wraps(method)
        def call(self, obj, *args, **kwargs):
            try:
                r = method(self, obj, *args, **kwargs)
            except NotImplementedError:
                return self._check_return(None, obj)
            except Exception:
                ip = formatters.get_ipython()
                if ip is not None:
                    ip.showtraceback(sys.exc_info())
                else:
                    import traceback
                    traceback.print_exc()
                return self._check_return(None, obj)
            return self._check_return(r, obj)
        return call

    for cls in list(vars(formatters).values()):
        if isinstance(cls, type):
            f = cls.__dict__.get("__call__")
            inner = getattr(f, "__wrapped__", None)
            if inner is not None and getattr(inner, "__name__", "") == "__call__":
                cls.__call__ = catching(inner)


Driver().main()
