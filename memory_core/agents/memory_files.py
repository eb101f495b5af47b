"""Claude Code's and Gemini CLI's own memory files, connected to engram's memory.

Claude Code loads the project's `CLAUDE.md` (or `.claude/CLAUDE.md`) and its auto memory
`~/.claude/projects/<project>/memory/MEMORY.md` into every session and writes facts there
itself (subagents with project memory write `.claude/agent-memory/<agent>/MEMORY.md`);
Gemini CLI does the same with `GEMINI.md` (its `save_memory` tool appends `- fact` lines
under `## Gemini Added Memories`). Left alone, that memory and engram's never meet.

`sync` connects them both ways:

- out: engram writes what an agent should always know (confirmed gotchas, pinned decisions,
  stated rules: explicit preferences and entries tagged `rule`) into a section it owns,
  between `<!-- engram:begin -->` and `<!-- engram:end -->`, replacing only that section;
- in: every bullet line outside engram's section (outside code blocks and HTML comments) is a
  fact the agent or a person wrote; each is taken into engram's memory once (a ledger of line
  hashes, so a fact forgotten in engram does not come back at the next sync), typed by the
  heading it is under (a decision, a gotcha, a rule or preference, else a project fact).

Nothing outside engram's section is ever changed: the bytes before and after it, line endings
included, are written back exactly as they were read. A file without the section gets it
appended at its end, after one blank line. Writes are atomic and keep the file's mode.
"""

from __future__ import annotations

import hashlib
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memory_core import clock, memory
from memory_core.errors import UsageError
from memory_core.lazy_pattern import compile_later
from memory_core.store import Store

BEGIN = "<!-- engram:begin -->"
END = "<!-- engram:end -->"
AGENTS = ("claude", "gemini")
MAX_PER_KIND = 15
MAX_FACT_CHARS = 500
MAX_FILE_BYTES = 1024 * 1024
TAG = {"claude": "claude-memory", "gemini": "gemini-memory"}
AGENT_NAME = {"claude": "claude-code", "gemini": "gemini"}

# Patterns used inside functions, compiled on first use like the others (a resident
# server compiles every module-level one before it forks).
_HEADING_WORD = compile_later(r"[a-z0-9]+")
_BULLET = compile_later(r"^\s{0,3}(?:[-*+]|\d{1,3}[.)])\s+(?:\[[ xX]\]\s+)?(?P<text>\S.*?)\s*$")
_HEADING = compile_later(r"^\s{0,3}#{1,6}\s+(?P<title>.*?)\s*#*\s*$")
_FENCE = compile_later(r"^\s{0,3}(```|~~~)")
_ID_SUFFIX = compile_later(r"\s*\((?:G|M)-[0-9a-f]{6,}\)\s*$")

# Heading words -> the memory type of the facts under it.
_HEADING_TYPES = (
    (("decision", "decided", "architecture"), "decision"),
    (("gotcha", "pitfall", "caveat", "warning", "known issue", "bug", "trap"), "finding"),
    (
        ("rule", "convention", "preference", "style", "guideline", "always", "never", "do not"),
        "preference",
    ),
    (("learn", "lesson", "insight", "note"), "learning"),
)


@dataclass
class Target:
    agent: str
    path: Path
    # "project" (CLAUDE.md, GEMINI.md), "auto" (Claude's auto memory) or "agent" (a Claude Code
    # subagent's `.claude/agent-memory/<agent>/MEMORY.md`, read only)
    role: str


def claude_auto_memory(root: Path) -> Path:
    """Claude Code's auto memory file for the project at `root`."""
    from memory_core.agents.transcripts import claude_config_dirs, project_dir_name

    name = project_dir_name(root)
    if os.environ.get("CLAUDE_CONFIG_DIR") and os.environ.get("CLAUDE_CODE_PROJECT_DIR_NAME"):
        name = os.environ["CLAUDE_CODE_PROJECT_DIR_NAME"]
    dirs = claude_config_dirs()
    for config_dir in dirs:
        candidate = config_dir / "projects" / name / "memory" / "MEMORY.md"
        if candidate.exists():
            return candidate
    return dirs[0] / "projects" / name / "memory" / "MEMORY.md"


