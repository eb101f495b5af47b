"""`.engram/team/gotchas.toml`: the team's shared gotchas, committed and reviewed in pull requests.

The file is a list of `[[gotchas]]` tables:

    [[gotchas]]
    id = "G-1a2b3c4d"
    title = "datetime.utcnow() is naive"
    severity = "high"             # critical | high | medium | low
    category = "runtime"
    description = "..."
    workaround = "use datetime.now(UTC)"
    related_files = ["src/**/*.py"]
    pattern = "datetime.utcnow("
    pattern_kind = "literal"      # or "regex"
    error_pattern = "..."

Reading uses tomllib (fast) and is cached by the file's mtime and size, so a `git pull` that
changes the file is picked up by the next read. Each entry is checked on its own: an invalid
one is reported with its line and the valid ones still load. Writing (`promote`) goes through
tomlkit, so the comments and layout people gave the file survive.
"""

from __future__ import annotations

import threading
from pathlib import Path

from memory_core.errors import UsageError
from memory_core.gotchas.normalize import CATEGORIES, SEVERITIES, infer_category
from memory_core.gotchas.records import PATTERN_KINDS, Gotcha
from memory_core.lazy_pattern import compile_later
from memory_core.store import Store, ensure_private_dir, write_private_file
from memory_core.values import Record, Value
from memory_core.workspace import STORE_DIRNAME

TYPE_CHECKING = False  # `typing` costs a cold hook a third of Python's start
if TYPE_CHECKING:
    from typing import Any

TEAM_FILE = Path("team") / "gotchas.toml"
_HEADER = compile_later(r"^\s*\[\[\s*gotchas\s*\]\]")
_TOML_ERROR_LINE = compile_later(r"at line (\d+)")
_ID = compile_later(r"^G-[0-9a-f]{4,}$")

HEADER_COMMENT = """\
# engram team gotchas: known pitfalls this team shares. Commit this file and review changes
# to it like code. Edit freely: engram keeps your comments and layout when it adds entries.
"""


class TeamProblem(Value):
    """What is wrong in the team file, at `line` (0-based, in the TOML file)."""

    __slots__ = ("line", "message")
    FIELDS = ("line", "message")

    def __init__(self, line: int, message: str) -> None:
        self.line = line
        self.message = message


class TeamFile(Record):
    """The team's shared gotchas file as read: its gotchas and what is wrong in it."""

    FIELDS = ("path", "gotchas", "problems")

    def __init__(
        self,
        path: Path,
        gotchas: list[Gotcha] | None = None,
        problems: list[TeamProblem] | None = None,
    ) -> None:
        self.path = path
        self.gotchas: list[Gotcha] = [] if gotchas is None else gotchas
        self.problems: list[TeamProblem] = [] if problems is None else problems


_cache: dict[Path, tuple[tuple[int, int], TeamFile]] = {}
_cache_lock = threading.Lock()


def team_path(root: Path) -> Path:
    return root / STORE_DIRNAME / TEAM_FILE


def load(root: Path) -> TeamFile:
    """The team file's valid gotchas and the problems of the invalid ones (cached by mtime)."""
    path = team_path(root)
    try:
        stat = path.stat()
    except OSError:
        return TeamFile(path)
    key = (stat.st_mtime_ns, stat.st_size)
    with _cache_lock:
        cached = _cache.get(path)
        if cached and cached[0] == key:
            return cached[1]
    parsed = parse(path)
    with _cache_lock:
        _cache[path] = (key, parsed)
    return parsed


