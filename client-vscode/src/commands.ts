// The palette commands ("engram: Create Checkpoint", ...). Each asks for what it needs with an
// input box or a quick pick filled from the server's list commands, then runs the server's
// command (docs/design.md section 5) and shows the outcome.
import * as path from "path";
import * as vscode from "vscode";

import type { Engram } from "./extension";
import { JsonObject, firstList, itemLabel, toMarkdown, when } from "./render";
import { openCheckpointDiff } from "./views";

interface PickItem extends vscode.QuickPickItem {
  item: JsonObject;
}

function message(error: unknown): string {
  const text = error instanceof Error ? error.message : String(error);
  return text.replace(/^Request workspace\/executeCommand failed with message: /, "");
}

/** An empty state ("no session recorded in this workspace yet") is information, not an error. */
function isEmptyState(error: unknown): boolean {
  const data = (error as { data?: unknown } | undefined)?.data;
  return typeof data === "object" && data !== null && (data as { empty?: unknown }).empty === true;
}

function report(engram: Engram, id: string, error: unknown): void {
  engram.output.appendLine(`${id}: ${message(error)}`);
  if (isEmptyState(error)) {
    void vscode.window.showInformationMessage(`engram: ${message(error)}`);
  } else {
    void vscode.window.showErrorMessage(`engram: ${message(error)}`);
  }
}

async function pick(
  engram: Engram,
  listCommand: string,
  key: string,
  placeHolder: string,
  empty: string,
  filter: (item: JsonObject) => boolean = () => true,
): Promise<JsonObject | undefined> {
  const items = firstList(await engram.execute(listCommand, {}), key).filter(filter);
  if (items.length === 0) {
    void vscode.window.showInformationMessage(`engram: ${empty}`);
    return undefined;
  }
  const picks: PickItem[] = items.map((item) => {
    const details = [when(item)];
    for (const field of ["status", "severity", "agent", "type", "reason"]) {
      if (typeof item[field] === "string") {
        details.push(String(item[field]));
      }
    }
    for (const field of ["turns", "turn_count", "files", "file_count", "occurrences"]) {
      const value = item[field];
      if (typeof value === "number") {
        details.push(`${value} ${field.replace("_count", "").replace("_", " ")}`);
      } else if (Array.isArray(value)) {
        details.push(`${value.length} ${field.replace("_count", "")}`);
      }
    }
    return {
      label: itemLabel(item),
      description: String(item.id ?? ""),
      detail: details.filter(Boolean).join(" · ") || undefined,
      item,
    };
  });
  const chosen = await vscode.window.showQuickPick(picks, {
    placeHolder,
    matchOnDescription: true,
    matchOnDetail: true,
    ignoreFocusOut: true,
  });
  return chosen?.item;
}

async function ask(prompt: string, options: Partial<vscode.InputBoxOptions> = {}): Promise<string | undefined> {
  return vscode.window.showInputBox({ prompt, ignoreFocusOut: true, ...options });
}

async function confirmModally(question: string, detail: string, action: string): Promise<boolean> {
  const answer = await vscode.window.showWarningMessage(question, { modal: true, detail }, action);
  return answer === action;
}

function selectionText(): string {
  const editor = vscode.window.activeTextEditor;
  return editor && !editor.selection.isEmpty ? editor.document.getText(editor.selection).trim() : "";
}

function activeFile(): { file?: string; line?: number } {
  const editor = vscode.window.activeTextEditor;
  if (!editor || editor.document.uri.scheme !== "file") {
    return {};
  }
  const folder = vscode.workspace.getWorkspaceFolder(editor.document.uri);
  const file = folder ? path.relative(folder.uri.fsPath, editor.document.uri.fsPath) : editor.document.uri.fsPath;
  return { file, line: editor.selection.active.line + 1 };
}

function escapeRegex(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}

const MEMORY_TYPES = ["learning", "decision", "finding", "preference", "project", "action"];

