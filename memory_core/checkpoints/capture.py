"""Taking a checkpoint: which change source may vouch for the interval since the previous
one (a given list, the server's watcher, watchman, git, else a scan), then one transaction."""

from __future__ import annotations

import contextlib
import json
import os
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from memory_core import clock, config, cyclic_gc, events, journal
from memory_core import git as git_module
from memory_core.checkpoints.build import build_full, build_incremental
from memory_core.checkpoints.disk import rules_for, settings_for
from memory_core.checkpoints.history import get
from memory_core.checkpoints.retention import enforce_retention
from memory_core.checkpoints.storage import Writer, loaded_path
from memory_core.checkpoints.trees import Tree, sha
from memory_core.errors import UsageError
from memory_core.journal import ChangeJournal, GitInBackground
from memory_core.store import Store

# Paths a git state carried through checkpoints other sources vouched for may gain, beyond those
# git listed, before git is asked again (each checkpoint stores them).
GIT_CARRY_LIMIT = 1000
REASONS = ("manual", "burst", "turns", "pre-rollback", "auto")


def _new_id() -> str:
    return f"C-{os.urandom(4).hex()}"


class Capture:
    """A checkpoint worked out but not yet written (a rollback plans against it first).

    (A plain class: a dataclass would make a cold checkpoint import dataclasses.)"""

    def __init__(
        self,
        writer: Writer,
        root_tree: str,
        files: int,
        size: int,
        changed: int,
        skipped: list[str],
        unreadable: list[str],
        mode: str,
        source: str,
        token: dict[str, Any],
        started: float,
        ts: float,
        tree_cache: dict[str, Tree] | None = None,
    ) -> None:
        self.writer = writer
        self.root_tree = root_tree
        self.files = files
        self.size = size
        self.changed = changed
        self.skipped = skipped
        # Paths found but not read (a file or folder without permission, a file that kept
        # changing while read): the checkpoint does not hold them, and a rollback leaves them.
        self.unreadable = unreadable
        self.mode = mode  # "incremental" | "scan"
        self.source = source  # what vouched: given | watcher | watchman | git | scan
        self.token = token
        self.started = started
        self.ts = ts
        # The caller's cache of listings, given the new ones once they are written.
        self.tree_cache = tree_cache


def _rules_fingerprint(root: Path, settings: config.Settings) -> str:
    """What decides which files belong in a checkpoint, besides `.gitignore` files."""
    info = git_module.git_dir(root)
    try:
        st = os.stat(info / "info" / "exclude") if info is not None else None
    except OSError:
        st = None
    parts = [
        list(settings["watch.exclude"]),
        bool(settings["checkpoints.include_secret_files"]),
        [*journal.EDITOR_FILE_PATTERNS, *settings["watch.editor_files"]],
        [st.st_mtime_ns, st.st_size] if st is not None else None,
    ]
    return sha(json.dumps(parts).encode("utf-8"))[:16]


