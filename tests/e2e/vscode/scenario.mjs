// The VS Code end-to-end scenario: Debian's Chromium, driven by playwright-core, in code-server
// with the engram extension installed from its .vsix (tests/e2e/test_vscode.py starts both).
//   open app.py; the gotcha squiggle appears and F8 lands on the expected line; the hover shows
//   the workaround; "engram: Create Checkpoint" from the palette; an edit, saved;
//   "engram: Roll Back to Checkpoint…" picked from the quick pick and confirmed in the modal
//   dialog; the editor holds the checkpoint's content again; the status-bar item is there.
// Input: E2E_* environment variables. Output: a JSON result (every step with its time) and
// screenshots. Exit 0 when every step passed, 1 at the first failure.
import fs from "node:fs";
import path from "node:path";
import { env, scenario, timeout } from "./harness.mjs";

// On a failure, what the person would have seen: every notification still listed.
async function showNotifications(page, result) {
  await page.keyboard.press("Escape");
  await page.keyboard.press("F1");
  await page.locator(".quick-input-widget input").fill(">Notifications: Show Notifications");
  await page.locator(".quick-input-widget input").press("Enter");
  await page.waitForTimeout(500);
  result.notifications = (await page.locator(".notifications-center").innerText()).trim();
}

const run = scenario({ shots: { ok: "vscode-final.png", failed: "vscode-failure.png" }, onFailure: showNotifications });
const { result, step, finish } = run;
let page;

const editorText = () => run.editorText();
const runFromPalette = (title) => run.palette(title);

/** The text of a rendered Markdown preview (a webview: frames inside frames) holding `needle`. */
async function previewText(needle) {
  const deadline = Date.now() + timeout;
  for (;;) {
    for (const frame of page.frames()) {
      try {
        const text = await frame.locator("body").innerText({ timeout: 500 });
        if (text.includes(needle) && frame !== page.mainFrame()) {
          return text;
        }
      } catch {
        // a frame that went away or is not ready yet
      }
    }
    if (Date.now() > deadline) {
      throw new Error(`no rendered preview shows ${JSON.stringify(needle)}`);
    }
    await page.waitForTimeout(250);
  }
}

async function notification(pattern) {
  const toast = page.locator(".notifications-toasts .notification-toast", { hasText: pattern }).first();
  await toast.waitFor({ state: "visible", timeout });
  return (await toast.innerText()).trim();
}

await step("launch", async () => {
  // VS Code in the browser takes "enable proposed API" from the page's payload (the desktop
  // app from --enable-proposed-api engram.engram): engram's Timeline entries use that API.
  const payload = encodeURIComponent(JSON.stringify([["enableProposedApi", ""]]));
  const version = await run.launch(`&payload=${payload}`);
  page = run.page;
  return version;
});

// The first squiggle, as a person meets it: the workspace opens and they open a file at once,
// while the extension and its server are still starting.
let launched = 0;
let opened = 0;
await step("open-file", async () => {
  launched = Date.now();
  await run.openFile(env.E2E_FILE_NAME, "def load_customers");
  opened = Date.now();
  result.original = await editorText();
  result.original_disk = fs.readFileSync(env.E2E_FILE, "utf8");
});

await step("first-squiggle", async () => {
  await page.locator(".editor-instance .monaco-editor .squiggly-warning, .editor-instance .monaco-editor .squiggly-error").first().waitFor({ state: "attached" });
  const now = Date.now();
  result.first_squiggle_ms = { after_file_visible: now - opened, after_workbench: now - launched };
  return result.first_squiggle_ms;
});

await step("status-bar", async () => {
  // The item shows as soon as the extension is active; its text says what the server knows.
  const item = page.locator("#workbench\\.parts\\.statusbar .statusbar-item", { hasText: "engram" }).first();
  await item.waitFor({ state: "visible", timeout: 60000 });
  return (await item.innerText()).trim();
});

await step("settings", async () => {
  // engram.gotchas.threshold is 0 in the user settings: the server read it through
  // workspace/configuration, reports it, and goes on with the default.
  result.settings_warning = await notification(/gotchas\.threshold/);
  return result.settings_warning;
});

