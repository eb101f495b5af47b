"""`.engram/team/gotchas.toml` as a team edits it by hand: each entry checked on its own (what
is wrong, on which line), defaults filled in, a `git pull` picked up, and `promote` writing
a gotcha into it (a new file with its header, an entry updated in place)."""

from __future__ import annotations

import os
import tomllib

import pytest

from memory_core import gotchas
from memory_core.errors import UsageError
from memory_core.gotchas import team
from memory_core.store import Store


def _write(store: Store, body: str) -> None:
    path = team.team_path(store.root)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(body, encoding="utf-8")


def _entry(**fields: object) -> str:
    fields.setdefault("id", "G-0000abcd")
    fields.setdefault("title", "Use UTC")
    lines = ["[[gotchas]]"]
    for key, value in fields.items():
        lines.append(f"{key} = {_toml(value)}")
    return "\n".join(lines) + "\n"


def _toml(value: object) -> str:
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(value, list):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    return str(value).lower() if isinstance(value, bool) else str(value)


def test_no_team_file_is_no_gotchas_and_no_problem(store: Store) -> None:
    loaded = team.load(store.root)
    assert loaded.gotchas == [] and loaded.problems == []
    assert loaded.path == store.dir / "team" / "gotchas.toml"


def test_an_entry_gets_the_defaults_a_person_expects(store: Store) -> None:
    _write(store, "# ours\n\n" + _entry(title="  TypeError when the cache is cold  "))
    loaded = team.load(store.root)
    assert loaded.path == store.dir / "team" / "gotchas.toml" and loaded.problems == []
    [gotcha] = loaded.gotchas
    assert gotcha.id == "G-0000abcd"
    assert gotcha.title == "TypeError when the cache is cold"
    assert (gotcha.severity, gotcha.category) == ("medium", "runtime")  # inferred from the title
    assert (gotcha.description, gotcha.workaround, gotcha.related_files) == ("", "", [])
    assert (gotcha.code_pattern, gotcha.pattern_kind, gotcha.error_pattern) == (
        None,
        "literal",
        None,
    )
    assert (gotcha.source_type, gotcha.status, gotcha.promoted) == ("team", "confirmed", True)
    assert gotcha.extra["team_line"] == 2  # 0-based line of its [[gotchas]] header


def test_every_field_is_read(store: Store) -> None:
    _write(
        store,
        _entry(
            severity="critical",
            category="security",
            description="tokens leak",
            workaround="use the vault",
            related_files=["src/**/*.py", "conf/*.toml"],
            pattern=r"token\s*=",
            pattern_kind="regex",
            error_pattern="401 Unauthorized",
        ),
    )
    [gotcha] = team.load(store.root).gotchas
    assert (gotcha.severity, gotcha.category) == ("critical", "security")
    assert (gotcha.description, gotcha.workaround) == ("tokens leak", "use the vault")
    assert gotcha.related_files == ["src/**/*.py", "conf/*.toml"]
    assert (gotcha.code_pattern, gotcha.pattern_kind) == (r"token\s*=", "regex")
    assert gotcha.error_pattern == "401 Unauthorized"


