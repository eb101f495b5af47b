"""Human-readable views of the gotchas, and import of such a file.

`exports/gotchas.json` follows the AIOS gotchas-memory layout (top-level `schema`, `version`,
`projectId`, `lastUpdated`, `statistics`, `gotchas`; each gotcha with `id`, `title`,
`description`, `category`, `severity`, `workaround`, `relatedFiles`, `trigger.errorPattern`,
`source {type, occurrences, firstSeen, lastSeen}`, `resolved`), plus engram's own fields under
names AIOS does not use. Both files are rewritten atomically after every change.

`import_file` reads such a file (engram's or AIOS's own): severities AIOS names differently
are mapped (info→low, warning→medium), ids that already exist are skipped, and fields engram
does not know are kept in the gotcha's `extra` and reported, never a crash.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memory_core import clock
from memory_core.errors import EngramError, UsageError
from memory_core.gotchas.normalize import CATEGORIES, SEVERITIES
from memory_core.gotchas.records import Gotcha, list_gotchas
from memory_core.store import Store, write_private_file

SCHEMA = "aios-gotchas-memory-v1"
VERSION = "1.0.0"
_AIOS_SEVERITY = {"info": "low", "warning": "medium", "error": "high"}
_KNOWN_FIELDS = {
    "id",
    "title",
    "description",
    "category",
    "severity",
    "workaround",
    "relatedFiles",
    "trigger",
    "source",
    "resolved",
    "resolvedAt",
    "status",
    "codePattern",
    "patternKind",
    "createdAt",
    "updatedAt",
}


def _iso(ts: float | None) -> str | None:
    return clock.iso(ts) if ts is not None else None


def gotcha_json(gotcha: Gotcha) -> dict[str, Any]:
    return {
        "id": gotcha.id,
        "title": gotcha.title,
        "description": gotcha.description,
        "category": gotcha.category,
        "severity": gotcha.severity,
        "workaround": gotcha.workaround or None,
        "relatedFiles": list(gotcha.related_files),
        "trigger": {"errorPattern": gotcha.error_pattern},
        "source": {
            "type": gotcha.source_type,
            "occurrences": gotcha.occurrences,
            "firstSeen": _iso(gotcha.first_seen),
            "lastSeen": _iso(gotcha.last_seen),
        },
        "resolved": gotcha.status == "resolved",
        "status": gotcha.status,
        "codePattern": gotcha.code_pattern,
        "patternKind": gotcha.pattern_kind,
        "createdAt": _iso(gotcha.created_at),
        "updatedAt": _iso(gotcha.updated_at),
    }


def statistics(gotchas: list[Gotcha]) -> dict[str, Any]:
    by_category: dict[str, int] = {}
    by_severity: dict[str, int] = {}
    by_source: dict[str, int] = {}
    for gotcha in gotchas:
        by_category[gotcha.category] = by_category.get(gotcha.category, 0) + 1
        by_severity[gotcha.severity] = by_severity.get(gotcha.severity, 0) + 1
        by_source[gotcha.source_type] = by_source.get(gotcha.source_type, 0) + 1
    resolved = sum(1 for g in gotchas if g.status == "resolved")
    return {
        "totalGotchas": len(gotchas),
        "resolved": resolved,
        "unresolved": len(gotchas) - resolved,
        "byCategory": by_category,
        "bySeverity": by_severity,
        "bySource": by_source,
    }


def to_json(store: Store, gotchas: list[Gotcha] | None = None) -> dict[str, Any]:
    gotchas = list_gotchas(store, include_resolved=True) if gotchas is None else gotchas
    return {
        "schema": SCHEMA,
        "version": VERSION,
        "projectId": store.root.name,
        "lastUpdated": clock.iso(clock.now()),
        "statistics": statistics(gotchas),
        "gotchas": [gotcha_json(g) for g in gotchas],
    }


def to_markdown(store: Store, gotchas: list[Gotcha] | None = None) -> str:
    gotchas = list_gotchas(store, include_resolved=True) if gotchas is None else gotchas
    stats = statistics(gotchas)
    lines = [
        "# Known gotchas",
        "",
        f"> Written by engram for {store.root.name}. Last updated {clock.iso(clock.now())}.",
        f"> {stats['totalGotchas']} {'gotcha' if stats['totalGotchas'] == 1 else 'gotchas'}, "
        f"{stats['unresolved']} open.",
        "",
    ]
    for category in CATEGORIES:
        chosen = [g for g in gotchas if g.category == category]
        if not chosen:
            continue
        lines += [f"## {category.capitalize()}", ""]
        for gotcha in chosen:
            state = {"candidate": " (candidate)", "resolved": " (resolved)"}.get(gotcha.status, "")
            lines.append(f"### [{gotcha.severity}] {gotcha.title}{state}")
            lines.append("")
            lines.append(
                f"- id: `{gotcha.id}`, source: {gotcha.source_type}, occurrences: {gotcha.occurrences}"
            )
            if gotcha.first_seen is not None:
                lines.append(
                    f"- first seen {_iso(gotcha.first_seen)}, last seen {_iso(gotcha.last_seen)}"
                )
            if gotcha.description:
                lines.append(f"- {gotcha.description}")
            if gotcha.workaround:
                lines.append(f"- **Workaround:** {gotcha.workaround}")
            if gotcha.related_files:
                lines.append(f"- Files: {', '.join(f'`{f}`' for f in gotcha.related_files)}")
            if gotcha.code_pattern:
                lines.append(f"- Pattern ({gotcha.pattern_kind}): `{gotcha.code_pattern}`")
            lines.append("")
    return "\n".join(lines).rstrip() + "\n"


def write_exports(store: Store) -> tuple[Path, Path]:
    """Rewrite `exports/gotchas.md` and `exports/gotchas.json` (atomically, each)."""
    gotchas = list_gotchas(store, include_resolved=True)
    exports_dir = store.dir / "exports"
    json_path, md_path = exports_dir / "gotchas.json", exports_dir / "gotchas.md"
    write_private_file(
        json_path, json.dumps(to_json(store, gotchas), indent=2, ensure_ascii=False) + "\n"
    )
    write_private_file(md_path, to_markdown(store, gotchas))
    return md_path, json_path


@dataclass
class ImportReport:
    imported: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"imported": self.imported, "skipped": self.skipped, "problems": self.problems}


def _text(value: Any) -> str:
    return value if isinstance(value, str) else "" if value is None else str(value)


def import_file(store: Store, path: Path) -> ImportReport:
    """Import the gotchas of an AIOS-compatible JSON file; see the module docstring."""
    from memory_core.gotchas import records

    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise UsageError(f"{path}: no such file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"{path}: cannot read it ({exc})") from None
    except json.JSONDecodeError as exc:
        raise UsageError(
            f"{path}: not JSON ({exc.msg} at line {exc.lineno}, column {exc.colno})"
        ) from None
    except RecursionError:
        raise UsageError(f"{path}: not JSON (nested too deeply)") from None
    items = data.get("gotchas") if isinstance(data, dict) else data
    if not isinstance(items, list):
        raise UsageError(f"{path}: expected an object with a `gotchas` list")
    report = ImportReport()
    existing = {row["id"] for row in store.query("SELECT id FROM gotchas")}
    for index, item in enumerate(items):
        where = f"gotchas[{index}]"
        if not isinstance(item, dict):
            report.problems.append(f"{where}: not an object; skipped")
            continue
        gotcha_id = _text(item.get("id")).strip()
        if gotcha_id in existing:
            report.skipped.append(gotcha_id)
            continue
        unknown = {k: v for k, v in item.items() if k not in _KNOWN_FIELDS}
        if unknown:
            report.problems.append(f"{where}: kept unknown fields {', '.join(sorted(unknown))}")
        severity = _text(item.get("severity")).lower() or "medium"
        severity = _AIOS_SEVERITY.get(severity, severity)
        if severity not in SEVERITIES:
            report.problems.append(f"{where}: unknown severity {severity!r}; using medium")
            severity = "medium"
        category = _text(item.get("category")).lower() or None
        if category and category not in CATEGORIES:
            report.problems.append(f"{where}: unknown category {category!r}; inferring one")
            unknown["category"] = _text(item.get("category"))
            category = None
        trigger: dict[str, Any] = item["trigger"] if isinstance(item.get("trigger"), dict) else {}
        source: dict[str, Any] = item["source"] if isinstance(item.get("source"), dict) else {}
        files = item.get("relatedFiles") or []
        status = (
            "resolved" if item.get("resolved") is True else _text(item.get("status")) or "confirmed"
        )
        if status not in records.STATUSES:
            status = "confirmed"
        pattern = _text(item.get("codePattern")) or None
        kind = _text(item.get("patternKind")) or "regex"
        try:
            gotcha = records.add(
                store,
                _text(item.get("title"))
                or _text(item.get("description"))[:80]
                or "Imported gotcha",
                description=_text(item.get("description")),
                workaround=_text(item.get("workaround")),
                category=category,
                severity=severity,
                related_files=[f for f in files if isinstance(f, str)]
                if isinstance(files, list)
                else [],
                pattern=pattern,
                pattern_kind=kind if kind in records.PATTERN_KINDS else "regex",
                error_pattern=_text(trigger.get("errorPattern")) or None,
                status=status,
                gotcha_id=gotcha_id if gotcha_id.startswith("G-") else None,
                extra={
                    **unknown,
                    **(
                        {"importedId": gotcha_id}
                        if gotcha_id and not gotcha_id.startswith("G-")
                        else {}
                    ),
                },
            )
        except EngramError as exc:
            report.problems.append(f"{where}: {exc.one_line()}; skipped")
            continue
        with store.transaction() as db:
            db.execute(
                "UPDATE gotchas SET source_type = ?, occurrences = ?, first_seen = ?, last_seen = ? WHERE id = ?",
                (
                    _import_source(_text(source.get("type"))),
                    int(source.get("occurrences") or 0)
                    if str(source.get("occurrences") or 0).isdigit()
                    else 0,
                    _parse_time(source.get("firstSeen")),
                    _parse_time(source.get("lastSeen")),
                    gotcha.id,
                ),
            )
            records.bump_revision(db)
        existing.add(gotcha.id)
        report.imported.append(gotcha.id)
    records.after_change(store)
    return report


def _import_source(kind: str) -> str:
    from memory_core.gotchas.records import SOURCE_TYPES

    return kind if kind in SOURCE_TYPES else "manual"


def _parse_time(value: Any) -> float | None:
    if not isinstance(value, str) or not value:
        return None
    try:
        return clock.parse_iso(value)
    except ValueError:
        return None
