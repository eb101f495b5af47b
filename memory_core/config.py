"""Settings, layered lowest to highest as docs/design.md section 2 says:

defaults < `[tool.engram]` in pyproject.toml < `.engram/config.toml` < the editor's settings
(`workspace/configuration`, section `engram`) < command-line flags.

Every setting is declared once in `SETTINGS` with its type, default and description (the VS Code
extension's contributed settings mirror this table). A value of the wrong type or out of range
is reported as a problem and its default used: a bad setting never stops engram.

Reading uses the standard library's tomllib (fast, for hooks); writing uses tomlkit so that the
comments and layout people put in `config.toml` survive a machine edit.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from pathlib import Path

from memory_core.workspace import STORE_DIRNAME

# Every hook reads its settings: `dataclasses` (inspect, ast, dis: more than Python's own start),
# `typing` and `tomllib` (when no file is there to read) would be loaded for nothing.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

CONFIG_NAME = "config.toml"


class Setting:
    """One setting as declared: its key, type, default, description and bounds."""

    __slots__ = ("choices", "default", "description", "key", "minimum", "type")

    def __init__(
        self,
        key: str,
        type: type,
        default: Any,
        description: str,
        minimum: float | None = None,
        choices: tuple[str, ...] | None = None,
    ) -> None:
        self.key = key
        self.type = type
        self.default = default
        self.description = description
        self.minimum = minimum
        self.choices = choices

    def __repr__(self) -> str:
        return f"Setting({self.key!r}, {self.type.__name__}, default={self.default!r})"


MB = 1024 * 1024

SETTINGS: dict[str, Setting] = {
    s.key: s
    for s in [
        Setting(
            "gotchas.threshold",
            int,
            3,
            "Occurrences of the same error that make a candidate gotcha.",
            1,
        ),
        Setting(
            "gotchas.window_hours",
            float,
            24.0,
            "Sliding window in which repeated errors are counted.",
            0.01,
        ),
        Setting(
            "gotchas.candidate_decay_days",
            float,
            30.0,
            "Days after which an unused auto-captured gotcha leaves the editor.",
            0,
        ),
        Setting(
            "gotchas.max_file_bytes",
            int,
            2 * MB,
            "Files larger than this are not scanned for gotcha patterns.",
            0,
        ),
        Setting(
            "gotchas.regex_timeout_ms",
            int,
            50,
            "Time budget for one gotcha pattern over one file.",
            1,
        ),
        Setting("gotchas.context_limit", int, 5, "Gotchas returned by `engram gotcha context`.", 1),
        Setting(
            "drift.window_minutes",
            float,
            30.0,
            "Edits by two actors on the same lines within this window are drift.",
            0,
        ),
        Setting("snapshots.max_count", int, 50, "Context snapshots kept.", 1),
        Setting("snapshots.max_age_days", float, 7.0, "Days a context snapshot is kept.", 0),
        Setting(
            "timeline.max_entries", int, 5000, "Entries kept in the timeline and event log.", 1
        ),
        Setting(
            "timeline.max_age_days", float, 90.0, "Days timeline entries and events are kept.", 0
        ),
        Setting(
            "checkpoints.max_file_bytes",
            int,
            5 * MB,
            "Files larger than this are left out of checkpoints.",
            0,
        ),
        Setting(
            "checkpoints.store_cap_bytes",
            int,
            1024 * MB,
            "Space checkpoint blobs may take in the store.",
            0,
        ),
        Setting("checkpoints.max_count", int, 100, "Checkpoints kept.", 1),
        Setting("checkpoints.max_age_days", float, 30.0, "Days a checkpoint is kept.", 0),
        Setting(
            "checkpoints.burst_files",
            int,
            10,
            "A burst of this many changed files makes an automatic checkpoint (0: off).",
            0,
        ),
        Setting(
            "checkpoints.burst_seconds",
            float,
            5.0,
            "Window in which changed files count as one burst.",
            0,
        ),
        Setting(
            "checkpoints.every_n_turns",
            int,
            20,
            "Make a checkpoint every N agent turns (0: off).",
            0,
        ),
        Setting(
            "checkpoints.include_secret_files",
            bool,
            False,
            "Also capture files that usually hold secrets (.env*, *.pem, *.key, id_rsa*, ...).",
        ),
        Setting(
            "checkpoints.watchman",
            bool,
            True,
            "Ask watchman, when it is installed, which files changed since the last checkpoint.",
        ),
        Setting(
            "sessions.autosave_minutes",
            float,
            5.0,
            "Auto-save the active session this often (0: off).",
            0,
        ),
        Setting(
            "sessions.quota_bytes",
            int,
            10 * MB,
            "Per-session quota; compaction at 80 %, forced at 95 %.",
            0,
        ),
        Setting(
            "sessions.summary_compact_chars",
            int,
            4000,
            "Rolling summaries over this size are compacted.",
            100,
        ),
        Setting(
            "sessions.vault_dir",
            str,
            "",
            "Folder for session notes (sessions/<date>_<id>.md) and transcript backups, e.g. an "
            "Obsidian vault; relative to the workspace root. Empty: .engram/exports.",
        ),
        Setting(
            "sessions.backup_transcripts",
            bool,
            True,
            "Back up agent transcripts, redacted and compressed, at session end (within the quota).",
        ),
        Setting(
            "agents.context_token_budget",
            int,
            2000,
            "Tokens of memory injected at session start.",
            0,
        ),
        Setting(
            "agents.hook_wait_seconds",
            float,
            2.0,
            "How long a hook waits for a store another process is writing; then it keeps its "
            "event in a spool that the next hook folds in.",
            0,
        ),
        Setting(
            "agents.digest_interval_minutes",
            float,
            15.0,
            "Write a digest this often while a session is active (0: off).",
            0,
        ),
        Setting(
            "memory.recovery_days",
            float,
            30.0,
            "Days a deleted item can be undeleted before purge.",
            0,
        ),
        Setting(
            "watch.exclude",
            list,
            [],
            "Extra gitignore-style patterns engram never records or checkpoints.",
        ),
        Setting(
            "watch.editor_files",
            list,
            [],
            "More editors' temporary files (gitignore-style, beside the built-in list) that "
            "engram never records, checkpoints, restores or removes.",
        ),
        Setting(
            "log.level",
            str,
            "info",
            "Log level of the language server.",
            choices=("debug", "info", "warning", "error"),
        ),
    ]
}

# Keys the editor sends that belong to the client, not the server (engram.server.command, ...).
_CLIENT_SECTIONS = ("server", "trace")


class Settings:
    """Validated settings: `settings["gotchas.threshold"]`, plus the problems found."""

    __slots__ = ("problems", "values")

    def __init__(
        self, values: dict[str, Any] | None = None, problems: list[str] | None = None
    ) -> None:
        self.values = {k: s.default for k, s in SETTINGS.items()} if values is None else values
        self.problems = [] if problems is None else problems

    def __repr__(self) -> str:
        return f"Settings(values={self.values!r}, problems={self.problems!r})"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Settings):
            return NotImplemented
        return self.values == other.values and self.problems == other.problems

    __hash__ = None  # type: ignore[assignment]  # mutable, like the dataclass it was

    def __getitem__(self, key: str) -> Any:
        return self.values[key]

    def as_dict(self) -> dict[str, Any]:
        return dict(self.values)


def _flatten(table: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    flat: dict[str, Any] = {}
    for key, value in table.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping) and name not in SETTINGS:
            flat.update(_flatten(value, f"{name}."))
        else:
            flat[name] = value
    return flat


def _coerce(setting: Setting, value: Any) -> Any:
    """The value converted to the setting's type, or ValueError saying what is wrong."""
    expected = setting.type
    if expected is bool:
        if isinstance(value, bool):
            return value
        raise ValueError("expected true or false")
    if expected in (int, float):
        # bool is an int in Python but never a number a person meant.
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ValueError(f"expected a number, got {type(value).__name__} {value!r}")
        if expected is int and isinstance(value, float) and not value.is_integer():
            raise ValueError(f"expected a whole number, got {value!r}")
        number = expected(value)
        if setting.minimum is not None and number < setting.minimum:
            raise ValueError(f"must be at least {setting.minimum:g}, got {value!r}")
        return number
    if expected is str:
        if not isinstance(value, str):
            raise ValueError(f"expected text, got {type(value).__name__} {value!r}")
        if setting.choices and value not in setting.choices:
            raise ValueError(f"must be one of {', '.join(setting.choices)}, got {value!r}")
        return value
    if expected is list:
        if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
            raise ValueError(f"expected a list of strings, got {value!r}")
        return list(value)
    raise ValueError(f"unsupported setting type {expected!r}")


