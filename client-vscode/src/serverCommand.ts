// Which command line starts the engram language server.
//
// Order (issue 8, docs/vscode.md): the `engram.server.command` setting; else `engram lsp` with
// the `engram` on PATH; else a workspace virtual environment's `engram`; else
// `python -m lsp_server` with the interpreter the Python extension has selected (or
// `python.defaultInterpreterPath`, or `python3`).
import * as fs from "fs";
import * as path from "path";
import * as vscode from "vscode";

export interface ServerCommand {
  command: string;
  args: string[];
  // Where the command came from, shown in the output channel and in error messages.
  origin: string;
}

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

export async function resolveServerCommand(): Promise<ServerCommand> {
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
  const python = (await selectedPython(folders[0]?.uri)) ?? findOnPath("python3") ?? findOnPath("python") ?? "python3";
  return { command: python, args: ["-m", "lsp_server"], origin: "python -m lsp_server" };
}
