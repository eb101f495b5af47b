// Which command line starts the engram language server.
//
// Order (docs/vscode.md): the `engram.server.command` setting; else `engram lsp` with the
// `engram` on PATH; else a workspace virtual environment's `engram`; else the server bundled in
// the extension (bundled/libs, see scripts/bundle_server.py), run as `python -m lsp_server` by
// the interpreter the Python extension has selected or, without it, the first python3 of 3.11
// or newer; else `python3 -m lsp_server` as a last try, whose failure says what to install.
import { execFileSync } from "child_process";
import * as fs from "fs";
import * as path from "path";
import * as vscode from "vscode";

export interface ServerCommand {
  command: string;
  args: string[];
  // Where the command came from, shown in the output channel and in error messages.
  origin: string;
  // Added to the server's environment (PYTHONPATH for the bundled server).
  env?: Record<string, string>;
}

const MIN_PYTHON: [number, number] = [3, 11];

const isWindows = process.platform === "win32";

function isExecutable(file: string): boolean {
  try {
    fs.accessSync(file, fs.constants.X_OK);
    return fs.statSync(file).isFile();
  } catch {
    return false;
  }
}

export function findOnPath(name: string, envPath = process.env.PATH ?? ""): string | undefined {
  const suffixes = isWindows ? [".exe", ".cmd", ""] : [""];
  for (const dir of envPath.split(path.delimiter)) {
    if (!dir) {
      continue;
    }
    for (const suffix of suffixes) {
      const candidate = path.join(dir, name + suffix);
      if (isExecutable(candidate)) {
        return candidate;
      }
    }
  }
  return undefined;
}

function venvEngram(folders: readonly vscode.WorkspaceFolder[]): string | undefined {
  const bin = isWindows ? path.join("Scripts", "engram.exe") : path.join("bin", "engram");
  for (const folder of folders) {
    if (folder.uri.scheme !== "file") {
      continue;
    }
    for (const venv of [".venv", "venv", "env"]) {
      const candidate = path.join(folder.uri.fsPath, venv, bin);
      if (isExecutable(candidate)) {
        return candidate;
      }
    }
  }
  return undefined;
}

async function selectedPython(resource: vscode.Uri | undefined): Promise<string | undefined> {
  // The Python extension's API, when it is installed; its shape is stable since 2023.
  const extension = vscode.extensions.getExtension("ms-python.python");
  if (extension) {
    try {
      const api = (extension.isActive ? extension.exports : await extension.activate()) as {
        environments?: { getActiveEnvironmentPath(resource?: vscode.Uri): { path: string } };
      };
      const active = api.environments?.getActiveEnvironmentPath(resource);
      if (active?.path && isExecutable(active.path)) {
        return active.path;
      }
    } catch {
      // Fall through to the setting: a broken Python extension must not stop engram.
    }
  }
  const configured = vscode.workspace.getConfiguration("python", resource).get<string>("defaultInterpreterPath");
  if (configured && configured !== "python" && isExecutable(configured)) {
    return configured;
  }
  return undefined;
}

/** The interpreter's "major.minor", or undefined when it does not run. */
function pythonVersion(python: string): [number, number] | undefined {
  try {
    const out = execFileSync(python, ["-c", "import sys; print('%d.%d' % sys.version_info[:2])"], {
      timeout: 5000,
      encoding: "utf8",
    });
    const [major, minor] = out.trim().split(".").map(Number);
    return Number.isInteger(major) && Number.isInteger(minor) ? [major, minor] : undefined;
  } catch {
    return undefined;
  }
}

function recentEnough(version: [number, number] | undefined): version is [number, number] {
  return version !== undefined && (version[0] > MIN_PYTHON[0] || (version[0] === MIN_PYTHON[0] && version[1] >= MIN_PYTHON[1]));
}

