"""Errors a user can act on.

Every front end turns an `EngramError` into one clear line (the CLI on stderr with its exit
code, the language server as an error response); anything else is a bug and is logged with
its traceback.
"""

from __future__ import annotations

# Exit codes of docs/design.md section 4.
EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2


class EngramError(Exception):
    """An operation failed for a reason the user can understand and fix.

    `code` is stable and documented (docs/errors.md); the numbering follows seed 003's
    MEM_E00x codes where engram has the same failure.
    """

    exit_code = EXIT_FAILED
    code = "MEM_E000"

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def one_line(self) -> str:
        return f"{self.message} ({self.hint})" if self.hint else self.message


class UsageError(EngramError):
    """Bad usage or bad input: a wrong argument, malformed JSON, a path outside the workspace."""

    exit_code = EXIT_USAGE
    code = "MEM_E004"


class NotFoundError(EngramError):
    """A named thing (gotcha, session, checkpoint, ...) does not exist."""

    exit_code = EXIT_FAILED
    code = "MEM_E005"


class NothingYetError(NotFoundError):
    """Nothing of the kind exists yet ("no session recorded in this workspace yet"): an empty
    state, not a failure. Editors say it as information, not as an error."""


class StoreError(EngramError):
    """The store cannot be opened or used (newer schema, corrupt file, no store yet)."""

    exit_code = EXIT_FAILED
    code = "MEM_E003"


class QuotaExceededError(EngramError):
    """A session is full: even after compaction its records use its whole quota.

    Raised before a write, so what is stored stays as it was; the write is refused.
    """

    exit_code = EXIT_FAILED
    code = "MEM_E001"
