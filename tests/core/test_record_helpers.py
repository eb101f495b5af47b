"""What the hooks and the transcript reader store of a tool call, asked of `record` directly:
texts cut in the middle at their limit, the file or command or search a call names, the error
without its exit-code header, a path made relative to the workspace, a call's one-line summary."""

from __future__ import annotations

from pathlib import Path

import pytest

from memory_core.agents import record
from memory_core.agents.record import ToolCall, ToolOutcome
from memory_core.redact import redact
from memory_core.store import Store


def test_a_text_at_its_limit_is_kept_and_one_character_more_is_cut_in_the_middle() -> None:
    assert record.clip("x" * 100, 100) == "x" * 100
    cut = record.clip("a" * 60 + "b" * 41, 100)
    assert len(cut) <= 100
    head, marker, tail = cut.split("\n")
    assert head == "a" * len(head) and tail == "b" * len(tail) and len(head) == len(tail)
    assert marker == f"[... {101 - 2 * len(head)} characters cut ...]"
    # Cutting a cut text again leaves it as it is, with the true count.
    assert record.clip(cut, 100) == cut


def test_a_tiny_limit_still_keeps_a_character_at_each_end() -> None:
    cut = record.clip("abcdefghij" * 10, 5)
    assert cut.startswith("a\n[... 98 characters cut ...]\n") and cut.endswith("\nj")


def test_clean_cuts_redacts_and_treats_nothing_as_empty() -> None:
    assert record.clean(None) == "" and record.clean("") == ""
    secret = "AKIA" + "ABCDEFGHIJKLMNOP"
    stored = record.clean(f"aws key {secret} in the log")
    assert secret not in stored and stored.startswith("aws key ")
    long = "y" * 5000
    assert len(record.clean(long)) <= record.MAX_TEXT < len(long)
    assert record.clean("short text", 3) == "s\n[... 8 characters cut ...]\nt"


def test_a_secret_across_the_cut_point_is_not_stored_in_part() -> None:
    secret = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
    # Placed so that a cut made before redacting would end inside the token.
    text = "z" * 13 + " " + secret + " " + "z" * 3000
    stored = record.clean(text, 100)
    assert stored.startswith("z" * 13 + " [REDACTED:github")
    assert "ghp_" not in stored and "A1b2" not in stored


@pytest.mark.parametrize(
    ("call_input", "path"),
    [
        ({"file_path": "/w/a.py", "path": "/w/b.py"}, "/w/a.py"),
        ({"notebook_path": "/w/n.ipynb"}, "/w/n.ipynb"),
        ({"filePath": "/w/c.ts"}, "/w/c.ts"),
        ({"path": "src"}, "src"),
        ({"absolute_path": "/w/d.go"}, "/w/d.go"),
        ({"file_path": "", "path": "/w/e.py"}, "/w/e.py"),
        ({"file_path": 3}, None),
        ({}, None),
    ],
)
def test_the_file_a_call_names(call_input: dict, path: str | None) -> None:
    assert record.file_path_of(call_input) == path


def test_the_command_of_a_shell_call_only() -> None:
    assert record.command_of(ToolCall("t", "s", "Bash", {"command": "ls"}, 1.0)) == "ls"
    assert record.command_of(ToolCall("t", "s", "Bash", {"command": ""}, 1.0)) is None
    assert record.command_of(ToolCall("t", "s", "Bash", {"command": ["ls"]}, 1.0)) is None
    assert record.command_of(ToolCall("t", "s", "Task", {"command": "ls"}, 1.0)) is None


def test_what_a_search_looked_for_cut_to_two_hundred_characters() -> None:
    grep = ToolCall("t", "s", "Grep", {"pattern": "def login", "query": "no"}, 1.0)
    assert record.search_of(grep) == "def login"
    assert record.search_of(ToolCall("t", "s", "WebSearch", {"query": "sqlite wal"}, 1.0)) == (
        "sqlite wal"
    )
    assert record.search_of(ToolCall("t", "s", "Glob", {"pattern": "*.py"}, 1.0)) == "*.py"
    assert record.search_of(ToolCall("t", "s", "Read", {"pattern": "x"}, 1.0)) is None
    assert record.search_of(ToolCall("t", "s", "Grep", {"pattern": ""}, 1.0)) is None
    long = ToolCall("t", "s", "Grep", {"pattern": "p" * 201}, 1.0)
    assert len(record.search_of(long) or "") <= 200 and record.search_of(long) != "p" * 201
    exact = ToolCall("t", "s", "Grep", {"pattern": "p" * 200}, 1.0)
    assert record.search_of(exact) == "p" * 200


