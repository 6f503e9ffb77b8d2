"""coderun policy: static review of model-written Python.

This script is embedded in the Go package github.com/coderun/coderun/policy
and run on the trusted side as `/usr/bin/python3 -I -S -c <this file>`.
It only parses the code it reviews (ast.parse, tokenize); it never
imports, compiles for execution, or runs it.

Input: the code, UTF-8, on stdin.
Output: one JSON object on stdout:

  findings      [{rule, line, col, message}]   rule ids known to the Go side
  paths         [{line, col, path, exact, api, write}]
                string values used as file paths; the Go side classifies them
                against the workspace (it owns the notion of "workspace")
  shell         [{line, col, code, via}]
                shell command lines the code hands to a shell or exec; the Go
                side reviews them with its shell analyser
  shell_cells   [{line_offset, code}]
                the body of an IPython %%bash cell, verbatim from the line
                after line_offset
  syntax_error  {line, col, message} or null
  error         a message if the analysis itself failed, else null

Lines are 1-based; columns are 0-based and count characters (ast's byte
offsets are converted).
"""

import ast
import io
import json
import sys
import tokenize

# PLACEHOLDER stands for a value computed at run time inside a string built
# from parts (f-strings, concatenation). It reads as a shell parameter
# expansion, so the shell analyser treats it as "unknown, maybe empty".
PLACEHOLDER = "${PYEXPR}"

MAX_DEPTH = 4  # nesting of exec("...") inside exec("...")


def _entries():
    spawn = "process.spawn"
    net = "network"
    out = [
        ("subprocess", spawn, "starts other programs"),
        ("_posixsubprocess", spawn, "starts other programs (low-level fork and exec)"),
        ("os.system", spawn, "runs a shell command"),
        ("os.popen", spawn, "runs a shell command"),
        ("posix.system", spawn, "runs a shell command"),
        ("os.fork", spawn, "forks the Python process"),
        ("os.forkpty", spawn, "forks the Python process"),
        ("pty", spawn, "starts programs on a pseudo-terminal"),
        ("commands", spawn, "runs shell commands"),
        ("popen2", spawn, "runs shell commands"),
        ("platform.popen", spawn, "runs a shell command"),
        ("asyncio.create_subprocess_exec", spawn, "starts another program"),
        ("asyncio.create_subprocess_shell", spawn, "runs a shell command"),
        ("asyncio.subprocess", spawn, "starts other programs"),
        ("pexpect", spawn, "starts and drives other programs"),
        ("sh", spawn, "runs other programs as functions"),
        ("plumbum", spawn, "runs other programs"),
        ("webbrowser", spawn, "launches a web browser"),
        ("os.kill", "process.signal", "sends a signal to another process"),
        ("os.killpg", "process.signal", "sends a signal to a process group"),
        ("signal.pthread_kill", "process.signal", "sends a signal to a thread"),
        ("multiprocessing", "process.multiprocessing", "starts worker processes"),
        ("concurrent.futures.ProcessPoolExecutor", "process.multiprocessing", "starts worker processes"),
        ("concurrent.futures.process", "process.multiprocessing", "starts worker processes"),
        ("socket", net, "opens network sockets"),
        ("_socket", net, "opens network sockets"),
        ("socketserver", net, "serves network connections"),
        ("urllib.request", net, "fetches URLs"),
        ("urllib.urlopen", net, "fetches URLs"),
        ("urllib.urlretrieve", net, "fetches URLs"),
        ("urllib2", net, "fetches URLs"),
        ("urllib3", net, "makes HTTP requests"),
        ("http.client", net, "makes HTTP requests"),
        ("http.server", net, "serves HTTP"),
        ("httplib", net, "makes HTTP requests"),
        ("requests", net, "makes HTTP requests"),
        ("httpx", net, "makes HTTP requests"),
        ("aiohttp", net, "makes HTTP requests"),
        ("pycurl", net, "makes network requests"),
        ("ftplib", net, "talks FTP"),
        ("smtplib", net, "sends mail over SMTP"),
        ("poplib", net, "reads mail over POP3"),
        ("imaplib", net, "reads mail over IMAP"),
        ("nntplib", net, "talks NNTP"),
        ("telnetlib", net, "opens telnet connections"),
        ("xmlrpc.client", net, "makes XML-RPC calls"),
        ("xmlrpc.server", net, "serves XML-RPC"),
        ("xmlrpclib", net, "makes XML-RPC calls"),
        ("asyncio.open_connection", net, "opens a network connection"),
        ("asyncio.open_unix_connection", net, "opens a socket connection"),
        ("asyncio.start_server", net, "serves network connections"),
        ("asyncio.start_unix_server", net, "serves socket connections"),
        ("paramiko", net, "opens SSH connections"),
        ("websocket", net, "opens WebSocket connections"),
        ("websockets", net, "opens WebSocket connections"),
        ("grpc", net, "makes gRPC calls"),
        ("boto3", net, "talks to cloud services"),
        ("ctypes", "native.code", "loads native libraries and calls or pokes memory directly"),
        ("_ctypes", "native.code", "loads native libraries and calls or pokes memory directly"),
        ("cffi", "native.code", "loads native libraries and calls them directly"),
        ("runpy", "dynamic.code", "runs other Python code by name or path"),
        ("get_ipython().system", spawn, "runs a shell command"),
        ("get_ipython().getoutput", spawn, "runs a shell command"),
        ("get_ipython().run_cell", "dynamic.code", "runs a cell of code given at run time"),
        ("get_ipython().run_cell_magic", "dynamic.code", "runs an IPython cell magic"),
        ("get_ipython().run_line_magic", "dynamic.code", "runs an IPython line magic"),
        ("get_ipython().ex", "dynamic.code", "executes code given at run time"),
        ("get_ipython().ev", "dynamic.code", "evaluates code given at run time"),
        ("importlib.machinery.SourceFileLoader", "dynamic.code", "loads Python code from a file"),
        ("importlib.util.spec_from_file_location", "dynamic.code", "loads Python code from a file"),
    ]
    for n in ("execl", "execle", "execlp", "execlpe", "execv", "execve", "execvp", "execvpe"):
        out.append(("os." + n, spawn, "replaces the Python process with another program"))
    for n in ("spawnl", "spawnle", "spawnlp", "spawnlpe", "spawnv", "spawnve", "spawnvp",
              "spawnvpe", "posix_spawn", "posix_spawnp"):
        out.append(("os." + n, spawn, "starts another program"))
    return out


