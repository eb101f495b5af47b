// "engram: Restart Server" after a failed start (tests/e2e/test_vscode.py): code-server starts
// with a server command that does not exist; exactly one error notification says so; the
// user installs it there and runs "engram: Restart Server"; the server runs (the
// status bar shows the session) and no new error appears.
// "Fixes": installs an engram where the setting points, as a person would.
import fs from "node:fs";
import { env, scenario } from "./harness.mjs";

const run = scenario({ shots: { ok: "vscode-restart.png", failed: "vscode-restart-failure.png" } });
const { result, step, finish } = run;
let page;

const errorToasts = () => page.locator(".notifications-toasts .notification-toast", { hasText: /did not start|failed|Couldn't start/i });

await step("launch", async () => {
  await run.launch();
  page = run.page;
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

await step("restart-twice", async () => {
  // Two restarts in a row, the second while the first is still starting the server: one
  // server afterwards, and no "command 'engram.status' already exists" from a second client.
  for (let i = 0; i < 2; i++) {
    await page.keyboard.press("F1");
    const input = page.locator(".quick-input-widget input");
    await input.fill(">engram: Restart Server");
    await page.locator(".quick-input-list .monaco-list-row", { hasText: "engram: Restart Server" }).first().waitFor();
    await input.press("Enter");
  }
  await page.waitForTimeout(6000);
  const item = page.locator("#workbench\\.parts\\.statusbar .statusbar-item", { hasText: env.E2E_SESSION }).first();
  await item.waitFor({ state: "visible", timeout: 60000 });
  const duplicate = page.locator(".notifications-toasts .notification-toast", { hasText: /already exists/i });
  result.duplicate_toasts = await duplicate.allInnerTexts();
  if (result.duplicate_toasts.length > 0) {
    throw new Error(`a second server started: ${JSON.stringify(result.duplicate_toasts)}`);
  }
  return (await item.innerText()).replace(/\s+/g, " ").trim();
});

await finish(true);
