"""`engram.checkpoint.create|list|diff|rollback`, and the change journal that makes capture cheap.

The server's own watcher (memory_core.journal, started by the evolution feature whether or not
the client watches) keeps a `ChangeJournal` per folder: a checkpoint made while that journal
covers the time since the latest checkpoint only looks at the paths that changed. The client's
`workspace/didChangeWatchedFiles` events and saves are added as hints, never trusted alone.

Rollback (docs/design.md section 5): the plan is computed and verified first; unless `confirm: true`
the user is asked with `window/showMessageRequest` (the files to be restored and removed are
named); an automatic pre-rollback checkpoint makes it undoable; the server writes every file to
disk and names the open documents the client reloads (docs/vscode.md, docs/neovim.md).
Automatic checkpoints are made on a burst of file changes (`checkpoints.burst_files` within
`checkpoints.burst_seconds`).
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
import os
import stat
import threading
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

from lsprotocol import types
from pygls.uris import to_fs_path
from pygls.workspace import TextDocument

from lsp_server.features import evolution as evolution_feature
from lsp_server.features.commands import engram_command
from lsp_server.server import DocumentListener, EngramServer, FolderState
from memory_core import checkpoints, clock, conversation, evolution, journal, sessions, views
from memory_core.errors import UsageError
from memory_core.workspace import relative_path

logger = logging.getLogger("engram.lsp")

ROLL_BACK = "Roll back"
CANCEL = "Cancel"
_EXTRA = "checkpoints"


_BACKGROUND: set[asyncio.Task[None]] = set()


def spawn(coroutine: Any) -> None:
    """Run a coroutine in the background, keeping a reference so it is not collected early."""
    task: asyncio.Task[None] = asyncio.ensure_future(coroutine)
    _BACKGROUND.add(task)
    task.add_done_callback(_BACKGROUND.discard)


class _FolderCheckpoints:
    """Per-folder state: the client's file events (hints) and recent change times for bursts."""

    def __init__(self) -> None:
        self.hints: set[str] = set()
        self.recent: list[float] = []
        self.burst_running = False
        # The listings the last checkpoint wrote: the next one starts from them. After the
        # server's first checkpoint, the rest of its listings are read in on a thread of their
        # own (`warm_listings`), so no later checkpoint reads one back from the store.
        self.trees = checkpoints.TreeCache()
        self.warming: threading.Thread | None = None
        # What a rollback left on disk, by path: (when, stat or None for removed). The client
        # reports these files moments later; those reports are not anyone's work to burst on.
        self.rolled_back: dict[str, tuple[float, tuple[int, int, int] | None]] = {}


def _extra(state: FolderState) -> _FolderCheckpoints:
    extra = state.extras.get(_EXTRA)
    if not isinstance(extra, _FolderCheckpoints):
        extra = _FolderCheckpoints()
        state.extras[_EXTRA] = extra
    return extra


def journal_for(ls: EngramServer, state: FolderState) -> journal.ChangeJournal | None:
    """The server's own watcher's journal (it runs whether or not the client watches files).

    The client's events are never enough on their own: an editor may not watch folders
    created after it started, and a wrong "nothing changed" would lose data in a rollback.
    """
    return evolution_feature.get_feature(ls).journal_for(state)


@contextlib.asynccontextmanager
async def progress(ls: EngramServer, title: str) -> AsyncIterator[None]:
    """Work-done progress around a long command, when the client shows it."""
    token: str | None = None
    if ls.client_supports("window", "work_done_progress"):
        token = f"engram-{os.urandom(4).hex()}"
        try:
            await ls.work_done_progress.create_async(token)
            ls.work_done_progress.begin(
                token, types.WorkDoneProgressBegin(title=title, cancellable=False)
            )
        except Exception:
            logger.exception("work-done progress refused")
            token = None
    try:
        yield
    finally:
        if token is not None:
            ls.work_done_progress.end(token, types.WorkDoneProgressEnd())


async def ask(ls: EngramServer, message: str, yes: str, no: str = CANCEL) -> bool:
    """Ask the user with window/showMessageRequest; anything but `yes` means no."""
    try:
        answer = await ls.window_show_message_request_async(
            types.ShowMessageRequestParams(
                type=types.MessageType.Warning,
                message=message,
                actions=[types.MessageActionItem(title=yes), types.MessageActionItem(title=no)],
            )
        )
    except Exception:
        logger.exception("window/showMessageRequest failed")
        return False
    return answer is not None and answer.title == yes


def _active_session(state: FolderState) -> str | None:
    current = sessions.latest(state.store)
    return str(current["id"]) if current and current["status"] != "closed" else None


