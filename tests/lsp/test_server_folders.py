"""Which workspace folder the server picks for a file or a command, and what it tells the user
about folders it cannot serve, on the server the real `engram lsp` builds, in this process."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from lsprotocol import types

from lsp_server.server import EngramServer
from lsp_server.setup import create_server
from memory_core.errors import UsageError


@pytest.fixture
def server() -> Iterator[EngramServer]:
    made = create_server()
    made.protocol.client_capabilities = types.ClientCapabilities()
    yield made
    made.close_all()


@pytest.fixture
def shown(server: EngramServer) -> list[types.ShowMessageParams]:
    sent: list[types.ShowMessageParams] = []
    server.window_show_message = sent.append  # type: ignore[method-assign]
    return sent


def _project(root: Path) -> Path:
    root.mkdir(parents=True)
    (root / ".git").mkdir()
    return root.resolve()


def test_a_file_belongs_to_the_innermost_folder(server: EngramServer, tmp_path: Path) -> None:
    outer = _project(tmp_path / "mono")
    inner = _project(outer / "packages" / "web")
    for root in (inner, outer):  # the order folders are opened in does not matter
        assert server.add_folder(root) is not None
    found = server.state_for_path(inner / "src" / "app.py")
    assert found is not None and found.root == inner
    found = server.state_for_path(outer / "README.md")
    assert found is not None and found.root == outer
    assert server.state_for_uri((inner / "a.py").as_uri()) is server.folders[inner]
    assert server.state_for_path(outer) is server.folders[outer]
    assert server.state_for_path(tmp_path / "mono-other" / "a.py") is None
    assert server.state_for_uri("untitled:Untitled-1") is None


def test_opening_a_folder_twice_gives_the_same_store(server: EngramServer, tmp_path: Path) -> None:
    root = _project(tmp_path / "ws")
    first = server.add_folder(root)
    assert first is not None
    assert server.add_folder(root) is first
    # A subfolder of a project opens the project (its git root).
    (root / "src").mkdir()
    assert server.add_folder(root / "src") is first
    assert list(server.folders) == [root]


def test_a_folder_that_is_no_project_is_left_alone_and_the_user_told(
    server: EngramServer, tmp_path: Path, shown: list[types.ShowMessageParams]
) -> None:
    downloads = tmp_path / "downloads"
    downloads.mkdir()
    assert server.add_folder(downloads) is None
    assert server.folders == {}
    assert not (downloads / ".engram").exists()
    [message] = shown
    assert message.type == types.MessageType.Info
    assert message.message.startswith(f"engram is off in {downloads.resolve()}: ")
    assert "`engram init`" in message.message


def test_removing_a_folder_closes_only_what_no_open_folder_still_uses(
    server: EngramServer, tmp_path: Path
) -> None:
    outer = _project(tmp_path / "mono")
    inner = _project(outer / "web")
    other = _project(tmp_path / "other")
    for root in (outer, inner, other):
        server.add_folder(root)
    # The nested project goes: the one around it is still open in the editor and still served.
    inner_store = server.folders[inner].store
    server.remove_folder(inner)
    assert list(server.folders) == [outer, other]
    with pytest.raises(Exception):  # noqa: B017 - any error: the store is closed
        inner_store.query_one("SELECT 1")
    server.remove_folder(outer)
    assert list(server.folders) == [other]
    # Two folders of one project (the repository and a subfolder) share its store until the
    # last of them is removed.
    (other / "src").mkdir()
    server.add_folder(other / "src")
    server.remove_folder(other)
    assert list(server.folders) == [other]
    server.remove_folder(other / "src")
    assert server.folders == {}


def test_removing_a_folder_never_opened_closes_the_projects_inside_it(
    server: EngramServer, tmp_path: Path
) -> None:
    outer = tmp_path / "all"
    first, second = _project(outer / "a"), _project(outer / "b")
    for root in (first, second):
        server.add_folder(root)
    server.remove_folder(tmp_path / "elsewhere")
    assert list(server.folders) == [first, second]
    server.remove_folder(outer.resolve())
    assert server.folders == {}


def test_a_command_acts_on_the_folder_it_names_else_the_first(
    server: EngramServer, tmp_path: Path
) -> None:
    first, second = _project(tmp_path / "a"), _project(tmp_path / "b")
    server.add_folder(first)
    server.add_folder(second)
    assert server.state_for_command({}).root == first
    assert server.state_for_command({"workspace": str(second)}).root == second
    assert server.state_for_command({"workspace": "", "uri": (second / "x.py").as_uri()}).root == (
        second
    )
    assert server.state_for_command({"workspace": second.as_uri()}).root == second
    # `workspace` wins over `uri`.
    assert (
        server.state_for_command({"workspace": str(first), "uri": (second / "x").as_uri()}).root
        == first
    )
    with pytest.raises(UsageError, match="is not in any workspace folder engram serves") as raised:
        server.state_for_command({"uri": (tmp_path / "c" / "x.py").as_uri()})
    assert repr((tmp_path / "c" / "x.py").as_uri()) in raised.value.message


def test_a_command_with_no_folder_open_says_so(server: EngramServer) -> None:
    with pytest.raises(UsageError) as raised:
        server.state_for_command({})
    assert raised.value.message == "no workspace folder is open"
    assert raised.value.hint == "open a folder, then run the command"


def test_a_store_notice_is_shown_to_the_user_as_a_warning(
    server: EngramServer, tmp_path: Path, shown: list[types.ShowMessageParams]
) -> None:
    root = _project(tmp_path / "ws")
    state = server.add_folder(root)
    assert state is not None
    for listener in state.store.notice_listeners:
        listener("the store was recreated")
    assert [(m.type, m.message) for m in shown] == [
        (types.MessageType.Warning, "engram: the store was recreated")
    ]


@pytest.mark.parametrize(
    ("capabilities", "supported"),
    [
        (types.ClientCapabilities(), False),
        (types.ClientCapabilities(workspace=types.WorkspaceClientCapabilities()), False),
        (
            types.ClientCapabilities(
                workspace=types.WorkspaceClientCapabilities(configuration=False)
            ),
            False,
        ),
        (
            types.ClientCapabilities(
                workspace=types.WorkspaceClientCapabilities(configuration=True)
            ),
            True,
        ),
    ],
)
def test_a_capability_is_supported_only_where_the_client_says_true(
    server: EngramServer, capabilities: types.ClientCapabilities, supported: bool
) -> None:
    server.protocol.client_capabilities = capabilities
    assert server.client_supports("workspace", "configuration") is supported


def test_a_folder_that_does_not_exist_is_a_warning_naming_it(
    server: EngramServer, tmp_path: Path, shown: list[types.ShowMessageParams]
) -> None:
    gone = tmp_path / "gone"
    assert server.add_folder(gone) is None
    assert [(m.type, m.message) for m in shown] == [
        (types.MessageType.Warning, f"engram: workspace path {str(gone)!r} does not exist")
    ]


def test_a_store_that_cannot_be_opened_is_an_error_naming_the_folder(
    server: EngramServer, tmp_path: Path, shown: list[types.ShowMessageParams]
) -> None:
    root = _project(tmp_path / "ws")
    (root / ".engram").mkdir()
    (root / ".engram" / "engram.db").write_bytes(b"this is no SQLite database" * 100)
    assert server.add_folder(root) is None
    assert server.folders == {}
    [message] = shown
    assert message.type == types.MessageType.Error
    assert message.message.startswith(f"engram: cannot open the store in {root}: ")
    # The store's own words, not the exception's repr.
    assert "StoreError" not in message.message and "DatabaseError(" not in message.message


def test_a_plain_path_with_a_percent_sign_names_that_folder(
    server: EngramServer, tmp_path: Path
) -> None:
    """Only a URI is percent-decoded: a folder really named `a%20b` is that folder."""
    odd = _project(tmp_path / "a%20b")
    server.add_folder(odd)
    assert server.state_for_command({"workspace": str(odd)}).root == odd
    with pytest.raises(UsageError):
        server.state_for_command({"workspace": str(tmp_path / "a b")})


@pytest.mark.parametrize("failing", ["find_root", "open_or_init"])
def test_an_unexpected_failure_opening_a_folder_is_told_in_its_own_words(
    server: EngramServer,
    tmp_path: Path,
    shown: list[types.ShowMessageParams],
    monkeypatch: pytest.MonkeyPatch,
    failing: str,
) -> None:
    """Not only engram's own errors: an OSError from the file system is shown as it reads,
    and the folder is left alone."""
    import lsp_server.server as server_module

    def broken(*args: object, **kwargs: object) -> None:
        raise PermissionError(13, "Permission denied", "/ws/.engram")

    if failing == "find_root":
        monkeypatch.setattr(server_module, "find_root", broken)
    else:
        monkeypatch.setattr(server_module.Store, "open_or_init", broken)
    root = _project(tmp_path / "ws")
    assert server.add_folder(root) is None
    [message] = shown
    assert message.message.endswith(": [Errno 13] Permission denied: '/ws/.engram'")
    assert message.message.startswith(
        "engram: " if failing == "find_root" else f"engram: cannot open the store in {root}: "
    )