/** Roll back after a modal question that lists every file restored and removed. */
async function rollbackTo(engram: Engram, checkpoint: JsonObject): Promise<void> {
  const plan = await engram.execute("engram.checkpoint.rollback", { id: checkpoint.id as string, preview: true }, { quiet: true });
  const restore = Array.isArray(plan?.restore) ? (plan?.restore as string[]) : [];
  const remove = Array.isArray(plan?.remove) ? (plan?.remove as string[]) : [];
  // Open buffers whose unsaved text the rollback replaces (kept with its safety checkpoint),
  // and those whose unsaved text it gives back (undoing an earlier rollback).
  const unsaved = Array.isArray(plan?.unsaved) ? (plan?.unsaved as string[]) : [];
  const givenBack = Array.isArray(plan?.unsaved_given_back) ? (plan?.unsaved_given_back as string[]) : [];
  if (restore.length === 0 && remove.length === 0 && givenBack.length === 0) {
    void vscode.window.showInformationMessage(`engram: the files already match checkpoint “${itemLabel(checkpoint)}”`);
    return;
  }
  const list = (files: string[]) => files.slice(0, 15).map((f) => `  ${f}`).join("\n") + (files.length > 15 ? `\n  … and ${files.length - 15} more` : "");
  const detail = [
    restore.length ? `Restored (${restore.length}):\n${list(restore)}` : "",
    remove.length ? `Removed, created after it (${remove.length}):\n${list(remove)}` : "",
    "engram makes a checkpoint first, so this rollback can itself be rolled back.",
    unsaved.length
      ? `Unsaved changes in ${unsaved.join(", ")} are replaced too; they are kept with that checkpoint, so undoing the rollback brings them back.`
      : "",
    givenBack.length ? `The unsaved changes of ${givenBack.join(", ")} come back too.` : "",
  ]
    .filter(Boolean)
    .join("\n\n");
  if (!(await confirmModally(`Roll back to checkpoint “${itemLabel(checkpoint)}”?`, detail, "Roll Back"))) {
    return;
  }
  const result = await engram.execute("engram.checkpoint.rollback", { id: checkpoint.id as string, confirm: true });
  if (result && result.done === false) {
    void vscode.window.showWarningMessage(`engram: rollback not done (${result.reason ?? "no reason given"})`);
    return;
  }
  // The server wrote the disk. Editors without unsaved changes follow the disk by themselves;
  // one with unsaved changes is reverted to the disk, so no editor is left dirty.
  for (const uri of Array.isArray(result?.reload) ? (result?.reload as string[]) : []) {
    const document = vscode.workspace.textDocuments.find((d) => d.uri.toString() === vscode.Uri.parse(uri).toString());
    if (document?.isDirty) {
      await vscode.window.showTextDocument(document, { preview: false });
      await vscode.commands.executeCommand("workbench.action.files.revert");
    }
  }
  const count = (key: string) => (Array.isArray(result?.[key]) ? (result?.[key] as unknown[]).length : 0);
  const undo = typeof result?.undo_checkpoint === "string" ? `; to undo, roll back to ${result.undo_checkpoint}` : "";
  if (count("failed") > 0) {
    void vscode.window.showWarningMessage(
      `engram: rolled back to “${itemLabel(checkpoint)}”, but ${count("failed")} files could not be written (see the engram output)${undo}`,
    );
    engram.output.appendLine(`rollback failures: ${JSON.stringify(result?.failed)}`);
    return;
  }
  const files = (n: number) => `${n} file${n === 1 ? "" : "s"}`;
  void vscode.window.showInformationMessage(
    `engram: rolled back to “${itemLabel(checkpoint)}”: ${files(count("restored"))} restored, ${files(count("removed"))} removed${undo}`,
  );
}

