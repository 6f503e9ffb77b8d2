# The helper that coderun's E2B service runs inside a context's
# interpreter, for what must change the interpreter itself: its
# environment (an execution's env_vars) and its working directory. It runs
# in a namespace of its own (the user's variables are untouched) with OP
# and ARGS set, and answers with one display_data of MIME, a JSON string.
# (File operations and commands do not go through an interpreter: see
# envd.py and process.go.)
import json as _json
import os as _os
import sys as _sys

MIME = "application/vnd.coderun.e2b+json"


def _emit(d):
    from IPython.display import publish_display_data
    _sys.stdout.flush()
    _sys.stderr.flush()
    publish_display_data({MIME: _json.dumps(d)})


def _fail(code, message):
    return {"error": {"code": code, "message": message}}


def _oserror(e, path):
    return _fail("not_found" if isinstance(e, FileNotFoundError) else "internal", "%s: %s" % (path, e.strerror))


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