DANGER = {q: (rule, what) for q, rule, what in _entries()}

# Names under a dangerous prefix that do nothing dangerous by themselves.
SAFE = {
    "multiprocessing.cpu_count",
    "multiprocessing.current_process",
    "socket.gethostname",
    "subprocess.PIPE",
    "subprocess.DEVNULL",
    "subprocess.STDOUT",
    "subprocess.CalledProcessError",
    "subprocess.TimeoutExpired",
    "subprocess.CompletedProcess",
    "subprocess.SubprocessError",
}

# Members bound by `from M import *` that the tables above must know about.
STAR_MEMBERS = {
    "subprocess": ["run", "call", "check_call", "check_output", "Popen", "getoutput",
                   "getstatusoutput"],
    "socket": ["socket", "create_connection", "create_server", "socketpair", "fromfd"],
    "ctypes": ["CDLL", "cdll", "PyDLL", "pydll", "CFUNCTYPE", "cast", "memmove", "memset",
               "pythonapi", "string_at"],
    "pty": ["spawn", "fork", "openpty"],
    "multiprocessing": ["Process", "Pool"],
    "requests": ["get", "post", "put", "patch", "delete", "head", "request", "Session"],
    "urllib.request": ["urlopen", "urlretrieve", "Request", "build_opener"],
    "http.client": ["HTTPConnection", "HTTPSConnection"],
    "importlib": ["import_module"],
    "shutil": ["rmtree"],
    "runpy": ["run_path", "run_module"],
}

# Shell command lines: callee -> how to find the command in the arguments.
SHELL_STRING = {  # first argument is a shell command line
    "os.system", "os.popen", "posix.system", "subprocess.getoutput", "get_ipython().system",
    "get_ipython().getoutput",
    "subprocess.getstatusoutput", "commands.getoutput", "commands.getstatusoutput",
    "platform.popen", "asyncio.create_subprocess_shell",
}
SUBPROCESS_ARGS = {  # first argument (or args=) is a command line or an argv list
    "subprocess.run", "subprocess.call", "subprocess.check_call", "subprocess.check_output",
    "subprocess.Popen", "pty.spawn",
}
EXEC_ARGV = {  # name -> (index of argv list, or -index for "varargs from here")
    "os.execv": 1, "os.execve": 1, "os.execvp": 1, "os.execvpe": 1,
    "os.execl": -1, "os.execle": -1, "os.execlp": -1, "os.execlpe": -1,
    "os.spawnv": 2, "os.spawnve": 2, "os.spawnvp": 2, "os.spawnvpe": 2,
    "os.spawnl": -2, "os.spawnle": -2, "os.spawnlp": -2, "os.spawnlpe": -2,
    "os.posix_spawn": 1, "os.posix_spawnp": 1,
    "asyncio.create_subprocess_exec": -0,
}

DYNAMIC_EVAL = {"eval", "exec", "compile"}
DYNAMIC_IMPORT = {"__import__", "importlib.import_module", "importlib.__import__"}
# getattr(M, <computed>) on these modules hides which function is used.
REFLECT_MODULES = {"os", "subprocess", "builtins", "socket", "ctypes", "pty", "importlib",
                   "sys", "shutil", "multiprocessing", "cffi"}

