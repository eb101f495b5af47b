"""engram's JSON-RPC transport: frames read with limits, every request answered, edits coalesced.

pygls' reader (`pygls.io_.run_async`) hands the body of a frame to `json.loads` with the
protocol's `structure_message` as object hook and, when anything fails, logs and drops the
message: a request whose params do not fit the protocol (hover with params `null`, a negative
line) never gets an answer, invalid JSON and non-2.0 messages get none either, and a frame
declaring `Content-Length: 1000000000000` is read with `read(10**12)` (MemoryError, the server
dies). It also hops to a worker thread for every header line and body (about 1 ms a message),
so 1,000 queued `didChange` notifications keep a hover waiting a third of a second.

This module replaces that loop (the server's `start_io` and `start_tcp` call `serve`):

- frames are parsed (lsp_server/frames.py) from a buffer filled 64 KiB at a time; a frame
  above `MAX_FRAME_BYTES` is never allocated: it is answered with an error and skipped, and
  reading resynchronises on the next `Content-Length:` header;
- invalid JSON gets ParseError (-32700, id null), a message that is no JSON-RPC 2.0 request
  InvalidRequest (-32600), params that do not fit the method InvalidParams (-32602), as the
  JSON-RPC 2.0 specification says;
- all frames already received are parsed before any is dispatched, and consecutive `didChange`
  notifications for the same document are merged into one (their content changes in order, the
  last version): a burst of typing costs one dispatch, not a thousand.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Awaitable, Callable
from typing import Any

import attrs
import cattrs
from lsprotocol import types
from lsprotocol.validators import UINTEGER_MAX_VALUE
from pygls.exceptions import JsonRpcException, JsonRpcInternalError, JsonRpcInvalidParams
from pygls.protocol import LanguageServerProtocol
from pygls.protocol.json_rpc import JsonRPCNotification, JsonRPCRequestMessage

from lsp_server.frames import (
    CHUNK_BYTES,
    INVALID_PARAMS,
    INVALID_REQUEST,
    MAX_FRAME_BYTES,
    PARSE_ERROR,
    Frame,
    FrameParser,
    valid_id,
)

logger = logging.getLogger("engram.lsp")


class EngramProtocol(LanguageServerProtocol):
    """pygls' protocol, with answers for every request and quiet logs for expected errors."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # Requests the stdio front answered before pygls was loaded: id -> the result sent.
        self._early_answers: dict[int | str, Any] = {}
        # `textDocument/diagnostic` requests the front answered (lsp_server/early.py): id ->
        # the result sent. pygls' answer is not sent; when it differs, the client pulls again.
        self._early_pulls: dict[int | str, Any] = {}

    def send_error(self, msg_id: Any, code: int, message: str) -> None:
        """An error response; `msg_id` None when the request's id cannot be known."""
        error = {"code": code, "message": message}
        self._send_data(
            {"jsonrpc": "2.0", "id": msg_id if valid_id(msg_id) else None, "error": error}
        )

    # -- dispatch ---------------------------------------------------------------------------

    def handle_frames(self, frames: list[Frame]) -> None:
        messages: list[Any] = []
        bodies = [frame.body for frame in frames if frame.body is not None]
        decoded: list[Any] | None = None
        if (
            len(bodies) == len(frames)
            and len(bodies) > 1
            and all(body[:1] == b"{" and body[-1:] == b"}" for body in bodies)
        ):
            # A burst (typing) decodes in one call: 1,000 bodies as one JSON array cost a
            # fraction of 1,000 `json.loads` calls. Any invalid body: one by one below.
            decoded = _loads_burst(b"[" + b",".join(bodies) + b"]")
            if decoded is not None and len(decoded) != len(bodies):
                decoded = None  # "1,2" in one body would pass as two values
        if decoded is not None:
            messages = decoded
        else:
            for frame in frames:
                if frame.oversize is not None:
                    self.send_error(
                        frame.id_hint,
                        INVALID_REQUEST,
                        f"message of {frame.oversize} bytes refused: "
                        f"the limit is {MAX_FRAME_BYTES}",
                    )
                    continue
                try:
                    messages.append(json.loads(frame.body or b""))
                except (ValueError, UnicodeDecodeError, RecursionError) as exc:
                    # RecursionError: nested deeper than the decoder goes (a hostile client).
                    logger.warning("invalid JSON in a message: %s", exc)
                    self.send_error(None, PARSE_ERROR, f"invalid JSON: {exc}")
        for data in coalesce_did_change(messages):
            try:
                self.handle_raw(data)
            except Exception as exc:
                # A bug while dispatching one message must not drop the others read with it;
                # a request still gets its answer.
                logger.exception("cannot handle a message")
                if isinstance(data, dict) and "method" in data and valid_id(data.get("id")):
                    self.send_error(data["id"], JsonRpcInternalError.CODE, f"internal error: {exc}")

    def handle_raw(self, data: Any) -> None:
        """Check one decoded message against JSON-RPC 2.0, structure it, hand it to pygls."""
        if not isinstance(data, dict):
            self.send_error(None, INVALID_REQUEST, "a message must be a JSON object (no batches)")
            return
        msg_id = data.get("id")
        method = data.get("method")
        is_response = "method" not in data and ("result" in data or "error" in data)
        if data.get("jsonrpc") != "2.0":
            logger.warning("a message that is not JSON-RPC 2.0: %.200s", json.dumps(data))
            if not is_response:
                self.send_error(msg_id, INVALID_REQUEST, 'only JSON-RPC "2.0" messages are served')
            return
        if is_response:
            self._structure_and_handle(data)
            return
        if not isinstance(method, str) or not method:
            self.send_error(msg_id, INVALID_REQUEST, "a request needs a method name (a string)")
            return
        if "id" in data and not valid_id(msg_id):
            self.send_error(None, INVALID_REQUEST, "a request id is a string or an integer")
            return
        params = data.get("params")
        if method == types.CANCEL_REQUEST and not (
            isinstance(params, dict) and valid_id(params.get("id"))
        ):
            logger.warning("ignored $/cancelRequest without a valid id")
            return
        if params is not None and not isinstance(params, dict | list):
            if "id" in data:
                self.send_error(msg_id, INVALID_PARAMS, f"{method}: params must be an object")
            else:
                logger.warning("ignored %s: params must be an object", method)
            return
        self._structure_and_handle(data)

    def _structure_and_handle(self, data: dict[str, Any]) -> None:
        is_request = "id" in data and "method" in data
        answered = data.get("id")
        if "method" not in data and "error" not in data and data.get("result") is None:
            # A client's null answer (showDocument answered with null by some clients): the
            # waiting request gets None, which pygls would refuse for a non-optional result
            # type, leaving the command behind it waiting forever.
            if valid_id(answered):
                assert isinstance(answered, int | str)
                self._handle_response(answered, None)
            return
        try:
            fast = _did_change_message(self._converter, data)
            if fast is not None:
                message: Any = fast
            elif is_request or "method" in data:
                method = data["method"]
                known = self.get_message_type(method)
                if known is None and "params" not in data:
                    # JSON-RPC lets params out; pygls' classes for a method it does not know
                    # require the field, which turned "method not found" into "cannot read
                    # the params" (and a notification into a logged traceback).
                    data = {**data, "params": None}
                fallback = JsonRPCRequestMessage if is_request else JsonRPCNotification
                message = self._converter.structure(data, known or fallback)
            else:
                message = self.structure_message(data)
        except (cattrs.ClassValidationError, cattrs.IterableValidationError) as exc:
            where = "; ".join(cattrs.transform_error(exc))
            method = data.get("method")
            if is_request:
                logger.info("invalid params for %s (request %r): %s", method, data["id"], where)
                self.send_error(data["id"], INVALID_PARAMS, f"invalid params for {method}: {where}")
            else:
                logger.warning("ignored %s with invalid params: %s", method, where)
            return
        except Exception as exc:
            if "method" not in data:
                # A client's answer that does not fit the type asked for (showDocument answered
                # with null): the request waiting for it gets it as it came, or it would wait
                # forever, and so would the command behind it.
                logger.warning(
                    "an answer of an unexpected shape to request %r: %s", data.get("id"), exc
                )
                answered = data.get("id")
                if valid_id(answered):
                    assert isinstance(answered, int | str)
                    self._handle_response(answered, data.get("result"), data.get("error"))
                return
            logger.exception("cannot read a message")
            if is_request:
                self.send_error(data["id"], INVALID_PARAMS, f"cannot read the params: {exc}")
            return
        self.handle_message(message)

    # -- answers ----------------------------------------------------------------------------

    def answered_early(self, msg_id: int | str, result: dict[str, Any]) -> None:
        """The stdio front already answered request `msg_id` (`initialize`) with `result`:
        pygls' own answer to it is checked against that, and not sent."""
        self._early_answers[msg_id] = json.loads(json.dumps(result))

    def pull_answered_early(self, msg_id: int | str, result: Any) -> None:
        """The stdio front answered the pull `msg_id` with its gotcha diagnostics."""
        self._early_pulls[msg_id] = json.loads(json.dumps(result))

    def _send_data(self, data: Any) -> None:
        early, pulls = self._early_answers, self._early_pulls
        if early or pulls:
            is_dict = isinstance(data, dict)
            msg_id = data.get("id") if is_dict else getattr(data, "id", None)
            is_answer = ("method" not in data) if is_dict else not hasattr(data, "method")
            if is_answer and valid_id(msg_id) and msg_id in early:
                self._check_early_answer(early.pop(msg_id), data)
                return
            if is_answer and valid_id(msg_id) and msg_id in pulls:
                self._drop_early_pull_answer(pulls.pop(msg_id), data)
                return
        super()._send_data(data)

    def _drop_early_pull_answer(self, sent_early: Any, data: Any) -> None:
        answer = json.loads(json.dumps(data, default=self._serialize_message))
        if answer.get("result") == sent_early:
            return  # the client already has the complete set
        # Other providers' diagnostics (drift), settings the client gave since, an error:
        # the client is asked to pull again (a no-op until `initialized` is handled, which
        # itself asks once documents are open).
        logger.debug("the early pull answer %s is incomplete; asking for a new pull", data)
        server = self._server

        def refresh() -> None:  # the refresh in place when it runs, not the one now
            getattr(server, "refresh_diagnostics", lambda: None)()

        try:
            asyncio.get_running_loop().call_soon(refresh)
        except RuntimeError:
            refresh()

    def _check_early_answer(self, sent_early: Any, data: Any) -> None:
        answer = json.loads(json.dumps(data, default=self._serialize_message))
        if "error" in answer:
            # The front said yes, pygls could not take the request (params only lsprotocol
            # refuses): the client believes the server ready, so it is told.
            message = (answer["error"] or {}).get("message", "")
            logger.error("initialize failed after it was answered: %s", message)
            self._send_data(
                {
                    "jsonrpc": "2.0",
                    "method": types.WINDOW_SHOW_MESSAGE,
                    "params": {
                        "type": types.MessageType.Error.value,
                        "message": f"engram could not initialize: {message}",
                    },
                }
            )
        elif answer.get("result") != sent_early:
            # lsp_server/capabilities.py no longer says what pygls says (a test guards this).
            logger.warning(
                "the early answer to initialize differs from pygls': sent %s, pygls %s",
                json.dumps(sent_early),
                json.dumps(answer.get("result")),
            )

    def _send_handler_result(self, future: Any, *, msg_id: Any) -> None:
        # pygls logs every error response with its traceback. An error the handler raised on
        # purpose (invalid params, a user's mistake turned into an error response) is one line;
        # anything else keeps its traceback (pygls' own path).
        if not future.cancelled():
            exc = future.exception()
            if isinstance(exc, JsonRpcException) and not isinstance(exc, JsonRpcInternalError):
                self._request_futures.pop(msg_id, None)
                logger.info("request %r: %s", msg_id, exc.message)
                self._send_response(msg_id, error=exc.to_response_error())
                return
        super()._send_handler_result(future, msg_id=msg_id)


