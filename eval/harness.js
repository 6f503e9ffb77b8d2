// coderun eval harness for node items (see the eval package's documentation,
// "Verdicts a solution cannot forge"). This process, T, is trusted: it reads
// the run's marker and the tests from its standard input before any of the
// solution's code runs, then starts the solution's process, U, in a Landlock
// domain nested in the sandbox's (so that the kernel refuses U T's memory and
// descriptors, and on Linux 6.12+ any signal to T), with /dev/null for its
// standard input. U loads the solution and serves calls over a pair of
// pipes; T runs the tests with the solution's names standing for calls into
// U, decodes U's answers by hand into plain values (numbers, strings,
// arrays, plain objects, Maps, Sets…), keeps anything else as a handle, and
// prints the marker only when the tests ran to their end without throwing.
//
// Set by the program before this: __cr_solution (the solution's source) and
// __cr_node_modules (where the modules the evaluation provides are, such as
// js-md5: the solution's require looks there after its own directories).
"use strict";

// This process's require looks there too, after the program's own
// directories (and U's: u.js below).
module.paths.push(__cr_node_modules);

// --- shared: the encoding of values --------------------------------------

// crEncode turns v into JSON-able data, exact where JSON is not (undefined,
// NaN, ±Infinity, -0, BigInt); anything that is not plain data is what
// ref(v) returns.
function crEncode(v, ref, depth) {
  depth = depth || 0;
  if (v === null || typeof v === "boolean" || typeof v === "string") return v;
  if (typeof v === "number") return Number.isFinite(v) && !Object.is(v, -0) ? v : ["N", Object.is(v, -0) ? "-0" : String(v)];
  if (v === undefined) return ["u"];
  if (typeof v === "bigint") return ["B", v.toString()];
  if (depth < 100 && typeof v === "object") {
    const proto = Object.getPrototypeOf(v);
    const enc = (x) => crEncode(x, ref, depth + 1);
    if (Array.isArray(v) && proto === Array.prototype) return ["a", Array.from(v, enc)];
    if (proto === Object.prototype || proto === null) return ["o", Object.keys(v).map((k) => [k, enc(v[k])])];
    if (proto === Map.prototype) return ["M", Array.from(v, ([k, x]) => [enc(k), enc(x)])];
    if (proto === Set.prototype) return ["S", Array.from(v, enc)];
    if (proto === Date.prototype) return ["D", v.getTime()];
  }
  return ref(v);
}

// --- U: the solution's process --------------------------------------------

function crSolution() {
  const fs = require("fs");
  const vm = require("vm");
  const [dir, reqFd, repFd] = [process.argv[2], 3, 4];
  const ids = new Map();
  const objects = [];
  const ref = (v) => {
    if (!ids.has(v)) {
      ids.set(v, objects.length);
      objects.push(v);
    }
    const name = (typeof v === "function" ? v.name : v && v.constructor && v.constructor.name) || typeof v;
    return [typeof v === "function" ? "f" : "r", ids.get(v), String(name)];
  };
  const deref = (x) => {
    if (!Array.isArray(x) || x[0] !== "h" || !(x[1] in objects)) throw new Error("unknown object");
    return objects[x[1]];
  };
  const link = crLink(reqFd, repFd);
  const fail = (e) => {
    const err = e instanceof Error ? e : new Error(String(e));
    link.send(["E", String(err.name), String(err.message), String(err.stack || "")]);
  };
  globalThis.require = require;
  globalThis.module = { exports: {} };
  globalThis.exports = globalThis.module.exports;
  try {
    vm.runInThisContext(fs.readFileSync(dir + "/solution.js", "utf8"), { filename: "solution.js" });
  } catch (e) {
    fail(e);
    return;
  }
  link.send(["ready"]);
  for (;;) {
    const msg = link.recv();
    if (msg === null) return;
    try {
      let reply;
      if (msg[0] === "N") {
        const out = [];
        for (const name of msg[1]) {
          let v;
          try {
            v = vm.runInThisContext(name);
          } catch (e) {
            const exported = globalThis.module.exports;
            if (exported && typeof exported === "object" && Object.prototype.hasOwnProperty.call(exported, name)) v = exported[name];
            else continue;
          }
          out.push([name, crEncode(v, ref)]);
        }
        reply = ["R", out];
      } else if (msg[0] === "G") {
        const target = deref(msg[1]);
        const v = target[msg[2]];
        reply = ["R", typeof v === "function" ? ["m", ids.has(v) ? ids.get(v) : ref(v)[1], String(msg[2])] : crEncode(v, ref)];
      } else {
        const fn = deref(msg[1]);
        const self = msg[2] === null ? undefined : deref(msg[2]);
        const args = msg[3].map((a) => crDecode(a, deref));
        const result = msg[0] === "new" ? Reflect.construct(fn, args) : Reflect.apply(fn, self, args);
        reply = ["R", crEncode(result, ref)];
      }
      link.send(reply);
    } catch (e) {
      fail(e);
    }
  }
}