def capture_workspace(
    store: Store,
    settings: config.Settings,
    ts: float,
    *,
    watcher: ChangeJournal | None = None,
    changed: Iterable[str] | None = None,
    hints: Iterable[str] | None = None,
    tree_cache: dict[str, Tree] | None = None,
    git: GitInBackground | None = None,
    listing_data: dict[str, bytes] | None = None,
) -> Capture:
    """Work out a new checkpoint, trusting a change source only for an interval it covered
    (`git`: a `git status` already started, asked instead of running one; `listing_data`:
    listings' bytes read and verified already, by digest)."""
    root = store.root
    started = clock.now()
    writer = Writer(store)
    base = store.query_one(
        "SELECT id, root_tree, skipped, created_at, journal FROM checkpoints "
        "ORDER BY created_at DESC, rowid DESC LIMIT 1"
    )
    before: dict[str, Any] = {}
    if base is not None and base["journal"]:
        with contextlib.suppress(ValueError):
            loaded = json.loads(base["journal"])
            before = loaded if isinstance(loaded, dict) else {}
    fingerprint = _rules_fingerprint(root, settings)
    token: dict[str, Any] = {"rules": fingerprint}
    paths: set[str] | None = None
    source = "scan"
    usable = base is not None and before.get("rules") == fingerprint
    if base is not None and changed is not None:
        # The caller looked at the workspace itself (a rollback's plan) and says what differs.
        paths, source = {p.strip("/") for p in changed}, "given"
    elif usable and watcher is not None and base is not None:
        paths = watcher.since(float(base["created_at"]))
        if paths is not None:
            source = "watcher"
    if watcher is not None and watcher.alive:
        token["epoch"] = watcher.epoch

    # watchman: asked when nothing cheaper vouched; otherwise its clock is carried forward (a
    # later `since` that older clock answers a superset, which is still right).
    wanted_watchman = bool(settings["checkpoints.watchman"])
    unanswered = before.get("watchman_unanswered")
    if (
        isinstance(unanswered, (int, float))
        and started - unanswered < journal.WATCHMAN_RETRY_SECONDS
    ):
        wanted_watchman = False  # it let a query time out lately (see journal.watchman_unanswered)
        token["watchman_unanswered"] = unanswered
    if wanted_watchman and paths is None:
        sock = before.get("watchman_socket")
        journal.use_watchman_socket(sock if isinstance(sock, str) else None)
        journal.watchman_unanswered()
        answer = journal.watchman_since(root, before.get("watchman") if usable else None)
        if journal.watchman_unanswered():
            token["watchman_unanswered"] = started
        if answer is not None:
            token["watchman"] = answer.clock
            if journal.watchman_socket():
                token["watchman_socket"] = journal.watchman_socket()
            if usable and answer.paths is not None:
                paths, source = answer.paths, "watchman"
    if "watchman" not in token and isinstance(before.get("watchman"), str):
        token["watchman"] = before["watchman"]

    # git: `git status` now, against what it said at the previous checkpoint.
    previous_git = journal.GitState.from_json(before.get("git")) if usable else None
    rules = None
    if paths is None:
        # The ignore rules are read while git works (git runs in its own process), and so are
        # the files git may call clean though they changed (see _racy_for_git), once the second
        # of git's previous look is over: nothing can change within it any more.
        rules = rules_for(store, settings) if git is not None else None
        previous_look = before.get("git_at")
        racy = None
        if (
            git is not None
            and previous_git is not None
            and isinstance(previous_look, (int, float))
            and int(time.time()) > int(previous_look)
        ):
            racy = _racy_for_git(store, previous_look)
        looked = git.started if git is not None else time.time()
        now_git = git.result() if git is not None else journal.git_state(root, own_index=True)
        if now_git is not None:
            token["git"], token["git_at"] = now_git.as_json(), looked
            if previous_git is not None:
                paths = journal.git_since(root, previous_git, now_git)
                if paths is not None:
                    source = "git"
                    paths |= racy if racy is not None else _racy_for_git(store, previous_look)
    elif previous_git is not None:
        carried = journal.carry_git_state(root, previous_git, paths)
        if carried is not None and carried.carried > GIT_CARRY_LIMIT:
            # A carried state only grows (every path another source named joins it) until git
            # looks again; past the limit, one `git status` starts it afresh. (Counted beyond
            # what git listed: with more files than that modified, a count of all of them made
            # every checkpoint ask git, 180 ms in 50,000 files, however few had changed.)
            looked, carried = time.time(), journal.git_state(root, own_index=True)
            token["git_at"] = looked
        elif isinstance(before.get("git_at"), (int, float)):
            token["git_at"] = before["git_at"]  # git's stat data is still from that look
        if carried is not None:
            token["git"] = carried.as_json()

    if paths is not None and hints:
        paths |= {p.strip("/") for p in hints}
    # A changed .gitignore changes what belongs in the checkpoint everywhere below it.
    if paths is not None and any(p == ".gitignore" or p.endswith("/.gitignore") for p in paths):
        paths, source = None, "scan"
    if paths is not None and base is not None:
        mode = "incremental"
        root_hash, count, size, changed_count, skipped = build_incremental(
            store,
            settings,
            writer,
            base["root_tree"],
            json.loads(base["skipped"]),
            paths,
            ts,
            tree_cache,
            rules,
            listing_data,
        )
    else:
        mode, source = "scan", "scan"
        root_hash, count, size, changed_count, skipped = build_full(
            store, settings, writer, ts, rules
        )
    token["source"] = source
    unreadable = set(writer.unreadable)
    if mode == "incremental" and paths is not None:
        # What the base could not read and nothing looked at again is still not held.
        carried = before.get("unreadable")
        for rel in carried if isinstance(carried, list) else []:
            if isinstance(rel, str) and not _looked_at(rel, paths):
                unreadable.add(rel)
    if unreadable:
        token["unreadable"] = sorted(unreadable)
    return Capture(
        writer,
        root_hash,
        count,
        size,
        changed_count,
        skipped,
        sorted(unreadable),
        mode,
        source,
        token,
        started,
        ts,
        tree_cache,
    )


def _racy_for_git(store: Store, looked: Any) -> set[str]:
    """Files git may call clean though they changed: git compares change times in whole
    seconds, so a file changed in the second of git's previous look (its index holds that
    second) and again, mtime put back, within the same second looks untouched to git. Of the
    files whose change time, as the stat cache has it, is in or after that second (a few at
    most), those whose change time or size on disk now differs in nanoseconds."""
    if not isinstance(looked, (int, float)):
        return set()
    rows = store.query(
        "SELECT path, size, ino, ctime_ns FROM checkpoint_index WHERE ctime_ns >= ?",
        (int(looked) * 10**9,),
    )
    racy: set[str] = set()
    for text, size, ino, ctime_ns in rows:
        path = loaded_path(str(text))
        try:
            st = os.stat(store.root / path, follow_symlinks=False)
        except OSError:
            racy.add(path)
            continue
        if (st.st_size, st.st_ino, st.st_ctime_ns) != (size, ino, ctime_ns):
            racy.add(path)
    return racy