def targets(root: Path, agent: str) -> list[Target]:
    """The memory files of `agent` for the workspace at `root`, the one engram writes first."""
    if agent not in AGENTS:
        raise UsageError(f"unknown agent {agent!r}", hint="use claude or gemini")
    if agent == "gemini":
        return [Target("gemini", root / "GEMINI.md", "project")]
    project = root / "CLAUDE.md"
    if not project.exists() and (root / ".claude" / "CLAUDE.md").exists():
        project = root / ".claude" / "CLAUDE.md"
    found = [
        Target("claude", project, "project"),
        Target("claude", claude_auto_memory(root), "auto"),
    ]
    # Subagents defined with `memory: project` keep their own MEMORY.md (read only: engram's
    # section goes to the project's file or the auto memory).
    agent_memory = root / ".claude" / "agent-memory"
    if agent_memory.is_dir():
        found += [
            Target("claude", path, "agent")
            for path in sorted(agent_memory.glob("*/MEMORY.md"))
            if path.is_file()
        ]
    return found


# -- the file's parts ----------------------------------------------------------------------------


@dataclass
class Parts:
    """A memory file split around engram's section: `before + section + after` is the file."""

    before: str
    section: str
    after: str
    newline: str

    @property
    def has_section(self) -> bool:
        return bool(self.section)


_BEGIN_LINE = compile_later(r"^" + re.escape(BEGIN), re.MULTILINE)
_END_LINE = compile_later(r"^" + re.escape(END), re.MULTILINE)


def split(text: str) -> Parts:
    """Markers count only at the start of a line (a marker quoted in prose is not one)."""
    newline = "\r\n" if "\r\n" in text else "\n"
    opened = _BEGIN_LINE.search(text)
    if opened is None:
        return Parts(text, "", "", newline)
    start = opened.start()
    closed = _END_LINE.search(text, opened.end())
    if closed is None:
        # An opened section never closed (a person cut the end marker): engram owns nothing
        # it cannot delimit, so the file is treated as having no section.
        return Parts(text, "", "", newline)
    end = closed.end()
    # The section runs to the end of its closing line.
    if text.startswith("\r\n", end):
        end += 2
    elif text.startswith("\n", end):
        end += 1
    return Parts(text[:start], text[start:end], text[end:], newline)


def human_lines(parts: Parts) -> list[tuple[int, str, str]]:
    """(1-based line, heading, bullet text) of every bullet outside engram's section."""
    after_starts = parts.before.count("\n") + parts.section.count("\n")
    return [
        *_bullets(parts.before.splitlines(), 0),
        *_bullets(parts.after.splitlines(), after_starts),
    ]


def _bullets(lines: list[str], offset: int) -> list[tuple[int, str, str]]:
    out = []
    heading = ""
    in_fence = False
    in_comment = False
    for index, line in enumerate(lines):
        if _FENCE.match(line):
            in_fence = not in_fence
            continue
        if in_fence:
            continue
        if in_comment:
            if "-->" in line:
                in_comment = False
            continue
        stripped = line.strip()
        if stripped.startswith("<!--"):
            in_comment = "-->" not in stripped
            continue
        match = _HEADING.match(line)
        if match:
            heading = match.group("title")
            continue
        bullet = _BULLET.match(line)
        if bullet:
            text = _ID_SUFFIX.sub("", bullet.group("text")).strip()
            if len(text) >= 3:
                out.append((offset + index + 1, heading, text))
    return out


def type_for(heading: str) -> str:
    lowered = heading.lower()
    for words, kind in _HEADING_TYPES:
        if any(word in lowered for word in words):
            return kind
    return "project"


def _line_hash(text: str) -> str:
    normal = " ".join(text.lower().split())
    return hashlib.sha256(normal.encode("utf-8")).hexdigest()[:20]


# -- out: engram's section -----------------------------------------------------------------------


