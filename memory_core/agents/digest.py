"""Digests: what a session taught, written down before compaction can lose it.

A digest is YAML in two documents: a frontmatter (`schema_version: "1.0"`, session_id,
timestamp, duration_minutes, agent_context, compact_trigger) and the sections
`user_corrections`, `patterns_observed`, `axioms_learned` and `context_snapshot`. It is written
at PreCompact (manual or auto), at Stop and SessionEnd, and on a timer while a session is active
(PreCompact is skipped on some paths), to `exports/digests/<session>-<timestamp>.yaml`, and kept
in the `digests` table. `read_digest` accepts every schema version it knows and refuses others.

Extraction is from what the hooks and the ingest stored (already redacted): the human prompts
for corrections ("actually…", "no, …", "should be X not Y", "don't…") and axioms ("always…",
"never…", "must…"); the tool ledger for repeated failures and hot files. As the seed asks, a
digest holds patterns, not raw messages: each correction and rule is restated in the digest's
own words (`correction_gist`, `axiom_gist`), a repeated request is referenced by its prompts.
"""

from __future__ import annotations

import datetime
import json
import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memory_core import clock
from memory_core.errors import EngramError, UsageError
from memory_core.filenames import safe_filename
from memory_core.lazy_pattern import compile_later
from memory_core.redact import redact, redact_obj
from memory_core.store import Store, write_private_file

SCHEMA_VERSION = "1.0"
KNOWN_SCHEMA_VERSIONS = ("1.0",)
DIGEST_DIR = ("exports", "digests")
SECTIONS = ("user_corrections", "patterns_observed", "axioms_learned", "context_snapshot")

# Patterns used inside functions, compiled on first use like the others (a resident
# server compiles every module-level one before it forks).
_CLAUSE_BOUNDARY = compile_later(r"[,;:(\"“”]\s*")
_GIST_WORD = compile_later(r"[\w./-]+")
_NOT_PLAIN_WORD = compile_later(r"[^a-z0-9 ]+")
_CORRECTION_START = compile_later(
    r"^\s*(?:actually\b|no\b|nope\b|wrong\b|not quite\b|not that\b|that'?s (?:not|wrong)\b|"
    r"that is (?:not|wrong)\b|stop\b|wait\b|undo\b|revert\b|i said\b|i meant\b|"
    r"you (?:forgot|missed|broke|didn'?t|did not|shouldn'?t)\b|don'?t\b|do not\b|please don'?t\b)",
    re.IGNORECASE,
)
_CORRECTION_ANYWHERE = compile_later(
    r"\bshould (?:be|use|have been|call|return)\b[^.!?\n]*\bnot\b|\binstead of\b|\bnot\b[^.!?\n]{1,60}\bbut\b|"
    r"\brather than\b|\bthat'?s not (?:what|how|right)\b",
    re.IGNORECASE,
)
_AXIOM = compile_later(
    r"\b(?:always|never|must(?:n'?t| not)?|make sure(?: to)?|from now on|every time|"
    r"(?:do not|don'?t) ever)\b",
    re.IGNORECASE,
)
# "No, always use pnpm": the rule is what follows the correction word.
_LEADING_CORRECTION = compile_later(
    r"^(?:no|nope|actually|wait|ok(?:ay)?|and|also|but)\b[,:]?\s*", re.IGNORECASE
)
# A sentence ends at . ! or ? followed by a space or the end: `auth.py` and `v2.1` do not end one.
_SENTENCE = compile_later(r"(?:[^.!?\n]|[.!?]+(?=[^\s.!?]))+[.!?]*")
MAX_ITEMS = 20
MAX_ITEM_CHARS = 400


def _short(text: str, limit: int = MAX_ITEM_CHARS) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


# Where an agent's own template starts, not the user speaking: Gemini CLI's /init sends "You
# are an AI agent that brings the power of Gemini directly into the terminal. ..." as a user
# message (after its setup text in some chats, "This is the Gemini CLI. We are setting up the
# context for our chat."); other agents' system-like prompts start the same way.
_TEMPLATE = compile_later(
    r"^\s*(?:you are (?:an?|the) (?:[\w-]+ ){0,4}(?:agent|assistant|model|ai)\b|as an ai\b|"
    r"system:|this is the gemini cli\b)",
    re.IGNORECASE,
)
# Text the user pasted rather than wrote: Markdown quotes, fenced blocks, log lines.
_QUOTED = compile_later(
    r"^\s*(?:>|(?i:\[(?:error|err|warn(?:ing)?|info|debug|fatal|trace)\])|"
    r"\d{4}-\d{2}-\d{2}[ T]\d|(?:ERROR|WARN(?:ING)?|INFO|DEBUG|FATAL)(?::|\s+\[|\s{2,}))"
)
# A sentence that asks rather than tells ("Can you make sure ...?", "Should we always ...?").
# Only unambiguous openings: "Do not ever push to main" is a rule, "Do you ..." a question.
_QUESTION = compile_later(
    r"^(?:why|what|how|when|where|who|which|any idea|"
    r"(?:can|could|would|will|should|shall|may|might|do|does|did|is|are|was|were|have|has)"
    r"\s+(?:you|we|i|it|this|that|there|they|he|she|the|our|my|your)\b)",
    re.IGNORECASE,
)


