"""Mutation testing of every module of memory_core and lsp_server, one at a time (docs/testing.md).

Each module is mutated by mutmut (3.x) in a scratch copy of the repository and checked against
only its own tests, so a run fits on two cores. Prints, per module, the mutants caught,
survived (including mutants no test even reaches) and equivalent (listed with a reason in
docs/testing.md), and the score: caught / (caught + survived).

Usage: bash scripts/mutation.sh [MODULE ...] [--sample N] [--jobs N] [--list] [--show-survivors]
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
TESTING_DOC = REPO / "docs" / "testing.md"
TARGET_SCORE = 85.0
# The sample is drawn with a fixed seed, so two runs of the same code test the same mutants.
SEED = 17


@dataclass(frozen=True)
class Module:
    # A module file, or a package folder: every .py file under it is mutated and scored.
    source: str
    tests: tuple[str, ...]
    # Mutants run at most (a random sample, fixed seed); None: every mutant.
    sample: int | None = None
    # Tests left out of mutation runs: timed checks of a cold process, which mutmut's
    # instrumented code and a busy machine fail whatever the mutant.
    deselect: tuple[str, ...] = ()
    # More files scored with `source` (small files grouped with their neighbours).
    also: tuple[str, ...] = ()

    def files(self) -> list[str]:
        """The source files mutated, relative to the repository (a package: all of its files,
        so a file added to it later is mutated without a change here)."""
        found: list[str] = []
        for source in (self.source, *self.also):
            path = REPO / source
            if path.is_dir():
                found += sorted(p.relative_to(REPO).as_posix() for p in path.rglob("*.py"))
            else:
                found.append(source)
        return found


# Tests in otherwise in-process files that start engram as another process: the MCP server
# through the SDK's stdio client (which fails under mutmut's instrumented interpreter, aborting
# the whole run) and the SessionStart hook through the CLI (mutmut cannot follow it). Left out
# of every run whose tests include their file.
SUBPROCESS_TESTS = (
    "tests/core/test_verify_before_telling.py::test_mcp_memory_search_says_when_the_cited_code_changed",
    "tests/core/test_verify_before_telling.py::test_the_session_start_hook_tells_a_stale_decision_as_needing_checking",
    "tests/lsp/test_fast_initialize.py::test_the_front_answers_without_importing_pygls_or_lsprotocol",
    "tests/lsp/test_fast_initialize.py::test_requests_sent_while_the_server_loads_are_answered_once_in_order",
    "tests/lsp/test_fast_initialize.py::test_a_server_that_cannot_load_says_so_and_still_answers",
    "tests/cli/test_archived_sessions.py::test_the_mcp_transcript_of_an_archived_session_has_its_turns",
)


def _subprocess_tests_in(tests: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(t for t in SUBPROCESS_TESTS if t.split("::", 1)[0] in tests)


# Reads the editor grammar in syntax/, which the scratch copy does not hold (it copies the
# packages and the tests): it would fail every run whatever the mutant.
GRAMMAR_TEST = (
    "tests/core/test_annotation_gotchas.py::"
    "test_the_textmate_grammar_highlights_exactly_the_annotations_the_server_reads"
)


# Each module with only its own tests. Tests that drive the code through a subprocess (the CLI,
# the language server over stdio) are left out: mutmut only knows which tests reach a mutant
# from the test process itself, so they would cost time and could not be selected.
MODULES: dict[str, Module] = {
    "store": Module(
        "memory_core/store.py",
        (
            "tests/core/test_store.py",
            "tests/core/test_store_safety.py",
            "tests/core/test_store_faults.py",
            "tests/core/test_store_fault_messages.py",
            "tests/core/test_store_edges.py",
            "tests/core/test_store_after_answer.py",
        ),
        sample=150,
    ),
    "checkpoints": Module(
        "memory_core/checkpoints",
        (
            "tests/core/test_checkpoints.py",
            "tests/core/test_checkpoint_safety.py",
            "tests/core/test_checkpoint_storage.py",
            "tests/core/test_checkpoint_incremental.py",
            "tests/core/test_checkpoint_history.py",
            "tests/core/test_checkpoint_capture.py",
            "tests/core/test_checkpoint_packing.py",
            "tests/core/test_checkpoint_retention.py",
            "tests/core/test_rollback_plans.py",
            "tests/core/test_rollback_compare.py",
            "tests/core/test_checkpoint_gc_schedule.py",
            "tests/core/test_checkpoint_tree_cache.py",
            "tests/core/test_checkpoint_listing.py",
            "tests/core/test_checkpoint_hostile_fs.py",
            "tests/core/test_checkpoint_edges.py",
            "tests/core/test_checkpoint_seams.py",
        ),
        sample=60,
        # Run as another user in a subprocess (mutmut cannot follow it; test_checkpoint_edges
        # drives an unreadable file in the test process), and two races that take seconds each
        # (run by the README's test command, too slow to repeat for every mutant).
        deselect=(
            "tests/core/test_checkpoint_hostile_fs.py::test_a_file_unreadable_at_checkpoint_time_is_reported_and_never_deleted",
            "tests/core/test_checkpoint_hostile_fs.py::test_a_rollback_never_overwrites_a_file_it_could_not_save_first",
            "tests/core/test_checkpoint_hostile_fs.py::test_a_folder_swapped_for_a_link_outside_during_a_rollback_is_never_written_through",
            "tests/core/test_checkpoint_hostile_fs.py::test_a_file_rewritten_while_it_is_read_is_never_stored_torn",
        ),
    ),
    "redact": Module(
        "memory_core/redact.py",
        (
            "tests/core/test_redact.py",
            "tests/core/test_redact_kinds.py",
            "tests/core/test_redact_public_corpus.py",
        ),
        sample=60,
        deselect=(
            "tests/core/test_redact.py::test_redaction_is_cheap_to_import_in_a_cold_process",
        ),
    ),
    "transcripts": Module(
        "memory_core/agents/transcripts.py",
        (
            "tests/core/test_agents_transcripts.py",
            "tests/core/test_transcript_turns.py",
            "tests/core/test_transcript_ingest_effects.py",
            "tests/core/test_transcript_ingest_order.py",
        ),
        sample=60,
    ),
    "hooks": Module(
        "memory_core/agents/hooks.py",
        (
            "tests/core/test_agents_hooks_fuzz.py",
            "tests/core/test_hook_step_failures.py",
            "tests/core/test_hook_events.py",
            "tests/core/test_hook_mixed_inputs.py",
            "tests/core/test_hooks_answer_first.py",
            "tests/core/test_hook_busy_and_killed.py",
            # Real Gemini CLI and Codex CLI sessions replayed through their hooks.
            "tests/core/test_recorded_agents.py",
        ),
        sample=60,
    ),
    "track": Module(
        "memory_core/gotchas/track.py",
        ("tests/core/test_gotchas_capture.py", "tests/core/test_gotcha_tracking.py"),
        sample=100,
    ),
    "sessions": Module(
        "memory_core/sessions",
        (
            "tests/core/test_sessions.py",
            "tests/core/test_session_records.py",
            "tests/core/test_session_summary_markdown.py",
            "tests/core/test_session_documents.py",
            "tests/core/test_session_lifecycle.py",
            "tests/core/test_real_shaped_sessions.py",
            "tests/core/test_session_net_effect.py",
        ),
        sample=60,
    ),
    "diagnostics": Module(
        "lsp_server/features/diagnostics.py",
        ("tests/lsp/test_diagnostics_units.py",),
        sample=80,
    ),
    "lsp-gotchas": Module(
        "lsp_server/features/gotchas.py",
        (
            "tests/lsp/test_gotcha_squiggles.py",
            "tests/lsp/test_gotcha_commands.py",
            "tests/lsp/test_gotcha_line_ends.py",
        ),
        sample=60,
    ),
    # The areas a second round of hand-written bugs found weakest (issue 31).
    "evolution": Module(
        "memory_core/evolution.py",
        ("tests/core/test_evolution.py", "tests/core/test_evolution_boundaries.py"),
        sample=60,
    ),
    "agents.context": Module(
        "memory_core/agents/context.py",
        (
            "tests/core/test_agents_context.py",
            "tests/core/test_session_start_boundaries.py",
            "tests/core/test_session_start_includes.py",
        ),
        sample=60,
    ),
    "agents.digest": Module(
        "memory_core/agents/digest.py",
        ("tests/core/test_agents_digest.py", "tests/core/test_session_start_boundaries.py"),
        sample=60,
    ),
    "mcp_server": Module(
        "memory_core/mcp_server.py",
        ("tests/core/test_mcp_tools_in_process.py", "tests/core/test_mcp_line_guard.py"),
        sample=60,
    ),
    "quota": Module(
        "memory_core/quota.py",
        (
            "tests/core/test_quota.py",
            "tests/core/test_quota_paths.py",
            "tests/core/test_quota_boundaries.py",
        ),
        sample=60,
    ),
    "agents.quota_hook": Module(
        "memory_core/agents/quota_hook.py",
        (
            "tests/core/test_quota_paths.py",
            "tests/core/test_quota_boundaries.py",
            "tests/core/test_quota_hook_steps.py",
        ),
        sample=60,
    ),
    "lifecycle": Module(
        "memory_core/lifecycle.py",
        ("tests/core/test_lifecycle.py", "tests/core/test_lifecycle_boundaries.py"),
        sample=60,
    ),
    "drift": Module(
        "memory_core/drift.py",
        ("tests/core/test_drift.py", "tests/core/test_drift_boundaries.py"),
        sample=60,
    ),
    "verify": Module(
        "memory_core/verify.py",
        ("tests/core/test_verify_direct.py", "tests/core/test_verify_before_telling.py"),
        sample=60,
        deselect=SUBPROCESS_TESTS,
    ),
    # Named here: most of its tests import it through the package (`memory_core.gotchas`), which
    # the discovery below cannot tell from the package's other modules.
    "gotchas.context": Module(
        "memory_core/gotchas/context.py",
        (
            "tests/core/test_gotcha_context_ranking.py",
            "tests/core/test_gotcha_rank_index.py",
            "tests/core/test_gotchas_capture.py",
            "tests/core/test_verify_before_telling.py",
        ),
        sample=60,
        deselect=SUBPROCESS_TESTS,
    ),
    # Top-level modules of memory_core whose imports reach dozens of test files: a focused list,
    # the tests written for what each module itself does (issue 31).
    "clock": Module(
        "memory_core/clock.py",
        ("tests/core/test_clock.py", "tests/core/test_log.py"),
        sample=60,
    ),
    "text": Module(
        "memory_core/text.py",
        ("tests/core/test_query_words.py", "tests/core/test_gotcha_context_ranking.py"),
        sample=60,
    ),
    "events": Module(
        "memory_core/events.py",
        ("tests/core/test_event_log.py", "tests/core/test_limits.py"),
        sample=60,
    ),
    "memory": Module(
        "memory_core/memory.py",
        (
            "tests/core/test_memory.py",
            "tests/core/test_memory_rules.py",
            "tests/core/test_memory_edges.py",
        ),
        sample=60,
    ),
    "search": Module(
        "memory_core/search.py",
        (
            "tests/core/test_memory.py",
            "tests/core/test_memory_rules.py",
            "tests/core/test_query_words.py",
            "tests/core/test_search_edges.py",
            "tests/core/test_search_ranking.py",
        ),
        sample=60,
    ),
    "config": Module(
        "memory_core/config.py",
        ("tests/core/test_config.py", "tests/core/test_config_edges.py"),
        sample=60,
    ),
    "limits": Module("memory_core/limits.py", ("tests/core/test_limits.py",), sample=60),
    "snapshots": Module(
        "memory_core/snapshots.py",
        ("tests/core/test_snapshots.py", "tests/core/test_snapshot_edges.py"),
        sample=60,
    ),
    # (test_mcp_projecthub.py talks to `engram mcp` over stdio, which fails under mutmut)
    "session_vault": Module(
        "memory_core/session_vault.py",
        ("tests/core/test_session_vault_edges.py", "tests/core/test_hook_events.py"),
        sample=60,
    ),
    "errors": Module(
        "memory_core/errors.py",
        # (test_error_codes.py reads docs/, which the scratch copy does not hold)
        ("tests/core/test_errors.py",),
        sample=60,
    ),
    # The frame reader is tested below the server (test_jsonrpc_frames.py) and through the stdio
    # front (test_fast_initialize.py), which import it through `lsp_server.jsonrpc` and
    # `lsp_server.front`; the stdin pump directly.
    "lsp.frames": Module(
        "lsp_server/frames.py",
        (
            "tests/lsp/test_frame_reader.py",
            "tests/lsp/test_jsonrpc_frames.py",
            "tests/lsp/test_fast_initialize.py",
        ),
        sample=60,
        deselect=SUBPROCESS_TESTS[2:],
    ),
    # Not test_fast_initialize.py: a broken pump makes its hand-over test wait 30 s per mutant.
    "lsp.stdio": Module("lsp_server/stdio.py", ("tests/lsp/test_stdin_pump.py",), sample=60),
    # The stdio front and what it sends while the server loads: their in-process tests (the
    # stdio ones run the front in another process, out of mutmut's reach, at seconds a test).
    "lsp.front": Module(
        "lsp_server/front.py",
        ("tests/lsp/test_front_in_process.py", "tests/lsp/test_fast_initialize.py"),
        sample=60,
        deselect=_subprocess_tests_in(("tests/lsp/test_fast_initialize.py",)),
    ),
    "lsp.early": Module(
        "lsp_server/early.py",
        ("tests/lsp/test_early_in_process.py", "tests/lsp/test_front_in_process.py"),
        sample=60,
    ),
    "lsp.gotcha_format": Module(
        "lsp_server/gotcha_format.py",
        (
            "tests/lsp/test_gotcha_format.py",
            "tests/lsp/test_early_in_process.py",
            "tests/lsp/test_gotcha_squiggles.py",
            "tests/lsp/test_gotcha_line_ends.py",
        ),
        sample=60,
    ),
    # The server class: its own tests, not every in-process LSP test (each of which opens a
    # folder, so a mutant of `add_folder` ran about a hundred of them).
    "lsp.server": Module(
        "lsp_server/server.py",
        ("tests/lsp/test_server_folders.py", "tests/lsp/test_server_transport.py"),
        sample=60,
    ),
    "lsp.fast_documents": Module(
        "lsp_server/features/fast_documents.py",
        ("tests/lsp/test_fast_documents.py",),
        sample=60,
        # A timed comparison with pygls: mutmut's instrumented code fails it whatever the mutant.
        deselect=(
            "tests/lsp/test_fast_documents.py::"
            "test_an_edit_to_a_big_document_does_not_cost_the_whole_document",
        ),
    ),
    "lsp.jsonrpc": Module(
        "lsp_server/jsonrpc.py",
        ("tests/lsp/test_jsonrpc_dispatch.py", "tests/lsp/test_jsonrpc_frames.py"),
        sample=60,
    ),
    # Named here: nothing imports codex_install but install.py, and its tests drive it through
    # `install.install("codex", ...)`.
    "agents.codex_install": Module(
        "memory_core/agents/codex_install.py",
        ("tests/core/test_codex_install.py", "tests/core/test_install_over_user_settings.py"),
        sample=60,
    ),
    # tests/cli/test_hook_spool.py runs `engram hook` processes, which mutmut cannot follow.
    "agents.spool": Module(
        "memory_core/agents/spool.py",
        ("tests/core/test_spool_in_process.py",),
        sample=60,
    ),
    # The discovery finds tests/lsp/test_gotcha_commands.py by its name, which is the editor's
    # commands, not Claude Code's.
    "agents.commands": Module(
        "memory_core/agents/commands.py",
        ("tests/core/test_claude_commands.py",),
        sample=60,
    ),
    # Named here: the hooks and the transcript reader reach it (record is what both store).
    "agents.record": Module(
        "memory_core/agents/record.py",
        (
            "tests/core/test_record_helpers.py",
            "tests/core/test_hook_step_failures.py",
            "tests/core/test_hook_events.py",
            "tests/core/test_transcript_turns.py",
            "tests/core/test_transcript_ingest_effects.py",
            "tests/core/test_agents_transcripts.py",
            "tests/core/test_codex_rollouts.py",  # Codex's apply_patch: `_patched_files`
            "tests/core/test_record_turns_edges.py",
        ),
        sample=60,
    ),
    # The package's own functions (team gotchas and exports wired into `records`, `promote`,
    # `track_error` loaded lazily): 18 test files import the package, these three exercise them.
    "gotchas": Module(
        "memory_core/gotchas/__init__.py",
        (
            "tests/core/test_gotchas_files.py",
            "tests/core/test_gotchas_capture.py",
            "tests/core/test_gotcha_team.py",
        ),
        sample=60,
    ),
    # The gotcha modules with their fast in-process tests (the tests importing them include
    # the language server's and the tracking tests, a minute or more per mutant reaching them).
    "gotchas.tool_errors": Module(
        "memory_core/gotchas/tool_errors.py",
        ("tests/core/test_tool_errors.py", "tests/core/test_tool_errors_table.py"),
        sample=60,
    ),
    "gotchas.normalize": Module(
        "memory_core/gotchas/normalize.py",
        (
            "tests/core/test_gotcha_normalize.py",
            "tests/core/test_tool_errors.py",
            "tests/core/test_tool_errors_table.py",
            "tests/core/test_gotchas_capture.py",
        ),
        sample=60,
    ),
    "gotchas.rank_index": Module(
        "memory_core/gotchas/rank_index.py",
        ("tests/core/test_gotcha_rank_index.py", "tests/core/test_gotcha_context_ranking.py"),
        sample=60,
    ),
    "gotchas.records": Module(
        "memory_core/gotchas/records.py",
        (
            "tests/core/test_gotcha_records.py",
            "tests/core/test_gotcha_rank_index.py",
            "tests/core/test_annotation_gotchas.py",
            "tests/core/test_gotchas_anchoring.py",
            "tests/core/test_gotchas_files.py",
        ),
        sample=60,
        deselect=(GRAMMAR_TEST,),
    ),
    "gotchas.scan": Module(
        "memory_core/gotchas/scan.py",
        (
            "tests/core/test_gotcha_scan.py",
            "tests/core/test_annotation_gotchas.py",
            "tests/core/test_gotchas_anchoring.py",
            "tests/core/test_doctor.py",
        ),
        sample=60,
        deselect=(GRAMMAR_TEST,),
    ),
    "gotchas.team": Module(
        "memory_core/gotchas/team.py",
        ("tests/core/test_gotcha_team.py", "tests/core/test_gotchas_files.py"),
        sample=60,
    ),
    "agents.failures": Module(
        "memory_core/agents/failures.py",
        ("tests/core/test_failures.py", "tests/core/test_noisy_sessions.py"),
        sample=60,
    ),
    # Without test_checkpoint_hostile_fs.py (47 s, the file system's odd cases through
    # checkpoints: `journal` is reached there only through the rules every checkpoint reads).
    "journal": Module(
        "memory_core/journal.py",
        (
            "tests/core/test_change_journal.py",
            "tests/core/test_journal_rules.py",
            "tests/core/test_checkpoint_editor_files.py",
            "tests/core/test_checkpoint_listing.py",
            "tests/core/test_checkpoint_rule_cache.py",
            "tests/core/test_checkpoint_tree_cache.py",
        ),
        sample=60,
    ),
    # Named here: the hooks' tests parse payloads through `hooks.run`, not `payload` itself.
    "agents.payload": Module(
        "memory_core/agents/payload.py",
        (
            "tests/core/test_payload_cut_in_process.py",
            "tests/core/test_payload_agents_mixed.py",
            "tests/core/test_hook_payload_shapes.py",
            "tests/core/test_quota_hook_steps.py",
            "tests/core/test_hook_events.py",
            "tests/core/test_agents_hooks_fuzz.py",
        ),
        sample=60,
    ),
    "agents.install": Module(
        "memory_core/agents/install.py",
        ("tests/core/test_agents_install.py", "tests/core/test_install_over_user_settings.py"),
        sample=60,
    ),
    # The command line, with its own tests: they run `engram` in the test process
    # (tests/engram_in_process.py), so mutmut sees which of them reach each mutant. Not
    # test_in_process.py: it compares the in-process command with a process, which runs the
    # unmutated code, so it would "catch" every mutant it reaches without saying anything.
    "cli": Module(
        "memory_core/cli",
        tuple(
            sorted(
                p.relative_to(REPO).as_posix()
                for p in (REPO / "tests/cli").glob("test_*.py")
                # test_resident.py runs engram as other processes only (its fork server
                # against cold commands): no mutant can be traced to it, and its terminal
                # tests are timed for a person's machine, not for a run beside others.
                if p.name not in {"test_in_process.py", "test_resident.py"}
            )
        ),
        sample=60,
        deselect=SUBPROCESS_TESTS,
    ),
    # The package files and the language server's start. Only `lsp_server/main.py` (`run`) and
    # `lsp_server/setup.py` (`create_server`) have functions to mutate; the tests run both in
    # the test process (the server's own tests start it as another process).
    "entry-points": Module(
        "lsp_server/main.py",
        ("tests/lsp/test_server_start.py", "tests/lsp/test_fast_initialize.py"),
        sample=60,
        also=(
            "lsp_server/setup.py",
            "memory_core/__init__.py",
            "memory_core/__main__.py",
            "memory_core/agents/__init__.py",
            "lsp_server/__init__.py",
            "lsp_server/__main__.py",
            "lsp_server/features/__init__.py",
        ),
    ),
    # The language server's features, through the server `create_server()` builds, in this
    # process (`*_in_process.py`); their stdio tests run the unmutated code in a process of
    # their own, so they are not listed (test_evolution.py's line-range tests are in-process).
    "lsp.evolution": Module(
        "lsp_server/features/evolution.py",
        (
            "tests/lsp/test_evolution_in_process.py",
            "tests/lsp/test_evolution.py",
            "tests/lsp/test_watch_ignore.py",
        ),
        sample=60,
        deselect=tuple(
            f"tests/lsp/test_evolution.py::{name}"
            for name in (
                "test_editor_edits_and_disk_writes_are_recorded_with_their_actors",
                "test_a_save_seen_on_disk_is_the_editor_not_an_external_change",
                "test_renames_and_deletes_made_in_the_editor",
                "test_the_code_lens_counts_todays_edits_and_opens_the_history",
                "test_a_git_checkout_is_one_git_event",
            )
        ),
    ),
    "lsp.checkpoints": Module(
        "lsp_server/features/checkpoints.py",
        ("tests/lsp/test_checkpoints_in_process.py",),
        sample=60,
    ),
    "lsp.drift": Module(
        "lsp_server/features/drift.py", ("tests/lsp/test_drift_in_process.py",), sample=60
    ),
    "lsp.memory": Module(
        "lsp_server/features/memory.py", ("tests/lsp/test_memory_in_process.py",), sample=60
    ),
    "lsp.sessions": Module(
        "lsp_server/features/sessions.py", ("tests/lsp/test_sessions_in_process.py",), sample=60
    ),
    "lsp.snapshots": Module(
        "lsp_server/features/snapshots.py",
        ("tests/lsp/test_snapshots_in_process.py",),
        sample=60,
    ),
    "values": Module("memory_core/values.py", ("tests/core/test_values.py",), sample=60),
    # The in-process tests of the cold hook's early keep; the others start a hook process.
    "agents.quiet_events": Module(
        "memory_core/agents/quiet_events.py",
        ("tests/core/test_quiet_events.py", "tests/cli/test_hook_fork.py"),
        sample=60,
        deselect=tuple(
            f"tests/cli/test_hook_fork.py::{name}"
            for name in (
                "test_a_cold_compaction_hook_answers_at_once_and_the_next_reader_finds_it_recorded",
                "test_a_worker_killed_after_its_answer_leaves_the_event_to_the_next_hook",
                "test_a_cold_hook_that_tells_the_agent_something_tells_it_through_the_fork",
                "test_with_the_fork_turned_off_a_cold_hook_records_before_it_exits",
            )
        ),
    ),
}

# Every other module of memory_core and lsp_server, each with the in-process tests that import
# it (found by reading the tests' imports, so a new test joins its module's run by itself).
# Files of a few lines with nothing to get wrong are grouped with a neighbour.
GROUPS: dict[str, tuple[str, ...]] = {}
TEST_FOLDERS = ("tests/core", "tests/lsp", "tests")
DEFAULT_SAMPLE = 60


@functools.cache
def _imports_of(test: Path) -> frozenset[str]:
    """The dotted modules a test file imports (`from a import b` counts as a and a.b).

    Cached: every module's discovery reads every test file, and parsing them all again for
    each of a hundred modules took minutes of CPU before any mutant ran."""
    import ast

    try:
        tree = ast.parse(test.read_text(encoding="utf-8"))
    except (OSError, SyntaxError, UnicodeDecodeError):
        return frozenset()
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
    return frozenset(found)


def _dotted(path: str) -> str:
    return path.removesuffix(".py").removesuffix("/__init__").replace("/", ".")


def _tests_importing(files: list[str]) -> tuple[str, ...]:
    """The test files importing one of `files` (a top package's `__init__` is left out: every
    test imports `memory_core`); failing that, the test files named after the module."""
    wanted = {_dotted(f) for f in files} - {"memory_core", "lsp_server", "lsp_server.features"}
    tests = []
    for folder in TEST_FOLDERS:
        for test in sorted((REPO / folder).glob("test_*.py")):
            if _imports_of(test) & wanted:
                tests.append(test.relative_to(REPO).as_posix())
    if not tests:
        for name in sorted({w.rsplit(".", 1)[-1] for w in wanted}):
            for folder in (*TEST_FOLDERS, "tests/cli"):
                tests += sorted(
                    t.relative_to(REPO).as_posix()
                    for t in (REPO / folder).glob(f"test_*{name}*.py")
                )
    return tuple(dict.fromkeys(tests))


def _discover() -> None:
    """Add every source file no module above covers, as its own module (or in its group)."""
    covered = {f for module in MODULES.values() for f in module.files()}
    for name, sources in GROUPS.items():
        module = Module(sources[0], (), DEFAULT_SAMPLE, also=sources[1:])
        files = [f for f in module.files() if f not in covered]
        tests = _tests_importing(files)
        MODULES[name] = Module(
            sources[0],
            tests,
            DEFAULT_SAMPLE,
            deselect=_subprocess_tests_in(tests),
            also=sources[1:],
        )
        covered.update(files)
    for root in ("memory_core", "lsp_server"):
        for path in sorted((REPO / root).rglob("*.py")):
            rel = path.relative_to(REPO).as_posix()
            if rel in covered:
                continue
            name = _dotted(rel).removeprefix("memory_core.").replace("lsp_server.features.", "lsp.")
            name = name.replace("lsp_server.", "lsp.")
            tests = _tests_importing([rel])
            MODULES[name] = Module(rel, tests, DEFAULT_SAMPLE, deselect=_subprocess_tests_in(tests))


_discover()

# mutmut's exit codes, grouped the way the score counts them.
CAUGHT = {1, 3, 36, 37, -24, 24, 152, 255, -9, -11}  # failed, errored, timed out, crashed
SURVIVED = {0}
NO_TESTS = {5, 33}  # no selected test reaches the mutant: it survives too
EQUIVALENT_NAME = re.compile(r"`([\w.ǁ]+__mutmut_\d+)`")


def equivalent_mutants() -> set[str]:
    """Mutant names docs/testing.md lists as equivalent (each with its reason there)."""
    if not TESTING_DOC.exists():
        return set()
    text = TESTING_DOC.read_text(encoding="utf-8")
    section = text.split("## Equivalent mutants", 1)
    if len(section) < 2:
        return set()
    body = section[1].split("\n## ", 1)[0]
    return set(EQUIVALENT_NAME.findall(body))


def _copy_repo(work: Path) -> None:
    if work.exists():
        shutil.rmtree(work)
    work.mkdir(parents=True)
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", ".engram")
    for name in ("memory_core", "lsp_server", "tests"):
        shutil.copytree(REPO / name, work / name, ignore=ignore)
    shutil.copy2(REPO / "pyproject.toml", work / "pyproject.toml")


def _write_config(work: Path, module: Module) -> None:
    tests = "\n".join(f"    {t}" for t in module.tests if (REPO / t).exists())
    (work / "setup.cfg").write_text(
        "[mutmut]\n"
        "source_paths =\n    memory_core\n    lsp_server\n"
        "only_mutate =\n"
        + "".join(f"    {path}\n" for path in module.files())
        + f"pytest_add_cli_args_test_selection =\n{tests}\n"
        "pytest_add_cli_args =\n    -p\n    no:cacheprovider\n"
        + "".join(f"    --deselect\n    {test}\n" for test in module.deselect),
        encoding="utf-8",
    )


class ModuleFailed(Exception):
    """mutmut could not score a module (its tests failed without any mutant): the run goes on
    with the next module, and ends reporting it."""


def _mutmut(work: Path, *args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    mutmut = Path(sys.executable).with_name("mutmut")
    return subprocess.run(
        [str(mutmut), *args], cwd=work, env=env, capture_output=True, text=True, check=False
    )


def _generate(work: Path, env: dict[str, str]) -> None:
    # mutmut's own generation step, run alone so the sample can be drawn before any test runs.
    code = (
        "import os\n"
        "from mutmut.__main__ import create_mutants\n"
        "from mutmut.utils.file_utils import copy_also_copy_files, copy_src_dir\n"
        "os.makedirs('mutants', exist_ok=True)\n"
        "copy_src_dir(); copy_also_copy_files(); create_mutants(1)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=work, env=env, capture_output=True, text=True
    )
    if done.returncode != 0:
        raise SystemExit(f"mutation: generating mutants failed:\n{done.stdout}\n{done.stderr}")


def _results(work: Path, module: Module) -> dict[str, int | None]:
    """Exit code by mutant name over every mutated file (a file without mutants, such as a
    package's `__init__.py` of re-exports, has no `.meta`)."""
    codes: dict[str, int | None] = {}
    for path in module.files():
        meta = work / "mutants" / (path + ".meta")
        if meta.exists():
            codes.update(json.loads(meta.read_text(encoding="utf-8"))["exit_code_by_key"])
    return codes


@dataclass
class Score:
    name: str
    total: int
    ran: int
    caught: int
    survived: list[str]
    equivalent: list[str]
    stale_equivalent: list[str]
    seconds: float

    @property
    def percent(self) -> float:
        judged = self.caught + len(self.survived)
        return 100.0 * self.caught / judged if judged else 100.0


def run_module(name: str, sample: int | None, jobs: int, scratch: Path) -> Score:
    module = MODULES[name]
    work = scratch / name
    started = time.monotonic()
    _copy_repo(work)
    _write_config(work, module)
    env = dict(os.environ)
    # Tests that start engram in a subprocess run the unmutated code (mutmut's switch only
    # works inside its own processes); they pass and cost time, but cannot catch a mutant.
    env.pop("MUTANT_UNDER_TEST", None)
    # The CLI tests run engram in the test process (their default; said again in case the
    # caller's environment asks for processes), where mutmut can follow it.
    env["ENGRAM_TESTS_CLI"] = "in-process"
    _generate(work, env)
    names = sorted(_results(work, module))
    if not names:
        # mutmut leaves some code alone (a decorated function such as a context manager): there
        # is nothing to score, which is said rather than stopping the other modules' runs.
        print(f"== {name}: {module.source} has no mutants", flush=True)
        return Score(name, 0, 0, 0, [], [], [], time.monotonic() - started)
    limit = module.sample if sample is None else sample
    chosen = names if not limit or limit >= len(names) else random.Random(SEED).sample(names, limit)
    print(
        f"== {name}: {module.source}, {len(chosen)} of {len(names)} mutants, "
        f"tests: {', '.join(t for t in module.tests if (REPO / t).exists())}",
        flush=True,
    )
    if not any((REPO / t).exists() for t in module.tests):
        # No tests: mutmut would run the whole suite for each mutant. Every mutant survives.
        return Score(name, len(names), len(chosen), 0, sorted(chosen), [], [], 0.0)
    done = _mutmut(work, "run", "--max-children", str(jobs), *sorted(chosen), env=env)
    codes = _results(work, module)
    if done.returncode != 0 and all(codes.get(n) is None for n in chosen):
        tail = (done.stdout + done.stderr)[-3000:]
        raise ModuleFailed(f"mutation: mutmut failed on {name}:\n{tail}")
    equivalent = equivalent_mutants()
    caught = 0
    survived: list[str] = []
    eq: list[str] = []
    stale: list[str] = []
    for mutant in chosen:
        code = codes.get(mutant)
        if code in CAUGHT:
            caught += 1
            if mutant in equivalent:
                stale.append(mutant)
        elif mutant in equivalent:
            eq.append(mutant)
        elif code in SURVIVED or code in NO_TESTS or code is None:
            survived.append(mutant)
        else:  # suspicious, skipped, interrupted: not caught by a test
            survived.append(mutant)
    return Score(
        name, len(names), len(chosen), caught, survived, eq, stale, time.monotonic() - started
    )


# The every-module table of docs/testing.md: a row's last `(commit)` is the code it measured.
_TABLE_HEADER = "| module | files | tests | score"
_MEASURED_AT = re.compile(r"\(([0-9a-f]{7,40})\)")
_SCORE = re.compile(r"(\d+\.\d) %")


def stale_modules(table: str) -> dict[str, str]:
    """Module -> why its recorded score does not describe the code of the working tree: no
    commit recorded, a source file changed since that commit, or a score below the target."""
    rows: dict[str, str] = {}
    in_table = False
    for line in table.splitlines():
        if line.startswith(_TABLE_HEADER):
            in_table = True
            continue
        if in_table and not line.startswith("|"):
            break
        if in_table and not line.startswith("|---"):
            rows[line.split("|")[1].strip()] = line
    why: dict[str, str] = {}
    for name, module in MODULES.items():
        row = rows.get(name)
        if row is None:
            why[name] = "no row"
            continue
        if "no mutants" in row or "not measured" in row:
            continue
        commits = _MEASURED_AT.findall(row)
        if not commits:
            why[name] = "no commit recorded"
            continue
        changed = subprocess.run(
            ["git", "diff", "--quiet", commits[-1], "--", *module.files()],
            cwd=REPO,
            stderr=subprocess.DEVNULL,
        )
        if changed.returncode == 1:
            why[name] = f"code changed since {commits[-1]}"
        elif changed.returncode:
            why[name] = f"commit {commits[-1]} unknown here"
        elif (score := _SCORE.search(row)) and float(score.group(1)) < TARGET_SCORE:
            why[name] = f"{score.group(1)} % at {commits[-1]}"
    return why


def _print_stale() -> int:
    """One module per line on stdout (to hand back to this command), the reason on stderr."""
    why = stale_modules((REPO / "docs" / "testing.md").read_text(encoding="utf-8"))
    for name, reason in why.items():
        print(name)
        print(f"{name}: {reason}", file=sys.stderr)
    return 1 if why else 0


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="scripts/mutation.sh", description=__doc__)
    parser.add_argument("modules", nargs="*", help=f"default: all of {', '.join(MODULES)}")
    parser.add_argument("--sample", type=int, default=None, help="mutants per module (0: all)")
    parser.add_argument("--jobs", type=int, default=2, help="test processes at once (default 2)")
    parser.add_argument("--list", action="store_true", help="list the modules and their tests")
    parser.add_argument(
        "--show-survivors", action="store_true", help="print the diff of every surviving mutant"
    )
    parser.add_argument("--keep", action="store_true", help="keep the scratch copies")
    parser.add_argument(
        "--table", action="store_true", help="print every module as a Markdown table row"
    )
    parser.add_argument(
        "--stale",
        action="store_true",
        help="name the modules whose row in docs/testing.md no longer scores the code as it is",
    )
    args = parser.parse_args(argv)
    if args.stale:
        return _print_stale()
    if args.table:
        print("| module | files | tests | mutants run |")
        print("|---|---|---|---|")
        for name, module in MODULES.items():
            sources = ", ".join(f"`{s}`" for s in (module.source, *module.also))
            sample = f"sample of {module.sample}" if module.sample else "all"
            print(f"| {name} | {sources} | {len(module.tests)} | {sample} |")
        return 0
    if args.list:
        for name, module in MODULES.items():
            sample = f"sample {module.sample}" if module.sample else "all mutants"
            print(f"{name:20} {module.source:40} {sample:12} {' '.join(module.tests)}")
        return 0
    unknown = [m for m in args.modules if m not in MODULES]
    if unknown:
        print(
            f"mutation: unknown module {', '.join(unknown)}; one of: {', '.join(MODULES)}",
            file=sys.stderr,
        )
        return 2
    if shutil.which("mutmut", path=str(Path(sys.executable).parent)) is None:
        print(
            "mutation: mutmut is not installed; run: .venv/bin/pip install -e '.[mutation]'",
            file=sys.stderr,
        )
        return 2
    scratch = Path(tempfile.mkdtemp(prefix="engram-mutation-"))
    scores: list[Score] = []
    failed: list[str] = []
    try:
        for name in args.modules or list(MODULES):
            try:
                score = run_module(name, args.sample, args.jobs, scratch)
            except ModuleFailed as failure:
                print(failure, flush=True)
                failed.append(name)
                continue
            scores.append(score)
            print(
                f"   {name}: caught {score.caught} / survived {len(score.survived)} / "
                f"equivalent {len(score.equivalent)}  -> {score.percent:.1f} % "
                f"({score.ran} of {score.total} mutants, {score.seconds:.0f} s)",
                flush=True,
            )
            for mutant in score.equivalent:
                print(f"   equivalent: {mutant}")
            for mutant in score.stale_equivalent:
                print(f"   note: {mutant} is listed as equivalent but a test caught it")
            if args.show_survivors:
                work = scratch / name
                env = dict(os.environ)
                # `mutmut show` takes a second or two per mutant: the first 40 are enough to
                # see what the tests miss.
                for mutant in score.survived[:40]:
                    shown = _mutmut(work, "show", mutant, env=env)
                    print(shown.stdout)
                for mutant in score.survived[40:]:
                    print(f"   survived: {mutant}")
            else:
                for mutant in score.survived:
                    print(f"   survived: {mutant}")
    finally:
        if args.keep:
            print(f"scratch copies kept in {scratch}")
        else:
            shutil.rmtree(scratch, ignore_errors=True)
    print()
    print(f"{'module':12} {'caught':>7} {'survived':>9} {'equivalent':>11} {'score':>7}  mutants")
    for s in scores:
        print(
            f"{s.name:12} {s.caught:>7} {len(s.survived):>9} {len(s.equivalent):>11} "
            f"{s.percent:>6.1f}%  {s.ran} of {s.total}"
        )
    below = [s.name for s in scores if s.percent < TARGET_SCORE]
    if below:
        print(f"below {TARGET_SCORE:.0f} %: {', '.join(below)}")
    if failed:
        print(f"not scored (their tests failed before any mutant): {', '.join(failed)}")
    return 1 if below or failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
