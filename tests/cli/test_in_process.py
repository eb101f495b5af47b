"""The in-process runner of the CLI tests (tests/engram_in_process.py) answers as a process.

Each check runs the same command line both ways and compares what a user sees: exit status,
stdout, stderr. A difference here would make every in-process CLI test say something about a
command no user runs.
"""

from __future__ import annotations

import ast
import os
import re
import sys
from pathlib import Path

import pytest

import memory_core
from tests.conftest import run_cli_process
from tests.engram_in_process import PROCESS_CACHES, PURE_CACHES, run_in_process


def _both_ways(tmp_path: Path, *commands: tuple[tuple[str, ...], str | None]) -> None:
    """Run the same commands (args, stdin) in one workspace in this process and in another as
    processes; what each command shows must be the same, the workspace's path aside."""
    runs = []
    for name, run in (
        ("in-process", lambda args, cwd, stdin: run_in_process(args, cwd=cwd, stdin=stdin)),
        (
            "process",
            lambda args, cwd, stdin: tuple(
                vars(run_cli_process(*args, cwd=cwd, stdin=stdin)).values()
            ),
        ),
    ):
        workspace = tmp_path / name / "project"
        workspace.mkdir(parents=True)
        shown = []
        for args, stdin in commands:
            code, out, err = run(args, workspace, stdin)
            shown.append(
                (args, code, out.replace(str(workspace), "WS"), err.replace(str(workspace), "WS"))
            )
        runs.append(shown)
    assert runs[0] == runs[1]


def test_exit_status_and_output_match_a_process(tmp_path: Path) -> None:
    # 0 with output, 2 from argparse (SystemExit), 1 from an EngramError, --json errors on
    # stdout, --version (SystemExit 0 after printing), a missing store, a number too large.
    _both_ways(
        tmp_path,
        *(
            (args, None)
            for args in (
                ("--version",),
                ("init", "--bogus"),
                ("--json", "init", "--bogus"),
                ("gotcha", "list", "--json"),
                ("init",),
                ("rollback", "C-missing"),
                ("memory", "list", "--limit", "99999999999999999999999"),
            )
        ),
    )


def test_stdin_is_read_as_a_process_reads_it(tmp_path: Path) -> None:
    _both_ways(
        tmp_path,
        (("init",), None),
        # CRLF kept as sent (a process's stdin does not translate newlines), non-ASCII text.
        (("memory", "add", "-", "--type", "fact"), "café au lait\r\nsecond line\n"),
        (("memory", "list", "--json"), None),
        # A hook reads its payload from stdin's bytes and always exits 0.
        (("hook", "claude-code", "PostToolUse"), "{not json"),
    )


def test_an_escaping_exception_is_a_traceback_and_status_1(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import memory_core.cli.entry as entry

    def broken(argv: object = None) -> int:
        raise RuntimeError("boom")

    monkeypatch.setattr(entry, "main", broken)
    code, out, err = run_in_process(("status",), cwd=workspace)
    assert (code, out) == (1, "")
    assert err.startswith("Traceback (most recent call last):")
    assert err.rstrip().endswith("RuntimeError: boom")


def test_nothing_of_a_command_is_left_in_the_test_process(workspace: Path) -> None:
    before = (os.getcwd(), dict(os.environ), sys.argv, sys.stdout, sys.stderr, sys.stdin)
    # The environment given reaches the command: with HOME set to the project, engram refuses
    # to take the home folder as a workspace.
    code, out, _ = run_in_process(("--json", "init"), cwd=workspace, env={"HOME": str(workspace)})
    assert code == 2 and "refusing to use the home folder" in out
    after = (os.getcwd(), dict(os.environ), sys.argv, sys.stdout, sys.stderr, sys.stdin)
    assert after == before
    # ... and is gone for the next command, which runs in its own folder again.
    code, out, _ = run_in_process(("init",), cwd=workspace)
    assert code == 0 and "Initialised engram store" in out


_MUTATING_METHODS = frozenset(
    {
        "append",
        "extend",
        "insert",
        "remove",
        "clear",
        "update",
        "add",
        "discard",
        "pop",
        "popitem",
        "setdefault",
    }
)
# A module can only hold state if it has one of these: a top-level container or object bound to
# a name, a `global` statement, a cached function.
_MAY_HOLD_STATE = re.compile(
    r"^\w+\s*(:[^=\n]*)?=\s*(\[|\{|set\(|dict\(|list\(|threading\.local\()|^\s+global\s|cache\b",
    re.MULTILINE,
)
_CACHING_DECORATORS = frozenset({"lru_cache", "functools.lru_cache", "cache", "functools.cache"})


def _process_state_of(path: Path) -> set[str]:
    """Top-level names of a module that its functions change (rebound with `global`, items or
    attributes set, a mutating method called), and functions whose results are cached."""
    text = path.read_text(encoding="utf-8")
    if not _MAY_HOLD_STATE.search(text):  # (parsing every module takes seconds)
        return set()
    tree = ast.parse(text)
    top = {
        target.id
        for node in tree.body
        if isinstance(node, ast.Assign | ast.AnnAssign)
        for target in (node.targets if isinstance(node, ast.Assign) else [node.target])
        if isinstance(target, ast.Name)
    }
    found: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            decorators = {ast.unparse(d).split("(")[0] for d in node.decorator_list}
            if decorators & _CACHING_DECORATORS:
                found.add(node.name)
    for node in ast.walk(tree):
        if isinstance(node, ast.Global):
            found.update(node.names)
        elif isinstance(node, ast.Assign | ast.AugAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                if (
                    isinstance(target, ast.Subscript | ast.Attribute)
                    and isinstance(target.value, ast.Name)
                    and target.value.id in top
                ):
                    found.add(target.value.id)
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in _MUTATING_METHODS
            and isinstance(node.func.value, ast.Name)
            and node.func.value.id in top
        ):
            found.add(node.func.value.id)
    return found


def test_every_cache_of_memory_core_is_emptied_between_commands_or_pure() -> None:
    """State memory_core keeps for a process's life must be listed in
    tests/engram_in_process.py: emptied before each in-process command (PROCESS_CACHES), or
    the same whatever ran before (PURE_CACHES). A new cache fails here until it is listed."""
    package = Path(memory_core.__file__).parent
    listed = set(PROCESS_CACHES) | set(PURE_CACHES)
    found = set()
    for path in sorted(package.rglob("*.py")):
        module = ".".join(path.relative_to(package.parent).with_suffix("").parts)
        found |= {(module.removesuffix(".__init__"), n) for n in _process_state_of(path)}
    assert sorted(found - listed) == []
    # Each listed name is still what the scan finds (a renamed cache would be reset no more).
    assert sorted(listed - found) == []
