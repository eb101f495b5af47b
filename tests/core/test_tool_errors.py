"""The error that matters in real tool output (captured by tests/fixtures/tool_output/capture.sh
from the tools themselves run on small broken programs), and the gotcha learned from it."""

from __future__ import annotations

from pathlib import Path

import pytest

from memory_core.gotchas import normalize, tool_errors
from memory_core.gotchas.track import track_error
from memory_core.store import Store

CORPUS = Path(__file__).resolve().parents[1] / "fixtures" / "tool_output"
# The folder capture.sh ran the broken programs in (paths in the output point there).
CAPTURED_IN = "/tmp/engram-broken"


def output(name: str) -> str:
    return (CORPUS / name).read_text(encoding="utf-8")


@pytest.mark.parametrize(
    ("name", "message", "where"),
    [
        # pytest: the error under ERRORS/FAILURES, not the banner, the warning or the summary.
        (
            "pytest_collection_error.txt",
            "ModuleNotFoundError: No module named 'missing_package_xyz'",
            ("tests_a/test_import.py", 1),
        ),
        ("pytest_failure.txt", "ZeroDivisionError: division by zero", ("tests_b/calc.py", 2)),
        # Python: the exception raised last, whatever its name, at its own innermost frame.
        (
            "python_chained.txt",
            "RuntimeError: settings file is not valid JSON",
            (f"{CAPTURED_IN}/chained.py", 8),
        ),
        (
            "python_click.txt",
            "click.exceptions.BadParameter: 99999 is not a port number",
            (f"{CAPTURED_IN}/cli.py", 7),
        ),
        # A file Python could not parse: no traceback, the file, the line and a caret.
        ("python_syntax.txt", "SyntaxError: invalid syntax", (f"{CAPTURED_IN}/syntax.py", 1)),
        ("tsc.txt", "error TS2304: Cannot find name 'missingThing'.", ("src/index.ts", 1)),
        # npm says only that the script failed: the compiler's error inside it is the lesson.
        ("npm_build.txt", "error TS2304: Cannot find name 'missingThing'.", ("src/index.ts", 1)),
        (
            "mypy.txt",
            'error: Incompatible types in assignment (expression has type "str", variable has type "int")  [assignment]',
            ("typed.py", 9),
        ),
        ("ruff.txt", "F401 [*] `os` imported but unused", ("typed.py", 1)),
        (
            "node.txt",
            "TypeError: Cannot read properties of undefined (reading 'port')",
            (f"{CAPTURED_IN}/app.js", 3),
        ),
        (
            "cargo_build.txt",
            "error[E0425]: cannot find value `count` in this scope",
            ("src/main.rs", 2),
        ),
        ("go_build.txt", "undefined: total", ("./main.go", 6)),
    ],
)
def test_the_error_that_matters_is_found_in_real_output(
    name: str, message: str, where: tuple[str, int]
) -> None:
    text = output(name)
    found = tool_errors.key_error(text)
    assert found is not None
    assert (found.message, (found.path, found.line)) == (message, where)
    # The gotcha title is that error in its own words ...
    assert normalize.title_for(text) == " ".join(message.split())
    # ... and the anchor is its location, first.
    first = normalize.error_locations(text)[0]
    assert (first.path, first.line) == where


def test_a_claude_code_error_wrapper_does_not_hide_the_error() -> None:
    # How Claude Code hands a failing Bash call to the agent: "Exit code N" then the output.
    wrapped = "Exit code 2\n" + output("pytest_collection_error.txt")
    assert normalize.title_for(wrapped) == (
        "ModuleNotFoundError: No module named 'missing_package_xyz'"
    )


def test_plain_text_with_no_tool_shape_is_left_to_the_general_rules() -> None:
    assert tool_errors.key_error("something went wrong\nplease retry") is None
    assert tool_errors.key_error("") is None


@pytest.mark.parametrize(
    ("name", "program", "title", "anchored"),
    [
        (
            "python_click.txt",
            "cli.py",
            "click.exceptions.BadParameter: 99999 is not a port number",
            '        raise click.BadParameter(f"{value} is not a port number")',
        ),
        (
            "python_chained.txt",
            "chained.py",
            "RuntimeError: settings file is not valid JSON",
            '        raise RuntimeError("settings file is not valid JSON") from exc',
        ),
    ],
)
def test_gotcha_title_and_anchor_name_the_same_last_exception(
    store: Store, name: str, program: str, title: str, anchored: str
) -> None:
    # The program that printed the traceback, placed in the workspace where the output says.
    source = _program_source(program)
    (store.root / program).write_text(source, encoding="utf-8")
    text = output(name).replace(CAPTURED_IN, str(store.root))
    result = None
    for _ in range(3):
        result = track_error(store, text, now=1_800_000_000.0)
    assert result is not None and result.gotcha_id is not None
    row = store.query_one("SELECT * FROM gotchas WHERE id = ?", (result.gotcha_id,))
    assert row["title"] == title
    anchor = store.query_one(
        "SELECT * FROM gotcha_anchors WHERE gotcha_id = ?", (result.gotcha_id,)
    )
    assert anchor["path"] == program
    lines = source.splitlines()
    assert lines[anchor["line"]] == anchored


def _program_source(program: str) -> str:
    """The broken program as capture.sh wrote it (read from the script, not retyped)."""
    script = (CORPUS / "capture.sh").read_text(encoding="utf-8")
    start = script.index(f"cat > {program} <<'PY'\n") + len(f"cat > {program} <<'PY'\n")
    return script[start : script.index("\nPY\n", start) + 1]


def test_a_json_report_with_only_warnings_or_broken_json_names_no_error() -> None:
    """eslint's JSON with warnings only failed for another reason: the report is not the
    lesson; text that merely starts like JSON is left to the other rules, without an error."""
    warnings_only = (
        '[{"filePath":"/w/a.js","messages":[{"ruleId":"no-console","severity":1,'
        '"message":"Unexpected console statement.","line":1}]}]'
    )
    assert tool_errors.key_error(warnings_only) is None
    assert tool_errors.key_error('[\n  {"code": "F401", "message": "x"\n') is None


def test_where_the_dotnet_and_deno_errors_point() -> None:
    """The location of the error, as an anchor: MSBuild's file and line, the frame under a
    failed MSTest, deno's type-check location."""
    build = tool_errors.key_error(output("dotnet_test/build_cs0246_nunit.txt"))
    assert build is not None
    assert (
        build.message
        == "error CS0246: The type or namespace name 'TestAttribute' could not be found"
    )
    assert (build.path, build.line) == ("/home/ken/repos/KeraLua/tests/Tests/Core.cs", 137)
    mstest = tool_errors.key_error(output("dotnet_test/mstest_is_true.txt"))
    assert mstest is not None and mstest.message == "Assert.IsTrue failed. (MSTest_Failed_Test)"
    assert mstest.line == 10 and mstest.path is not None and mstest.path.endswith("UnitTest1.cs")
    deno = tool_errors.key_error(output("deno_test/third_type_error.txt"))
    assert deno is not None and deno.message.startswith("TS2322 [ERROR]: Type 'string'")
    assert (deno.path, deno.line) == (f"{CAPTURED_IN}/deno_test-third_type_error/limit_test.ts", 1)
