// Read-only Markdown views of command results (summary, history, timeline, ...), served from
// the `engram:` scheme so that closing them never asks to save anything.
import * as vscode from "vscode";

export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
export type JsonObject = { [key: string]: Json };

export const SCHEME = "engram";

/** Reads a file's content at a checkpoint from the server (engram.checkpoint.file). */
export type CheckpointReader = (id: string, path: string) => Promise<string>;

/**
 * The `engram:` documents: rendered results (`engram:/views/<title>.md`, shown in VS Code's
 * Markdown preview, never as an editable file) and files as a checkpoint holds them
 * (`engram:/checkpoint/<id>/<workspace-relative path>`, the left side of diff views).
 */
export class ResultViews implements vscode.TextDocumentContentProvider {
  private readonly contents = new Map<string, string>();
  private readonly changed = new vscode.EventEmitter<vscode.Uri>();
  readonly onDidChange = this.changed.event;
  reader: CheckpointReader | undefined;

  async provideTextDocumentContent(uri: vscode.Uri): Promise<string> {
    const checkpoint = /^\/checkpoint\/([^/]+)\/(.+)$/.exec(uri.path);
    if (checkpoint && this.reader) {
      return this.reader(decodeURIComponent(checkpoint[1]), checkpoint[2]);
    }
    return this.contents.get(uri.path) ?? "";
  }

  static checkpointUri(id: string, relativePath: string, label: string): vscode.Uri {
    // The label in the query makes the tab title say which checkpoint it is.
    return vscode.Uri.from({
      scheme: SCHEME,
      path: `/checkpoint/${encodeURIComponent(id)}/${relativePath}`,
      query: label,
    });
  }

  /** Show Markdown rendered, in one preview per title (reused when shown again). */
  async show(title: string, markdown: string): Promise<void> {
    const uri = vscode.Uri.from({ scheme: SCHEME, path: `/views/${title.replace(/[/\\]/g, "-")}.md` });
    this.contents.set(uri.path, markdown);
    this.changed.fire(uri);
    try {
      await vscode.commands.executeCommand("markdown.showPreview", uri);
    } catch {
      // No Markdown preview (the built-in extension disabled): the read-only text.
      const document = await vscode.workspace.openTextDocument(uri);
      await vscode.languages.setTextDocumentLanguage(document, "markdown");
      await vscode.window.showTextDocument(document, { preview: true });
    }
  }

  /** The Markdown of a view shown before (for tests and the "Open as Text" fallback). */
  text(title: string): string | undefined {
    return this.contents.get(`/views/${title}.md`);
  }

  dispose(): void {
    this.changed.dispose();
  }
}

export function itemLabel(item: JsonObject): string {
  for (const key of ["label", "name", "title", "content", "message", "summary"]) {
    const value = item[key];
    if (typeof value === "string" && value.trim()) {
      return value.split("\n")[0];
    }
  }
  return String(item.id ?? "(unnamed)");
}

export function when(item: JsonObject): string {
  for (const key of ["created_at", "started_at", "ts", "timestamp", "last_seen"]) {
    const value = item[key];
    if (typeof value === "string" && value) {
      return value.replace("T", " ").replace(/\.\d+/, "").replace(/\+00:00$|Z$/, " UTC");
    }
  }
  return "";
}

/** The first list found in a result object ({"sessions": [...]} and the like). */
export function firstList(result: JsonObject | undefined, key?: string): JsonObject[] {
  if (!result) {
    return [];
  }
  const preferred = key ? result[key] : undefined;
  const list = Array.isArray(preferred) ? preferred : Object.values(result).find(Array.isArray);
  return (list ?? []).filter((item): item is JsonObject => typeof item === "object" && item !== null && !Array.isArray(item));
}

function scalar(value: Json): string {
  if (value === null) {
    return "—";
  }
  if (typeof value === "object") {
    return "`" + JSON.stringify(value) + "`";
  }
  return String(value);
}

/** A result as Markdown: the server's own Markdown when it sends some, else a readable layout. */
export function toMarkdown(title: string, result: JsonObject | undefined): string {
  if (!result) {
    return `# ${title}\n\nNothing to show.\n`;
  }
  for (const key of ["markdown", "summary_markdown", "text"]) {
    const value = result[key];
    if (typeof value === "string" && value.trim()) {
      return value.startsWith("#") ? value : `# ${title}\n\n${value}`;
    }
  }
  const lines = [`# ${title}`, ""];
  for (const [key, value] of Object.entries(result)) {
    if (Array.isArray(value)) {
      lines.push("", `## ${key} (${value.length})`, "");
      if (value.length === 0) {
        lines.push("None.", "");
        continue;
      }
      for (const entry of value) {
        if (entry && typeof entry === "object" && !Array.isArray(entry)) {
          const item = entry as JsonObject;
          const stamp = when(item);
          const id = item.id !== undefined ? ` \`${item.id}\`` : "";
          lines.push(`- ${stamp ? stamp + " " : ""}**${itemLabel(item)}**${id}`);
        } else {
          lines.push(`- ${scalar(entry)}`);
        }
      }
      lines.push("");
    } else if (value && typeof value === "object") {
      lines.push("", `## ${key}`, "");
      for (const [inner, innerValue] of Object.entries(value)) {
        lines.push(`- ${inner}: ${scalar(innerValue)}`);
      }
      lines.push("");
    } else {
      lines.push(`- ${key}: ${scalar(value)}`);
    }
  }
  return lines.join("\n").replace(/\n{3,}/g, "\n\n") + "\n";
}
