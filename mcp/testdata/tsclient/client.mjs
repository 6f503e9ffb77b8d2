// Drives coderun's MCP server with the official MCP TypeScript SDK client,
// for mcp/tsclient_test.go. It makes the calls of one scenario and prints
// what came back as one JSON object on standard output; the Go test judges
// it. Usage:
//
//   node client.mjs stdio BINARY [ARGS...]
//   node client.mjs http URL [BEARER_TOKEN]
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const [kind, target, ...rest] = process.argv.slice(2);
let transport;
if (kind === "stdio") {
  transport = new StdioClientTransport({ command: target, args: rest, env: process.env, stderr: "inherit" });
} else if (kind === "http") {
  const headers = rest[0] ? { Authorization: `Bearer ${rest[0]}` } : {};
  transport = new StreamableHTTPClientTransport(new URL(target), { requestInit: { headers } });
} else {
  console.error("usage: client.mjs stdio BINARY [ARGS...] | http URL [TOKEN]");
  process.exit(2);
}

const client = new Client({ name: "coderun-test-client", version: "1.0.0" }, { capabilities: {} });
const report = {};
const text = (r) => (r.content || []).filter((c) => c.type === "text").map((c) => c.text).join("\n");
const call = async (name, args, opts) => {
  const r = await client.callTool({ name, arguments: args }, undefined, { timeout: 120000, ...opts });
  return { isError: !!r.isError, text: text(r), structured: r.structuredContent ?? null,
    types: (r.content || []).map((c) => c.type), content: r.content };
};

try {
  await client.connect(transport);
  report.server = client.getServerVersion();
  report.tools = (await client.listTools()).tools.map((t) => ({ name: t.name, hasInput: !!t.inputSchema, hasOutput: !!t.outputSchema, description: t.description }));

  // State kept across two calls in one session.
  report.set = await call("session_run", { session: "ts", code: "x = 41" });
  report.get = await call("session_run", { session: "ts", code: "print(x + 1)" });

  // A plot comes back as a PNG image.
  const plot = await call("session_run", { session: "ts",
    code: "import matplotlib.pyplot as plt\nplt.plot([1, 2, 3], [4, 1, 9])\nplt.title('sales')\nplt.show()" });
  report.plot = { isError: plot.isError, text: plot.text, types: plot.types,
    images: plot.content.filter((c) => c.type === "image").map((c) => ({ mimeType: c.mimeType, data: c.data })) };

  // An exception is an error result with the traceback.
  report.error = await call("session_run", { session: "ts", code: "def f():\n    return 1 / 0\nf()" });

  // A file round trip: upload, compute in the session, list, read back,
  // and read through the resource link.
  report.upload = await call("files_upload", { session: "ts", files: [{ path: "data.csv", content: "a,b\n1,2\n3,4\n" }] });
  report.compute = await call("session_run", { session: "ts",
    code: "import csv\nrows = list(csv.DictReader(open('data.csv')))\nopen('sum.txt', 'w').write(str(sum(int(r['b']) for r in rows)))" });
  report.list = await call("files_list", { session: "ts" });
  report.read = await call("files_read", { session: "ts", path: "sum.txt" });
  const link = (report.list.content || []).find((c) => c.type === "resource_link" && c.name === "sum.txt");
  report.resource = link ? (await client.readResource({ uri: link.uri })).contents : null;

  // Cancellation interrupts a long cell; the session still works after.
  const progress = [];
  const ac = new AbortController();
  const started = Date.now();
  const long = call("session_run", { session: "ts", code: "import time\nfor i in range(600):\n    print('tick', i, flush=True)\n    time.sleep(0.1)" },
    { signal: ac.signal, onprogress: (p) => {
      progress.push(p);
      // Cancelled once the cell has shown it runs (three lines of its output).
      if (progress.filter((q) => (q.message || "").includes("tick")).length >= 3) ac.abort("enough");
    } });
  try {
    await long;
    report.cancel = { resolved: true };
  } catch (e) {
    report.cancel = { rejected: true, message: String(e && e.message || e), afterMS: Date.now() - started };
  }
  report.progress = progress.map((p) => ({ progress: p.progress, message: p.message }));
  const after = Date.now();
  report.afterCancel = await call("session_run", { session: "ts", code: "print('still', x)" });
  report.afterCancelMS = Date.now() - after;

  // One-shot runs: a success and a failure.
  report.oneShot = await call("run_code", { code: "print(6 * 7)" });
  report.oneShotFail = await call("run_code", { code: "import sys\nprint('bad', file=sys.stderr)\nsys.exit(3)" });

  report.sessions = await call("session_list", {});
  report.closed = await call("session_close", { session: "ts" });
} catch (e) {
  report.fatal = String(e && e.stack || e);
} finally {
  await client.close().catch(() => {});
}
process.stdout.write(JSON.stringify(report) + "\n");