def apply_layer(settings: Settings, layer: Mapping[str, Any], origin: str) -> None:
    """Overlay one layer of raw values onto `settings`, reporting what is wrong."""
    for key, value in _flatten(layer).items():
        setting = SETTINGS.get(key)
        if setting is None:
            if key.split(".", 1)[0] not in _CLIENT_SECTIONS:
                settings.problems.append(f"{origin}: unknown setting {key!r} ignored")
            continue
        if value is None:
            continue
        try:
            settings.values[key] = _coerce(setting, value)
        except ValueError as exc:
            settings.problems.append(
                f"{origin}: setting {key!r} {exc}; using the default {setting.default!r}"
            )
            settings.values[key] = setting.default


def _read_toml(path: Path, settings: Settings, *, needs: bytes = b"") -> dict[str, Any]:
    """The file's tables; {} when it is missing, or (`needs`) cannot hold a table of ours.

    A project's pyproject.toml names `engram` somewhere when it has a `[tool.engram]` table
    (written `[tool.engram]`, `tool.engram.x = ...` or `[tool]` then `engram = {...}`): the
    others are not parsed at all, which spares every hook tomllib and the parse.
    """
    try:
        with path.open("rb") as handle:
            data = handle.read()
    except FileNotFoundError:
        return {}
    except OSError as exc:
        settings.problems.append(f"{path}: cannot read ({exc}); its settings are ignored")
        return {}
    if needs not in data or not data.strip():
        return {}
    import tomllib

    try:
        return tomllib.loads(data.decode("utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        settings.problems.append(f"{path}: cannot read ({exc}); its settings are ignored")
        return {}


def load(
    root: Path,
    *,
    editor: Mapping[str, Any] | None = None,
    overrides: Mapping[str, Any] | None = None,
) -> Settings:
    """The settings for the workspace at `root`, every layer applied in order."""
    settings = Settings()
    pyproject = _read_toml(root / "pyproject.toml", settings, needs=b"engram")
    tool_table = (
        pyproject.get("tool", {}).get("engram") if isinstance(pyproject.get("tool"), dict) else None
    )
    if isinstance(tool_table, dict):
        apply_layer(settings, tool_table, "pyproject.toml [tool.engram]")
    config_path = root / STORE_DIRNAME / CONFIG_NAME
    apply_layer(settings, _read_toml(config_path, settings), f"{STORE_DIRNAME}/{CONFIG_NAME}")
    if editor:
        apply_layer(settings, editor, "editor settings")
    if overrides:
        apply_layer(settings, overrides, "command line")
    return settings


def set_value(root: Path, key: str, value: Any) -> None:
    """Write one setting into `.engram/config.toml`, keeping the file's comments and layout."""
    import tomlkit

    from memory_core.errors import UsageError
    from memory_core.store import write_private_file

    setting = SETTINGS.get(key)
    if setting is None:
        raise UsageError(f"unknown setting {key!r}", hint="see `engram status --json` for the list")
    try:
        value = _coerce(setting, value)
    except ValueError as exc:
        raise UsageError(f"setting {key!r} {exc}") from None
    path = root / STORE_DIRNAME / CONFIG_NAME
    document = (
        tomlkit.parse(path.read_text(encoding="utf-8")) if path.exists() else tomlkit.document()
    )
    *parents, name = key.split(".")
    table: Any = document
    for part in parents:
        if part not in table:
            table[part] = tomlkit.table()
        table = table[part]
    table[name] = value
    write_private_file(path, tomlkit.dumps(document))


def remove_value(root: Path, key: str) -> None:
    """Remove one setting from `.engram/config.toml` (its default applies again)."""
    import tomlkit

    from memory_core.store import write_private_file

    path = root / STORE_DIRNAME / CONFIG_NAME
    if not path.exists():
        return
    document = tomlkit.parse(path.read_text(encoding="utf-8"))
    *parents, name = key.split(".")
    table: Any = document
    with contextlib.suppress(KeyError):
        for part in parents:
            table = table[part]
        del table[name]
    write_private_file(path, tomlkit.dumps(document))