def _create(
    ls: EngramServer, state: FolderState, args: dict[str, Any], reason: str = "manual"
) -> dict[str, Any]:
    # (`name` and `description` are text or absent: engram_command checks every command's.)
    name, description = args.get("name"), args.get("description")
    extra = _extra(state)
    hints, extra.hints = extra.hints, set()
    watcher = journal_for(ls, state)
    if watcher is not None and reason == "manual" and not watcher.sync():
        # A checkpoint asked for now holds what is on disk now: the watcher reports a write
        # some 50-100 ms after it, so it is waited for (a cookie through the same watch);
        # one that cannot show it caught up vouches for nothing. (Automatic checkpoints trust
        # the journal as it stands: a write that recent is in the next one.)
        watcher = None
    try:
        made = checkpoints.create(
            state.store,
            name,
            description=description,
            reason=reason,
            settings=state.settings,
            session_id=_active_session(state),
            journal=watcher,
            hints=hints,
            tree_cache=extra.trees,
        )
    except BaseException:
        extra.hints |= hints
        raise
    if extra.warming is None:
        extra.warming = threading.Thread(
            target=warm_listings, args=(state, extra.trees), name="engram-listings", daemon=True
        )
        extra.warming.start()
    return made


def warm_listings(state: FolderState, trees: checkpoints.TreeCache) -> None:
    try:
        trees.warm(state.store)
    except Exception:  # a damaged listing is reported by the checkpoint that needs it
        logger.exception("reading ahead the listings of %s failed", state.root)


def _open_documents(ls: EngramServer, state: FolderState) -> dict[str, TextDocument]:
    """Open documents of this folder by workspace-relative path."""
    found: dict[str, TextDocument] = {}
    for uri, document in ls.workspace.text_documents.items():
        path = to_fs_path(uri)
        if not path:
            continue
        try:
            rel = relative_path(state.root, path)
        except UsageError:
            continue
        found[rel] = document
    return found


def _unsaved_differences(
    ls: EngramServer, state: FolderState, plan: checkpoints.RollbackPlan
) -> list[tuple[str, str]]:
    """Open buffers whose file is unchanged on disk but whose unsaved text differs from the
    checkpoint: (path, hash of the checkpoint's content). The rollback restores them too."""
    written = {w.path for w in plan.writes}
    found = []
    for rel, document in _open_documents(ls, state).items():
        entry = plan.target.get(rel) if plan.target is not None else None
        if entry is None or entry.kind != "f" or rel in written:
            continue
        if hashlib.sha256(document.source.encode("utf-8")).hexdigest() != entry.hash:
            found.append((rel, entry.hash))
    return found


def _modified_buffers(ls: EngramServer, state: FolderState, paths: list[str]) -> list[str]:
    """Which of `paths` are open with text that differs from the file on disk (unsaved)."""
    opened = _open_documents(ls, state)
    modified = []
    for rel in paths:
        document = opened.get(rel)
        if document is None:
            continue
        try:
            with open(state.root / rel, "rb") as handle:
                on_disk = handle.read()
        except OSError:
            on_disk = None
        if on_disk != document.source.encode("utf-8"):
            modified.append(rel)
    return modified


def _file_list(paths: list[str], limit: int = 12) -> str:
    shown = ", ".join(paths[:limit])
    return shown + (f" and {len(paths) - limit} more" if len(paths) > limit else "")


def _files(count: int) -> str:
    return f"{count} file" if count == 1 else f"{count} files"


def confirmation_message(
    target: dict[str, Any],
    restore: list[str],
    remove: list[str],
    unsaved: Sequence[str] = (),
    given_back: Sequence[str] = (),
) -> str:
    """The question asked before a rollback: every file it restores and every file it removes,
    the open buffers whose unsaved text it replaces (kept with the safety checkpoint) and those
    whose unsaved text it gives back (undoing an earlier rollback)."""
    parts = [f"Roll back to checkpoint {target['label']}?"]
    if restore:
        parts.append(f"Restore {_files(len(restore))}: {_file_list(restore)}.")
    if remove:
        parts.append(f"Remove {_files(len(remove))} created after it: {_file_list(remove)}.")
    parts.append("A checkpoint of the files on disk is made first, so this can be undone.")
    if unsaved:
        parts.append(
            f"Unsaved changes in {_file_list(list(unsaved))} are replaced too; they are kept with "
            "that checkpoint, so undoing the rollback brings them back."
        )
    if given_back:
        parts.append(f"The unsaved changes of {_file_list(list(given_back))} come back too.")
    return " ".join(parts)


