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


@pytest.fixture(autouse=True)
def _errors_found_afresh() -> None:
    """`key_error` remembers its answers; each test finds its errors afresh (a mutation run
    forks every test from a process that already ran them, and a remembered answer would
    hide a change to the rules)."""
    tool_errors.key_error.cache_clear()


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


# `node --test --test-reporter=spec test/` (node 20.20, run here on a broken cart.js): the
# reporter people see in a terminal, and node's default from version 23 on. Stack cut after
# the test's own frame.
NODE_SPEC_STRICT_EQUAL = """\
Exit code 1
✖ total of two items (19.296426ms)
  AssertionError [ERR_ASSERTION]: Expected values to be strictly equal:

  5 !== 6

      at TestContext.<anonymous> (/tmp/h31/nodespec/test/cart.test.js:9:10)
      at Test.runInAsyncScope (node:async_hooks:206:9)
      at Test.run (node:internal/test_runner/test:796:25)
"""
NODE_SPEC_MESSAGE = """\
Exit code 1
✖ tax of a refund (2.07042ms)
  AssertionError [ERR_ASSERTION]: a refund has no tax
      at TestContext.<anonymous> (/tmp/h31/nodespec/test/one.test.js:5:10)
      at Test.runInAsyncScope (node:async_hooks:206:9)

ℹ tests 1
ℹ fail 1
"""


def test_node_spec_reporter_names_the_test_the_error_and_its_values() -> None:
    """An assertion's message ends with ':' and its values follow after a blank line: both
    are the lesson; a message of its own stands alone. Each at the test file's line."""
    equal = tool_errors.key_error(NODE_SPEC_STRICT_EQUAL)
    assert equal == tool_errors.ToolError(
        "total of two items: AssertionError [ERR_ASSERTION]: Expected values to be strictly"
        " equal: 5 !== 6",
        "/tmp/h31/nodespec/test/cart.test.js",
        9,
    )
    own = tool_errors.key_error(NODE_SPEC_MESSAGE)
    assert own == tool_errors.ToolError(
        "tax of a refund: AssertionError [ERR_ASSERTION]: a refund has no tax",
        "/tmp/h31/nodespec/test/one.test.js",
        5,
    )


def test_a_spec_report_cut_after_its_message_still_names_it() -> None:
    """Output an agent's tool cut short right after the assertion's first line (no values, no
    stack): the message alone, no location, and no crash."""
    cut = "✖ total of two items (19.3ms)\n  AssertionError: Expected values to be strictly equal:\n"
    found = tool_errors.key_error(cut)
    assert found == tool_errors.ToolError(
        "total of two items: AssertionError: Expected values to be strictly equal:"
    )


# gcc 12 / GNU ld 2.40 (Debian bookworm), run here: a program calling a function nothing
# defines, and a file without `main` linked as a program (the C runtime's `_start` calls it).
LINK_MISSING_FUNCTION = """\
/usr/bin/ld: /tmp/ccqYn59G.o: in function `main':
main.c:(.text+0xa): undefined reference to `compute_tax'
collect2: error: ld returned 1 exit status
"""
LINK_MISSING_MAIN = """\
/usr/bin/ld: /usr/lib/gcc/x86_64-linux-gnu/12/../../../x86_64-linux-gnu/Scrt1.o: in function `_start':
(.text+0x17): undefined reference to `main'
collect2: error: ld returned 1 exit status
"""


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (LINK_MISSING_FUNCTION, ("undefined reference to `compute_tax'", "main.c")),
        # No source file to point at: the section is not a path.
        (LINK_MISSING_MAIN, ("undefined reference to `main'", None)),
        # Code piped to gcc (`gcc -x c -`), and a link-time-optimised build.
        ("<stdin>:(.text+0xa): undefined reference to `f'\n", ("undefined reference to `f'", None)),
        (
            "<artificial>:(.text+0xa): undefined reference to `f'\n",
            ("undefined reference to `f'", None),
        ),
        # Older binutils name the linker itself, as published in many build logs.
        (
            "/usr/bin/ld: undefined reference to `main'\ncollect2: error: ld returned 1 exit status\n",
            ("undefined reference to `main'", None),
        ),
    ],
)
def test_a_link_error_names_the_symbol_and_only_a_real_source_file(
    text: str, expected: tuple[str, str | None]
) -> None:
    found = tool_errors.key_error(text)
    assert found is not None
    assert (found.message, found.path, found.line) == (*expected, None)


def test_an_eslint_parse_error_in_a_json_report_has_no_rule_to_name() -> None:
    # eslint -f json: a file it cannot parse gets one fatal message whose ruleId is null.
    report = (
        '[{"filePath":"/p/src/app.js","messages":[{"ruleId":null,"fatal":true,"severity":2,'
        '"message":"Parsing error: Unexpected token }","line":3,"column":1}],'
        '"suppressedMessages":[],"errorCount":1,"fatalErrorCount":1,"warningCount":0,'
        '"fixableErrorCount":0,"fixableWarningCount":0}]'
    )
    found = tool_errors.key_error(report)
    assert found == tool_errors.ToolError("Parsing error: Unexpected token }", "/p/src/app.js", 3)


def test_rspec_output_cut_after_its_failure_line_gives_no_error_rather_than_failing() -> None:
    cut = (
        "Failures:\n\n  1) Cart totals the items\n     Failure/Error: expect(cart.total).to eq(3)\n"
    )
    assert tool_errors.key_error(cut) is None


def test_a_node_spec_message_ending_in_a_colon_is_not_joined_to_its_first_frame() -> None:
    output = (
        "✖ loads config (1.2ms)\n"
        "  Error: config missing:\n"
        "      at TestContext.<anonymous> (/p/test/a.test.js:3:9)\n"
    )
    expected = tool_errors.ToolError("loads config: Error: config missing:", "/p/test/a.test.js", 3)
    assert tool_errors.key_error(output) == expected