def own_words(prompt: str) -> str:
    """What the user wrote themselves in a prompt: without quoted or fenced text they pasted
    (agent output, logs); "" for an agent's template sent as a prompt."""
    kept = []
    fenced = False
    for line in prompt.splitlines():
        if not fenced and _TEMPLATE.match(line):
            break  # the template runs to the end of the message
        if line.lstrip().startswith(("```", "~~~")):
            fenced = not fenced
            continue
        if not fenced and not _QUOTED.match(line):
            kept.append(line)
    return "\n".join(kept).strip()


def is_question(sentence: str) -> bool:
    text = sentence.strip()
    return text.endswith("?") or bool(_QUESTION.match(text))


def is_correction(prompt: str, *, first: bool = False) -> bool:
    """Whether the user corrects the agent. The first prompt of a session is its task: "the
    invoices show 19% instead of 20%" reports a bug, nothing the agent did yet; only an opening
    "no", "actually", "don't" ... makes it a correction (of an earlier session's work)."""
    own = own_words(prompt)
    if _CORRECTION_START.match(own):
        return True
    return not first and bool(_CORRECTION_ANYWHERE.search(own))


def axioms_in(prompt: str) -> list[str]:
    """The sentences of a prompt that state a rule (always / never / must ...): the user's own
    instructions, not questions, not text they pasted, not an agent's template."""
    found = []
    for match in _SENTENCE.finditer(own_words(prompt)):
        sentence = _LEADING_CORRECTION.sub("", match.group(0).strip(" ,;:-"))
        if sentence and _AXIOM.search(sentence) and not is_question(sentence):
            found.append(_short(sentence))
    return found


# -- the digest's own words (seed 000: "only conversation patterns, not raw messages") ---------
#
# A digest keeps what a prompt teaches, never the prompt: a correction becomes the statement it
# corrects to (its cue, the user's framing and politeness dropped, contractions written out),
# a rule becomes `Always: …`, `Never: …` or `Must: …` with the rule it names (`Rule: …` when it
# has no modal word to restate it by: "every time …"), a
# repeated request a reference to the prompts and a few of their words. Each is one clause,
# at most GIST_WORDS words, with e-mail addresses, URLs and home folders masked (secrets are
# redacted on top of this, as everywhere).

GIST_WORDS = 24
# A correction's cue, dropped from its restatement. Words that could carry the meaning ("No
# tests were run", "Stop using print") count as a cue only when punctuation follows them.
_CUE = compile_later(
    r"^(?:(?:(?:no|nope|wrong|wait|stop|not quite|not that|"
    r"that is (?:not (?:right|it|what i (?:meant|asked|said))|wrong))\s*[,:;.!—-]+|"
    r"(?:actually|well|ok(?:ay)?|hmm+|so|and|also|but|hey|sorry|i said|i meant|i mean)\b"
    r"[,:;.!—-]*)\s*)+",
    re.IGNORECASE,
)
_FRAMING = compile_later(
    r"^(?:(?:please|kindly|just|can you|could you|would you|will you|you should|you need to|"
    r"you have to|you must|we should|we need to|i want you to|i need you to|i think|"
    r"i told you to|let'?s)\b[\s,]*)+",
    re.IGNORECASE,
)
_POLITE = compile_later(r"[,\s]*\b(?:please|thanks|thank you)\b[.!]?", re.IGNORECASE)
_CONTRACTIONS = {
    "don't": "do not",
    "doesn't": "does not",
    "didn't": "did not",
    "isn't": "is not",
    "aren't": "are not",
    "wasn't": "was not",
    "shouldn't": "should not",
    "mustn't": "must not",
    "can't": "cannot",
    "won't": "will not",
    "it's": "it is",
    "that's": "that is",
    "there's": "there is",
    "let's": "let us",
}
_CONTRACTION = compile_later(
    r"\b(" + "|".join(re.escape(c) for c in _CONTRACTIONS) + r")\b", re.IGNORECASE
)
_EMAIL = compile_later(r"\b[\w.+-]+@[\w-]+(?:\.[\w-]+)+\b")
_URL = compile_later(r"\bhttps?://\S+", re.IGNORECASE)
_HOME = compile_later(r"(?:/home|/Users)/[^/\s`'\"]+")
_MODAL = compile_later(
    r"\b(?P<word>always|never|must(?:n'?t| not)?|make sure(?: to)?|from now on|"
    r"(?:do not|don'?t) ever)\b[\s,:]*",
    re.IGNORECASE,
)
_SUBJECT = compile_later(r"^(?:you|we|i|please|and|also|so|then)?[\s,]*$", re.IGNORECASE)
_STOPWORDS = frozenset(
    [
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "but",
        "by",
        "can",
        "could",
        "do",
        "does",
        "for",
        "from",
        "have",
        "how",
        "i",
        "in",
        "is",
        "it",
        "me",
        "my",
        "no",
        "not",
        "of",
        "on",
        "or",
        "our",
        "please",
        "so",
        "that",
        "the",
        "then",
        "this",
        "to",
        "up",
        "us",
        "was",
        "we",
        "what",
        "when",
        "where",
        "which",
        "why",
        "will",
        "with",
        "would",
        "you",
        "your",
        "again",
        "just",
        "now",
    ]
)


