"""`engram.session.save|restore|list|delete|summary|history|metrics`, autosave and crash prompts.

Restore reopens the files the session touched (`window/showDocument`, when the client supports
it); the summary is written to `exports/sessions/<date>_<id>.md` and opened the same way.
Delete asks with `window/showMessageRequest` unless `confirm: true`. Saving under a name another
session holds asks too (unless `overwrite: true`). Active sessions are saved every
`sessions.autosave_minutes`; at start, a session that stopped without ending (a crash) is
reported with the four resume choices.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from lsprotocol import types
from pygls.uris import from_fs_path

from lsp_server.features.checkpoints import ask, progress, spawn
from lsp_server.features.commands import engram_command
from lsp_server.server import EngramServer, FolderState
from memory_core import quota, sessions, views
from memory_core.errors import NothingYetError, UsageError

logger = logging.getLogger("engram.lsp")

DELETE = "Delete"
OVERWRITE = "Overwrite"
REOPENED_DOCUMENTS = 10
AUTOSAVE_CHECK_SECONDS = 60.0


def _text(args: dict[str, Any], key: str) -> str | None:
    value = args.get(key)
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip():
        raise UsageError(f"`{key}` must be non-empty text")
    return value


def _session_ref(state: FolderState, args: dict[str, Any]) -> str:
    ref = _text(args, "id")
    if ref:
        return ref
    current = sessions.latest(state.store)
    if current is None:
        raise NothingYetError(
            "no session recorded in this workspace yet", hint="agent hooks record them"
        )
    return str(current["id"])


async def _show(ls: EngramServer, path: str, *, focus: bool) -> bool:
    if not ls.client_supports("window", "show_document", "support"):
        return False
    uri = from_fs_path(path)
    if uri is None:
        return False
    try:
        result = await ls.window_show_document_async(
            types.ShowDocumentParams(uri=uri, take_focus=focus)
        )
    except Exception:
        logger.exception("window/showDocument failed for %s", path)
        return False
    return bool(result and result.success)


def list_(ls: EngramServer, args: dict[str, Any]) -> dict[str, Any]:
    state = ls.state_for_command(args)
    found = sessions.list_sessions(state.store)
    return {"sessions": found, "markdown": views.sessions(found)}


async def save(ls: EngramServer, args: dict[str, Any]) -> dict[str, Any]:
    state = ls.state_for_command(args)
    name = _text(args, "name")
    ref = _text(args, "id")
    overwrite = args.get("overwrite") is True
    try:
        saved = await ls.run_blocking(
            sessions.save, state.store, ref, name=name, overwrite=overwrite
        )
    except sessions.NameTakenError as taken:
        question = (
            f"The session name '{taken.name}' belongs to session {taken.holder}. Overwrite it?"
        )
        if not await ask(ls, question, OVERWRITE):
            return {"done": False, "reason": "cancelled"}
        saved = await ls.run_blocking(sessions.save, state.store, ref, name=name, overwrite=True)
    # A saved copy counts against the session's quota: compaction and a warning at 80 / 95 %.
    notice = await ls.run_blocking(quota.after_write, state.store, saved["id"], state.settings)
    if notice is not None:
        ls.show_message(notice["message"], types.MessageType.Warning)
        saved = {**saved, "quota_warning": notice["message"]}
    return saved


async def restore(ls: EngramServer, args: dict[str, Any]) -> dict[str, Any]:
    state = ls.state_for_command(args)
    ref = _text(args, "id")
    async with progress(ls, "engram: restoring the session"):
        from memory_core import conversation  # resume with the workspace changes since

        loaded = await ls.run_blocking(
            conversation.resume, state.store, ref, settings=state.settings
        )
    opened = []
    for rel in loaded["files"][:REOPENED_DOCUMENTS]:
        path = state.root / rel
        if path.is_file() and await _show(ls, str(path), focus=False):
            opened.append(rel)
    found_turns = loaded.get("turns")
    turns: list[dict[str, Any]] = found_turns if isinstance(found_turns, list) else []
    return {
        **loaded,
        "opened": opened,
        "markdown": views.resumed({**loaded, "turns": turns}, opened),
    }


async def delete(ls: EngramServer, args: dict[str, Any]) -> dict[str, Any]:
    state = ls.state_for_command(args)
    ref = _text(args, "id")
    if not ref:
        raise UsageError("engram.session.delete needs `id`: the session's id or name")
    session = await ls.run_blocking(sessions.get, state.store, ref)
    if args.get("confirm") is not True:
        question = (
            f"Delete session {session['label']} ({session['turns']} turns) and its saved copies?"
        )
        if not await ask(ls, question, DELETE):
            return {"done": False, "reason": "cancelled", "id": session["id"]}
    result = await ls.run_blocking(
        sessions.delete, state.store, session["id"], actor="editor", settings=state.settings
    )
    return {"done": True, **result}


async def summary(ls: EngramServer, args: dict[str, Any]) -> dict[str, Any]:
    state = ls.state_for_command(args)
    ref = await ls.run_blocking(_session_ref, state, args)
    path = await ls.run_blocking(sessions.write_export, state.store, ref)
    markdown = await ls.run_blocking(sessions.summary_markdown, state.store, ref)
    # `show: false`: the client renders `markdown` itself (VS Code's preview, Neovim's
    # scratch window) instead of opening the exported file as an editable buffer.
    shown = await _show(ls, str(path), focus=True) if args.get("show", True) else False
    return {
        "id": sessions.get(state.store, ref)["id"],
        "markdown": markdown,
        "path": str(path),
        "shown": shown,
    }


def history(ls: EngramServer, args: dict[str, Any]) -> dict[str, Any]:
    state = ls.state_for_command(args)
    last = args.get("last")
    if last is not None and (not isinstance(last, int) or isinstance(last, bool) or last < 0):
        raise UsageError("`last` must be a whole number of turns")
    ref = _session_ref(state, args)
    sid = sessions.get(state.store, ref)["id"]
    turns = sessions.history(state.store, sid, last=last)
    return {"id": sid, "turns": turns, "markdown": views.history(sid, turns)}


def metrics(ls: EngramServer, args: dict[str, Any]) -> dict[str, Any]:
    state = ls.state_for_command(args)
    found = sessions.metrics(state.store, _session_ref(state, args))
    return {**found, "markdown": views.metrics(found)}


async def started(ls: EngramServer) -> None:
    for state in list(ls.folders.values()):
        try:
            crashed = await ls.run_blocking(sessions.crashed, state.store)
        except Exception:
            logger.exception("crash detection failed in %s", state.root)
            continue
        if crashed:
            spawn(_offer_recovery(ls, state, crashed[0]))
    spawn(_autosave_loop(ls))


def register(server: EngramServer) -> None:
    engram_command(server, "engram.session.list")(list_)
    engram_command(server, "engram.session.save")(save)
    engram_command(server, "engram.session.restore")(restore)
    engram_command(server, "engram.session.delete")(delete)
    engram_command(server, "engram.session.summary")(summary)
    engram_command(server, "engram.session.history")(history)
    engram_command(server, "engram.session.metrics")(metrics)
    server.initialized_listeners.append(started)


async def _offer_recovery(ls: EngramServer, state: FolderState, session: dict[str, Any]) -> None:
    """Ask what to do with a session that stopped without ending: the four resume choices."""
    try:
        answer = await ls.window_show_message_request_async(
            types.ShowMessageRequestParams(
                type=types.MessageType.Warning,
                message=(
                    f"engram: session {session['label']} ({session['agent']}) stopped without ending "
                    f"at {session['last_activity_at']}. What should happen to it?"
                ),
                actions=[
                    types.MessageActionItem(title=c.capitalize()) for c in sessions.RESUME_CHOICES
                ],
            )
        )
        if answer is None:
            return
        choice = answer.title.lower()
        result = await ls.run_blocking(sessions.resolve_crash, state.store, session["id"], choice)
        if choice == "review":
            path = await ls.run_blocking(sessions.write_export, state.store, session["id"])
            await _show(ls, str(path), focus=True)
        elif choice == "restart":
            ls.show_message(f"engram: started session {result['new_session']['id']}")
    except Exception:
        logger.exception("crash recovery prompt failed")


async def _autosave_loop(ls: EngramServer) -> None:
    while True:
        await asyncio.sleep(AUTOSAVE_CHECK_SECONDS)
        for state in list(ls.folders.values()):
            try:
                await ls.run_blocking(
                    sessions.autosave,
                    state.store,
                    interval_minutes=float(state.settings["sessions.autosave_minutes"]),
                    quota_bytes=int(state.settings["sessions.quota_bytes"]),
                )
            except Exception:
                logger.exception("autosave failed in %s", state.root)
            try:
                # Hook events spooled while the store was busy or read-only (memory_core/
                # agents/spool.py): recorded here too, not only by the next hook.
                from memory_core.agents.hooks import fold_spool

                await ls.run_blocking(fold_spool, state.store)
            except Exception:
                logger.exception("folding the hook spool failed in %s", state.root)
