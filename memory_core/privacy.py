"""Export, import and anonymize: the user's data leaves the store only as they ask.

An export is one document: `{"format": "engram-export", "format_version": 1, ..., "tables":
{name: [rows]}}` holding every record of every area (memories, gotchas, sessions and their
turns, digests, events, deletion records...), or only one session and what cites it. JSON and
YAML exports import back (`import_data`); Markdown is for reading. Left out: the trash
(deleted rows), derived indexes, and checkpoint file contents and saved-session copies
(workspace file bodies, large, and rebuilt from the rest).

Anonymizing replaces user names, e-mail addresses, home paths and project names with stable
placeholders (`USER_1`, `user1@example.invalid`, `/home/USER_1`, `PROJECT_1`): the same
original always gets the same placeholder, and ids are never touched, so relations between
records survive. Every text is redacted again on the way out and on the way in.
"""

from __future__ import annotations

import base64
import getpass
import json
import os
import re
import sqlite3
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from memory_core import clock
from memory_core.errors import UsageError
from memory_core.redact import redact_obj
from memory_core.store import Store

FORMAT = "engram-export"
FORMAT_VERSION = 1

# Not exported: the trash, derived indexes, and bulky copies of workspace files.
EXCLUDED_TABLES = frozenset(
    {
        "deleted_rows",
        "search_docs",
        "search_sources",
        "checkpoint_blobs",
        "checkpoint_trees",
        "checkpoint_objects",
        "checkpoint_packs",
        "saved_sessions",
        "store_meta",
    }
)


def export_data(
    store: Store, *, session_id: str | None = None, now: float | None = None
) -> dict[str, Any]:
    """Everything the store holds (or one session and what cites it) as one JSON-able value."""
    from memory_core import lifecycle

    now = clock.now() if now is None else now
    if session_id is not None:
        from memory_core.sessions.model import restore_archived

        # One session's export is for reading: its archived turns come back first.
        restore_archived(store, session_id)
    tables: dict[str, list[dict[str, Any]]] = {}
    with store.transaction() as db:
        live = lifecycle.live_tables(db)
        if session_id is None:
            for name in sorted(live):
                if name in EXCLUDED_TABLES:
                    continue
                rows = db.execute(f'SELECT * FROM "{name}"').fetchall()
                tables[name] = [_encode(dict(row)) for row in rows]
        else:
            if not _session_exists(db, live, session_id):
                from memory_core.errors import NotFoundError

                raise NotFoundError(f"no session {session_id!r} and nothing that cites it")
            for table, values in lifecycle.session_rows(db, session_id):
                if table in EXCLUDED_TABLES:
                    continue
                tables.setdefault(table, []).append(_encode(values))
    data = {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "schema_version": store.schema_version,
        "exported_at": clock.iso(now),
        "root": str(store.root),
        "session": session_id,
        "tables": tables,
    }
    redacted: dict[str, Any] = redact_obj(data)
    return redacted


def _session_exists(db: sqlite3.Connection, live: Mapping[str, Any], session_id: str) -> bool:
    for table, columns in live.items():
        key = "id" if table == "sessions" else "session_id" if "session_id" in columns else None
        if (
            key
            and db.execute(
                f'SELECT 1 FROM "{table}" WHERE "{key}" = ? LIMIT 1', (session_id,)
            ).fetchone()
        ):
            return True
    return False


# -- formats ---------------------------------------------------------------------------------


def undelete(store: Store, ident: str, *, now: float | None = None) -> dict[str, Any]:
    """`engram undelete`: put back what a deletion removed, sessions with their Markdown notes.

    `lifecycle.undelete` restores the rows; a session's note (removed with it) is a view that
    the sessions module writes, so it is rewritten here, above both.
    """
    from memory_core import lifecycle, sessions

    record = lifecycle.undelete(store, ident, now=now)
    for session_id in record["sessions"]:
        sessions.write_export(store, session_id, now=now)
    return record


