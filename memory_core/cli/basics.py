"""`engram init`, `engram status`, `engram config` and `engram lsp`."""

from __future__ import annotations

import argparse
import importlib
from typing import Any

from memory_core import config
from memory_core.cli.context import Context
from memory_core.status import status_facts


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    init = sub.add_parser("init", parents=[common], help="create the store for this workspace")
    init.set_defaults(handler=run_init)

    status = sub.add_parser(
        "status", parents=[common], help="where the store is, what it holds, its limits"
    )
    status.set_defaults(handler=run_status)

    cfg = sub.add_parser(
        "config", parents=[common], help="show or change settings in .engram/config.toml"
    )
    cfg_sub = cfg.add_subparsers(dest="config_command", metavar="ACTION")
    cfg_sub.required = True
    cfg_list = cfg_sub.add_parser(
        "list", parents=[common], help="every setting, its value and origin"
    )
    cfg_list.set_defaults(handler=run_config_list)
    cfg_set = cfg_sub.add_parser(
        "set", parents=[common], help='set KEY to VALUE (TOML syntax: 5, true, "text")'
    )
    cfg_set.add_argument("key")
    cfg_set.add_argument("value")
    cfg_set.set_defaults(handler=run_config_set)
    cfg_unset = cfg_sub.add_parser(
        "unset", parents=[common], help="remove KEY (its default applies)"
    )
    cfg_unset.add_argument("key")
    cfg_unset.set_defaults(handler=run_config_unset)

    lsp = sub.add_parser("lsp", help="run the language server (stdio unless --tcp)")
    lsp.add_argument("--tcp", action="store_true", help="listen on TCP instead of stdio")
    lsp.add_argument("--host", default="127.0.0.1", help="TCP host (loopback only by default)")
    lsp.add_argument("--port", type=int, default=2087, help="TCP port")
    lsp.set_defaults(handler=run_lsp)


def run_init(ctx: Context) -> int:
    existed = (ctx.root / ".engram" / "engram.db").exists()
    store = ctx.store(create=True)
    result = {
        "root": str(ctx.root),
        "store": str(store.dir),
        "schema_version": store.schema_version,
        "created": not existed,
    }
    verb = "Initialised" if not existed else "Already initialised:"
    ctx.emit(result, f"{verb} engram store in {store.dir}")
    return 0


def _human_size(size: float) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if size < 1024 or unit == "GB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{size:.1f} GB"


def run_status(ctx: Context) -> int:
    store = ctx.store(create=False)
    facts = status_facts(store, ctx.settings)

    def human() -> str:
        lines = [
            f"root:    {facts['root']}",
            f"store:   {facts['store']}",
            f"schema:  version {facts['schema_version']} (latest known {facts['schema_latest']})",
            f"size:    {_human_size(facts['size_bytes'])}",
        ]
        # Only what the store holds: a new store has dozens of empty tables nobody needs to read.
        held = {table: count for table, count in facts["counts"].items() if count}
        lines.append("records:" if held else "records: none yet")
        lines += [f"  {table:<22} {count:>8}" for table, count in held.items()]
        lines.append("limits:")
        for rule in facts["limits"]["retention"]:
            lines.append(
                f"  {rule['table']:<22} "
                + (f"at most {rule['max_rows']} rows, " if rule["max_rows"] is not None else "")
                + f"{rule['max_age_days']:g} days"
            )
        lines.append(
            f"  session quota          {_human_size(facts['limits']['session_quota_bytes'])}"
        )
        for use in facts["limits"]["session_quota_use"][:5]:  # the fullest sessions
            lines.append(
                f"    {use['session_id'][:24]:<24} {_human_size(use['used_bytes'])} ({use['percent']:g} %)"
            )
        lines.append(
            f"  checkpoint store cap   {_human_size(facts['limits']['checkpoint_store_cap_bytes'])}"
            f" ({_human_size(facts['limits']['checkpoints_bytes'])} used)"
        )
        return "\n".join(lines)

    ctx.emit(facts, human)
    return 0


def run_config_list(ctx: Context) -> int:
    settings = ctx.settings
    rows = [
        {
            "key": key,
            "value": settings[key],
            "default": spec.default,
            "description": spec.description,
        }
        for key, spec in config.SETTINGS.items()
    ]
    ctx.emit(
        rows,
        lambda: "\n".join(
            f"{row['key']:<32} {row['value']!r:<14} {row['description']}" for row in rows
        ),
    )
    return 0


def _parse_value(text: str) -> Any:
    import tomllib

    from memory_core.errors import UsageError

    try:
        return tomllib.loads(f"value = {text}")["value"]
    except tomllib.TOMLDecodeError:
        # A bare word is meant as text: `engram config set log.level debug`.
        if text and all(ch.isalnum() or ch in "-_./" for ch in text):
            return text
        raise UsageError(
            f"cannot read {text!r} as a TOML value", hint="quote text: '\"text\"'"
        ) from None


def run_config_set(ctx: Context) -> int:
    ctx.store(create=True)
    config.set_value(ctx.root, ctx.args.key, _parse_value(ctx.args.value))
    ctx.emit(
        {"key": ctx.args.key, "value": config.load(ctx.root)[ctx.args.key]}, f"{ctx.args.key} set"
    )
    return 0


def run_config_unset(ctx: Context) -> int:
    config.remove_value(ctx.root, ctx.args.key)
    ctx.emit({"key": ctx.args.key, "removed": True}, f"{ctx.args.key} removed")
    return 0


def run_lsp(ctx: Context) -> int:
    # Imported by name: memory_core never imports the LSP stack, the CLI only dispatches to it.
    server_main = importlib.import_module("lsp_server.main")
    server_main.run(tcp=ctx.args.tcp, host=ctx.args.host, port=ctx.args.port)
    return 0
