"""From an error to what identifies it, for output no tool rule knows (a script's own error, a
shell's, a log line): the line a person recognises, the same hash for two runs of the same error,
a title cut where it loses least, a category, and the places in code it points at."""

from __future__ import annotations

from pathlib import Path

import pytest

from memory_core.gotchas import normalize, tool_errors
from memory_core.gotchas.normalize import ErrorLocation


@pytest.fixture(autouse=True)
def _errors_found_afresh() -> None:
    """`key_error` remembers its answers; each test finds its errors afresh (a mutation run
    forks every test from a process that already ran them, and a remembered answer would
    hide a change to the rules)."""
    tool_errors.key_error.cache_clear()


@pytest.mark.parametrize(
    ("output", "line"),
    [
        # The last exception of a traceback no tool rule reads (indented frames only).
        (
            "Traceback (most recent call last):\n"
            '  File "x.py", line 1, in <module>\n'
            "MyAppWarning here\n"
            "  more\n",
            "MyAppWarning here",
        ),
        # A typed error anywhere in a line, from its type on.
        ("[12:00:01] worker: KeyError: 'user_id'\n", "KeyError: 'user_id'"),
        ("(ValueError: bad port)", "ValueError: bad port)"),
        ("-RuntimeError: stop", "RuntimeError: stop"),
        ("ReportFailure", "ReportFailure"),
        # ... not in a source line a traceback quotes, nor a frame.
        (
            ">       raise LookupError: x\n    except OSError: pass\nerror: disk quota exceeded",
            "error: disk quota exceeded",
        ),
        # A word that only ends like an error type is not one.
        ("NoErrorsFound: fine\nfatal: not a git repository", "fatal: not a git repository"),
        # pytest's E line when nothing else names the error.
        ("============\nE     assert 1 == 2\n", "assert 1 == 2"),
        # error / fatal / panic / failed / failure, in any case, at the start.
        ("building...\nFAILED to link libfoo\n", "FAILED to link libfoo"),
        ("compiling\nPanic at the disco\n", "Panic at the disco"),
        ("errors: 3\n", "errors: 3"),
        # Else the first line that is not a header, a separator, a prompt or a frame.
        (
            "======== test session starts ========\n"
            "platform linux -- Python 3.11\n"
            "rootdir: /w\n"
            "collected 3 items\n"
            "tests/test_a.py F..  [100%]\n"
            "$ make\n"
            "----\n"
            "the database is locked\n",
            "the database is locked",
        ),
        # Only headers: the first line with something on it.
        ("\n\n===== 1 failed =====\ncollected 1 item\n", "===== 1 failed ====="),
        ("", ""),
        ("   \n\t\n", ""),
    ],
)
def test_the_meaningful_line_of_output_no_tool_rule_knows(output: str, line: str) -> None:
    assert normalize.meaningful_line(output) == line


def test_wrapper_lines_give_way_unless_they_are_all_there_is() -> None:
    npm = "npm error code ENOTCACHED\nnpm error request to https://registry.npmjs.org/x failed"
    assert normalize.meaningful_line("Exit code 1\n" + npm) == "npm error code ENOTCACHED"
    assert normalize.meaningful_line("> app@1.0.0 start\n> node .\nthe port is taken") == (
        "the port is taken"
    )


@pytest.mark.parametrize(
    ("one", "other"),
    [
        ("timeout after 120ms", "timeout after 3500ms"),
        ("cannot open /tmp/pytest-7/a.txt", "cannot open /home/ci/build/b.txt"),
        ("cannot open C:\\Users\\ada\\x.txt", "cannot open C:\\tmp\\y.txt"),
        ("cannot open ~/proj/a.txt", "cannot open ~/other/b.txt"),
        ("load file:///w/a.js failed", "load file:///x/b.js failed"),
        (
            "job 3f2a1b9c-0d4e-4f5a-8b6c-7d8e9f0a1b2c died",
            "job 00000000-1111-2222-3333-444444444444 died",
        ),
        ("object at 0x7f3a9c", "object at 0xdeadbeef"),
        ("commit 3e4f5a6b7c failed", "commit 9a8b7c6d5e failed"),
        ("KeyError: 'user_id'", 'KeyError: "account"'),
        ("missing `foo` in scope", "missing `bar_baz` in scope"),
        ("connect 10.0.0.1 refused", "connect 192.168.1.20 refused"),
        ("disk 80% full", "disk 95% full"),
        ("worker 3 of 8 died", "worker -12 of 1e3 died"),
        ("shard7 down", "shard12 down"),
        ("spaced   out\tline", "spaced out line"),
    ],
)
def test_two_runs_of_the_same_error_hash_alike(one: str, other: str) -> None:
    assert normalize.normal_form(one) == normalize.normal_form(other)
    assert normalize.error_hash(normalize.normalize(one)) == normalize.error_hash(
        normalize.normalize(other)
    )