async def rollback(ls: EngramServer, args: dict[str, Any]) -> dict[str, Any]:
    """Roll back: the server writes the disk; clients reload the open buffers it names.

    One meaning in every client: afterwards every file on disk equals the checkpoint, and
    `reload` lists the open documents (URIs) whose text the client should replace with the
    disk's (VS Code and Neovim do it, keeping the editor's undo history; Emacs reverts through
    auto-revert). `preview: true` only returns the plan (for a client's own confirmation).
    """
    state = ls.state_for_command(args)
    ref = args.get("id")
    if not isinstance(ref, str) or not ref:
        raise UsageError("engram.checkpoint.rollback needs `id`: the checkpoint to roll back to")
    plan = await ls.run_blocking(
        checkpoints.plan_rollback,
        state.store,
        ref,
        settings=state.settings,
        journal=journal_for(ls, state),
        hints=set(_extra(state).hints),
        tree_cache=_extra(state).trees,
    )
    target = plan.checkpoint
    rewind = args.get("rewind") is True  # also the conversation, back to the checkpoint's turn
    if rewind and target.get("turn_number") is None:
        raise UsageError(
            f"checkpoint {target['id']} was not taken during a session: no conversation to rewind"
        )
    unsaved = [rel for rel, _ in _unsaved_differences(ls, state, plan)]
    restore = sorted({w.path for w in plan.writes} | set(unsaved))
    modified = _modified_buffers(ls, state, [*restore, *plan.removes])
    opened = _open_documents(ls, state)
    # Undoing a rollback: the unsaved text that rollback replaced goes back into its buffers.
    kept = await ls.run_blocking(checkpoints.buffers.kept, state.store, target["id"])
    give_back = {rel: text for rel, text in kept.items() if rel in opened}
    if args.get("preview") is True:
        return {
            "done": False,
            "reason": "preview",
            "label": target["label"],
            "message": confirmation_message(
                target, restore, list(plan.removes), modified, sorted(give_back)
            ),
            **plan.as_dict(),
            "restore": restore,
            "unsaved": modified,
            "unsaved_given_back": sorted(give_back),
        }
    if not plan.writes and not plan.removes and not plan.blocked and not unsaved and not give_back:
        unchanged: dict[str, Any] = {
            "done": True,
            "checkpoint": target["id"],
            "restored": [],
            "removed": [],
            "via_editor": [],
            "reload": [],
            "unchanged": plan.unchanged,
        }
        if rewind:
            unchanged["rewound"] = await ls.run_blocking(
                conversation.rewind, state.store, target["id"]
            )
        return unchanged
    if args.get("confirm") is not True:
        message = confirmation_message(
            target, restore, list(plan.removes), modified, sorted(give_back)
        )
        if not await ask(ls, message, ROLL_BACK):
            return {"done": False, "reason": "cancelled", **plan.as_dict(), "restore": restore}
    async with progress(ls, f"engram: rolling back to {target['label']}"):
        undo = await ls.run_blocking(
            checkpoints.prepare_undo,
            state.store,
            plan,
            settings=state.settings,
            session_id=_active_session(state),
        )
        if modified:
            # The safety checkpoint holds the disk; the unsaved text the rollback replaces is
            # kept with it, so undoing the rollback gives it back.
            await ls.run_blocking(
                checkpoints.buffers.keep,
                state.store,
                undo["id"],
                {rel: opened[rel].source for rel in modified if rel in opened},
                max_bytes=int(state.settings["checkpoints.max_file_bytes"]),
            )
        result = await ls.run_blocking(
            checkpoints.apply_plan, state.store, plan, undo_checkpoint=undo["id"], buffers=unsaved
        )
    # The rollback's writes are the rollback's in the file evolution (recorded now, before the
    # watcher or the editors' reloads report the same content, which then adds nothing).
    written = [
        evolution.Change(path=rel, actor="external", data={"rollback": target["id"]})
        for rel in [*result["restored"], *result["removed"]]
    ]
    if written:
        try:
            await ls.run_blocking(evolution.record_batch, state.store, written, check_git=False)
        except Exception:
            logger.exception("recording the rollback's writes in the file evolution failed")
    # Buffers whose only difference was unsaved text: the disk already holds the checkpoint's
    # content; the client reloads them like the others.
    result["restored"] = sorted(set(result["restored"]) | set(unsaved) | set(give_back))
    result["reload"] = [
        opened[rel].uri
        for rel in sorted(set(result["restored"]) | set(result["removed"]))
        if rel in opened and rel not in give_back
    ]
    result["unsaved_given_back"] = await _give_back(ls, opened, give_back)
    result["label"] = target["label"]
    if rewind:
        result["rewound"] = await ls.run_blocking(conversation.rewind, state.store, target["id"])
    # Files the rollback wrote may reach the watcher after its next look: name them.
    _extra(state).hints.update([w.path for w in plan.writes] + list(plan.removes))
    _remember_rollback_writes(state, [*result["restored"], *result["removed"]])
    session_id = _active_session(state)
    if session_id:
        summary = f"to {target['id']}: restored {len(plan.writes)}, removed {len(plan.removes)}; undo with {undo['id']}"
        await ls.run_blocking(
            sessions.record_tool_call,
            state.store,
            session_id,
            tool="rollback",
            ok=result["done"],
            summary=summary,
        )
    return result


