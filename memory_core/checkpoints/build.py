"""Building a checkpoint's root tree: from a full scan, or from the previous checkpoint's
tree with only the paths a change source named looked at again."""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any

from memory_core import config
from memory_core.checkpoints.disk import Found, classify, read_file, rules_for, scan
from memory_core.checkpoints.storage import (
    Writer,
    load_listing,
    load_tree,
    loaded_path,
    stat_cache,
    stat_cache_of,
)
from memory_core.checkpoints.trees import Entry, Listing, Tree, sha, valid_name
from memory_core.journal import IgnoreRules
from memory_core.store import Store

# A file modified this close to when it was hashed may change again within the same mtime tick;
# such files are not trusted from the stat cache (git's "racy clean" problem).
RACY_SECONDS = 2.0


def hash_file(
    root: Path, rel: str, found: Found, writer: Writer, cache: dict[str, Any], now: float
) -> str | None:
    """The content hash of one file, from the stat cache when its stat is unchanged."""
    cached = cache.get(rel)
    if cached is not None and (cached[0], cached[1], cached[2], cached[3], cached[5]) == (
        found.mtime_ns,
        found.size,
        found.ino,
        found.mode,
        found.ctime_ns,
    ):
        return str(cached[4])
    try:
        data = read_file(root, rel, found.kind)
    except (FileNotFoundError, NotADirectoryError):
        return None  # vanished between the scan and the read
    except OSError as exc:
        writer.unreadable[rel] = exc.strerror or str(exc)
        return None
    digest = writer.blob(data)
    writer.index[rel] = stat_row(found, digest, now)
    return digest


def stat_row(found: Found, digest: str, now: float) -> tuple[int, int, int, int, str, int]:
    """The stat-cache row of a file just hashed. A file modified within the racy window may
    change again without its stat changing: its row stores the modification time negated, which
    no file's stat ever matches (so it is read again), yet the next capture can still tell that
    the stat is the one hashed and, if the content is too, leave the file alone (`unchanged`)."""
    racy = found.mtime_ns / 1e9 >= now - RACY_SECONDS
    mtime = -found.mtime_ns if racy else found.mtime_ns
    return (mtime, found.size, found.ino, found.mode, digest, found.ctime_ns)


def _build_trees(files: dict[str, Entry], writer: Writer) -> tuple[str, int, int]:
    """Trees for a flat path -> entry map; returns (root hash, files, bytes)."""
    dirs: dict[str, Tree] = {"": Tree()}
    for rel, entry in files.items():
        parent, _, name = rel.rpartition("/")
        tree = dirs.get(parent)
        if tree is None:
            # Create the chain of parents down to this one.
            parts = parent.split("/")
            for depth in range(1, len(parts) + 1):
                dirs.setdefault("/".join(parts[:depth]), Tree())
            tree = dirs[parent]
        tree.entries[name] = entry
    # Deepest first, so each directory's hash is known before its parent is encoded.
    for rel in sorted(dirs, key=lambda d: d.count("/") + (1 if d else 0), reverse=True):
        if not rel:
            continue
        tree = dirs[rel]
        count, size = tree.totals()
        parent, _, name = rel.rpartition("/")
        dirs[parent].entries[name] = Entry("d", 0, writer.tree(tree), size, count)
    count, size = dirs[""].totals()
    return writer.tree(dirs[""]), count, size


def build_full(
    store: Store,
    settings: config.Settings,
    writer: Writer,
    now: float,
    rules: IgnoreRules | None = None,
) -> tuple[str, int, int, int, list[str]]:
    rules = rules if rules is not None else rules_for(store, settings)
    found = scan(store.root, rules, int(settings["checkpoints.max_file_bytes"]))
    for folder in found.unreadable:
        writer.unreadable[folder or "."] = "the folder cannot be listed"
    cache = stat_cache(store)
    entries: dict[str, Entry] = {}
    changed = 0
    for rel, item in found.files.items():
        digest = hash_file(store.root, rel, item, writer, cache, now)
        if digest is None:
            continue
        if rel not in cache or cache[rel][4] != digest:
            changed += 1
        entries[rel] = Entry(item.kind, item.mode, digest, item.size)
    root_hash, count, size = _build_trees(entries, writer)
    return root_hash, count, size, changed, found.skipped


def unchanged(root: Path, rel: str, cached: Any, writer: Writer, now: float) -> bool:
    """Whether a file still has the content of its stat-cache row: its stat matches the row, or
    the row is a racy one (see `stat_row`) whose stat still matches and the content, read again,
    has the row's hash (the row is then written with the stat it can now be trusted by)."""
    if cached is None:
        return False
    try:
        st = os.lstat(os.path.join(root, rel))
    except OSError:
        return False
    kind = classify(st)
    if kind not in ("f", "l"):
        return False
    mode = stat.S_IMODE(st.st_mode)
    now_seen = (st.st_mtime_ns, st.st_size, st.st_ino, mode, st.st_ctime_ns)
    if (cached[0], cached[1], cached[2], cached[3], cached[5]) == now_seen:
        return True
    if cached[0] >= 0 or (-cached[0], cached[1], cached[2], cached[3], cached[5]) != now_seen:
        return False
    try:
        data = read_file(root, rel, kind)
    except OSError:
        return False
    if sha(data) != cached[4]:
        return False
    found = Found(kind, mode, st.st_size, st.st_mtime_ns, st.st_ino, st.st_ctime_ns)
    writer.index[rel] = stat_row(found, str(cached[4]), now)
    return True