def test_the_normal_form_keeps_the_words_and_names_what_it_replaced() -> None:
    assert normalize.normal_form(
        "TypeError: can't read 'port' of undefined at /srv/app/main.js (after 30ms, try 2)"
    ) == ("TypeError: can't read <str> of undefined at <path> (after <n>ms, try <n>)")
    # An apostrophe is not a quote; a word with digits in it keeps its letters.
    assert normalize.normal_form("it's v2 isn't it") == "it's v<n> isn't it"


def test_different_errors_hash_apart_and_hashes_are_short() -> None:
    a = normalize.error_hash(normalize.normalize("KeyError: 'a'"))
    b = normalize.error_hash(normalize.normalize("IndexError: list index out of range"))
    assert a != b and len(a) == 16 and int(a, 16) >= 0


def test_a_title_is_the_errors_own_words_or_says_it_recurs() -> None:
    assert (
        normalize.title_for("  fatal:   not a\tgit repository  ") == "fatal: not a git repository"
    )
    assert normalize.title_for("") == "Recurring error"
    assert normalize.title_for("\n \n") == "Recurring error"
    long = "ValueError: " + "word " * 60
    assert len(normalize.title_for(long)) <= normalize.TITLE_MAX == 120


def test_shortening_keeps_both_ends_whole_and_the_file_of_a_long_path() -> None:
    assert normalize.shorten("  a   b  ", 5) == "a b"
    assert normalize.shorten("x" * 10, 10) == "x" * 10
    path = "/home/ada/work/engram/src/memory_core/gotchas/normalize.py"
    line = f"FileNotFoundError: no such file {path}"
    short = normalize.shorten(line, 60)
    assert short == "FileNotFoundError: no such file …/gotchas/normalize.py"
    # Only the middle words give way, on word boundaries.
    words = "KeyError: " + " ".join(f"w{n}" for n in range(40)) + " the end"
    cut = normalize.shorten(words, 50)
    assert len(cut) <= 50 and cut.startswith("KeyError: ") and cut.endswith(" the end")
    head, tail = cut.split(" … ")
    assert words.startswith(head) and words.endswith(tail)
    assert not head.endswith(" ") and " " not in tail[:1]
    assert len(head) <= 50 // 3
    # A line of one word is cut anyway, never longer than asked.
    assert len(normalize.shorten("y" * 300, 40)) <= 40


def test_a_short_limit_still_fits() -> None:
    for limit in (10, 20, 33):
        text = "OperationalError: database is locked while writing the sessions table"
        assert len(normalize.shorten(text, limit)) <= limit


@pytest.mark.parametrize(
    ("text", "category"),
    [
        ("CSRF token missing", "security"),
        ("pytest: AssertionError in test_login", "test"),  # a test before a runtime error
        ("ruff found 3 errors", "lint"),
        ("ModuleNotFoundError: No module named 'x'", "build"),
        ("npm install failed", "build"),
        ("TypeError: x is not a function", "runtime"),
        ("ECONNREFUSED connecting to the database", "integration"),
        ("HTTP 502 from the API", "integration"),
        ("the latest rapid change", "general"),  # whole words only
        ("segmentation fault (core dumped)", "runtime"),
        ("something undefined happened", "runtime"),
        ("nothing known here", "general"),
        ("my_test.py failed", "test"),  # underscores and dots split words
    ],
)
def test_the_category_from_whole_words_in_order(text: str, category: str) -> None:
    assert normalize.infer_category(text) == category


def test_severity_is_high_only_for_security() -> None:
    assert normalize.infer_severity("security") == "high"
    assert {normalize.infer_severity(c) for c in normalize.CATEGORIES if c != "security"} == {
        "medium"
    }
    assert normalize.SEVERITY_RANK == {"critical": 0, "high": 1, "medium": 2, "low": 3}


def test_words_are_lower_cased_and_split_on_anything_else() -> None:
    assert normalize.words("Foo_bar.Baz2 9x  QUX") == {"foo", "bar", "baz2", "x", "qux"}


def test_locations_innermost_python_frame_first_then_the_rest_in_order() -> None:
    output = (
        "Traceback (most recent call last):\n"
        '  File "app/main.py", line 3, in <module>\n'
        '  File "app/db.py", line 17, in connect\n'
        "ConnectionError: refused (see docs/db.md:4 or http://x.io/a.py:80)\n"
    )
    found = normalize.error_locations(output)
    assert found[:3] == [
        ErrorLocation("app/db.py", 17),  # the key error's own place
        ErrorLocation("app/db.py", 17),
        ErrorLocation("app/main.py", 3),
    ]
    assert ErrorLocation("docs/db.md", 4) in found
    assert all(not loc.path.startswith(("http", "//")) for loc in found)


