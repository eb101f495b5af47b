// A fresh code-server with nothing but the engram .vsix and the system's Python: the extension
// must start the server it brings, and the gotcha must show as a squiggle with its hover.
// Input: E2E_* environment variables (tests/e2e/test_vscode_bundled.py). Output: a JSON result
// and screenshots. Exit 0 when every step passed, 1 at the first failure.
import fs from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";

const env = process.env;
const require = createRequire(path.join(env.E2E_CLIENT_DIR, "package.json"));
const { chromium } = require("playwright-core");

const timeout = Number(env.E2E_TIMEOUT_MS ?? 30000);
const result = { steps: [] };
let browser;
let page;

async function finish(ok) {
  result.ok = ok;
  if (page) {
    await page
      .screenshot({ path: path.join(env.E2E_SHOTS, ok ? "bundled-hover.png" : "bundled-failure.png") })
      .catch((error) => (result.screenshot_error = String(error)));
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

await step("launch", async () => {
  browser = await chromium.launch({
    executablePath: env.E2E_CHROMIUM,
    headless: true,
    args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
      "--disable-background-networking", "--disable-component-update", "--disable-sync"],
  });
  page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
  page.setDefaultTimeout(timeout);
  await page.goto(`${env.E2E_URL}/?folder=${encodeURIComponent(env.E2E_WORKSPACE)}`);
  await page.locator(".monaco-workbench").waitFor({ state: "visible", timeout: 60000 });
});

await step("open-file", async () => {
  const opened = page.locator(".editor-instance .monaco-editor .view-lines", { hasText: env.E2E_FILE_TEXT });
  for (let attempt = 1; ; attempt++) {
    await page.locator(".monaco-workbench").click({ position: { x: 700, y: 400 } });
    await page.keyboard.press("Control+P");
    const input = page.locator(".quick-input-widget input");
    try {
      await input.waitFor({ state: "visible", timeout: 10000 });
      await input.fill(env.E2E_FILE_NAME);
      await page.locator(".quick-input-list .monaco-list-row", { hasText: env.E2E_FILE_NAME }).first().waitFor({ timeout: 10000 });
      await input.press("Enter");
      await opened.waitFor({ timeout: 10000 });
      return;
    } catch (error) {
      if (attempt === 3) {
        throw error;
      }
      await page.keyboard.press("Escape");
    }
  }
});

await step("squiggle", async () => {
  const squiggle = page.locator(".editor-instance .monaco-editor [class*='squiggly-']").first();
  await squiggle.waitFor({ state: "attached" });
  return await squiggle.getAttribute("class");
});

await step("hover", async () => {
  const token = page.locator(".editor-instance .monaco-editor .view-line span", { hasText: env.E2E_TOKEN }).last();
  const box = await token.boundingBox();
  if (!box) {
    throw new Error(`${env.E2E_TOKEN} is not on screen`);
  }
  const hover = page.locator(".monaco-hover", { hasText: env.E2E_WORKAROUND }).first();
  const deadline = Date.now() + timeout;
  for (;;) {
    // Under load the first mouse move can be lost: move away and back until the hover shows.
    await page.mouse.move(5, 5);
    await page.mouse.move(box.x + box.width / 2, box.y + box.height / 2, { steps: 3 });
    try {
      await hover.waitFor({ state: "visible", timeout: 5000 });
      break;
    } catch (error) {
      if (Date.now() > deadline) {
        throw error;
      }
    }
  }
  result.hover = (await hover.innerText()).trim();
});

await finish(true);
