// The engram extension: starts `engram lsp`, puts every engram command in the palette, asks
// for names and choices with input boxes and quick picks, shows the server's confirmations as
// modal dialogs, and keeps a status-bar item with the active session and the open gotchas.
import * as vscode from "vscode";
import {
  ConfigurationParams,
  ExecuteCommandRequest,
  LanguageClient,
  LanguageClientOptions,
  MessageActionItem,
  MessageType,
  RevealOutputChannelOn,
  ServerOptions,
  ShowMessageRequest,
  ShowMessageRequestParams,
  State,
} from "vscode-languageclient/node";

import { registerCommands } from "./commands";
import { JsonObject, ResultViews, SCHEME } from "./render";
import { ignoredUserSetting, resolveServerCommand } from "./serverCommand";
import { StatusBar } from "./statusBar";
import { EngramTimeline, registerTimeline } from "./timeline";
import { Views, registerViews } from "./views";

/**
 * The library's own error toasts ("Starting client failed", ...) would come on top of the one
 * the extension shows with what to do: the library's go to the output channel only.
 */
class EngramLanguageClient extends LanguageClient {
  override error(message: string, data?: unknown, _showNotification?: boolean | "force"): void {
    super.error(message, data, false);
  }
}

export class Engram implements vscode.Disposable {
  client: LanguageClient | undefined;
  readonly output = vscode.window.createOutputChannel("engram");
  readonly views = new ResultViews();
  readonly statusBar = new StatusBar(this);
  trees: Views | undefined;
  timeline: EngramTimeline | undefined;
  private starting: Promise<void> | undefined;
  private restarting: Promise<void> | undefined;
  // The ignored-setting warning is said once per window, not at every restart.
  private saidIgnored = false;

  constructor(readonly context: vscode.ExtensionContext) {}

  /** Run one server command: one JSON object in, one JSON object out (docs/design.md section 5). */
  async execute(
    command: string,
    args: JsonObject = {},
    options: { quiet?: boolean } = {},
  ): Promise<JsonObject | undefined> {
    const client = await this.ready();
    const folders = vscode.workspace.workspaceFolders ?? [];
    if (folders.length > 1 && args.workspace === undefined) {
      // Multi-root: act on the folder of the active editor (one store per folder).
      const active = vscode.window.activeTextEditor?.document.uri;
      const folder = (active && vscode.workspace.getWorkspaceFolder(active)) ?? folders[0];
      args = { ...args, workspace: folder.uri.toString() };
    }
    const result = await client.sendRequest(ExecuteCommandRequest.type, { command, arguments: [args] });
    if (!options.quiet) {
      // What a command changed shows everywhere: status bar, engram's views, the Timeline.
      this.statusBar.refreshSoon();
      this.trees?.refresh();
      this.timeline?.refresh();
    }
    return (result ?? undefined) as JsonObject | undefined;
  }

  async ready(): Promise<LanguageClient> {
    if (!this.client || this.client.state === State.Stopped) {
      await this.start();
    } else if (this.starting) {
      await this.starting;
    }
    if (!this.client || this.client.state !== State.Running) {
      throw new Error("the engram language server is not running (see the engram output)");
    }
    return this.client;
  }

  start(): Promise<void> {
    this.starting = this.doStart().finally(() => {
      this.starting = undefined;
    });
    return this.starting;
  }

  private async doStart(): Promise<void> {
    const ignored = ignoredUserSetting();
    if (ignored && !this.saidIgnored) {
      this.saidIgnored = true;
      this.output.appendLine(ignored);
      void vscode.window.showWarningMessage(ignored);
    }
    const server = await resolveServerCommand(this.context.extensionPath);
    this.output.appendLine(`starting ${server.command} ${server.args.join(" ")} (${server.origin})`);
    const serverOptions: ServerOptions = {
      command: server.command,
      args: server.args,
      options: { cwd: vscode.workspace.workspaceFolders?.[0]?.uri.fsPath, env: { ...process.env, ...server.env } },
    };
    const clientOptions: LanguageClientOptions = {
      // Gotchas anchor in files of any language, and in engram's own Markdown exports.
      documentSelector: [{ scheme: "file" }],
      outputChannel: this.output,
      revealOutputChannelOn: RevealOutputChannelOn.Never,
      synchronize: { configurationSection: "engram" },
      middleware: {
        workspace: {
          configuration: (params) => explicitSettings(params, serverSettingKeys(this.context)),
        },
        window: {
          // Views the server generates under .engram/exports/ (all gotchas, a file's history,
          // a session summary) are shown rendered, not opened as files to edit.
          showDocument: async (params, next) => {
            const uri = vscode.Uri.parse(params.uri);
            if (uri.scheme === "file" && /\/\.engram\/exports\/.*\.md$/.test(uri.path)) {
              const bytes = await vscode.workspace.fs.readFile(uri);
              const title = uri.path.split("/").pop()!.replace(/\.md$/, "");
              await this.views.show(title, Buffer.from(bytes).toString("utf8"));
              return { success: true };
            }
            const shown = await next(params, new vscode.CancellationTokenSource().token);
            return "success" in shown ? shown : { success: false };
          },
        },
      },
    };
    const client = new EngramLanguageClient("engram", "engram", serverOptions, clientOptions);
    this.client = client;
    try {
      await client.start();
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      this.output.appendLine(`engram server failed to start: ${message}`);
      // Not awaited: the start is over (failed) whether or not the person answers, so that
      // "Restart Server" works while the notification is still up.
      void vscode.window
        .showErrorMessage(
          `engram: the language server did not start (${server.command}, from ${server.origin}). ` +
            "Install Python 3.11 or newer (the extension brings the server), or `pipx install engram-lsp`, or set engram.server.command; then run “engram: Restart Server”.",
          "Open Settings",
          "Show Output",
        )
        .then((choice) => {
          if (choice === "Open Settings") {
            void vscode.commands.executeCommand("workbench.action.openSettings", "engram.server.command");
          } else if (choice === "Show Output") {
            this.output.show();
          }
        });
      this.statusBar.showStopped();
      return;
    }
    // Registered after start so that it replaces the library's default, non-modal handler.
    client.onRequest(ShowMessageRequest.type, (params) => askModally(params));
    this.statusBar.refreshSoon(0);
  }