def _mask(text: str) -> str:
    text = _URL.sub("<url>", text)
    text = _EMAIL.sub("<email>", text)
    return _HOME.sub("~", text)


def _expand(text: str) -> str:
    def one(match: re.Match[str]) -> str:
        word = match.group(1)
        full = _CONTRACTIONS[word.lower().replace("’", "'")]
        return full[0].upper() + full[1:] if word[0].isupper() else full

    return _CONTRACTION.sub(one, text.replace("’", "'"))


def _clause(text: str) -> str:
    """One statement in the digest's words: no cue or framing, capitalised, bounded."""
    text = _POLITE.sub("", _expand(" ".join(text.split())))
    previous = None
    while previous != text:
        previous = text
        text = _FRAMING.sub("", _CUE.sub("", text)).strip(" ,;:-")
    text = _mask(text).rstrip(" .!?;:,")
    words = text.split()
    if len(words) > GIST_WORDS:
        text = " ".join(words[:GIST_WORDS]) + " …"
    return text[:1].upper() + text[1:] if text else ""


def correction_gist(prompt: str) -> str:
    """What a correcting prompt corrects to, in the digest's words (not the prompt)."""
    sentences = [m.group(0).strip() for m in _SENTENCE.finditer(prompt) if m.group(0).strip()]
    if _CORRECTION_START.match(prompt):
        # The first sentence that says something once its cue is gone ("No. Wrong file. Edit
        # src/app.py instead" corrects to the third); a rule is an axiom of its own.
        for sentence in sentences:
            clause = _clause(sentence)
            if len(clause.split()) >= 3 and not _AXIOM.search(sentence) and not _question(sentence):
                return clause
        statements = [s for s in sentences if not _question(s)]
        return _clause(statements[0]) if statements else ""
    chosen = [s for s in sentences if _CORRECTION_ANYWHERE.search(s) and not _question(s)][:1]
    return _clause(chosen[0]) if chosen else ""


def _question(sentence: str) -> bool:
    """A question asks; it states no correction and no rule ("how do we make sure …?")."""
    return sentence.rstrip().endswith("?")


def axiom_gist(sentence: str) -> str:
    """A stated rule by its modality: `Always: …`, `Never: …`, `Must: …` and the rule without
    its modal word; the subject stays when it is not the person talking ("Tests must pass" is
    `Must: Tests pass`), a clause before it is another matter and goes."""
    match = _MODAL.search(sentence)
    if match is None:  # "every time ...": a rule, but no modal word to restate it by
        return f"Rule: {_clause(sentence)}"
    before, after = sentence[: match.start()], sentence[match.end() :]
    word = match.group("word").lower().replace("’", "'")
    if word == "never" or word.endswith("ever") or word in ("mustn't", "must not", "mustnt"):
        label = "Never"
    elif word == "must":
        label = "Must"
    else:
        label = "Always"
    # The subject is what follows the last clause boundary before the modal word; nothing
    # when that is the speaker ("you must") or when the modal word begins a clause.
    subject = _CLAUSE_BOUNDARY.split(_CUE.sub("", before.strip()))[-1].strip()
    if _SUBJECT.match(subject):
        subject = ""
    action = _clause(f"{subject} {after}").strip("\"'“” ")
    if not action:
        return _clause(sentence)
    first = action.split()[0]
    if first not in sentence and first.lower() in sentence:
        action = action[:1].lower() + action[1:]  # capitalised here, not by its writer
    return f"{label}: {action}"


def request_gist(prompt: str, words: int = 6) -> str:
    """A few content words of a prompt: enough to recognise the request, not to quote it."""
    found = (w.strip("./-") for w in _GIST_WORD.findall(_mask(prompt)))
    kept = [w for w in found if w.lower() not in _STOPWORDS and len(w) > 1]
    return " ".join(kept[:words])


def _normal_prompt(text: str) -> str:
    return _NOT_PLAIN_WORD.sub("", " ".join(text.lower().split()))


@dataclass(frozen=True)
class Digest:
    path: Path
    frontmatter: dict[str, Any]
    sections: dict[str, Any]


