"""Ignore rules compiled once and kept in the store: a cold process (the CLI, a hook) rebuilds them
without pathspec, and still sees every change of what decides a checkpoint's files: a changed
`.gitignore`, a new nested one, changed settings."""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from memory_core import checkpoints, config, journal
from memory_core.checkpoints.disk import StoredRules
from memory_core.store import Store


def _write(root: Path, rel: str, text: str) -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    past = time.time() - 60  # old enough for the stat cache to trust
    os.utime(path, (past, past))


@pytest.fixture
def project(store: Store) -> Store:
    for rel in ("app.py", "debug.log", "notes.tmp", "sub/secret.txt", "sub/keep.txt"):
        _write(store.root, rel, f"{rel}\n")
    _write(store.root, ".gitignore", "*.log\n")
    return store


@pytest.fixture(autouse=True)
def cold() -> Iterator[None]:
    """Each test starts, as a new process does, with nothing compiled in memory."""
    journal._MATCHERS.clear()
    yield
    journal._MATCHERS.clear()


def _cold_checkpoint(store: Store, settings: config.Settings | None = None) -> set[str]:
    """A checkpoint as a new process takes it: nothing compiled in memory, and pathspec cannot
    even be imported (so every rule kept in the store is rebuilt without it)."""
    journal._MATCHERS.clear()
    made = checkpoints.create(store, settings=settings)
    return {item["path"] for item in checkpoints.manifest(store, made["id"])}


def _kept(store: Store) -> int:
    (count,) = store.query_one(
        "SELECT COUNT(*) FROM store_meta WHERE key LIKE ?", (StoredRules.PREFIX + "%",)
    )
    return int(count)


def test_a_cold_process_compiles_nothing_it_compiled_before(
    project: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = _cold_checkpoint(project)
    assert "debug.log" not in first and "app.py" in first
    assert _kept(project) >= 3  # the editors' and secret files' patterns, the .gitignore
    monkeypatch.setitem(sys.modules, "pathspec", None)  # importing it now fails
    _write(project.root, "other.log", "x\n")
    again = _cold_checkpoint(project)
    assert again == first  # other.log ignored by the rules rebuilt from the store


def test_a_changed_gitignore_is_seen_by_the_next_cold_checkpoint(project: Store) -> None:
    assert "notes.tmp" in _cold_checkpoint(project)
    _write(project.root, ".gitignore", "*.tmp\n")
    paths = _cold_checkpoint(project)
    assert "notes.tmp" not in paths and "debug.log" in paths


def test_a_new_nested_gitignore_is_seen_by_the_next_cold_checkpoint(project: Store) -> None:
    assert "sub/secret.txt" in _cold_checkpoint(project)
    _write(project.root, "sub/.gitignore", "secret.txt\n")
    paths = _cold_checkpoint(project)
    assert "sub/secret.txt" not in paths and "sub/keep.txt" in paths


def test_changed_watch_settings_are_seen_by_the_next_cold_checkpoint(project: Store) -> None:
    assert "app.py" in _cold_checkpoint(project)
    config.set_value(project.root, "watch.exclude", ["app.py"])
    assert "app.py" not in _cold_checkpoint(project)
    config.set_value(project.root, "watch.exclude", [])
    config.set_value(project.root, "checkpoints.include_secret_files", True)
    _write(project.root, ".env", "TOKEN=x\n")
    assert {"app.py", ".env"} <= _cold_checkpoint(project)


def test_a_gitignore_with_negations_still_decides_as_git_does(project: Store) -> None:
    _write(project.root, ".gitignore", "*.txt\n!keep.txt\n")
    for _ in range(2):  # the second time from what the first kept
        paths = _cold_checkpoint(project)
        assert "sub/keep.txt" in paths and "sub/secret.txt" not in paths


def test_rules_rebuilt_from_the_store_decide_as_pathspec_does() -> None:
    """The same verdict for every path, whether compiled by pathspec here or rebuilt from the
    regex the store kept (the rules of a real project's .gitignore, editors' and secret files)."""
    import pathspec

    kept: dict[str, str] = {}

    class Memory(journal.RuleSources):
        def get(self, key: str) -> str | None:
            return kept.get(key)

        def put(self, key: str, source: str) -> None:
            kept[key] = source

    files = [
        ("node_modules/", "dist", "/build", "*.py[cod]", "**/logs/*.log", "a/**/b", "\\#x#"),
        journal.EDITOR_FILE_PATTERNS,
        tuple(p for p in journal.SECRET_FILE_PATTERNS),
    ]
    paths = [
        "node_modules/x.js",
        "src/node_modules/y",
        "dist",
        "dist/a.js",
        "src/dist",
        "build/out",
        "src/build/out",
        "m.pyc",
        "pkg/m.pyo",
        "logs/a.log",
        "x/logs/a.log",
        "a/b",
        "a/x/y/b",
        "#x#",
        ".#lock",
        "f.swp",
        ".f.swp",
        "file~",
        ".env",
        ".env.local",
        "config/id_rsa.pub",
        "certs/server.pem",
        "src/app.py",
        "README.md",
    ]
    for lines in files:
        journal._MATCHERS.clear()
        compiled = journal._compiled(tuple(lines), Memory())  # compiled, and kept
        journal._MATCHERS.clear()
        rebuilt = journal._compiled(tuple(lines), Memory())  # from what was kept
        assert rebuilt.spec is None  # (not compiled again)
        spec = pathspec.GitIgnoreSpec.from_lines(lines)
        for path in paths:
            expected = spec.check_file(path).include
            assert compiled.check(path) == rebuilt.check(path) == (True if expected else None), (
                lines,
                path,
            )


def test_comments_and_blank_lines_decide_nothing_and_share_the_rules_alone() -> None:
    """An ignore file's comments and blank lines are no rules (git's reading): the file is
    compiled as its rules alone, and decides as git does; a line with a space before its `#`
    is a pattern, not a comment."""
    import pathspec

    lines = ("# build output", "", "*.log", "   ", " #kept", "\\#literal#")
    matcher = journal._compiled(lines)
    assert matcher is journal._compiled(("*.log", " #kept", "\\#literal#"))
    spec = pathspec.GitIgnoreSpec.from_lines(lines)
    for path in ("a.log", "src/b.log", " #kept", "#literal#", "# build output", "app.py"):
        assert matcher.check(path) == (True if spec.check_file(path).include else None), path


def test_a_process_that_compiled_the_defaults_needs_nothing_for_a_default_workspace(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The resident server compiles the default rules once before it forks: a workspace with
    default settings and git's comment-only `.git/info/exclude` then needs no compiling (not
    even pathspec), and its rules decide as they always did."""
    info = tmp_path / ".git" / "info"
    info.mkdir(parents=True)
    (info / "exclude").write_text(
        "# git ls-files --others --exclude-from=.git/info/exclude\n"
        "# Lines that start with '#' are comments.\n# *.[oa]\n# *~\n"
    )
    journal.compile_default_rules()
    monkeypatch.setitem(sys.modules, "pathspec", None)  # compiling anything now fails
    rules = journal.checkpoint_rules(tmp_path, [])
    for path, ignored in (
        (".env", True),
        ("config/.env.example", False),
        ("keys/id_rsa", True),
        ("keys/id_rsa.pub", False),
        ("notes.txt~", True),
        (".main.py.swp", True),
        ("main.py", False),
        ("lib.o", False),  # (a commented-out pattern of the template)
    ):
        assert rules.path_ignored(path) is ignored, path