// crDecode is crEncode's inverse, by hand: it builds only plain data
// (properties defined, never assigned, so "__proto__" is a key like any
// other) and calls handle(x) for anything else.
function crDecode(x, handle) {
  if (x === null || typeof x === "boolean" || typeof x === "string" || typeof x === "number") return x;
  if (!Array.isArray(x) || typeof x[0] !== "string") throw new Error("malformed value");
  const dec = (y) => crDecode(y, handle);
  switch (x[0]) {
    case "N": {
      const v = { NaN: NaN, Infinity: Infinity, "-Infinity": -Infinity, "-0": -0 }[x[1]];
      if (v === undefined) throw new Error("malformed number");
      return v;
    }
    case "u":
      return undefined;
    case "B":
      return BigInt(String(x[1]));
    case "a":
      return x[1].map(dec);
    case "o": {
      const o = {};
      for (const [k, v] of x[1]) Object.defineProperty(o, String(k), { value: dec(v), writable: true, enumerable: true, configurable: true });
      return o;
    }
    case "M":
      return new Map(x[1].map(([k, v]) => [dec(k), dec(v)]));
    case "S":
      return new Set(x[1].map(dec));
    case "D":
      return new Date(Number(x[1]));
  }
  return handle(x);
}

// crLink is a conversation of length-prefixed JSON messages over two
// descriptors, synchronous: a descriptor that is not ready (EAGAIN) is
// waited for, a millisecond at a time. recv returns null at the end.
function crLink(readFd, writeFd) {
  const fs = require("fs");
  const nap = new Int32Array(new SharedArrayBuffer(4));
  const again = (e) => e && e.code === "EAGAIN";
  const readFull = (n) => {
    const buf = Buffer.alloc(n);
    let got = 0;
    while (got < n) {
      let k;
      try {
        k = fs.readSync(readFd, buf, got, n - got, null);
      } catch (e) {
        if (again(e)) {
          Atomics.wait(nap, 0, 0, 1);
          continue;
        }
        throw e;
      }
      if (k === 0) return null;
      got += k;
    }
    return buf;
  };
  return {
    send(msg) {
      const body = Buffer.from(JSON.stringify(msg));
      const data = Buffer.alloc(8 + body.length);
      data.writeBigUInt64BE(BigInt(body.length));
      body.copy(data, 8);
      let off = 0;
      while (off < data.length) {
        try {
          off += fs.writeSync(writeFd, data, off, data.length - off);
        } catch (e) {
          if (!again(e)) throw e;
          Atomics.wait(nap, 0, 0, 1);
        }
      }
    },
    recv() {
      const head = readFull(8);
      if (head === null) return null;
      const n = Number(head.readBigUInt64BE());
      if (n > 256 << 20) throw new Error("message of " + n + " bytes");
      const body = readFull(n);
      if (body === null) return null;
      return JSON.parse(body.toString());
    },
  };
}

// --- T: the tests' process --------------------------------------------------

// The names of JavaScript's syntax, never the solution's.
const crReserved = new Set(("break case catch class const continue debugger default delete do else export extends false finally for " +
  "function if import in instanceof let new null return super switch this throw true try typeof var void while with yield " +
  "async await of static get set arguments eval undefined NaN Infinity").split(" "));