def extract(store: Store, session_id: str) -> dict[str, Any]:
    """The four sections for one session, from what the hooks and the ingest stored."""
    prompts = store.query(
        "SELECT ts, text FROM agent_prompts WHERE session_id = ? ORDER BY ts", (session_id,)
    )
    corrections: list[dict[str, Any]] = []
    axioms: list[dict[str, Any]] = []
    seen_axioms: set[str] = set()
    from memory_core import verify  # a correction naming a file that is gone is marked

    for index, row in enumerate(prompts):
        text = str(row["text"])
        if is_correction(text, first=index == 0):
            said = own_words(text)
            gist = correction_gist(said)
            if gist:
                corrections.append(
                    {
                        # Restated (no raw user sentence), and checked against the workspace
                        # for the files the user's own words name.
                        "text": verify.mark(gist, verify.text_check(store, said)),
                        "timestamp": clock.iso(row["ts"]),
                    }
                )
        for sentence in axioms_in(text):
            if _question(sentence):
                continue
            rule = axiom_gist(sentence)
            key = rule.lower()
            if rule and key not in seen_axioms:
                seen_axioms.add(key)
                axioms.append(
                    {
                        "text": verify.mark(rule, verify.text_check(store, sentence)),
                        "timestamp": clock.iso(row["ts"]),
                    }
                )

    patterns: list[dict[str, Any]] = []
    failures = store.query(
        "SELECT tool, command, error, COUNT(*) AS n, MIN(ts) AS first, MAX(ts) AS last "
        "FROM agent_tool_uses WHERE session_id = ? AND ok = 0 "
        "GROUP BY tool, COALESCE(command, path, substr(error, 1, 200)) HAVING n >= 2 ORDER BY n DESC, last DESC",
        (session_id,),
    )
    for row in failures:
        what = f"`{row['command']}`" if row["command"] else str(row["tool"])
        from memory_core.agents import lessons  # the gotcha rules load only when needed

        first_line = lessons.error_line(row["error"])  # the error that matters, not "Exit code 2"
        patterns.append(
            {
                "kind": "repeated_failure",
                "description": _short(f"{what} failed {row['n']} times: {first_line}"),
                "count": int(row["n"]),
            }
        )
    normal = [_normal_prompt(str(row["text"])) for row in prompts]
    repeated = Counter(normal)
    originals = {key: str(row["text"]) for key, row in zip(normal, prompts, strict=True)}
    for key, count in repeated.most_common():
        if count < 2 or not key:
            break
        # Which prompts (1-based, in the session's order): a reference, not the request's text.
        where = ", ".join(str(i + 1) for i, k in enumerate(normal) if k == key)
        about = request_gist(originals[key])
        patterns.append(
            {
                "kind": "repeated_request",
                "description": _short(
                    f"the same request {count} times (prompts {where})"
                    + (f": {about}" if about else "")
                ),
                "count": count,
            }
        )
    hot = store.query(
        "SELECT path, COUNT(*) AS n FROM agent_tool_uses WHERE session_id = ? AND ok = 1 AND path IS NOT NULL "
        "AND tool IN ('Edit', 'Write', 'MultiEdit', 'NotebookEdit') GROUP BY path HAVING n >= 3 ORDER BY n DESC",
        (session_id,),
    )
    for row in hot:
        patterns.append(
            {
                "kind": "hot_file",
                "description": f"{row['path']} edited {row['n']} times",
                "count": int(row["n"]),
            }
        )

    return {
        "user_corrections": corrections[-MAX_ITEMS:],
        "patterns_observed": patterns[:MAX_ITEMS],
        "axioms_learned": axioms[-MAX_ITEMS:],
        "context_snapshot": snapshot(store, session_id),
    }


def snapshot(store: Store, session_id: str) -> dict[str, Any]:
    session = store.query_one("SELECT * FROM agent_sessions WHERE session_id = ?", (session_id,))
    files = store.query(
        "SELECT path, COUNT(*) AS n FROM agent_tool_uses WHERE session_id = ? AND ok = 1 AND path IS NOT NULL "
        "AND tool IN ('Edit', 'Write', 'MultiEdit', 'NotebookEdit') GROUP BY path ORDER BY MIN(ts)",
        (session_id,),
    )
    commands = store.query(
        "SELECT command, ok FROM agent_tool_uses WHERE session_id = ? AND command IS NOT NULL "
        "ORDER BY ts DESC LIMIT 20",
        (session_id,),
    )
    tools = store.query(
        "SELECT tool, COUNT(*) AS n, SUM(ok = 0) AS failed FROM agent_tool_uses WHERE session_id = ? "
        "AND ok IS NOT NULL GROUP BY tool ORDER BY n DESC",
        (session_id,),
    )
    # The session's own figures (agent_sessions, migration 0007): the same as `engram session
    # metrics`, and unchanged when retention prunes the per-message records.
    usage = {
        sidechain: {
            "i": session[f"{prefix}_input_tokens"],
            "o": session[f"{prefix}_output_tokens"],
            "cc": session[f"{prefix}_cache_creation_tokens"],
            "cr": session[f"{prefix}_cache_read_tokens"],
        }
        if session
        else None
        for sidechain, prefix in ((False, "main"), (True, "sub"))
    }
    turns = store.query_one("SELECT COUNT(*) FROM agent_turns WHERE session_id = ?", (session_id,))
    # The agent, its model and folder are not repeated here: write_digest reads agent_sessions.
    return {
        "branch": session["git_branch"] if session else None,
        "turns": int(turns[0]) if turns else 0,
        # The net effect: files edited and then put back as they were are left out.
        "files_modified": _net([str(row["path"]) for row in files], store, session_id),
        "commands": [
            {"command": str(row["command"]), "ok": None if row["ok"] is None else bool(row["ok"])}
            for row in reversed(commands)
        ],
        "tool_calls": {str(row["tool"]): int(row["n"]) for row in tools},
        "failed_tool_calls": sum(int(row["failed"] or 0) for row in tools),
        # The main conversation's tokens (what `engram session metrics` counts), and subagents' apart.
        "tokens": _tokens(usage.get(False)),
        "subagent_tokens": _tokens(usage.get(True)),
    }