def coalesce_did_change(messages: list[Any]) -> list[Any]:
    """Merge runs of `didChange` for the same document into one notification.

    Applying the merged change list in order gives the same text as applying each message;
    the version is the last one's. Any other message between two edits ends the run, so a
    hover still sees the text as of the moment it was sent. The messages given are not changed.
    """
    merged: list[Any] = []
    run_uri: Any = None  # the document of the didChange run merged[-1] ends, if it does
    copied = False  # whether merged[-1] is this function's own copy, free to extend
    for data in messages:
        if not _is_did_change(data):
            merged.append(data)
            run_uri = None
            continue
        params = data["params"]
        uri = params["textDocument"].get("uri")
        if run_uri is None or uri != run_uri:
            merged.append(data)
            run_uri, copied = uri, False
            continue
        previous = merged[-1]
        if not copied:
            previous = {**previous, "params": dict(previous["params"])}
            previous["params"]["contentChanges"] = list(previous["params"]["contentChanges"])
            merged[-1], copied = previous, True
        previous["params"]["contentChanges"].extend(params["contentChanges"])
        previous["params"]["textDocument"] = params["textDocument"]
    return merged


def _loads_burst(text: bytes) -> Any:
    """A burst's bodies as one JSON array, or None when it does not parse. orjson first (a
    third faster on a burst of edits); what orjson refuses and Python's json accepts (NaN,
    integers past 64 bits, an escaped lone surrogate) is judged by json, as a lone message is."""
    import orjson

    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        pass
    try:
        return json.loads(text)
    except (ValueError, UnicodeDecodeError, RecursionError):
        return None


