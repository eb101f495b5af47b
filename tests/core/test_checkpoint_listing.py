"""A checkpoint without a cache of listings (the command line, a hook) edits each folder's
stored listing in its bytes (`trees.Listing`) instead of decoding and encoding it again. The
bytes it writes must be exactly those of the folder encoded afresh: listings are named by the
digest of their bytes, and a folder written two ways would be stored twice and look changed
to every comparison."""

from __future__ import annotations

import random
import time
from pathlib import Path

from memory_core import checkpoints, config
from memory_core.checkpoints import build, storage, trees
from memory_core.journal import ChangeJournal
from memory_core.store import Store

# Names that look like the bytes around a row, or like another name's row, or need escaping.
AWKWARD = [
    "a",
    "a b",
    "ab",
    "b",
    ',"f"',
    ",",
    '],["a","',
    '"],["b","f",0,"',
    "x]",
    "[",
    'quote"d',
    "back\\slash",
    "back\\",
    "tab\tand\x01ctl",
    "é😀",
    "line\u2028sep",
    "\x7f",
    "zz",
]


def _entry(rng: random.Random) -> trees.Entry:
    kind = rng.choice("fld")
    files = rng.randrange(0, 50) if kind == "d" else 1
    return trees.Entry(
        kind,
        rng.choice([0, 0o644, 0o755]),
        f"{rng.getrandbits(256):064x}",
        rng.randrange(0, 10**6),
        files,
    )


def test_a_listing_edited_in_its_bytes_is_the_listing_encoded_afresh() -> None:
    rng = random.Random(1729)
    for _ in range(300):
        names = rng.sample(AWKWARD, rng.randrange(1, len(AWKWARD)))
        expected = {name: _entry(rng) for name in names}
        tree = trees.Tree(dict(expected))
        files, size = tree.totals()
        listing = trees.Listing.stored(tree.encode(), files, size, "pkg/")
        for _ in range(rng.randrange(1, 6)):
            name = rng.choice(AWKWARD)
            action = rng.random()
            if action < 0.3:
                assert listing.get(name) == expected.get(name)
            elif action < 0.7:
                entry = _entry(rng)
                listing.set(name, entry)
                expected[name] = entry
            else:
                assert listing.pop(name) == expected.pop(name, None)
        afresh = trees.Tree(expected)
        assert listing.encode() == afresh.encode()
        assert listing.totals() == afresh.totals()
        assert bool(listing) == bool(expected)


def test_rows_only_the_json_module_writes_are_edited_as_entries() -> None:
    """A size past 64 bits is written by the json module, as `Tree.encode` does."""
    tree = trees.Tree(
        {"a": trees.Entry("f", 0, "ab" * 32, 1), "b": trees.Entry("f", 0, "cd" * 32, 2)}
    )
    listing = trees.Listing.stored(tree.encode(), 2, 3, "")
    listing.set("a", trees.Entry("f", 0, "ef" * 32, 2**70))
    tree.entries["a"] = trees.Entry("f", 0, "ef" * 32, 2**70)
    assert listing.encode() == tree.encode() and listing.totals() == tree.totals()


def _write(root: Path, rel: str, text: str) -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def test_checkpoints_edited_in_place_are_what_a_full_scan_writes(store: Store) -> None:
    """Changed, removed and new files, a folder emptied and one made, awkward names: each
    command-line checkpoint (listings edited in their bytes) writes the root listing a full
    scan of the same files writes, digest for digest, and the same totals."""
    root = store.root
    names = [n for n in AWKWARD if "\\" not in n and "\x01" not in n]
    for index, name in enumerate(names):
        _write(root, f"pkg{index % 3}/{name}", f"v0 {index}\n")
        _write(root, f"pkg{index % 3}/sub/{name}.py", f"v0 {index}\n")
    _write(root, "gone/only.txt", "soon gone\n")
    settings = config.Settings(values={**config.load(root).values, "checkpoints.watchman": False})
    journal = ChangeJournal(started_at=time.time() - 3600)
    checkpoints.create(store, settings=settings, journal=journal)

    for round_no in range(4):
        touched = [f"pkg{round_no % 3}/{names[round_no]}", f"pkg1/sub/{names[-round_no]}.py"]
        for rel in touched:
            _write(root, rel, f"round {round_no}\n")
        removed = f"pkg{round_no % 3}/sub/{names[round_no + 5]}.py"  # (some never existed)
        existed = (root / removed).exists()
        (root / removed).unlink(missing_ok=True)
        created = f"new{round_no}/deep/file.py"
        _write(root, created, "new\n")
        touched += [removed, created]
        if round_no == 2:
            (root / "gone" / "only.txt").unlink()
            touched.append("gone/only.txt")
        journal.mark(touched)
        made = checkpoints.create(store, settings=settings, journal=journal)
        assert (made["source"], made["changed"]) == ("watcher", len(touched) - (not existed))
        scanned = build.build_full(store, settings, storage.Writer(store), time.time())
        row = store.query_one("SELECT root_tree FROM checkpoints WHERE id = ?", (made["id"],))
        assert row is not None
        assert (row[0], made["files"], made["bytes"]) == scanned[:3]