def _net(files: list[str], store: Store, session_id: str) -> list[str]:
    from memory_core.sessions.net import reverted_files

    back = set(reverted_files(store, session_id)) if files else set()
    return [path for path in files if path not in back]


def _tokens(row: Any) -> dict[str, int]:
    return {
        "input": int(row["i"]) if row else 0,
        "output": int(row["o"]) if row else 0,
        "cache_creation": int(row["cc"]) if row else 0,
        "cache_read": int(row["cr"]) if row else 0,
    }


# -- writing: seed 000's v1.0 layout ------------------------------------------------------------
#
# The file is a YAML frontmatter between `---` lines followed by a Markdown body with exactly the
# four sections of the seed, in its order, with its bullet forms (`- "…"`, `- Pattern: "…"`,
# `- Axiom: "…"`) and the Context Snapshot's four bold lines. The frontmatter's six seed fields
# come first with the seed's types; engram's richer facts follow under one more key, `engram`,
# so a reader written from the seed alone still finds everything where it expects it.

SECTION_TITLES = {
    "user_corrections": "User Corrections",
    "patterns_observed": "Patterns Observed",
    "axioms_learned": "Axioms Learned",
    "context_snapshot": "Context Snapshot",
}
SNAPSHOT_LINES = {
    "active_agent": "Active Agent",
    "active_story": "Active Story",
    "files_modified": "Files Modified",
    "commands_executed": "Commands Executed",
}
# The bold lines are one line each: long command lists are cut (the full list is in `engram`).
SNAPSHOT_ITEMS = 20
COMMAND_CHARS = 120