def test_file_line_and_column_as_compilers_print_them() -> None:
    output = "src/a.ts:3:9 - error\nat f (lib/b.js:10:2)\nsee README.md:7\n"
    assert normalize.error_locations(output) == [
        ErrorLocation("src/a.ts", 3, 9),
        ErrorLocation("lib/b.js", 10, 2),
        ErrorLocation("README.md", 7, None),
    ]


def test_pytest_frames_are_read_innermost_first() -> None:
    output = "tests/test_x.py:7: \napp/x.py:8: in f\n    raise TypeError\nE   TypeError\n"
    paths = [(loc.path, loc.line) for loc in normalize.error_locations(output)]
    assert paths[-2:] == [("app/x.py", 8), ("tests/test_x.py", 7)]


def test_a_location_resolves_only_to_a_file_in_the_workspace(tmp_path: Path) -> None:
    root = (tmp_path / "w").resolve()
    (root / "src").mkdir(parents=True)
    (root / "src" / "a.py").write_text("x\n")
    (root / ".git").mkdir()
    (root / ".git" / "config").write_text("x\n")
    (root / ".engram").mkdir()
    (root / ".engram" / "x.py").write_text("x\n")
    (tmp_path / "outside.py").write_text("x\n")
    resolve = normalize.resolve_location
    assert resolve(root, ErrorLocation("src/a.py", 3)) == ("src/a.py", 2)
    assert resolve(root, ErrorLocation(str(root / "src" / "a.py"), 1)) == ("src/a.py", 0)
    assert resolve(root, ErrorLocation(f"file://{root}/src/a.py", 1)) == ("src/a.py", 0)
    assert resolve(root, ErrorLocation("src\\a.py", 1)) == ("src/a.py", 0)
    assert resolve(root, ErrorLocation("src/a.py", 0)) == ("src/a.py", 0)  # never negative
    assert resolve(root, ErrorLocation("src/missing.py", 1)) is None
    assert resolve(root, ErrorLocation("src", 1)) is None  # a folder
    assert resolve(root, ErrorLocation("../outside.py", 1)) is None
    assert resolve(root, ErrorLocation(str(tmp_path / "outside.py"), 1)) is None
    assert resolve(root, ErrorLocation(".git/config", 1)) is None
    assert resolve(root, ErrorLocation(".engram/x.py", 1)) is None


@pytest.mark.parametrize(
    ("limit", "short"),
    [
        # The kind stays whole rather than keeping half of the next word ("OperationalError: co").
        (60, 'OperationalError: … database "engram_test" does not exist'),
        (80, 'OperationalError: … 5433 failed: FATAL: database "engram_test" does not exist'),
        # A third of the room ends just after the kind's colon, or before it.
        (54, 'OperationalError: … "engram_test" does not exist'),
        (48, 'OperationalError … "engram_test" does not exist'),
    ],
)
def test_a_long_error_keeps_its_kind_and_its_last_words_whole(limit: int, short: str) -> None:
    line = (
        'OperationalError: connection to server at "127.0.0.1", port 5433 failed: FATAL:  '
        'database "engram_test" does not exist'
    )
    assert normalize.shorten(line, limit) == short


@pytest.mark.parametrize(
    ("limit", "short"),
    [
        (30, "alpha … pi rho sigma tau"),
        (45, "alpha beta … nu xi omicron pi rho sigma tau"),
        (61, "alpha beta gamma … lambda mu nu xi omicron pi rho sigma tau"),
    ],
)
def test_words_without_a_kind_give_way_in_the_middle(limit: int, short: str) -> None:
    line = (
        "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi omicron pi rho"
        " sigma tau"
    )
    assert normalize.shorten(line, limit) == short


def test_a_traceback_no_rule_reads_is_told_by_its_last_exception() -> None:
    output = (
        "Traceback (most recent call last):\n"
        '  File "worker.py", line 3, in <module>\n'
        "starting worker\n"
        "KeyboardInterrupt received\n"
    )
    assert normalize.meaningful_line(output) == "KeyboardInterrupt received"


def test_web_addresses_are_not_code_locations_but_files_named_http_are() -> None:
    assert normalize.error_locations("see https://example.com/a.js:5 and //cdn.x/lib.js:3") == []
    assert normalize.error_locations("http_client.py:10: ConnectionError") == [
        ErrorLocation("http_client.py", 10)
    ]
    assert normalize.error_locations("see http://x.io/a.py:80, then b.py:2") == [
        ErrorLocation("b.py", 2)
    ]