await step("squiggle", async () => {
  await page.locator(".editor-instance .monaco-editor .squiggly-warning, .editor-instance .monaco-editor .squiggly-error").first().waitFor({ state: "attached" });
  // F8 jumps to the next problem: the cursor's line in the status bar is the diagnostic's.
  await page.locator(".editor-instance .monaco-editor .view-lines").first().click();
  await page.keyboard.press("Control+Home");
  await page.keyboard.press("F8");
  const marker = page.locator(".marker-widget, .zone-widget .peekview-title, .zone-widget").first();
  await marker.waitFor({ state: "visible" });
  // The status bar follows the cursor a moment later: wait for the expected line, and say
  // where the cursor went when it never gets there.
  const position = page.locator("#workbench\\.parts\\.statusbar .statusbar-item", { hasText: /Ln \d+, Col \d+/ }).first();
  const expected = page.locator("#workbench\\.parts\\.statusbar .statusbar-item", { hasText: `Ln ${env.E2E_LINE}, Col ` }).first();
  try {
    await expected.waitFor({ state: "visible", timeout: Math.min(timeout, 10000) });
  } catch {
    throw new Error(`F8 did not move to line ${env.E2E_LINE}: the status bar says ${(await position.innerText()).trim()}`);
  }
  const where = (await expected.innerText()).trim();
  result.squiggle_position = where;
  result.problem = (await marker.innerText()).trim();
  await page.keyboard.press("Escape");
  return where;
});

await step("hover", async () => {
  result.hover = await run.hover("read_csv", env.E2E_WORKAROUND);
  await page.screenshot({ path: path.join(env.E2E_SHOTS, "vscode-hover.png") });
  await page.mouse.move(5, 5);
  await page.keyboard.press("Escape");
});

await step("checkpoint", async () => {
  await runFromPalette("engram: Create Checkpoint");
  const input = page.locator(".quick-input-widget input");
  await page.locator(".quick-input-widget", { hasText: "Checkpoint name" }).waitFor({ state: "visible" });
  await input.fill("e2e-before-edit");
  await input.press("Enter");
  return await notification(/checkpoint .*created/);
});

await step("edit", async () => {
  await page.locator(".editor-instance .monaco-editor .view-lines").first().click();
  await page.keyboard.press("Control+A");
  await page.keyboard.insertText("print('the agent rewrote this file')\n");
  await page.keyboard.press("Control+S");
  const deadline = Date.now() + timeout;
  while (fs.readFileSync(env.E2E_FILE, "utf8").includes("def load_customers")) {
    if (Date.now() > deadline) {
      throw new Error("the edit was not saved");
    }
    await page.waitForTimeout(100);
  }
});

await step("rollback", async () => {
  await runFromPalette("engram: Roll Back to Checkpoint…");
  const row = page.locator(".quick-input-list .monaco-list-row", { hasText: "e2e-before-edit" }).first();
  await row.waitFor({ state: "visible" });
  result.quick_pick = (await page.locator(".quick-input-list").innerText()).trim();
  await row.click();
  const dialog = page.locator(".monaco-dialog-box");
  await dialog.waitFor({ state: "visible" });
  result.dialog = (await dialog.innerText()).trim();
  if (!result.dialog.includes(env.E2E_FILE_NAME)) {
    throw new Error(`the rollback question does not list ${env.E2E_FILE_NAME}: ${result.dialog}`);
  }
  await dialog.locator(".monaco-button", { hasText: "Roll Back" }).first().click();
  await dialog.waitFor({ state: "hidden" });
  // The outcome as the extension reports it (success, or the server's error).
  result.rollback_message = await notification(/rolled back|rollback|engram:.*(fail|error|not)/i).catch((error) => `no notification: ${error}`);
  const deadline = Date.now() + timeout;
  for (;;) {
    const text = await editorText();
    if (text.includes("def load_customers") && !text.includes("the agent rewrote")) {
      result.restored = text;
      break;
    }
    if (Date.now() > deadline) {
      throw new Error(`the editor still shows ${JSON.stringify(text)}`);
    }
    await page.waitForTimeout(200);
  }
  result.on_disk = fs.readFileSync(env.E2E_FILE, "utf8");
  if (result.on_disk !== result.original_disk) {
    throw new Error(`the disk does not hold the checkpoint after the rollback: ${JSON.stringify(result.on_disk)}`);
  }
  // Not left with unsaved changes: the tab has no dirty mark.
  const dirty = page.locator(".tabs-container .tab.dirty", { hasText: env.E2E_FILE_NAME });
  await page.waitForTimeout(500);
  if ((await dirty.count()) > 0) {
    throw new Error("the rolled-back editor is marked as having unsaved changes");
  }
  await page.screenshot({ path: path.join(env.E2E_SHOTS, "vscode-rollback.png") });
  return result.rollback_message;
});