@pytest.mark.parametrize(
    ("fields", "problem"),
    [
        ({"id": "1a2b3c4d"}, "id must look like G-1a2b3c4d, got '1a2b3c4d'"),
        ({"id": "G-12"}, "id must look like G-1a2b3c4d, got 'G-12'"),
        ({"id": "G-ABCD1234"}, "id must look like G-1a2b3c4d, got 'G-ABCD1234'"),
        ({"id": 7}, "id must look like G-1a2b3c4d, got 7"),
        ({"title": "   "}, "a title is required"),
        ({"title": 3}, "a title is required"),
        (
            {"severity": "urgent"},
            "severity must be one of critical, high, medium, low, got 'urgent'",
        ),
        (
            {"category": "misc"},
            "category must be one of build, test, lint, runtime, integration, security,"
            " general, got 'misc'",
        ),
        ({"description": 3}, "description must be text"),
        ({"workaround": ["a"]}, "workaround must be text"),
        ({"pattern": 1}, "pattern must be text"),
        ({"error_pattern": True}, "error_pattern must be text"),
        ({"related_files": "src/*.py"}, "related_files must be a list of globs"),
        ({"related_files": ["a", 1]}, "related_files must be a list of globs"),
        (
            {"pattern": "x", "pattern_kind": "glob"},
            "pattern_kind must be regex or literal, got 'glob'",
        ),
        ({"pattern": "a(b", "pattern_kind": "regex"}, "position"),
    ],
)
def test_an_invalid_entry_is_reported_on_its_line_and_the_others_load(
    store: Store, fields: dict[str, object], problem: str
) -> None:
    body = _entry(id="G-0000aaaa", title="first") + "\n" + _entry(**fields)
    body += "\n" + _entry(id="G-0000cccc", title="third")
    _write(store, body)
    loaded = team.load(store.root)
    assert [g.id for g in loaded.gotchas] == ["G-0000aaaa", "G-0000cccc"]
    [found] = loaded.problems
    header = body.splitlines().index("[[gotchas]]", 1)
    assert found.line == header
    if problem == "position":  # the regex error's own words, with where it is
        assert found.message.startswith("team gotcha #2 ignored: ") and problem in found.message
    else:
        assert found.message == f"team gotcha #2 ignored: {problem}"


def test_a_literal_pattern_is_not_checked_as_a_regex(store: Store) -> None:
    _write(store, _entry(pattern="a(b"))
    [gotcha] = team.load(store.root).gotchas
    assert (gotcha.code_pattern, gotcha.pattern_kind) == ("a(b", "literal")


def test_a_duplicate_id_keeps_the_first(store: Store) -> None:
    _write(store, _entry(title="first") + "\n" + _entry(title="again"))
    loaded = team.load(store.root)
    assert [g.title for g in loaded.gotchas] == ["first"]
    assert [(p.line, p.message) for p in loaded.problems] == [
        (4, "team gotcha #2 ignored: duplicate id G-0000abcd")
    ]


def test_what_is_not_a_list_of_gotchas_is_said(store: Store) -> None:
    _write(store, 'gotchas = "none"\n')
    loaded = team.load(store.root)
    assert loaded.gotchas == []
    assert [(p.line, p.message) for p in loaded.problems] == [
        (0, "`gotchas` must be a list of [[gotchas]] tables")
    ]
    _write(store, "gotchas = [1]\n# a comment to change the size\n")
    [problem] = team.load(store.root).problems
    assert problem == team.TeamProblem(0, "team gotcha #1 ignored: not a table")
    _write(store, "[other]\nx = 1\n")
    assert team.load(store.root).problems == [] and team.load(store.root).gotchas == []


def test_invalid_toml_is_one_problem_on_its_line(store: Store) -> None:
    _write(store, "# team\n\n[[gotchas]]\nid = \n")
    loaded = team.load(store.root)
    [problem] = loaded.problems
    assert problem.line == 3
    assert problem.message.startswith("invalid TOML, no team gotcha loaded: ")


def test_a_file_that_is_not_text_is_a_problem_not_a_crash(store: Store) -> None:
    path = team.team_path(store.root)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"\xff\xfe[[gotchas]]\n")
    [problem] = team.load(store.root).problems
    assert problem.line == 0 and problem.message.startswith("cannot read the team gotchas file")


def test_a_pull_that_changes_the_file_is_picked_up(store: Store) -> None:
    _write(store, _entry(title="before"))
    first = team.load(store.root)
    assert team.load(store.root) is first  # unchanged: read once
    path = team.team_path(store.root)
    stat = path.stat()
    # Same size, newer time (a pull rewriting a word of the same length).
    path.write_text(_entry(title="after!"), encoding="utf-8")
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000))
    assert [g.title for g in team.load(store.root).gotchas] == ["after!"]
    # Same time, another size.
    stat = path.stat()
    path.write_text(_entry(title="after, longer"), encoding="utf-8")
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert [g.title for g in team.load(store.root).gotchas] == ["after, longer"]