async def create(ls: EngramServer, args: dict[str, Any]) -> dict[str, Any]:
    state = ls.state_for_command(args)
    async with progress(ls, "engram: creating a checkpoint"):
        made: dict[str, Any] = await ls.run_blocking(_create, ls, state, args)
        return made


def list_(ls: EngramServer, args: dict[str, Any]) -> dict[str, Any]:
    state = ls.state_for_command(args)
    found = checkpoints.list_checkpoints(state.store)
    return {"checkpoints": found, "markdown": views.checkpoints(found)}


def diff(ls: EngramServer, args: dict[str, Any]) -> dict[str, Any]:
    state = ls.state_for_command(args)
    ref = args.get("id")
    if not isinstance(ref, str) or not ref:
        raise UsageError("engram.checkpoint.diff needs `id`")
    against = args.get("against")
    return checkpoints.diff(
        state.store, ref, against if isinstance(against, str) else None, settings=state.settings
    )


def file_content(ls: EngramServer, args: dict[str, Any]) -> dict[str, Any]:
    """One file's content in a checkpoint (for a diff view): `{id, path}`, the path
    workspace-relative or a file URI. `exists: false` when the checkpoint lacks it."""
    state = ls.state_for_command(args)
    ref, path = args.get("id"), args.get("path")
    if not isinstance(ref, str) or not ref or not isinstance(path, str) or not path:
        raise UsageError("engram.checkpoint.file needs `id` and `path`")
    rel = path
    if "://" in path:
        rel = relative_path(state.root, Path(to_fs_path(path) or path))
    data = checkpoints.file_content(state.store, ref, rel)
    if data is None:
        return {"id": ref, "path": rel, "exists": False, "content": ""}
    return {
        "id": ref,
        "path": rel,
        "exists": True,
        "content": data.decode("utf-8", errors="replace"),
    }


def changed(ls: EngramServer, state: FolderState, paths: list[str]) -> None:
    """Files the client reported changed: hints for the next checkpoint, and maybe a burst."""
    _extra(state).hints.update(paths)
    _maybe_burst(ls, state, len(_work(ls, state, paths)))


def watched(ls: EngramServer, state: FolderState, events: list[types.FileEvent]) -> None:
    paths = []
    for event in events:
        path = to_fs_path(event.uri)
        if not path:
            continue
        with contextlib.suppress(UsageError):
            paths.append(relative_path(state.root, path))
    if paths:
        changed(ls, state, paths)


class SaveListener(DocumentListener):
    def did_save(self, server: EngramServer, state: FolderState, document: TextDocument) -> None:
        path = to_fs_path(document.uri)
        if path:
            with contextlib.suppress(UsageError):
                changed(server, state, [relative_path(state.root, path)])


def register(server: EngramServer) -> None:
    engram_command(server, "engram.checkpoint.create")(create)
    engram_command(server, "engram.checkpoint.list")(list_)
    engram_command(server, "engram.checkpoint.diff")(diff)
    engram_command(server, "engram.checkpoint.rollback")(rollback)
    engram_command(server, "engram.checkpoint.file")(file_content)
    server.watched_files_listeners.append(watched)
    server.document_listeners.append(SaveListener())