# Callees whose string arguments are file paths.
FILE_APIS = {
    "open", "io.open", "codecs.open", "os.open", "os.remove", "os.unlink", "os.rmdir",
    "os.removedirs", "os.listdir", "os.scandir", "os.walk", "os.mkdir", "os.makedirs",
    "os.rename", "os.renames", "os.replace", "os.chmod", "os.chown", "os.lchown", "os.link",
    "os.symlink", "os.readlink", "os.stat", "os.lstat", "os.truncate", "os.chdir",
    "os.chroot", "os.access", "os.utime", "os.mkfifo", "os.mknod", "os.path.exists",
    "os.path.isfile", "os.path.isdir", "os.path.islink", "os.path.getsize",
    "os.path.getmtime", "os.path.realpath", "os.path.abspath", "os.path.expanduser",
    "shutil.rmtree", "shutil.copy", "shutil.copy2", "shutil.copyfile", "shutil.copytree",
    "shutil.move", "shutil.chown", "shutil.make_archive", "shutil.unpack_archive",
    "shutil.disk_usage", "pathlib.Path", "pathlib.PosixPath", "pathlib.PurePath",
    "pathlib.PurePosixPath", "glob.glob", "glob.iglob", "tarfile.open", "zipfile.ZipFile",
    "sqlite3.connect", "fileinput.input", "linecache.getline", "numpy.load", "numpy.save",
    "numpy.savez", "numpy.loadtxt", "numpy.savetxt", "numpy.genfromtxt", "numpy.fromfile",
    "PIL.Image.open", "matplotlib.pyplot.savefig", "matplotlib.pyplot.imread",
    "matplotlib.pyplot.imsave", "h5py.File", "json.load", "pickle.load",
}
FILE_METHODS = {
    "to_csv", "to_excel", "to_json", "to_parquet", "to_pickle", "to_feather", "to_hdf",
    "to_html", "to_latex", "to_markdown", "to_stata", "to_xml", "savefig", "write_text",
    "write_bytes", "read_text", "read_bytes", "open", "save", "imsave", "imread",
}
FILE_PREFIXES = ("pandas.read_",)
WRITE_METHODS = {"to_csv", "to_excel", "to_json", "to_parquet", "to_pickle", "to_feather",
                 "to_hdf", "to_html", "to_latex", "to_markdown", "to_stata", "to_xml",
                 "savefig", "write_text", "write_bytes", "save", "imsave"}
OPEN_APIS = {"open", "io.open", "codecs.open", ".open", "pathlib.Path.open"}

# Callees (last name) that fetch a URL given as an argument.
URL_READERS = {
    "read_csv", "read_json", "read_html", "read_excel", "read_parquet", "read_table",
    "read_xml", "read_pickle", "read_fwf", "read_feather", "urlopen", "urlretrieve", "get",
    "post", "put", "patch", "delete", "head", "request", "fetch", "download",
    "download_url", "load_dataset", "from_url", "imread", "loadtxt", "genfromtxt",
    "open_url", "Request",
}
URL_SCHEMES = ("http://", "https://", "ftp://", "ws://", "wss://")

HOME_SOURCES = {"pathlib.Path.home", "os.path.expanduser"}

# Callees whose string arguments are text, not paths: a path there is no access.
TEXT_CALLS = {"print", "repr", "str", "len", "format", "isinstance", "logging", "warnings.warn",
              "re", "textwrap", "json.dumps", "urllib.parse"}
TEXT_METHODS = {"startswith", "endswith", "replace", "split", "rsplit", "join", "strip", "lstrip",
                "rstrip", "find", "rfind", "index", "count", "format", "encode", "match",
                "search", "sub", "fullmatch", "findall", "partition", "rpartition",
                "removeprefix", "removesuffix", "info", "debug", "warning", "error",
                "exception", "append", "add", "get"}

# In a session, an earlier cell may have run `import os`; a later cell that
# uses os.system without importing os must still be caught. These names mean
# their usual module when the code under review never binds them itself.
ASSUMED_MODULES = {
    "os": "os", "sys": "sys", "subprocess": "subprocess", "socket": "socket",
    "shutil": "shutil", "ctypes": "ctypes", "importlib": "importlib", "pty": "pty",
    "multiprocessing": "multiprocessing", "requests": "requests", "httpx": "httpx",
    "urllib": "urllib", "http": "http", "asyncio": "asyncio", "pathlib": "pathlib",
    "runpy": "runpy", "cffi": "cffi", "ftplib": "ftplib", "smtplib": "smtplib",
    "np": "numpy", "pd": "pandas", "plt": "matplotlib.pyplot",
}
MODULE_ALIASES = {"posix": "os", "__builtin__": "builtins", "__builtins__": "builtins",
                  "posixpath": "os.path"}


def normalize(q):
    if q is None:
        return None
    head, _, rest = q.partition(".")
    if head in MODULE_ALIASES:
        q = MODULE_ALIASES[head] + ("." + rest if rest else "")
    if q.startswith("builtins."):
        q = q[len("builtins."):]
    return q


def match(q):
    """Returns (rule, what, matched_prefix) for a dangerous qualified name, else None."""
    if not q:
        return None
    parts = q.split(".")
    for i in range(len(parts), 0, -1):
        key = ".".join(parts[:i])
        if key in SAFE:
            return None
        if key in DANGER:
            rule, what = DANGER[key]
            return rule, what, key
    return None


def is_str(node):
    return isinstance(node, ast.Constant) and isinstance(node.value, str)


def src_of(node):
    try:
        return ast.unparse(node)
    except Exception:  # pragma: no cover - unparse is best effort
        return None


def is_true_const(node):
    return isinstance(node, ast.Constant) and bool(node.value) and not isinstance(node.value, str)


