"""Sessions: what an agent (or a person in the editor) did, turn by turn, and its summary.

A session is created by the agent hooks (with the agent's own session id) or by the editor, and
records turns (user message, assistant response, tool calls, timestamps, tokens), the files it
modified, the commands it ran and the outcome of every tool call. From those facts alone engram
renders a Markdown summary and the metrics of docs/design.md section 3; an agent may also write its own
SessionSummary (overview, decisions, outcomes, open items, tags), which is then shown instead.

Lifecycle: `status` is active, compacted (its rolling summary or quota was compacted) or closed.
By age since the last activity a session is also idle (24 h), decaying (7 d) or archived
(30 d). A session still marked active that has been silent for 30 minutes, whose last action
was not a pause, completion or abort, has crashed: `crashed()` finds them and `resolve_crash()`
applies one of the four choices continue, review, restart, discard.

Saving writes a versioned JSON document of the whole session into `saved_sessions` and a
Markdown view to `exports/sessions/<date>_<id>.md`. Loading accepts every format version this
engram knows (older ones are upgraded) and refuses a newer one with a clear error. The export
file is the beans `SessionExport` shape (session, turns, workspace, savedAt, version).

Every text is redacted before it is stored. This package is on the hook path: it imports only
the standard library and light memory_core modules.

One idea a module, each importing only the ones listed before it:
`model` (vocabulary and row helpers), `compaction`, `metrics`, `reading`, `net` (the files a
session changed in the end, reverted edits aside), `summary` (Markdown),
`document` (the saved format), `note` (the vault note), `activity` (tool calls, files, commands
and searches, written in batches), `recording` (the hook path), `crash`,
`saved` (save, load, delete, import, export), `autosave` (timer and quota). Callers use the
names re-exported here: `from memory_core import sessions; sessions.start(...)`, each module
loaded when one of its names is first used.
"""

from __future__ import annotations

import sys
import types

# Every name below is imported when first used (PEP 562): a hook recording one tool call needs
# `Activity` and the model, not the saved format, the net file changes (subprocess for git) and
# the rest, and a hook is a cold process paid on every agent event.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from memory_core.sessions.activity import Activity
    from memory_core.sessions.autosave import autosave, autosave_session, enforce_quota
    from memory_core.sessions.compaction import COMPACT_TARGET_CHARS, compact_text
    from memory_core.sessions.crash import crashed, resolve_crash
    from memory_core.sessions.document import (
        FORMAT_VERSION,
        document,
        document_json,
        parse_document,
        unpack_document,
    )
    from memory_core.sessions.metrics import metrics
    from memory_core.sessions.model import (
        ARCHIVED_SECONDS,
        CRASH_SILENCE_SECONDS,
        DECAYING_SECONDS,
        IDLE_SECONDS,
        QUIET_ACTIONS,
        RESUME_CHOICES,
        SESSION_TYPES,
        STATUSES,
        NameTakenError,
        new_session_id,
    )
    from memory_core.sessions.net import net_files_changed, reverted_files
    from memory_core.sessions.note import export_path, refresh_note, write_export
    from memory_core.sessions.reading import (
        age_state,
        agent_tokens,
        decisions_of,
        failed_commands,
        files_modified,
        files_outside,
        get,
        history,
        latest,
        list_sessions,
        open_failures,
    )
    from memory_core.sessions.recording import (
        append_rolling_summary,
        begin,
        close,
        end,
        observe_times,
        pause,
        record_command,
        record_file_modified,
        record_search,
        record_tool_call,
        record_turn,
        set_summary,
        start,
    )
    from memory_core.sessions.saved import (
        SAVED_VERSIONS_KEPT,
        delete,
        export_document,
        import_document,
        import_file,
        load,
        restore_document,
        resume,
        save,
    )
    from memory_core.sessions.summary import summary_markdown

