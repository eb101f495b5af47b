"""`engram.checkpoint.create|list|diff|rollback`, and the change journal that makes capture cheap.

The server's own watcher (memory_core.journal, started by the evolution feature whether or not
the client watches) keeps a `ChangeJournal` per folder: a checkpoint made while that journal
covers the time since the latest checkpoint only looks at the paths that changed. The client's
`workspace/didChangeWatchedFiles` events and saves are added as hints, never trusted alone.

Rollback (DESIGN section 5): the plan is computed and verified first; unless `confirm: true`
the user is asked with `window/showMessageRequest` (the files to be removed are named); an
automatic pre-rollback checkpoint makes it undoable; files open in the editor are changed with
`workspace/applyEdit` (so the editor can undo them) and every other file is written to disk.
Automatic checkpoints are made on a burst of file changes (`checkpoints.burst_files` within
`checkpoints.burst_seconds`).
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
import os
import uuid
from collections.abc import AsyncIterator
from typing import Any

from lsprotocol import types
from pygls.uris import from_fs_path, to_fs_path
from pygls.workspace import TextDocument

from lsp_server.features import evolution as evolution_feature
from lsp_server.features.commands import engram_command
from lsp_server.server import DocumentListener, EngramServer, FolderState
from memory_core import checkpoints, clock, conversation, journal, sessions
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
        token = f"engram-{uuid.uuid4().hex[:8]}"
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
    name = args.get("name")
    description = args.get("description")
    if name is not None and not isinstance(name, str):
        raise UsageError("`name` must be text")
    if description is not None and not isinstance(description, str):
        raise UsageError("`description` must be text")
    extra = _extra(state)
    hints, extra.hints = extra.hints, set()
    try:
        return checkpoints.create(
            state.store,
            name,
            description=description,
            reason=reason,
            settings=state.settings,
            session_id=_active_session(state),
            journal=journal_for(ls, state),
            hints=hints,
        )
    except BaseException:
        extra.hints |= hints
        raise


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


def _full_range(document: TextDocument) -> types.Range:
    lines = document.lines
    if not lines:
        return types.Range(
            start=types.Position(line=0, character=0), end=types.Position(line=0, character=0)
        )
    last = lines[-1]
    if last.endswith("\n"):
        end = types.Position(line=len(lines), character=0)
    else:
        # Positions count UTF-16 code units by default.
        end = types.Position(line=len(lines) - 1, character=len(last.encode("utf-16-le")) // 2)
    return types.Range(start=types.Position(line=0, character=0), end=end)


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


def _editor_edit(
    ls: EngramServer,
    state: FolderState,
    plan: checkpoints.RollbackPlan,
    buffers: dict[str, bytes],
) -> tuple[types.WorkspaceEdit | None, list[str]]:
    """One WorkspaceEdit for every open buffer the rollback changes; and the paths it covers.

    `buffers` holds checkpoint contents for open buffers whose only difference is unsaved text.
    """
    if not ls.client_supports("workspace", "apply_edit"):
        return None, []
    opened = _open_documents(ls, state)
    use_document_changes = ls.client_supports("workspace", "workspace_edit", "document_changes")
    operations = (
        getattr(
            getattr(getattr(ls.client_capabilities, "workspace", None), "workspace_edit", None),
            "resource_operations",
            None,
        )
        or []
    )
    can_delete = use_document_changes and types.ResourceOperationKind.Delete in operations
    document_changes: list[Any] = []
    changes: dict[str, list[types.TextEdit]] = {}
    covered: list[str] = []
    contents = {w.path: w.content for w in plan.writes if w.kind == "file"} | buffers
    for rel, content in contents.items():
        document = opened.get(rel)
        if document is None:
            continue
        try:
            text = content.decode("utf-8")
        except UnicodeDecodeError:
            continue  # not text an editor buffer can hold: written to disk instead
        edit = types.TextEdit(range=_full_range(document), new_text=text)
        if use_document_changes:
            document_changes.append(
                types.TextDocumentEdit(
                    text_document=types.OptionalVersionedTextDocumentIdentifier(
                        uri=document.uri, version=document.version
                    ),
                    edits=[edit],
                )
            )
        else:
            changes[document.uri] = [edit]
        covered.append(rel)
    if can_delete:
        for rel in plan.removes:
            document = opened.get(rel)
            if document is not None:
                document_changes.append(types.DeleteFile(uri=document.uri))
                covered.append(rel)
    if not covered:
        return None, []
    if use_document_changes:
        return types.WorkspaceEdit(document_changes=document_changes), covered
    return types.WorkspaceEdit(changes=changes), covered


async def rollback(ls: EngramServer, args: dict[str, Any]) -> dict[str, Any]:
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
    )
    target = plan.checkpoint
    rewind = args.get("rewind") is True  # also the conversation, back to the checkpoint's turn
    if rewind and target.get("turn_number") is None:
        raise UsageError(
            f"checkpoint {target['id']} was not taken during a session: no conversation to rewind"
        )
    unsaved = _unsaved_differences(ls, state, plan)
    if not plan.writes and not plan.removes and not unsaved:
        unchanged: dict[str, Any] = {
            "done": True,
            "checkpoint": target["id"],
            "restored": [],
            "removed": [],
            "unchanged": plan.unchanged,
        }
        if rewind:
            unchanged["rewound"] = await ls.run_blocking(
                conversation.rewind, state.store, target["id"]
            )
        return unchanged
    if args.get("confirm") is not True:
        removes = ", ".join(plan.removes[:8]) + (" …" if len(plan.removes) > 8 else "")
        message = (
            f"Roll back to checkpoint {target['label']} ({target['id']})? "
            f"{len(plan.writes) + len(unsaved)} file(s) restored"
            + (f"; removed (created after it): {removes}" if plan.removes else "")
            + ". A checkpoint of the current state is made first."
        )
        if not await ask(ls, message, ROLL_BACK):
            return {"done": False, "reason": "cancelled", **plan.as_dict()}
    async with progress(ls, f"engram: rolling back to {target['id']}"):
        undo = await ls.run_blocking(
            checkpoints.prepare_undo,
            state.store,
            plan,
            settings=state.settings,
            session_id=_active_session(state),
        )
        buffers = {
            rel: await ls.run_blocking(checkpoints.read_blob, state.store, digest, path=rel)
            for rel, digest in unsaved
        }
        edit, covered = _editor_edit(ls, state, plan, buffers)
        handled: list[str] = []
        if edit is not None:
            try:
                applied = await ls.workspace_apply_edit_async(
                    types.ApplyWorkspaceEditParams(
                        edit=edit, label=f"engram: roll back to {target['id']}"
                    )
                )
                if applied.applied:
                    handled = covered
            except Exception:
                logger.exception("workspace/applyEdit failed; writing those files to disk")
        result = await ls.run_blocking(
            checkpoints.apply_plan, state.store, plan, skip=handled, undo_checkpoint=undo["id"]
        )
        # Modes of files the editor changed still need setting on disk.
        for write in plan.writes:
            if write.path in handled and write.existed:
                with contextlib.suppress(OSError):
                    os.chmod(state.root / write.path, write.mode)
    result["via_editor"] = sorted(set(result["via_editor"]) | (set(buffers) & set(handled)))
    if rewind:
        result["rewound"] = await ls.run_blocking(conversation.rewind, state.store, target["id"])
    # Files the editor wrote may reach the disk after the watcher's next look: name them.
    _extra(state).hints.update([w.path for w in plan.writes] + list(plan.removes))
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


def register(server: EngramServer) -> None:
    @engram_command(server, "engram.checkpoint.create")
    async def create(ls: EngramServer, args: dict[str, Any]) -> dict[str, Any]:
        state = ls.state_for_command(args)
        async with progress(ls, "engram: creating a checkpoint"):
            return await ls.run_blocking(_create, ls, state, args)

    @engram_command(server, "engram.checkpoint.list")
    def list_(ls: EngramServer, args: dict[str, Any]) -> dict[str, Any]:
        state = ls.state_for_command(args)
        return {"checkpoints": checkpoints.list_checkpoints(state.store)}

    @engram_command(server, "engram.checkpoint.diff")
    def diff(ls: EngramServer, args: dict[str, Any]) -> dict[str, Any]:
        state = ls.state_for_command(args)
        ref = args.get("id")
        if not isinstance(ref, str) or not ref:
            raise UsageError("engram.checkpoint.diff needs `id`")
        against = args.get("against")
        return checkpoints.diff(
            state.store, ref, against if isinstance(against, str) else None, settings=state.settings
        )

    engram_command(server, "engram.checkpoint.rollback")(rollback)

    def changed(ls: EngramServer, state: FolderState, paths: list[str]) -> None:
        _extra(state).hints.update(paths)
        _maybe_burst(ls, state, len(paths))

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

    server.watched_files_listeners.append(watched)

    class SaveListener(DocumentListener):
        def did_save(
            self, server: EngramServer, state: FolderState, document: TextDocument
        ) -> None:
            path = to_fs_path(document.uri)
            if path:
                with contextlib.suppress(UsageError):
                    changed(server, state, [relative_path(state.root, path)])

    server.document_listeners.append(SaveListener())


def _maybe_burst(ls: EngramServer, state: FolderState, count: int) -> None:
    """An automatic checkpoint when many files change within a few seconds (an agent at work)."""
    threshold = int(state.settings["checkpoints.burst_files"])
    if threshold <= 0:
        return
    extra = _extra(state)
    now = clock.now()
    window = float(state.settings["checkpoints.burst_seconds"])
    extra.recent = [t for t in extra.recent if t >= now - window] + [now] * count
    if len(extra.recent) < threshold or extra.burst_running:
        return
    extra.recent.clear()
    extra.burst_running = True

    async def capture() -> None:
        try:
            await ls.run_blocking(
                _create, ls, state, {"description": "automatic: burst of file changes"}, "burst"
            )
        except Exception:
            logger.exception("automatic checkpoint failed in %s", state.root)
        finally:
            extra.burst_running = False

    spawn(capture())


def file_uri(state: FolderState, rel: str) -> str:
    return from_fs_path(str(state.root / rel)) or (state.root / rel).as_uri()
