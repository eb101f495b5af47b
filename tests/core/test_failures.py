"""The one definition of a failed tool call or command (`agents.failures`)."""

from __future__ import annotations

import pytest

from memory_core.agents import failures
from tests.agents_fixtures import HOOK_BLOCK, NPM_BUILD_FAILURE, gemini_shell_output


@pytest.fixture(autouse=True)
def _commands_read_afresh() -> None:
    """`tests_run_by` remembers its answers; each test reads its commands afresh (a mutation
    run forks every test from a process that already ran them)."""
    failures.tests_run_by.cache_clear()


@pytest.mark.parametrize(
    ("kwargs", "kind", "code"),
    [
        # Claude Code: a non-zero exit, with and without the "Error: " of toolUseResult.
        ({"is_error": True, "text": "Exit code 1\nFAIL x"}, "exit", 1),
        ({"is_error": True, "text": "Error: Exit code 137\nKilled"}, "exit", 137),
        # npm's own words, no "Exit code" anywhere: still failed (is_error).
        ({"is_error": True, "text": NPM_BUILD_FAILURE}, "error", None),
        # Gemini CLI reports a failing shell command with status success and "Exit Code: N".
        ({"text": gemini_shell_output("npm test", "1 failing", 1), "status": "success"}, "exit", 1),
        ({"status": "error", "text": "File not found"}, "error", None),
        ({"status": "cancelled"}, "interrupted", None),
        # Interrupted and rejected calls.
        (
            {"is_error": True, "text": "[Request interrupted by user for tool use]"},
            "interrupted",
            None,
        ),
        (
            {
                "is_error": True,
                "text": "The user doesn't want to proceed with this tool use. The tool use was rejected",
            },
            "interrupted",
            None,
        ),
        ({"structured": {"stdout": "", "stderr": "", "interrupted": True}}, "interrupted", None),
        # A call a hook blocked (Claude Code's own text), and a timeout.
        ({"is_error": True, "text": HOOK_BLOCK}, "blocked", None),
        ({"is_error": True, "text": "PreToolUse:Edit hook error: not allowed"}, "blocked", None),
        ({"is_error": True, "text": "Command timed out after 2m 0.0s"}, "timeout", None),
        # Other phrasings of an exit code, when the call is marked failed.
        ({"is_error": True, "text": "go: exit status 2"}, "exit", 2),
        ({"is_error": True, "text": "Command failed with exit code 3: make"}, "exit", 3),
    ],
)
def test_every_phrasing_of_a_failure_is_a_failure(
    kwargs: dict, kind: str, code: int | None
) -> None:
    failure = failures.classify(**kwargs)
    assert failure is not None
    assert (failure.kind, failure.exit_code) == (kind, code)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"text": "3 passed in 0.12s"},
        {"structured": {"stdout": "ok", "stderr": "", "interrupted": False}},
        {"text": gemini_shell_output("npm test", "all passing", 0), "status": "success"},
        # Output that talks about exit codes without being one (a successful grep).
        {"text": "docs/x.md:12: the process exit status is logged"},
    ],
)
def test_a_success_is_not_a_failure(kwargs: dict) -> None:
    assert failures.classify(**kwargs) is None


def test_a_failure_followed_by_a_success_of_the_same_command_is_not_still_failing() -> None:
    runs = [
        ("git push", False, 1.0),
        ("pytest  -q", False, 2.0),
        ("git push", True, 3.0),
        ("pytest -q", False, 4.0),
        ("make", False, 5.0),
    ]
    assert failures.still_failing(runs) == ["pytest -q", "make"]