def render(data: Mapping[str, Any], fmt: str) -> str:
    if fmt == "json":
        return json.dumps(data, indent=2, ensure_ascii=False) + "\n"
    if fmt == "yaml":
        import yaml  # type: ignore[import-untyped]

        text: str = yaml.safe_dump(dict(data), sort_keys=False, allow_unicode=True, width=100)
        return text
    if fmt == "md":
        return _markdown(data)
    raise UsageError(f"unknown format {fmt!r}", hint="json, yaml or md")


def parse(text: str, fmt: str) -> dict[str, Any]:
    """An export read back from JSON or YAML; UsageError for anything that is not one."""
    try:
        if fmt == "yaml":
            data = _load_yaml_without_aliases(text)
        elif fmt == "json":
            data = json.loads(text)
        else:
            raise UsageError(f"cannot import {fmt!r}", hint="import reads json or yaml exports")
    except UsageError:
        raise
    except (ValueError, ImportError) as exc:
        raise UsageError(f"the file is not valid {fmt}: {exc}") from None
    except Exception as exc:  # yaml.YAMLError and friends
        raise UsageError(f"the file is not valid {fmt}: {str(exc).splitlines()[0]}") from None
    if (
        not isinstance(data, dict)
        or data.get("format") != FORMAT
        or not isinstance(data.get("tables"), dict)
    ):
        raise UsageError(
            "this is not an engram export", hint="make one with `engram export --format json`"
        )
    version = data.get("format_version")
    if version != FORMAT_VERSION:
        raise UsageError(
            f"export format version {version!r} is not one this engram reads ({FORMAT_VERSION})",
            hint="import it with the engram that wrote it, or upgrade",
        )
    return data


def _load_yaml_without_aliases(text: str) -> Any:
    """YAML as engram writes it: no aliases (its exports never repeat an object). An alias is
    refused before anything is built: nine of them nesting nine deep ("billion laughs") expand
    to a billion strings, which took a minute and all memory before running out."""
    import yaml

    class NoAliases(yaml.SafeLoader):  # type: ignore[misc]
        def compose_node(self, parent: Any, index: Any) -> Any:
            if self.check_event(yaml.events.AliasEvent):
                mark = self.peek_event().start_mark
                raise UsageError(
                    f"the file is not an engram export: it uses YAML aliases (line {mark.line + 1})",
                    hint="engram's own YAML exports have none",
                )
            return super().compose_node(parent, index)

    return yaml.load(text, Loader=NoAliases)  # a SafeLoader, aliases refused


# A single value of an import larger than this is refused (an export holds summaries, notes,
# gotchas: nothing near it).
MAX_IMPORT_VALUE_CHARS = 8 * 1024 * 1024


def _type_problem(declared: str, value: Any) -> str | None:
    """Why `value` cannot go in a column declared `declared` (SQLite's affinity names), or
    None. SQLite would store a text in a number column as it is, and every command reading
    that column later failed on it."""
    if value is None:
        return None
    kind = declared.upper()
    if isinstance(value, str | bytes) and len(value) > MAX_IMPORT_VALUE_CHARS:
        return f"a value of {len(value)} characters (the limit is {MAX_IMPORT_VALUE_CHARS})"
    if "INT" in kind:
        ok = isinstance(value, int)
    elif any(word in kind for word in ("CHAR", "CLOB", "TEXT")):
        ok = isinstance(value, str | bytes)
    elif any(word in kind for word in ("REAL", "FLOA", "DOUB")):
        ok = isinstance(value, int | float) and not isinstance(value, bool) and value == value
    elif not kind or "BLOB" in kind:
        ok = True
    else:  # NUMERIC
        ok = isinstance(value, int | float) and value == value
    return None if ok else f"{type(value).__name__} {str(value)[:40]!r} where {declared} belongs"


