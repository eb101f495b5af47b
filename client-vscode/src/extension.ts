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
import { resolveServerCommand } from "./serverCommand";
import { StatusBar } from "./statusBar";

export class Engram implements vscode.Disposable {
  client: LanguageClient | undefined;
  readonly output = vscode.window.createOutputChannel("engram");
  readonly views = new ResultViews();
  readonly statusBar = new StatusBar(this);
  private starting: Promise<void> | undefined;

  constructor(readonly context: vscode.ExtensionContext) {}

  /** Run one server command: one JSON object in, one JSON object out (DESIGN section 5). */
  async execute(command: string, args: JsonObject = {}): Promise<JsonObject | undefined> {
    const client = await this.ready();
    const folders = vscode.workspace.workspaceFolders ?? [];
    if (folders.length > 1 && args.workspace === undefined) {
      // Multi-root: act on the folder of the active editor (one store per folder).
      const active = vscode.window.activeTextEditor?.document.uri;
      const folder = (active && vscode.workspace.getWorkspaceFolder(active)) ?? folders[0];
      args = { ...args, workspace: folder.uri.toString() };
    }
    const result = await client.sendRequest(ExecuteCommandRequest.type, { command, arguments: [args] });
    this.statusBar.refreshSoon();
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
      },
    };
    const client = new LanguageClient("engram", "engram", serverOptions, clientOptions);
    this.client = client;
    try {
      await client.start();
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      this.output.appendLine(`engram server failed to start: ${message}`);
      const choice = await vscode.window.showErrorMessage(
        `engram: the language server did not start (${server.command}, from ${server.origin}). ` +
          "Install Python 3.11 or newer (the extension brings the server), or `pipx install engram-lsp`, or set engram.server.command.",
        "Open Settings",
        "Show Output",
      );
      if (choice === "Open Settings") {
        void vscode.commands.executeCommand("workbench.action.openSettings", "engram.server.command");
      } else if (choice === "Show Output") {
        this.output.show();
      }
      this.statusBar.showStopped();
      return;
    }
    // Registered after start so that it replaces the library's default, non-modal handler.
    client.onRequest(ShowMessageRequest.type, (params) => askModally(params));
    this.statusBar.refreshSoon(0);
  }

  async restart(): Promise<void> {
    const old = this.client;
    this.client = undefined;
    if (old) {
      try {
        await old.stop(5000);
      } catch (error) {
        this.output.appendLine(`stopping the old server: ${String(error)}`);
      }
      await old.dispose();
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
 * `.engram/config.toml`, which rank below the editor's (DESIGN section 2).
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
        result[key] = value;
      }
    }
    return result;
  });
}

/** The server's settings (`engram.gotchas.threshold`, ...): the contributed ones the client does not own. */
function serverSettingKeys(context: vscode.ExtensionContext): string[] {
  const properties = (context.extension.packageJSON?.contributes?.configuration?.properties ?? {}) as {
    [key: string]: unknown;
  };
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
  registerCommands(engram);
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
