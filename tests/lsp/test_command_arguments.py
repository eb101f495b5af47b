"""What a client gets back from `workspace/executeCommand` when its arguments are wrong, a
handler fails or finds nothing yet, checked on the server the real `engram lsp` builds, in this
process: the error's kind (invalid params or internal error), its message and its data.
"""

from __future__ import annotations

from typing import Any

import pytest
from pygls.exceptions import JsonRpcInternalError, JsonRpcInvalidParams

from lsp_server.features import commands
from lsp_server.server import EngramServer, FolderState
from memory_core import gotchas
from memory_core.errors import NothingYetError, UsageError


async def run(server: EngramServer, name: str, *arguments: Any) -> Any:
    return await server.protocol.fm.commands[name](*arguments)


@pytest.mark.parametrize(
    ("args", "problem"),
    [
        ({"id": 5}, "`id` must be text, got 5"),
        ({"limit": -1}, "`limit` must be a whole number, got -1"),
        ({"limit": 2.0}, "`limit` must be a whole number, got 2.0"),
        ({"limit": True}, "`limit` must be a whole number, got true"),
        ({"days": -0.5}, "`days` must be a number, got -0.5"),
        ({"days": float("nan")}, "`days` must be a number, got NaN"),
        ({"days": False}, "`days` must be a number, got false"),
        ({"confirm": 1}, "`confirm` must be true or false, got 1"),
        ({"files": ["a.py", 3]}, '`files` must be a list of text, got ["a.py", 3]'),
        ({"files": "a.py"}, '`files` must be a list of text, got "a.py"'),
        ({"tags": [1]}, "`tags` must be text or a list of text, got [1]"),
        ({"since": True}, "`since` must be a time, got true"),
        ({"since": [2026]}, "`since` must be a time, got [2026]"),
        ({"range": [0, 1]}, "`range` must be an object, got [0, 1]"),
        ({"documents": {}}, "`documents` must be a list, got {}"),
        # Right arguments before a wrong one do not hide it.
        ({"id": "G-1", "uri": None, "limit": "5"}, '`limit` must be a whole number, got "5"'),
    ],
)
def test_a_wrong_argument_is_named_with_what_it_must_be(args: dict[str, Any], problem: str) -> None:
    assert commands.argument_problem(args) == problem


@pytest.mark.parametrize(
    "args",
    [
        {},
        {"id": "G-1", "limit": 0, "line": 7, "last": 3},
        {"days": 0, "confirm": False, "files": [], "tags": "x", "source": ["a", "b"]},
        {"days": 1.5, "since": "2026-11-01", "until": 1795000000.5, "at": 3},
        {"range": {}, "documents": [], "kinds": ["decision"]},
        {"limit": None, "id": None},  # a null is an argument left out
        {"unknown": object()},  # names not in the table are the handler's to check
    ],
)
def test_right_arguments_pass(args: dict[str, Any]) -> None:
    assert commands.argument_problem(args) is None


def test_a_long_wrong_value_is_cut_to_sixty_characters() -> None:
    problem = commands.argument_problem({"id": ["x" * 100]})
    assert problem is not None
    shown = problem.removeprefix("`id` must be text, got ")
    assert shown == ('["' + "x" * 100)[:57] + "..."
    assert len(shown) == 60
    # Exactly 60 characters are shown whole.
    exact = ["y" * 56]  # json.dumps: 2 brackets + 2 quotes + 56
    assert commands.argument_problem({"id": exact}) == f'`id` must be text, got ["{"y" * 56}"]'


@pytest.fixture
def echo(server: EngramServer) -> list[dict[str, Any]]:
    """Commands registered the way features register theirs, each recording its argument."""
    heard: list[dict[str, Any]] = []

    @commands.engram_command(server, "test.echo")
    def echo(ls: EngramServer, args: dict[str, Any]) -> dict[str, Any]:
        assert ls is server
        heard.append(args)
        return {"echo": args}

    @commands.engram_command(server, "test.echo_async")
    async def echo_async(ls: EngramServer, args: dict[str, Any]) -> dict[str, Any]:
        heard.append(args)
        return {"async": args}

    @commands.engram_command(server, "test.nothing")
    def nothing(ls: EngramServer, args: dict[str, Any]) -> dict[str, Any]:
        raise NothingYetError("no session recorded yet", hint="start one")

    @commands.engram_command(server, "test.usage")
    def usage(ls: EngramServer, args: dict[str, Any]) -> dict[str, Any]:
        raise UsageError("give the file")

    @commands.engram_command(server, "test.bug")
    def bug(ls: EngramServer, args: dict[str, Any]) -> dict[str, Any]:
        raise KeyError("oops")

    @commands.engram_command(server, "test.invalid")
    async def invalid(ls: EngramServer, args: dict[str, Any]) -> dict[str, Any]:
        raise JsonRpcInvalidParams(message="already said")

    return heard


