// coderun Node bootstrap. Started ahead of the request, it reports readiness
// on fd 4 and waits on fd 3 for
// "KEY=VALUE\0...\0", the program's file name (empty for main.js) and "\0",
// and then the code, and runs the code as the CommonJS module /work/NAME, the
// way "node /work/NAME" would.
// Its names live in a function of their own: at the top level of the -e
// script they would be global bindings the program sees (a sloppy
// "for (m in t)" would assign the module's variable).
(() => {
  const fs = require("fs");
  const Module = require("module");
  try { fs.writeSync(4, "R"); fs.closeSync(4); } catch (e) {}
  const data = fs.readFileSync(3);
  fs.closeSync(3);
  let i = 0;
  for (;;) {
    const j = data.indexOf(0, i);
    if (j === i) break;
    const kv = data.subarray(i, j).toString();
    const eq = kv.indexOf("=");
    process.env[kv.slice(0, eq)] = kv.slice(eq + 1);
    i = j + 1;
  }
  i++;
  const k = data.indexOf(0, i);
  const file = "/work/" + (data.subarray(i, k).toString() || "main.js");
  const src = data.subarray(k + 1).toString();
  process.argv[1] = file;
  const m = new Module(file, null);
  m.filename = file;
  m.paths = Module._nodeModulePaths("/work");
  require.main = m;
  process.mainModule = m;
  m._compile(src, file);
})();
