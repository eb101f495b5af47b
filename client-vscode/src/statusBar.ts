// The status-bar item: the active session with its turns, and the open gotchas; a click shows
// the session summary. Refreshed after every engram command, on save, when diagnostics change
// and every 30 seconds.
import * as vscode from "vscode";

import type { Engram } from "./extension";
import { JsonObject, firstList, itemLabel } from "./render";

const REFRESH_MS = 30_000;

function turnsOf(session: JsonObject): number | undefined {
  for (const key of ["turns", "turn_count", "turns_count"]) {
    const value = session[key];
    if (typeof value === "number") {
      return value;
    }
    if (Array.isArray(value)) {
      return value.length;
    }
  }
  const metrics = session.metrics;
  if (metrics && typeof metrics === "object" && !Array.isArray(metrics) && typeof metrics.turns === "number") {
    return metrics.turns;
  }
  return undefined;
}

export class StatusBar implements vscode.Disposable {
  private readonly item = vscode.window.createStatusBarItem("engram.status", vscode.StatusBarAlignment.Left, 50);
  private timer: NodeJS.Timeout | undefined;
  private pending: NodeJS.Timeout | undefined;
  private readonly subscriptions: vscode.Disposable[] = [];

  constructor(private readonly engram: Engram) {
    this.item.name = "engram";
    this.item.command = "engram.ui.sessionSummary";
    this.item.text = "$(sync~spin) engram";
    this.item.tooltip = "engram: starting the language server";
    this.timer = setInterval(() => this.refreshSoon(0), REFRESH_MS);
    this.subscriptions.push(vscode.workspace.onDidSaveTextDocument(() => this.refreshSoon()));
    // In step with the squiggles: a gotcha added or resolved elsewhere (a terminal, an agent)
    // reaches the editor as changed diagnostics; the count follows them, not the timer.
    this.subscriptions.push(
      vscode.languages.onDidChangeDiagnostics((event) => {
        if (event.uris.length > 0) {
          this.refreshSoon();
        }
      }),
    );
  }

  refreshSoon(delayMs = 500): void {
    if (this.pending) {
      clearTimeout(this.pending);
    }
    this.pending = setTimeout(() => {
      this.pending = undefined;
      void this.refresh();
    }, delayMs);
  }

  showStopped(): void {
    this.item.text = "$(error) engram";
    this.item.tooltip = "engram: the language server is not running. Click to restart it.";
    this.item.command = "engram.ui.restartServer";
    this.item.accessibilityInformation = { label: "engram: server not running" };
    this.item.show();
  }

  private async list(command: string, key: string): Promise<JsonObject[] | undefined> {
    try {
      return firstList(await this.engram.client!.sendRequest("workspace/executeCommand", {
        command,
        arguments: [{}],
      }) as JsonObject, key);
    } catch {
      // A server without this feature (or a folder without a store) leaves that part out.
      return undefined;
    }
  }

  async refresh(): Promise<void> {
    if (!vscode.workspace.getConfiguration("engram").get<boolean>("statusBar.enabled", true)) {
      this.item.hide();
      return;
    }
    const client = this.engram.client;
    if (!client || !client.isRunning()) {
      this.showStopped();
      return;
    }
    const [sessions, gotchas] = await Promise.all([
      this.list("engram.session.list", "sessions"),
      this.list("engram.gotcha.list", "gotchas"),
    ]);
    const active = sessions?.find((s) => s.status === "active");
    const open = gotchas?.filter((g) => g.status !== "resolved").length;
    const parts: string[] = [];
    const tooltip: string[] = [];
    if (active) {
      const turns = turnsOf(active);
      const turnText = turns === undefined ? "" : `${turns} turn${turns === 1 ? "" : "s"}`;
      parts.push(`· ${itemLabel(active)}` + (turnText ? ` · ${turnText}` : ""));
      tooltip.push(`Active session: ${itemLabel(active)} (${active.id ?? "?"})` + (turnText ? `, ${turnText}` : ""));
    } else {
      parts.push("· no active session");
      tooltip.push("No active agent session");
    }
    if (open !== undefined) {
      // Words, not a warning sign and a number: VS Code's own Problems item looks like that.
      parts.push(`· ${open} gotcha${open === 1 ? "" : "s"}`);
      tooltip.push(`${open} open gotcha${open === 1 ? "" : "s"}`);
    }
    this.item.text = `$(book) engram ${parts.join(" ")}`;
    this.item.tooltip = `${tooltip.join("\n")}\nClick for the session summary.`;
    this.item.command = "engram.ui.sessionSummary";
    this.item.accessibilityInformation = { label: `engram: ${tooltip.join(", ")}` };
    this.item.show();
  }

  dispose(): void {
    if (this.timer) {
      clearInterval(this.timer);
    }
    if (this.pending) {
      clearTimeout(this.pending);
    }
    this.subscriptions.forEach((s) => s.dispose());
    this.item.dispose();
  }
}