/** The bundled server for `python`, when the extension carries libraries for its version. */
function bundledServer(extensionPath: string, python: string, origin: string): ServerCommand | undefined {
  const version = pythonVersion(python);
  if (!recentEnough(version)) {
    return undefined;
  }
  const libs = path.join(extensionPath, "bundled", "libs");
  const common = path.join(libs, "common");
  const compiled = path.join(libs, `cp${version[0]}${version[1]}`);
  if (!fs.existsSync(path.join(common, "lsp_server")) || !fs.existsSync(compiled)) {
    return undefined;
  }
  return {
    command: python,
    // -s: the user's own site-packages must not shadow the bundled libraries.
    args: ["-s", "-m", "lsp_server"],
    origin: `the bundled server, run by ${origin} (Python ${version.join(".")})`,
    env: { PYTHONPATH: [common, compiled].join(path.delimiter), PYTHONNOUSERSITE: "1" },
  };
}

function firstSystemPython(): string | undefined {
  for (const name of ["python3", "python3.13", "python3.12", "python3.11", "python"]) {
    const found = findOnPath(name);
    if (found && recentEnough(pythonVersion(found))) {
      return found;
    }
  }
  return undefined;
}

/**
 * Why the `engram.server.command` a person wrote in their User settings is not the one in
 * effect, or undefined when it is (or they set none). The setting is machine-overridable: in a
 * remote window (code-server, SSH, containers) the Remote/Machine settings, or a workspace's,
 * take precedence, and VS Code says nothing about it.
 */
export function ignoredUserSetting(): string | undefined {
  const inspected = vscode.workspace.getConfiguration("engram").inspect<string[] | string>("server.command");
  // In a remote window `globalValue` is already the Remote settings' value; the User settings'
  // own value is `globalLocalValue` (at run time, though not in the API's types).
  const local = (inspected as { globalLocalValue?: string[] | string } | undefined)?.globalLocalValue;
  const user = local ?? inspected?.globalValue;
  const userSet = Array.isArray(user) ? user.length > 0 : typeof user === "string" && user.trim() !== "";
  if (!userSet) {
    return undefined;
  }
  const effective = vscode.workspace.getConfiguration("engram").get<string[] | string>("server.command");
  if (JSON.stringify(effective) === JSON.stringify(user)) {
    return undefined;
  }
  const where =
    inspected?.workspaceFolderValue !== undefined || inspected?.workspaceValue !== undefined
      ? "the workspace's settings"
      : "the Remote (machine) settings";
  return (
    `engram: engram.server.command in your User settings (${JSON.stringify(user)}) is not used here: ` +
    `${where} set it to ${JSON.stringify(effective)}. Set it there instead (Preferences: Open Remote Settings).`
  );
}

export async function resolveServerCommand(extensionPath: string): Promise<ServerCommand> {
  const folders = vscode.workspace.workspaceFolders ?? [];
  const configured = vscode.workspace.getConfiguration("engram").get<string[] | string>("server.command");
  const parts = Array.isArray(configured) ? configured.filter((p) => typeof p === "string" && p.length > 0) : [];
  if (typeof configured === "string" && configured.trim()) {
    // Tolerate a plain string (a path to `engram`): it is the most common hand-written value.
    return { command: configured.trim(), args: ["lsp"], origin: "setting engram.server.command" };
  }
  if (parts.length > 0) {
    return { command: parts[0], args: parts.slice(1), origin: "setting engram.server.command" };
  }
  const onPath = findOnPath("engram");
  if (onPath) {
    return { command: onPath, args: ["lsp"], origin: "engram on PATH" };
  }
  const inVenv = venvEngram(folders);
  if (inVenv) {
    return { command: inVenv, args: ["lsp"], origin: "the workspace's virtual environment" };
  }
  const selected = await selectedPython(folders[0]?.uri);
  const bundled =
    (selected && bundledServer(extensionPath, selected, "the Python extension's interpreter")) ||
    (() => {
      const system = firstSystemPython();
      return system ? bundledServer(extensionPath, system, system) : undefined;
    })();
  if (bundled) {
    return bundled;
  }
  const python = selected ?? findOnPath("python3") ?? findOnPath("python") ?? "python3";
  return { command: python, args: ["-m", "lsp_server"], origin: "python -m lsp_server" };
}