function crTests() {
  const fs = require("fs");
  const cp = require("child_process");
  const vm = require("vm");
  const input = fs.readFileSync(0);
  const nl = input.indexOf(10);
  const marker = nl < 0 ? "" : input.subarray(0, nl).toString();
  const tests = nl < 0 ? "" : input.subarray(nl + 1).toString();
  if (!marker || !tests.trim()) {
    process.stderr.write("coderun eval: no tests on standard input\n");
    process.exit(1);
  }
  const python = (process.env.PATH || "/usr/bin:/bin").split(":").map((d) => d + "/python3").find((p) => fs.existsSync(p));
  if (!python) {
    process.stderr.write("coderun eval: the node harness needs python3 in the sandbox\n");
    process.exit(1);
  }
  const dir = fs.mkdtempSync("/tmp/coderun-eval-");
  fs.writeFileSync(dir + "/solution.js", __cr_solution);
  fs.writeFileSync(dir + "/u.js", '"use strict";\nmodule.paths.push(' + JSON.stringify(__cr_node_modules) + ");\n" +
    [crEncode, crDecode, crLink, crSolution].map(String).join("\n") + "\ncrSolution();\n");
  const u = cp.spawn(python, ["-I", "-S", "-c", CR_LANDLOCK, process.execPath, dir + "/u.js", dir], { stdio: ["ignore", "inherit", "inherit", "pipe", "pipe"] });
  // U reads requests on its fd 3 and answers on its fd 4; here, both are
  // the other ends of the same socket pairs, used without the event loop.
  const link = crLink(u.stdio[4]._handle.fd, u.stdio[3]._handle.fd);
  const ended = () => {
    process.stderr.write("coderun eval: the solution's process ended during the tests\n");
    process.exit(1);
  };
  const recv = () => {
    const msg = link.recv();
    if (msg === null) ended();
    if (!Array.isArray(msg) || (msg[0] !== "R" && msg[0] !== "E" && msg[0] !== "ready")) throw new Error("the solution's process sent something else than an answer");
    if (msg[0] === "E") {
      // The solution's error, as an error of the builtin class of its
      // name (RangeError, TypeError…) where there is one.
      const C = globalThis[String(msg[1])];
      const e = typeof C === "function" && (C === Error || C.prototype instanceof Error) ? new C(String(msg[2])) : new Error(String(msg[2]));
      e.name = String(msg[1]);
      e.stack = String(msg[3]);
      throw e;
    }
    return msg;
  };
  const handles = new Map();
  const handleOf = (x) => {
    const [kind, id] = [x[0], x[1]];
    if ((kind !== "f" && kind !== "r" && kind !== "m") || typeof id !== "number") throw new Error("malformed object");
    if (handles.has(id) && kind !== "m") return handles.get(id);
    let h;
    if (kind === "m") {
      // A method read from a handle: called with that handle as this.
      const self = currentThis;
      h = function (...args) {
        return callU(["f", id], self, args, false);
      };
      return h;
    }
    const target = kind === "f" ? function () {} : {};
    h = new Proxy(target, {
      apply: (_, self, args) => callU(x, idOf.has(self) ? self : null, args, false),
      construct: (_, args) => callU(x, null, args, true),
      get: (_, key) => {
        if (typeof key !== "string" || key === "then") {
          if (key === Symbol.toPrimitive) return () => { throw new TypeError("the solution's " + x[2] + " object cannot be compared or converted across the process boundary: only plain data crosses it"); };
          return undefined;
        }
        link.send(["G", ["h", id], key]);
        currentThis = h;
        return crDecode(recv()[1], handleOf);
      },
      set: () => { throw new TypeError("the solution's objects cannot be changed across the process boundary"); },
      getPrototypeOf: () => null,
    });
    handles.set(id, h);
    idOf.set(h, id);
    return h;
  };
  const idOf = new Map();
  let currentThis = null;
  const toU = (v) => crEncode(v, (o) => {
    if (idOf.has(o)) return ["h", idOf.get(o)];
    throw new TypeError("the tests passed a " + (typeof o === "function" ? "function" : "non-plain object") + " to the solution, which cannot cross the process boundary");
  });
  const callU = (x, self, args, construct) => {
    link.send([construct ? "new" : "call", ["h", x[1]], self === null || self === undefined ? null : ["h", idOf.get(self)], args.map(toU)]);
    return crDecode(recv()[1], handleOf);
  };
  recv(); // "ready", or how loading the solution failed
  const names = new Set((tests.match(/[A-Za-z_$][\w$]*/g) || []).filter((n) => !crReserved.has(n) && !(n in globalThis)));
  link.send(["N", Array.from(names)]);
  const resolved = recv()[1];
  for (const item of Array.isArray(resolved) ? resolved : []) {
    if (!Array.isArray(item) || typeof item[0] !== "string" || !names.has(item[0])) throw new Error("malformed name");
    Object.defineProperty(globalThis, item[0], { value: crDecode(item[1], handleOf), writable: true, enumerable: false, configurable: true });
  }
  globalThis.require = require;
  // The tests' synchronous part; then what they left to the event loop
  // (promises, timers), which may still call U. U and its pipes do not
  // keep the loop alive: once it is empty the tests have ended, and an
  // error thrown or a promise rejected on the way fails them.
  const failed = (e) => {
    report(e);
    process.exit(1);
  };
  process.on("uncaughtException", failed);
  process.on("unhandledRejection", failed);
  vm.runInThisContext(tests, { filename: "tests.js" });
  u.unref();
  for (const s of u.stdio) if (s && typeof s.unref === "function") s.unref();
  process.on("beforeExit", () => {
    try {
      u.kill("SIGKILL");
    } catch (e) {}
    fs.writeSync(1, "\n" + marker + "\n");
    process.exit(0);
  });
}

// report writes an error's stack, then the error alone on the last line
// (what a verdict quotes).
function report(e) {
  const what = e instanceof Error ? e.name + ": " + e.message : "uncaught " + String(e);
  process.stderr.write(((e && e.stack) || String(e)) + "\n" + what.split("\n")[0] + "\n");
}

// CR_LANDLOCK enters a nested Landlock domain and executes its arguments
// (as harness.sh's __cr_landlock).
const CR_LANDLOCK = `import ctypes, os, struct, sys
libc = ctypes.CDLL(None, use_errno=True)
abi = libc.syscall(444, None, 0, 1)
if abi >= 1:
    attr = struct.pack("QQQ", 1 << 11, 0, 3) if abi >= 6 else struct.pack("Q", 1 << 11)
    fd = libc.syscall(444, attr, len(attr), 0)
    if fd < 0 or libc.prctl(38, 1, 0, 0, 0) != 0 or libc.syscall(446, fd, 0) != 0:
        sys.stderr.write("coderun eval: cannot enter a Landlock domain: %s\\n" % os.strerror(ctypes.get_errno()))
        sys.exit(125)
    os.close(fd)
os.execv(sys.argv[1], sys.argv[1:])`;

try {
  crTests();
} catch (e) {
  report(e);
  process.exit(1);
}