class Analyzer:
    def __init__(self, tree, out, lines, aliases=None, consts=None, bound=None, origin=None,
                 depth=0):
        self.tree = tree
        self.out = out
        self.lines = lines  # the source, split on "\n", to turn byte columns into characters
        self.aliases = aliases if aliases is not None else {}
        self.consts = consts if consts is not None else {}
        self.bound = bound if bound is not None else set()  # names the code binds itself
        self.origin = origin  # (line, col, via) for code nested in exec("...")
        self.depth = depth

    # ---- output -------------------------------------------------------

    def _pos(self, node):
        if self.origin is not None:
            line, col = self.origin[0], self.origin[1]
        else:
            line, col = getattr(node, "lineno", 1), getattr(node, "col_offset", 0)
        if 1 <= line <= len(self.lines):
            col = len(self.lines[line - 1].encode("utf-8")[:col].decode("utf-8", "ignore"))
        return line, col

    def _via(self, message):
        if self.origin is not None:
            return message + " (in code passed to " + self.origin[2] + ")"
        return message

    def report(self, node, rule, message):
        line, col = self._pos(node)
        self.out["findings"].append(
            {"rule": rule, "line": line, "col": col, "message": self._via(message)})

    def report_path(self, node, value, exact, api, write):
        line, col = self._pos(node)
        self.out["paths"].append({"line": line, "col": col, "path": value, "exact": exact,
                                  "api": api or "", "write": bool(write)})

    def report_shell(self, node, code, via):
        line, col = self._pos(node)
        if self.origin is not None:
            via = via + " in code passed to " + self.origin[2]
        self.out["shell"].append({"line": line, "col": col, "code": code, "via": via})

    # ---- name resolution ------------------------------------------------

    def bind(self, name, q):
        if q is None:
            return False
        old = self.aliases.get(name)
        if old == q:
            return False
        if old is not None and match(old) and not match(q):
            return False  # keep the dangerous meaning; be conservative
        self.aliases[name] = q
        return True

    def qual(self, node):
        """The qualified name an expression refers to (module, function), or None."""
        if isinstance(node, ast.Name):
            if node.id in self.aliases:
                return normalize(self.aliases[node.id])
            if node.id in ("__builtins__", "__builtin__"):
                return "builtins"
            if node.id in ASSUMED_MODULES and node.id not in self.bound:
                return ASSUMED_MODULES[node.id]
            if node.id in ("eval", "exec", "compile", "__import__", "open", "getattr", "vars",
                           "globals", "locals"):
                return node.id
            return None
        if isinstance(node, ast.Attribute):
            base = self.qual(node.value)
            if base is None:
                return None
            return normalize(base + "." + node.attr)
        if isinstance(node, ast.Call):
            if isinstance(node.func, ast.Name) and node.func.id == "get_ipython" \
                    and "get_ipython" not in self.bound:
                return "get_ipython()"
            f = self.qual(node.func)
            args = node.args
            if f == "getattr" and len(args) >= 2 and self.const(args[1]) is not None:
                base = self.qual(args[0])
                if base is not None:
                    return normalize(base + "." + self.const(args[1]))
                return None
            if isinstance(node.func, ast.Attribute) and node.func.attr == "__getattribute__" \
                    and args and self.const(args[0]) is not None:
                base = self.qual(node.func.value)
                return normalize(base + "." + self.const(args[0])) if base else None
            if f in ("__import__", "importlib.__import__") and args and self.const(args[0]) is not None:
                name = self.const(args[0])
                fromlist = args[3] if len(args) >= 4 else None
                for kw in node.keywords:
                    if kw.arg == "fromlist":
                        fromlist = kw.value
                empty = fromlist is None or (isinstance(fromlist, (ast.List, ast.Tuple))
                                             and not fromlist.elts) or (
                    isinstance(fromlist, ast.Constant) and not fromlist.value)
                return normalize(name.split(".")[0] if empty else name)
            if f == "importlib.import_module" and args and self.const(args[0]) is not None:
                return normalize(self.const(args[0]))
            return None
        if isinstance(node, ast.Subscript):
            key = self.const(node.slice)
            if key is None:
                return None
            key = ast.Constant(value=key)
            value = node.value
            if isinstance(value, ast.Call):
                f = self.qual(value.func)
                if f == "vars" and value.args:
                    base = self.qual(value.args[0])
                    return normalize(base + "." + key.value) if base else None
                if f in ("globals", "locals") and not value.args:
                    return self.qual(ast.Name(id=key.value, ctx=ast.Load()))
                return None
            base = self.qual(value)
            if base == "sys.modules":
                return normalize(key.value)
            if base is not None and base.endswith(".__dict__"):
                return normalize(base[: -len(".__dict__")] + "." + key.value)
            if base == "builtins":  # __builtins__["eval"], globals()["__builtins__"]["eval"]
                return normalize("builtins." + key.value)
            return None
        return None

    def const(self, node):
        """The string value of an expression when it is fully known, else None."""
        s = self.strval(node)
        if s is not None and s[1]:
            return s[0]
        return None

    def strval(self, node):
        """A static view of a string expression: (text, exact) or None.

        Unknown parts read as PLACEHOLDER; exact is False when any part is unknown.
        """
        if isinstance(node, ast.Constant):
            if isinstance(node.value, str):
                return node.value, True
            return None
        if isinstance(node, ast.Name):
            return self.consts.get(node.id)
        if isinstance(node, ast.JoinedStr):
            parts = []
            for v in node.values:
                if isinstance(v, ast.Constant) and isinstance(v.value, str):
                    parts.append(v.value)
                else:
                    parts.append(PLACEHOLDER)
            return "".join(parts), False
        if isinstance(node, ast.BinOp):
            if isinstance(node.op, ast.Add):
                left = self.strval(node.left)
                right = self.strval(node.right)
                if left is None and right is None:
                    return None
                lt, le = left if left else (PLACEHOLDER, False)
                rt, re_ = right if right else (PLACEHOLDER, False)
                return lt + rt, le and re_
            if isinstance(node.op, ast.Div):  # pathlib: Path("/etc") / "passwd"
                left = self.strval(node.left)
                right = self.strval(node.right)
                if left is None:
                    return None
                rt, re_ = right if right else (PLACEHOLDER, False)
                return join_path(left[0], rt), left[1] and re_
            if isinstance(node.op, ast.Mod):
                left = self.strval(node.left)
                if left is None:
                    return None
                return left[0], False
            return None
        if isinstance(node, ast.Call):
            f = self.qual(node.func)
            if f in HOME_SOURCES and not node.args:
                return "~", True
            if f in ("os.getenv", "os.environ.get") and node.args and is_str(node.args[0]) \
                    and node.args[0].value == "HOME":
                return "~", True
            if f in ("os.path.join", "pathlib.Path", "pathlib.PosixPath", "pathlib.PurePath",
                     "pathlib.PurePosixPath", "os.path.expanduser", "os.path.abspath",
                     "os.path.realpath", "os.path.normpath", "str", "os.fspath") and node.args:
                vals = [self.strval(a) for a in node.args]
                if vals[0] is None:
                    return None
                text, exact = vals[0]
                for v in vals[1:]:
                    vt, ve = v if v else (PLACEHOLDER, False)
                    text = join_path(text, vt)
                    exact = exact and ve
                return text, exact
            # "...".format(...) keeps the template's literal parts
            if isinstance(node.func, ast.Attribute) and node.func.attr == "format":
                base = self.strval(node.func.value)
                if base is not None:
                    return fill_format(base[0]), False
            return None
        if isinstance(node, ast.Subscript):
            if self.qual(node.value) == "os.environ" and is_str(node.slice) \
                    and node.slice.value == "HOME":
                return "~", True
            return None
        return None

    # ---- passes -------------------------------------------------------

    def collect_bindings(self):
        """Imports anywhere, then assignments, until nothing changes."""
        nodes = list(ast.walk(self.tree))
        for node in nodes:
            if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
                self.bound.add(node.id)
            elif isinstance(node, ast.arg):
                self.bound.add(node.arg)
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                self.bound.add(node.name)
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                for a in node.names:
                    self.bound.add(a.asname or a.name.split(".")[0])
        for node in nodes:
            if isinstance(node, ast.Import):
                for a in node.names:
                    if a.asname:
                        self.bind(a.asname, a.name)
                    else:
                        top = a.name.split(".")[0]
                        self.bind(top, top)
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                for a in node.names:
                    if a.name == "*":
                        self.bind_star(node.module)
                    else:
                        self.bind(a.asname or a.name, node.module + "." + a.name)
        assigns = [n for n in nodes if isinstance(n, (ast.Assign, ast.AnnAssign, ast.NamedExpr))]
        for _ in range(4):
            changed = False
            for n in assigns:
                targets = n.targets if isinstance(n, ast.Assign) else [n.target]
                value = n.value
                if value is None:
                    continue
                for t in targets:
                    changed |= self.bind_target(t, value)
            if not changed:
                break

    def bind_target(self, target, value):
        changed = False
        if isinstance(target, ast.Name):
            q = self.qual(value)
            if q is not None:
                changed |= self.bind(target.id, q)
            s = self.strval(value)
            if s is not None and self.consts.get(target.id) != s:
                self.consts[target.id] = s
                changed = True
        elif isinstance(target, (ast.Tuple, ast.List)) and isinstance(value, (ast.Tuple, ast.List)) \
                and len(target.elts) == len(value.elts):
            for t, v in zip(target.elts, value.elts):
                changed |= self.bind_target(t, v)
        return changed

    def bind_star(self, module):
        module = normalize(module)
        names = set(STAR_MEMBERS.get(module, []))
        prefix = module + "."
        for q in DANGER:
            if q.startswith(prefix) and "." not in q[len(prefix):]:
                names.add(q[len(prefix):])
        for n in names:
            self.bind(n, prefix + n)

    def run(self):
        self.collect_bindings()
        self.visit(self.tree)

    def visit(self, node):
        if isinstance(node, ast.Import):
            for a in node.names:
                m = match(normalize(a.name))
                if m:
                    self.report(node, m[0], "imports %s, which %s" % (a.name, m[1]))
            return
        if isinstance(node, ast.ImportFrom):
            if node.module and not node.level:
                for a in node.names:
                    if a.name == "*":
                        m = match(normalize(node.module))
                        if m:
                            self.report(node, m[0], "imports everything from %s, which %s"
                                        % (node.module, m[1]))
                        continue
                    q = normalize(node.module + "." + a.name)
                    m = match(q)
                    if m:
                        self.report(node, m[0], "imports %s, which %s" % (q, m[1]))
            return
        if isinstance(node, ast.Call):
            if self.visit_call(node):
                return
        elif isinstance(node, (ast.Name, ast.Attribute, ast.Subscript)):
            if isinstance(getattr(node, "ctx", None), ast.Load):
                q = self.qual(node)
                m = match(q)
                if m:
                    self.report(node, m[0], "uses %s%s, which %s" % (q, self.written(node, q), m[1]))
                    return
        elif isinstance(node, ast.While):
            self.check_fork_loop(node)
        for child in ast.iter_child_nodes(node):
            self.visit(child)

    def written(self, node, q):
        s = src_of(node)
        if s and s != q and len(s) <= 80:
            return " (written " + s + ")"
        return ""

    def visit_call(self, node):
        """Checks a call. Returns True when its children need no further visit."""
        # A call that itself resolves to a name: getattr(os, "system"),
        # __import__("subprocess"), importlib.import_module("socket").
        ref = self.qual(node)
        if ref is not None:
            m = match(ref)
            if m:
                self.report(node, m[0], "uses %s%s, which %s" % (ref, self.written(node, ref), m[1]))
                return True
        q = self.qual(node.func)
        m = match(q)
        if m:
            self.report(node, m[0], "calls %s%s, which %s" % (q, self.written(node.func, q), m[1]))
        self.check_dynamic(node, q)
        self.check_shell(node, q)
        self.check_paths(node, q)
        self.check_urls(node, q)
        if q in ("os.kill", "os.killpg") and node.args and is_minus_one(node.args[0]):
            self.report(node, "destructive.kill-all",
                        "%s(-1, ...) signals every process the user may signal" % q)
        if m:
            # the callee itself is reported; still look at its arguments
            for a in node.args:
                self.visit(a)
            for kw in node.keywords:
                self.visit(kw.value)
            return True
        return False

    def check_dynamic(self, node, q):
        if q in DYNAMIC_EVAL:
            if not node.args:
                return
            s = self.const(node.args[0])
            if s is not None:
                self.nested(node, s, q)
            else:
                self.report(node, "dynamic.code",
                            "calls %s on a value computed at run time, so what runs cannot be reviewed" % q)
        elif q in DYNAMIC_IMPORT:
            if node.args and self.const(node.args[0]) is None:
                self.report(node, "dynamic.code",
                            "calls %s with a module name computed at run time" % q)
        elif q == "getattr" and len(node.args) >= 2 and self.const(node.args[1]) is None:
            base = self.qual(node.args[0])
            if base in REFLECT_MODULES:
                self.report(node, "dynamic.code",
                            "looks up an attribute of %s by a name computed at run time" % base)

    def nested(self, node, code, via):
        if self.depth >= MAX_DEPTH:
            self.report(node, "dynamic.code", "nests %s too deeply to review" % via)
            return
        try:
            tree = ast.parse(code)
        except (SyntaxError, ValueError):
            return  # it will fail at run time without running anything
        origin = self.origin or (node.lineno, node.col_offset, via)
        sub = Analyzer(tree, self.out, self.lines, self.aliases, self.consts, self.bound, origin,
                       self.depth + 1)
        sub.run()

    def check_shell(self, node, q):
        if q is None:
            return
        args = node.args
        if q in SHELL_STRING:
            if args:
                s = self.strval(args[0])
                if s is not None:
                    self.report_shell(node, s[0], q)
            return
        if q in SUBPROCESS_ARGS:
            cmd = args[0] if args else None
            for kw in node.keywords:
                if kw.arg == "args":
                    cmd = kw.value
            if cmd is None:
                return
            s = self.strval(cmd)
            if s is not None:
                self.report_shell(node, s[0], q)
                return
            argv = self.argv(cmd)
            if argv:
                self.report_shell(node, join_argv(argv), q)
            return
        if q in EXEC_ARGV:
            i = EXEC_ARGV[q]
            argv = None
            if i > 0 and len(args) > i:
                argv = self.argv(args[i])
            elif i <= 0:
                argv = [self.strval(a) for a in args[-i:]]
                if q.endswith("e") and argv:
                    argv = argv[:-1]  # the environment mapping
                argv = [a[0] if a else PLACEHOLDER for a in argv]
            if argv:
                self.report_shell(node, join_argv(argv), q)

    def argv(self, node):
        if isinstance(node, (ast.List, ast.Tuple)):
            out = []
            for e in node.elts:
                s = self.strval(e)
                out.append(s[0] if s else PLACEHOLDER)
            return out
        return None

    def file_api(self, node, q):
        if q is not None:
            if q in FILE_APIS or q.startswith(FILE_PREFIXES):
                return q
        f = node.func
        if isinstance(f, ast.Attribute) and f.attr in FILE_METHODS:
            return q or "." + f.attr
        return None

    def check_paths(self, node, q):
        api = self.file_api(node, q)
        write = False
        if api is not None:
            last = api.rsplit(".", 1)[-1]
            if last in WRITE_METHODS:
                write = True
            elif api in OPEN_APIS or last == "open":
                mode = node.args[1] if len(node.args) >= 2 else None
                for kw in node.keywords:
                    if kw.arg == "mode":
                        mode = kw.value
                if is_str(mode) and any(c in mode.value for c in "wax+"):
                    write = True
        if api is None and self.text_call(node, q):
            return
        values = list(node.args) + [kw.value for kw in node.keywords if kw.arg != "mode"]
        f = node.func
        if isinstance(f, ast.Attribute) and f.attr in FILE_METHODS:
            values.append(f.value)  # Path("/etc/hosts").read_text()
        for v in values:
            s = self.strval(v)
            if s is None:
                continue
            text, exact = s
            if not text or text.startswith(URL_SCHEMES):
                continue
            if text[0] in "/~" or ".." in text:
                self.report_path(v, text, exact, api, write)

    def text_call(self, node, q):
        if q is not None and (q in TEXT_CALLS or q.split(".")[0] in TEXT_CALLS):
            return True
        f = node.func
        return isinstance(f, ast.Attribute) and f.attr in TEXT_METHODS

    def check_urls(self, node, q):
        f = node.func
        last = q.rsplit(".", 1)[-1] if q else (f.attr if isinstance(f, ast.Attribute) else
                                                 f.id if isinstance(f, ast.Name) else None)
        if last not in URL_READERS:
            return
        if q is not None and match(q):
            return  # already reported as network use
        for v in list(node.args) + [kw.value for kw in node.keywords]:
            s = self.strval(v)
            if s and s[0].startswith(URL_SCHEMES):
                url = s[0] if len(s[0]) <= 80 else s[0][:77] + "..."
                self.report(node, "network", "fetches %s over the network" % url)
                return

    def check_fork_loop(self, node):
        if not is_true_const(node.test):
            return
        for sub in ast.walk(node):
            if isinstance(sub, ast.Call):
                q = self.qual(sub.func)
                if q in ("os.fork", "os.forkpty", "pty.fork"):
                    self.report(node, "destructive.fork-bomb",
                                "calls %s in an endless loop (a fork bomb)" % q)
                    return


