// A fresh code-server with nothing but the engram .vsix and the system's Python: the extension
// must start the server it brings, and the gotcha must show as a squiggle with its hover.
// Input: E2E_* environment variables (tests/e2e/test_vscode_bundled.py). Output: a JSON result
// and screenshots. Exit 0 when every step passed, 1 at the first failure.
import { env, scenario } from "./harness.mjs";

const run = scenario({ shots: { ok: "bundled-hover.png", failed: "bundled-failure.png" } });
const { result, step, finish } = run;

await step("launch", () => run.launch());

await step("open-file", () => run.openFile(env.E2E_FILE_NAME, env.E2E_FILE_TEXT));

await step("squiggle", async () => {
  const squiggle = run.page.locator(".editor-instance .monaco-editor [class*='squiggly-']").first();
  await squiggle.waitFor({ state: "attached" });
  return await squiggle.getAttribute("class");
});

await step("hover", async () => {
  result.hover = await run.hover(env.E2E_TOKEN, env.E2E_WORKAROUND);
});

await finish(true);
