// Drives the unmodified @e2b/code-interpreter SDK against a coderun server
// (E2B_API_URL, E2B_SANDBOX_URL, E2B_API_KEY or E2B_DEBUG are set by the Go
// test) and prints what it observed as one JSON object; the Go test
// (server/e2b/sdk_test.go) checks it. A step that throws is recorded as
// its error, so one failure does not hide the others.
import { Sandbox } from '@e2b/code-interpreter'

const out = {}
async function step(name, fn) {
  try {
    out[name] = await fn()
  } catch (e) {
    out[name] = { thrown: `${e?.name}: ${e?.message}`, exitCode: e?.exitCode, stdout: e?.stdout, stderr: e?.stderr }
  }
}

const scenario = process.argv[2]
if (scenario === 'main') {
  const sbx = await Sandbox.create({ timeoutMs: 600_000 })
  out.sandboxId = sbx.sandboxId
  await step('hello', async () => {
    const streamed = []
    const ex = await sbx.runCode('print("hello from coderun")\n6 * 7', { onStdout: (m) => streamed.push(m.line) })
    return { stdout: ex.logs.stdout, stderr: ex.logs.stderr, text: ex.text, count: ex.executionCount, streamed }
  })
  await step('plot', async () => {
    const ex = await sbx.runCode('import matplotlib.pyplot as plt\nplt.plot([1, 2, 3], [1, 4, 9])\nplt.show()')
    return { results: ex.results.map((r) => ({ png: r.png ? r.png.slice(0, 16) : null, main: r.isMainResult, formats: r.formats() })), error: ex.error?.name ?? null }
  })
  await step('error', async () => {
    const ex = await sbx.runCode('def f():\n    return 1 / 0\nf()')
    return { name: ex.error?.name, value: ex.error?.value, traceback: ex.error?.traceback }
  })
  await step('state', async () => {
    await sbx.runCode('counter = 41')
    const ex = await sbx.runCode('counter + 1')
    return { text: ex.text, count: ex.executionCount }
  })
  await step('contexts', async () => {
    const a = await sbx.createCodeContext()
    const b = await sbx.createCodeContext({ language: 'python' })
    await sbx.runCode('secret = "only in a"', { context: a })
    const inA = await sbx.runCode('secret', { context: a })
    const inB = await sbx.runCode('secret', { context: b })
    const listed = (await sbx.listCodeContexts()).map((c) => c.id)
    await sbx.removeCodeContext(b)
    const afterRemove = (await sbx.listCodeContexts()).map((c) => c.id)
    return { a: a.id, b: b.id, inA: inA.text, inB: inB.error?.name, listed, afterRemove, cwd: a.cwd, language: a.language }
  })
  await step('envs', async () => {
    const ex = await sbx.runCode('import os\nos.environ.get("GREETING")', { envs: { GREETING: 'hi there' } })
    const after = await sbx.runCode('import os\nprint(os.environ.get("GREETING"))')
    return { during: ex.text, after: after.logs.stdout }
  })
  await step('bash', async () => {
    const ex = await sbx.runCode('X=5; echo "x is $X"', { language: 'bash' })
    return { stdout: ex.logs.stdout }
  })
  await step('files', async () => {
    const w = await sbx.files.write('/home/user/data.csv', 'a,b\n1,2\n')
    const read = await sbx.files.read('/home/user/data.csv')
    const fromCode = await sbx.runCode('open("data.csv").read()')
    await sbx.runCode('open("made_by_code.txt", "w").write("written in a cell")')
    const made = await sbx.files.read('made_by_code.txt')
    await sbx.files.makeDir('/home/user/sub/dir')
    await sbx.files.write('sub/dir/inner.txt', 'inner')
    const list = (await sbx.files.list('/home/user')).map((e) => ({ name: e.name, type: e.type, path: e.path }))
    const deep = (await sbx.files.list('sub', { depth: 2 })).map((e) => e.path)
    const exists = await sbx.files.exists('data.csv')
    const missingExists = await sbx.files.exists('nope.txt')
    const info = await sbx.files.getInfo('data.csv')
    await sbx.files.rename('data.csv', 'renamed.csv')
    await sbx.files.remove('sub')
    const after = (await sbx.files.list('/home/user')).map((e) => e.name)
    let missing
    try {
      await sbx.files.read('nope.txt')
    } catch (e) {
      missing = e.name
    }
    return { written: w.path, read, fromCode: fromCode.text, made, list, deep, exists, missingExists, size: info.size, mtime: info.modifiedTime?.toISOString?.(), after, missing }
  })
  await step('multiWrite', async () => {
    const infos = await sbx.files.write([{ path: 'm/one.txt', data: 'one' }, { path: '/home/user/m/two.txt', data: new Blob(['two']) }])
    const both = [await sbx.files.read('m/one.txt'), await sbx.files.read('m/two.txt')]
    const bytes = await sbx.files.read('m/two.txt', { format: 'bytes' })
    await sbx.files.remove('m')
    return { paths: infos.map((i) => i.path), both, bytes: Array.from(bytes) }
  })
  await step('commands', async () => {
    const r = await sbx.commands.run('echo out; echo err >&2; ls /work')
    return { stdout: r.stdout, stderr: r.stderr, exitCode: r.exitCode }
  })
  await step('commandExit', async () => {
    await sbx.commands.run('echo before; exit 3')
    return { thrown: 'nothing' }
  })
  await step('commandStdin', async () => {
    const h = await sbx.commands.run('read line; echo "got $line"', { background: true, stdin: true })
    await h.sendStdin('hello stdin\n')
    const r = await h.wait()
    return { stdout: r.stdout, exitCode: r.exitCode }
  })
  await step('commandKill', async () => {
    const h = await sbx.commands.run('sleep 30', { background: true })
    const killed = await h.kill()
    try {
      await h.wait()
      return { killed, waited: 'ok' }
    } catch (e) {
      return { killed, waited: e.name, message: e.message, exitCode: e.exitCode }
    }
  })
  await step('commandTimeout', async () => {
    const started = Date.now()
    let thrown
    try {
      await sbx.commands.run('sleep 30', { timeoutMs: 1500 })
    } catch (e) {
      thrown = e.name
    }
    const next = await sbx.commands.run('echo next')
    return { thrown, next: next.stdout, ms: Date.now() - started }
  })
  await step('twoSandboxes', async () => {
    const other = await Sandbox.create({ envs: { SBX_VAR: 'from create' }, metadata: { purpose: 'second' } })
    const envInCode = await other.runCode('import os\nos.environ["SBX_VAR"]')
    const envInCommand = await other.commands.run('echo $SBX_VAR')
    const filtered = (await Sandbox.list({ query: { metadata: { purpose: 'second' } } }).nextItems()).map((s) => s.sandboxId)
    await other.runCode('counter = 1000')
    const here = await sbx.runCode('counter')
    const there = await other.runCode('counter')
    const listed = (await Sandbox.list().nextItems()).map((s) => s.sandboxId)
    const info = await other.getInfo()
    await other.setTimeout(120_000)
    const killed = await other.kill()
    const listedAfter = (await Sandbox.list().nextItems()).map((s) => s.sandboxId)
    return { here: here.text, there: there.text, other: other.sandboxId, listed, killed, listedAfter, infoId: info.sandboxId, envInCode: envInCode.text, envInCommand: envInCommand.stdout, filtered, metadata: info.metadata }
  })
  await step('kill', async () => {
    const connected = await Sandbox.connect(sbx.sandboxId)
    const ex = await connected.runCode('counter')
    await sbx.kill()
    const running = await sbx.isRunning().catch((e) => `threw ${e.name}`)
    return { viaConnect: ex.text, running }
  })
} else if (scenario === 'debug') {
  const sbx = await Sandbox.create()
  out.sandboxId = sbx.sandboxId
  await step('hello', async () => {
    const ex = await sbx.runCode('print("debug mode")')
    return { stdout: ex.logs.stdout }
  })
  await step('files', async () => {
    await sbx.files.write('debug.txt', 'from debug mode')
    return { read: await sbx.files.read('debug.txt') }
  })
  await step('commands', async () => {
    const r = await sbx.commands.run('cat debug.txt')
    return { stdout: r.stdout, exitCode: r.exitCode }
  })
} else if (scenario === 'together') {
  // Commands run beside code, and everything of one sandbox shares its
  // files: each step would wait forever where they took turns (hence the
  // timeouts, which turn a wait into an error).
  const sbx = await Sandbox.create({ timeoutMs: 600_000 })
  out.sandboxId = sbx.sandboxId
  await step('background', async () => {
    const h = await sbx.commands.run('while [ ! -f go.txt ]; do sleep 0.05; done; echo released', { background: true, timeoutMs: 60_000 })
    const listed = (await sbx.commands.list()).map((p) => ({ pid: p.pid, cmd: p.cmd, args: p.args }))
    const code = await sbx.runCode('open("go.txt", "w").write("go")\nprint("code ran")', { timeoutMs: 30_000 })
    const r = await h.wait()
    return { pid: h.pid, listed, code: code.logs.stdout, stdout: r.stdout, exitCode: r.exitCode }
  })
  await step('codeWaitsForCommand', async () => {
    const running = sbx.runCode('import os, time\nwhile not os.path.exists("from-cmd.txt"):\n    time.sleep(0.05)\nprint(open("from-cmd.txt").read().strip())', { timeoutMs: 30_000 })
    const cmd = await sbx.commands.run('echo written-by-a-command > from-cmd.txt', { timeoutMs: 30_000 })
    const code = await running
    return { code: code.logs.stdout, error: code.error?.name ?? null, cmdExit: cmd.exitCode }
  })
  await step('severalAtOnce', async () => {
    const a = await sbx.commands.run('while [ ! -f b.txt ]; do sleep 0.05; done; echo a > a.txt; echo a-done', { background: true, timeoutMs: 30_000 })
    const b = await sbx.commands.run('echo b > b.txt; while [ ! -f a.txt ]; do sleep 0.05; done; echo b-done', { background: true, timeoutMs: 30_000 })
    const [ra, rb] = await Promise.all([a.wait(), b.wait()])
    return { a: ra.stdout, b: rb.stdout, distinct: a.pid !== b.pid }
  })
  await step('connectAndStdin', async () => {
    const h = await sbx.commands.run('cat', { background: true, stdin: true, timeoutMs: 30_000 })
    const seen = []
    const c = await sbx.commands.connect(h.pid, { onStdout: (d) => seen.push(d), timeoutMs: 30_000 })
    await sbx.commands.sendStdin(h.pid, 'via stdin\n')
    await sbx.commands.closeStdin(h.pid)
    const viaConnect = await c.wait()
    const viaStart = await h.wait()
    return { seen: seen.join(''), connected: viaConnect.stdout, started: viaStart.stdout }
  })
  await step('kill', async () => {
    const h = await sbx.commands.run('sleep 120', { background: true, timeoutMs: 60_000 })
    const before = (await sbx.commands.list()).map((p) => p.pid)
    const killed = await sbx.commands.kill(h.pid)
    let waited
    try {
      await h.wait()
      waited = 'ok'
    } catch (e) {
      waited = e.name
    }
    const after = (await sbx.commands.list()).map((p) => p.pid)
    const again = await sbx.commands.kill(h.pid)
    return { listedBefore: before.includes(h.pid), killed, waited, listedAfter: after.includes(h.pid), again }
  })
  await step('sharedFiles', async () => {
    const ctx = await sbx.createCodeContext()
    await sbx.runCode('open("from-context.txt", "w").write("from a context")', { context: ctx })
    await sbx.runCode('echo from-bash > from-bash.txt', { language: 'bash' })
    const read = await sbx.files.read('/home/user/from-context.txt')
    const inDefault = await sbx.runCode('open("from-bash.txt").read().strip()')
    const inCommand = await sbx.commands.run('cat from-context.txt from-bash.txt')
    await sbx.files.write('/home/user/from-files.txt', 'from files.write')
    const inContext = await sbx.runCode('open("from-files.txt").read()', { context: ctx })
    return { read, inDefault: inDefault.text, inCommand: inCommand.stdout, inContext: inContext.text }
  })
  await step('home', async () => {
    const code = await sbx.runCode('import os\nopen("/home/user/abs.txt", "w").write("absolute")\nos.path.realpath("/home/user")')
    const cmd = await sbx.commands.run('pwd; cat /home/user/abs.txt')
    const bash = await sbx.runCode('pwd; cat abs.txt', { language: 'bash' })
    const sub = await sbx.commands.run('mkdir -p /home/user/sub && cd sub && pwd')
    const inSub = await sbx.commands.run('pwd', { cwd: '/home/user/sub' })
    const written = await sbx.files.write('/home/user/sub/w.txt', 'w')
    const entries = (await sbx.files.list('/home/user/sub')).map((e) => e.path)
    return { code: code.text, cmd: cmd.stdout, bash: bash.logs.stdout, sub: sub.stdout, inSub: inSub.stdout, written: written.path, entries }
  })
  await step('notServed', async () => {
    const thrown = async (fn) => {
      try {
        await fn()
        return 'nothing'
      } catch (e) {
        return `${e.name}: ${e.message}`
      }
    }
    return {
      metrics: await thrown(() => sbx.getMetrics()),
      pty: await thrown(() => sbx.pty.create({ cols: 80, rows: 24, onData: () => {} })),
      asRoot: await thrown(() => sbx.commands.run('id -u', { user: 'root' })),
      asUser: (await sbx.commands.run('id -u', { user: 'user' })).exitCode,
      running: await sbx.isRunning(),
    }
  })
} else if (scenario === 'watch') {
  const sbx = await Sandbox.create({ timeoutMs: 600_000 })
  out.sandboxId = sbx.sandboxId
  await step('watchDir', async () => {
    await sbx.files.makeDir('/home/user/watched')
    const events = []
    const w = await sbx.files.watchDir('/home/user/watched', (e) => events.push(`${e.type} ${e.name}`), { recursive: true, timeoutMs: 120_000 })
    const seen = async (...want) => {
      const until = Date.now() + 20_000
      while (Date.now() < until && !want.every((e) => events.includes(e))) await new Promise((r) => setTimeout(r, 50))
    }
    await sbx.files.write('/home/user/watched/by-files.txt', 'x')
    await seen('create by-files.txt')
    await sbx.runCode('open("watched/by-code.txt", "w").write("y")')
    await seen('create by-code.txt')
    await sbx.commands.run('mkdir watched/sub && echo z > watched/sub/by-command.txt && rm watched/by-files.txt && echo more >> watched/by-code.txt')
    await seen('create sub', 'create sub/by-command.txt', 'remove by-files.txt', 'write by-code.txt')
    await w.stop()
    let missing
    try {
      await sbx.files.watchDir('/home/user/no-such-dir', () => {})
    } catch (e) {
      missing = e.name
    }
    return { events, missing }
  })
} else {
  console.error(`unknown scenario ${scenario}`)
  process.exit(2)
}
console.log(JSON.stringify(out))
