// engram's view container (activity bar): Sessions, Checkpoints (roll back, compare, the files
// changed since), Gotchas grouped by file (click: go to the line), Memory. Each view asks the
// server when it is shown and after every engram command.
import * as path from "path";
import * as vscode from "vscode";

import type { Engram } from "./extension";
import { JsonObject, ResultViews, firstList, itemLabel } from "./render";

function ago(iso: unknown): string {
  if (typeof iso !== "string" || !iso) {
    return "";
  }
  const seconds = Math.max(0, (Date.now() - Date.parse(iso)) / 1000);
  if (seconds < 60) {
    return "just now";
  }
  if (seconds < 3600) {
    return `${Math.floor(seconds / 60)} min ago`;
  }
  if (seconds < 86400) {
    return `${Math.floor(seconds / 3600)} h ago`;
  }
  return `${Math.floor(seconds / 86400)} d ago`;
}

function workspaceRoot(): vscode.Uri | undefined {
  const active = vscode.window.activeTextEditor?.document.uri;
  const folder = (active && vscode.workspace.getWorkspaceFolder(active)) ?? vscode.workspace.workspaceFolders?.[0];
  return folder?.uri;
}

/** A checkpoint's file against the workspace's, in VS Code's diff editor. */
export async function openCheckpointDiff(checkpoint: JsonObject, relativePath: string): Promise<void> {
  const root = workspaceRoot();
  if (!root) {
    return;
  }
  const label = itemLabel(checkpoint);
  const left = ResultViews.checkpointUri(String(checkpoint.id), relativePath, label);
  const right = vscode.Uri.joinPath(root, relativePath);
  await vscode.commands.executeCommand(
    "vscode.diff",
    left,
    right,
    `${path.basename(relativePath)} (checkpoint “${label}”) ↔ now`,
  );
}

abstract class ListView<T> implements vscode.TreeDataProvider<T> {
  protected readonly changed = new vscode.EventEmitter<T | undefined>();
  readonly onDidChangeTreeData = this.changed.event;

  constructor(protected readonly engram: Engram) {}

  refresh(): void {
    this.changed.fire(undefined);
  }

  protected async list(command: string, key: string, args: JsonObject = {}): Promise<JsonObject[]> {
    try {
      return firstList(await this.engram.execute(command, args, { quiet: true }), key);
    } catch (error) {
      this.engram.output.appendLine(`${command}: ${error instanceof Error ? error.message : String(error)}`);
      return [];
    }
  }

  abstract getTreeItem(element: T): vscode.TreeItem;
  abstract getChildren(element?: T): Promise<T[]>;
}

export class SessionsView extends ListView<JsonObject> {
  getTreeItem(session: JsonObject): vscode.TreeItem {
    const item = new vscode.TreeItem(itemLabel(session));
    const turns = typeof session.turns === "number" ? `${session.turns} turn${session.turns === 1 ? "" : "s"}` : "";
    item.description = [session.status, turns, ago(session.started_at)].filter(Boolean).join(" · ");
    item.tooltip = new vscode.MarkdownString(
      `**${itemLabel(session)}** (${session.agent ?? "agent"}, ${session.status})\n\n` +
        `Started ${ago(session.started_at)}${turns ? `, ${turns}` : ""}.\n\nClick for the summary.`,
    );
    item.iconPath = new vscode.ThemeIcon(session.status === "active" ? "pulse" : "history");
    item.contextValue = "engram.session";
    item.command = { command: "engram.ui.showSessionSummary", title: "Show Summary", arguments: [session] };
    return item;
  }

  async getChildren(element?: JsonObject): Promise<JsonObject[]> {
    return element ? [] : this.list("engram.session.list", "sessions");
  }
}

type CheckpointNode = { checkpoint: JsonObject; file?: string; change?: string };