def iso_millis(ts: float) -> str:
    """`2026-02-09T18:30:45.123Z`: the seed's timestamp, with milliseconds."""
    moment = datetime.datetime.fromtimestamp(ts, datetime.UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def file_stamp(ts: float) -> str:
    """`2026-02-09T18-30-45-123Z`: the timestamp as the seed puts it in file names."""
    return iso_millis(ts).replace(":", "-").replace(".", "-")


def _quoted(text: str) -> str:
    # A JSON string is a valid YAML double-quoted scalar, and reads back as the seed's `"…"`.
    return json.dumps(text, ensure_ascii=False)


def _at(agent: str) -> str:
    return agent if agent.startswith("@") else f"@{agent}"


def agent_context(agent: str | None, model: str | None, story: str | None) -> str:
    """The seed's `agent_context` string ("@dev implementing Story MIS-3")."""
    who = _at(agent) if agent else "@agent"
    if model:
        who += f" ({model})"
    return f"{who} implementing Story {story}" if story else f"{who} working"


# Digest frontmatter without PyYAML: a hook that writes a digest should not pay 92 M instructions
# (2.4x Python's own start) to import a YAML library for one small mapping. This writes exactly
# what `yaml.dump(value, Dumper=CSafeDumper, sort_keys=False, allow_unicode=True, width=100)`
# writes for the shapes a digest holds: mappings, lists, short printable-ASCII strings, ints,
# finite floats, booleans and None. Anything else (a line break, a non-ASCII character, a
# string YAML could read as another type, a line long enough to be folded) raises _NeedsYaml and
# the caller lets PyYAML write it, so the text never depends on which writer ran.


class _NeedsYaml(Exception):
    pass


_LINE_WIDTH = 100  # the width given to PyYAML: no line of ours may reach where it folds
_FIRST_CHAR_INDICATORS = frozenset("#,[]{}&*!|>'\"%@`")
# A plain scalar starting with one of these may read back as a number, date, null, merge key or
# value key; and words YAML 1.1 reads as booleans or null. Those go to PyYAML.
_MAYBE_NOT_A_STRING = frozenset("0123456789+-.~<=")
_RESERVED_WORDS = frozenset({"yes", "no", "true", "false", "on", "off", "null", "y", "n"})


def _yaml_string(text: str) -> str:
    if not text or not all(" " <= ch <= "~" for ch in text):
        raise _NeedsYaml
    if text[0] in _MAYBE_NOT_A_STRING or text.lower() in _RESERVED_WORDS:
        raise _NeedsYaml
    plain = not (
        text[0] == " "
        or text[-1] == " "
        or text[0] in _FIRST_CHAR_INDICATORS
        or (text[0] in "?:" and (len(text) == 1 or text[1] == " "))
        or ": " in text
        or text.endswith(":")
        or " #" in text
    )
    return text if plain else "'" + text.replace("'", "''") + "'"


def _yaml_scalar(value: object) -> str:
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if type(value) is int:
        return str(value)
    if type(value) is float:
        shown = repr(value)
        if not all(ch in "0123456789.-" for ch in shown):  # inf, nan, exponents
            raise _NeedsYaml
        return shown
    if type(value) is str:
        return _yaml_string(value)
    raise _NeedsYaml


def _yaml_lines(value: object, indent: int, lines: list[str], lead: str) -> None:
    """Append `value` as YAML's block style; `lead` is what opens its first line."""
    if isinstance(value, dict) and value:
        first = True
        for key, item in value.items():
            if type(key) is not str:
                raise _NeedsYaml
            head = (lead if first else " " * indent) + _yaml_string(key) + ":"
            first = False
            if len(head) >= _LINE_WIDTH - 2:  # a long key is written as a complex key
                raise _NeedsYaml
            if isinstance(item, dict) and item:
                lines.append(head)
                _yaml_lines(item, indent + 2, lines, " " * (indent + 2))
            elif isinstance(item, list) and item:
                lines.append(head)
                _yaml_lines(item, indent, lines, " " * indent)  # PyYAML: indentless lists
            else:
                _scalar_line(head + " ", item, lines)
    elif isinstance(value, list) and value:
        for number, item in enumerate(value):
            head = (lead if number == 0 else " " * indent) + "- "
            if isinstance(item, (dict, list)) and item:
                _yaml_lines(item, indent + 2, lines, head)
            else:
                _scalar_line(head, item, lines)
    else:
        _scalar_line(lead, value, lines)


def _scalar_line(head: str, value: object, lines: list[str]) -> None:
    if isinstance(value, (dict, list)):  # empty: flow style
        text = "{}" if isinstance(value, dict) else "[]"
    else:
        text = _yaml_scalar(value)
    line = head + text
    if len(line) >= _LINE_WIDTH - 2:
        raise _NeedsYaml
    lines.append(line)


def _yaml_mapping(mapping: dict[str, Any]) -> str:
    """`mapping` as PyYAML's safe dumper writes it (see _NeedsYaml), without its newline."""
    try:
        lines: list[str] = []
        _yaml_lines(mapping, 0, lines, "")
        return "\n".join(lines)
    except _NeedsYaml:
        import yaml  # type: ignore[import-untyped]

        dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
        dumped: str = yaml.dump(
            mapping, Dumper=dumper, sort_keys=False, allow_unicode=True, width=100
        )
        return dumped.rstrip("\n")


def render(frontmatter: dict[str, Any], sections: dict[str, Any]) -> str:
    """The digest file's text from its frontmatter and the four sections (already redacted)."""
    lines = ["---"]
    for key in ("schema_version", "session_id", "timestamp"):
        lines.append(f"{key}: {_quoted(str(frontmatter[key]))}")
    lines.append(f"duration_minutes: {int(frontmatter['duration_minutes'])}")
    for key in ("agent_context", "compact_trigger"):
        lines.append(f"{key}: {_quoted(str(frontmatter[key]))}")
    extra = {k: v for k, v in frontmatter.items() if k not in FRONTMATTER_FIELDS}
    if extra:
        lines.append(_yaml_mapping(extra))
    lines += ["---", ""]

    # Empty sections and lines are written as the AIOS digest writer writes them (a placeholder
    # bullet, `none`, `unknown`), so tools of that ecosystem read engram's digests as their own.
    for key, prefix in (
        ("user_corrections", ""),
        ("patterns_observed", "Pattern: "),
        ("axioms_learned", "Axiom: "),
    ):
        items = [f"- {prefix}{_quoted(item)}" for item in sections[key]]
        lines += [f"## {SECTION_TITLES[key]}", "", *(items or [f"- {EMPTY_SECTION[key]}"]), ""]
    snap = sections["context_snapshot"]
    lines += ["## Context Snapshot", ""]
    for key, title in SNAPSHOT_LINES.items():
        value = snap.get(key)
        if isinstance(value, list):
            value = ", ".join(value)
        lines.append(f"**{title}:** {value or ('unknown' if key == 'active_agent' else 'none')}")
    return "\n".join(lines) + "\n"


# The AIOS writer's placeholders for an empty section; a reader takes any `(none ...)` as empty.
EMPTY_SECTION = {
    "user_corrections": "(none captured)",
    "patterns_observed": "(none identified)",
    "axioms_learned": "(none extracted)",
}
_PLACEHOLDER = compile_later(r"^\(?none\b[^)]*\)?$", re.IGNORECASE)


FRONTMATTER_FIELDS = (
    "schema_version",
    "session_id",
    "timestamp",
    "duration_minutes",
    "agent_context",
    "compact_trigger",
)


def active_agent(store: Store, session_id: str) -> str | None:
    """The agent working in the session now: the last one `engram session state --agent` (or
    AIOS's updateSessionState) named, else None (the agent that runs the session)."""
    row = store.query_one("SELECT agent, agent_sequence FROM sessions WHERE id = ?", (session_id,))
    if row is None:
        return None
    try:
        sequence = json.loads(row["agent_sequence"] or "[]")
    except ValueError:
        return None
    if isinstance(sequence, list) and sequence and isinstance(sequence[-1], str):
        return sequence[-1] if sequence[-1] != row["agent"] else None
    return None


def active_story(store: Store, session_id: str) -> str | None:
    """The story or task the session works on, when the session state knows it."""
    row = store.query_one("SELECT active_story FROM sessions WHERE id = ?", (session_id,))
    return str(row[0]) if row is not None and row[0] else None


def write_digest(
    store: Store, session_id: str, *, trigger: str, now: float | None = None
) -> Digest:
    """Write the session's digest now; returns where it went and what it says."""
    ts = clock.now() if now is None else now
    session = store.query_one("SELECT * FROM agent_sessions WHERE session_id = ?", (session_id,))
    started = float(session["started_at"]) if session else ts
    last = max(float(session["last_seen"]) if session else ts, started)
    seconds = max(0.0, last - started)
    if store.query_one("SELECT 1 FROM sessions WHERE id = ?", (session_id,)) is not None:
        from memory_core import sessions

        # The session's own duration (from the transcript's times), as `engram session metrics`.
        seconds = float(sessions.metrics(store, session_id, now=ts)["duration_seconds"])
    # Redacted as data, before rendering: a redaction run over the text could break its syntax.
    facts = redact_obj(extract(store, session_id))
    snap = facts["context_snapshot"]
    story = active_story(store, session_id)
    agent = session["agent"] if session else None
    model = session["model"] if session else None
    # The persona now at work (`engram session state --agent @dev`), else the agent itself.
    persona = active_agent(store, session_id)
    working = persona or agent
    commands = [_short(c["command"], COMMAND_CHARS) for c in snap["commands"]]
    sections = {
        "user_corrections": [c["text"] for c in facts["user_corrections"]],
        "patterns_observed": [p["description"] for p in facts["patterns_observed"]],
        "axioms_learned": [a["text"] for a in facts["axioms_learned"]],
        "context_snapshot": {
            "active_agent": _at(working) if working else None,
            "active_story": story,
            "files_modified": snap["files_modified"][-SNAPSHOT_ITEMS:],
            "commands_executed": list(dict.fromkeys(commands))[-SNAPSHOT_ITEMS:],
        },
    }
    frontmatter: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        "session_id": session_id,
        "timestamp": iso_millis(ts),
        # Whole minutes as the seed has them, half a minute up (round() would round 2.5 to 2).
        "duration_minutes": int(seconds / 60 + 0.5),
        "agent_context": redact(agent_context(working, model, story)),
        "compact_trigger": trigger,
        # engram's richer facts: where and how, with counts and times the seed's lines cannot hold.
        "engram": {
            "agent": agent,
            "active_agent": persona,
            "model": model,
            "cwd": session["cwd"] if session else None,
            "branch": snap["branch"],
            "compactions": int(session["compactions"]) if session else 0,
            "duration_seconds": round(seconds, 3),
            "turns": snap["turns"],
            "tokens": snap["tokens"],
            "subagent_tokens": snap["subagent_tokens"],
            "tool_calls": snap["tool_calls"],
            "failed_tool_calls": snap["failed_tool_calls"],
            "commands": snap["commands"],
            "files_modified": snap["files_modified"],
            "patterns": facts["patterns_observed"],
            "corrections": facts["user_corrections"],
            "axioms": facts["axioms_learned"],
        },
    }
    text = render(frontmatter, sections)
    folder = store.dir.joinpath(*DIGEST_DIR)
    stamp = file_stamp(ts)
    safe_session = safe_filename(session_id)
    path = folder / f"{safe_session}-{stamp}.yaml"
    counter = 1
    while path.exists():
        counter += 1
        path = folder / f"{safe_session}-{stamp}-{counter}.yaml"
    write_private_file(path, text)
    with store.transaction() as db:
        db.execute(
            "INSERT INTO digests (session_id, ts, trigger, schema_version, path, content) VALUES (?, ?, ?, ?, ?, ?)",
            (session_id, ts, trigger, SCHEMA_VERSION, str(path.relative_to(store.dir)), text),
        )
        db.execute(
            "UPDATE agent_sessions SET last_digest_at = ? WHERE session_id = ?", (ts, session_id)
        )
    return Digest(path=path, frontmatter=frontmatter, sections=sections)