def import_data(store: Store, data: Mapping[str, Any]) -> dict[str, Any]:
    """Insert an export's records that this store does not hold yet (ids decide)."""
    from memory_core import lifecycle

    tables = data.get("tables")
    if not isinstance(tables, dict):
        raise UsageError("this is not an engram export (no tables)")
    inserted: dict[str, int] = {}
    skipped = 0
    unknown: list[str] = []
    with store.transaction() as db:
        live = lifecycle.live_tables(db)
        for table in lifecycle.parents_first(db, [t for t in tables if t in live]):
            if table in EXCLUDED_TABLES:
                continue
            rows = tables[table]
            if not isinstance(rows, list):
                raise UsageError(f"table {table!r} in the export is not a list of rows")
            for raw in rows:
                if not isinstance(raw, dict):
                    raise UsageError(f"a row of {table!r} in the export is not an object")
                values = _decode(redact_obj(raw))
                if table == "agent_ingest_offsets" and ":" not in str(values.get("head", ":")):
                    # An export from before heads were hashed carries a transcript's first
                    # bytes: not kept (an empty head is "not known").
                    values["head"] = ""
                if table == "memories":
                    # `seq` is this store's own numbering (the FTS rowid); the id is the identity.
                    values.pop("seq", None)
                columns = [c for c in values if c in live[table]]
                if not columns:
                    skipped += 1
                    continue
                for column in columns:
                    problem = _type_problem(live[table][column], values[column])
                    if problem is not None:
                        raise UsageError(
                            f"cannot import {table}.{column}: {problem}",
                            hint="nothing was imported; fix the file or export it again",
                        )
                names = ", ".join(f'"{c}"' for c in columns)
                try:
                    cursor = db.execute(
                        f'INSERT OR IGNORE INTO "{table}" ({names}) VALUES ({",".join("?" * len(columns))})',
                        [values[c] for c in columns],
                    )
                except sqlite3.IntegrityError:
                    skipped += 1
                    continue
                except sqlite3.DatabaseError as exc:
                    raise UsageError(f"cannot import a row of {table!r}: {exc}") from None
                if cursor.rowcount:
                    inserted[table] = inserted.get(table, 0) + 1
                else:
                    skipped += 1
        unknown = sorted(t for t in tables if t not in live and t not in EXCLUDED_TABLES)
        db.execute("DELETE FROM search_sources")
    return {"inserted": inserted, "skipped": skipped, "unknown_tables": unknown}


def _markdown(data: Mapping[str, Any]) -> str:
    tables: Mapping[str, list[dict[str, Any]]] = data.get("tables", {})
    scope = f"session {data['session']}" if data.get("session") else "everything"
    lines = [
        f"# engram export: {scope}",
        "",
        f"Exported {data.get('exported_at')} from `{data.get('root')}` (schema {data.get('schema_version')}).",
        "",
    ]
    memories = tables.get("memories", [])
    if memories:
        lines += ["## Memories", ""]
        for row in sorted(memories, key=lambda r: r.get("created_at") or 0):
            tags = f" `{row['tags']}`" if row.get("tags") else ""
            pin = " (pinned)" if row.get("pinned") else ""
            lines.append(f"- **{row['id']}** {row['type']}{pin}{tags}: {_one_line(row['content'])}")
        relations = tables.get("memory_relations", [])
        if relations:
            lines += ["", "Relations:", ""]
            lines += [f"- {r['source_id']} {r['kind']} {r['target_id']}" for r in relations]
        lines.append("")
    gotchas = tables.get("gotchas", [])
    if gotchas:
        lines += ["## Gotchas", ""]
        for row in gotchas:
            lines.append(f"### {row.get('id')}: {row.get('title')}")
            lines.append("")
            lines.append(
                f"{row.get('severity', '')} {row.get('category', '')}, {row.get('status', '')}"
            )
            if row.get("description"):
                lines += ["", str(row["description"])]
            if row.get("workaround"):
                lines += ["", f"Workaround: {row['workaround']}"]
            lines.append("")
    sessions = tables.get("sessions", [])
    if sessions:
        lines += ["## Sessions", ""]
        for row in sessions:
            title = row.get("name") or row.get("id")
            lines.append(f"### {title} ({row.get('agent', '')}, {row.get('status', '')})")
            lines.append("")
            if row.get("overview"):
                lines += [str(row["overview"]), ""]
            for field in ("decisions", "outcomes", "open_items"):
                items = _json_list(row.get(field))
                if items:
                    lines.append(f"{field.replace('_', ' ').capitalize()}:")
                    lines += [f"- {_one_line(str(item))}" for item in items]
                    lines.append("")
    digests = tables.get("digests", [])
    if digests:
        lines += ["## Digests", ""]
        for row in digests:
            lines += [
                f"### {row.get('session_id')} ({row.get('trigger')})",
                "",
                "```yaml",
                str(row.get("content", "")).rstrip(),
                "```",
                "",
            ]
    rest = [
        name
        for name in sorted(tables)
        if name not in ("memories", "memory_relations", "gotchas", "sessions", "digests")
    ]
    if rest:
        lines += ["## Other records", ""]
        lines += [f"- {name}: {len(tables[name])}" for name in rest]
        lines.append("")
    return "\n".join(lines)