# name -> the module of this package that defines it
_WHERE = {
    "Activity": "activity",
    "autosave": "autosave",
    "autosave_session": "autosave",
    "enforce_quota": "autosave",
    "COMPACT_TARGET_CHARS": "compaction",
    "compact_text": "compaction",
    "crashed": "crash",
    "resolve_crash": "crash",
    "FORMAT_VERSION": "document",
    "document": "document",
    "document_json": "document",
    "parse_document": "document",
    "unpack_document": "document",
    "agent_tokens": "reading",
    "metrics": "metrics",
    "ARCHIVED_SECONDS": "model",
    "CRASH_SILENCE_SECONDS": "model",
    "DECAYING_SECONDS": "model",
    "IDLE_SECONDS": "model",
    "QUIET_ACTIONS": "model",
    "RESUME_CHOICES": "model",
    "SESSION_TYPES": "model",
    "STATUSES": "model",
    "NameTakenError": "model",
    "new_session_id": "model",
    "net_files_changed": "net",
    "reverted_files": "net",
    "export_path": "note",
    "refresh_note": "note",
    "write_export": "note",
    "age_state": "reading",
    "decisions_of": "reading",
    "failed_commands": "reading",
    "files_modified": "reading",
    "files_outside": "reading",
    "get": "reading",
    "history": "reading",
    "latest": "reading",
    "list_sessions": "reading",
    "open_failures": "reading",
    "append_rolling_summary": "recording",
    "begin": "recording",
    "close": "recording",
    "end": "recording",
    "observe_times": "recording",
    "pause": "recording",
    "record_command": "recording",
    "record_file_modified": "recording",
    "record_search": "recording",
    "record_tool_call": "recording",
    "record_turn": "recording",
    "set_summary": "recording",
    "start": "recording",
    "SAVED_VERSIONS_KEPT": "saved",
    "delete": "saved",
    "export_document": "saved",
    "import_document": "saved",
    "import_file": "saved",
    "load": "saved",
    "restore_document": "saved",
    "resume": "saved",
    "save": "saved",
    "summary_markdown": "summary",
}


class _Package(types.ModuleType):
    """This package, keeping a function where the import system would put a module.

    Once a submodule is loaded, Python sets it as an attribute of its package; three of them
    define the function they are named after (`metrics`, `document`, `autosave`), and
    `sessions.metrics(...)` means the function, as it did when everything was imported at once.
    """

    def __setattr__(self, name: str, value: object) -> None:
        if isinstance(value, types.ModuleType) and _WHERE.get(name) == name:
            value = getattr(value, name)
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package


def __getattr__(name: str) -> object:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(__import__(f"{__name__}.{module}", fromlist=[name]), name)
    globals()[name] = value  # once: later lookups find it without coming here
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_WHERE])


__all__ = [
    "ARCHIVED_SECONDS",
    "COMPACT_TARGET_CHARS",
    "CRASH_SILENCE_SECONDS",
    "DECAYING_SECONDS",
    "FORMAT_VERSION",
    "IDLE_SECONDS",
    "QUIET_ACTIONS",
    "RESUME_CHOICES",
    "SAVED_VERSIONS_KEPT",
    "SESSION_TYPES",
    "STATUSES",
    "Activity",
    "NameTakenError",
    "age_state",
    "agent_tokens",
    "append_rolling_summary",
    "autosave",
    "autosave_session",
    "begin",
    "close",
    "compact_text",
    "crashed",
    "decisions_of",
    "delete",
    "document",
    "document_json",
    "end",
    "enforce_quota",
    "export_document",
    "export_path",
    "failed_commands",
    "files_modified",
    "files_outside",
    "get",
    "history",
    "import_document",
    "import_file",
    "latest",
    "list_sessions",
    "load",
    "metrics",
    "net_files_changed",
    "new_session_id",
    "observe_times",
    "open_failures",
    "parse_document",
    "pause",
    "record_command",
    "record_file_modified",
    "record_search",
    "record_tool_call",
    "record_turn",
    "refresh_note",
    "resolve_crash",
    "restore_document",
    "resume",
    "reverted_files",
    "save",
    "set_summary",
    "start",
    "summary_markdown",
    "unpack_document",
    "write_export",
]
