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


# Headings of the settings editor's groups ("engram › Checkpoints"), by section of the key.
SECTION_TITLES = {
    "server": "Language Server",
    "statusBar": "Status Bar",
    "trace": "Language Server",
    "gotchas": "Gotchas",
    "drift": "Drift",
    "snapshots": "Context Snapshots",
    "timeline": "Timeline",
    "checkpoints": "Checkpoints",
    "sessions": "Sessions",
    "memory": "Memory",
    "context": "Session-Start Context",
    "log": "Logging",
    "agents": "Agent Hooks",
    "watch": "File Watching",
}
_UNITS = {
    "_bytes": "bytes",
    "_days": "days",
    "_hours": "hours",
    "_minutes": "minutes",
    "_seconds": "seconds",
    "_ms": "milliseconds",
}


def vscode_key(server_key: str) -> str:
    """`gotchas.window_hours` -> `gotchas.windowHours`: VS Code titles a setting from its
    key's last part ("Window Hours"); an underscore would show as "Window_hours". The
    extension turns the names back when it answers workspace/configuration."""
    section, _, name = server_key.partition(".")
    head, *rest = name.split("_")
    return f"{section}.{head}{''.join(part[:1].upper() + part[1:] for part in rest)}"


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, list):
        return "[" + ", ".join(json.dumps(v) for v in value) + "]"
    return repr(value)


def server_properties() -> dict[str, dict[str, Any]]:
    from memory_core.config import SETTINGS

    properties: dict[str, dict[str, Any]] = {}
    for order, (key, setting) in enumerate(SETTINGS.items()):
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
        unit = next((u for suffix, u in _UNITS.items() if key.endswith(suffix)), None)
        section, _, name = key.partition(".")
        prop["markdownDescription"] = (
            setting.description
            + (f" In {unit}." if unit and unit not in setting.description else "")
            + f"\n\nThe same in `.engram/config.toml`: `[{section}]` `{name} = "
            + f"{_toml_value(setting.default)}`."
        )
        prop["order"] = order
        properties[f"engram.{vscode_key(key)}"] = prop
    return properties


def expected_properties() -> dict[str, dict[str, Any]]:
    return {**CLIENT_PROPERTIES, **server_properties()}


def expected_configuration() -> list[dict[str, Any]]:
    """The settings in groups, one per section, in the order of memory_core's table."""
    groups: dict[str, dict[str, Any]] = {}
    for key, prop in expected_properties().items():
        section = key.split(".")[1]
        title = SECTION_TITLES.get(section, section[:1].upper() + section[1:])
        group = groups.setdefault(title, {"title": title, "properties": {}})
        group["properties"][key] = prop
    return list(groups.values())


def main(argv: list[str]) -> int:
    manifest = json.loads(PACKAGE_JSON.read_text(encoding="utf-8"))
    wanted = expected_configuration()
    if "--check" in argv:
        if manifest["contributes"]["configuration"] != wanted:
            print(
                "client-vscode/package.json settings differ from memory_core.config.SETTINGS; "
                "run .venv/bin/python client-vscode/scripts/sync_settings.py",
                file=sys.stderr,
            )
            return 1
        return 0
    manifest["contributes"]["configuration"] = wanted
    PACKAGE_JSON.write_text(json.dumps(manifest, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    count = sum(len(group["properties"]) for group in wanted)
    print(f"{count} settings in {len(wanted)} groups written to {PACKAGE_JSON}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