@pytest.mark.parametrize(
    ("text", "code"),
    [
        (None, None),
        ("", None),
        ("no code here", None),
        ("Exit code 2", 2),
        ("  error: exit code: -1\n", -1),  # any case, its own line, negative
        ("EXIT_CODE 7", 7),
        ("stdout...\nExit Code: 130\n", 130),  # Gemini CLI's line
        ("exit status 1", 1),  # go
        ("child exited with code 9", 9),
        ("Process exited with exit code: 4", 4),
        ("npm failed with exit code 254", 254),
        ("Command '['ls']' returned non-zero exit status 2.", 2),
        ("the exit status is logged", None),
        ("Exit code\n", None),
    ],
)
def test_the_exit_code_in_any_phrasing(text: str | None, code: int | None) -> None:
    assert failures.exit_code_in(text) == code


def test_the_exit_code_of_a_long_output_is_found_at_either_end() -> None:
    filler = "x" * 5000
    assert failures.exit_code_in("Exit code 3\n" + filler) == 3
    assert failures.exit_code_in(filler + "\nexit status 4") == 4
    # Lost in the middle of a long output: not read as the command's own.
    assert failures.exit_code_in(filler + "\nExit code 5\n" + filler) is None
    # At the edge of the window: the first 2000 characters are read.
    assert failures.exit_code_in("y" * 1985 + "\nExit code 6\n" + filler) == 6


@pytest.mark.parametrize(
    ("kwargs", "expected"),
    [
        ({"structured": {"exitCode": 2}}, failures.Failure("exit", 2)),
        ({"structured": {"exit_code": 1}}, failures.Failure("exit", 1)),
        ({"structured": {"exitCode": 0}}, None),
        ({"structured": {"exitCode": True}}, None),  # a flag, not a code
        ({"structured": {"exitCode": "1"}}, None),
        ({"structured": "Exit code 8\nboom"}, failures.Failure("exit", 8)),
        ({"text": "ok", "structured": "Exit code 8"}, None),  # the text is the result
        ({"status": "FAILED", "text": "boom"}, failures.Failure("error")),
        ({"status": "failure", "text": ""}, failures.Failure("error")),
        ({"status": "success", "text": "done"}, None),
        ({"status": "Canceled"}, failures.Failure("interrupted")),
        ({"interrupted": True, "text": "Exit code 1"}, failures.Failure("interrupted", 1)),
        ({"text": "  [Request interrupted by user]"}, failures.Failure("interrupted")),
        ({"text": "Exit code 0\nfine"}, None),
        ({"is_error": True, "text": "Exit code 0\nbut failed"}, failures.Failure("error", 0)),
        ({"text": "Exit code 124\nCommand timed out"}, failures.Failure("timeout", 124)),
        ({"is_error": True, "text": "deadline exceeded"}, failures.Failure("timeout")),
        ({"is_error": True, "text": "Blocked by the PreToolUse hook"}, failures.Failure("blocked")),
        ({"is_error": True, "text": "BeforeTool: call denied"}, failures.Failure("blocked")),
        ({"text": "hook error: nothing failed here"}, None),  # not marked failed
        ({"is_error": True, "text": "x" * 500 + " timed out"}, failures.Failure("error")),
    ],
)
def test_how_each_agent_reports_a_call(kwargs: dict, expected: failures.Failure | None) -> None:
    assert failures.classify(**kwargs) == expected
    assert failures.failed(**kwargs) is (expected is not None)


def test_failures_read_as_plain_words() -> None:
    describe = failures.describe
    assert describe(failures.Failure("exit", 2)) == "exit code 2"
    assert describe(failures.Failure("blocked")) == "blocked by a hook"
    assert describe(failures.Failure("timeout", 124)) == "timed out"
    assert describe(failures.Failure("interrupted")) == "interrupted"
    assert describe(failures.Failure("error")) == "error"
    assert describe(failures.Failure("error", 0)) == "error (exit code 0)"


def test_a_failure_is_a_value() -> None:
    one, same, other = (
        failures.Failure("exit", 1),
        failures.Failure("exit", 1),
        failures.Failure("exit", 2),
    )
    assert one == same and hash(one) == hash(same) and one != other
    assert len({one, same, other}) == 2
    assert one != ("exit", 1)
    assert repr(one) == "Failure(exit_code=1, kind='exit')"
    run = failures.RunOfTests("pytest", (), ("a",))
    assert run != failures.Failure("exit", 1)


