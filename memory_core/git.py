"""What git says about a workspace: HEAD and branch (read from files), status and stash (via git).

Two speeds on purpose. `read_head` reads `.git/HEAD` and the ref it points to directly: it costs
two small file reads, so evolution can check it on every burst of file events to notice a
checkout, a commit or a reset (HEAD or branch moved) and record it as one git event. `status`
runs the `git` command for what only git knows reliably (dirty files, stash count); snapshots
use it. engram never writes inside `.git/` and never takes git's index lock
(`GIT_OPTIONAL_LOCKS=0`), so it cannot get in the way of a git command the user runs.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    import subprocess

GIT_TIMEOUT_SECONDS = 10.0


class Head(NamedTuple):
    """Where HEAD points: a branch (None when detached) and a commit (None before the first).

    (NamedTuple, not a dataclass: a cold checkpoint reads HEAD and would import dataclasses.)"""

    branch: str | None
    commit: str | None


class Status:
    def __init__(
        self,
        is_repo: bool,
        branch: str | None = None,
        head: str | None = None,
        dirty_files: list[str] | None = None,
        stash_count: int = 0,
    ) -> None:
        self.is_repo = is_repo
        self.branch = branch
        self.head = head
        self.dirty_files: list[str] = [] if dirty_files is None else dirty_files
        self.stash_count = stash_count

    def _fields(self) -> tuple[object, ...]:
        return (self.is_repo, self.branch, self.head, self.dirty_files, self.stash_count)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Status) and self._fields() == other._fields()

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return (
            "Status(is_repo={!r}, branch={!r}, head={!r}, dirty_files={!r}, stash_count={!r})"
        ).format(*self._fields())


def git_dir(root: Path) -> Path | None:
    """The repository folder of `root`: `.git/`, or where a `.git` file (worktree) points."""
    dot_git = root / ".git"
    if dot_git.is_dir():
        return dot_git
    if dot_git.is_file():
        try:
            text = dot_git.read_text(encoding="utf-8").strip()
        except OSError:
            return None
        if text.startswith("gitdir:"):
            target = Path(text[len("gitdir:") :].strip())
            return target if target.is_absolute() else (root / target).resolve()
    return None


def _common_dir(gd: Path) -> Path:
    # Linked worktrees keep HEAD in their own folder but refs in the main repository's.
    try:
        relative = (gd / "commondir").read_text(encoding="utf-8").strip()
    except OSError:
        return gd
    common = Path(relative)
    return common if common.is_absolute() else (gd / common).resolve()


def _resolve_ref(gd: Path, ref: str) -> str | None:
    for folder in (gd, _common_dir(gd)):
        try:
            return (folder / ref).read_text(encoding="utf-8").strip() or None
        except OSError:
            pass
    try:
        packed = (_common_dir(gd) / "packed-refs").read_text(encoding="utf-8")
    except OSError:
        return None
    for line in packed.splitlines():
        if line.endswith(" " + ref) and not line.startswith(("#", "^")):
            return line.split(" ", 1)[0]
    return None


def read_head(root: Path) -> Head | None:
    """HEAD of the repository at `root`, read from files; None when `root` is not a repository."""
    gd = git_dir(root)
    if gd is None:
        return None
    try:
        text = (gd / "HEAD").read_text(encoding="utf-8").strip()
    except OSError:
        return None
    if text.startswith("ref:"):
        ref = text[len("ref:") :].strip()
        branch = ref.removeprefix("refs/heads/")
        return Head(branch=branch, commit=_resolve_ref(gd, ref))
    return Head(branch=None, commit=text or None)


def run(root: Path, *args: str) -> subprocess.CompletedProcess[str] | None:
    """Run `git -C root args...`; None when git is missing or hangs."""
    env = {
        **os.environ,
        "GIT_OPTIONAL_LOCKS": "0",
        "LC_ALL": "C",
        "GIT_TERMINAL_PROMPT": "0",
        # Paths engram passes are file names, never patterns (a file may be called `*.py`).
        "GIT_LITERAL_PATHSPECS": "1",
    }
    import subprocess  # (only when git runs: a checkpoint watchman vouches for needs none)

    try:
        return subprocess.run(
            ["git", "-C", str(root), *args],
            capture_output=True,
            text=True,
            env=env,
            timeout=GIT_TIMEOUT_SECONDS,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None


def _parse_porcelain(output: str) -> tuple[str | None, list[str]]:
    """Branch and dirty paths from `git status --porcelain=v1 -z --branch`."""
    branch: str | None = None
    dirty: list[str] = []
    entries = output.split("\0")
    index = 0
    while index < len(entries):
        entry = entries[index]
        index += 1
        if not entry:
            continue
        if entry.startswith("## "):
            info = entry[3:]
            if info.startswith("No commits yet on "):
                branch = info[len("No commits yet on ") :]
            elif info.startswith("HEAD (no branch)"):
                branch = None
            else:
                branch = info.split("...", 1)[0].strip()
            continue
        code, path = entry[:2], entry[3:]
        dirty.append(path)
        if "R" in code or "C" in code:
            index += 1  # a rename or copy is followed by its source path
    return branch, sorted(set(dirty))


def status(root: Path) -> Status:
    """Branch, HEAD, dirty files and stash count; `is_repo=False` outside a repository."""
    if git_dir(root) is None:
        return Status(is_repo=False)
    result = run(root, "status", "--porcelain=v1", "-z", "--branch", "--untracked-files=normal")
    if result is None or result.returncode != 0:
        return Status(is_repo=False)
    branch, dirty = _parse_porcelain(result.stdout)
    # engram's own folder (its .gitignore, team/ not yet committed) is not the user's work.
    dirty = [path for path in dirty if not path.startswith(".engram/")]
    head = read_head(root)
    stash = run(root, "stash", "list")
    stash_count = (
        len([line for line in stash.stdout.splitlines() if line.strip()])
        if stash is not None and stash.returncode == 0
        else 0
    )
    return Status(
        is_repo=True,
        branch=branch,
        head=head.commit if head else None,
        dirty_files=dirty,
        stash_count=stash_count,
    )


def is_ancestor(root: Path, older: str, newer: str) -> bool | None:
    """Whether commit `older` is an ancestor of `newer`; None when git cannot tell."""
    result = run(root, "merge-base", "--is-ancestor", older, newer)
    if result is None or result.returncode not in (0, 1):
        return None
    return result.returncode == 0


def commits_between(root: Path, older: str, newer: str) -> int | None:
    result = run(root, "rev-list", "--count", f"{older}..{newer}")
    if result is None or result.returncode != 0:
        return None
    try:
        return int(result.stdout.strip())
    except ValueError:
        return None


def head_blob_ids(root: Path, paths: Sequence[str]) -> dict[str, str] | None:
    """The blob id HEAD holds for each of `paths` (root-relative) that it has; None if unknown."""
    found: dict[str, str] = {}
    for offset in range(0, len(paths), 200):
        result = run(root, "ls-tree", "-z", "HEAD", "--", *paths[offset : offset + 200])
        if result is None or result.returncode != 0:
            return None
        for entry in result.stdout.split("\0"):
            meta, _, path = entry.partition("\t")
            fields = meta.split()
            if len(fields) == 3 and fields[1] == "blob":
                found[path] = fields[2]
    return found


def blob_id(data: bytes, *, sha256: bool = False) -> str:
    """The id git gives a file with this content (`git hash-object`)."""
    # git names objects by SHA-1 (or SHA-256 in repositories that opted in).
    digest = hashlib.sha256() if sha256 else hashlib.sha1()
    digest.update(b"blob %d\0" % len(data))
    digest.update(data)
    return digest.hexdigest()
