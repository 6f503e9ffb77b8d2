# envd.py is the program coderun's E2B service keeps running in each E2B
# sandbox, beside its contexts and commands, for the file operations the
# host cannot do from outside: list with metadata, stat, make a directory,
# move, remove, and the snapshots a directory watch compares. The host
# writes one JSON request a line on its standard input ({"op", "args"})
# and reads one JSON answer a line on its standard output; an answer
# {"error": {"code", "message"}} is a Connect error. Nothing else writes
# to its standard output.
import sys

# Modules come from the system only, never from the workspace.
sys.path = [p for p in sys.path if p not in ("", ".") and not p.startswith(("/work", "/home/user"))]

import json as _json
import os as _os
import stat as _stat

_out = _os.fdopen(_os.dup(1), "w", encoding="utf-8")
_os.dup2(_os.open(_os.devnull, _os.O_WRONLY), 1)


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
    root, depth = a["path"], max(1, a.get("depth") or 1)
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


def op_snapshot(a):
    # What a directory watch compares: every entry under path (recursive:
    # at any depth) with its kind, size, mode and modification time.
    root, recursive, limit = a["path"], a.get("recursive"), a.get("limit") or 100000
    try:
        if not _stat.S_ISDIR(_os.stat(root).st_mode):
            return _fail("invalid_argument", "%s: not a directory" % root)
    except OSError as e:
        return _oserror(e, root)
    out = {}

    def walk(d, prefix):
        try:
            names = _os.listdir(d)
        except OSError:
            return
        for n in names:
            if len(out) >= limit:
                return
            p = _os.path.join(d, n)
            try:
                st = _os.lstat(p)
            except OSError:
                continue
            out[prefix + n] = [_stat.S_IFMT(st.st_mode), st.st_size, _stat.S_IMODE(st.st_mode), st.st_mtime_ns]
            if recursive and _stat.S_ISDIR(st.st_mode):
                walk(p, prefix + n + "/")

    walk(root, "")
    return {"entries": out, "truncated": len(out) >= limit}


for _line in sys.stdin:
    try:
        _req = _json.loads(_line)
        _result = globals()["op_" + _req["op"]](_req["args"])
    except Exception as _e:  # the helper's own failure, reported, never raised
        _result = _fail("internal", "%s: %s" % (type(_e).__name__, _e))
    _out.write(_json.dumps(_result) + "\n")
    _out.flush()