def is_minus_one(node):
    return (isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub)
            and isinstance(node.operand, ast.Constant) and node.operand.value == 1) or (
        isinstance(node, ast.Constant) and node.value == -1)


def join_path(a, b):
    if b.startswith("/"):
        return b
    if not a or a.endswith("/"):
        return a + b
    return a + "/" + b


def fill_format(template):
    out = []
    i = 0
    while i < len(template):
        c = template[i]
        if c == "{":
            if template.startswith("{{", i):
                out.append("{")
                i += 2
                continue
            j = template.find("}", i)
            if j < 0:
                out.append(template[i:])
                break
            out.append(PLACEHOLDER)
            i = j + 1
            continue
        if c == "}" and template.startswith("}}", i):
            out.append("}")
            i += 2
            continue
        out.append(c)
        i += 1
    return "".join(out)


def quote_arg(s):
    if s == PLACEHOLDER:
        return s
    if s and all(c.isalnum() or c in "@%+=:,./-_" for c in s):
        return s
    return "'" + s.replace("'", "'\"'\"'") + "'"


def join_argv(argv):
    return " ".join(quote_arg(a) for a in argv)


def lexical_scan(src, out):
    """A token-level scan for code that does not parse.

    CPython compiles a whole cell or module before running any of it, so code
    with a syntax error cannot run; this scan is a second opinion in case the
    interpreter in the sandbox accepts syntax this one does not.
    """
    toks = []
    try:
        for tok in tokenize.generate_tokens(io.StringIO(src).readline):
            toks.append(tok)
    except (tokenize.TokenError, SyntaxError, ValueError):
        pass
    seen = set()
    i = 0
    suffix = " (found by a token scan: the code does not parse)"
    while i < len(toks):
        t = toks[i]
        if t.type != tokenize.NAME or (i > 0 and toks[i - 1].string == "."):
            i += 1
            continue
        parts = [t.string]
        j = i + 1
        while j + 1 < len(toks) and toks[j].string == "." and toks[j + 1].type == tokenize.NAME:
            parts.append(toks[j + 1].string)
            j += 2
        q = normalize(".".join(parts))
        line, col = t.start
        m = match(q)
        rule = msg = None
        if m:
            rule, msg = m[0], "mentions %s, which %s" % (q, m[1])
        elif q in DYNAMIC_EVAL | DYNAMIC_IMPORT and j < len(toks) and toks[j].string == "(":
            rule, msg = "dynamic.code", "calls %s" % q
        if rule and (rule, line) not in seen:
            seen.add((rule, line))
            out["findings"].append({"rule": rule, "line": line, "col": col, "message": msg + suffix})
        i = j


