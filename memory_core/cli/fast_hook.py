"""`engram hook AGENT EVENT` recognised on the raw command line, and run without the CLI.

The `engram` script (memory_core.cli.entry) asks here before anything else is imported, and so
does memory_core.cli.main for scripts an older engram installed: a hook is a cold process on
every agent event, and the full command line (argparse, JSON errors, every area's commands)
cost it about as much as Python's own start.

A cold hook answers first, as the resident server's child does (docs/resident.md): the work is
done by a forked copy of this process, which tells this one the exit code as soon as the
agent's answer is known (for an event that tells the agent nothing: once the payload is read
and kept) and goes on recording, and closing the store, after this process has exited.
"""

from __future__ import annotations

import os

TYPE_CHECKING = False  # typing itself costs a hook a third of Python's start
if TYPE_CHECKING:
    from collections.abc import Sequence

# Set to anything but "" or "0": a cold hook records its event before it exits, in its own
# process (the test suite sets it, so that a test reading the store right after a hook's
# exit needs no wait).
NO_FORK_SWITCH = "ENGRAM_NO_HOOK_FORK"


def hook_words(argv: Sequence[str]) -> tuple[str, str, str | None] | None:
    """(agent, event, workspace) of `[--workspace PATH] hook AGENT EVENT`; None for anything
    else (help, a typo, another command: the full command line handles those)."""
    args = list(argv)
    workspace = None
    if len(args) >= 2 and args[0] == "--workspace":
        workspace, args = args[1], args[2:]
    elif args and args[0].startswith("--workspace="):
        workspace, args = args[0].split("=", 1)[1], args[1:]
    if len(args) != 3 or args[0] != "hook" or args[1].startswith("-") or args[2].startswith("-"):
        return None
    return args[1], args[2], workspace


def hook_fast_path(argv: Sequence[str], *, cold: bool = False) -> int | None:
    """Run `[--workspace PATH] hook AGENT EVENT`; None when `argv` is any other command.
    `cold`: this is the agent's own process (the `engram` script, no resident server), which
    may hand the work to a fork of itself and exit as soon as the answer is known."""
    words = hook_words(argv)
    if words is None:
        return None
    agent, event, workspace = words
    if cold and hasattr(os, "fork") and os.environ.get(NO_FORK_SWITCH, "") in ("", "0"):
        code = _answered_by_a_fork(agent, event, workspace)
        if code is not None:
            return code
    from memory_core.agents import hooks

    return hooks.main(agent, event, workspace=workspace)


def _answered_by_a_fork(agent: str, event: str, workspace: str | None) -> int | None:
    """Run the hook in a forked copy of this process that answers first: the exit code it
    sends (0: a hook never fails the agent), once its answer is written and it has let go of
    the agent's stdin, stdout and stderr. None when no fork could be made (the caller runs the
    hook itself)."""
    try:
        answer_read, answer_write = os.pipe()
    except OSError:
        return None
    try:
        pid = os.fork()
    except OSError:
        os.close(answer_read)
        os.close(answer_write)
        return None
    if pid == 0:  # the worker
        os.close(answer_read)
        # Whatever else the agent handed its hook (a pipe it waits on the end of) is the agent's
        # process's to hold, not a worker's that outlives it.
        os.closerange(3, answer_write)
        os.closerange(answer_write + 1, 1 << 16)
        try:
            _work_then_record(agent, event, workspace, answer_write)
        finally:
            os._exit(0)  # never back into the caller's code: this copy only records
    os.close(answer_write)
    told = b""
    try:
        while chunk := os.read(answer_read, 16):
            told += chunk
    except (OSError, KeyboardInterrupt):  # interrupted: exit 0, as a hook in process does
        told = b"0"
    finally:
        os.close(answer_read)
    # Nothing told: the worker died before its answer (killed). The event is not run again,
    # as the resident server's client does not run a command again once its child has it.
    return int(told) if told.isdigit() else 0


def _work_then_record(agent: str, event: str, workspace: str | None, answer: int) -> None:
    """The forked worker: the hook as the resident server's child runs it (its store closes,
    and the recording of an event that tells the agent nothing, after the answer). An event
    that never tells anything is kept before engram's modules load (quiet_events)."""
    import sys

    from memory_core.agents import quiet_events

    code = 0
    kept = None
    try:
        data = quiet_events.read_stdin()
        kept = quiet_events.keep(agent, event, workspace, data)
        if kept is None:
            from memory_core import store

            store.defer_closing()
            from memory_core.agents import hooks

            code = hooks.main(agent, event, workspace=workspace, data=data)
            sys.stdout.flush()
            sys.stderr.flush()
    except BaseException:  # a hook never fails the agent (hooks.main logs its own errors)
        code = 0
    _answer(answer, code)
    try:
        from memory_core import store

        if kept is not None:
            store.defer_closing()
            from memory_core.agents import hooks

            hooks.record_kept(kept)
    finally:
        from memory_core import store

        store.close_deferred()
    _cache_compiled_patterns()


def _cache_compiled_patterns() -> None:
    """After the answer, once per engram and Python: write the compiled forms of redaction's
    patterns (memory_core/compiled_patterns.py) when no process has written them since
    redaction's patterns last changed. The resident server writes them as it starts; where none
    runs (turned off, refused), the cold hooks that follow would otherwise compile every
    pattern they use, 5 to 20 ms of a first prompt's answer."""
    from memory_core import compiled_patterns

    rules = os.path.join(os.path.dirname(compiled_patterns.__file__), "redact.py")
    try:
        if os.stat(compiled_patterns.path()).st_mtime >= os.stat(rules).st_mtime:
            return
    except OSError:
        if not os.path.exists(rules):
            return  # (an installation without its source: nothing to compare with)
    from memory_core import redact

    redact.warm_up()


def _answer(answer: int, code: int) -> None:
    """Let go of the agent's stdin, stdout and stderr, then tell the agent's process the exit
    code: what reads the hook's output (the agent) waits for the end of its pipes, which must
    come when the agent's process exits, not when this worker has done its recording. Before
    the answer, the worker also leaves the agent's process group: the agent may end the group
    of a hook that has exited, and the recording it was told is kept must not end with it."""
    try:
        null = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(null, fd)
        os.close(null)
    except OSError:
        _ignored_error()
    try:
        os.setsid()
    except OSError:  # already a group leader: nothing to leave
        _ignored_error()
    try:
        os.write(answer, b"%d" % code)
        os.close(answer)
    except OSError:  # the agent's process is gone: nobody to tell
        _ignored_error()


def _ignored_error() -> None:
    """An error the worker can do nothing about (not contextlib.suppress: its module is a
    cost this path avoids)."""