@pytest.mark.parametrize("arguments", [(), (None,), ([],), ({},)])
async def test_no_argument_an_empty_list_or_null_is_an_empty_object(
    server: EngramServer, echo: list[dict[str, Any]], arguments: tuple[Any, ...]
) -> None:
    assert await run(server, "test.echo", *arguments) == {"echo": {}}
    assert await run(server, "test.echo_async", *arguments) == {"async": {}}
    assert echo == [{}, {}]


async def test_the_object_reaches_the_handler_sync_or_async(
    server: EngramServer, echo: list[dict[str, Any]]
) -> None:
    assert await run(server, "test.echo", {"id": "G-1"}) == {"echo": {"id": "G-1"}}
    assert await run(server, "test.echo_async", {"limit": 3}) == {"async": {"limit": 3}}


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (("G-1",), "test.echo takes one JSON object as its argument, got ['G-1']"),
        (({"id": "a"}, {"id": "b"}), "test.echo takes one JSON object as its argument, got "),
        (([1],), "test.echo takes one JSON object as its argument, got [[1]]"),
        (({"limit": "5"},), 'test.echo: `limit` must be a whole number, got "5"'),
    ],
)
async def test_a_malformed_argument_is_invalid_params_and_the_handler_never_runs(
    server: EngramServer, echo: list[dict[str, Any]], arguments: tuple[Any, ...], message: str
) -> None:
    with pytest.raises(JsonRpcInvalidParams) as raised:
        await run(server, "test.echo", *arguments)
    assert raised.value.message.startswith(message)
    assert echo == []


async def test_an_argument_list_too_long_to_show_is_cut(
    server: EngramServer, echo: list[dict[str, Any]]
) -> None:
    with pytest.raises(JsonRpcInvalidParams) as raised:
        await run(server, "test.echo", "x" * 1000)
    assert len(raised.value.message) == 300


async def test_nothing_yet_is_an_empty_state_and_a_usage_error_a_failure(
    server: EngramServer, echo: list[dict[str, Any]]
) -> None:
    with pytest.raises(JsonRpcInvalidParams) as raised:
        await run(server, "test.nothing", {})
    assert raised.value.message == "test.nothing: no session recorded yet (start one)"
    assert raised.value.data == {"code": NothingYetError.code, "empty": True}
    with pytest.raises(JsonRpcInvalidParams) as raised:
        await run(server, "test.usage", {})
    assert raised.value.message == "test.usage: give the file"
    assert raised.value.data == {"code": "MEM_E004", "empty": False}


async def test_a_bug_is_an_internal_error_naming_it_and_logged(
    server: EngramServer, echo: list[dict[str, Any]], caplog: pytest.LogCaptureFixture
) -> None:
    with pytest.raises(JsonRpcInternalError) as raised:
        await run(server, "test.bug", {})
    assert raised.value.message == "test.bug failed: KeyError: 'oops'"
    [record] = [r for r in caplog.records if r.exc_info]
    assert record.getMessage() == "command test.bug failed"
    # An invalid-params error a handler raises itself reaches the client as it is.
    with pytest.raises(JsonRpcInvalidParams) as invalid:
        await run(server, "test.invalid", {})
    assert invalid.value.message == "already said"


async def test_status_says_what_engram_holds_in_numbers_and_words(
    server: EngramServer, state: FolderState
) -> None:
    gotchas.add(state.store, "eval is unsafe", pattern="eval(", pattern_kind="literal")
    shown = await run(server, "engram.status", {"workspace": str(state.root)})
    assert shown["root"] == str(state.root)
    assert shown["counts"]["gotchas"] == 1
    assert f"- Workspace: `{state.root}`" in shown["markdown"]
    assert "| Gotchas | 1 |" in shown["markdown"]