# IPython, which runs session cells, accepts more than Python: shell escapes
# (!cmd, x = !cmd), line magics (%pip, %sx, %cd) and cell magics (%%bash).
# None of them can begin a Python statement, so they only matter for code
# that does not parse as Python; that code is rewritten into plain Python
# line for line, and the shell it contains is handed to the shell analyser.

SHELL_CELLS = {"bash", "sh", "system", "!", "sx"}
SHELL_PROGRAMS = {"bash", "sh", "dash", "zsh", "ksh"}
PYTHON_CELLS = {"capture", "time", "timeit", "prun", "debug", "python", "python3"}
DATA_CELLS = {"html", "javascript", "js", "latex", "markdown", "md", "svg", "writefile", "file"}
SHELL_LINE_MAGICS = {"sx", "system", "sc"}
PACKAGE_MAGICS = {"pip", "conda", "mamba"}
PYTHON_LINE_MAGICS = {"time", "timeit", "prun", "debug", "capture"}
IPYTHON_ESCAPE = "IPython's ! shell escape"


def escape_lines(src):
    """Finds escapes at the start of logical lines: {line: (col, target or None)}."""
    found = {}
    depth = 0
    start = True
    first = []  # the first tokens of the current logical line
    try:
        for tok in tokenize.generate_tokens(io.StringIO(src).readline):
            if tok.type in (tokenize.NEWLINE, tokenize.NL):
                if tok.type == tokenize.NEWLINE or depth == 0:
                    start, first = True, []
                continue
            if tok.type in (tokenize.INDENT, tokenize.DEDENT, tokenize.COMMENT) or \
                    (tok.type == tokenize.ERRORTOKEN and tok.string.isspace()):
                continue
            if tok.string in "([{" and tok.type == tokenize.OP:
                depth += 1
            elif tok.string in ")]}" and tok.type == tokenize.OP:
                depth = max(depth - 1, 0)
            if not start:
                continue
            first.append(tok)
            if len(first) == 1 and tok.string in ("!", "%", "!!", "%%"):
                found[tok.start[0]] = (tok.start[1], None)
                start = False
            elif len(first) == 3 and first[1].string == "=" and tok.string in ("!", "%") \
                    and first[0].type == tokenize.NAME and tok.start[0] == first[0].start[0]:
                found[tok.start[0]] = (tok.start[1], first[0].string)
                start = False
            elif len(first) >= 3:
                start = False
    except (tokenize.TokenError, IndentationError, SyntaxError):
        pass
    return found