# -- reading ---------------------------------------------------------------------------------------

_HEADING = compile_later(r"^##\s+(.+?)\s*$")
_BOLD_LINE = compile_later(r"^\*\*(.+?):\*\*\s*(.*)$")
_BULLET_PREFIX = compile_later(r"^(?:Pattern|Axiom):\s*", re.IGNORECASE)
_TITLE_KEYS = {title.lower(): key for key, title in SECTION_TITLES.items()}
_SNAPSHOT_KEYS = {title.lower(): key for key, title in SNAPSHOT_LINES.items()}


def _unquote(text: str) -> str:
    text = text.strip()
    if len(text) >= 2 and text[0] == text[-1] == '"':
        try:
            value = json.loads(text)
        except json.JSONDecodeError:
            return text[1:-1]
        return value if isinstance(value, str) else text[1:-1]
    return text


def _split_frontmatter(text: str, where: str) -> tuple[str, str]:
    lines = text.splitlines()
    if not lines or lines[0].strip() != "---":
        raise UsageError(f"{where} has no frontmatter (it must start with a `---` line)")
    for index in range(1, len(lines)):
        if lines[index].strip() in ("---", "..."):
            return "\n".join(lines[1:index]), "\n".join(lines[index + 1 :])
    raise UsageError(f"{where} has no end to its frontmatter (a second `---` line)")