export class CheckpointsView extends ListView<CheckpointNode> {
  getTreeItem(node: CheckpointNode): vscode.TreeItem {
    if (node.file) {
      const item = new vscode.TreeItem(path.basename(node.file));
      item.description = `${path.dirname(node.file) === "." ? "" : path.dirname(node.file) + " · "}${node.change}`;
      item.resourceUri = vscode.Uri.file(node.file);
      item.iconPath = new vscode.ThemeIcon(
        node.change === "added since" ? "diff-added" : node.change === "deleted since" ? "diff-removed" : "diff-modified",
      );
      item.tooltip = `${node.file}: ${node.change} checkpoint “${itemLabel(node.checkpoint)}”. Click to compare.`;
      item.command = {
        command: "engram.ui.compareWithCheckpoint",
        title: "Compare with Checkpoint",
        arguments: [node.checkpoint, node.file],
      };
      item.contextValue = "engram.checkpointFile";
      return item;
    }
    const checkpoint = node.checkpoint;
    const item = new vscode.TreeItem(itemLabel(checkpoint), vscode.TreeItemCollapsibleState.Collapsed);
    const files =
      typeof checkpoint.files === "number" ? `${checkpoint.files} file${checkpoint.files === 1 ? "" : "s"}` : "";
    item.description = [ago(checkpoint.created_at), files].filter(Boolean).join(" · ");
    item.tooltip = new vscode.MarkdownString(
      `**${itemLabel(checkpoint)}** \`${checkpoint.id}\`\n\n` +
        `${checkpoint.description ? String(checkpoint.description) + "\n\n" : ""}` +
        `Made ${ago(checkpoint.created_at)} (${checkpoint.reason}). Expand for the files changed since.`,
    );
    item.iconPath = new vscode.ThemeIcon(checkpoint.reason === "pre-rollback" ? "discard" : "bookmark");
    item.contextValue = "engram.checkpoint";
    return item;
  }

  async getChildren(node?: CheckpointNode): Promise<CheckpointNode[]> {
    if (!node) {
      return (await this.list("engram.checkpoint.list", "checkpoints")).map((checkpoint) => ({ checkpoint }));
    }
    if (node.file) {
      return [];
    }
    const diff = await this.engram.execute("engram.checkpoint.diff", { id: node.checkpoint.id as string }, { quiet: true });
    const children: CheckpointNode[] = [];
    for (const [key, change] of [
      ["modified", "changed since"],
      ["added", "added since"],
      ["deleted", "deleted since"],
    ] as const) {
      const files = diff?.[key];
      if (Array.isArray(files)) {
        for (const file of files) {
          children.push({ checkpoint: node.checkpoint, file: String(file), change });
        }
      }
    }
    return children;
  }
}

type GotchaNode = { file?: string; gotcha?: JsonObject; uri?: vscode.Uri; line?: number };

/**
 * Gotchas grouped by the file where they show: the engram diagnostics VS Code holds (pattern
 * gotchas match in the files open now), the anchors the server recorded, and the rest under
 * "Not anchored in a file".
 */
export class GotchasView extends ListView<GotchaNode> {
  constructor(engram: Engram) {
    super(engram);
    engram.context.subscriptions.push(vscode.languages.onDidChangeDiagnostics(() => this.refresh()));
  }

  private groups: Map<string, GotchaNode[]> = new Map();

  getTreeItem(node: GotchaNode): vscode.TreeItem {
    if (!node.gotcha) {
      const count = this.groups.get(node.file ?? "")?.length ?? 0;
      const item = new vscode.TreeItem(node.file ?? "", vscode.TreeItemCollapsibleState.Expanded);
      item.description = `${count} gotcha${count === 1 ? "" : "s"}`;
      item.iconPath = node.uri ? vscode.ThemeIcon.File : new vscode.ThemeIcon("globe");
      item.resourceUri = node.uri;
      return item;
    }
    const gotcha = node.gotcha;
    const item = new vscode.TreeItem(String(gotcha.title ?? itemLabel(gotcha)));
    item.description = [node.line !== undefined ? `line ${node.line + 1}` : "", String(gotcha.severity ?? "")]
      .filter(Boolean)
      .join(" · ");
    const workaround = typeof gotcha.workaround === "string" && gotcha.workaround ? `\n\nWorkaround: ${gotcha.workaround}` : "";
    item.tooltip = new vscode.MarkdownString(`**${gotcha.title}** \`${gotcha.id}\`${workaround}`);
    item.iconPath = new vscode.ThemeIcon(
      gotcha.severity === "critical" || gotcha.severity === "high" ? "warning" : "info",
    );
    item.contextValue = "engram.gotcha";
    if (node.uri) {
      item.command = {
        command: "vscode.open",
        title: "Go to Gotcha",
        arguments: [node.uri, { selection: new vscode.Range(node.line ?? 0, 0, node.line ?? 0, 0) }],
      };
    }
    return item;
  }

