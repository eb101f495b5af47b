"""What engram never records or checkpoints, with git's own ignore semantics (the deepest
`.gitignore` with an opinion decides, negations re-include, folders ignore what is inside them),
secret files and their templates, editors' temporary files; and the journals' own promises: a
watcher's journal vouches only for the time it watched, git's state survives a round trip."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from memory_core import journal


@pytest.fixture(autouse=True)
def _rules_compiled_afresh() -> None:
    """Compiled ignore files are kept per process; each test compiles its own (a mutation run
    forks every test from a process that already ran them)."""
    journal._MATCHERS.clear()


def _workspace(tmp_path: Path, files: dict[str, str]) -> Path:
    root = tmp_path / "w"
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    root.mkdir(exist_ok=True)
    return root


@pytest.fixture
def nested(tmp_path: Path) -> Path:
    return _workspace(
        tmp_path,
        {
            ".gitignore": "*.log\nbuild/\n!keep.log\n/top.txt\n",
            "src/.gitignore": "generated/\n!build/\n*.tmp\n",
            "src/lib/.gitignore": "!important.tmp\n",
        },
    )


@pytest.mark.parametrize(
    ("rel", "ignored"),
    [
        ("app.log", True),
        ("src/deep/app.log", True),  # a pattern without '/' applies in every folder
        ("keep.log", False),  # re-included by a negation
        ("top.txt", True),
        ("src/top.txt", False),  # anchored to the .gitignore's own folder
        ("build/out.js", True),  # inside an ignored folder
        ("src/build/out.js", False),  # src/.gitignore re-includes its build/
        ("src/generated/x.py", True),
        ("generated/x.py", False),  # src/'s rule does not reach the root
        ("src/a.tmp", True),
        ("src/lib/important.tmp", False),  # the deepest opinion wins
        ("src/lib/other.tmp", True),
        ("src/main.py", False),
    ],
)
def test_gitignore_files_nested_as_git_reads_them(nested: Path, rel: str, ignored: bool) -> None:
    rules = journal.IgnoreRules(nested)
    assert rules.path_ignored(rel) is ignored


def test_a_folder_is_ignored_as_a_folder(nested: Path) -> None:
    rules = journal.IgnoreRules(nested)
    assert rules.ignored("build", True, rules.chain_for("")) is True
    assert rules.ignored("build", False, rules.chain_for("")) is False  # a file named build
    assert [base for base, _ in rules.chain_for("src/lib/x")] == ["", "src", "src/lib"]
    assert rules.spec_for("missing/folder") is None


def test_extra_patterns_come_before_any_gitignore(nested: Path) -> None:
    rules = journal.IgnoreRules(nested, ["keep.log", "  ", "*.sqlite"])
    assert rules.path_ignored("keep.log") is True  # the negation in .gitignore does not undo it
    assert rules.path_ignored("data/app.sqlite") is True
    assert rules.path_ignored("src/main.py") is False
    assert journal.IgnoreRules(nested, ["", " "]).path_ignored("keep.log") is False


@pytest.mark.parametrize(
    ("rel", "left_out"),
    [
        (".env", True),
        ("config/.env.production", True),
        ("deploy/prod.env", True),
        ("certs/server.pem", True),
        ("keys/id_ed25519", True),
        ("infra/main.tfstate", True),
        ("infra/main.tfstate.backup", True),
        (".env.example", False),  # templates are meant to be committed
        (".env.sample", False),
        ("keys/id_ed25519.pub", False),
        ("src/env.py", False),
        ("README.md", False),
    ],
)
def test_checkpoints_leave_out_secret_files_but_not_their_templates(
    tmp_path: Path, rel: str, left_out: bool
) -> None:
    root = _workspace(tmp_path, {})
    assert journal.checkpoint_rules(root, []).path_ignored(rel) is left_out
    # Asked for, secret files are captured like any other; the watcher records them anyway.
    assert journal.checkpoint_rules(root, [], include_secret_files=True).path_ignored(rel) is False
    assert journal.watch_rules(root, []).path_ignored(rel) is False


@pytest.mark.parametrize(
    "rel",
    [
        "#notes.md#",
        ".#notes.md",
        "src/app.py~",
        "src/.app.py.swp",
        "src/.app.py.swo",
        "4913",
        "app.py___jb_tmp___",
        "a.ts.vsctmp",
        ".~lock.report.odt#",
        ".nfs0000000001",
    ],
)
def test_editors_temporary_files_are_never_recorded(tmp_path: Path, rel: str) -> None:
    root = _workspace(tmp_path, {})
    assert rel in journal.EditorFiles()
    assert journal.watch_rules(root, []).path_ignored(rel) is True
    assert journal.checkpoint_rules(root, [], include_secret_files=True).path_ignored(rel)
    assert journal.Ignore(root, []).ignored(rel) is True


def test_ordinary_files_are_not_editor_files(tmp_path: Path) -> None:
    files = journal.EditorFiles(["*.bak"])
    assert "notes.md" not in files and "src/app.py" not in files and "a#b" not in files
    assert "old.bak" in files  # `watch.editor_files` adds more
    root = _workspace(tmp_path, {})
    assert journal.Ignore(root, ["dist/"], ["*.bak"]).ignored("dist/app.js") is True
    assert journal.Ignore(root, [], ["*.bak"]).ignored("src/x.bak") is True
    assert journal.Ignore(root, []).ignored("src/x.py") is False


def test_git_info_exclude_is_read_in_a_repository(tmp_path: Path) -> None:
    root = _workspace(tmp_path, {})
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    (root / ".git" / "info").mkdir(exist_ok=True)
    (root / ".git" / "info" / "exclude").write_text("*.local\n", encoding="utf-8")
    assert journal.watch_rules(root, []).path_ignored("settings.local") is True
    assert journal.checkpoint_rules(root, []).path_ignored("settings.local") is True
    (root / ".git" / "info" / "exclude").unlink()
    assert journal.watch_rules(root, []).path_ignored("settings.local") is False


class _Kept(journal.RuleSources):
    def __init__(self) -> None:
        self.kept: dict[str, str] = {}
        self.asked: list[str] = []

    def get(self, key: str) -> str | None:
        self.asked.append(key)
        return self.kept.get(key)

    def put(self, key: str, source: str) -> None:
        self.kept[key] = source


def test_compiled_rules_are_kept_for_the_next_process(tmp_path: Path) -> None:
    """A cold process rebuilds a kept matcher from its regex and gets the same answers; an
    ignore file with negations cannot be kept that way and is compiled again."""
    lines = ("*.cache-h31", "dist-h31/")
    key = journal.rules_key(lines)
    assert len(key) == 32 and key == journal.rules_key(lines) != journal.rules_key(lines[:1])
    kept = _Kept()
    root = _workspace(tmp_path, {})
    first = journal.IgnoreRules(root, lines, sources=kept)
    assert list(kept.kept) == [key]
    rebuilt = journal._Matcher.from_source(kept.kept[key])
    for path in ("a.cache-h31", "dist-h31/x.js", "src/a.py"):
        assert rebuilt.check(path) == first._extra.check(path)  # type: ignore[union-attr]
    assert rebuilt.check("a.cache-h31") is True and rebuilt.check("src/a.py") is None
    negated = ("*.log-h31", "!keep.log-h31")
    journal.IgnoreRules(root, negated, sources=kept)
    assert journal.rules_key(negated) not in kept.kept
    empty = journal._Matcher.from_source("")
    assert empty.check("anything") is None and empty.source == ""


def test_a_negation_re_includes_and_says_so(tmp_path: Path) -> None:
    root = _workspace(tmp_path, {".gitignore": "*.log\n!keep.log\n"})
    matcher = journal.IgnoreRules(root).spec_for("")
    assert matcher is not None and matcher.source is None  # needs pathspec
    assert (matcher.check("a.log"), matcher.check("keep.log"), matcher.check("a.py")) == (
        True,
        False,
        None,
    )


def test_a_journal_vouches_only_for_the_time_it_watched() -> None:
    changes = journal.ChangeJournal(started_at=100.0)
    assert changes.alive and changes.covers(100.0) and not changes.covers(99.9)
    changes.mark(["a.py"], ts=110.0)
    changes.mark(["b.py"], ts=120.0)
    changes.mark(["a.py"], ts=105.0)  # an older event does not move a later one back
    assert changes.since(100.0) == {"a.py", "b.py"}
    assert changes.since(111.0) == {"a.py", "b.py"}  # a second of slack before `ts`
    assert changes.since(111.5) == {"b.py"}
    assert changes.since(121.0) == {"b.py"}
    assert changes.since(121.5) == set()
    assert changes.since(50.0) is None  # before it started: not seen
    changes.forget_before(119.5)
    assert changes.since(100.0) == {"b.py"}
    assert changes.sync() is True
    changes.stop()
    stopped_at = changes.stopped_at
    assert not changes.alive and changes.since(121.0) is None and changes.sync() is False
    changes.stop()
    assert changes.stopped_at == stopped_at
    assert journal.ChangeJournal().epoch != journal.ChangeJournal().epoch


def test_a_journal_fed_by_a_watcher_asks_it_to_catch_up() -> None:
    changes = journal.ChangeJournal(started_at=0.0)
    asked: list[float] = []
    changes.syncer = lambda timeout: asked.append(timeout) or False
    assert changes.sync(0.5) is False and asked == [0.5]


def test_git_state_round_trips_and_counts_what_was_carried_in() -> None:
    state = journal.GitState("abc", {"b.py", "a.py"})
    assert state.carried == 0
    assert state.as_json() == {"head": "abc", "dirty": ["a.py", "b.py"], "listed": 2}
    back = journal.GitState.from_json(state.as_json())
    assert back == journal.GitState("abc", {"a.py", "b.py"}, 2)
    carried = journal.GitState("abc", {"a.py", "b.py", "c.py"}, 1)
    assert carried.carried == 2 and carried.as_json()["listed"] == 1
    assert journal.GitState.from_json(carried.as_json()) == carried
    assert state != journal.GitState("abd", {"a.py", "b.py"}) and state != "abc"
    assert repr(carried).startswith("GitState(head='abc', dirty=")


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (None, None),
        ([], None),
        ({"head": "x"}, None),
        ({"head": "x", "dirty": "a.py"}, None),
        ({"head": 3, "dirty": ["a"], "listed": 1}, journal.GitState(None, {"a"}, 1)),
        # A count that cannot be (older states, a bad file): everything counts as carried.
        ({"head": "x", "dirty": ["a"]}, journal.GitState("x", {"a"}, 0)),
        ({"head": "x", "dirty": ["a"], "listed": 2}, journal.GitState("x", {"a"}, 0)),
        ({"head": "x", "dirty": ["a"], "listed": -1}, journal.GitState("x", {"a"}, 0)),
        ({"head": "x", "dirty": ["a"], "listed": True}, journal.GitState("x", {"a"}, 0)),
        ({"head": "x", "dirty": ["a", 5], "listed": 2}, journal.GitState("x", {"a", "5"}, 2)),
    ],
)
def test_a_stored_git_state_is_read_defensively(
    data: object, expected: journal.GitState | None
) -> None:
    assert journal.GitState.from_json(data) == expected


def test_a_watchman_answer_vouches_only_when_its_instance_is_not_fresh() -> None:
    since = journal._since_answer
    assert since({"clock": "c:1", "files": ["a.py", 3, "b/c.py"]}) == journal.WatchmanAnswer(
        "c:1", {"a.py", "b/c.py"}
    )
    assert since({"clock": "c:2", "is_fresh_instance": True, "files": []}) == (
        journal.WatchmanAnswer("c:2", None)
    )
    assert since({"clock": 5, "files": []}) is None
    assert since({"clock": "c:3", "files": "a.py"}) is None
    assert journal.WatchmanAnswer("c", set()) != journal.WatchmanAnswer("c", None)
    assert repr(journal.WatchmanAnswer("c", None)) == "WatchmanAnswer(clock='c', paths=None)"


def test_git_between_two_commits(tmp_path: Path) -> None:
    root = _workspace(tmp_path, {"a.py": "1\n", "b.py": "1\n"})
    run = {"cwd": root, "check": True, "capture_output": True}
    subprocess.run(["git", "init", "-q"], **run)  # type: ignore[call-overload]
    env = ["-c", "user.email=t@example.com", "-c", "user.name=t"]
    subprocess.run(["git", *env, "add", "."], **run)  # type: ignore[call-overload]
    subprocess.run(["git", *env, "commit", "-qm", "one"], **run)  # type: ignore[call-overload]
    first = journal.git_head(root)
    (root / "b.py").write_text("2\n", encoding="utf-8")
    subprocess.run(["git", *env, "commit", "-qam", "two"], **run)  # type: ignore[call-overload]
    second = journal.git_head(root)
    assert first and second and first != second
    assert journal.git_between(root, first, second) == {"b.py"}
    assert journal.git_between(root, second, second) == set()
    assert journal.git_between(root, None, second) is None
    assert journal.git_between(root, "0" * 40, second) is None  # a commit git no longer has
    before = journal.GitState(first, {"x.py"})
    now = journal.GitState(second, {"y.py"})
    assert journal.git_since(root, before, now) == {"x.py", "y.py", "b.py"}
    carried = journal.carry_git_state(root, before, {"z.py"})
    assert carried == journal.GitState(second, {"x.py", "z.py", "b.py"}, 1)
    assert journal.git_head(tmp_path) is None


def test_git_lists_modified_staged_and_untracked_paths_and_new_folders_whole(
    tmp_path: Path,
) -> None:
    root = _workspace(tmp_path, {"a.py": "1\n", "b.py": "1\n", "gone.py": "1\n"})
    run = {"cwd": root, "check": True, "capture_output": True}
    env = ["-c", "user.email=t@example.com", "-c", "user.name=t"]
    subprocess.run(["git", "init", "-q"], **run)  # type: ignore[call-overload]
    subprocess.run(["git", *env, "add", "."], **run)  # type: ignore[call-overload]
    subprocess.run(["git", *env, "commit", "-qm", "one"], **run)  # type: ignore[call-overload]
    assert journal.git_state(root) == journal.GitState(journal.git_head(root), set())
    (root / "a.py").write_text("2\n", encoding="utf-8")  # modified
    (root / "c.py").write_text("1\n", encoding="utf-8")
    subprocess.run(["git", "add", "c.py"], **run)  # type: ignore[call-overload]
    (root / "gone.py").unlink()
    (root / "new" / "deep").mkdir(parents=True)
    (root / "new" / "deep" / "x.py").write_text("1\n", encoding="utf-8")
    state = journal.git_state(root)
    assert state is not None and state.head == journal.git_head(root)
    assert state.dirty == {"a.py", "c.py", "gone.py", "new"}  # the new folder as one path
    background = journal.GitInBackground(root)
    assert background.result() == journal.GitState(state.head, state.dirty)
    assert journal.git_state(tmp_path) is None  # not a repository


def test_a_watcher_that_is_not_running_vouches_for_nothing(tmp_path: Path) -> None:
    root = _workspace(tmp_path, {})
    idle = journal.Watcher(root, journal=journal.ChangeJournal(started_at=0.0))
    assert idle.alive is False and idle.sync(0.01) is False
    idle.stop()
    assert idle.journal is not None and idle.journal.alive is False


class _FakeWatchman:
    """A watchman socket answering each request (BSER, one connection per request) from a
    table by the request's first word; what it was asked is kept."""

    def __init__(self, path: str, answers: dict[str, dict[str, object]]) -> None:
        import socket
        import threading

        from memory_core import bser

        self.asked: list[list[object]] = []
        self._server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._server.bind(path)
        self._server.listen(4)
        self._server.settimeout(5)

        def serve() -> None:
            while True:
                try:
                    conn, _ = self._server.accept()
                except OSError:
                    return
                with conn:
                    data = b""
                    while True:
                        chunk = conn.recv(1 << 16)
                        if not chunk:
                            break
                        data += chunk
                        total = bser.pdu_length(data)
                        if total is not None and len(data) >= total:
                            break
                    request = bser.loads(data)
                    self.asked.append(request)
                    conn.sendall(bser.dumps(answers[str(request[0])]))

        self._thread = threading.Thread(target=serve, daemon=True)
        self._thread.start()

    def close(self) -> None:
        self._server.close()


