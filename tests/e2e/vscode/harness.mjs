// What every VS Code end-to-end scenario shares: Debian's Chromium driven by playwright-core
// against a code-server the Python test started, named steps whose outcome (and time) goes to a
// JSON result, and a screenshot at the end. Input: E2E_* environment variables.
import fs from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";

export const env = process.env;
export const timeout = Number(env.E2E_TIMEOUT_MS ?? 30000);
const require = createRequire(path.join(env.E2E_CLIENT_DIR, "package.json"));
const { chromium } = require("playwright-core");

/**
 * A scenario: `step(name, fn)` runs one step and, at the first failure, writes the result and
 * exits 1; `finish(true)` ends a passing run. `shots` names the final screenshots;
 * `onFailure(page, result)` may add what the person would have seen.
 */
export function scenario({ shots, onFailure } = {}) {
  const result = { steps: [] };
  const run = { result, page: undefined, browser: undefined };

  run.finish = async (ok) => {
    result.ok = ok;
    if (run.page && !ok && onFailure) {
      try {
        await onFailure(run.page, result);
      } catch (error) {
        result.on_failure_error = String(error);
      }
    }
    if (run.page) {
      const name = ok ? shots.ok : shots.failed;
      await run.page
        .screenshot({ path: path.join(env.E2E_SHOTS, name) })
        .catch((error) => (result.screenshot_error = String(error)));
    }
    fs.writeFileSync(env.E2E_RESULT, JSON.stringify(result, null, 2));
    await run.browser?.close().catch(() => {});
    process.exit(ok ? 0 : 1);
  };

  run.step = async (name, fn) => {
    const started = Date.now();
    try {
      const detail = await fn();
      result.steps.push({ name, ok: true, detail: detail ?? null, ms: Date.now() - started });
    } catch (error) {
      result.steps.push({ name, ok: false, detail: String(error?.stack ?? error), ms: Date.now() - started });
      result.failed = name;
      await run.finish(false);
    }
  };

  /** Chromium with the flags this closed network needs, the workbench of E2E_WORKSPACE open;
   * `query` is added to the page's address. */
  run.launch = async (query = "") => {
    run.browser = await chromium.launch({
      executablePath: env.E2E_CHROMIUM,
      headless: true,
      args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"],
    });
    run.page = await run.browser.newPage({ viewport: { width: 1400, height: 900 } });
    run.page.setDefaultTimeout(timeout);
    await run.page.goto(`${env.E2E_URL}/?folder=${encodeURIComponent(env.E2E_WORKSPACE)}${query}`);
    await run.page.locator(".monaco-workbench").waitFor({ state: "visible", timeout: 60000 });
    return await run.browser.version();
  };

  /** Quick Open (Ctrl+P) `name` until an editor shows `text`; a keystroke lost while the
   * workbench is still busy is tried again. */
  run.openFile = async (name, text) => {
    const page = run.page;
    const opened = page.locator(".editor-instance .monaco-editor .view-lines", { hasText: text });
    for (let attempt = 1; ; attempt++) {
      await page.locator(".monaco-workbench").click({ position: { x: 700, y: 400 } });
      await page.keyboard.press("Control+P");
      const input = page.locator(".quick-input-widget input");
      try {
        await input.waitFor({ state: "visible", timeout: 10000 });
        await input.fill(name);
        await page.locator(".quick-input-list .monaco-list-row", { hasText: name }).first().waitFor({ timeout: 10000 });
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
  };

  /** The text of the first editor on screen (no-break spaces as spaces). */
  run.editorText = async () =>
    (await run.page.locator(".editor-instance .monaco-editor .view-lines").first().innerText()).replace(/\u00a0/g, " ");

  /** Run a command from the palette by its title. */
  run.palette = async (title) => {
    const page = run.page;
    const input = page.locator(".quick-input-widget input");
    // F1 is swallowed when the focus is inside a webview (the Markdown preview): focus the
    // workbench (an empty spot of the title bar) and try again.
    for (let attempt = 1; ; attempt++) {
      if (attempt > 1) {
        await page.keyboard.press("Escape");
        await page.locator(".part.titlebar").click({ position: { x: 300, y: 12 } });
      }
      await page.keyboard.press("F1");
      try {
        await input.waitFor({ state: "visible", timeout: attempt === 3 ? timeout : 3000 });
        await input.fill(">" + title, { timeout: attempt === 3 ? timeout : 3000 });
        break;
      } catch (error) {
        if (attempt === 3) {
          throw error;
        }
      }
    }
    const row = page.locator(".quick-input-list .monaco-list-row", { hasText: title }).first();
    await row.waitFor({ state: "visible", timeout });
    await input.press("Enter");
  };

  /** Hover `token` (its last occurrence on screen) until a hover holding `needle` shows. */
  run.hover = async (token, needle) => {
    const page = run.page;
    const box = await page.locator(".editor-instance .monaco-editor .view-line span", { hasText: token }).last().boundingBox();
    if (!box) {
      throw new Error(`${token} is not on screen`);
    }
    const hover = page.locator(".monaco-hover", { hasText: needle }).first();
    const deadline = Date.now() + timeout;
    for (;;) {
      // Under load the first mouse move can be lost: move away and back until the hover shows.
      await page.mouse.move(5, 5);
      await page.mouse.move(box.x + box.width / 2, box.y + box.height / 2, { steps: 3 });
      try {
        await hover.waitFor({ state: "visible", timeout: 5000 });
        return (await hover.innerText()).trim();
      } catch (error) {
        if (Date.now() > deadline) {
          throw error;
        }
      }
    }
  };

  return run;
}
