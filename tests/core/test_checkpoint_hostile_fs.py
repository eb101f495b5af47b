"""Checkpoints and rollbacks on hostile filesystems: a folder that became a file (and back, and
links), files that cannot be read, names that are not UTF-8, edits that put the mtime back,
files rewritten while read, hard-linked twins. Each is checked on every change source a
checkpoint may trust (a scan, the server's watcher, watchman when installed, git), through the
public API, with real files."""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from memory_core import checkpoints, config, journal
from memory_core.store import Store
from tests.conftest import git
from tests.conftest import write_file as _write

SOURCES = ["scan", "watcher", "watchman", "git"]


class Source:
    """One way a checkpoint learns what changed, set up so that it is the one that vouches."""

    def __init__(self, store: Store, name: str) -> None:
        self.store, self.name = store, name
        self.watch: journal.Watcher | None = None
        if name == "watchman" and shutil.which("watchman") is None:
            pytest.skip("watchman is not installed")
        config.set_value(store.root, "checkpoints.watchman", name == "watchman")
        if name == "git":
            git(store.root, "init", "-q")
            git(store.root, "add", "-A")
            git(store.root, "commit", "-qm", "start")
        if name == "watcher":
            self.watch = journal.Watcher(store.root).start()
            assert self.watch.ready.wait(10) and self.watch.journal is not None

    @property
    def journal(self) -> journal.ChangeJournal | None:
        return self.watch.journal if self.watch is not None else None

    def checkpoint(self) -> dict[str, Any]:
        # (A watcher that stopped vouches for nothing: the checkpoint then looks by other means.)
        if self.journal is not None:
            self.journal.sync()
        return checkpoints.create(self.store, journal=self.journal)

    def rollback(self, ref: str) -> dict[str, Any]:
        plan = checkpoints.plan_rollback(self.store, ref, journal=self.journal)
        undo = checkpoints.prepare_undo(self.store, plan)
        return checkpoints.apply_plan(self.store, plan, undo_checkpoint=undo["id"])

    def close(self) -> None:
        if self.watch is not None:
            self.watch.stop()


@pytest.fixture(params=SOURCES)
def source(request: pytest.FixtureRequest, store: Store) -> Iterator[Source]:
    _write(store.root, "keep.txt", "kept\n")
    made = Source(store, request.param)
    yield made
    made.close()


def _files(store: Store, checkpoint_id: str) -> dict[str, tuple[str, bytes]]:
    return {
        item["path"]: (item["kind"], checkpoints.read_blob(store, item["hash"]))
        for item in checkpoints.manifest(store, checkpoint_id)
    }


def _state(root: Path) -> dict[str, tuple[str, bytes]]:
    """What is on disk: path -> (kind, content or link target), `.engram`/`.git` left out."""
    found: dict[str, tuple[str, bytes]] = {}
    for folder, dirs, names in os.walk(root):
        dirs[:] = [d for d in dirs if d not in (".engram", ".git")]
        for name in names + [d for d in dirs if os.path.islink(os.path.join(folder, d))]:
            path = os.path.join(folder, name)
            rel = os.path.relpath(path, root)
            if os.path.islink(path):
                found[rel] = ("link", os.fsencode(os.readlink(path)))
            else:
                with open(path, "rb") as handle:
                    found[rel] = ("file", handle.read())
    return found


def _swap_then_roll_back_and_undo(source: Source, before: Any, after: Any) -> None:
    """`before` builds the state checkpointed, `after` changes it; the checkpoint after the
    change holds it, a rollback restores `before`, and undoing that brings `after` back."""
    root = source.store.root
    before(root)
    first = source.checkpoint()
    expected_first = _state(root)
    after(root)
    expected_after = _state(root)
    second = source.checkpoint()
    assert {
        path: (kind, data) for path, (kind, data) in _files(source.store, second["id"]).items()
    } == expected_after, f"the checkpoint after the change ({second['source']}) missed it"
    result = source.rollback(first["id"])
    assert result["done"], result["failed"]
    assert _state(root) == expected_first
    undone = source.rollback(result["undo_checkpoint"])
    assert undone["done"], undone["failed"]
    assert _state(root) == expected_after