await step("status-bar-session", async () => {
  // The agent session recorded through the hooks: its name and turns, and the open gotchas.
  const item = page.locator("#workbench\\.parts\\.statusbar .statusbar-item", { hasText: env.E2E_SESSION }).first();
  await item.waitFor({ state: "visible" });
  result.status_bar = (await item.innerText()).replace(/\s+/g, " ").trim();
  result.status_bar_label = await item.locator("a, .statusbar-item-label").first().getAttribute("aria-label");
  if (!result.status_bar_label?.includes(`${env.E2E_TURNS} turns`)) {
    throw new Error(`the status bar does not count ${env.E2E_TURNS} turns: ${result.status_bar_label}`);
  }
  return result.status_bar;
});

await step("status-bar-click", async () => {
  // A click shows the session summary, rendered in VS Code's Markdown preview (not the
  // export file opened for editing).
  await page.locator("#workbench\\.parts\\.statusbar .statusbar-item", { hasText: env.E2E_SESSION }).first().click();
  const tab = page.locator(".tabs-container .tab", { hasText: env.E2E_SESSION }).first();
  await tab.waitFor({ state: "visible" });
  result.summary_tab = (await tab.innerText()).trim();
  result.summary_text = await previewText("Overview");
  if ((await page.locator(".tabs-container .tab", { hasText: "exports" }).count()) > 0) {
    throw new Error("a file from .engram/exports/ was opened");
  }
  await page.screenshot({ path: path.join(env.E2E_SHOTS, "vscode-summary.png") });
  return result.summary_tab;
});

await step("store-status", async () => {
  // .engram/config.toml sets sessions.quota_bytes; VS Code has a default for it but the
  // extension sends only what the user set there, so the file's value must win.
  await runFromPalette("engram: Show Store Status");
  await page.locator(".tabs-container .tab", { hasText: "Store Status" }).first().waitFor({ state: "visible" });
  result.store_status = await previewText("Session quota");
  const quota = Number(env.E2E_QUOTA).toLocaleString("en-US");
  if (!result.store_status.includes(`Session quota: ${quota} bytes`)) {
    throw new Error(`the server does not use .engram/config.toml's sessions.quota_bytes: ${result.store_status}`);
  }
});

await step("add-gotcha", async () => {
  // From a selection: the palette's input boxes (title prefilled, workaround, pattern
  // prefilled with the selection), then a new squiggle and the status bar's count.
  // Back to the file's tab (the store status view is in front).
  await page.locator(".tabs-container .tab", { hasText: env.E2E_FILE_NAME }).first().click();
  const squiggles = page.locator(".editor-instance .monaco-editor [class*='squiggly-']");
  await page.locator(".editor-instance .monaco-editor .view-lines", { hasText: "set_index" }).first().waitFor();
  const before = await squiggles.count();
  await page.locator(".editor-instance .monaco-editor .view-line span", { hasText: "set_index" }).last().dblclick();
  await runFromPalette("engram: Add Gotcha");
  const input = page.locator(".quick-input-widget input");
  await page.locator(".quick-input-widget", { hasText: "Gotcha title" }).waitFor({ state: "visible" });
  result.prefilled_title = await input.inputValue();
  await input.fill("set_index drops the zip column");
  await input.press("Enter");
  await page.locator(".quick-input-widget", { hasText: "Workaround" }).waitFor({ state: "visible" });
  await input.fill("pass drop=False to keep it");
  await input.press("Enter");
  await page.locator(".quick-input-widget", { hasText: "Code pattern" }).waitFor({ state: "visible" });
  result.prefilled_pattern = await input.inputValue();
  await input.press("Enter");
  const added = await notification(/gotcha G-[0-9a-f]{8} added/);
  const deadline = Date.now() + timeout;
  while ((await squiggles.count()) <= before) {
    if (Date.now() > deadline) {
      throw new Error(`no new squiggle after adding the gotcha (${before} before)`);
    }
    await page.waitForTimeout(200);
  }
  const item = page.locator("#workbench\\.parts\\.statusbar .statusbar-item", { hasText: env.E2E_SESSION }).first();
  const label = async () => (await item.locator("a, .statusbar-item-label").first().getAttribute("aria-label")) ?? "";
  while (!(await label()).includes("2 open gotchas")) {
    if (Date.now() > deadline) {
      throw new Error(`the status bar does not count 2 open gotchas: ${await label()}`);
    }
    await page.waitForTimeout(200);
  }
  result.status_bar_after_add = await label();
  return added;
});