def test_promote_creates_the_file_with_its_header_and_every_field(store: Store) -> None:
    added = gotchas.add(
        store,
        "Tokens leak in logs",
        description="the logger prints headers",
        workaround="mask them",
        severity="high",
        category="security",
        related_files=["src/log.py"],
        pattern="Authorization",
        pattern_kind="literal",
        error_pattern="401 Unauthorized",
    )
    promoted = gotchas.promote(store, added.id)
    assert promoted.promoted is True and promoted.id == added.id
    text = team.team_path(store.root).read_text(encoding="utf-8")
    assert text.startswith(team.HEADER_COMMENT)
    [entry] = tomllib.loads(text)["gotchas"]
    assert entry == {
        "id": added.id,
        "title": "Tokens leak in logs",
        "severity": "high",
        "category": "security",
        "description": "the logger prints headers",
        "workaround": "mask them",
        "pattern": "Authorization",
        "pattern_kind": "literal",
        "error_pattern": "401 Unauthorized",
        "related_files": ["src/log.py"],
    }
    assert oct(team.team_path(store.root).stat().st_mode & 0o777) == "0o600"


def test_promote_leaves_out_what_a_gotcha_does_not_have(store: Store) -> None:
    added = gotchas.add(store, "Plain", severity="low", category="general")
    gotchas.promote(store, added.id)
    [entry] = tomllib.loads(team.team_path(store.root).read_text(encoding="utf-8"))["gotchas"]
    assert entry == {"id": added.id, "title": "Plain", "severity": "low", "category": "general"}


def test_promote_updates_an_entry_in_place_among_others(store: Store) -> None:
    _write(store, "# keep me\n" + _entry(id="G-0000aaaa", title="theirs"))
    added = gotchas.add(store, "ours", workaround="first")
    gotchas.promote(store, added.id)
    gotchas.update(store, added.id, workaround="second")
    gotchas.promote(store, added.id)
    text = team.team_path(store.root).read_text(encoding="utf-8")
    entries = tomllib.loads(text)["gotchas"]
    assert [(e["id"], e.get("workaround")) for e in entries] == [
        ("G-0000aaaa", None),
        (added.id, "second"),
    ]
    assert text.startswith("# keep me\n")


def test_promote_into_a_file_without_gotchas_yet(store: Store) -> None:
    _write(store, "# our pitfalls\n")
    added = gotchas.add(store, "first one")
    gotchas.promote(store, added.id)
    text = team.team_path(store.root).read_text(encoding="utf-8")
    assert text.startswith("# our pitfalls\n")
    assert [e["id"] for e in tomllib.loads(text)["gotchas"]] == [added.id]


def test_promoting_a_teammates_gotcha_again_changes_nothing_in_the_store(store: Store) -> None:
    _write(store, _entry(id="G-0000aaaa", title="theirs", severity="high"))
    again = gotchas.promote(store, "G-0000aaaa")
    assert again.source_type == "team" and again.title == "theirs"
    assert store.query_one("SELECT 1 FROM gotchas WHERE id = 'G-0000aaaa'") is None
    entries = tomllib.loads(team.team_path(store.root).read_text(encoding="utf-8"))["gotchas"]
    assert entries == [
        {"id": "G-0000aaaa", "title": "theirs", "severity": "high", "category": "general"}
    ]


def test_promote_refuses_a_broken_file_and_says_how_to_go_on(store: Store) -> None:
    _write(store, "[[gotchas]\n")
    added = gotchas.add(store, "x")
    with pytest.raises(UsageError, match="is not valid TOML") as refused:
        gotchas.promote(store, added.id)
    assert refused.value.hint == "fix the file, then promote again"
    assert team.team_path(store.root).read_text(encoding="utf-8") == "[[gotchas]\n"
    assert gotchas.get(store, added.id).promoted is False


def test_the_package_reaches_tracking_lazily_and_names_what_it_lacks() -> None:
    from memory_core.gotchas import track

    assert gotchas.track_error is track.track_error
    assert gotchas.TrackResult is track.TrackResult
    with pytest.raises(
        AttributeError, match=r"module 'memory_core\.gotchas' has no attribute 'nope'"
    ):
        gotchas.nope  # noqa: B018
    assert set(gotchas.__all__) >= {"promote", "track_error", "list_gotchas", "visible_in_editor"}
