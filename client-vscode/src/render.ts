// Read-only Markdown views of command results (summary, history, timeline, ...), served from
// the `engram:` scheme so that closing them never asks to save anything.
import * as vscode from "vscode";

export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
export type JsonObject = { [key: string]: Json };

export const SCHEME = "engram";

export class ResultViews implements vscode.TextDocumentContentProvider {
  private readonly contents = new Map<string, string>();
  private readonly changed = new vscode.EventEmitter<vscode.Uri>();
  readonly onDidChange = this.changed.event;

  provideTextDocumentContent(uri: vscode.Uri): string {
    return this.contents.get(uri.path) ?? "";
  }

  async show(title: string, markdown: string): Promise<void> {
    const uri = vscode.Uri.from({ scheme: SCHEME, path: `/${title}.md` });
    this.contents.set(uri.path, markdown);
    this.changed.fire(uri);
    const document = await vscode.workspace.openTextDocument(uri);
    await vscode.languages.setTextDocumentLanguage(document, "markdown");
    await vscode.window.showTextDocument(document, { preview: true });
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
