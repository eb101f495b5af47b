"""Errors a user can act on.

Every front end turns an `EngramError` into one clear line (the CLI on stderr with its exit
code, the language server as an error response); anything else is a bug and is logged with
its traceback.
"""

from __future__ import annotations

# Exit codes of DESIGN.md section 4.
EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2


class EngramError(Exception):
    """An operation failed for a reason the user can understand and fix."""

    exit_code = EXIT_FAILED

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def one_line(self) -> str:
        return f"{self.message} ({self.hint})" if self.hint else self.message


class UsageError(EngramError):
    """Bad usage or bad input: a wrong argument, malformed JSON, a path outside the workspace."""

    exit_code = EXIT_USAGE


class NotFoundError(EngramError):
    """A named thing (gotcha, session, checkpoint, ...) does not exist."""

    exit_code = EXIT_FAILED


class StoreError(EngramError):
    """The store cannot be opened or used (newer schema, corrupt file, no store yet)."""

    exit_code = EXIT_FAILED
