// A setting VS Code does not use, said (tests/e2e/test_vscode.py): engram.server.command is in
// the User settings, but the Remote (machine) settings of code-server set it too and win. The
// extension says which value is in effect and where to set it, in one warning.
import { env, scenario } from "./harness.mjs";

const run = scenario({ shots: { ok: "vscode-ignored.png", failed: "vscode-ignored-failure.png" } });
const { result, step, finish } = run;

await step("launch", async () => {
  await run.launch();
});

await step("warning", async () => {
  const toast = run.page.locator(".notifications-toasts .notification-toast", { hasText: "is not used here" }).first();
  await toast.waitFor({ state: "visible", timeout: 60000 });
  result.warning = (await toast.innerText()).replace(/\s+/g, " ").trim();
  // The server runs all the same, with the command in effect: the status bar shows the session.
  const item = run.page.locator("#workbench\\.parts\\.statusbar .statusbar-item", { hasText: env.E2E_SESSION }).first();
  await item.waitFor({ state: "visible", timeout: 60000 });
  return result.warning;
});

await finish(true);
