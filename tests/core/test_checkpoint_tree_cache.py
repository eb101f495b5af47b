"""The language server keeps the listings its last checkpoint wrote (`TreeCache`): the next
checkpoint starts from them instead of reading them back. A listing's digest names its content,
so a cached listing is never stale; the checkpoints made through the cache are the same as
those made without it."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from memory_core import checkpoints, config
from memory_core.checkpoints import build, storage, trees
from memory_core.journal import ChangeJournal
from memory_core.store import Store


def _write(root: Path, rel: str, text: str) -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def _count_listing_reads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The digests of the listings checkpoints read from the store (not from a cache)."""
    reads: list[str] = []
    real_load = storage.load_tree

    def counting_load(store_: Store, digest: str, *args: object, **kwargs: object) -> object:
        if digest not in (kwargs.get("cache") or {}):
            reads.append(digest)
        return real_load(store_, digest, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(build, "load_tree", counting_load)
    return reads


def _workspace(
    store: Store, tree_cache: checkpoints.TreeCache | None = None
) -> tuple[Path, config.Settings, ChangeJournal]:
    """30 files in 3 packages of 5 modules (19 folders), checkpointed once through a journal."""
    root = store.root
    for index in range(30):
        _write(root, f"pkg{index % 3}/mod{index % 5}/file{index}.py", f"v0 {index}\n")
    settings = config.Settings(values={**config.load(root).values, "checkpoints.watchman": False})
    journal = ChangeJournal(started_at=time.time() - 3600)
    checkpoints.create(store, settings=settings, journal=journal, tree_cache=tree_cache)
    return root, settings, journal


def test_checkpoints_through_the_cache_equal_a_full_scan_and_read_no_listing_back(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = checkpoints.TreeCache()
    root, settings, journal = _workspace(store, tree_cache=cache)
    reads = _count_listing_reads(monkeypatch)
    for round_no in range(3):
        changed = [f"pkg{round_no}/mod{round_no}/file{round_no * 5}.py", "pkg1/new.py"]
        for rel in changed:
            _write(root, rel, f"round {round_no}\n")
        journal.mark(changed)
        made = checkpoints.create(store, settings=settings, journal=journal, tree_cache=cache)
        assert made["source"] == "watcher" and made["changed"] >= 1
    monkeypatch.undo()
    assert reads == []  # every listing came from what the previous checkpoint wrote
    scanned = checkpoints.create(
        store,
        settings=config.Settings(
            values={**settings.values, "watch.exclude": [*settings["watch.exclude"], "*.none"]}
        ),
    )
    assert scanned["source"] == "scan"
    assert checkpoints.manifest(store, scanned["id"]) == checkpoints.manifest(store, made["id"])


def test_listings_read_ahead_spare_every_later_checkpoint_a_read(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The server reads the latest checkpoint's listings in after its first checkpoint: a later
    one changing a folder no checkpoint of this server wrote reads nothing back."""
    root, settings, journal = _workspace(store)
    cache = checkpoints.TreeCache()
    # root, 3 packages, 15 modules: shallow first, up to the limit
    assert checkpoints.TreeCache(limit=4).warm(store) == 4
    assert cache.warm(store) == 19 and cache.warm(store) == 0
    reads = _count_listing_reads(monkeypatch)
    _write(root, "pkg2/mod4/file29.py", "changed\n")
    journal.mark(["pkg2/mod4/file29.py"])
    made = checkpoints.create(store, settings=settings, journal=journal, tree_cache=cache)
    monkeypatch.undo()
    assert (made["source"], made["changed"], reads) == ("watcher", 1, [])
    assert checkpoints.file_content(store, made["id"], "pkg2/mod4/file29.py") == b"changed\n"


def test_a_cache_the_size_of_the_workspace_serves_every_checkpoint_however_many(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A checkpoint takes out of the cache the listings it replaced (no checkpoint after it
    starts from them): a cache with room for every folder never reads a listing back, round
    after round (one that kept them filled up and evicted current folders a few rounds in)."""
    root, settings, journal = _workspace(store)
    cache = checkpoints.TreeCache(limit=19)  # root, 3 packages, 15 modules
    assert cache.warm(store) == 19
    reads = _count_listing_reads(monkeypatch)
    for round_no in range(12):
        rel = f"pkg{round_no % 3}/mod{round_no % 5}/file{round_no}.py"
        _write(root, rel, f"round {round_no}\n")
        journal.mark([rel])
        made = checkpoints.create(store, settings=settings, journal=journal, tree_cache=cache)
        assert (made["source"], made["changed"]) == ("watcher", 1)
    monkeypatch.undo()
    assert reads == [] and len(cache) == 19


def test_the_cache_drops_the_least_recently_used_listing_first() -> None:
    cache = storage.TreeCache(limit=2)
    cache["a"], cache["b"] = storage.Tree(), storage.Tree()
    assert cache.get("a") is not None  # used: "b" is now the oldest
    cache["c"] = storage.Tree()
    assert list(cache) == ["a", "c"] and cache.get("b") is None


def test_a_listing_is_written_as_the_same_bytes_its_digest_was_first_given() -> None:
    """Listings stored by an earlier engram are named by the digest of `json.dumps` bytes: the
    same folder must encode to the same bytes, or every folder would look changed and be stored
    again."""
    names = ['quote"d', "back\\slash", "tab\tand\x01ctl", "é😀", "line\u2028sep", "\x7f", "a b"]
    tree = trees.Tree(
        {name: trees.Entry("f", 0o100644, "ab" * 32, 10 + i) for i, name in enumerate(names)}
    )

    def dumped(tree: trees.Tree) -> bytes:
        rows = [
            [n, e.kind, e.mode, e.hash, e.size, e.files] for n, e in sorted(tree.entries.items())
        ]
        return json.dumps(rows, separators=(",", ":"), ensure_ascii=False).encode()

    data = tree.encode()
    assert data == dumped(tree)
    assert trees.decode_tree(data, "x/").entries == tree.entries
    # Past 64 bits (no file is that large) the json module writes it, as it always did.
    tree.entries["huge"] = trees.Entry("f", 0o100644, "cd" * 32, 2**70)
    assert tree.encode() == dumped(tree)