def _looked_at(rel: str, paths: set[str]) -> bool:
    """Whether `rel`, or a folder above it, is among the paths a capture looked at again."""
    if rel in paths:
        return True
    parts = rel.split("/")
    return any("/".join(parts[:depth]) in paths for depth in range(1, len(parts)))


def commit(
    store: Store,
    capture: Capture,
    *,
    name: str | None,
    description: str | None,
    reason: str,
    settings: config.Settings,
    session_id: str | None,
    fixed_time: bool,
) -> dict[str, Any]:
    checkpoint_id = _new_id()
    if name or description:
        from memory_core.redact import redact  # (only for text someone gave)
    clean_name = redact(name.strip()) if name and name.strip() else None
    writer, ts = capture.writer, capture.ts
    with store.transaction() as db:
        writer.flush(db)
        db.execute(
            "INSERT INTO checkpoints (id, name, description, reason, session_id, created_at, root_tree, "
            "file_count, total_bytes, added_bytes, changed, skipped, journal) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                checkpoint_id,
                clean_name,
                redact(description) if description else description,
                reason,
                session_id,
                ts if fixed_time else capture.started,
                capture.root_tree,
                capture.files,
                capture.size,
                writer.added_bytes,
                capture.changed,
                json.dumps(capture.skipped),
                json.dumps(capture.token),
            ),
        )
        from memory_core import session_turns  # the session and turn it was taken at

        session_turns.record_checkpoint(db, checkpoint_id, session_id)
        events.append(
            store,
            events.Event(
                "checkpoint.created",
                session_id=session_id,
                data={
                    "id": checkpoint_id,
                    "reason": reason,
                    "files": capture.files,
                    "changed": capture.changed,
                },
                ts=ts,
            ),
            db=db,
            plain=True,  # an id made here, a word of REASONS and two counts
        )
    if capture.tree_cache is not None:
        # The listings this one replaced (no longer the workspace's) out, then the next
        # checkpoint's base listings in: a cache the size of the workspace's folders keeps
        # every current one.
        for digest in writer.superseded - writer.decoded.keys():
            capture.tree_cache.pop(digest, None)
        capture.tree_cache.update(writer.decoded)
    if writer.added_bytes > 8 * 1024 * 1024:
        # A large first capture leaves a large write-ahead log; fold it into the database now
        # rather than making the next (small, frequent) checkpoint pay for it.
        with contextlib.suppress(Exception):
            store.query("PRAGMA wal_checkpoint(PASSIVE)")
    removed = enforce_retention(store, settings, now=ts, keep=checkpoint_id)
    result = get(store, checkpoint_id)
    result.update({"mode": capture.mode, "source": capture.source, "removed_by_retention": removed})
    return result


@cyclic_gc.paused()
def create(
    store: Store,
    name: str | None = None,
    *,
    description: str | None = None,
    reason: str = "manual",
    settings: config.Settings | None = None,
    now: float | None = None,
    session_id: str | None = None,
    journal: ChangeJournal | None = None,
    changed: Iterable[str] | None = None,
    hints: Iterable[str] | None = None,
    tree_cache: dict[str, Tree] | None = None,
    git: GitInBackground | None = None,
) -> dict[str, Any]:
    """Capture the workspace's files as a new checkpoint and return it.

    Only the paths that may have changed since the latest checkpoint are looked at, when a
    source can vouch for the whole interval: an explicit `changed` list, the `journal` of a
    running watcher (the language server's), watchman's clock, or git's status; `hints` (the
    editor's file events) are added to them but never trusted alone. Otherwise the whole
    workspace is scanned, reading only files whose stat changed. The result's `source` says
    which one vouched. A long-running caller passes a `tree_cache` (a `TreeCache`) it keeps:
    the listings this checkpoint writes are then the next one's, already read. `git`: a
    `git status` the caller started earlier (a cold CLI process starts it before loading this
    code, which then loads while git runs).
    """
    if reason not in REASONS:
        raise UsageError(
            f"unknown checkpoint reason {reason!r}", hint=f"use one of {', '.join(REASONS)}"
        )
    settings = settings_for(store, settings)
    ts = clock.now() if now is None else now
    capture = capture_workspace(
        store,
        settings,
        ts,
        watcher=journal,
        changed=changed,
        hints=hints,
        tree_cache=tree_cache,
        git=git,
    )
    return commit(
        store,
        capture,
        name=name,
        description=description,
        reason=reason,
        settings=settings,
        session_id=session_id,
        fixed_time=now is not None,
    )


def every_n_turns(
    store: Store,
    turn_seq: int,
    *,
    settings: config.Settings | None = None,
    session_id: str | None = None,
    now: float | None = None,
) -> dict[str, Any] | None:
    """The automatic checkpoint every `checkpoints.every_n_turns` agent turns (None: not due).

    Called by the agent hooks after recording turn number `turn_seq` of a session.
    """
    settings = settings_for(store, settings)
    every = int(settings["checkpoints.every_n_turns"])
    if every <= 0 or turn_seq <= 0 or turn_seq % every:
        return None
    return create(
        store,
        description=f"automatic: turn {turn_seq}",
        reason="turns",
        settings=settings,
        session_id=session_id,
        now=now,
    )