await step("annotation-highlight", async () => {
  // The injection grammar from syntax/, contributed by the extension, in the real editor:
  // inside the comment, "gotcha" and its text are tokens of their own (bold text).
  await page.keyboard.press("Escape");
  await page.keyboard.press("Control+P");
  const quick = page.locator(".quick-input-widget input");
  await quick.fill("notes.py");
  await page.locator(".quick-input-list .monaco-list-row", { hasText: "notes.py" }).first().waitFor();
  await quick.press("Enter");
  const line = page.locator(".editor-instance .monaco-editor .view-line", { hasText: "gotcha:" }).first();
  await line.waitFor();
  const spans = await line.locator("span > span").evaluateAll((nodes) =>
    nodes.map((node) => ({ text: (node.textContent ?? "").replace(/\u00a0/g, " "), cls: node.className })),
  );
  result.annotation_tokens = spans;
  const hash = spans.find((s) => s.text.includes("#"));
  const word = spans.find((s) => s.text.trim() === "gotcha");
  const text = spans.find((s) => s.text.includes("nightly export"));
  if (!hash || !word || !text) {
    throw new Error(`the annotation is not split into tokens: ${JSON.stringify(spans)}`);
  }
  if (word.cls === hash.cls || !/mtkb/.test(text.cls)) {
    throw new Error(`the annotation is not highlighted: ${JSON.stringify(spans)}`);
  }
  await page.screenshot({ path: path.join(env.E2E_SHOTS, "vscode-annotation.png") });
  return spans.map((s) => `${s.text}=${s.cls}`).join(" ");
});

// Every palette command that shows a result: rendered Markdown, with words a person reads.
const RENDERED = [
  ["engram: List Checkpoints", "Checkpoints", "e2e-before-edit"],
  ["engram: List Sessions", "Sessions", env.E2E_SESSION],
  ["engram: List Gotchas", "Gotchas", "read_csv drops the leading zeros"],
  ["engram: Show Session History", "Session History", "load the customers table"],
  ["engram: Show Session Metrics", "Session Metrics", "Success rate"],
  ["engram: Show Timeline", "Timeline", "by the rollback to"],
  ["engram: Show Drift", "Drift", "Drift"],
];
result.rendered = {};
for (const [title, tab, needle] of RENDERED) {
  await step(title, async () => {
    await runFromPalette(title);
    await page.locator(".tabs-container .tab", { hasText: tab }).first().waitFor({ state: "visible" });
    const text = await previewText(needle);
    if (/evolution:\d|event:\d/.test(text)) {
      throw new Error(`${title} shows internal ids: ${text}`);
    }
    result.rendered[title] = text;
    if (title === "engram: Show Timeline") {
      await page.screenshot({ path: path.join(env.E2E_SHOTS, "vscode-timeline-rendered.png") });
    }
    return text.slice(0, 300);
  });
}

// The palette commands that ask for something: what a person types or picks, and what they see.
const quickInput = () => page.locator(".quick-input-widget input");
async function answer(prompt, text) {
  await page.locator(".quick-input-widget", { hasText: prompt }).waitFor({ state: "visible" });
  await quickInput().fill(text);
  await quickInput().press("Enter");
}
async function pickRow(text) {
  const row = page.locator(".quick-input-list .monaco-list-row", { hasText: text }).first();
  await row.waitFor({ state: "visible" });
  await row.click();
}
result.asked = {};

await step("engram: Save Session", async () => {
  await runFromPalette("engram: Save Session");
  await answer("Session name", "vscode-saved");
  return (result.asked.save = await notification(/session saved as vscode-saved/));
});

