"""Hook events the store could not take in time, kept until a later hook folds them in.

A hook has a budget (`agents.hook_wait_seconds`, 2 s): when another process holds the store's
write lock longer than that, the hook does not keep the agent waiting; it writes its payload to
the spool and returns. A store that cannot be written at all (read-only) spools the same way,
into the user's cache folder, and says so once on stderr. The next hook that gets the store folds
the spool in, oldest first, within a time limit of its own, before its own event; a running
language server folds it in once a minute too.

Each entry is one file: a JSON header line (agent, event, time) then the payload's bytes (long
strings already cut, as the hook would have stored them). The spool is small on purpose: past
MAX_ENTRIES or MAX_BYTES a new event is refused and logged, never silently dropped.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import time
from pathlib import Path

from memory_core import log
from memory_core.workspace import STORE_DIRNAME

TYPE_CHECKING = False  # typing is for the type checker: every hook imports this module
if TYPE_CHECKING:
    from collections.abc import Callable

MAX_ENTRIES = 200
MAX_BYTES = 32 * 1024 * 1024
# A hook spends at most this long folding earlier events in (the rest waits for the next one).
FOLD_SECONDS = 1.0


def store_spool(root: Path) -> Path:
    return root / STORE_DIRNAME / "spool"


def cache_spool(root: Path) -> Path:
    """Where events go when the store's folder cannot be written: the user's cache."""
    import hashlib  # only here: every hook looks for spooled events, few ever spool one

    key = hashlib.sha256(os.fsencode(root)).hexdigest()[:16]
    return _cache_spools() / key


def _cache_spools() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "engram" / "spool"


def keep(root: Path, agent: str, event: str, data: bytes, now: float, why: str) -> Path | None:
    """Spool one event (in the store's folder, else the cache); the file, or None when full."""
    from memory_core.agents.payload import cut_long_strings

    body = cut_long_strings(data)
    header = json.dumps({"agent": agent, "event": event, "ts": now, "why": why}).encode()
    for folder in (store_spool(root), cache_spool(root)):
        try:
            if _full(folder, len(body)):
                log.write(root, "error", f"hook {agent} {event}: the spool is full; event dropped")
                _say(f"engram: the hook spool of {root} is full: a {event} event was dropped")
                return None
            folder.mkdir(mode=0o700, parents=True, exist_ok=True)
            return _write(folder, header + b"\n" + body, claimed=False)
        except OSError:
            continue
    _say(f"engram: could not record or keep a {event} event for {root} (no writable place)")
    return None


def keep_while_recording(
    root: Path, agent: str, event: str, data: bytes, now: float
) -> Path | None:
    """Keep one event that this process records after it has answered (a resident child,
    memory_core/store.py `later`) until it has: the file is claimed by this process, so no
    fold takes it, unless the process dies before it is done and removes the file (then the
    next fold records it: an acknowledged event is never lost). None when it cannot be kept."""
    from memory_core.agents.payload import cut_long_strings

    header = json.dumps({"agent": agent, "event": event, "ts": now, "why": "answered"}).encode()
    folder = store_spool(root)
    try:
        folder.mkdir(mode=0o700, exist_ok=True)
        return _write(folder, header + b"\n" + cut_long_strings(data), claimed=True)
    except OSError:
        return None


def _write(folder: Path, content: bytes, *, claimed: bool) -> Path:
    name = f"{time.time_ns():020d}-{os.getpid()}-{os.urandom(3).hex()}.event"
    if claimed:
        name = f"{name}.{os.getpid()}.claimed"
    tmp = folder / f".{name}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as handle:
        handle.write(content)
    os.replace(tmp, folder / name)
    return folder / name


def _full(folder: Path, adding: int) -> bool:
    try:
        entries = [entry for entry in os.scandir(folder) if entry.name.endswith(".event")]
    except FileNotFoundError:
        return False
    total = sum(entry.stat().st_size for entry in entries)
    return len(entries) >= MAX_ENTRIES or total + adding > MAX_BYTES


# A claimed event still there this long after (its hook was killed while folding it) is
# pending again; so is one whose claiming process is gone.
STALE_CLAIM_SECONDS = 300.0


def pending(root: Path) -> list[Path]:
    """Spooled events, oldest first, from both places."""
    found: list[Path] = []
    folders = [store_spool(root)]
    if _cache_spools().is_dir():  # the cache is only hashed into when some store spooled there
        folders.append(cache_spool(root))
    for folder in folders:
        with contextlib.suppress(OSError):
            for name in os.listdir(folder):
                if name.endswith(".event"):
                    found.append(folder / name)
                elif name.endswith(".claimed") and _stale(folder / name):
                    event = name.split(".event.", 1)[0] + ".event"
                    with contextlib.suppress(OSError):
                        os.rename(folder / name, folder / event)
                        found.append(folder / event)
    return sorted(found, key=lambda path: path.name)


def _stale(path: Path) -> bool:
    try:
        # (The change time: a rename sets it, the modification time stays the spooling's.)
        if time.time() - path.stat().st_ctime > STALE_CLAIM_SECONDS:
            return True
    except OSError:
        return False
    return not _alive(path.name.rsplit(".", 2)[-2])


def _alive(pid: str) -> bool:
    """Whether the process `pid` (a claimed file's claimer) still runs; True when unknown."""
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return False
    except (OSError, ValueError):
        return True  # another user's process, or a name this spool never wrote
    return True


def fold(root: Path, run: Callable[[str, str, bytes, float], object]) -> int:
    """Run spooled events through `run(agent, event, data, ts)`, oldest first, for at most
    FOLD_SECONDS; each is removed once run (a failing one too, logged: it must not block the
    rest forever). Returns how many were folded in."""
    started = time.monotonic()
    done = 0
    for path in pending(root):
        if time.monotonic() - started > FOLD_SECONDS:
            break
        # Claimed by a rename first: of two hooks folding at once, only one gets each event.
        claimed = path.with_name(f"{path.name}.{os.getpid()}.claimed")
        try:
            os.rename(path, claimed)
        except OSError:
            continue
        try:
            with open(claimed, "rb") as handle:
                header = json.loads(handle.readline())
                data = handle.read()
            os.unlink(claimed)
        except (OSError, ValueError):
            continue
        try:
            run(str(header["agent"]), str(header["event"]), data, float(header["ts"]))
            done += 1
        except Exception as exc:
            log.write(root, "error", f"spooled hook event {path.name} failed: {exc}", exc=exc)
    if done:
        with contextlib.suppress(OSError):
            os.unlink(cache_spool(root) / "reported")
    return done


def report_once(root: Path, message: str) -> None:
    """Say on stderr (and in the log, when it can be written) why events are being spooled, once
    until the store takes events again."""
    marker = cache_spool(root) / "reported"
    if marker.exists():
        return
    with contextlib.suppress(OSError):
        marker.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        marker.write_text(message + "\n")
    log.write(root, "warning", message)
    _say(message)


def _say(message: str) -> None:
    with contextlib.suppress(Exception):
        sys.stderr.write(message + "\n")
        sys.stderr.flush()