  /** One restart at a time: a second "Restart Server" while one runs joins it. */
  restart(): Promise<void> {
    this.restarting ??= this.doRestart().finally(() => {
      this.restarting = undefined;
    });
    return this.restarting;
  }

  private async doRestart(): Promise<void> {
    // A start still in progress is let finish first, then stopped: forgetting a client that is
    // still starting left it running beside the new one (two servers, and "command
    // 'engram.status' already exists" from the second).
    await this.starting?.catch(() => undefined);
    const old = this.client;
    this.client = undefined;
    if (old) {
      // A client whose start failed has no server to stop, and stopping or disposing it
      // throws (or waits): it is only forgotten. A running one is stopped, within 5 s.
      if (old.isRunning()) {
        try {
          await Promise.race([old.dispose(5000), new Promise((resolve) => setTimeout(resolve, 6000))]);
        } catch (error) {
          this.output.appendLine(`stopping the old server: ${String(error)}`);
        }
      }
    }
    await this.start();
    const restarted = this.client as LanguageClient | undefined;
    if (restarted?.state === State.Running) {
      void vscode.window.showInformationMessage("engram: server restarted");
    }
  }

  dispose(): void {
    this.statusBar.dispose();
    this.views.dispose();
    void this.client?.stop();
    this.output.dispose();
  }
}

/**
 * Answer `workspace/configuration` with only the settings a person actually set in VS Code.
 * VS Code fills in every contributed default; sending those would override the values in
 * `.engram/config.toml`, which rank below the editor's (docs/design.md section 2).
 */
function explicitSettings(params: ConfigurationParams, keys: string[]): unknown[] {
  return params.items.map((item) => {
    if (item.section !== "engram") {
      return null;
    }
    const scope = item.scopeUri ? vscode.Uri.parse(item.scopeUri) : undefined;
    const config = vscode.workspace.getConfiguration("engram", scope);
    const result: { [key: string]: unknown } = {};
    for (const key of keys) {
      const inspected = config.inspect(key);
      const value = inspected?.workspaceFolderValue ?? inspected?.workspaceValue ?? inspected?.globalValue;
      if (value !== undefined) {
        // VS Code's `gotchas.windowHours` is the server's `gotchas.window_hours`.
        result[key.replace(/([a-z0-9])([A-Z])/g, "$1_$2").toLowerCase()] = value;
      }
    }
    return result;
  });
}

/** The server's settings (`engram.gotchas.threshold`, ...): the contributed ones the client does not own. */
function serverSettingKeys(context: vscode.ExtensionContext): string[] {
  // The settings come in groups (one per section, for the settings editor's headings).
  const configuration = context.extension.packageJSON?.contributes?.configuration ?? [];
  const groups = (Array.isArray(configuration) ? configuration : [configuration]) as { properties?: object }[];
  const properties: { [key: string]: unknown } = Object.assign({}, ...groups.map((group) => group.properties ?? {}));
  return Object.keys(properties)
    .map((fullKey) => fullKey.replace(/^engram\./, ""))
    .filter((key) => !/^(server|trace|statusBar)\./.test(key));
}

/** The server's questions (rollback, delete) as modal dialogs, the way VS Code asks before it destroys. */
async function askModally(params: ShowMessageRequestParams): Promise<MessageActionItem | null> {
  const actions = (params.actions ?? []).map((action) => ({
    ...action,
    // The modal dialog has its own Cancel button: a server "Cancel" becomes that button.
    isCloseAffordance: /^(cancel|no|keep)/i.test(action.title),
  }));
  const show =
    params.type === MessageType.Error
      ? vscode.window.showErrorMessage
      : params.type === MessageType.Warning
        ? vscode.window.showWarningMessage
        : vscode.window.showInformationMessage;
  const chosen = await show(params.message, { modal: actions.length > 0 }, ...actions);
  if (!chosen) {
    return null;
  }
  const { isCloseAffordance: _closes, ...action } = chosen;
  void _closes;
  return action as MessageActionItem;
}

let engram: Engram | undefined;

export async function activate(context: vscode.ExtensionContext): Promise<Engram> {
  engram = new Engram(context);
  context.subscriptions.push(engram, vscode.workspace.registerTextDocumentContentProvider(SCHEME, engram.views));
  const current = engram;
  engram.views.reader = async (id, path) => {
    const result = await current.execute("engram.checkpoint.file", { id, path }, { quiet: true });
    return typeof result?.content === "string" ? result.content : "";
  };
  registerCommands(engram);
  engram.trees = registerViews(engram);
  engram.timeline = registerTimeline(engram);
  context.subscriptions.push(
    vscode.workspace.onDidChangeConfiguration(async (event) => {
      if (event.affectsConfiguration("engram.server.command")) {
        const choice = await vscode.window.showInformationMessage(
          "engram: the server command changed. Restart the server now?",
          "Restart",
        );
        if (choice === "Restart") {
          await engram?.restart();
        }
      }
      if (event.affectsConfiguration("engram.statusBar.enabled")) {
        engram?.statusBar.refreshSoon(0);
      }
    }),
  );
  await engram.start();
  return engram;
}

export async function deactivate(): Promise<void> {
  await engram?.client?.stop();
}