await step("engram: Capture Context Snapshot", async () => {
  await runFromPalette("engram: Capture Context Snapshot");
  await answer("Note for this snapshot", "before lunch");
  return (result.asked.snapshot = await notification(/context snapshot captured/));
});

await step("engram: Restore Context Snapshot…", async () => {
  await runFromPalette("engram: Restore Context Snapshot…");
  await pickRow("before lunch");
  return (result.asked.restore_snapshot = await notification(/snapshot .*restored/));
});

await step("engram: Track Error", async () => {
  await runFromPalette("engram: Track Error");
  await answer("Error message to track", "KeyError: 'zip'");
  return (result.asked.track = await notification(/error tracked/));
});

await step("engram: Add Memory", async () => {
  await runFromPalette("engram: Add Memory");
  await answer("What should engram remember?", "ZIP codes are text, never numbers");
  await pickRow("learning");
  return (result.asked.memory = await notification(/remembered/));
});

await step("engram: Search Memory…", async () => {
  await runFromPalette("engram: Search Memory…");
  await answer("Search engram's memory", "ZIP codes");
  await pickRow("ZIP codes are text");
  return (result.asked.search = (await previewText("never numbers")).slice(0, 200));
});

await step("engram: Restore Session…", async () => {
  await runFromPalette("engram: Restore Session…");
  await pickRow("vscode-saved");
  return (result.asked.restore_session = (await previewText("load the customers table")).slice(0, 200));
});

await step("engram: Resolve Gotcha…", async () => {
  await runFromPalette("engram: Resolve Gotcha…");
  await pickRow("set_index drops the zip column");
  return (result.asked.resolve = await notification(/gotcha “set_index drops the zip column” resolved/));
});

await step("engram: Show Output", async () => {
  await runFromPalette("engram: Show Output");
  // The output panel, showing engram's channel (its last lines: the server's messages).
  const panel = page.locator('[id="workbench.parts.panel"]');
  // `:visible`: the panel also holds hidden editors (other channels' views), and the first match
  // in the page may be one of them, which never shows.
  const lines = panel.locator(".view-lines:visible", { hasText: /Trace|engram|Result|Params/ }).first();
  await lines.waitFor({ state: "visible" });
  result.asked.output = (await lines.innerText()).slice(-300);
  // The panel hidden again (View: Hide Panel), the focus back in the file.
  await runFromPalette("View: Hide Panel");
  await page.locator(".tabs-container .tab", { hasText: env.E2E_FILE_NAME }).first().click();
  return "the engram output channel";
});

await step("explorer-hides-store", async () => {
  // .engram/ is hidden from the explorer by the extension's files.exclude default.
  await runFromPalette("View: Show Explorer");
  const rows = page.locator(".explorer-folders-view .monaco-list-row");
  await page.locator(".explorer-folders-view .monaco-list-row", { hasText: env.E2E_FILE_NAME }).first().waitFor();
  const names = (await rows.allInnerTexts()).map((t) => t.trim());
  result.explorer = names;
  if (names.includes(".engram")) {
    throw new Error(`the explorer lists .engram: ${names.join(", ")}`);
  }
  return names.join(", ");
});

const pane = (title) => page.locator(".pane", { has: page.locator(".pane-header", { hasText: title }) }).first();

await step("view-container", async () => {
  const icon = page.locator('.part.activitybar .action-label[aria-label^="engram"]').first();
  await icon.click();
  for (const title of ["Sessions", "Checkpoints", "Gotchas", "Memory"]) {
    await pane(title).waitFor({ state: "visible" });
  }
  await pane("Checkpoints").locator(".monaco-list-row", { hasText: "e2e-before-edit" }).first().waitFor();
  // The agent's session, saved under a name by "engram: Save Session" above.
  await pane("Sessions").locator(".monaco-list-row", { hasText: "vscode-saved" }).first().waitFor();
  // Gotchas by file: app.py, with the gotcha under it.
  await pane("Gotchas").locator(".monaco-list-row", { hasText: env.E2E_FILE_NAME }).first().waitFor();
  await pane("Gotchas").locator(".monaco-list-row", { hasText: "read_csv drops the leading zeros" }).first().waitFor();
  result.views = {};
  for (const title of ["Sessions", "Checkpoints", "Gotchas"]) {
    result.views[title] = (await pane(title).locator(".monaco-list-row").allInnerTexts()).map((t) => t.replace(/\s+/g, " ").trim());
  }
  await page.screenshot({ path: path.join(env.E2E_SHOTS, "vscode-view-container.png") });
  return result.views;
});