@pytest.fixture
def fake_watchman(tmp_path: Path):  # type: ignore[no-untyped-def]
    made: list[_FakeWatchman] = []

    def make(answers: dict[str, dict[str, object]]) -> _FakeWatchman:
        fake = _FakeWatchman(str(tmp_path / "sock"), answers)
        made.append(fake)
        journal._SOCKET[0] = str(tmp_path / "sock")
        return fake

    saved = journal._SOCKET[0]
    yield make
    journal._SOCKET[0] = saved
    journal._UNANSWERED[0] = False
    for fake in made:
        fake.close()


def test_watchman_says_what_changed_since_its_clock(fake_watchman, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    fake = fake_watchman({"query": {"clock": "c:2", "files": ["a.py", "b/c.py"]}})
    root = tmp_path / "w"
    answer = journal.watchman_since(root, "c:1")
    assert answer == journal.WatchmanAnswer("c:2", {"a.py", "b/c.py"})
    [asked] = fake.asked
    assert asked[:2] == ["query", str(root)] and asked[2]["since"] == "c:1"  # type: ignore[index]


def test_watchman_watches_the_project_when_the_folder_is_not_a_root(
    fake_watchman, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    fake = fake_watchman(
        {
            "watch-project": {"watch": "/top", "relative_path": "sub"},
            "query": {"clock": "c:3", "files": ["x.py"]},
        }
    )
    # The first query, on the folder itself, is refused as watchman refuses an unwatched root.
    answers = iter([{"error": "not watched"}, {"clock": "c:3", "files": ["x.py"]}])
    original = journal._watchman_socket_call

    def once_refused(path: str, command: list[object]):  # type: ignore[no-untyped-def]
        answer = original(path, command)
        return next(answers) if command[0] == "query" else answer

    journal._watchman_socket_call = once_refused  # type: ignore[assignment]
    try:
        answer = journal.watchman_since(tmp_path / "w" / "sub", "c:1")
    finally:
        journal._watchman_socket_call = original  # type: ignore[assignment]
    assert answer == journal.WatchmanAnswer("c:3", {"x.py"})
    assert [a[0] for a in fake.asked] == ["query", "watch-project", "query"]
    assert fake.asked[2][1] == "/top" and fake.asked[2][2]["relative_root"] == "sub"  # type: ignore[index]


def test_an_ignore_file_that_is_not_utf8_still_applies_its_rules(tmp_path: Path) -> None:
    # A .gitignore saved in Latin-1 (a comment with an accent) must not stop every checkpoint.
    root = _workspace(tmp_path, {})
    (root / ".gitignore").write_bytes(b"# r\xe9sum\xe9 des fichiers\n*.log\nbuild/\n")
    rules = journal.IgnoreRules(root)
    assert rules.path_ignored("server.log") and rules.path_ignored("build/out.js")
    assert not rules.path_ignored("main.py")


def test_a_folder_below_the_top_of_a_repository_has_no_git_state(tmp_path: Path) -> None:
    # git names paths from the repository's top: a workspace further down would be told
    # `sub/a.py` where it knows `a.py`, and a checkpoint trusting that would miss the change.
    root = _workspace(tmp_path, {"sub/a.py": "1\n"})
    subprocess.run(["git", "init", "-q"], cwd=root, check=True, capture_output=True)
    assert journal.git_state(root) == journal.GitState(None, {"sub"})
    assert journal.git_state(root / "sub") is None


def test_a_watchman_that_gives_no_clock_vouches_for_nothing(fake_watchman, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    root = tmp_path / "w"
    answers: dict[str, dict[str, object]] = {
        "watch-project": {"watch": str(root)},
        "clock": {"clock": "c:7"},
    }
    fake_watchman(answers)
    assert journal.watchman_since(root, None) == journal.WatchmanAnswer("c:7", None)
    answers["clock"] = {"version": "4.9.0"}
    assert journal.watchman_since(root, None) is None


@pytest.fixture
def no_known_watchman_socket(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """A process that has not talked to watchman yet: only its command line is known."""
    monkeypatch.delenv("WATCHMAN_SOCK", raising=False)
    saved = journal._SOCKET[0], journal._UNANSWERED[0]
    journal._SOCKET[0], journal._UNANSWERED[0] = None, False
    yield
    journal._SOCKET[0], journal._UNANSWERED[0] = saved


@pytest.mark.skipif(shutil.which("watchman") is None, reason="watchman is not installed")
@pytest.mark.usefixtures("no_known_watchman_socket")
def test_watchman_is_reached_through_its_command_line_then_through_its_socket(
    tmp_path: Path,
) -> None:
    root = _workspace(tmp_path, {"a.py": "1\n"})
    try:
        first = journal.watchman_since(root, None)
        assert first is not None and first.clock.startswith("c:") and first.paths is None
        # The command line named watchman's socket: the next checkpoint asks it directly.
        named = subprocess.run(
            ["watchman", "--no-pretty", "get-sockname"], capture_output=True, text=True
        )
        assert journal.watchman_socket() == json.loads(named.stdout)["sockname"]
        (root / "b.py").write_text("2\n", encoding="utf-8")
        second = journal.watchman_since(root, first.clock)
        assert second is not None and second.paths == {"b.py"}
    finally:
        subprocess.run(["watchman", "watch-del", str(root)], capture_output=True, check=False)


@pytest.mark.usefixtures("no_known_watchman_socket")
def test_a_watchman_command_line_that_hangs_is_given_up_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "bin"
    folder.mkdir()
    hanging = folder / "watchman"
    # It answers, but only after the checkpoint stopped waiting.
    answer = {"watch": str(tmp_path), "clock": "c:1", "sockname": str(tmp_path / "sock")}
    hanging.write_text(
        f"#!{sys.executable}\nimport time\ntime.sleep(3)\nprint({json.dumps(answer)!r})\n",
        encoding="utf-8",
    )
    hanging.chmod(0o755)
    monkeypatch.setenv("PATH", f"{folder}{os.pathsep}{os.environ.get('PATH', '')}")
    monkeypatch.setattr(journal, "WATCHMAN_TIMEOUT_SECONDS", 0.3)
    assert journal.watchman_since(tmp_path, None) is None
    assert journal.watchman_socket() is None


def test_the_watchers_thread_never_keeps_the_server_from_exiting(tmp_path: Path) -> None:
    # An editor that quits without a shutdown request leaves the watcher running: the server
    # process must still end (a thread that is not a daemon would keep it alive).
    watch = journal.Watcher(_workspace(tmp_path, {})).start()
    try:
        assert watch.thread is not None and watch.thread.daemon
    finally:
        watch.stop()


class _Batches:
    """watchfiles' notifier handing over the batches given, then stopping."""

    def __init__(self, *batches: set[tuple[int, str]]) -> None:
        self.batches = list(batches)

    def __enter__(self) -> _Batches:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def watch(self, *args: object) -> set[tuple[int, str]] | str:
        return self.batches.pop(0) if self.batches else "stop"


@pytest.mark.parametrize(("size", "lossy"), [(4095, False), (4096, True)])
def test_a_batch_as_large_as_the_kernel_may_drop_from_ends_what_the_journal_vouches_for(
    tmp_path: Path, size: int, lossy: bool
) -> None:
    # (A real flood cannot be made to arrive as one batch of an exact size: the notifier is
    # replaced by one handing over the batch, as watchfiles would.)
    assert journal.LOSSY_BATCH == 4096
    root = _workspace(tmp_path, {})
    first = journal.ChangeJournal(started_at=0.0)
    watch = journal.Watcher(root, journal=first)
    batch = {(1, os.path.join(root, f"f{index}.txt")) for index in range(size)}
    watch._watch(_Batches(batch), str(root / ".engram") + os.sep, str(root) + os.sep)
    assert first.alive is not lossy
    assert watch.journal is not None and (watch.journal is first) is not lossy
    assert len(watch.journal.since(watch.journal.started_at) or ()) == size


def test_the_watcher_restarts_after_an_undecodable_name_at_most_30_times_a_minute(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A name watchfiles cannot decode fails its watch: the server's watcher starts a fresh one,
    # but a name that keeps failing must end it rather than spin.
    watch = journal.Watcher(_workspace(tmp_path, {}))
    now = [1000.0]
    monkeypatch.setattr(journal.time, "monotonic", lambda: now[0])
    assert all(watch._may_restart() for _ in range(journal.RESTARTS_PER_MINUTE))
    assert watch._may_restart() is False
    now[0] += 59.9  # still within the minute of the first ones
    assert watch._may_restart() is False
    now[0] += 0.1  # a minute after them: only the last one counts
    assert watch._may_restart() is True