# The fields `_did_change_message` fills in, as this lsprotocol defines them; another version's
# classes (a field more or less) are structured by cattrs instead.
_CHANGE_FIELDS = {
    types.Position: ("line", "character"),
    types.Range: ("start", "end"),
    types.TextDocumentContentChangePartial: ("range", "text", "range_length"),
}
_FAST_CHANGES = all(
    tuple(field.name for field in attrs.fields(cls)) == names
    for cls, names in _CHANGE_FIELDS.items()
)
_POSITION_KEYS = frozenset({"line", "character"})
_RANGE_KEYS = frozenset({"start", "end"})
# What every real client sends: Neovim (0.7 and 0.11), eglot and vscode-languageclient all add
# the deprecated `rangeLength` to each edit.
_CHANGE_KEYS = (frozenset({"range", "text"}), frozenset({"range", "rangeLength", "text"}))


def _did_change_message(converter: Any, data: dict[str, Any]) -> Any:
    """A merged `didChange` of plain edits (a range, a text and perhaps a `rangeLength`, every
    number within LSP's unsigned range) structured without cattrs, or None for cattrs to
    structure.

    cattrs builds and validates four objects per edit, a third of what a burst of 1,000 edits
    costs the server; the edits are checked here as its validators would, and any edit of
    another shape (a whole-document change, an unknown key, a type out of place) leaves the
    whole message to cattrs, its errors included. The objects are the same (a test compares).
    """
    if not _FAST_CHANGES or data.get("method") != types.TEXT_DOCUMENT_DID_CHANGE or "id" in data:
        return None
    params = data.get("params")
    if type(params) is not dict or params.keys() != {"textDocument", "contentChanges"}:
        return None
    changes = params["contentChanges"]
    if type(changes) is not list:
        return None
    new, put = object.__new__, object.__setattr__
    position_class, range_class = types.Position, types.Range
    change_class = types.TextDocumentContentChangePartial
    built: list[Any] = []
    for change in changes:
        if type(change) is not dict or change.keys() not in _CHANGE_KEYS:
            return None
        where, text = change["range"], change["text"]
        if type(text) is not str or type(where) is not dict or where.keys() != _RANGE_KEYS:
            return None
        length = change.get("rangeLength")
        if length is not None and (
            type(length) is not int or not 0 <= length <= UINTEGER_MAX_VALUE
        ):
            return None
        ends = []
        for end in (where["start"], where["end"]):
            if type(end) is not dict or end.keys() != _POSITION_KEYS:
                return None
            line, character = end["line"], end["character"]
            if (
                type(line) is not int
                or type(character) is not int
                or not 0 <= line <= UINTEGER_MAX_VALUE
                or not 0 <= character <= UINTEGER_MAX_VALUE
            ):
                return None
            position = new(position_class)
            put(position, "line", line)
            put(position, "character", character)
            ends.append(position)
        span = new(range_class)
        put(span, "start", ends[0])
        put(span, "end", ends[1])
        edit = new(change_class)
        put(edit, "range", span)
        put(edit, "text", text)
        put(edit, "range_length", length)
        built.append(edit)
    document = converter.structure(params["textDocument"], types.VersionedTextDocumentIdentifier)
    return types.DidChangeTextDocumentNotification(
        params=types.DidChangeTextDocumentParams(
            text_document=document, content_changes=tuple(built)
        )
    )