def section_items(store: Store, *, now: float | None = None) -> dict[str, list[str]]:
    """What engram writes: confirmed gotchas, pinned decisions, stated rules (one line each)."""
    now = clock.now() if now is None else now
    gotchas: list[str] = []
    if "gotchas" in store.tables():
        rows = store.query(
            "SELECT id, title, workaround FROM gotchas WHERE status = 'confirmed' ORDER BY "
            "CASE severity WHEN 'critical' THEN 0 WHEN 'high' THEN 1 WHEN 'medium' THEN 2 ELSE 3 END,"
            " occurrences DESC, updated_at DESC LIMIT ?",
            (MAX_PER_KIND,),
        )
        for row in rows:
            text = _one_line(row["title"])
            if row["workaround"]:
                text += f": {_one_line(row['workaround'])}"
            gotchas.append(f"{text} ({row['id']})")
    imported = '%"memory_file"%'
    decisions = [
        f"{_one_line(row['content'])} ({row['id']})"
        for row in store.query(
            "SELECT id, content FROM memories WHERE type = 'decision' AND pinned = 1 AND "
            "status = 'open' AND provenance NOT LIKE ? ORDER BY created_at DESC LIMIT ?",
            (imported, MAX_PER_KIND),
        )
    ]
    rules = [
        f"{_one_line(row['content'])} ({row['id']})"
        for row in store.query(
            "SELECT id, content FROM memories WHERE status != 'archived' AND provenance NOT LIKE ?"
            " AND ((type = 'preference' AND explicit = 1)"
            " OR id IN (SELECT memory_id FROM memory_tags WHERE tag = 'rule'))"
            " ORDER BY created_at DESC LIMIT ?",
            (imported, MAX_PER_KIND),
        )
    ]
    return {"gotchas": gotchas, "decisions": decisions, "rules": rules}


def render_section(items: dict[str, list[str]], newline: str = "\n") -> str:
    lines = [
        BEGIN,
        "## engram: what this project has learned",
        "",
        "<!-- Written by `engram memory sync`; edits between the engram markers are replaced."
        " Write your own notes outside them: engram reads those too. -->",
    ]
    titles = (
        ("gotchas", "Gotchas (confirmed)"),
        ("decisions", "Decisions (pinned)"),
        ("rules", "Rules"),
    )
    for key, title in titles:
        if items.get(key):
            lines += ["", f"### {title}", ""]
            lines += [f"- {item}" for item in items[key]]
    if not any(items.values()):
        lines += ["", "Nothing confirmed or pinned yet."]
    lines.append(END)
    return newline.join(lines) + newline


def _one_line(text: str) -> str:
    flat = " ".join(str(text).split())
    return flat if len(flat) <= MAX_FACT_CHARS else flat[: MAX_FACT_CHARS - 1] + "…"