  async getChildren(node?: GotchaNode): Promise<GotchaNode[]> {
    if (node) {
      return node.gotcha ? [] : this.groups.get(node.file ?? "") ?? [];
    }
    const gotchas = (await this.list("engram.gotcha.list", "gotchas")).filter((g) => g.status !== "resolved");
    const byId = new Map(gotchas.map((g) => [String(g.id), g]));
    const groups = new Map<string, GotchaNode[]>();
    const uris = new Map<string, vscode.Uri>();
    const placed = new Set<string>();
    const add = (file: string, uri: vscode.Uri | undefined, gotcha: JsonObject, line?: number) => {
      const list = groups.get(file) ?? [];
      if (!list.some((n) => n.gotcha?.id === gotcha.id && n.line === line)) {
        list.push({ file, gotcha, uri, line });
      }
      groups.set(file, list);
      if (uri) {
        uris.set(file, uri);
      }
      placed.add(String(gotcha.id));
    };
    for (const [uri, diagnostics] of vscode.languages.getDiagnostics()) {
      for (const diagnostic of diagnostics) {
        const code = typeof diagnostic.code === "object" ? diagnostic.code.value : diagnostic.code;
        const gotcha = byId.get(String(code));
        if (diagnostic.source === "engram" && gotcha) {
          add(vscode.workspace.asRelativePath(uri), uri, gotcha, diagnostic.range.start.line);
        }
      }
    }
    const root = workspaceRoot();
    for (const gotcha of gotchas) {
      for (const anchor of Array.isArray(gotcha.anchors) ? (gotcha.anchors as JsonObject[]) : []) {
        if (typeof anchor.path === "string" && root) {
          add(anchor.path, vscode.Uri.joinPath(root, anchor.path), gotcha, Number(anchor.line ?? 1) - 1);
        }
      }
    }
    const unplaced = gotchas.filter((g) => !placed.has(String(g.id)));
    this.groups = new Map([...groups.entries()].sort(([a], [b]) => a.localeCompare(b)));
    if (unplaced.length) {
      this.groups.set(
        "Not anchored in an open file",
        unplaced.map((gotcha) => ({ file: "Not anchored in an open file", gotcha })),
      );
    }
    return [...this.groups.keys()].map((file) => ({ file, uri: uris.get(file) }));
  }
}

export class MemoryView extends ListView<JsonObject> {
  getTreeItem(memory: JsonObject): vscode.TreeItem {
    const content = String(memory.content ?? "");
    const item = new vscode.TreeItem(content.split("\n")[0].slice(0, 120));
    item.description = [memory.type, ago(memory.created_at)].filter(Boolean).join(" · ");
    item.tooltip = new vscode.MarkdownString(content);
    item.iconPath = new vscode.ThemeIcon(memory.pinned ? "pinned" : "note");
    item.contextValue = "engram.memory";
    return item;
  }

  async getChildren(element?: JsonObject): Promise<JsonObject[]> {
    return element ? [] : this.list("engram.memory.list", "memories");
  }
}

export interface Views {
  sessions: SessionsView;
  checkpoints: CheckpointsView;
  gotchas: GotchasView;
  memory: MemoryView;
  refresh(): void;
}

export function registerViews(engram: Engram): Views {
  const views = {
    sessions: new SessionsView(engram),
    checkpoints: new CheckpointsView(engram),
    gotchas: new GotchasView(engram),
    memory: new MemoryView(engram),
    refresh(): void {
      views.sessions.refresh();
      views.checkpoints.refresh();
      views.gotchas.refresh();
      views.memory.refresh();
    },
  };
  engram.context.subscriptions.push(
    vscode.window.registerTreeDataProvider("engram.sessions", views.sessions),
    vscode.window.registerTreeDataProvider("engram.checkpoints", views.checkpoints),
    vscode.window.registerTreeDataProvider("engram.gotchas", views.gotchas),
    vscode.window.registerTreeDataProvider("engram.memory", views.memory),
  );
  return views;
}
