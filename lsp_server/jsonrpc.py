"""engram's JSON-RPC transport: frames read with limits, every request answered, edits coalesced.

pygls' reader (`pygls.io_.run_async`) hands the body of a frame to `json.loads` with the
protocol's `structure_message` as object hook and, when anything fails, logs and drops the
message: a request whose params do not fit the protocol (hover with params `null`, a negative
line) never gets an answer, invalid JSON and non-2.0 messages get none either, and a frame
declaring `Content-Length: 1000000000000` is read with `read(10**12)` (MemoryError, the server
dies). It also hops to a worker thread for every header line and body (about 1 ms a message),
so 1,000 queued `didChange` notifications keep a hover waiting a third of a second.

This module replaces that loop (the server's `start_io` and `start_tcp` call `serve`):

- frames are parsed from a buffer filled 64 KiB at a time; a frame above `MAX_FRAME_BYTES`
  is never allocated: it is answered with an error and skipped, and reading resynchronises on
  the next `Content-Length:` header;
- invalid JSON gets ParseError (-32700, id null), a message that is no JSON-RPC 2.0 request
  InvalidRequest (-32600), params that do not fit the method InvalidParams (-32602), as the
  JSON-RPC 2.0 specification says;
- all frames already received are parsed before any is dispatched, and consecutive `didChange`
  notifications for the same document are merged into one (their content changes in order, the
  last version): a burst of typing costs one dispatch, not a thousand.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import attrs
import cattrs
from lsprotocol import types
from lsprotocol.validators import UINTEGER_MAX_VALUE
from pygls.exceptions import JsonRpcException, JsonRpcInternalError, JsonRpcInvalidParams
from pygls.protocol import LanguageServerProtocol
from pygls.protocol.json_rpc import JsonRPCNotification, JsonRPCRequestMessage

logger = logging.getLogger("engram.lsp")

# The largest message engram accepts: a whole file sent with didOpen is the biggest there is,
# and the checkpoint size cap keeps files that size out anyway.
MAX_FRAME_BYTES = 64 * 1024 * 1024
# A header line longer than this is garbage, not a header.
MAX_HEADER_BYTES = 8 * 1024
CHUNK_BYTES = 64 * 1024

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
INVALID_PARAMS = -32602

_HEADER = b"content-length:"
# Where a frame's header block is, inside a body: a header line (`Content-Length: 12` and a line
# break) or the blank line that ends a header block (CR LF CR LF). A JSON string cannot hold a
# raw line break and a header is no JSON token, so the first is never in a valid body; the
# second only in JSON padded with blank lines, which no client sends. Either means a frame was
# cut short and ran on into the next one: the two must never be read as one request.
_HEADER_INSIDE = re.compile(rb"content-length:[ \t]*\d*[ \t]*\r?\n|\r\n\r\n", re.IGNORECASE)
_ID_HINT = re.compile(rb'"id"\s*:\s*(-?\d{1,18}|"(?:[^"\\]|\\.){0,200}")')


@dataclass
class Frame:
    """One frame from the stream: a body, or a problem to answer."""

    body: bytes | None = None
    oversize: int | None = None  # the declared length of a refused frame
    id_hint: int | str | None = None


class FrameParser:
    """Splits a byte stream into `Content-Length` frames, with limits and resynchronisation."""

    def __init__(self, max_frame: int = MAX_FRAME_BYTES) -> None:
        self.buffer = bytearray()
        self.max_frame = max_frame
        self._length: int | None = None  # declared length once the headers are complete
        self._pending_length: int | None = None  # seen in a header line, blank line not yet
        self._skipping = False  # skipping the body of a refused frame

    def feed(self, data: bytes) -> None:
        self.buffer += data

    def frames(self) -> list[Frame]:
        """Every complete frame in the buffer (and refused ones), consuming them."""
        found: list[Frame] = []
        while True:
            frame = self._next()
            if frame is None:
                return found
            found.append(frame)

    def _next(self) -> Frame | None:
        buffer = self.buffer
        while True:
            if self._skipping:
                # Resynchronise: the next header starts the next frame. Nothing of the refused
                # body is kept.
                at = _find_header(buffer)
                if at < 0:
                    keep = len(_HEADER) - 1
                    del buffer[: max(0, len(buffer) - keep)]
                    return None
                del buffer[:at]
                self._skipping = False
                continue
            if self._length is not None:
                if len(buffer) < self._length:
                    return None
                body = bytes(buffer[: self._length])
                self._length = None
                joined = _HEADER_INSIDE.search(body)
                if joined is not None:
                    # Two frames run together: the short one is answered as the invalid JSON
                    # it is, and reading goes on at the header inside it.
                    logger.warning("a message ran into the next message's header; cut there")
                    del buffer[: joined.start() + 1]
                    return Frame(body=body[: joined.start()])
                del buffer[: len(body)]
                return Frame(body=body)
            end = buffer.find(b"\n")
            if end < 0:
                if len(buffer) > MAX_HEADER_BYTES:
                    # No line break in 8 KiB: not a header. Drop it, keep looking for one.
                    at = _find_header(buffer)
                    if at > 0:
                        logger.warning("dropped %d bytes before a header", at)
                        del buffer[:at]
                        continue
                    logger.warning("dropped %d bytes that are no JSON-RPC header", len(buffer))
                    del buffer[: len(buffer) - len(_HEADER)]
                return None
            line = bytes(buffer[: end + 1])
            del buffer[: end + 1]
            stripped = line.strip()
            if not stripped:
                if self._pending_length is None:
                    continue  # a stray blank line
                length, self._pending_length = self._pending_length, None
                if length > self.max_frame:
                    logger.warning(
                        "refused a message of %d bytes (the limit is %d)", length, self.max_frame
                    )
                    # Answered at once, with the id if the first bytes of the body show it.
                    refused = Frame(oversize=length)
                    match = _ID_HINT.search(bytes(buffer[:4096]))
                    if match:
                        refused.id_hint = _decode_id(match.group(1))
                    self._skipping = True
                    return refused
                self._length = length
                continue
            at = stripped.lower().find(_HEADER)
            if at < 0:
                continue  # Content-Type, or junk between frames
            if at > 0:
                logger.warning("dropped %d bytes before a header", at)
            value = stripped[at + len(_HEADER) :].strip()
            if value.isdigit():
                # A length of 30 digits is refused like any too large one (and int() of a few
                # thousand digits would itself raise).
                self._pending_length = int(value) if len(value) <= 30 else 10**30
            else:
                logger.warning("ignored a Content-Length header of %r", value[:40])
                self._pending_length = None


def _find_header(buffer: bytearray) -> int:
    return bytes(buffer).lower().find(_HEADER)


def _decode_id(raw: bytes) -> int | str | None:
    try:
        value = json.loads(raw)
    except (ValueError, RecursionError):
        return None
    return value if isinstance(value, int | str) and not isinstance(value, bool) else None


def _valid_id(value: Any) -> bool:
    return isinstance(value, int | str) and not isinstance(value, bool)


class EngramProtocol(LanguageServerProtocol):
    """pygls' protocol, with answers for every request and quiet logs for expected errors."""

    def send_error(self, msg_id: Any, code: int, message: str) -> None:
        """An error response; `msg_id` None when the request's id cannot be known."""
        error = {"code": code, "message": message}
        self._send_data(
            {"jsonrpc": "2.0", "id": msg_id if _valid_id(msg_id) else None, "error": error}
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
                if isinstance(data, dict) and "method" in data and _valid_id(data.get("id")):
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
        if "id" in data and not _valid_id(msg_id):
            self.send_error(None, INVALID_REQUEST, "a request id is a string or an integer")
            return
        params = data.get("params")
        if method == types.CANCEL_REQUEST and not (
            isinstance(params, dict) and _valid_id(params.get("id"))
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
            if _valid_id(answered):
                assert isinstance(answered, int | str)
                self._handle_response(answered, None)
            return
        try:
            fast = _did_change_message(self._converter, data)
            if fast is not None:
                message: Any = fast
            elif is_request or "method" in data:
                method = data["method"]
                fallback = JsonRPCRequestMessage if is_request else JsonRPCNotification
                message = self._converter.structure(data, self.get_message_type(method) or fallback)
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
                if _valid_id(answered):
                    assert isinstance(answered, int | str)
                    self._handle_response(answered, data.get("result"), data.get("error"))
                return
            logger.exception("cannot read a message")
            if is_request:
                self.send_error(data["id"], INVALID_PARAMS, f"cannot read the params: {exc}")
            return
        self.handle_message(message)

    # -- answers ----------------------------------------------------------------------------

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
    "MAX_FRAME_BYTES",
    "EngramProtocol",
    "Frame",
    "FrameParser",
    "JsonRpcInvalidParams",
    "coalesce_did_change",
    "serve",
]