await step("gotcha-go-to", async () => {
  await pane("Gotchas").locator(".monaco-list-row", { hasText: "read_csv drops the leading zeros" }).first().click();
  const expected = page.locator("#workbench\\.parts\\.statusbar .statusbar-item", { hasText: `Ln ${env.E2E_LINE}, Col ` }).first();
  await expected.waitFor({ state: "visible" });
  return (await expected.innerText()).trim();
});

await step("checkpoint-diff", async () => {
  // The checkpoint made before the rollback holds the edit: expanded, it lists app.py as
  // changed since; a click opens the diff (checkpoint ↔ now).
  const row = pane("Checkpoints").locator(".monaco-list-row", { hasText: "pre-rollback" }).first();
  await row.click();
  const file = pane("Checkpoints").locator(".monaco-list-row", { hasText: "changed since" }).first();
  await file.waitFor();
  await file.click();
  const diff = page.locator(".editor-instance .monaco-diff-editor").first();
  await diff.waitFor({ state: "visible" });
  const tab = page.locator(".tabs-container .tab.active").first();
  result.checkpoint_diff_tab = (await tab.innerText()).trim();
  await page.locator(".monaco-diff-editor .editor.original .view-lines", { hasText: "the agent rewrote" }).first().waitFor();
  await page.screenshot({ path: path.join(env.E2E_SHOTS, "vscode-checkpoint-diff.png") });
  return result.checkpoint_diff_tab;
});

await step("timeline-panel", async () => {
  // VS Code's own Timeline (Explorer), for app.py: engram's entries beside the others.
  await page.locator(".tabs-container .tab", { hasText: env.E2E_FILE_NAME }).first().click();
  await runFromPalette("Explorer: Focus on Timeline View");
  const timelinePane = pane("Timeline");
  // Room for the Timeline: the folder tree and the outline folded away.
  for (const other of ["shop", "Outline"]) {
    const header = page.locator(".pane-header.expanded", { hasText: new RegExp(`^${other}$`, "i") }).first();
    if ((await header.count()) > 0) {
      await header.click();
    }
  }
  await timelinePane.locator(".monaco-list-row", { hasText: "Checkpoint “e2e-before-edit”" }).first().waitFor();
  await timelinePane.locator(".monaco-list-row", { hasText: "by the rollback to" }).first().waitFor();
  result.timeline_panel = (await timelinePane.locator(".monaco-list-row").allInnerTexts()).map((t) => t.replace(/\s+/g, " ").trim());
  if (result.timeline_panel.some((t) => /evolution:\d/.test(t))) {
    throw new Error(`internal ids in the Timeline: ${result.timeline_panel}`);
  }
  await page.screenshot({ path: path.join(env.E2E_SHOTS, "vscode-timeline.png") });
  return result.timeline_panel;
});

await step("timeline-diff", async () => {
  // Your edit, between the checkpoints around it: a diff through engram: documents.
  await pane("Timeline").locator(".monaco-list-row", { hasText: "by you" }).first().click();
  await page.locator(".editor-instance .monaco-diff-editor").first().waitFor({ state: "visible" });
  await page.locator(".monaco-diff-editor .editor.modified .view-lines", { hasText: "the agent rewrote" }).first().waitFor();
  result.timeline_diff_tab = (await page.locator(".tabs-container .tab.active").first().innerText()).trim();
  await page.screenshot({ path: path.join(env.E2E_SHOTS, "vscode-timeline-diff.png") });
  return result.timeline_diff_tab;
});

// Last: it deletes the session saved above (the agent's, renamed).
await step("engram: Delete Session…", async () => {
  await runFromPalette("engram: Delete Session…");
  await pickRow("vscode-saved");
  const dialog = page.locator(".monaco-dialog-box");
  await dialog.waitFor({ state: "visible" });
  await dialog.locator(".monaco-button", { hasText: "Delete" }).first().click();
  return (result.asked.delete = await notification(/session “vscode-saved” deleted/));
});

await finish(true);