def _parse_body(body: str) -> dict[str, Any]:
    sections: dict[str, Any] = {
        "user_corrections": [],
        "patterns_observed": [],
        "axioms_learned": [],
        "context_snapshot": {},
    }
    current: str | None = None
    for raw in body.splitlines():
        line = raw.strip()
        heading = _HEADING.match(line)
        if heading:
            current = _TITLE_KEYS.get(heading.group(1).lower())
            continue
        if current is None or not line:
            continue
        if current == "context_snapshot":
            bold = _BOLD_LINE.match(line)
            if bold and bold.group(1).lower() in _SNAPSHOT_KEYS:
                key = _SNAPSHOT_KEYS[bold.group(1).lower()]
                value = bold.group(2).strip()
                if value.lower() in ("none", "unknown"):
                    value = ""
                if key in ("files_modified", "commands_executed"):
                    sections[current][key] = [v.strip() for v in value.split(",") if v.strip()]
                else:
                    sections[current][key] = value or None
        elif line.startswith(("- ", "* ")):
            raw_item = _BULLET_PREFIX.sub("", line[2:].strip())
            # `- (none captured)`, `- none`: how AIOS and people say a section is empty.
            if raw_item and not _PLACEHOLDER.match(raw_item):
                sections[current].append(_unquote(raw_item))
    for key in SNAPSHOT_LINES:
        sections["context_snapshot"].setdefault(
            key, [] if key in ("files_modified", "commands_executed") else None
        )
    return sections


def _from_engram_yaml(body: dict[str, Any]) -> dict[str, Any]:
    """engram's first digests (before the seed's Markdown body): a YAML mapping of the sections."""

    def texts(items: Any, field: str) -> list[str]:
        return [str(i.get(field, "")) if isinstance(i, dict) else str(i) for i in items or []]

    snap = body.get("context_snapshot") or {}
    return {
        "user_corrections": texts(body.get("user_corrections"), "text"),
        "patterns_observed": texts(body.get("patterns_observed"), "description"),
        "axioms_learned": texts(body.get("axioms_learned"), "text"),
        "context_snapshot": {
            "active_agent": f"@{snap['agent']}" if snap.get("agent") else None,
            "active_story": None,
            "files_modified": [str(f) for f in snap.get("files_modified") or []],
            "commands_executed": texts(snap.get("commands"), "command"),
        },
    }


def parse_digest(text: str, *, where: str = "digest") -> Digest:
    """Read a digest: the seed's v1.0 layout (and engram's earlier all-YAML one).

    A digest without `schema_version` is read as 1.0, as the seed's reader does; a version this
    engram does not know is refused with the seed's message, and nothing is guessed.
    """
    import yaml

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    head, body = _split_frontmatter(text, where)
    try:
        frontmatter = yaml.load(head, Loader=loader)
    except yaml.YAMLError as exc:
        raise UsageError(f"{where} has a frontmatter that is not valid YAML: {exc}") from None
    if frontmatter is None:
        frontmatter = {}
    if not isinstance(frontmatter, dict):
        raise UsageError(f"{where} has a frontmatter that is not a mapping of fields")
    version = str(frontmatter.get("schema_version") or SCHEMA_VERSION)
    if version not in KNOWN_SCHEMA_VERSIONS:
        raise EngramError(
            f"Unsupported schema version: {version} in {where} "
            f"(this engram reads {', '.join(KNOWN_SCHEMA_VERSIONS)})",
            hint="upgrade engram to read digests written by a newer version",
        )
    frontmatter = {**frontmatter, "schema_version": version}
    stamp = frontmatter.get("timestamp")
    if isinstance(stamp, datetime.datetime):
        # An unquoted ISO time is a YAML timestamp: give it back as the seed's string.
        moment = stamp if stamp.tzinfo else stamp.replace(tzinfo=datetime.UTC)
        frontmatter["timestamp"] = iso_millis(moment.timestamp())
    if _HEADING.search(body) is None and body.strip():
        try:
            old = yaml.load(body.strip().removesuffix("...").strip(), Loader=loader)
        except yaml.YAMLError:
            old = None
        if isinstance(old, dict) and any(key in old for key in SECTION_TITLES):
            return Digest(
                path=Path(where), frontmatter=frontmatter, sections=_from_engram_yaml(old)
            )
    return Digest(path=Path(where), frontmatter=frontmatter, sections=_parse_body(body))


def read_digest(path: str | Path) -> Digest:
    file_path = Path(path)
    try:
        text = file_path.read_text(encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"cannot read digest {file_path}: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise UsageError(f"digest {file_path} is not UTF-8 text") from None
    digest = parse_digest(text, where=str(file_path))
    return Digest(path=file_path, frontmatter=digest.frontmatter, sections=digest.sections)


def due(
    store: Store, session_id: str, interval_minutes: float, *, now: float | None = None
) -> bool:
    """True when the session has gone `interval_minutes` without a digest (the timer path)."""
    if interval_minutes <= 0:
        return False
    ts = clock.now() if now is None else now
    row = store.query_one(
        "SELECT started_at, last_digest_at FROM agent_sessions WHERE session_id = ? AND ended_at IS NULL",
        (session_id,),
    )
    if row is None:
        return False
    since = row["last_digest_at"] if row["last_digest_at"] is not None else row["started_at"]
    return ts - float(since) >= interval_minutes * 60