def _hard_link_twins(store: Store, root: Path, paths: set[str]) -> set[str]:
    """The other names of changed files that have more than one (hard links): a write through
    one name changes them all, but a watcher reports only the name it was made through."""
    inodes: set[int] = set()
    for rel in paths:
        try:
            st = os.lstat(os.path.join(root, rel))
        except OSError:
            continue
        if stat.S_ISREG(st.st_mode) and st.st_nlink > 1:
            inodes.add(st.st_ino)
    if not inodes:
        return set()
    marks = ",".join("?" * len(inodes))
    rows = store.query(f"SELECT path FROM checkpoint_index WHERE ino IN ({marks})", tuple(inodes))
    return {loaded_path(str(row[0])) for row in rows} - paths


def build_incremental(
    store: Store,
    settings: config.Settings,
    writer: Writer,
    base_tree: str,
    base_skipped: list[str],
    changed_paths: set[str],
    now: float,
    tree_cache: dict[str, Tree] | None = None,
    rules: IgnoreRules | None = None,
    listing_data: dict[str, bytes] | None = None,
) -> tuple[str, int, int, int, list[str]]:
    """A new root tree: the base with only `changed_paths` looked at again (`rules`: the
    workspace's ignore rules, when the caller built them already; `listing_data`: listings'
    bytes the caller read and verified already, by digest)."""
    root = store.root
    rules = rules if rules is not None else rules_for(store, settings)
    cap = int(settings["checkpoints.max_file_bytes"])
    trees: dict[str, Listing] = {}
    dirty: set[str] = set()

    def stored(digest: str, where: str, entry: Entry) -> Listing:
        """A base listing: from the cache of a long-running caller (decoded there already),
        or as its stored bytes, edited in place (`Listing`) and never decoded into entries
        when only rows the capture names change."""
        if tree_cache is not None:
            return Listing(load_tree(store, digest, where, validate=False, cache=tree_cache))
        data = listing_data.get(digest) if listing_data is not None else None
        if data is None:
            data = load_listing(store, digest, where)
        return Listing.stored(data, entry.files, entry.size, where)

    # These helpers never call themselves: a closure that does is a reference cycle, which
    # kept every listing read here alive until the cyclic collector found it.
    def tree_at(rel_dir: str, create: bool) -> Listing | None:
        """A folder's listing as this capture has it: the base's, read on first use, or an
        empty one when `create` and the base has no such folder (nor those above it)."""
        known = trees.get(rel_dir)
        if known is not None:
            return known
        if "" not in trees:  # (decoded: its totals are not in an entry)
            trees[""] = Listing(load_tree(store, base_tree, validate=False, cache=tree_cache))
        holder, prefix = trees[""], ""
        for name in rel_dir.split("/") if rel_dir else []:
            parent, prefix = prefix, f"{prefix}/{name}" if prefix else name
            tree = trees.get(prefix)
            if tree is None:
                entry = holder.get(name)
                if entry is not None and entry.kind == "d":
                    tree = stored(entry.hash, prefix + "/", entry)
                elif create:
                    tree = Listing()
                    holder.set(name, Entry("d", 0, "", 0, 0))
                    _mark_dirty(parent)
                else:
                    return None
                trees[prefix] = tree
            holder = tree
        return holder

    def _mark_dirty(rel_dir: str) -> None:
        while True:
            dirty.add(rel_dir)
            if not rel_dir:
                return
            rel_dir = rel_dir.rpartition("/")[0]

    def remove(rel: str) -> bool:
        parent, _, name = rel.rpartition("/")
        tree = tree_at(parent, create=False)
        if tree is not None and tree.pop(name) is not None:
            _mark_dirty(parent)
            return True
        return False

    def put(rel: str, entry: Entry) -> bool:
        """Set one entry; whether that changed anything (a journal may list unchanged paths)."""
        parent, _, name = rel.rpartition("/")
        tree = tree_at(parent, create=True)
        assert tree is not None
        old = tree.get(name)
        if old is None or (old.kind, old.mode, old.hash) != (entry.kind, entry.mode, entry.hash):
            if old is not None and old.kind == "d" and entry.kind != "d":
                _forget_folder(rel)
            tree.set(name, entry)
            _mark_dirty(parent)
            return True
        return False

    def _forget_folder(rel_dir: str) -> None:
        """A folder a file or link replaced: its listings read so far (to find what it held)
        must not be written back over the new entry."""
        inside = rel_dir + "/"
        for known in [d for d in trees if d == rel_dir or d.startswith(inside)]:
            del trees[known]
            dirty.discard(known)

    def files_under(rel_dir: str) -> list[str]:
        """Files the base held below a folder (a file where the folder is: that one)."""
        parent, _, name = rel_dir.rpartition("/")
        holder = tree_at(parent, create=False)
        entry = holder.get(name) if holder is not None else None
        if entry is None:
            return []
        if entry.kind != "d":
            return [rel_dir]
        found: list[str] = []
        folders = [rel_dir]
        while folders:
            folder = folders.pop()
            tree = tree_at(folder, create=False)
            for child, child_entry in list(tree.entries.items()) if tree is not None else []:
                (folders if child_entry.kind == "d" else found).append(f"{folder}/{child}")
        return found

    def replaced_ancestors(rel: str) -> list[str]:
        """Folders on the way to `rel` that the base holds as a file or link: a source that
        reports only files (watchman) names what is inside the new folder, not the file the
        folder replaced."""
        found, holder, prefix = [], tree_at("", create=False), ""
        for part in rel.split("/")[:-1]:
            entry = holder.get(part) if holder is not None else None
            prefix = f"{prefix}/{part}" if prefix else part
            if entry is None:
                break
            if entry.kind != "d":
                found.append(prefix)
                break
            holder = tree_at(prefix, create=False)
        return found

    # A source may name files whose content did not change since they were last hashed (git
    # lists every file modified since HEAD, every time; a journal's slack names the previous
    # checkpoint's files again). A file that still has its stat-cache row's content has the
    # content the capture that wrote the row put in its tree, which every later one carried
    # over: it is left alone, its folder not even read. The same trust a full scan gives the
    # stat cache, with racy rows checked by content.
    cache: dict[str, Any] = stat_cache_of(store, changed_paths)
    changed_paths = {
        rel for rel in changed_paths if not unchanged(root, rel, cache.get(rel), writer, now)
    }
    changed_paths |= _hard_link_twins(store, root, changed_paths)
    for rel in list(changed_paths):
        if "/" in rel and all(valid_name(part) for part in rel.split("/")):
            changed_paths.update(replaced_ancestors(rel))
    skipped = set(base_skipped)
    changed = 0
    for rel in sorted(changed_paths):
        parts = rel.split("/")
        if any(not valid_name(part) for part in parts):
            continue  # .git/..., .engram/...: never captured
        parent = rel.rpartition("/")[0]
        if any(
            rules.ignored("/".join(parts[:i]), True, rules.chain_for("/".join(parts[: i - 1])))
            for i in range(1, len(parts))
        ):
            continue
        try:
            st = os.lstat(os.path.join(root, rel))
        except (FileNotFoundError, NotADirectoryError):
            changed += remove(rel)
            skipped.discard(rel)
            continue
        kind = classify(st)
        if kind is None or rules.ignored(rel, kind == "d", rules.chain_for(parent)):
            remove(rel)
            continue
        if kind == "d":
            # A new or replaced folder (a watcher may not have seen what was created in it
            # before its watch was in place): capture what is in it now, and drop what is gone.
            sub = scan(root, rules, cap, under=rel)
            skipped.update(sub.skipped)
            for folder in sub.unreadable:
                writer.unreadable[folder] = "the folder cannot be listed"
            cache.update(stat_cache(store, under=rel))  # unchanged files are not read
            for sub_rel, item in sub.files.items():
                digest = hash_file(root, sub_rel, item, writer, cache, now)
                if digest is not None:
                    changed += put(sub_rel, Entry(item.kind, item.mode, digest, item.size))
                else:
                    changed += remove(sub_rel)  # its old content is not what is there now
            for old_rel in files_under(rel):
                if old_rel not in sub.files:
                    changed += remove(old_rel)
            continue
        if kind == "f" and st.st_size > cap:
            remove(rel)
            skipped.add(rel)
            continue
        skipped.discard(rel)
        item = Found(
            kind, stat.S_IMODE(st.st_mode), st.st_size, st.st_mtime_ns, st.st_ino, st.st_ctime_ns
        )
        digest = hash_file(root, rel, item, writer, cache, now)
        if digest is None:
            remove(rel)
            continue
        changed += put(rel, Entry(kind, item.mode, digest, item.size))

    if "" not in trees:
        tree_at("", create=False)
    for rel_dir in sorted(dirty, key=lambda d: d.count("/") + (1 if d else 0), reverse=True):
        tree = trees[rel_dir]
        if rel_dir:
            parent, _, name = rel_dir.rpartition("/")
            parent_tree = trees[parent]
            old = parent_tree.get(name)
            if old is not None and old.kind == "d" and old.hash:
                writer.superseded.add(old.hash)
            if not tree:
                parent_tree.pop(name)  # git keeps no empty folders either
                continue
            count, size = tree.totals()
            digest = writer.listing(tree.encode(), tree.decoded())
            parent_tree.set(name, Entry("d", 0, digest, size, count))
    count, size = trees[""].totals()
    writer.superseded.add(base_tree)
    root_hash = writer.listing(trees[""].encode(), trees[""].decoded())
    return root_hash, count, size, changed, sorted(skipped)