@pytest.mark.parametrize(
    ("error", "message"),
    [
        ("Exit code 2\nModuleNotFoundError: x", "ModuleNotFoundError: x"),
        ("Error: Exit code 1\n\nboom", "boom"),
        ("exit_code: -9\nKilled", "Killed"),
        (
            "<tool_use_error>File has not been read yet</tool_use_error>",
            "File has not been read yet",
        ),
        ("Exit code 2", "Exit code 2"),
        ("  \nfirst\nExit code 3\nlast", "first\nExit code 3\nlast"),
    ],
)
def test_the_error_worth_tracking_is_without_its_exit_code_header(error: str, message: str) -> None:
    assert record.error_message(error) == message


@pytest.mark.parametrize("size", [record.MAX_ERROR - 20, record.MAX_ERROR, record.MAX_ERROR + 500])
def test_the_error_gotcha_tracking_keeps_is_redacted_headerless_and_cut_at_the_ledgers_limit(
    size: int,
) -> None:
    """Short or long, the message a gotcha learns from has no exit-code header, no secret,
    and no more than the ledger keeps."""
    secret = "AKIA" + "ABCDEFGHIJKLMNOP"
    body = f"token {secret} refused\n" + "e" * size
    error = "Exit code 1\n" + body[: size - len("Exit code 1\n")]
    message = record.tracked_error(error)
    assert not message.startswith("Exit code 1")
    assert secret not in message
    assert len(message) <= record.MAX_ERROR
    if len(error) <= record.MAX_ERROR:
        assert message == record.error_message(redact(error))
    else:
        assert "characters cut" in message and message.endswith("e")


def test_a_path_is_made_relative_to_the_workspace(tmp_path: Path) -> None:
    root = tmp_path / "proj"
    root.mkdir()
    assert record.workspace_path(root, None) is None
    assert record.workspace_path(root, "") is None
    assert record.workspace_path(root, str(root / "src" / "a.py")) == "src/a.py"
    assert record.workspace_path(root, str(root)) == "."
    assert record.workspace_path(root, str(root) + "/") == "."
    assert record.workspace_path(root, "src/b.py", cwd=str(root)) == "src/b.py"
    assert record.workspace_path(root, str(root / "src" / ".." / "c.py")) == "c.py"
    assert record.workspace_path(root, str(root / "src//d.py")) == "src/d.py"
    assert record.workspace_path(root, str(tmp_path / "elsewhere.py")) is None
    assert record.workspace_path(root, str(root / ".." / "out.py")) is None


def test_a_transcript_from_another_folder_names_files_of_this_workspace(tmp_path: Path) -> None:
    root = tmp_path / "proj"
    root.mkdir()
    old = "/home/ann/old-place/proj"
    assert record.workspace_path(root, f"{old}/src/a.py", cwd=old) == "src/a.py"
    assert record.workspace_path(root, "src/a.py", cwd=old) == "src/a.py"
    assert record.workspace_path(root, old, cwd=old) == "."
    assert record.workspace_path(root, old + "/", cwd=old + "/") == "."
    # Another folder that only starts like the old one is not the project, nor one whose
    # name only adds a space.
    assert record.workspace_path(root, old + " ", cwd=old) is None
    assert record.workspace_path(root, f"{old}-backup/a.py", cwd=old) is None
    # A cwd inside the workspace is taken as it is.
    sub = str(root / "pkg")
    assert record.workspace_path(root, "m.py", cwd=sub) == "pkg/m.py"


def test_a_calls_summary_says_what_it_did() -> None:
    bash = ToolCall("t", "s", "Bash", {"command": "pytest -q " + "x" * 400}, 1.0)
    summary = record.tool_summary(bash, None)
    assert summary.startswith("pytest -q xxx") and len(summary) <= 300
    edit = ToolCall("t", "s", "Edit", {"file_path": "/outside/f.py"}, 1.0)
    assert record.tool_summary(edit, "src/f.py") == "src/f.py"
    assert record.tool_summary(edit, None) == "/outside/f.py"
    fetch = ToolCall("t", "s", "WebFetch", {"url": "https://docs.python.org", "prompt": "p"}, 1.0)
    assert record.tool_summary(fetch, None) == "url: https://docs.python.org"
    grep = ToolCall("t", "s", "Grep", {"pattern": "", "query": "q"}, 1.0)
    assert record.tool_summary(grep, None) == "query: q"
    search = ToolCall("t", "s", "Grep", {"pattern": "def check", "query": "q"}, 1.0)
    assert record.tool_summary(search, None) == "pattern: def check"
    task = ToolCall("t", "s", "Task", {"description": "", "prompt": "review it"}, 1.0)
    assert record.tool_summary(task, None) == "prompt: review it"
    assert record.tool_summary(ToolCall("t", "s", "TodoWrite", {}, 1.0), None) == "TodoWrite"


