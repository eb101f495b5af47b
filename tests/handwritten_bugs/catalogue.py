"""Hand-written bugs for the areas the mutation scores said little about (issue 31).

Each bug is the kind a developer really makes (an off-by-one at a threshold, a dropped
condition, swapped arguments, a missing check on one path, a wrong default), written as a
replacement of one exact piece of source. `scripts/handwritten_bugs.py` applies them one at a
time, runs the area's tests and reports which bugs the tests caught. They were written before
the tests that now catch them, from the code alone.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Bug:
    name: str
    file: str
    old: str
    new: str
    why: str
    # Set when the bug, looked at again, changes nothing a user could see: why not.
    equivalent: str = ""


@dataclass(frozen=True)
class Area:
    name: str
    # The tests a developer of the area ran before issue 31 ...
    existing: tuple[str, ...]
    # ... and the ones written for it.
    added: tuple[str, ...]
    bugs: tuple[Bug, ...]


EVOLUTION = "memory_core/evolution.py"
CONTEXT = "memory_core/agents/context.py"
DIGEST = "memory_core/agents/digest.py"
MCP = "memory_core/mcp_server.py"
QUOTA = "memory_core/quota.py"
QUOTA_HOOK = "memory_core/agents/quota_hook.py"
LIFECYCLE = "memory_core/lifecycle.py"
DRIFT = "memory_core/drift.py"
INSTALL = "memory_core/agents/install.py"
VERIFY = "memory_core/verify.py"
GOTCHA_CONTEXT = "memory_core/gotchas/context.py"
# The ranking's index (issue 32): the literal related-file globs a task file names.
RANK_INDEX = "memory_core/gotchas/rank_index.py"

AREAS: tuple[Area, ...] = (
    Area(
        "evolution",
        ("tests/core/test_evolution.py",),
        ("tests/core/test_evolution_boundaries.py",),
        (
            Bug(
                "adjacent-ranges-kept-apart",
                EVOLUTION,
                "if merged and start <= merged[-1][1] + 1:",
                "if merged and start <= merged[-1][1]:",
                "lines 1-2 and 3-4 reported as two ranges, not 1-4",
            ),
            Bug(
                "pure-deletion-range-inverted",
                EVOLUTION,
                "end = prefix + j2 if j2 > j1 else start",
                "end = prefix + j2",
                "a deleted line reported as a two-line range around it",
            ),
            Bug(
                "editor-save-taken-by-agent",
                EVOLUTION,
                'and last["actor"] == "external"\n',
                "\n",
                "an agent's hook re-attributes the user's own editor save",
            ),
            Bug(
                "attribution-window-swapped",
                EVOLUTION,
                'and ts - float(last["ts"]) <= ATTRIBUTION_SECONDS',
                'and float(last["ts"]) - ts <= ATTRIBUTION_SECONDS',
                "a hook ten minutes after a watcher still takes the external write",
            ),
            Bug(
                "created-file-counts-final-newline",
                EVOLUTION,
                'count = max(1, after_bytes.count(b"\\n") + (0 if after_bytes.endswith(b"\\n") else 1))',
                'count = max(1, after_bytes.count(b"\\n") + 1)',
                "a new 3-line file recorded as lines 1-4",
            ),
            Bug(
                "suffix-overlaps-prefix",
                EVOLUTION,
                "while suffix < limit - prefix and",
                "while suffix < limit and",
                "a repeated line inserted: prefix and suffix overlap, wrong range",
            ),
        ),
    ),
    Area(
        "session-start",
        ("tests/core/test_agents_context.py", "tests/core/test_agents_digest.py"),
        ("tests/core/test_session_start_boundaries.py",),
        (
            Bug(
                "crash-note-seconds-not-minutes",
                CONTEXT,
                'if now - float(row["last_seen"]) < 30 * 60 and row["ended_at"] is None:',
                'if now - float(row["last_seen"]) < 30 and row["ended_at"] is None:',
                "a session silent for 29 minutes (maybe still running) is told as stopped",
            ),
            Bug(
                "resolved-memory-injected",
                CONTEXT,
                '            or row["status"] == "resolved"\n',
                "",
                "a resolved memory is still injected as knowledge to keep",
            ),
            Bug(
                "user-rules-told-twice",
                CONTEXT,
                '            or "user-rule" in (row["tags"].split() if row["tags"] else [])  # told as rules\n',
                "",
                "a user rule told both as a rule and as a memory",
            ),
            Bug(
                "no-first-pass",
                CONTEXT,
                "for passes in (FIRST_PASS_ITEMS, None):",
                "for passes in (None,):",
                "under a tight budget the first sections take all the room",
            ),
            Bug(
                "failed-edit-counts-as-touched",
                CONTEXT,
                'f"AND ok = 1 AND path IS NOT NULL AND tool IN',
                'f"AND path IS NOT NULL AND tool IN',
                "an Edit that failed lists its file as touched recently",
            ),
            Bug(
                "oldest-failures-kept",
                CONTEXT,
                "for command in still_failing[-3:]",
                "for command in still_failing[:3]",
                "with more than 3 failing commands the oldest are told, not the latest",
            ),
            Bug(
                "oldest-corrections-kept",
                DIGEST,
                '"user_corrections": corrections[-MAX_ITEMS:],',
                '"user_corrections": corrections[:MAX_ITEMS],',
                "more than 20 corrections: the digest keeps the first 20, not the latest",
            ),
            Bug(
                "digest-due-one-tick-late",
                DIGEST,
                "return ts - float(since) >= interval_minutes * 60",
                "return ts - float(since) > interval_minutes * 60",
                "the timer digest is not due at exactly its interval",
            ),
            Bug(
                "single-failure-is-a-pattern",
                DIGEST,
                "GROUP BY tool, COALESCE(command, path, substr(error, 1, 200)) HAVING n >= 2",
                "GROUP BY tool, COALESCE(command, path, substr(error, 1, 200)) HAVING n >= 1",
                "one failure reported as a repeated-failure pattern",
            ),
            Bug(
                "hot-file-threshold-off-by-one",
                DIGEST,
                "GROUP BY path HAVING n >= 3 ORDER BY n DESC",
                "GROUP BY path HAVING n > 3 ORDER BY n DESC",
                "a file edited 3 times is not a hot file",
            ),
        ),
    ),
    Area(
        "mcp",
        (
            "tests/core/test_agents_mcp.py",
            "tests/core/test_mcp_projecthub.py",
            "tests/core/test_mcp_hostile_lines.py",
        ),
        ("tests/core/test_mcp_tools_in_process.py",),
        (
            Bug(
                "open-items-only-is-unsummarised",
                MCP,
                '                    or summary.get("outcomes")\n                    or summary.get("open_items")\n',
                '                    or summary.get("outcomes")\n',
                "a summary with only open items is listed as having none",
            ),
            Bug(
                "limit-before-filter",
                MCP,
                "items = sessions.list_sessions(store(), limit=None)",
                "items = sessions.list_sessions(store(), limit=limit)",
                "has_summary=false with a limit misses older unsummarised sessions",
            ),
            Bug(
                "summary-object-overrides-arguments",
                MCP,
                "                if fields[key] is None:\n                    fields[key] = value\n",
                "                fields[key] = value\n",
                "the summary object wins over the arguments given directly",
            ),
            Bug(
                "open-items-copied-from-outcomes",
                MCP,
                '"openItems": summary["open_items"],',
                '"openItems": summary["outcomes"],',
                "projecthub's openItems show the outcomes",
            ),
            Bug(
                "search-offset-dropped",
                MCP,
                "            include_decayed=include_decayed,\n            offset=offset,\n",
                "            include_decayed=include_decayed,\n",
                "paging through memory_search returns the first page again",
            ),
            Bug(
                "turns-newest-first",
                MCP,
                '"SELECT * FROM agent_turns WHERE session_id = ? ORDER BY started_at LIMIT ?"',
                '"SELECT * FROM agent_turns WHERE session_id = ? ORDER BY started_at DESC LIMIT ?"',
                "the transcript reads backwards",
            ),
            Bug(
                "outcomes-and-open-items-swapped",
                MCP,
                "            outcomes=outcomes or (),\n            open_items=open_items or (),\n",
                "            outcomes=open_items or (),\n            open_items=outcomes or (),\n",
                "session_update_summary files open items as outcomes",
            ),
        ),
    ),
    Area(
        "quota",
        ("tests/core/test_quota.py", "tests/core/test_quota_paths.py"),
        ("tests/core/test_quota_boundaries.py",),
        (
            Bug(
                "gentle-at-80-exclusive",
                QUOTA,
                '"forced" if percent >= FORCED_AT * 100 else "gentle" if percent >= GENTLE_AT * 100 else "ok"',
                '"forced" if percent >= FORCED_AT * 100 else "gentle" if percent > GENTLE_AT * 100 else "ok"',
                "a session at exactly 80 % is not compacted",
            ),
            Bug(
                "incoming-ignored",
                QUOTA,
                "if used + max(0, incoming) < quota:",
                "if used < quota:",
                "a write that would fill the session is not made room for first",
            ),
            Bug(
                "exactly-full-refused",
                QUOTA,
                "        if used > quota:\n",
                "        if used >= quota:\n",
                "a write that takes the session to exactly 100 % is refused",
            ),
            Bug(
                "recently-used-not-protected",
                QUOTA,
                '        or now - row["last_accessed"] < RECENT_SECONDS\n',
                "",
                "a memory used an hour ago is dropped by compaction",
            ),
            Bug(
                "targets-swapped",
                QUOTA,
                "quota * (FORCED_TARGET if forced else GENTLE_AT)",
                "quota * (GENTLE_AT if forced else FORCED_TARGET)",
                "a forced compaction stops at 80 %, a gentle one goes to 70 %",
            ),
            Bug(
                "warned-twice-per-level",
                QUOTA,
                "elif warned >= threshold:",
                "elif warned > threshold:",
                "the agent is warned at every write past 80 %",
            ),
            Bug(
                "changed-quota-setting-not-remeasured",
                QUOTA_HOOK,
                "if quota_now != quota_then or quota_now <= 0:",
                "if quota_now <= 0:",
                "a lowered quota trusts the measurement made against the old one",
                equivalent=(
                    "the measurement kept is in bytes, and the check divides it by today's"
                    " quota: a changed quota gives the same answer as a new measurement, and"
                    " writes from elsewhere go unseen for 30 s whether or not the quota changed"
                ),
            ),
            Bug(
                "quiet-below-the-wrong-percent",
                QUOTA_HOOK,
                "or _recently_below(run, QUIET_BELOW_PERCENT)",
                "or _recently_below(run, NO_REFUSAL_BELOW_PERCENT)",
                "a session measured at 85 % is not warned for 30 s",
            ),
        ),
    ),
    Area(
        "lifecycle",
        ("tests/core/test_lifecycle.py",),
        ("tests/core/test_lifecycle_boundaries.py",),
        (
            Bug(
                "idle-after-a-day-exclusive",
                LIFECYCLE,
                "if days >= IDLE_AFTER_DAYS:",
                "if days > IDLE_AFTER_DAYS:",
                "a session silent exactly 24 h is still active",
            ),
            Bug(
                "after-exclusive-for-memories",
                LIFECYCLE,
                'clauses.append("created_at >= ?")',
                'clauses.append("created_at > ?")',
                "--after DATE misses what was made at that moment",
            ),
            Bug(
                "after-ignored-for-sessions",
                LIFECYCLE,
                "                    or (after is not None and ts < after)\n",
                "",
                "a date-range delete with --after takes older sessions too",
            ),
            Bug(
                "undelete-on-the-deadline",
                LIFECYCLE,
                'if float(record["recover_until"]) <= now:',
                'if float(record["recover_until"]) < now:',
                "an undelete at the exact deadline still restores",
            ),
            Bug(
                "closed-session-shown-active",
                LIFECYCLE,
                'return status if status in ("active", "compacted", "closed") else "active"',
                'return status if status in ("active", "compacted") else "active"',
                "a session closed an hour ago is listed as active",
            ),
            Bug(
                "unarchive-not-an-access",
                LIFECYCLE,
                'ts = max(ts, unarchived_at(row["data"]) or ts)',
                "ts = ts",
                "a session just brought back is archived again at once",
            ),
        ),
    ),
    Area(
        "drift",
        ("tests/core/test_drift.py",),
        ("tests/core/test_drift_boundaries.py",),
        (
            Bug(
                "locate-only-downwards",
                DRIFT,
                "for candidate in {origin - distance, origin + distance}:",
                "for candidate in {origin + distance}:",
                "code moved up is reported as changed, not moved",
            ),
            Bug(
                "locate-stops-at-the-top",
                DRIFT,
                "if origin - distance < 0 and origin + distance > len(lines) - span:",
                "if origin - distance < 0 or origin + distance > len(lines) - span:",
                "a citation near the top whose code moved far down is not found",
            ),
            Bug(
                "overlap-ten-lines-exclusive",
                DRIFT,
                "points = 2 if overlap_lines >= 10 else 1 if overlap_lines >= 3 else 0",
                "points = 2 if overlap_lines > 10 else 1 if overlap_lines >= 3 else 0",
                "an overlap of exactly 10 lines scores as a small one",
            ),
            Bug(
                "moved-range-one-too-long",
                DRIFT,
                "        span = citation.end - citation.start\n",
                "        span = citation.end - citation.start + 1\n",
                "the moved code's range reaches one line too far",
            ),
            Bug(
                "sessions-of-one-agent-merged",
                DRIFT,
                'return f"agent:{row[\'session_id\']}" if row["actor"] == "agent" else str(row["actor"])',
                'return str(row["actor"])',
                "two agent sessions editing the same lines are not an overlap",
            ),
            Bug(
                "short-file-boundary",
                DRIFT,
                "if len(lines) < citation.start:",
                "if len(lines) <= citation.start:",
                "a changed last line reads as 'the file is shorter now'",
            ),
        ),
    ),
    Area(
        "hooks-install",
        ("tests/core/test_agents_install.py",),
        ("tests/core/test_install_over_user_settings.py",),
        (
            Bug(
                "shared-group-dropped",
                INSTALL,
                '        if handlers:\n            kept.append({**group, "hooks": handlers})\n',
                '        if handlers and len(handlers) == len(group["hooks"]):\n            kept.append(group)\n',
                "a user's hook in the same group as engram's is lost",
            ),
            Bug(
                "mode-not-kept",
                INSTALL,
                "mode = path.stat().st_mode & 0o777 if path.exists() else 0o644",
                "mode = 0o644",
                "a settings file of mode 0600 becomes readable by everyone",
            ),
            Bug(
                "absolute-path-not-recognised",
                INSTALL,
                'r"(?:^|[\\s/\\\\\'\\"])(?:engram|memory_core)',
                'r"(?:^|\\s)(?:engram|memory_core)',
                "engram's entry named by its absolute path is added again on reinstall",
            ),
            Bug(
                "always-rewritten",
                INSTALL,
                "changed = json.dumps(data, sort_keys=True) != before",
                "changed = True",
                "installing twice rewrites the file and reports a change",
            ),
            Bug(
                "empty-file-refused",
                INSTALL,
                "    if not text.strip():\n        return {}\n",
                "",
                "an empty settings file is refused as invalid JSON",
            ),
            Bug(
                "user-empty-group-dropped",
                INSTALL,
                '        elif not group["hooks"]:\n            kept.append(group)\n',
                "",
                "a user's own group with no handlers disappears",
            ),
        ),
    ),
    Area(
        "verify",
        ("tests/core/test_verify_before_telling.py",),
        ("tests/core/test_verify_direct.py",),
        (
            Bug(
                "moved-told-as-stale",
                VERIFY,
                'TOLD_AS_IS = ("unchanged", "moved")',
                'TOLD_AS_IS = ("unchanged",)',
                "a decision whose code only moved down the file is marked needs checking",
            ),
            Bug(
                "end-line-ignored",
                VERIFY,
                'end=int(row["end_line"] or row["line"]),',
                'end=int(row["line"]),',
                "a memory citing lines 2-4 is told as current after line 4 changed",
            ),
            Bug(
                "file-citation-checked-from-cwd",
                VERIFY,
                "if not (store.root / path).exists():",
                "if not Path(path).exists():",
                "a memory citing a file without lines is checked against the process's folder",
            ),
            Bug(
                "one-stale-anchor-marks-gotcha",
                VERIFY,
                "current[0] if current else checks[0]",
                "checks[0]",
                "a gotcha with one current anchor is marked because its other anchor changed",
            ),
            Bug(
                "bare-name-never-checked",
                VERIFY,
                'if seen or "/" in path:',
                'if "/" in path:',
                "a correction naming auth.py (a file sessions changed) is told after it is deleted",
            ),
            Bug(
                "result-without-kind-skipped",
                VERIFY,
                'memories = [str(r["id"]) for r in results if r.get("kind", "memory") == "memory"]',
                'memories = [str(r["id"]) for r in results if r.get("kind") == "memory"]',
                "a search result without a kind (a memory) is never checked",
            ),
        ),
    ),
    Area(
        "gotchas.context",
        ("tests/core/test_gotchas_capture.py", "tests/core/test_verify_before_telling.py"),
        ("tests/core/test_gotcha_context_ranking.py",),
        (
            Bug(
                "glob-matches-only-at-root",
                RANK_INDEX,
                "        keys.append(path[start + len(_SEPARATOR) :])\n",
                "",
                "a gotcha on `settings.py` is not found for a task on app/settings.py",
            ),
            Bug(
                "windows-paths-not-normalised",
                GOTCHA_CONTEXT,
                'f.replace("\\\\", "/").lstrip("./")',
                'f.lstrip("./")',
                "a task file given as src\\db.py does not match the gotcha on src/db.py",
            ),
            Bug(
                "task-verbs-count-as-evidence",
                GOTCHA_CONTEXT,
                '_TASK_STOPWORDS = STOPWORDS | {"add", "fix", "make", "use"}',
                "_TASK_STOPWORDS = STOPWORDS",
                "every gotcha whose text says fix is listed for any task saying fix",
            ),
            Bug(
                "severity-tiebreak-inverted",
                GOTCHA_CONTEXT,
                "score += (3 - min(SEVERITY_RANK.get(severity, len(SEVERITIES)), 3)) * 0.5",
                "score += min(SEVERITY_RANK.get(severity, len(SEVERITIES)), 3) * 0.5",
                "a low gotcha outranks a critical one with the same evidence",
            ),
            Bug(
                "no-evidence-kept",
                GOTCHA_CONTEXT,
                "if score <= 0:",
                "if score < 0:",
                "gotchas with nothing to do with the task are listed",
            ),
            Bug(
                "anchored-files-not-listed",
                GOTCHA_CONTEXT,
                "files = gotcha.related_files or sorted({a.path for a in gotcha.anchors})",
                "files = gotcha.related_files",
                "a gotcha anchored on code shows no Files: line",
            ),
        ),
    ),
)
