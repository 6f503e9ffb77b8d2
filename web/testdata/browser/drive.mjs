// drive.mjs: drives coderun's web view in Debian's chromium (headless,
// through playwright-core) for web/browser_test.go.
//
//   node drive.mjs PLAN_JSON
//
// The plan: {"chromium": path, "url": server root, "key": API key,
// "shots": directory for screenshots, "steps": [{"do": scenario, ...}]}.
// Each scenario checks what a person would see and saves screenshots; the
// first failure is printed and the exit status is 1.

import { chromium } from "playwright-core";

const plan = JSON.parse(process.argv[2]);
const timeout = 60_000;

const browser = await chromium.launch({ executablePath: plan.chromium, args: ["--no-sandbox", "--disable-gpu"] });
const context = await browser.newContext({ viewport: { width: 1200, height: 900 } });
const page = await context.newPage();
page.setDefaultTimeout(timeout);
const problems = [];
page.on("pageerror", (err) => problems.push("page error: " + err.message));
// A 401 is expected once: the page asks for the key when it meets one.
page.on("console", (msg) => { if (msg.type() === "error" && !/status of 401/.test(msg.text())) problems.push("console error: " + msg.text()); });

function check(ok, message) {
  if (!ok) throw new Error(message);
}

async function shot(name) {
  await page.screenshot({ path: `${plan.shots}/${name}.png`, fullPage: true });
}

// enterKey answers the key form the page shows on its first 401.
async function enterKey() {
  await page.goto(plan.url + "/#/runs");
  await page.getByLabel(/API key for this server/).waitFor();
  await shot("key-form");
  await page.getByLabel(/API key for this server/).fill(plan.key);
  await page.getByRole("button", { name: "Use key" }).click();
  await page.getByRole("heading", { name: "Runs", exact: true }).waitFor();
  await page.locator("table.list").waitFor();
}

const scenarios = {
  // finished: a run that answered shows its code, its output and its plot.
  async finished(s) {
    await page.goto(plan.url + "/#/runs/" + s.run);
    await page.locator(".answer-text").waitFor();
    const codeText = await page.locator("pre.code").first().innerText();
    check(codeText.includes(s.code), "the code is not shown: " + codeText);
    const out = await page.locator("pre.stdout").first().innerText();
    check(out.includes(s.output), "the output is not shown: " + out);
    const img = page.locator("img.plot").first();
    await img.waitFor();
    await page.waitForFunction((el) => el.complete && el.naturalWidth > 0, await img.elementHandle());
    const width = await img.evaluate((el) => el.naturalWidth);
    check(width > 50, "the plot did not load: width " + width);
    check((await page.locator(".answer-text").innerText()).includes(s.answer), "the answer is not shown");
    await shot("finished-run");
  },
  // list: the runs list filters by status and search; on a narrow screen too.
  async list(s) {
    await page.goto(plan.url + "/#/runs");
    await page.getByLabel("Status").selectOption("succeeded");
    await page.getByLabel("Search").fill(s.search);
    await page.getByRole("button", { name: "Filter" }).click();
    await page.waitForURL(/status=succeeded/);
    await page.locator("table.list tbody tr").first().waitFor();
    const rows = await page.locator("table.list tbody tr").count();
    check(rows === 1, "the filtered list has " + rows + " rows");
    check((await page.locator("table.list").innerText()).includes(s.run), "the run is not listed");
    await page.setViewportSize({ width: 375, height: 800 });
    await shot("runs-narrow");
    const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
    check(overflow <= 1, "the page is wider than a narrow screen by " + overflow + "px");
    await page.setViewportSize({ width: 1200, height: 900 });
  },
  // approve: a run awaiting approval is approved with a click, with a note,
  // and then completes while the page follows it.
  async approve(s) {
    await page.goto(plan.url + "/#/runs/" + s.run);
    const button = page.getByRole("button", { name: "Approve and run" });
    await button.waitFor();
    check((await page.locator("#pending").innerText()).includes("subprocess"), "the pending code is not shown");
    await shot("awaiting-approval");
    await page.getByLabel(/^Note/).fill("echo is harmless");
    await button.click();
    await page.locator(".answer-text").waitFor();
    check((await page.locator(".answer-text").innerText()).includes(s.answer), "the answer is not shown");
    const approval = await page.locator("li.approval").last().innerText();
    check(approval.includes("approved") && approval.includes("echo is harmless"), "the approval is not shown: " + approval);
    check((await page.locator("h1 .badge").innerText()).includes("succeeded"), "the status did not change");
    await shot("approved-and-completed");
  },
  // session: a cell runs from the page, in a session made from the page.
  async session(s) {
    await page.goto(plan.url + "/#/sessions");
    await page.getByRole("button", { name: "New session" }).click();
    await page.getByLabel(/^Code/).waitFor();
    await page.getByLabel(/^Code/).fill(s.code);
    await page.getByRole("button", { name: "Run cell" }).click();
    const out = page.locator("li.cell pre.stdout").last();
    await out.waitFor();
    check((await out.innerText()).includes(s.output), "the cell's output is not shown");
    await page.getByLabel(/^Code/).fill(s.plot);
    await page.getByLabel(/^Code/).press("Control+Enter");
    const img = page.locator("li.cell img.plot").last();
    await img.waitFor();
    await shot("session-cells");
  },
  // start: a task with a file is started from the form, and its page
  // follows it live until it answers.
  async start(s) {
    await page.goto(plan.url + "/#/new");
    await page.getByLabel("Task").fill(s.task);
    await page.getByLabel(/^Input files/).setInputFiles({ name: s.file, mimeType: "text/csv", buffer: Buffer.from(s.content) });
    await page.getByLabel(/^Model/).fill(s.model);
    await page.getByLabel("Code the policy flags").selectOption("none");
    await page.getByRole("button", { name: "Start" }).click();
    await page.waitForURL(/#\/runs\/[0-9a-f]+$/);
    await page.locator(".answer-text").waitFor();
    check((await page.locator(".answer-text").innerText()).includes(s.answer), "the answer is not shown");
    check((await page.locator("pre.stdout").first().innerText()).includes(s.output), "the output is not shown");
    check((await page.locator(".runhead").innerText()).includes(s.file), "the input file is not shown");
    await shot("started-from-the-form");
  },
  // stats: the stats page shows the counts and the chart.
  async stats(s) {
    await page.goto(plan.url + "/#/stats");
    await page.locator("svg.chart").waitFor();
    const cards = await page.locator(".cards").innerText();
    check(cards.includes(String(s.runs)), "the run count is not shown: " + cards);
    await page.goto(plan.url + "/#/review?all=true");
    await page.locator("table.list").waitFor();
    await page.goto(plan.url + "/#/stats");
    await page.locator("svg.chart").waitFor();
    await shot("stats");
  },
};

let failed = null;
try {
  if (plan.key) await enterKey();
  for (const step of plan.steps) {
    try {
      await scenarios[step.do](step);
      console.log("ok " + step.do);
    } catch (err) {
      await shot("failed-" + step.do).catch(() => {});
      throw new Error(step.do + ": " + err.message);
    }
  }
  if (problems.length) throw new Error(problems.join("\n"));
} catch (err) {
  failed = err;
} finally {
  await browser.close();
}
if (failed) {
  console.error("FAIL " + failed.message + (problems.length ? "\n" + problems.join("\n") : ""));
  process.exit(1);
}
