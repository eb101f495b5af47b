"""Which folder is the workspace root, by the one rule of docs/design.md section 2.

The root for a path is the nearest ancestor holding `.engram/` or `.git`; else the path itself.
A store is created only by `engram init`, or by a front end working inside a git repository
(`is_git_repository`); read-only commands and hooks elsewhere create nothing. `/` and the user's home directory are refused: a store there would collect
every project's memory in one place and put it in the wrong repository.
"""

from __future__ import annotations

import os
from pathlib import Path

from memory_core.errors import UsageError

STORE_DIRNAME = ".engram"


def _is_refused(path: Path) -> bool:
    if path == Path(path.anchor):
        return True
    home = os.environ.get("HOME")
    return home is not None and home != "" and path == Path(home).resolve()


def _marks_project(candidate: Path) -> bool:
    # `.git` may be a folder, or a file in worktrees and submodules. Checked by walking up, not
    # with `git rev-parse`: a subprocess costs ~5 ms, too much for a hook on every tool call.
    return (candidate / STORE_DIRNAME).is_dir() or (candidate / ".git").exists()


def find_root(path: str | os.PathLike[str] | None = None) -> Path:
    """The workspace root for `path` (default: the current folder).

    The nearest folder at or above `path` holding `.engram/` or `.git`, so a repository nested
    below another project's store gets its own; else `path` itself. `/` and the home folder
    are skipped on the way up (a dotfiles repository in home does not make home every
    project's root). Raises UsageError for a path that does not exist and for a root at `/`
    or the home folder.
    """
    start = Path(path if path is not None else os.getcwd()).expanduser()
    try:
        start = start.resolve(strict=True)
    except (FileNotFoundError, NotADirectoryError):
        raise UsageError(
            f"workspace path {str(start)!r} does not exist", hint="pass an existing folder"
        ) from None
    except (OSError, RuntimeError) as exc:
        # RuntimeError: a symbolic link that points back at itself (Python 3.11's pathlib
        # reports the loop so; later versions raise OSError).
        raise UsageError(f"cannot read the workspace path {str(start)!r}: {exc}") from None
    if start.is_file():
        start = start.parent

    root = start
    for candidate in (start, *start.parents):
        if not _is_refused(candidate) and _marks_project(candidate):
            root = candidate
            break
    if _is_refused(root):
        where = "the home folder" if root != Path(root.anchor) else "the filesystem root"
        raise UsageError(
            f"refusing to use {where} ({root}) as a workspace",
            hint="run engram inside a project folder or pass --workspace PATH",
        )
    return root


def has_store(root: Path) -> bool:
    return (root / STORE_DIRNAME).is_dir()


def is_git_repository(root: Path) -> bool:
    """Whether `root` is a git repository's top level: where a front end may create a store."""
    return (root / ".git").exists()


def store_dir(root: Path) -> Path:
    return root / STORE_DIRNAME


def relative_path(root: Path, path: str | os.PathLike[str]) -> str:
    """`path` as a POSIX path relative to `root`; refuses a path outside the workspace."""
    # Strings, not Path objects: an ingest asks this for every file every tool call names.
    root_text = os.fspath(root)
    resolved = os.path.normpath(os.path.join(root_text, os.fspath(path)))
    if resolved == root_text:
        return "."
    prefix = root_text if root_text.endswith("/") else root_text + "/"
    if not resolved.startswith(prefix):
        raise UsageError(
            f"{str(path)!r} is outside the workspace {root}",
            hint="engram only records files inside the workspace",
        )
    return resolved[len(prefix) :]
