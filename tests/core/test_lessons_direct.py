"""What a failure taught, asked of the tool calls directly: the step named as the fix, the
variant that worked instead, the error line. (test_lessons.py checks the same through a whole
transcript and the texts built from it.)"""

from __future__ import annotations

import pytest

from memory_core.agents import lessons
from memory_core.store import Store

SID = "S-lessons"


def _calls(store: Store, *calls: tuple, session: str = SID) -> None:
    """Each call: (ts, tool, ok, command or path[, sidechain])."""
    with store.transaction() as db:
        for n, (ts, tool, ok, what, *rest) in enumerate(calls):
            is_file = tool in (*lessons.FILE_TOOLS, "Read")
            db.execute(
                "INSERT INTO agent_tool_uses (tool_use_id, session_id, ts, tool, ok, sidechain, "
                "path, command) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    f"{session}-{n}-{ts}",
                    session,
                    ts,
                    tool,
                    ok,
                    rest[0] if rest else 0,
                    what if is_file else None,
                    None if is_file else what,
                ),
            )


def test_the_fix_is_the_last_real_step_before_the_command_worked_again(store: Store) -> None:
    _calls(
        store,
        (1, "Bash", 0, "pytest -q"),
        (2, "Bash", 1, "pip install -e ."),
        (3, "Bash", 1, "pip install pytest-asyncio"),
        (4, "Bash", 1, "git status"),
        (5, "Bash", 1, "pytest   -q"),  # the same command, spaced otherwise
        (6, "Bash", 1, "make docs"),
    )
    assert lessons.fix_after(store, SID, "pytest -q", 1) == "`pip install pytest-asyncio`"


def test_a_failure_again_restarts_the_search_for_the_fix(store: Store) -> None:
    _calls(
        store,
        (1, "Bash", 0, "make"),
        (2, "Bash", 1, "apt-get install -y libssl-dev"),
        (3, "Bash", 0, "make"),
        (4, "Bash", 1, "./configure --with-ssl"),
        (5, "Bash", 1, "make"),
    )
    assert lessons.fix_after(store, SID, "make", 1) == "`./configure --with-ssl`"


def test_a_failed_step_in_between_is_not_the_fix(store: Store) -> None:
    _calls(
        store,
        (1, "Bash", 0, "npm test"),
        (2, "Bash", 1, "npm ci"),
        (3, "Bash", 0, "npm install left-pad"),
        (4, "Bash", 1, "npm test"),
    )
    assert lessons.fix_after(store, SID, "npm test", 1) == "`npm ci`"


def test_the_same_run_printing_less_closes_the_window(store: Store) -> None:
    _calls(
        store,
        (1, "Bash", 0, "pytest -s tests/test_api.py"),
        (2, "Bash", 1, "pip install httpx"),
        (3, "Bash", 1, "pytest tests/test_api.py"),
        (4, "Bash", 1, "pip install ruff"),
        (5, "Bash", 1, "pytest -s tests/test_api.py"),
    )
    assert lessons.fix_after(store, SID, "pytest -s tests/test_api.py", 1) == "`pip install httpx`"


def test_a_failed_quieter_run_does_not_close_the_window(store: Store) -> None:
    _calls(
        store,
        (1, "Bash", 0, "pytest -s tests/test_api.py"),
        (2, "Bash", 0, "pytest tests/test_api.py"),
        (3, "Bash", 1, "pip install httpx"),
        (4, "Bash", 1, "pytest -s tests/test_api.py"),
    )
    assert lessons.fix_after(store, SID, "pytest -s tests/test_api.py", 1) == "`pip install httpx`"


LOOKING_OR_PUTTING_BACK = (
    "ls -la",
    "cat setup.cfg",
    "grep -rn foo .",
    "git diff",
    "git log -3",
    "git checkout -- src/app.py",
    "git checkout HEAD -- src/app.py",
    "git restore src/app.py",
    "git reset --hard",
    "rm -rf build",
    "  which python",
)


def test_looking_or_putting_back_is_not_a_fix_and_edits_are(store: Store) -> None:
    for n, looking in enumerate(LOOKING_OR_PUTTING_BACK):
        session = f"S-look-{n}"
        _calls(
            store,
            (1, "Bash", 0, "pytest"),
            (2, "Edit", 1, "src/app.py"),
            (3, "Bash", 1, looking),
            (4, "Bash", 1, "pytest"),
            session=session,
        )
        assert lessons.fix_after(store, session, "pytest", 1) == "editing `src/app.py`", looking


def test_commands_that_only_start_like_a_look_are_fixes(store: Store) -> None:
    for n, doing in enumerate(
        ("rmdir old", "lsof -i :8000", "git checkout -b fix", "catkin build", "git commit -am x")
    ):
        session = f"S-do-{n}"
        _calls(
            store,
            (1, "Bash", 0, "pytest"),
            (2, "Bash", 1, doing),
            (3, "Bash", 1, "pytest"),
            session=session,
        )
        assert lessons.fix_after(store, session, "pytest", 1) == f"`{doing}`"


