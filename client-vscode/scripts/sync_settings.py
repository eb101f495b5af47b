"""Rewrite the extension's contributed settings from memory_core.config.SETTINGS.

The server's settings table is the single source of truth; the extension mirrors it under
`engram.*` so that VS Code's settings editor shows every setting with its type, default and
description. Run after adding a setting:

    .venv/bin/python client-vscode/scripts/sync_settings.py          # rewrite package.json
    .venv/bin/python client-vscode/scripts/sync_settings.py --check  # exit 1 when out of date
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

PACKAGE_JSON = Path(__file__).resolve().parents[1] / "package.json"

# Settings that belong to the client, not the server (memory_core.config ignores these sections).
CLIENT_PROPERTIES: dict[str, dict[str, Any]] = {
    "engram.server.command": {
        "type": "array",
        "items": {"type": "string"},
        "default": [],
        "scope": "machine-overridable",
        "markdownDescription": (
            "Command line that starts the language server, e.g. `[\"/opt/engram/bin/engram\", \"lsp\"]`. "
            "Empty: `engram lsp` with the `engram` on `PATH`, else the workspace's `.venv/bin/engram`, "
            "else `python -m lsp_server` with the selected Python interpreter."
        ),
    },
    "engram.statusBar.enabled": {
        "type": "boolean",
        "default": True,
        "scope": "window",
        "description": "Show the active session, its turns and the open gotchas in the status bar.",
    },
    "engram.trace.server": {
        "type": "string",
        "enum": ["off", "messages", "verbose"],
        "default": "off",
        "scope": "window",
        "description": "Trace the messages between VS Code and the engram server in the output channel.",
    },
}


def server_properties() -> dict[str, dict[str, Any]]:
    from memory_core.config import SETTINGS

    properties: dict[str, dict[str, Any]] = {}
    for key, setting in SETTINGS.items():
        prop: dict[str, Any] = {}
        if setting.type is bool:
            prop["type"] = "boolean"
        elif setting.type is int:
            prop["type"] = "integer"
        elif setting.type is float:
            prop["type"] = "number"
        elif setting.type is list:
            prop["type"] = "array"
            prop["items"] = {"type": "string"}
        else:
            prop["type"] = "string"
        prop["default"] = setting.default
        if setting.minimum is not None:
            prop["minimum"] = setting.minimum
        if setting.choices:
            prop["enum"] = list(setting.choices)
        prop["scope"] = "resource"
        prop["markdownDescription"] = setting.description
        properties[f"engram.{key}"] = prop
    return properties


def expected_properties() -> dict[str, dict[str, Any]]:
    return {**CLIENT_PROPERTIES, **server_properties()}


def main(argv: list[str]) -> int:
    manifest = json.loads(PACKAGE_JSON.read_text(encoding="utf-8"))
    configuration = manifest["contributes"]["configuration"]
    wanted = expected_properties()
    if "--check" in argv:
        if configuration.get("properties") != wanted:
            print(
                "client-vscode/package.json settings differ from memory_core.config.SETTINGS; "
                "run .venv/bin/python client-vscode/scripts/sync_settings.py",
                file=sys.stderr,
            )
            return 1
        return 0
    configuration["properties"] = wanted
    PACKAGE_JSON.write_text(json.dumps(manifest, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"{len(wanted)} settings written to {PACKAGE_JSON}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
