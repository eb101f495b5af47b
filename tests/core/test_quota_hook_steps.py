"""The quota's steps on the hook path, each on its own (issue 31): how a warning is added to
what the hook already says, the bound a hook may write, the running total of unmeasured hooks,
and a refused hook's digest file."""

from __future__ import annotations

import os
from pathlib import Path

from memory_core.agents import payload as payloads
from memory_core.agents import quota_hook
from memory_core.agents.hooks import HookRun
from memory_core.store import Store
from tests.agents_fixtures import hook_payload

S = "5d1b2c3d-4e5f-4a6b-8c7d-0123456789ab"
NOW = 1_800_000_000.0


def _run(store: Store, event: str, transcript: Path | None = None, **extra: object) -> HookRun:
    text = hook_payload(event, S, store.root, transcript, **extra)
    run = HookRun(payloads.parse("claude-code", event, text), store, NOW)
    run.payload_bytes = 100
    return run


def test_a_warning_joins_what_the_hook_already_tells(store: Store) -> None:
    stop = _run(store, "Stop")
    stop.output = {"systemMessage": "first"}
    assert quota_hook._tell(stop, "second") is True
    assert stop.output == {"systemMessage": "first\nsecond"}
    post = _run(store, "PostToolUse")
    post.output = {"hookSpecificOutput": {"hookEventName": "PostToolUse", "additionalContext": "a"}}
    assert quota_hook._tell(post, "b") is True
    assert post.output["hookSpecificOutput"]["additionalContext"] == "a\n\nb"
    fresh = _run(store, "UserPromptSubmit")
    assert quota_hook._tell(fresh, "only") is True
    assert fresh.output == {
        "hookSpecificOutput": {"hookEventName": "UserPromptSubmit", "additionalContext": "only"}
    }
    compact = _run(store, "PreCompact")
    assert quota_hook._tell(compact, "lost") is False and compact.output is None


def test_the_write_bound_counts_the_unread_part_of_each_transcript(
    store: Store, tmp_path: Path
) -> None:
    transcript = tmp_path / "t.jsonl"
    transcript.write_bytes(b"x" * 1000)
    side = tmp_path / "agent.jsonl"
    side.write_bytes(b"y" * 300)
    with store.transaction() as db:
        db.execute(
            "INSERT INTO agent_ingest_offsets (path, agent, offset, updated_at)"
            " VALUES (?, 'claude-code', ?, ?)",
            (os.path.realpath(transcript), 400, NOW),
        )
    stop = _run(store, "Stop", transcript, agent_transcript_path=str(side))
    assert quota_hook.write_bound(stop) == 2 * (100 + 600 + 300) + quota_hook.HOOK_OVERHEAD_BYTES
    post = _run(store, "PostToolUse", transcript)
    assert quota_hook.write_bound(post) == 2 * 100 + quota_hook.HOOK_OVERHEAD_BYTES
    missing = _run(store, "Stop", tmp_path / "gone.jsonl")
    assert quota_hook.write_bound(missing) == 2 * 100 + quota_hook.HOOK_OVERHEAD_BYTES


def _checked_value(store: Store) -> str | None:
    row = store.query_one(
        "SELECT value FROM store_meta WHERE key = ?", (f"{quota_hook.CHECKED_KEY}{S}",)
    )
    return None if row is None else str(row[0])


def _set_checked(store: Store, value: str) -> None:
    with store.transaction() as db:
        db.execute(
            "INSERT INTO store_meta (key, value) VALUES (?, ?) "
            "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
            (f"{quota_hook.CHECKED_KEY}{S}", value),
        )


def test_unmeasured_hooks_add_their_bounds_to_the_last_measurement(store: Store) -> None:
    run = _run(store, "PostToolUse")
    quota_hook._add_pending(run, 500)
    assert _checked_value(store) is None  # nothing measured yet: nothing to add to
    _set_checked(store, f"{NOW!r} 1000 10000 0")
    quota_hook._add_pending(run, 500)
    quota_hook._add_pending(run, 250)
    assert _checked_value(store) == f"{NOW!r} 1000 10000 750"
    assert quota_hook._checked(run) == (NOW, 1000.0, 10000.0, 750.0)
    _set_checked(store, f"{NOW!r} 1000 10000")  # written before the bounds were added up
    assert quota_hook._checked(run) == (NOW, 1000.0, 10000.0, 0.0)
    quota_hook._add_pending(run, 40)
    assert _checked_value(store) == f"{NOW!r} 1000 10000 40"
    _set_checked(store, "not numbers at all")
    quota_hook._add_pending(run, 40)
    assert _checked_value(store) == "not numbers at all"
    assert quota_hook._checked(run) is None


def test_a_hook_far_below_the_quota_is_not_measured_but_counted(store: Store) -> None:
    (store.root / ".engram" / "config.toml").write_text("[sessions]\nquota_bytes = 1000000\n")
    run = _run(store, "PostToolUse")
    _set_checked(store, f"{NOW - 5!r} 1000 1000000 0")
    assert quota_hook.before(run) is True
    assert run.quota_guarded is False
    bound = quota_hook.write_bound(run)
    assert _checked_value(store) == f"{NOW - 5!r} 1000 1000000 {bound}"
    stale = _run(store, "PostToolUse")
    stale.now = NOW + 60  # the measurement is more than 30 s old: measure and guard
    assert quota_hook.before(stale) is True and stale.quota_guarded is True


def test_a_refused_hooks_new_digest_file_goes_and_the_others_stay(store: Store) -> None:
    run = _run(store, "Stop")
    folder = store.dir / "exports" / "digests"
    folder.mkdir(parents=True)
    old = folder / f"{S}-old.yaml"
    old.write_text("old")
    os.utime(old, ns=(1_000_000_000, 1_000_000_000))
    recorded = folder / f"{S}-recorded.yaml"
    recorded.write_text("kept")
    with store.transaction() as db:
        db.execute(
            "INSERT INTO digests (session_id, ts, trigger, schema_version, path, content)"
            " VALUES (?, ?, 'stop', '1.0', ?, 'kept')",
            (S, NOW, str(recorded.relative_to(store.dir))),
        )
    unrecorded = folder / f"{S}-unrecorded.yaml"
    unrecorded.write_text("rolled back")
    other = folder / "another-session-x.yaml"
    other.write_text("not ours")
    quota_hook._forget_unrecorded_digests(run, 2_000_000_000)
    assert sorted(p.name for p in folder.iterdir()) == sorted([old.name, recorded.name, other.name])
