// Checkpoints and rollbacks that respect the editor and the person, in VS Code (code-server),
// run by tests/e2e/test_vscode.py:
//   a checkpoint; engram's own store written from a terminal and an editor's swap, auto-save,
//   backup and lock files beside app.py (Vim or Emacs on the same project) make no automatic
//   checkpoint, a real burst of files does (the test counts them in the store afterwards);
//   text typed in app.py and not saved; "Roll Back to Checkpoint…": the question names the
//   unsaved buffer, the editor shows the checkpoint and the editors' files are still there;
//   undoing the rollback (rolling back to its pre-rollback checkpoint) gives the typed text
//   back, unsaved.
// Input: E2E_* environment variables. Output: a JSON result and screenshots.
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { env, scenario, timeout } from "./harness.mjs";

const run = scenario({ shots: { ok: "vscode-editors.png", failed: "vscode-editors-failure.png" } });
const { result, step, finish } = run;
const root = env.E2E_WORKSPACE;
const typed = "# typed, not saved";
const editorFiles = [".app.py.swp", "#app.py#", "app.py~"];
let page;

async function notification(pattern) {
  const toast = page.locator(".notifications-toasts .notification-toast", { hasText: pattern }).first();
  await toast.waitFor({ state: "visible", timeout });
  return (await toast.innerText()).trim();
}

async function waitFor(what, predicate) {
  const deadline = Date.now() + timeout;
  while (!(await predicate())) {
    if (Date.now() > deadline) {
      throw new Error(`timed out waiting for ${what}`);
    }
    await page.waitForTimeout(200);
  }
}

/** "Roll Back to Checkpoint…", the row holding `rowText`, the modal dialog's text, confirmed. */
async function rollBack(rowText) {
  await run.palette("engram: Roll Back to Checkpoint…");
  const row = page.locator(".quick-input-list .monaco-list-row", { hasText: rowText }).first();
  await row.waitFor({ state: "visible" });
  await row.click();
  const dialog = page.locator(".monaco-dialog-box");
  await dialog.waitFor({ state: "visible" });
  const question = (await dialog.innerText()).replace(/\s+/g, " ").trim();
  await dialog.locator(".monaco-button", { hasText: "Roll Back" }).first().click();
  await dialog.waitFor({ state: "hidden" });
  return question;
}

/** The automatic burst checkpoints in the store, as `engram checkpoint list` reports them. */
function bursts() {
  const listed = JSON.parse(execFileSync(env.E2E_ENGRAM, ["checkpoint", "list", "--json"], { cwd: root, encoding: "utf8" }));
  return listed.checkpoints.filter((checkpoint) => checkpoint.reason === "burst");
}

const dirtyTab = () => page.locator(".tabs-container .tab.dirty", { hasText: env.E2E_FILE_NAME });

await step("launch", async () => {
  const version = await run.launch();
  page = run.page;
  return version;
});

await step("open-file", async () => {
  await run.openFile(env.E2E_FILE_NAME, "def load_customers");
  // The server is up once the gotcha's squiggle shows.
  await page.locator(".editor-instance .monaco-editor .squiggly-warning, .editor-instance .monaco-editor .squiggly-error").first().waitFor({ state: "attached" });
});

await step("checkpoint", async () => {
  await run.palette("engram: Create Checkpoint");
  const input = page.locator(".quick-input-widget input");
  await page.locator(".quick-input-widget", { hasText: "Checkpoint name" }).waitFor({ state: "visible" });
  await input.fill("e2e-editors");
  await input.press("Enter");
  return await notification(/checkpoint .*created/);
});

await step("not-work", async () => {
  // engram's store, written by a command in a terminal, and another editor's files.
  for (let i = 0; i < 12; i++) {
    fs.writeFileSync(path.join(root, ".engram", "exports", `from-the-cli-${i}.md`), `view ${i}\n`);
  }
  for (const name of editorFiles) {
    fs.writeFileSync(path.join(root, name), `unsaved work in another editor: ${name}\n`);
  }
  fs.symlinkSync("person@host.4242:1700000000", path.join(root, ".#app.py"));
  await page.waitForTimeout(4000);
  if (bursts().length > 0) {
    throw new Error(`an automatic checkpoint for files that are no one's work: ${JSON.stringify(bursts())}`);
  }
  result.work_starts = Date.now() / 1000;
});

await step("real-burst", async () => {
  fs.mkdirSync(path.join(root, "generated"), { recursive: true });
  for (let i = 0; i < 12; i++) {
    fs.writeFileSync(path.join(root, "generated", `gen_${i}.py`), `N = ${i}\n`);
  }
  // VS Code reports the files when its watcher gets to them (seconds on a busy machine).
  await waitFor("the automatic checkpoint of the burst", async () => bursts().length > 0);
});

await step("type-unsaved", async () => {
  await page.locator(".editor-instance .monaco-editor .view-lines").first().click();
  await page.keyboard.press("Control+End");
  await page.keyboard.insertText(`\n${typed}\n`);
  await dirtyTab().waitFor({ state: "visible" });
  await page.waitForTimeout(500); // the server has the buffer's text (didChange)
});

await step("rollback", async () => {
  result.question = await rollBack("e2e-editors");
  if (!result.question.includes("Unsaved changes in app.py")) {
    throw new Error(`the question does not name the unsaved buffer: ${result.question}`);
  }
  await waitFor("the editor to show the checkpoint", async () => !(await run.editorText()).includes(typed));
  await waitFor("the tab to be saved", async () => (await dirtyTab().count()) === 0);
  result.kept = [...editorFiles, ".#app.py"].filter((name) => {
    try {
      fs.lstatSync(path.join(root, name));
      return true;
    } catch {
      return false;
    }
  });
  if (result.kept.length !== editorFiles.length + 1) {
    throw new Error(`the rollback removed editors' files: only ${JSON.stringify(result.kept)} are left`);
  }
  return result.question;
});

await step("undo", async () => {
  result.undo_question = await rollBack("pre-rollback");
  if (!result.undo_question.includes("The unsaved changes of app.py come back too")) {
    throw new Error(`the undo does not say the unsaved text comes back: ${result.undo_question}`);
  }
  await waitFor("the typed text back in the editor", async () => (await run.editorText()).includes(typed));
  await dirtyTab().waitFor({ state: "visible" });
  if (fs.readFileSync(env.E2E_FILE, "utf8").includes(typed)) {
    throw new Error("the typed text was written to disk instead of given back to the editor");
  }
  result.buffer = await run.editorText();
});

await finish(true);