def test_calls_are_equal_field_by_field() -> None:
    call = ToolCall("t1", "s", "Bash", {"command": "ls"}, 1.0)
    assert call == ToolCall("t1", "s", "Bash", {"command": "ls"}, 1.0)
    assert call != ToolCall("t1", "s", "Bash", {"command": "ls -a"}, 1.0)
    assert call != ToolCall("t2", "s", "Bash", {"command": "ls"}, 1.0)
    assert call != "t1"
    assert repr(call).startswith("ToolCall(input={'command': 'ls'}, session_id='s'")


def test_the_exit_code_an_error_reports() -> None:
    assert record.exit_code_of("Exit code 3\nboom") == 3
    assert record.exit_code_of(None) is None


ORIGINAL = "a = 1\nb = 1\nc = 2\n"


def test_a_past_edit_is_rebuilt_from_the_call_and_its_result() -> None:
    def edit(**given: object) -> ToolCall:
        return ToolCall("t", "s", "Edit", dict(given), 1.0)

    result = {"originalFile": ORIGINAL}
    once = edit(old_string="= 1", new_string="= 9")
    assert record.reconstructed_after(once, result) == "a = 9\nb = 1\nc = 2\n"
    every = edit(old_string="= 1", new_string="= 9", replace_all=True)
    assert record.reconstructed_after(every, result) == "a = 9\nb = 9\nc = 2\n"
    truthy = edit(old_string="= 1", new_string="= 9", replace_all="yes")
    assert record.reconstructed_after(truthy, result) == "a = 9\nb = 1\nc = 2\n"
    assert record.reconstructed_after(once, {"originalFileContents": ORIGINAL}) == (
        "a = 9\nb = 1\nc = 2\n"
    )
    assert record.reconstructed_after(edit(old_string="zzz", new_string="y"), result) is None
    assert record.reconstructed_after(edit(old_string=1, new_string="y"), result) is None
    assert record.reconstructed_after(once, "not a dict") is None
    assert record.reconstructed_after(once, {"originalFile": None}) is None
    multi = ToolCall(
        "t",
        "s",
        "MultiEdit",
        {
            "edits": [
                {"old_string": "c = 2", "new_string": "c = 3"},
                "junk",
                {"old_string": "a", "new_string": "A"},
            ]
        },
        1.0,
    )
    assert record.reconstructed_after(multi, result) == "A = 1\nb = 1\nc = 3\n"
    write = ToolCall("t", "s", "Write", {"content": "new\n"}, 1.0)
    assert record.reconstructed_after(write, None) == "new\n"
    assert record.reconstructed_after(ToolCall("t", "s", "Read", {}, 1.0), result) is None


def test_a_failed_command_is_stored_cut_to_a_thousand_characters_with_its_exit_code(
    store: Store,
) -> None:

    command = "echo " + "x" * 1200
    call = ToolCall("toolu_1", "S-cmd", "Bash", {"command": command}, 100.0)
    outcome = ToolOutcome(ok=False, error="Exit code 7\nno such thing")
    record.apply_outcome(store, call, outcome)
    [row] = store.query("SELECT command, exit_code FROM session_commands")
    assert row["exit_code"] == 7
    assert row["command"] == record.clip(command, 1000)
    short = ToolCall("toolu_2", "S-cmd", "Bash", {"command": "echo " + "y" * 995}, 101.0)
    record.apply_outcome(store, short, ToolOutcome(ok=True))
    rows = store.query("SELECT command, exit_code FROM session_commands ORDER BY ts")
    assert rows[1]["command"] == "echo " + "y" * 995 and rows[1]["exit_code"] == 0


def test_files_an_agent_wrote_are_listed_in_the_workspace_or_apart_outside_it(
    store: Store, tmp_path: Path
) -> None:
    inside = ToolCall("t1", "S-f", "Write", {"file_path": str(store.root / "a.py")}, 1.0)
    plan = str(tmp_path / "plans" / "plan.md")
    outside = ToolCall("t2", "S-f", "Write", {"file_path": plan}, 2.0)
    read = ToolCall("t3", "S-f", "Read", {"file_path": str(tmp_path / "notes.md")}, 3.0)
    for call in (inside, outside, read):
        record.apply_outcome(store, call, ToolOutcome(ok=True))
    record.apply_outcome(
        store,
        ToolCall("t4", "S-f", "Write", {"file_path": "/elsewhere/x"}, 4.0),
        ToolOutcome(ok=False),
    )
    rows = store.query("SELECT path, outside FROM session_files ORDER BY first_ts")
    assert [(r["path"], r["outside"]) for r in rows] == [("a.py", 0), (plan, 1)]