async def _give_back(
    ls: EngramServer, opened: dict[str, TextDocument], texts: dict[str, str]
) -> list[str]:
    """Put unsaved text back into open buffers (workspace/applyEdit, one edit replacing the
    whole document): the buffers are as they were before the rollback being undone, unsaved."""
    given: list[str] = []
    for rel, text in sorted(texts.items()):
        document = opened[rel]
        lines = document.lines
        last = lines[-1] if lines else ""
        end = (
            types.Position(line=len(lines), character=0)
            if last.endswith("\n")
            else types.Position(
                line=max(0, len(lines) - 1), character=len(last.encode("utf-16-le")) // 2
            )
        )
        edit = types.WorkspaceEdit(
            changes={
                document.uri: [
                    types.TextEdit(
                        range=types.Range(start=types.Position(line=0, character=0), end=end),
                        new_text=text,
                    )
                ]
            }
        )
        try:
            answer = await ls.workspace_apply_edit_async(
                types.ApplyWorkspaceEditParams(edit=edit, label="engram: unsaved text given back")
            )
        except Exception:
            logger.exception("giving back the unsaved text of %s failed", rel)
            continue
        if answer is not None and answer.applied:
            given.append(rel)
    return given


# How long after a rollback the client's reports of the files it wrote are still its own.
ROLLBACK_ECHO_SECONDS = 60.0


def _disk_stat(path: Path) -> tuple[int, int, int] | None:
    try:
        st = os.lstat(path)
    except OSError:
        return None
    return (st.st_mtime_ns, st.st_size, st.st_ino)


def _remember_rollback_writes(state: FolderState, paths: list[str]) -> None:
    now = clock.now()
    rolled_back = _extra(state).rolled_back
    for rel in list(rolled_back):
        if now - rolled_back[rel][0] > ROLLBACK_ECHO_SECONDS:
            del rolled_back[rel]
    for rel in paths:
        rolled_back[rel] = (now, _disk_stat(state.root / rel))


def _work(ls: EngramServer, state: FolderState, paths: list[str]) -> list[str]:
    """The paths of a file event that are someone's work: not engram's own store, not git's
    folder, not an editor's temporary file or an ignored one, and not a file as a rollback left
    it (reported again by the client moments later)."""
    ignore = evolution_feature.get_feature(ls).ignore_for(state)
    rolled_back = _extra(state).rolled_back
    now = clock.now()
    work = []
    for reported in paths:
        if not evolution.is_recordable(reported) or ignore.ignored(reported):
            continue
        files = [reported]
        if stat.S_ISDIR(_mode(state.root / reported)):
            # A new folder: VS Code reports the folder alone, not the files created in it (a
            # rollback's undo that brings back a removed folder is reported so too).
            files = _files_in(state.root, reported, ignore, BURST_FOLDER_FILES)
        for rel in files:
            left = rolled_back.get(rel)
            if left is not None and now - left[0] <= ROLLBACK_ECHO_SECONDS:
                if _disk_stat(state.root / rel) == left[1]:
                    continue
                del rolled_back[rel]  # changed since: whoever did it, it is work
            work.append(rel)
    return work


# At most this many files of a reported folder are counted toward a burst (enough for any
# threshold; a huge folder is not walked on the event loop).
BURST_FOLDER_FILES = 200


def _mode(path: Path) -> int:
    try:
        return os.lstat(path).st_mode
    except OSError:
        return 0


def _files_in(root: Path, rel: str, ignore: journal.Ignore, limit: int) -> list[str]:
    """Up to `limit` files under folder `rel` that are someone's work (not ignored)."""
    found: list[str] = []
    for folder, dirs, files in os.walk(root / rel):
        base = os.path.relpath(folder, root).replace(os.sep, "/")
        chain = ignore.rules.chain_for(base)
        dirs[:] = [d for d in dirs if not ignore.rules.ignored(f"{base}/{d}", True, chain)]
        for name in files:
            child = f"{base}/{name}"
            if evolution.is_recordable(child) and not ignore.ignored(child):
                found.append(child)
                if len(found) >= limit:
                    return found
    return found


def _maybe_burst(ls: EngramServer, state: FolderState, count: int) -> None:
    """An automatic checkpoint when many files change within a few seconds (an agent at work)."""
    threshold = int(state.settings["checkpoints.burst_files"])
    if threshold <= 0 or count <= 0:
        return
    extra = _extra(state)
    now = clock.now()
    window = float(state.settings["checkpoints.burst_seconds"])
    extra.recent = [t for t in extra.recent if t >= now - window] + [now] * count
    if len(extra.recent) < threshold or extra.burst_running:
        return
    extra.recent.clear()
    extra.burst_running = True
    spawn(_burst_checkpoint(ls, state, extra))


async def _burst_checkpoint(
    ls: EngramServer, state: FolderState, extra: _FolderCheckpoints
) -> None:
    try:
        await ls.run_blocking(
            _create, ls, state, {"description": "automatic: burst of file changes"}, "burst"
        )
    except Exception:
        logger.exception("automatic checkpoint failed in %s", state.root)
    finally:
        extra.burst_running = False