def _folder_d(root: Path) -> None:
    _write(root, "d/inner.txt", "inside the folder\n")
    _write(root, "d/deeper/more.txt", "deeper\n")


def _file_d(root: Path) -> None:
    if (root / "d").is_dir():
        shutil.rmtree(root / "d")
    elif (root / "d").exists() or (root / "d").is_symlink():
        (root / "d").unlink()
    _write(root, "d", "a file now\n")


def test_a_file_that_replaced_a_folder_survives_rollback_and_undo(source: Source) -> None:
    _swap_then_roll_back_and_undo(source, _folder_d, _file_d)


def test_a_file_that_replaced_a_folder_is_in_the_rollbacks_own_undo(source: Source) -> None:
    """The issue's scenario as written: no checkpoint between the swap and the rollback, so
    only the pre-rollback (undo) checkpoint can hold the file `d`; undoing gives it back."""
    root = source.store.root
    _folder_d(root)
    first = source.checkpoint()
    _file_d(root)
    if source.journal is not None:
        source.journal.sync()
    result = source.rollback(first["id"])
    assert result["done"], result["failed"]
    assert (root / "d" / "inner.txt").read_text() == "inside the folder\n"
    undone = source.rollback(result["undo_checkpoint"])
    assert undone["done"], undone["failed"]
    assert (root / "d").read_text() == "a file now\n", "the file that replaced the folder is gone"


def test_a_folder_that_replaced_a_file_survives_rollback_and_undo(source: Source) -> None:
    _swap_then_roll_back_and_undo(source, _file_d, _folder_d_after)


def _folder_d_after(root: Path) -> None:
    (root / "d").unlink()
    _folder_d(root)


def test_names_in_any_bytes_are_captured_and_restored(source: Source) -> None:
    root = os.fsencode(source.store.root)
    latin1, broken = root + b"/caf\xe9.txt", root + b"/dir\xff\xfe/x\x80.bin"

    def before(_: Path) -> None:
        with open(latin1, "wb") as handle:
            handle.write(b"named in latin-1\n")
        os.makedirs(os.path.dirname(broken))
        with open(broken, "wb") as handle:
            handle.write(b"\x00\x01 in a folder named by no encoding\n")

    def after(_: Path) -> None:
        os.unlink(latin1)
        with open(broken, "wb") as handle:
            handle.write(b"changed\n")
        with open(root + b"/new\xc3(.txt", "wb") as handle:
            handle.write(b"created after\n")

    _swap_then_roll_back_and_undo(source, before, after)


def test_a_same_size_edit_with_its_mtime_put_back_is_seen(source: Source) -> None:
    """`touch -r`, `cp -p` and `rsync -t` put the mtime back; the change time still moves (git
    compares it too), on every source: git and the stat cache alike."""
    root = source.store.root
    path = _write(root, "config.ini", "mode=AAAA\n")
    old = time.time() - 3600  # well outside the racy window
    os.utime(path, (old, old))
    if source.name == "git":
        git(root, "add", "-A")
        git(root, "commit", "-qm", "config")
    # (With git, within the second of git's look: git cannot see it, engram compares the
    # change time itself; test_a_same_size_edit_within_the_second_of_gits_look_is_seen.)
    first = source.checkpoint()
    st = os.stat(path)
    with open(path, "r+b") as handle:  # same size, same inode
        handle.write(b"mode=BBBB\n")
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert os.stat(path).st_mtime_ns == st.st_mtime_ns
    second = source.checkpoint()
    assert _files(source.store, second["id"])["config.ini"] == ("file", b"mode=BBBB\n")
    result = source.rollback(first["id"])
    assert result["restored"] == ["config.ini"] and path.read_bytes() == b"mode=AAAA\n"


