// coderun's Node session driver: a kernel-like loop over JSON lines, the
// protocol of driver/python.py. Requests come on stdin ({"op": "init"},
// {"op": "execute", "id", "code"}, {"op": "ping"}); messages go to fd 1:
// ready, started, stream, execute_result, error, done. Each cell runs with
// vm.runInThisContext, so its top-level declarations stay for the next
// cells as in Node's REPL; SIGINT interrupts a running cell
// (breakOnSigint) and the session goes on. What the cell writes to
// process.stdout and process.stderr (console.log too) becomes stream
// messages of the cell.
(() => {
  const fs = require("fs");
  const vm = require("vm");
  const util = require("util");
  let cell = 0;
  let count = 0;
  let lastDone = null;
  const send = (m) => fs.writeSync(1, JSON.stringify(m) + "\n");
  const stream = (name) => (chunk, encoding, cb) => {
    const text = typeof chunk === "string" ? chunk : Buffer.from(chunk).toString("utf8");
    if (text) send({ type: "stream", id: cell, name, text });
    if (typeof encoding === "function") encoding();
    else if (typeof cb === "function") cb();
    return true;
  };
  process.stdout.write = stream("stdout");
  process.stderr.write = stream("stderr");
  // An interrupt between cells is no reason to end the session.
  process.on("SIGINT", () => {});
  // Requests are read with read(2) on fd 0, blocking: the host sees the
  // interpreter waiting for its next request (sandbox.Process.AwaitingInput),
  // which is how a cell's end is confirmed. Between two requests the event
  // loop turns once (setImmediate), so what a cell left to promises and
  // immediate timers runs, as part of the cell, before the next read.
  const buf = Buffer.alloc(1 << 16);
  let pending = Buffer.alloc(0);
  const nextLine = () => {
    for (;;) {
      const nl = pending.indexOf(10);
      if (nl >= 0) {
        const line = pending.subarray(0, nl).toString("utf8");
        pending = pending.subarray(nl + 1);
        return line;
      }
      let n;
      try {
        n = fs.readSync(0, buf, 0, buf.length, null);
      } catch (e) {
        if (e.code === "EAGAIN" || e.code === "EINTR") continue;
        throw e;
      }
      if (n === 0) return null;
      pending = Buffer.concat([pending, buf.subarray(0, n)]);
    }
  };
  const handle = (line) => {
    let req;
    try {
      req = JSON.parse(line);
    } catch (e) {
      return;
    }
    if (req.op === "init") {
      send({ type: "ready", protocol: 1, language: "node", version: process.version });
    } else if (req.op === "ping") {
      if (lastDone) send(lastDone);
    } else if (req.op === "execute") {
      cell = req.id;
      count++;
      send({ type: "started", id: cell, execution_count: count });
      let status = "ok";
      try {
        const value = vm.runInThisContext(String(req.code), { filename: "<cell " + count + ">", breakOnSigint: true });
        if (value !== undefined) {
          send({ type: "execute_result", id: cell, execution_count: count, metadata: {},
                 data: { "text/plain": util.inspect(value) } });
        }
      } catch (e) {
        status = "error";
        const isErr = e instanceof Error;
        send({ type: "error", id: cell,
               ename: isErr ? e.name : "Uncaught",
               evalue: isErr ? e.message : util.inspect(e),
               traceback: String(isErr && e.stack ? e.stack : util.inspect(e)).split("\n") });
      }
      lastDone = { type: "done", id: cell, status, execution_count: count };
      send(lastDone);
    }
  };
  const loop = () => {
    const line = nextLine();
    if (line === null) process.exit(0);
    handle(line);
    setImmediate(loop);
  };
  loop();
})();