export function registerCommands(engram: Engram): void {
  const views = engram.views;

  const commands: { [id: string]: () => Promise<unknown> } = {
    "engram.ui.createCheckpoint": async () => {
      const name = await ask("Checkpoint name (optional)", { placeHolder: "e.g. before the refactor" });
      if (name === undefined) {
        return;
      }
      const result = await engram.execute("engram.checkpoint.create", name.trim() ? { name: name.trim() } : {});
      const checkpoint = (result?.checkpoint as JsonObject | undefined) ?? result ?? {};
      void vscode.window.showInformationMessage(
        `engram: checkpoint ${checkpoint.name ? `“${checkpoint.name}” ` : ""}created (${checkpoint.id ?? "?"})`,
      );
    },

    "engram.ui.listCheckpoints": async () => {
      await views.show("Checkpoints", toMarkdown("Checkpoints", await engram.execute("engram.checkpoint.list")));
    },

    "engram.ui.rollback": async () => {
      const checkpoint = await pick(
        engram,
        "engram.checkpoint.list",
        "checkpoints",
        "Roll back the workspace to which checkpoint?",
        "no checkpoints yet (engram: Create Checkpoint makes one)",
      );
      if (!checkpoint) {
        return;
      }
      await rollbackTo(engram, checkpoint);
    },

    "engram.ui.saveSession": async () => {
      const name = await ask("Session name (optional)", { placeHolder: "e.g. auth-refactor" });
      if (name === undefined) {
        return;
      }
      const result = await engram.execute("engram.session.save", name.trim() ? { name: name.trim() } : {});
      const session = (result?.session as JsonObject | undefined) ?? result ?? {};
      void vscode.window.showInformationMessage(`engram: session saved as ${session.name ?? session.id ?? "?"}`);
    },

    "engram.ui.restoreSession": async () => {
      const session = await pick(engram, "engram.session.list", "sessions", "Restore which session?", "no saved sessions");
      if (!session) {
        return;
      }
      const result = await engram.execute("engram.session.restore", { id: session.id });
      await views.show(`Session ${itemLabel(session)}`, toMarkdown(`Session ${itemLabel(session)}`, result));
    },

    "engram.ui.listSessions": async () => {
      await views.show("Sessions", toMarkdown("Sessions", await engram.execute("engram.session.list")));
    },

    "engram.ui.deleteSession": async () => {
      const session = await pick(engram, "engram.session.list", "sessions", "Delete which session?", "no sessions");
      if (!session) {
        return;
      }
      const confirmed = await confirmModally(
        `Delete session “${itemLabel(session)}”?`,
        "It can be undeleted for the recovery period (engram.memory.recovery_days), then it is purged.",
        "Delete",
      );
      if (confirmed) {
        await engram.execute("engram.session.delete", { id: session.id, confirm: true });
        void vscode.window.showInformationMessage(`engram: session “${itemLabel(session)}” deleted`);
      }
    },

    "engram.ui.sessionSummary": async () => {
      // Rendered in the Markdown preview (the server's export file is not opened to edit).
      const result = await engram.execute("engram.session.summary", { show: false });
      const title = `Summary of ${result?.id ?? "the session"}`;
      await views.show(title, toMarkdown(title, result));
    },

    "engram.ui.refreshViews": async () => {
      engram.trees?.refresh();
      engram.timeline?.refresh();
    },

    "engram.ui.sessionHistory": async () => {
      await views.show("Session History", toMarkdown("Session History", await engram.execute("engram.session.history")));
    },

    "engram.ui.sessionMetrics": async () => {
      await views.show("Session Metrics", toMarkdown("Session Metrics", await engram.execute("engram.session.metrics")));
    },

    "engram.ui.captureSnapshot": async () => {
      const note = await ask("Note for this snapshot (optional)", { placeHolder: "what you were doing" });
      if (note === undefined) {
        return;
      }
      const result = await engram.execute("engram.snapshot.capture", note.trim() ? { note: note.trim() } : {});
      const snapshot = (result?.snapshot as JsonObject | undefined) ?? result ?? {};
      void vscode.window.showInformationMessage(`engram: context snapshot captured (${snapshot.id ?? "?"})`);
    },

    "engram.ui.restoreSnapshot": async () => {
      const snapshot = await pick(engram, "engram.snapshot.list", "snapshots", "Restore which snapshot?", "no snapshots yet");
      if (!snapshot) {
        return;
      }
      const result = await engram.execute("engram.snapshot.restore", { id: snapshot.id });
      const warnings = firstList(result, "warnings");
      const plainWarnings = Array.isArray(result?.warnings) ? (result?.warnings as unknown[]).map(String) : [];
      const text = plainWarnings.length ? plainWarnings.join("; ") : warnings.map(itemLabel).join("; ");
      void vscode.window.showInformationMessage(
        `engram: snapshot “${itemLabel(snapshot)}” restored` + (text ? ` (warnings: ${text})` : ""),
      );
    },

    "engram.ui.addGotcha": async () => {
      const selected = selectionText();
      const title = await ask("Gotcha title: what goes wrong", {
        value: selected.split("\n")[0].slice(0, 80),
        validateInput: (value) => (value.trim() ? undefined : "a title is required"),
      });
      if (!title) {
        return;
      }
      const workaround = await ask("Workaround: what to do instead (optional)");
      if (workaround === undefined) {
        return;
      }
      const pattern = await ask("Code pattern that anchors it in code (regex, optional)", {
        value: selected && !selected.includes("\n") ? escapeRegex(selected) : "",
      });
      if (pattern === undefined) {
        return;
      }
      const args: JsonObject = { title: title.trim() };
      if (workaround.trim()) {
        args.workaround = workaround.trim();
      }
      if (pattern.trim()) {
        args.pattern = pattern.trim();
      }
      const result = await engram.execute("engram.gotcha.add", args);
      const gotcha = (result?.gotcha as JsonObject | undefined) ?? result ?? {};
      void vscode.window.showInformationMessage(`engram: gotcha ${gotcha.id ?? ""} added`);
    },

    "engram.ui.listGotchas": async () => {
      await views.show("Gotchas", toMarkdown("Gotchas", await engram.execute("engram.gotcha.list")));
    },

    "engram.ui.resolveGotcha": async () => {
      const gotcha = await pick(
        engram,
        "engram.gotcha.list",
        "gotchas",
        "Mark which gotcha as resolved?",
        "no open gotchas",
        (item) => item.status !== "resolved",
      );
      if (gotcha) {
        await engram.execute("engram.gotcha.resolve", { id: gotcha.id });
        const title = typeof gotcha.title === "string" ? gotcha.title : itemLabel(gotcha);
        void vscode.window.showInformationMessage(
          `engram: gotcha “${title}” resolved for the whole project (it comes back if its error happens again)`,
        );
      }
    },

    "engram.ui.trackError": async () => {
      const text = await ask("Error message to track", {
        value: selectionText(),
        validateInput: (value) => (value.trim() ? undefined : "paste the error message"),
      });
      if (!text) {
        return;
      }
      const result = await engram.execute("engram.error.track", { message: text, ...activeFile() });
      const id = result?.gotcha_id;
      const count = typeof result?.occurrences === "number" ? result.occurrences : 1;
      const occurrences = `${count} occurrence${count === 1 ? "" : "s"}`;
      void vscode.window.showInformationMessage(
        id
          ? `engram: error tracked; gotcha ${id}${result?.created ? " created" : ""} (${occurrences})`
          : `engram: error tracked (${occurrences} so far)`,
      );
    },

    "engram.ui.addMemory": async () => {
      const content = await ask("What should engram remember?", {
        value: selectionText(),
        validateInput: (value) => (value.trim() ? undefined : "write what to remember"),
      });
      if (!content) {
        return;
      }
      const type = await vscode.window.showQuickPick(MEMORY_TYPES, { placeHolder: "Kind of memory" });
      if (!type) {
        return;
      }
      const result = await engram.execute("engram.memory.add", { content: content.trim(), type });
      const memory = (result?.memory as JsonObject | undefined) ?? result ?? {};
      void vscode.window.showInformationMessage(`engram: remembered (${memory.id ?? "?"})`);
    },

    "engram.ui.searchMemory": async () => {
      const query = await ask("Search engram's memory", { placeHolder: "words to look for" });
      if (!query?.trim()) {
        return;
      }
      const results = firstList(await engram.execute("engram.memory.search", { query: query.trim() }), "results");
      if (results.length === 0) {
        void vscode.window.showInformationMessage(`engram: nothing remembered about “${query.trim()}”`);
        return;
      }
      const chosen = await vscode.window.showQuickPick(
        results.map((item) => ({ label: itemLabel(item), description: String(item.type ?? ""), detail: when(item), item })),
        { placeHolder: `${results.length} memories`, matchOnDetail: true },
      );
      if (chosen) {
        const body = typeof chosen.item.content === "string" ? chosen.item.content : JSON.stringify(chosen.item, null, 2);
        await views.show(`Memory ${chosen.item.id ?? ""}`, `# Memory ${chosen.item.id ?? ""}\n\n${body}\n`);
      }
    },

    "engram.ui.timeline": async () => {
      await views.show("Timeline", toMarkdown("Timeline", await engram.execute("engram.timeline", { limit: 200 })));
    },

    "engram.ui.drift": async () => {
      await views.show("Drift", toMarkdown("Drift", await engram.execute("engram.drift")));
    },

    "engram.ui.status": async () => {
      await views.show("Store Status", toMarkdown("engram status", await engram.execute("engram.status")));
    },

    "engram.ui.showOutput": async () => {
      engram.output.show();
    },

    "engram.ui.restartServer": async () => {
      await engram.restart();
    },
  };

  const itemCommands: { [id: string]: (...args: never[]) => Promise<unknown> } = {
    "engram.ui.showSessionSummary": async (session: JsonObject) => {
      const result = await engram.execute("engram.session.summary", { id: session.id as string, show: false }, { quiet: true });
      await views.show(`Session ${itemLabel(session)}`, toMarkdown(`Session ${itemLabel(session)}`, result));
    },
    "engram.ui.restoreSessionItem": async (session: JsonObject) => {
      const result = await engram.execute("engram.session.restore", { id: session.id as string });
      await views.show(`Session ${itemLabel(session)}`, toMarkdown(`Session ${itemLabel(session)}`, result));
    },
    "engram.ui.deleteSessionItem": async (session: JsonObject) => {
      if (
        await confirmModally(
          `Delete session “${itemLabel(session)}”?`,
          "It can be undeleted for the recovery period, then it is purged.",
          "Delete",
        )
      ) {
        await engram.execute("engram.session.delete", { id: session.id as string, confirm: true });
        void vscode.window.showInformationMessage(`engram: session “${itemLabel(session)}” deleted`);
      }
    },
    "engram.ui.rollbackTo": async (node: { checkpoint?: JsonObject } | JsonObject) => {
      const checkpoint = ("checkpoint" in node ? node.checkpoint : node) as JsonObject;
      await rollbackTo(engram, checkpoint);
    },
    "engram.ui.compareWithCheckpoint": async (checkpoint: JsonObject | { checkpoint: JsonObject; file: string }, file?: string) => {
      if ("file" in checkpoint && typeof checkpoint.file === "string") {
        await openCheckpointDiff(checkpoint.checkpoint as JsonObject, checkpoint.file);
      } else if (file) {
        await openCheckpointDiff(checkpoint as JsonObject, file);
      }
    },
    "engram.ui.resolveGotchaItem": async (node: { gotcha?: JsonObject }) => {
      const gotcha = node.gotcha;
      if (!gotcha) {
        return;
      }
      if (
        await confirmModally(
          `Resolve gotcha “${itemLabel(gotcha)}”?`,
          "It stops showing in every file of the project. It comes back if its error happens again.",
          "Resolve",
        )
      ) {
        await engram.execute("engram.gotcha.resolve", { id: gotcha.id as string });
        void vscode.window.showInformationMessage(
          `engram: gotcha “${String(gotcha.title ?? itemLabel(gotcha))}” resolved for the whole project`,
        );
      }
    },
  };
  for (const [id, run] of Object.entries(itemCommands)) {
    engram.context.subscriptions.push(
      vscode.commands.registerCommand(id, async (...args: never[]) => {
        try {
          await run(...args);
        } catch (error) {
          report(engram, id, error);
        }
      }),
    );
  }

  for (const [id, run] of Object.entries(commands)) {
    engram.context.subscriptions.push(
      vscode.commands.registerCommand(id, async () => {
        try {
          await run();
        } catch (error) {
          report(engram, id, error);
        }
      }),
    );
  }
}