def test_counts_of_outcomes() -> None:
    assert failures.counts([True, False, True, True]) == (3, 1)
    assert failures.counts([]) == (0, 0)


@pytest.mark.parametrize(
    ("command", "runner", "selection", "targets"),
    [
        ("pytest tests/x.py -k slow", "pytest", ("-k=slow",), ("tests/x.py",)),
        ("python -m pytest -x --tb=short tests", "pytest", (), ("tests",)),
        (".venv/bin/py.test -m 'not e2e' ./tests/a.py", "pytest", ("-m=not e2e",), ("tests/a.py",)),
        ("FOO=1 BAR=2 uv run pytest", "pytest", (), ()),
        ("npx jest --testNamePattern=cart src", "jest", ("--testNamePattern=cart",), ("src",)),
        ("npx vitest run src/a.test.ts", "vitest", (), ("src/a.test.ts",)),
        ("go test ./...", "go test", (), ("...",)),
        (
            "go test -run TestFee -count=1 ./billing/...",
            "go test",
            ("-run=TestFee",),
            ("billing/...",),
        ),
        ("cargo test -p core", "cargo test", ("-p=core",), ()),
        ("yarn test", "npm test", (), ()),
        ("npm t -- --silent", "npm test", (), ()),
        ("./gradlew test --tests FeeTest", "gradle test", ("--tests=FeeTest",), ()),
        (
            "bundle exec rspec --format documentation spec/a_spec.rb",
            "rspec",
            (),
            ("spec/a_spec.rb",),
        ),
        ("mocha --reporter dot test/", "mocha", (), ("test/",)),
        ("python -m unittest tests.test_a", "unittest", (), ("tests.test_a",)),
        # A runner's name written in quoted or escaped pieces is still that runner.
        ("py'test' -x tests", "pytest", (), ("tests",)),
        ('n"p"m t', "npm test", (), ()),
        ("go te\\st ./...", "go test", (), ("...",)),
    ],
)
def test_what_a_test_command_runs(
    command: str, runner: str, selection: tuple[str, ...], targets: tuple[str, ...]
) -> None:
    assert failures.tests_run_by(command) == failures.RunOfTests(runner, selection, targets)


@pytest.mark.parametrize(
    "command",
    [
        "pytest && git push",
        "pytest | tee log",
        "echo $(pytest)",
        "make",
        "git commit -m 'pytest'",
        "pytest 'unclosed",
        "",
    ],
)
def test_what_is_not_one_test_run(command: str) -> None:
    assert failures.tests_run_by(command) is None


@pytest.mark.parametrize(
    ("success", "failed", "closes"),
    [
        ("pytest  -q", "pytest -q", True),  # the same command, spacing aside
        ("pytest", "pytest tests/a.py::test_x", True),  # the whole suite
        ("pytest tests", "pytest tests/a.py::test_x", True),
        ("pytest tests/a.py", "pytest tests/a.py::test_x", True),
        ("pytest tests/a.py", "pytest tests/ab.py", False),
        ("pytest tests/a.py", "pytest", False),  # a part does not clear the whole
        ("pytest tests/a.py tests/b.py", "pytest tests/b.py", True),
        ("pytest tests/a.py", "pytest tests/a.py tests/b.py", False),
        ("pytest -k fast", "pytest -k slow", False),
        ("pytest -k fast tests", "pytest -k fast tests/a.py", True),
        ("pytest .", "pytest tests/a.py", True),
        ("go test ./...", "go test ./billing", True),
        ("go test ./billing/...", "go test ./billing/fees", True),
        ("go test ./billing/...", "go test ./shipping", False),
        ("jest", "pytest", False),  # another runner
        ("make", "make test", False),
        ("cargo test", "cargo test tests::rounding", True),
        ("rspec spec/a_spec.rb", "rspec spec/a_spec.rb:12", True),
    ],
)
def test_a_success_covers_a_failure_of_the_same_tests(
    success: str, failed: str, closes: bool
) -> None:
    assert failures.covers(success, failed) is closes


