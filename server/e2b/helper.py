# The helper that coderun's E2B service runs inside a sandbox, in the
# interpreter of the sandbox's default context, for what the host cannot do
# from outside: file operations with their metadata, and commands. It runs
# in a namespace of its own (the user's variables are untouched) with OP
# and ARGS set, and answers with one display_data of MIME, a JSON string.
import json as _json
import os as _os
import stat as _stat
import sys as _sys

MIME = "application/vnd.coderun.e2b+json"


def _emit(d):
    from IPython.display import publish_display_data
    _sys.stdout.flush()
    _sys.stderr.flush()
    publish_display_data({MIME: _json.dumps(d)})


def _fail(code, message):
    return {"error": {"code": code, "message": message}}


def _name(table, ident):
    try:
        return table(ident)[0]
    except (KeyError, OverflowError):
        return str(ident)


def _entry(path):
    import grp
    import pwd
    st = _os.lstat(path)
    if _stat.S_ISDIR(st.st_mode):
        kind = "FILE_TYPE_DIRECTORY"
    elif _stat.S_ISLNK(st.st_mode):
        kind = "FILE_TYPE_SYMLINK"
    else:
        kind = "FILE_TYPE_FILE"
    e = {
        "name": _os.path.basename(path.rstrip("/")) or path,
        "type": kind,
        "path": path,
        "size": st.st_size,
        "mode": _stat.S_IMODE(st.st_mode),
        "permissions": _stat.filemode(st.st_mode),
        "owner": _name(pwd.getpwuid, st.st_uid),
        "group": _name(grp.getgrgid, st.st_gid),
        "mtime_ns": st.st_mtime_ns,
    }
    if kind == "FILE_TYPE_SYMLINK":
        e["symlinkTarget"] = _os.readlink(path)
    return e


def _oserror(e, path):
    import errno
    codes = {
        errno.ENOENT: "not_found",
        errno.EEXIST: "already_exists",
        errno.EACCES: "permission_denied",
        errno.EPERM: "permission_denied",
        errno.ENOTDIR: "invalid_argument",
        errno.EISDIR: "invalid_argument",
        errno.ENOTEMPTY: "failed_precondition",
    }
    return _fail(codes.get(e.errno, "internal"), "%s: %s" % (path, e.strerror))


def op_stat(a):
    try:
        return {"entry": _entry(a["path"])}
    except OSError as e:
        return _oserror(e, a["path"])


def op_list(a):
    root, depth, skip = a["path"], max(1, a.get("depth") or 1), a.get("skip") or []
    try:
        if not _stat.S_ISDIR(_os.stat(root).st_mode):
            return _fail("invalid_argument", "%s: not a directory" % root)
    except OSError as e:
        return _oserror(e, root)
    out = []

    def walk(d, level):
        try:
            names = sorted(_os.listdir(d))
        except OSError:
            return
        for n in names:
            p = _os.path.join(d, n)
            if p in skip:
                continue
            try:
                e = _entry(p)
            except OSError:
                continue
            out.append(e)
            if e["type"] == "FILE_TYPE_DIRECTORY" and level < depth:
                walk(p, level + 1)

    walk(root, 1)
    return {"entries": out}


def op_mkdir(a):
    p = a["path"]
    if _os.path.lexists(p):
        return _fail("already_exists", "%s already exists" % p)
    try:
        _os.makedirs(p)
        return {"entry": _entry(p)}
    except OSError as e:
        return _oserror(e, p)


def op_move(a):
    src, dst = a["source"], a["destination"]
    try:
        parent = _os.path.dirname(dst)
        if parent:
            _os.makedirs(parent, exist_ok=True)
        _os.rename(src, dst)
        return {"entry": _entry(dst)}
    except OSError as e:
        return _oserror(e, src)


def op_remove(a):
    import shutil
    p = a["path"]
    try:
        if _stat.S_ISDIR(_os.lstat(p).st_mode):
            shutil.rmtree(p)
        else:
            _os.remove(p)
        return {}
    except OSError as e:
        return _oserror(e, p)


def op_env(a):
    old = {k: _os.environ.get(k) for k in a["set"]}
    for k, v in a["set"].items():
        if v is None:
            _os.environ.pop(k, None)
        else:
            _os.environ[k] = v
    return {"old": old}


def op_chdir(a):
    try:
        _os.chdir(a["path"])
        return {}
    except OSError as e:
        return _oserror(e, a["path"])


def _feed(proc, inbox):
    # Standard input arrives as files the host writes into inbox: N (the
    # data) then N.ready; "eof.ready" closes it.
    import time
    seq = 0
    while proc.poll() is None:
        if _os.path.exists(_os.path.join(inbox, "eof.ready")) and not _os.path.exists(_os.path.join(inbox, "%d.ready" % seq)):
            break
        ready = _os.path.join(inbox, "%d.ready" % seq)
        if not _os.path.exists(ready):
            time.sleep(0.02)
            continue
        data_path = _os.path.join(inbox, str(seq))
        with open(data_path, "rb") as f:
            data = f.read()
        _os.remove(data_path)
        _os.remove(ready)
        seq += 1
        try:
            proc.stdin.write(data)
            proc.stdin.flush()
        except (BrokenPipeError, ValueError):
            return
    try:
        proc.stdin.close()
    except (BrokenPipeError, ValueError):
        pass


def op_run(a):
    import shutil
    import signal
    import subprocess
    import threading
    env = dict(_os.environ)
    env.update(a.get("envs") or {})
    inbox = a["inbox"]
    try:
        proc = subprocess.Popen(
            [a["cmd"]] + list(a.get("args") or []),
            cwd=a["cwd"], env=env, start_new_session=True,
            stdin=subprocess.PIPE if a.get("stdin") else subprocess.DEVNULL)
    except OSError as e:
        return _oserror(e, a["cmd"])
    # From here on an interrupt (the host's kill, a timeout, the client
    # gone), wherever it lands, is passed on to the command, never lost.
    interrupted = False
    try:
        _emit({"pid": proc.pid})
        if a.get("stdin"):
            _os.makedirs(inbox, exist_ok=True)
            threading.Thread(target=_feed, args=(proc, inbox), daemon=True).start()
    except KeyboardInterrupt:
        interrupted = True
    while True:
        try:
            if interrupted:
                interrupted = False
                sig = signal.SIGKILL
                try:
                    with open(_os.path.join(inbox, "signal")) as f:
                        sig = int(f.read().strip() or sig)
                except (OSError, ValueError):
                    pass
                try:
                    _os.killpg(proc.pid, sig)
                except ProcessLookupError:
                    pass
            code = proc.wait()
            break
        except KeyboardInterrupt:
            interrupted = True
    shutil.rmtree(inbox, ignore_errors=True)
    return {"exit": code}


try:
    _result = globals()["op_" + OP](ARGS)  # noqa: F821 (set by the host)
except Exception as _e:  # the helper's own failure, reported, never raised
    _result = _fail("internal", "%s: %s" % (type(_e).__name__, _e))
while True:
    try:
        _emit(_result)  # a late interrupt must not lose the answer
        break
    except KeyboardInterrupt:
        pass