def _write_atomic(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        mode = path.stat().st_mode & 0o777
    except FileNotFoundError:
        mode = 0o644
    import tempfile  # only here: SessionStart reads these files, and tempfile loads shutil

    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".engram.tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _read(path: Path) -> str | None:
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return None
    if len(data) > MAX_FILE_BYTES:
        raise UsageError(f"{path} is larger than {MAX_FILE_BYTES} bytes; not a memory file")
    try:
        # newline="" semantics: decode the bytes as they are, line endings untouched.
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise UsageError(f"{path} is not UTF-8 text; engram leaves it alone") from None


# -- in: facts from the file ---------------------------------------------------------------------


def import_facts(
    store: Store, target: Target, parts: Parts, *, now: float | None = None
) -> list[dict[str, Any]]:
    """Take the file's bullet lines (outside engram's section) into memory, each once."""
    now = clock.now() if now is None else now
    key = str(target.path)
    added: list[dict[str, Any]] = []
    for line, heading, text in human_lines(parts):
        digest = _line_hash(text)
        kind = type_for(heading)
        tags = [TAG[target.agent]]
        heading_tag = "-".join(_HEADING_WORD.findall(heading.lower()))[:40]
        if heading_tag:
            tags.append(heading_tag)
        # One transaction: the memory and its ledger line land together or not at all, and a
        # line another process took meanwhile is skipped (the ledger's key says so).
        with store.transaction() as db:
            claimed = db.execute(
                "INSERT OR IGNORE INTO memory_file_lines (path, line_hash, memory_id, imported_at)"
                " VALUES (?, ?, NULL, ?)",
                (key, digest, now),
            ).rowcount
            if not claimed:
                continue
            entry = memory.add(
                store,
                text,
                type=kind,
                tags=tags,
                agent=AGENT_NAME[target.agent],
                provenance={
                    "memory_file": target.path.name,
                    "path": key,
                    "line": line,
                    "heading": heading,
                    "role": target.role,
                },
                now=now,
            )
            db.execute(
                "UPDATE memory_file_lines SET memory_id = ? WHERE path = ? AND line_hash = ?",
                (entry["id"], key, digest),
            )
        added.append(entry)
    return added


# -- both ways -----------------------------------------------------------------------------------


def sync(
    store: Store,
    agent: str,
    *,
    write: bool = True,
    write_only_if_present: bool = False,
    to: str = "project",
    path: Path | None = None,
    now: float | None = None,
) -> dict[str, Any]:
    """Import facts from `agent`'s memory files, then (with `write`) rewrite engram's section.

    `to`: which file gets the section, "project" (CLAUDE.md / GEMINI.md) or "auto" (Claude's
    MEMORY.md); `path` names a file instead. `write_only_if_present`: rewrite a section only
    where one already is (the hooks: engram never adds itself to a file on its own).
    """
    now = clock.now() if now is None else now
    found = targets(store.root, agent)
    if path is not None:
        found = [Target(agent, path, "project")]
    if to not in ("project", "auto"):
        raise UsageError(f"unknown target {to!r}", hint="project or auto")
    report: dict[str, Any] = {"agent": agent, "files": []}
    section_text: str | None = None
    items: dict[str, list[str]] | None = None
    for target in found:
        text = _read(target.path)
        entry: dict[str, Any] = {
            "path": str(target.path),
            "role": target.role,
            "exists": text is not None,
            "imported": [],
            "written": False,
        }
        report["files"].append(entry)
        parts = split(text or "")
        broken = (
            text is not None
            and not parts.has_section
            and bool(_BEGIN_LINE.search(text) or _END_LINE.search(text))
        )
        if text is not None:
            entry["imported"] = [m["id"] for m in import_facts(store, target, parts, now=now)]
        wanted = path is not None or target.role == to
        if not write or not (parts.has_section or (wanted and not write_only_if_present)):
            continue
        if broken:
            # One marker without the other: where engram's part ends is unknown, and a guess
            # could take a person's lines. Say so and leave the file as it is.
            raise UsageError(
                f"{target.path} has an engram marker without its partner; nothing was written",
                hint=f"put back `{BEGIN}` ... `{END}` around engram's section, or delete both",
            )
        if items is None:
            items = section_items(store, now=now)
            section_text = render_section(items)
        if not parts.has_section and not any(items.values()):
            # Nothing confirmed or pinned yet: a new section would only say so, in a file
            # people commit. It comes with the first fact.
            entry["nothing_to_write"] = True
            continue
        assert section_text is not None
        section = (
            section_text.replace("\n", parts.newline) if parts.newline != "\n" else section_text
        )
        if parts.has_section:
            new_text = parts.before + section + parts.after
        elif text:
            glue = "" if text.endswith(("\n", "\r")) else parts.newline
            new_text = text + glue + parts.newline + section
        else:
            new_text = section
        if new_text != text:
            _write_atomic(target.path, new_text.encode("utf-8"))
            entry["written"] = True
    return report


def on_hook(store: Store, agent: str, event: str, *, now: float | None = None) -> None:
    """The hooks' part: SessionStart takes new facts in; SessionEnd also rewrites engram's
    section where a file already has one (engram never adds itself to a file unasked).

    A failure here (an unreadable file, a file that is not UTF-8) is logged; the hook goes on.
    """
    from memory_core import log

    name = "claude" if agent == "claude-code" else agent
    if name not in AGENTS:
        return
    try:
        sync(
            store,
            name,
            write=event == "SessionEnd",
            write_only_if_present=True,
            now=now,
        )
    except Exception as exc:
        log.write(store.root, "warning", f"memory sync ({name}, {event}) skipped: {exc}")