def _one_line(text: Any) -> str:
    return " ".join(str(text).split())


def _json_list(value: Any) -> list[Any]:
    if isinstance(value, list):
        return value
    if isinstance(value, str) and value.startswith("["):
        try:
            parsed = json.loads(value)
        except ValueError:
            return []
        return parsed if isinstance(parsed, list) else []
    return []


def _encode(values: dict[str, Any]) -> dict[str, Any]:
    return {
        k: {"__bytes__": base64.b64encode(v).decode("ascii")} if isinstance(v, bytes) else v
        for k, v in values.items()
    }


def _decode(values: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in values.items():
        if isinstance(v, dict) and "__bytes__" in v:
            out[k] = base64.b64decode(v["__bytes__"])
        elif isinstance(v, dict | list):
            out[k] = json.dumps(v, ensure_ascii=False)
        else:
            out[k] = v
    return out


# -- anonymize -------------------------------------------------------------------------------

_EMAIL = re.compile(r"\b[A-Za-z0-9._%+\-]+@[A-Za-z0-9.\-]+\.[A-Za-z]{2,}\b")
# A user's name is the folder under /home, /Users or C:\Users (not under /root: that is root's own
# home, and the folder in it, such as `src`, is no one's name; hiding it replaced every `src`).
_HOME_PATH = re.compile(r"(?:/home|/Users|C:\\Users)[/\\]([A-Za-z0-9._\-]+)")
# Folders of those that belong to no one (macOS's /Users/Shared, Windows' Public and Default).
_SHARED_HOME_FOLDERS = frozenset({"Shared", "Public", "Default"})
# Columns that hold identities or fixed vocabularies, never people's names: left as they are
# so ids keep pointing at each other and types stay valid.
_STRUCTURAL = frozenset(
    {
        "type",
        "kind",
        "status",
        "category",
        "severity",
        "source_type",
        "pattern_kind",
        "session_type",
        "last_action",
        "summary_source",
        "format_version",
        "schema_version",
        "trigger",
        "state",
        "actor",
        "tool",
        "table_name",
        "format",
        "level",
        "reason_code",
    }
)


def _structural(column: str) -> bool:
    lowered = column.lower()
    return (
        lowered in _STRUCTURAL
        or lowered == "id"
        or lowered.endswith(("_id", "uuid", "_key", "hash", "anchor", "_hash"))
    )


def identities(store: Store, *, extra: Iterable[str] = ()) -> dict[str, str]:
    """The names to hide, each with its kind: user, email, home, project, name."""
    found: dict[str, str] = {}
    for name in (os.environ.get("USER"), os.environ.get("LOGNAME"), _safe_getuser()):
        if name and len(name) >= 2:
            found[name] = "user"
    home = os.environ.get("HOME")
    if home and home not in ("/", "") and len(home) > 1:
        found[home.rstrip("/")] = "home"
        found.setdefault(Path(home).name, "user")
    for key, value in _git_identity(store.root).items():
        found[value] = "email" if key == "email" else "user"
    found[str(store.root)] = "project-path"
    if len(store.root.name) >= 3:
        found[store.root.name] = "project"
    for name in extra:
        if name and name.strip():
            found[name.strip()] = "name"
    return found


def _safe_getuser() -> str | None:
    try:
        return getpass.getuser()
    except Exception:
        return None


def _git_identity(root: Path) -> dict[str, str]:
    # Read git's config files directly (a subprocess per export would be fine, but this also
    # works where git is not installed).
    out: dict[str, str] = {}
    home = os.environ.get("HOME")
    candidates = [root / ".git" / "config"] + ([Path(home) / ".gitconfig"] if home else [])
    for path in candidates:
        try:
            text = path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        section = ""
        for raw in text.splitlines():
            line = raw.strip()
            if line.startswith("["):
                section = line.strip("[]").strip().lower()
            elif section == "user" and "=" in line:
                key, value = (part.strip() for part in line.split("=", 1))
                if key.lower() in ("name", "email") and value:
                    out.setdefault(key.lower(), value.strip('"'))
    return out


class Anonymizer:
    """Replaces identities with stable placeholders; one instance per export."""

    def __init__(self, names: Mapping[str, str]) -> None:
        self.mapping: dict[str, str] = {}
        self._counters: dict[str, int] = {}
        # Deterministic numbering: the same names always get the same placeholders.
        for value, kind in sorted(names.items(), key=lambda item: (item[1], item[0])):
            self._placeholder(value, kind)
        self._rebuild()

    def _placeholder(self, value: str, kind: str) -> str:
        if value in self.mapping:
            return self.mapping[value]
        number = self._counters.get(kind, 0) + 1
        self._counters[kind] = number
        placeholder = {
            "user": f"USER_{number}",
            "name": f"NAME_{number}",
            "email": f"user{number}@example.invalid",
            "home": f"/home/USER_H{number}",
            "project": f"PROJECT_{number}",
            "project-path": f"/workspace/PROJECT_P{number}",
        }.get(kind, f"NAME_{number}")
        self.mapping[value] = placeholder
        return placeholder

    def _rebuild(self) -> None:
        # Longest first, so a home path is replaced whole before the user name inside it.
        ordered = sorted(self.mapping, key=len, reverse=True)
        parts = []
        for value in ordered:
            escaped = re.escape(value)
            if value[:1].isalnum():
                escaped = r"(?<![A-Za-z0-9_])" + escaped
            if value[-1:].isalnum():
                escaped += r"(?![A-Za-z0-9_])"
            parts.append(escaped)
        self._pattern = re.compile("|".join(parts)) if parts else None

    def learn(self, text: str) -> None:
        """Add the e-mail addresses and home-folder user names that occur in `text`."""
        changed = False
        for email in _EMAIL.findall(text):
            if email not in self.mapping and not email.endswith("@example.invalid"):
                self._placeholder(email, "email")
                changed = True
        for user in _HOME_PATH.findall(text):
            if (
                user not in self.mapping
                and not user.startswith("USER_")
                and len(user) >= 2
                and user not in _SHARED_HOME_FOLDERS
            ):
                self._placeholder(user, "user")
                changed = True
        if changed:
            self._rebuild()

    def text(self, value: str) -> str:
        if self._pattern is None:
            return value
        return self._pattern.sub(lambda m: self.mapping[m.group(0)], value)

    def value(self, value: Any, column: str | None = None) -> Any:
        if column is not None and _structural(column):
            return value
        if isinstance(value, str):
            stripped = value.strip()
            if stripped[:1] in ("{", "[") and stripped[-1:] in ("}", "]"):
                try:
                    parsed = json.loads(stripped)
                except ValueError:
                    return self.text(value)
                return json.dumps(self.value(parsed), ensure_ascii=False)
            return self.text(value)
        if isinstance(value, dict):
            return {k: self.value(v, k if isinstance(k, str) else None) for k, v in value.items()}
        if isinstance(value, list):
            return [self.value(item) for item in value]
        return value


def _walk_strings(value: Any) -> Iterable[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _walk_strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _walk_strings(item)


def anonymize(
    data: Mapping[str, Any], names: Mapping[str, str]
) -> tuple[dict[str, Any], dict[str, str]]:
    """An anonymized copy of an export, and the mapping used (original -> placeholder)."""
    anonymizer = Anonymizer(names)
    for text in _walk_strings(data.get("tables", {})):
        anonymizer.learn(text)
    out = dict(data)
    out["root"] = anonymizer.text(str(data.get("root", "")))
    out["anonymized"] = True
    out["tables"] = {
        table: [
            {column: anonymizer.value(cell, column) for column, cell in row.items()} for row in rows
        ]
        for table, rows in data.get("tables", {}).items()
    }
    return out, dict(anonymizer.mapping)


def anonymize_store(store: Store, *, extra_names: Iterable[str] = ()) -> dict[str, Any]:
    """Rewrite the store itself with placeholders (then VACUUM, so the originals are gone)."""
    from memory_core import lifecycle

    data = export_data(store)
    anonymizer = Anonymizer(identities(store, extra=extra_names))
    for text in _walk_strings(data["tables"]):
        anonymizer.learn(text)
    replaced = 0
    with store.transaction() as db:
        live = lifecycle.live_tables(db)
        for table, columns in live.items():
            if table in ("search_docs", "search_sources"):
                continue
            keys = lifecycle.primary_key(db, table)
            select = "*" if keys else "rowid AS __rowid__, *"
            for row in db.execute(f'SELECT {select} FROM "{table}"').fetchall():
                values = {k: row[k] for k in row.keys() if k != "__rowid__"}  # noqa: SIM118
                if table == "deleted_rows":
                    changed = {
                        "row": json.dumps(
                            anonymizer.value(json.loads(values["row"])), ensure_ascii=False
                        )
                    }
                else:
                    changed = {
                        c: anonymizer.value(v, c)
                        for c, v in values.items()
                        if isinstance(v, str) and c in columns
                    }
                changed = {c: v for c, v in changed.items() if v != values[c]}
                if not changed:
                    continue
                key_cols = keys or ["rowid"]
                key_vals = [row[k] for k in keys] if keys else [row["__rowid__"]]
                where = " AND ".join(f'"{k}" IS ?' for k in key_cols)
                sets = ", ".join(f'"{c}" = ?' for c in changed)
                try:
                    db.execute(
                        f'UPDATE "{table}" SET {sets} WHERE {where}', [*changed.values(), *key_vals]
                    )
                except sqlite3.IntegrityError:
                    # Append-only tables (events) refuse UPDATE: replace the row instead.
                    values.update(changed)
                    db.execute(f'DELETE FROM "{table}" WHERE {where}', key_vals)
                    names = ", ".join(f'"{c}"' for c in values)
                    db.execute(
                        f'INSERT INTO "{table}" ({names}) VALUES ({",".join("?" * len(values))})',
                        list(values.values()),
                    )
                replaced += 1
        db.execute("DELETE FROM search_docs")
        db.execute("DELETE FROM search_sources")
        for index in lifecycle.fts_tables(db):
            db.execute(f'INSERT INTO "{index}"("{index}") VALUES (\'optimize\')')
    lifecycle.compact(store)
    return {"replaced": replaced, "names": len(anonymizer.mapping)}