@pytest.fixture(params=SOURCES)
def twins_source(request: pytest.FixtureRequest, store: Store) -> Iterator[Source]:
    """Hard-linked twins a.txt and b.txt made before the source starts watching, as in a
    project that had them all along (a watcher that saw the link made would report b.txt)."""
    _write(store.root, "a.txt", "one\n")
    os.link(store.root / "a.txt", store.root / "b.txt")
    made = Source(store, request.param)
    yield made
    made.close()


def test_hard_linked_twins_are_both_restored(twins_source: Source) -> None:
    source = twins_source
    root = source.store.root
    first = source.checkpoint()
    with open(root / "a.txt", "r+b") as handle:  # through one name: both change
        handle.write(b"two\n")
    second = source.checkpoint()
    assert _files(source.store, second["id"])["b.txt"] == ("file", b"two\n")
    result = source.rollback(first["id"])
    assert result["done"], result
    assert (root / "a.txt").read_bytes() == (root / "b.txt").read_bytes() == b"one\n"


def _one_moment(data: bytes) -> bool:
    """Whether `data` is what the rewriting writer below leaves on disk at some moment: pass n
    has written its first bytes (byte n) over pass n-1's (byte n-1), front to back."""
    newest = data[:1]
    rest = data.lstrip(newest)
    return rest == bytes([(newest[0] - 1) % 256]) * len(rest)


def test_a_file_rewritten_while_it_is_read_is_never_stored_torn(store: Store) -> None:
    """A writer rewrites a 4 MB file over and over in 64 kB pieces (pass n fills it with byte
    n) while checkpoints are taken: each must hold what the file held at one moment, or say
    the file could not be read whole; never pieces of passes that were never on disk together."""
    root = store.root
    size, piece = 4 << 20, 64 << 10
    path = _write(root, "big.log", bytes(size))
    config.set_value(root, "checkpoints.watchman", False)
    stop = threading.Event()

    def rewrite() -> None:
        fill = 1
        with open(path, "r+b", buffering=0) as handle:
            while not stop.is_set():
                handle.seek(0)
                for _ in range(size // piece):
                    handle.write(bytes([fill]) * piece)
                fill = (fill + 1) % 256

    writer = threading.Thread(target=rewrite)
    writer.start()
    outcomes = {"held": 0, "reported": 0}
    try:
        for _ in range(25):
            made = checkpoints.create(store)
            held = _files(store, made["id"]).get("big.log")
            if held is None:
                assert made["unreadable"] == ["big.log"], made
                outcomes["reported"] += 1
            else:
                assert _one_moment(held[1]), "stored torn"
                outcomes["held"] += 1
    finally:
        stop.set()
        writer.join()
    assert sum(outcomes.values()) == 25


# -- files a checkpoint cannot read --------------------------------------------------------------
#
# The tests run as root here, and root reads every file whatever its mode. So engram runs as
# `nobody` (setpriv) over a project that `nobody` owns, in which one file belongs to root with
# mode 0600: a file engram really cannot open. Run as another user, a chmod 000 does the same.


def _as_nobody() -> list[str]:
    if os.geteuid() != 0:
        return []
    if shutil.which("setpriv") is None:
        pytest.skip("running as root without setpriv: cannot make a file unreadable")
    return ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]


@pytest.fixture
def shared_project() -> Iterator[Path]:
    """A project outside the test's private temp folder (root's, which nobody cannot enter)."""
    import tempfile

    top = Path(tempfile.mkdtemp(prefix="engram-hostile-")).resolve()
    root = top / "project"
    root.mkdir()
    yield root
    shutil.rmtree(top, ignore_errors=True)