def test_a_failure_stays_open_until_a_run_that_covers_it_passes() -> None:
    runs = [
        ("pytest tests/a.py::test_x", False, 1.0),
        ("go test ./billing", False, 2.0),
        ("pytest tests/b.py", True, 3.0),  # not the same tests
        ("go test ./...", True, 4.0),
        ("make lint", False, 0.5),  # listed by its last failure
    ]
    assert failures.still_failing(runs) == ["make lint", "pytest tests/a.py::test_x"]
    assert failures.still_failing([]) == []


@pytest.mark.parametrize(
    ("command", "key"),
    [
        ("pytest -s -v tests/a.py", "pytest tests/a.py"),
        ("pytest --tb=short --color=yes tests", "pytest tests"),
        ("node --test --test-reporter spec test/", "node --test test/"),
        ("mocha --reporter=dot -x", "mocha -x"),
        ("rm -f build", "rm -f build"),  # not a test run: its flags are its own
        ("pytest  'a b'  -q", "pytest a b"),
        ("pytest 'unclosed -q", "pytest 'unclosed -q"),
    ],
)
def test_flags_that_only_change_what_a_test_run_prints(command: str, key: str) -> None:
    assert failures.output_key(command) == key
    assert failures.command_key("  a   b\tc ") == "a b c"


@pytest.mark.parametrize("length", [3000, 4000])
def test_an_output_read_whole_up_to_its_window_finds_no_line_start_mid_line(length: int) -> None:
    """Up to 4,000 characters an output is read whole: an "Exit code" in the middle of a line
    (quoted in a log) is not a reported exit, wherever the head and tail of a longer output
    would have been cut."""
    cut = 2000 if length == 4000 else length - 2000  # where a cut window would start a line
    text = "a" * (cut - 6) + "ran: " + " Exit code 7 of the old runner"
    text += "b" * (length - len(text))
    assert len(text) == length and text[cut:].startswith("Exit code 7")
    assert failures.exit_code_in(text) is None
    assert failures.exit_code_in(text + "\nExit code 2") == 2  # a line of its own, at the end


def test_a_blocked_or_timed_out_call_keeps_the_exit_code_it_reported() -> None:
    blocked = failures.classify(is_error=True, text="Exit code 0\nBlocked by the PreToolUse hook")
    assert blocked == failures.Failure("blocked", 0)
    timed_out = failures.classify(is_error=True, text="Exit code 0\nCommand timed out after 2m")
    assert timed_out == failures.Failure("timeout", 0)


def test_only_the_first_600_characters_say_how_a_call_failed() -> None:
    """A result's first lines say why it failed ("Command timed out", "blocked by a hook");
    the same words further down are the command's own output."""
    ends_at_600 = " " * 250 + "x" * 341 + " timed out"  # the "t" of "out" is the 601st
    assert len(ends_at_600) == 601
    assert failures.classify(is_error=True, text=ends_at_600) == failures.Failure("error")
    within = " " * 250 + "x" * 340 + " timed out"
    assert failures.classify(is_error=True, text=within) == failures.Failure("timeout")


def test_a_folder_covers_only_its_own_contents() -> None:
    assert failures.covers("jest src/UX", "jest src/U/button.test.js") is False
    assert failures.covers("jest src/U/", "jest src/U/button.test.js") is True
    assert failures.covers("go test ./pkg/...", "go test ./pkg") is True


def test_an_exit_code_in_capitals_is_a_failure_too() -> None:
    assert failures.classify(text="EXIT CODE 3\nmake: stop") == failures.Failure("exit", 3)