def _is_did_change(data: Any) -> bool:
    if not isinstance(data, dict) or data.get("method") != types.TEXT_DOCUMENT_DID_CHANGE:
        return False
    if data.get("jsonrpc") != "2.0" or "id" in data:
        return False
    params = data.get("params")
    return (
        isinstance(params, dict)
        and isinstance(params.get("textDocument"), dict)
        and isinstance(params.get("contentChanges"), list)
    )


async def serve(
    read_chunk: Callable[[], Awaitable[bytes]],
    protocol: EngramProtocol,
    should_stop: Callable[[], bool],
) -> None:
    """Read frames until end of input (or the server stops), answering as JSON-RPC says."""
    parser = FrameParser()
    while not should_stop():
        chunk = await read_chunk()
        if not chunk:
            break
        parser.feed(chunk)
        frames = parser.frames()
        if not frames:
            continue
        try:
            protocol.handle_frames(frames)
        except Exception:
            # A bug in dispatch must not end the session: log it and read on.
            logger.exception("cannot handle %d message(s)", len(frames))


__all__ = [
    "CHUNK_BYTES",
    "MAX_FRAME_BYTES",
    "EngramProtocol",
    "Frame",
    "FrameParser",
    "JsonRpcInvalidParams",
    "coalesce_did_change",
    "serve",
]
