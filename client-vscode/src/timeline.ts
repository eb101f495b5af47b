// A file's evolution in VS Code's own Timeline panel (Explorer > Timeline), beside Git's and
// Local History's entries: who changed the file (you, the agent, git, another program, a
// rollback) and engram's checkpoints. A click opens a diff through the `engram:` documents:
// a checkpoint against the file now, a change between the checkpoints around it.
import * as path from "path";
import * as vscode from "vscode";

import type { Engram } from "./extension";
import { JsonObject, ResultViews, firstList, itemLabel } from "./render";

const VERBS: { [kind: string]: string } = {
  "file.modified": "Changed",
  "file.created": "Created",
  "file.deleted": "Deleted",
  "file.renamed": "Renamed",
};

function icon(entry: JsonObject): vscode.ThemeIcon {
  const who = String(entry.who ?? "");
  if (who.startsWith("the rollback")) {
    return new vscode.ThemeIcon("discard");
  }
  if (who.startsWith("the agent")) {
    return new vscode.ThemeIcon("hubot");
  }
  if (who.startsWith("you")) {
    return new vscode.ThemeIcon("person");
  }
  if (who === "git") {
    return new vscode.ThemeIcon("git-commit");
  }
  return new vscode.ThemeIcon("terminal");
}

function capitalised(text: string): string {
  return text.charAt(0).toUpperCase() + text.slice(1);
}

export class EngramTimeline implements vscode.EngramTimelineProvider {
  readonly id = "engram";
  readonly label = "engram";
  private readonly changed = new vscode.EventEmitter<{ uri: vscode.Uri; reset?: boolean } | undefined>();
  readonly onDidChange = this.changed.event;

  constructor(private readonly engram: Engram) {}

  refresh(): void {
    this.changed.fire(undefined);
  }

  async provideTimeline(uri: vscode.Uri): Promise<vscode.EngramTimeline> {
    try {
      return await this.timelineOf(uri);
    } catch (error) {
      this.engram.output.appendLine(`Timeline of ${uri.fsPath}: ${error instanceof Error ? error.stack : String(error)}`);
      return { items: [] };
    }
  }

  private async timelineOf(uri: vscode.Uri): Promise<vscode.EngramTimeline> {
    if (uri.scheme === "vscode-remote") {
      uri = uri.with({ scheme: "file", authority: "" });
    }
    if (uri.scheme !== "file" || !vscode.workspace.getWorkspaceFolder(uri)) {
      return { items: [] };
    }
    const relativePath = vscode.workspace.asRelativePath(uri, false);
    const [timeline, listed] = await Promise.all([
      this.engram.execute("engram.timeline", { file: uri.toString(), limit: 200 }, { quiet: true }).catch(() => undefined),
      this.engram.execute("engram.checkpoint.list", {}, { quiet: true }).catch(() => undefined),
    ]);
    const checkpoints = firstList(listed, "checkpoints")
      .map((checkpoint) => ({ checkpoint, time: Date.parse(String(checkpoint.created_at)) }))
      .sort((a, b) => a.time - b.time);
    const items: vscode.EngramTimelineItem[] = [];
    for (const entry of firstList(timeline, "entries")) {
      if (entry.source !== "evolution") {
        continue;
      }
      const time = Date.parse(String(entry.timestamp));
      const kind = String(entry.event_type ?? "");
      const who = String(entry.who ?? "someone");
      const lines = /\((lines? [^)]*)\)$/.exec(String(entry.text ?? ""))?.[1];
      // The checkpoints around the change, as the server found them from precise times.
      const around = ((entry.details as JsonObject | undefined)?.around ?? {}) as JsonObject;
      const before = checkpoints.find((c) => c.checkpoint.id === around.before);
      const after = checkpoints.find((c) => c.checkpoint.id === around.after);
      const item: vscode.EngramTimelineItem = {
        id: `engram:${entry.id}`,
        timestamp: time,
        label: kind.startsWith("git.") ? capitalised(String(entry.text ?? "git")) : `${VERBS[kind] ?? "Changed"} by ${who}`,
        description: lines,
        iconPath: icon(entry),
        tooltip: new vscode.MarkdownString(
          `${entry.text}\n\n${entry.timestamp} (${entry.ago})` +
            (before ? `\n\nClick: checkpoint “${itemLabel(before.checkpoint)}” ↔ ${after ? `checkpoint “${itemLabel(after.checkpoint)}”` : "now"}` : ""),
        ),
        contextValue: "engram.change",
      };
      if (before) {
        const left = ResultViews.checkpointUri(String(before.checkpoint.id), relativePath, itemLabel(before.checkpoint));
        const right = after
          ? ResultViews.checkpointUri(String(after.checkpoint.id), relativePath, itemLabel(after.checkpoint))
          : uri;
        item.command = {
          command: "vscode.diff",
          title: "Open Changes",
          arguments: [
            left,
            right,
            `${path.basename(relativePath)} (“${itemLabel(before.checkpoint)}” ↔ ${after ? `“${itemLabel(after.checkpoint)}”` : "now"})`,
          ],
        };
      }
      items.push(item);
    }
    for (const { checkpoint, time } of checkpoints) {
      items.push({
        id: `engram:checkpoint:${checkpoint.id}`,
        timestamp: time,
        label: `Checkpoint “${itemLabel(checkpoint)}”`,
        description: checkpoint.reason === "manual" ? undefined : String(checkpoint.reason ?? ""),
        iconPath: new vscode.ThemeIcon("bookmark"),
        tooltip: `engram checkpoint ${checkpoint.id}. Click: this file then ↔ now.`,
        contextValue: "engram.checkpoint",
        command: {
          command: "vscode.diff",
          title: "Compare with Checkpoint",
          arguments: [
            ResultViews.checkpointUri(String(checkpoint.id), relativePath, itemLabel(checkpoint)),
            uri,
            `${path.basename(relativePath)} (checkpoint “${itemLabel(checkpoint)}”) ↔ now`,
          ],
        },
      });
    }
    items.sort((a, b) => b.timestamp - a.timestamp);
    return { items };
  }
}

/** Registers the provider where VS Code offers the Timeline API; says so in the output otherwise. */
export function registerTimeline(engram: Engram): EngramTimeline | undefined {
  const register = (vscode.workspace as unknown as {
    registerTimelineProvider?: (scheme: string | string[], provider: vscode.EngramTimelineProvider) => vscode.Disposable;
  }).registerTimelineProvider;
  if (typeof register !== "function") {
    engram.output.appendLine(
      "VS Code's Timeline API is not enabled for engram (start VS Code with --enable-proposed-api engram.engram): " +
        "file history is in the Checkpoints view and “engram: Show Timeline”.",
    );
    return undefined;
  }
  const provider = new EngramTimeline(engram);
  try {
    // In a remote window (code-server, SSH) the Timeline asks for `vscode-remote:` documents.
    engram.context.subscriptions.push(register(["file", "vscode-remote"], provider));
  } catch (error) {
    engram.output.appendLine(`the Timeline API refused engram: ${error instanceof Error ? error.message : String(error)}`);
    return undefined;
  }
  engram.context.subscriptions.push(vscode.workspace.onDidSaveTextDocument(() => provider.refresh()));
  engram.output.appendLine("engram's entries are in VS Code's Timeline panel");
  return provider;
}