def _engram(root: Path, *args: str) -> dict[str, Any]:
    import json

    env = {**os.environ, "HOME": str(root.parent), "PYTHONPATH": str(Path(__file__).parents[2])}
    done = subprocess.run(
        [*_as_nobody(), sys.executable, "-m", "memory_core", *args, "--json"],
        cwd=root,
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    assert done.stdout.strip(), done.stderr
    answer: dict[str, Any] = json.loads(done.stdout)
    return answer


def _unreadable(path: Path) -> None:
    if os.geteuid() == 0:
        os.chown(path, 0, 0)
        os.chmod(path, 0o600)
    else:
        os.chmod(path, 0)


def test_a_file_unreadable_at_checkpoint_time_is_reported_and_never_deleted(
    shared_project: Path,
) -> None:
    root = shared_project
    _write(root, "src/app.py", "print('v1')\n")
    secret = _write(root, "private/notes.txt", "written by someone else\n")
    if os.geteuid() == 0:
        subprocess.run(["chown", "-R", "65534:65534", str(root.parent)], check=True)
    _engram(root, "init")
    _unreadable(secret)
    made = _engram(root, "checkpoint", "create")
    assert made["unreadable"] == ["private/notes.txt"], made
    # Later the file becomes readable; the rollback sees a file the checkpoint does not hold,
    # but it never deletes what the checkpoint could not read.
    os.chmod(secret, 0o644)
    _write(root, "src/app.py", "print('v2')\n")
    result = _engram(root, "rollback", made["id"], "--yes")
    assert result["done"], result
    assert "private/notes.txt" not in result["removed"]
    assert secret.read_text() == "written by someone else\n"
    assert (root / "src/app.py").read_text() == "print('v1')\n"


def test_a_rollback_never_overwrites_a_file_it_could_not_save_first(shared_project: Path) -> None:
    root = shared_project
    doc = _write(root, "doc.txt", "version 1\n")
    if os.geteuid() == 0:
        subprocess.run(["chown", "-R", "65534:65534", str(root.parent)], check=True)
    _engram(root, "init")
    made = _engram(root, "checkpoint", "create")
    # Someone else rewrites it and takes it: the pre-rollback checkpoint cannot hold it, so
    # overwriting it (a rename over it needs only the folder) could not be undone.
    doc.unlink()
    _write(root, "doc.txt", "version 2, not engram's to read\n")
    _unreadable(doc)
    result = _engram(root, "rollback", made["id"], "--yes")
    assert not result["done"]
    assert [f["path"] for f in result["failed"]] == ["doc.txt"]
    assert "could not be read" in result["failed"][0]["error"]
    os.chmod(doc, 0o644)
    assert doc.read_text() == "version 2, not engram's to read\n"


# -- a rollback never writes outside the project, even in a race --------------------------------


def test_a_folder_swapped_for_a_link_outside_during_a_rollback_is_never_written_through(
    store: Store, tmp_path: Path
) -> None:
    """While the rollback writes 150 files into src/, another process keeps swapping src/ for
    a link to a folder outside the project (holding files of the same names) and back. Ten
    rounds: the outside files are never changed, and what the rollback could not do it says."""
    root = store.root
    config.set_value(root, "checkpoints.watchman", False)
    outside = tmp_path / "outside"
    names = [f"m{index:03}.txt" for index in range(150)]
    for name in names:
        _write(outside, name, "outside, not the project's\n")
    for name in names:
        _write(root, f"src/{name}", "checkpointed\n")
    first = checkpoints.create(store)
    stopped = 0
    for round_ in range(10):
        for name in names:
            _write(root, f"src/{name}", f"edited in round {round_}\n")
        stop = threading.Event()

        def swap(stop: threading.Event) -> None:
            while not stop.is_set():
                with contextlib.suppress(OSError):
                    os.rename(root / "src", root / "src.away")
                    os.symlink(outside, root / "src")
                    time.sleep(0.0005)
                    os.unlink(root / "src")
                    os.rename(root / "src.away", root / "src")

        swapper = threading.Thread(target=swap, args=(stop,))
        plan = checkpoints.plan_rollback(store, first["id"])
        undo = checkpoints.prepare_undo(store, plan)
        swapper.start()
        try:
            result = checkpoints.apply_plan(store, plan, undo_checkpoint=undo["id"])
        finally:
            stop.set()
            swapper.join()
        if (root / "src").is_symlink():
            os.unlink(root / "src")
        if (root / "src.away").exists():
            # (A rollback that found src/ missing for a moment may have made a new one.)
            shutil.rmtree(root / "src", ignore_errors=True)
            os.rename(root / "src.away", root / "src")
        for name in names:
            assert (outside / name).read_text() == "outside, not the project's\n", (round_, name)
        assert not list(outside.glob(".*engram-rollback*")), "a temp file was left outside"
        if "stopped" in result:
            stopped += 1
            assert not result["done"] and "was replaced or moved" in result["stopped"]
        # Undo is always possible: the pre-rollback checkpoint brings the round's edits back.
        undone = checkpoints.rollback(store, undo["id"])
        assert undone["done"], undone
        for name in names:
            assert (root / "src" / name).read_text() == f"edited in round {round_}\n"
    assert stopped, "the swaps never met the rollback: the race was not tested"


# -- the held-out attacks (written after everything above passed, run once as they are) --------


def test_held_out_a_file_swapped_with_a_link_and_back_survives_rollback_and_undo(
    source: Source,
) -> None:
    def before(root: Path) -> None:
        _write(root, "f.txt", "a file\n")
        os.symlink("f.txt", root / "link")

    def after(root: Path) -> None:
        (root / "f.txt").unlink()
        os.symlink("link", root / "f.txt")  # the file is a link now
        (root / "link").unlink()
        _write(root, "link", "the link is a file now\n")

    _swap_then_roll_back_and_undo(source, before, after)


def test_held_out_a_dangling_link_is_captured_and_restored_as_a_link(source: Source) -> None:
    def before(root: Path) -> None:
        os.symlink("does/not/exist", root / "dangling")

    def after(root: Path) -> None:
        (root / "dangling").unlink()
        os.symlink("elsewhere/missing", root / "dangling")
        os.symlink("../../outside", root / "new-dangling")

    _swap_then_roll_back_and_undo(source, before, after)


def test_held_out_an_empty_folder_replaced_by_a_file(source: Source) -> None:
    def before(root: Path) -> None:
        (root / "e").mkdir()

    def after(root: Path) -> None:
        (root / "e").rmdir()
        _write(root, "e", "a file where an empty folder was\n")

    _swap_then_roll_back_and_undo(source, before, after)


def test_held_out_a_folder_two_levels_up_becomes_a_file(source: Source) -> None:
    def before(root: Path) -> None:
        _write(root, "a/b/c.txt", "deep\n")
        _write(root, "a/b/d/e.txt", "deeper\n")
        _write(root, "a/top.txt", "top\n")

    def after(root: Path) -> None:
        shutil.rmtree(root / "a")
        _write(root, "a", "a is a file\n")

    _swap_then_roll_back_and_undo(source, before, after)


def test_held_out_a_fifo_where_a_file_was_does_not_block_the_rollback(source: Source) -> None:
    root = source.store.root
    _write(root, "pipe", "was a file\n")
    first = source.checkpoint()
    (root / "pipe").unlink()
    os.mkfifo(root / "pipe")
    second = source.checkpoint()  # a fifo is no content: not read, not held
    assert "pipe" not in _files(source.store, second["id"])
    result = source.rollback(first["id"])
    assert result["done"], result
    assert (root / "pipe").read_text() == "was a file\n"


def test_held_out_odd_names_round_trip(source: Source) -> None:
    names = ["new\nline.txt", "back\\slash.txt", "-leading-dash", "é" * 126 + ".x", " spaced "]

    def before(root: Path) -> None:
        for name in names:
            _write(root, f"odd/{name}", f"content of {name!r}\n")

    def after(root: Path) -> None:
        for name in names[:3]:
            (root / "odd" / name).unlink()
        _write(root, f"odd/{names[3]}", "changed\n")

    _swap_then_roll_back_and_undo(source, before, after)


def test_held_out_cp_p_over_a_file_is_seen(source: Source, tmp_path: Path) -> None:
    root = source.store.root
    target = _write(root, "settings.json", '{"a": 1}\n')
    if source.name == "git":
        git(root, "add", "-A")
        git(root, "commit", "-qm", "settings")
    first = source.checkpoint()
    other = tmp_path / "settings.json"
    other.write_text('{"a": 2}\n')
    st = target.stat()
    os.utime(other, ns=(st.st_atime_ns, st.st_mtime_ns))
    subprocess.run(["cp", "-p", str(other), str(target)], check=True)
    assert target.stat().st_mtime_ns == st.st_mtime_ns and target.stat().st_ino == st.st_ino
    second = source.checkpoint()
    assert _files(source.store, second["id"])["settings.json"] == ("file", b'{"a": 2}\n')
    result = source.rollback(first["id"])
    assert result["restored"] == ["settings.json"] and target.read_text() == '{"a": 1}\n'


def test_a_deleted_file_with_a_name_of_the_longest_length_is_restored(store: Store) -> None:
    """Found after the held-out run: the rollback's temp file took the file's name plus a
    suffix, past the 255 bytes a name may have."""
    name = "é" * 126 + ".x"  # 254 bytes
    path = _write(store.root, name, "long-named\n")
    first = checkpoints.create(store)
    path.unlink()
    result = checkpoints.rollback(store, first["id"])
    assert result["done"], result
    assert path.read_text() == "long-named\n"


def test_an_undo_replaces_a_link_the_rollback_restored_where_a_folder_was(
    store: Store, tmp_path: Path
) -> None:
    """Found by the fuzzer: the checkpoint held a link to a folder outside where the later
    state had a folder; the rollback restored the link, and its undo was refused (a link on
    the way), leaving the rollback without an undo. The undo removes the link (never follows
    it) and makes the folder again; the outside folder is never touched."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "inside").write_text("outside, never touched\n")
    config.set_value(store.root, "checkpoints.watchman", False)
    os.symlink(outside, store.root / "L")
    first = checkpoints.create(store)
    (store.root / "L").unlink()
    _write(store.root, "L/inside", "the project's own folder\n")
    back = checkpoints.rollback(store, first["id"])
    assert back["done"] and os.readlink(store.root / "L") == str(outside)
    undone = checkpoints.rollback(store, back["undo_checkpoint"])
    assert undone["done"], undone
    assert not (store.root / "L").is_symlink()
    assert (store.root / "L" / "inside").read_text() == "the project's own folder\n"
    assert (outside / "inside").read_text() == "outside, never touched\n"


def test_the_servers_watcher_outlives_a_name_that_is_not_utf8(store: Store) -> None:
    """watchfiles fails its whole watch on such a name: the watcher starts a fresh watch and
    journal (vouching only from then on) instead of stopping for the rest of the session."""
    watch = journal.Watcher(store.root).start()
    try:
        assert watch.ready.wait(10)
        with open(os.fsencode(store.root) + b"/caf\xe9.txt", "wb") as handle:
            handle.write(b"latin-1 name\n")
        deadline = time.time() + 10
        _write(store.root, "later.txt", "written after\n")
        while time.time() < deadline:
            current = watch.journal
            if current is not None and "later.txt" in (current.since(current.started_at) or ()):
                break
            _write(store.root, "later.txt", f"written after {time.time()}\n")
            time.sleep(0.2)
        assert watch.alive, watch.error
        assert watch.journal is not None and watch.journal.sync()
        assert "later.txt" in (watch.journal.since(watch.journal.started_at) or set())
    finally:
        watch.stop()


# -- a folder moved away at the very moment a rollback writes into it ---------------------------


@pytest.mark.parametrize("step", ["rewrite", "create", "remove"])
def test_a_folder_moved_away_mid_write_keeps_what_it_held(
    store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, step: str
) -> None:
    """Someone moves src/ out of the project (`mv src /elsewhere`) after the rollback checked
    the folder and before its write lands: the write then lands in the moved folder, the one
    window no check before it can close. The rollback undoes that write in the folder it holds
    and stops, so the moved folder keeps exactly what it held when it left the project.
    (The move is made at that moment from the syscall the rollback is about to make.)"""
    root = store.root
    config.set_value(root, "checkpoints.watchman", False)
    _write(root, "src/rewritten.txt", "checkpointed\n")
    _write(root, "src/created.txt", "checkpointed, deleted since\n")
    first = checkpoints.create(store)
    _write(root, "src/rewritten.txt", "edited since\n")
    (root / "src/created.txt").unlink()
    _write(root, "src/removed.txt", "made after the checkpoint\n")
    moved = tmp_path / "elsewhere"
    plan = checkpoints.plan_rollback(store, first["id"])
    if step != "remove":
        plan.removes.clear()  # only the step under test runs
    written = {"rewrite": "src/rewritten.txt", "create": "src/created.txt"}.get(step)
    plan.writes[:] = [w for w in plan.writes if w.path == written]
    undo = checkpoints.prepare_undo(store, plan)
    expected = {p.name: p.read_bytes() for p in (root / "src").iterdir()}

    def move_first(real: Any) -> Any:
        def racing(*args: Any, **kwargs: Any) -> Any:
            if not moved.exists():
                os.rename(root / "src", moved)
            return real(*args, **kwargs)

        return racing

    from memory_core.checkpoints import restore

    if step == "rewrite":
        monkeypatch.setattr(restore, "_write_all", move_first(restore._write_all))
    elif step == "create":
        monkeypatch.setattr(os, "replace", move_first(os.replace))
    else:
        monkeypatch.setattr(os, "unlink", move_first(os.unlink))
    result = checkpoints.apply_plan(store, plan, undo_checkpoint=undo["id"])
    monkeypatch.undo()
    assert moved.exists(), "the race was not made"
    assert not result["done"] and "was replaced or moved" in result.get("stopped", ""), result
    assert {p.name: p.read_bytes() for p in moved.iterdir()} == expected


def test_a_same_size_edit_within_the_second_of_gits_look_is_seen(store: Store) -> None:
    """git compares the change time in whole seconds: an edit with its mtime put back, in the
    same second as the file's previous change and git's look, is clean to git. engram compares
    the change time it has in nanoseconds for the files changed in the second git looked."""
    root = store.root
    config.set_value(root, "checkpoints.watchman", False)
    git(root, "init", "-q")
    for attempt in range(5):
        # (A fresh file each attempt: one that crossed a second is seen by git itself.)
        name = f"config{attempt}.ini"
        path = _write(root, name, "mode=AAAA\n")
        old = time.time() - 3600
        os.utime(path, (old, old))
        git(root, "add", "-A")
        git(root, "commit", "-qm", name)
        checkpoints.create(store)
        checkpoints.create(store)  # the second one is the one git vouches for
        st = os.stat(path)
        with open(path, "r+b") as handle:  # same size, same inode, mtime put back
            handle.write(b"mode=BBBB\n")
        os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
        if os.stat(path).st_ctime_ns // 10**9 == st.st_ctime_ns // 10**9:
            break
    else:
        pytest.skip("could not make the edit within one second five times (a busy machine)")
    second = checkpoints.create(store)
    assert second["source"] == "git", second
    assert _files(store, second["id"])[name] == ("file", b"mode=BBBB\n")


def test_watchman_vouches_for_a_change_to_a_name_that_is_not_utf8(store: Store) -> None:
    """watchman's JSON protocol cannot carry such a name and answers nothing (engram waited
    10 s, then left watchman alone for an hour); its binary protocol carries the bytes."""
    if shutil.which("watchman") is None:
        pytest.skip("watchman is not installed")
    root = os.fsencode(store.root)
    config.set_value(store.root, "checkpoints.watchman", True)
    with open(root + b"/caf\xe9.txt", "wb") as handle:
        handle.write(b"before\n")
    checkpoints.create(store)
    checkpoints.create(store)  # watchman's clock is known from here
    with open(root + b"/caf\xe9.txt", "wb") as handle:
        handle.write(b"after\n")
    _write(store.root, "later.txt", "written after\n")
    started = time.monotonic()
    made = checkpoints.create(store)
    assert made["source"] == "watchman", made
    assert time.monotonic() - started < 5
    held = {os.fsencode(path): data for path, (_, data) in _files(store, made["id"]).items()}
    assert held[b"caf\xe9.txt"] == b"after\n" and held[b"later.txt"] == b"written after\n"


def test_a_name_that_is_not_utf8_has_its_stat_cache_row(store: Store) -> None:
    """So an unchanged file with such a name is not read again at every checkpoint (SQLite
    text cannot hold the name as it is: its odd bytes are escaped), and its row still tells
    an edit apart, here one with its mtime put back."""
    from memory_core.checkpoints import storage

    root = os.fsencode(store.root)
    config.set_value(store.root, "checkpoints.watchman", False)
    os.makedirs(root + b"/d\xff")
    name = root + b"/d\xff/caf\xe9.txt"
    with open(name, "wb") as handle:
        handle.write(b"latin-1 AAAA\n")
    old = time.time() - 3600
    os.utime(name, (old, old))
    first = checkpoints.create(store)
    rel = os.fsdecode(b"d\xff/caf\xe9.txt")
    assert rel in storage.stat_cache(store)
    assert rel in storage.stat_cache(store, under=os.fsdecode(b"d\xff"))
    assert rel in storage.stat_cache_of(store, [rel])
    st = os.stat(name)
    with open(name, "r+b") as handle:
        handle.write(b"latin-1 BBBB\n")
    os.utime(name, ns=(st.st_atime_ns, st.st_mtime_ns))
    second = checkpoints.create(store)
    held = {os.fsencode(p): data for p, (_, data) in _files(store, second["id"]).items()}
    assert held[b"d\xff/caf\xe9.txt"] == b"latin-1 BBBB\n"
    assert checkpoints.rollback(store, first["id"])["done"]
    with open(name, "rb") as handle:
        assert handle.read() == b"latin-1 AAAA\n"


def test_a_folder_of_only_empty_folders_where_a_file_was_is_replaced_by_the_file(
    store: Store,
) -> None:
    """Found by the fuzzer (seed 2, round 576): empty folders are no content (a checkpoint
    does not hold them), so a tree of nothing else where the checkpoint had a file goes; a
    folder holding anything else is still left alone, named."""
    root = store.root
    config.set_value(root, "checkpoints.watchman", False)
    _write(root, "d", "a file\n")
    _write(root, "kept", "a file too\n")
    first = checkpoints.create(store)
    (root / "d").unlink()
    (root / "d" / "e" / "f").mkdir(parents=True)
    (root / "kept").unlink()
    (root / "kept" / "empty").mkdir(parents=True)
    os.mkfifo(root / "kept" / "pipe")  # not content, never engram's to delete
    result = checkpoints.rollback(store, first["id"])
    assert (root / "d").read_text() == "a file\n"
    assert [f["path"] for f in result["failed"]] == ["kept"], result
    assert (root / "kept" / "empty").is_dir() and (root / "kept" / "pipe").exists()
