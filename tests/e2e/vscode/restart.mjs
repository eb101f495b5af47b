// "engram: Restart Server" after a failed start (tests/e2e/test_vscode.py): code-server starts
// with a server command that does not exist; exactly one error notification says so; the
// user installs it there and runs "engram: Restart Server"; the server runs (the
// status bar shows the session) and no new error appears.
// "Fixes": installs an engram where the setting points, as a person would.
import fs from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";

const env = process.env;
const require = createRequire(path.join(env.E2E_CLIENT_DIR, "package.json"));
const { chromium } = require("playwright-core");
const timeout = Number(env.E2E_TIMEOUT_MS ?? 30000);
const result = { steps: [] };
let page;
let browser;

async function finish(ok) {
  result.ok = ok;
  if (page) {
    await page.screenshot({ path: path.join(env.E2E_SHOTS, ok ? "vscode-restart.png" : "vscode-restart-failure.png") }).catch(() => {});
  }
  fs.writeFileSync(env.E2E_RESULT, JSON.stringify(result, null, 2));
  await browser?.close().catch(() => {});
  process.exit(ok ? 0 : 1);
}

async function step(name, fn) {
  const started = Date.now();
  try {
    const detail = await fn();
    result.steps.push({ name, ok: true, detail: detail ?? null, ms: Date.now() - started });
  } catch (error) {
    result.steps.push({ name, ok: false, detail: String(error?.stack ?? error), ms: Date.now() - started });
    result.failed = name;
    await finish(false);
  }
}

const errorToasts = () => page.locator(".notifications-toasts .notification-toast", { hasText: /did not start|failed|Couldn't start/i });

await step("launch", async () => {
  browser = await chromium.launch({
    executablePath: env.E2E_CHROMIUM,
    headless: true,
    args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync"],
  });
  page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
  page.setDefaultTimeout(timeout);
  await page.goto(`${env.E2E_URL}/?folder=${encodeURIComponent(env.E2E_WORKSPACE)}`);
  await page.locator(".monaco-workbench").waitFor({ state: "visible", timeout: 60000 });
});

await step("one-error", async () => {
  await errorToasts().first().waitFor({ state: "visible", timeout: 60000 });
  // Anything else the failure would show comes within a few seconds.
  await page.waitForTimeout(4000);
  const texts = (await errorToasts().allInnerTexts()).map((t) => t.replace(/\s+/g, " ").trim());
  result.error_toasts = texts;
  if (texts.length !== 1) {
    throw new Error(`expected one error notification, got ${texts.length}: ${JSON.stringify(texts)}`);
  }
  return texts[0];
});

await step("restart", async () => {
  // The person installs engram where the setting points (the real server behind a script).
  const [program, ...args] = JSON.parse(env.E2E_SERVER);
  const quoted = [program, ...args.filter((a) => a !== "lsp")].map((a) => `'${a}'`).join(" ");
  fs.writeFileSync(env.E2E_MISSING, `#!/bin/sh\nexec ${quoted} "$@"\n`, { mode: 0o755 });
  await page.keyboard.press("F1");
  const input = page.locator(".quick-input-widget input");
  await input.fill(">engram: Restart Server");
  await page.locator(".quick-input-list .monaco-list-row", { hasText: "engram: Restart Server" }).first().waitFor();
  await input.press("Enter");
  const item = page.locator("#workbench\\.parts\\.statusbar .statusbar-item", { hasText: env.E2E_SESSION }).first();
  await item.waitFor({ state: "visible", timeout: 60000 });
  result.status_bar = (await item.innerText()).replace(/\s+/g, " ").trim();
  await page.locator(".notifications-toasts .notification-toast", { hasText: "server restarted" }).first().waitFor();
  const errors = await errorToasts().count();
  if (errors > 1) {
    throw new Error(`new error notifications after the restart: ${errors}`);
  }
  return result.status_bar;
});

await finish(true);