def add_finding(out, rule, line, col, message):
    out["findings"].append({"rule": rule, "line": line, "col": col, "message": message})


def ipython_to_python(src, out):
    """Rewrites IPython syntax into Python with the same lines; None if there is none."""
    lines = src.split("\n")
    changed = False
    i = 0
    while i < len(lines) and not lines[i].strip():
        i += 1
    if i < len(lines) and lines[i].lstrip().startswith("%%"):
        head = lines[i].strip()[2:].split()
        name, args = (head[0], head[1:]) if head else ("", [])
        body = "\n".join(lines[i + 1:])
        blank = "\n" * (len(lines) - 1)
        if name in SHELL_CELLS or (name == "script" and args and args[0].rsplit("/", 1)[-1] in SHELL_PROGRAMS):
            add_finding(out, "process.spawn", i + 1, 0, "runs the cell as a shell script (%%" + name + ")")
            out["shell_cells"].append({"line_offset": i + 1, "code": body})
            return blank
        if name in DATA_CELLS:
            if name in ("writefile", "file") and args:
                out["paths"].append({"line": i + 1, "col": 0, "path": args[-1], "exact": True,
                                     "api": "%%" + name, "write": True})
            return blank
        if name in PYTHON_CELLS or (name == "script" and args and args[0].rsplit("/", 1)[-1].startswith("python")):
            lines[i] = ""
            changed = True
        else:
            add_finding(out, "dynamic.code", i + 1, 0,
                        "runs the cell with %%" + " ".join([name] + args) + ", which this review cannot read")
            return blank
    text = "\n".join(lines)
    for line, (col, target) in sorted(escape_lines(text).items()):
        original = lines[line - 1]
        escape = original[col:]
        keep = original[:col]  # indentation, or "x = "
        replacement = keep + ("None" if target else "pass")
        if escape.startswith("!"):
            cmd = escape.lstrip("!")
            add_finding(out, "process.spawn", line, col, "runs a shell command (IPython's ! escape)")
            out["shell"].append({"line": line, "col": col, "code": cmd, "via": IPYTHON_ESCAPE})
        else:
            magic = escape.lstrip("%")
            name, _, rest = magic.partition(" ")
            rest = rest.strip()
            if name in SHELL_LINE_MAGICS:
                add_finding(out, "process.spawn", line, col, "runs a shell command (IPython %" + name + ")")
                out["shell"].append({"line": line, "col": col, "code": rest, "via": "IPython's %" + name})
            elif name in PACKAGE_MAGICS or name == "cd":
                out["shell"].append({"line": line, "col": col, "code": name + " " + rest,
                                     "via": "IPython's %" + name})
            elif name == "load" and rest.split(" ")[-1].startswith(URL_SCHEMES):
                add_finding(out, "network", line, col, "fetches " + rest.split(" ")[-1] + " over the network (IPython %load)")
            elif name in PYTHON_LINE_MAGICS and rest and not target:
                replacement = keep + rest
        lines[line - 1] = replacement
        changed = True
    return "\n".join(lines) if changed else None


def parse_error(e):
    if isinstance(e, SyntaxError):
        return {"line": e.lineno or 1, "col": max((e.offset or 1) - 1, 0),
                "message": e.msg or "invalid syntax"}
    return {"line": 1, "col": 0, "message": str(e) or type(e).__name__}


def main():
    data = sys.stdin.buffer.read()
    src = data.decode("utf-8", errors="replace")
    out = {"findings": [], "paths": [], "shell": [], "shell_cells": [], "syntax_error": None,
           "error": None}
    tree = None
    try:
        tree = ast.parse(src)
    except (SyntaxError, ValueError, MemoryError, RecursionError) as e:
        error = parse_error(e)
        rewritten = ipython_to_python(src, out)
        if rewritten is not None:
            try:
                tree = ast.parse(rewritten)
                src = rewritten
            except (SyntaxError, ValueError, MemoryError, RecursionError) as e2:
                error = parse_error(e2)
        if tree is None:
            out["syntax_error"] = error
            lexical_scan(src, out)
    if tree is not None:
        try:
            Analyzer(tree, out, src.split("\n")).run()
        except RecursionError:
            out["error"] = "the code nests too deeply to analyse"
    sys.stdout.write(json.dumps(out))


if __name__ == "__main__":
    main()