def test_the_files_edited_are_named_once_each_at_most_three(store: Store) -> None:
    _calls(
        store,
        (1, "Bash", 0, "cargo build"),
        (2, "Edit", 1, "src/a.rs"),
        (3, "Write", 1, "src/b.rs"),
        (4, "MultiEdit", 1, "src/a.rs"),
        (5, "Edit", 0, "src/failed.rs"),
        (6, "Read", 1, "src/read.rs"),
        (7, "NotebookEdit", 1, "nb.ipynb"),
        (8, "Edit", 1, "src/d.rs"),
        (9, "Bash", 1, "cargo build"),
    )
    assert lessons.fix_after(store, SID, "cargo build", 1) == (
        "editing `src/a.rs`, `src/b.rs`, `nb.ipynb`"
    )


def test_no_fix_when_nothing_happened_between_or_it_never_worked(store: Store) -> None:
    _calls(store, (1, "Bash", 0, "pytest"), (2, "Bash", 1, "pytest"))
    assert lessons.fix_after(store, SID, "pytest", 1) is None  # flaky: it just passed
    _calls(store, (1, "Bash", 0, "make"), (2, "Bash", 1, "pip install x"), session="S-never")
    assert lessons.fix_after(store, "S-never", "make", 1) is None
    _calls(store, (1, "Bash", 0, "tox"), (2, "Bash", 1, "ls"), (3, "Bash", 1, "tox"), session="S3")
    assert lessons.fix_after(store, "S3", "tox", 1) is None


def test_only_this_sessions_own_later_calls_count(store: Store) -> None:
    _calls(
        store,
        (1, "Bash", 1, "pip install before"),  # before the failure: not the fix
        (2, "Bash", 0, "pytest"),
        (3, "Bash", 1, "pip install by-a-subagent", 1),
        (4, "Bash", 1, "pytest"),
    )
    _calls(store, (3, "Bash", 1, "pip install elsewhere"), session="S-other")
    assert lessons.fix_after(store, SID, "pytest", 2) is None
    # The failure's own time is not after it.
    _calls(store, (5, "Bash", 0, "make"), (6, "Bash", 1, "make"), session="S-same")
    assert lessons.fix_after(store, "S-same", "make", 6) is None


def test_a_variant_that_worked_is_named_when_the_command_never_did(store: Store) -> None:
    _calls(
        store,
        (1, "Bash", 0, "pytest tests"),
        (2, "Bash", 1, "pip install pytest-cov"),
        (3, "Bash", 0, "pytest tests -p no:cov"),
        (4, "Bash", 1, "pytest tests --no-cov"),
        (5, "Bash", 1, "pytest tests -x"),
    )
    assert lessons.worked_instead(store, SID, "pytest tests", 1) == "`pytest tests --no-cov`"


def test_no_variant_when_the_command_itself_worked_again_first(store: Store) -> None:
    _calls(
        store,
        (1, "Bash", 0, "pytest tests"),
        (2, "Bash", 1, "pytest  tests"),
        (3, "Bash", 1, "pytest tests --no-cov"),
    )
    assert lessons.worked_instead(store, SID, "pytest tests", 1) is None


def test_no_variant_from_another_program_another_session_or_before(store: Store) -> None:
    _calls(
        store,
        (1, "Bash", 1, "pytest tests --no-cov"),
        (2, "Bash", 0, "pytest tests"),
        (3, "Bash", 1, "python -m pytest tests"),
        (4, "Bash", 1, "pytest tests --lf", 1),
    )
    _calls(store, (3, "Bash", 1, "pytest tests -k api"), session="S-other")
    assert lessons.worked_instead(store, SID, "pytest tests", 2) is None


@pytest.mark.parametrize("error", [None, "", "  \n\t "])
def test_no_error_line_without_an_error(error: str | None) -> None:
    assert lessons.error_line(error) == ""


def test_the_error_line_skips_the_exit_code_and_joins_its_spaces() -> None:
    error = "Exit code 1\nTraceback (most recent call last):\n  File \"x.py\", line 1\nKeyError:   'user'\n"
    assert lessons.error_line(error) == "KeyError: 'user'"


def test_a_failure_again_drops_the_steps_before_it_even_when_they_were_real(store: Store) -> None:
    _calls(
        store,
        (1, "Bash", 0, "make"),
        (2, "Bash", 1, "./configure"),
        (3, "Bash", 0, "make"),
        (4, "Bash", 1, "ls"),
        (5, "Edit", 1, "Makefile"),
        (6, "Bash", 1, "make"),
    )
    assert lessons.fix_after(store, SID, "make", 1) == "editing `Makefile`"


def test_a_file_the_session_put_back_as_it_was_is_not_the_fix(store: Store) -> None:
    _calls(
        store,
        (1, "Bash", 0, "pytest"),
        (2, "Edit", 1, "src/app.py"),
        (3, "Edit", 1, "src/app.py"),
        (4, "Edit", 1, "src/other.py"),
        (5, "Bash", 1, "pytest"),
    )
    with store.transaction() as db:
        for ts, path, before, after in (
            (2, "src/app.py", "h0", "h1"),
            (3, "src/app.py", "h1", "h0"),  # the second edit undid the first
            (4, "src/other.py", "h2", "h3"),
        ):
            db.execute(
                "INSERT INTO file_changes (ts, path, actor, session_id, change, hash_before, "
                "hash_after) VALUES (?, ?, 'agent', ?, 'modified', ?, ?)",
                (ts, path, SID, before, after),
            )
    assert lessons.fix_after(store, SID, "pytest", 1) == "editing `src/other.py`"
