// Firefox ESR headless for the test harness (harness/engines.py Firefox): puppeteer-core over
// WebDriver BiDi, driven by one JSON request per line on stdin, one JSON reply per line on
// stdout. Requests: {id, op: "open", url} -> {page} (a page in a fresh browser context);
// {id, op: "evaluate", page, expression} (an expression giving a promise of a JSON string) ->
// {value}; {id, op: "goto"|"click"|"upload"|"close", page, url|selector|selector and path};
// {id, op: "quit"}. Every reply carries `problems`: {page: [the console errors and page errors
// seen since the last reply]}.
//
//   node firefox.mjs NODE_APP_DIR FIREFOX PREFS_JSON    (NODE_APP_DIR: build.py's .cache/puppeteer)
import { createRequire } from "node:module";
import { join } from "node:path";
import { createInterface } from "node:readline";

const [appDir, executablePath, prefs] = process.argv.slice(2);
const puppeteer = createRequire(join(appDir, "package.json"))("puppeteer-core");
const browser = await puppeteer.launch({
  browser: "firefox", executablePath, headless: true,
  extraPrefsFirefox: JSON.parse(prefs), protocolTimeout: 600_000,
});
const pages = new Map();
let nextPage = 0;

async function open(url) {
  const context = await browser.createBrowserContext();        // its own storage and service workers
  const page = await context.newPage();
  page.setDefaultTimeout(600_000);
  const id = nextPage++;
  const problems = [];
  pages.set(id, { context, page, problems });
  page.on("console", (m) => { if (m.type() === "error") problems.push(`console: ${m.text()}`); });
  page.on("pageerror", (e) => problems.push(`page error: ${e.message || e}`));
  await page.goto(url);
  return { page: id };
}

const ops = {
  open: ({ url }) => open(url),
  evaluate: async ({ page, expression }) => ({ value: await pages.get(page).page.evaluate(expression) }),
  goto: async ({ page, url }) => { await pages.get(page).page.goto(url); return {}; },
  click: async ({ page, selector }) => { await pages.get(page).page.click(selector); return {}; },
  upload: async ({ page, selector, path }) => {
    const input = await pages.get(page).page.$(selector);
    await input.uploadFile(path);
    return {};
  },
  close: async ({ page }) => {
    await pages.get(page).context.close();
    pages.delete(page);
    return {};
  },
  quit: async () => { await browser.close(); return {}; },
};

function write(reply) {
  const problems = {};
  for (const [id, p] of pages) if (p.problems.length) problems[id] = p.problems.splice(0);
  process.stdout.write(JSON.stringify({ ...reply, problems }) + "\n");
}
write({ id: "ready", version: await browser.version() });
for await (const line of createInterface({ input: process.stdin })) {
  const request = JSON.parse(line);
  try {
    write({ id: request.id, ...(await ops[request.op](request)) });
  } catch (e) {
    write({ id: request.id, error: String(e && e.message || e) });
  }
  if (request.op === "quit") break;
}
process.exit(0);