def parse(path: Path) -> TeamFile:
    import tomllib  # only here: every hook reading gotchas asks `load`; few projects have one

    result = TeamFile(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        result.problems.append(TeamProblem(0, f"cannot read the team gotchas file: {exc}"))
        return result
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        match = _TOML_ERROR_LINE.search(str(exc))
        line = int(match.group(1)) - 1 if match else 0
        result.problems.append(TeamProblem(line, f"invalid TOML, no team gotcha loaded: {exc}"))
        return result
    header_lines = [number for number, line in enumerate(text.splitlines()) if _HEADER.match(line)]
    entries = data.get("gotchas", [])
    if not isinstance(entries, list):
        result.problems.append(TeamProblem(0, "`gotchas` must be a list of [[gotchas]] tables"))
        return result
    seen: set[str] = set()
    for index, entry in enumerate(entries):
        line = header_lines[index] if index < len(header_lines) else 0
        try:
            gotcha = _entry(entry)
        except ValueError as exc:
            result.problems.append(TeamProblem(line, f"team gotcha #{index + 1} ignored: {exc}"))
            continue
        if gotcha.id in seen:
            result.problems.append(
                TeamProblem(line, f"team gotcha #{index + 1} ignored: duplicate id {gotcha.id}")
            )
            continue
        seen.add(gotcha.id)
        gotcha.extra["team_line"] = line
        result.gotchas.append(gotcha)
    return result


def _entry(entry: Any) -> Gotcha:
    if not isinstance(entry, dict):
        raise ValueError("not a table")
    gotcha_id = entry.get("id")
    if not isinstance(gotcha_id, str) or not _ID.match(gotcha_id):
        raise ValueError(f"id must look like G-1a2b3c4d, got {gotcha_id!r}")
    title = entry.get("title")
    if not isinstance(title, str) or not title.strip():
        raise ValueError("a title is required")
    severity = entry.get("severity", "medium")
    if severity not in SEVERITIES:
        raise ValueError(f"severity must be one of {', '.join(SEVERITIES)}, got {severity!r}")
    category = entry.get("category") or infer_category(title)
    if category not in CATEGORIES:
        raise ValueError(f"category must be one of {', '.join(CATEGORIES)}, got {category!r}")
    for key in ("description", "workaround", "pattern", "error_pattern"):
        if key in entry and not isinstance(entry[key], str):
            raise ValueError(f"{key} must be text")
    files = entry.get("related_files", [])
    if not isinstance(files, list) or not all(isinstance(f, str) for f in files):
        raise ValueError("related_files must be a list of globs")
    kind = entry.get("pattern_kind", "literal")
    if kind not in PATTERN_KINDS:
        raise ValueError(f"pattern_kind must be regex or literal, got {kind!r}")
    pattern = entry.get("pattern") or None
    if pattern and kind == "regex":
        from memory_core.gotchas.patterns import validate_regex

        try:
            validate_regex(pattern)
        except UsageError as exc:
            raise ValueError(exc.message) from None
    return Gotcha(
        id=gotcha_id,
        title=title.strip(),
        description=entry.get("description", ""),
        category=category,
        severity=severity,
        workaround=entry.get("workaround", ""),
        related_files=list(files),
        code_pattern=pattern,
        pattern_kind=kind,
        error_pattern=entry.get("error_pattern") or None,
        source_type="team",
        status="confirmed",
        promoted=True,
    )


def promote(store: Store, gotcha_id: str) -> Gotcha:
    """Write a gotcha into the team file (appended, or updated in place if its id is there)."""
    import tomlkit

    from memory_core.gotchas import records

    gotcha = records.get(store, gotcha_id)
    path = team_path(store.root)
    ensure_private_dir(path.parent)
    if path.exists():
        try:
            document = tomlkit.parse(path.read_text(encoding="utf-8"))
        except Exception as exc:
            raise UsageError(
                f"{path} is not valid TOML ({exc})", hint="fix the file, then promote again"
            ) from None
    else:
        document = tomlkit.parse(HEADER_COMMENT)
    entries = document.get("gotchas")
    if entries is None:
        entries = tomlkit.aot()
        document.append("gotchas", entries)
    values: dict[str, Any] = {
        "id": gotcha.id,
        "title": gotcha.title,
        "severity": gotcha.severity,
        "category": gotcha.category,
    }
    for key, value in (
        ("description", gotcha.description),
        ("workaround", gotcha.workaround),
        ("pattern", gotcha.code_pattern),
        ("pattern_kind", gotcha.pattern_kind if gotcha.code_pattern else None),
        ("error_pattern", gotcha.error_pattern),
    ):
        if value:
            values[key] = value
    if gotcha.related_files:
        values["related_files"] = list(gotcha.related_files)
    for table in entries:
        if table.get("id") == gotcha.id:
            for key, value in values.items():
                table[key] = value
            break
    else:
        table = tomlkit.table()
        for key, value in values.items():
            table[key] = value
        entries.append(table)
    write_private_file(path, tomlkit.dumps(document))
    if store.query_one("SELECT 1 FROM gotchas WHERE id = ?", (gotcha.id,)):
        records.update(store, gotcha.id, promoted=True)
        # The team agreeing to share it is a confirmation.
        if gotcha.status == "candidate":
            return records.confirm(store, gotcha.id)
        return records.get(store, gotcha.id)
    return gotcha
