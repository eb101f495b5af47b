"""The public corpus: secrets and ordinary strings from other projects' rule examples.

`public_secret_corpus.jsonl` (built by `scripts/build_public_secret_corpus.py`, which says
where each line comes from) holds secrets from the examples of the public rule sets of
kingfisher and noseyparker (Apache-2.0) and engram's own cases of secrets given to commands
and config files; ordinary strings from those rule sets' negative examples, gitleaks' generic
false-positive vectors (MIT) and engram's own list of strings that only look secret. A third of
the kinds is held out (`split == "holdout"`): it was set aside before the detectors were tuned
on the rest, and its figures are the ones docs/secrets.md reports.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

PATH = Path(__file__).with_name("public_secret_corpus.jsonl")
# The second corpus, from sources the first never used (gitleaks' rule tests, MIT; secretlint's
# snapshots, MIT; detect-secrets' plugin tests, Apache-2.0; lookalikes made from real files): built by
# `scripts/build_public_secret_corpus_b.py`. Its `negative` lines (the scanners' own negative
# examples, mostly keys with one thing wrong) are reported apart from ordinary strings.
PATH_B = Path(__file__).with_name("public_secret_corpus_b.jsonl")
# The third, all of it held out: new public examples (whispers' fixtures, Apache-2.0; ripsecrets'
# and ggshield's tests, MIT) and tokens of documented formats and passwords made here, in the
# contexts an agent shows them in, with ordinary strings from real material; built by
# `scripts/build_public_secret_corpus_c.py`. Measured, never read case by case.
PATH_C = Path(__file__).with_name("public_secret_corpus_c.jsonl")
# The fourth, all of it held out, built while the detector changed by someone who never read it:
# trivy's secret-scanner tests and 2ms' rule tests (Apache-2.0), passwords and tokens made here in
# 193 agents' contexts, ordinary strings from real material (lock files, digests, routes, tool
# output) and placeholders; built by `scripts/build_public_secret_corpus_d.py`. Each line has a
# `license` field. Measured by family only (`scripts/measure_redaction.py --corpus-d`).
PATH_D = Path(__file__).with_name("public_secret_corpus_d.jsonl")
# The fifth, all of it held out, built apart from the detector like D but from other sources:
# Microsoft's security-utilities key formats (MIT), git-secrets' AWS patterns (Apache-2.0),
# talisman's tests (MIT), earlybird's rule examples (Apache-2.0), deepfence's test keys (MIT),
# and secrets made here in ~300 agents' contexts, with ordinary strings from real tool output;
# built by `scripts/build_public_secret_corpus_e.py`. Measured by family only
# (`scripts/measure_redaction.py --corpus-e`).
PATH_E = Path(__file__).with_name("public_secret_corpus_e.jsonl")
# The sixth, all of it held out, built apart from the detector from sources none of A to E used:
# gosec's G101 samples and bandit's B105-B107 examples (Apache-2.0), CodeQL's hard-coded
# credentials tests (MIT), and tokens of 142 formats, passwords and keys made here in agents'
# contexts (HTTP exchanges, CI, Kubernetes, Terraform, notebooks, stack traces, diffs), with
# ordinary strings from real material; built by `scripts/build_public_secret_corpus_f.py`.
# Measured by family only (`scripts/measure_redaction.py --corpus-f`).
PATH_F = Path(__file__).with_name("public_secret_corpus_f.jsonl")
# The seventh, all of it held out and measured once (on the merged detector of 2026-11-28), built
# apart from the detector from sources none of A to F used: CredSweeper's samples with its
# expected findings (MIT), betterleaks' examples for the formats gitleaks has no rule for (MIT),
# checkov's labelled secrets sanity files (Apache-2.0), and tokens and passwords made here in
# database shells, cloud CLIs, package managers' config, IDE run configs, systemd, SQL dumps,
# framework logs, fixtures and prompts in 18 languages, with ordinary strings from real material;
# built by `scripts/build_public_secret_corpus_g.py`. Measured by family only
# (`scripts/measure_redaction.py --corpus-g`).
PATH_G = Path(__file__).with_name("public_secret_corpus_g.jsonl")


def corpus_e_split(rows: list[dict[str, str]]) -> dict[tuple[str, str], str]:
    """The split of corpus E (and, the same way, of corpus F), fixed after its second
    measurement and before anyone worked from it: within each type and family (the kind's prefix: `cmd`, `cfg`, `token`, `msu`,
    `placeholder`...), the kinds ordered by the SHA-256 of their name, every third one from the
    first held out. Stratified, so that the held-out third has commands, config files, tokens
    and placeholders in the proportions of the whole; by kind, so that no held-out kind has a
    case among the tuned ones. Returns {(type, kind): "holdout" or "tune"}."""
    families: dict[tuple[str, str], set[str]] = {}
    for row in rows:
        families.setdefault((row["type"], row["kind"].split("-")[0]), set()).add(row["kind"])
    split = {}
    for (type_, _), kinds in families.items():
        ordered = sorted(kinds, key=lambda k: hashlib.sha256(k.encode()).hexdigest())
        for index, kind in enumerate(ordered):
            split[(type_, kind)] = "holdout" if index % 3 == 0 else "tune"
    return split


class Case(NamedTuple):
    type: str  # "secret", "ordinary" or (corpus B) "negative"
    split: str  # "holdout" or "tune"
    kind: str
    rule: str
    source: str
    text: str
    secret: str  # "" for an ordinary string


def load(path: Path = PATH) -> list[Case]:
    cases = []
    for line in path.read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        cases.append(
            Case(
                row["type"],
                row["split"],
                row["kind"],
                row["rule"],
                row["source"],
                row["text"],
                row.get("secret", ""),
            )
        )
    return cases


def leaked(secret: str, out: str) -> bool:
    """Whether any of `secret` survived: the whole, or either half of a long one (a detector
    that stops halfway through a token leaves the rest readable)."""
    if secret in out:
        return True
    if len(secret) < 16:
        return False
    half = len(secret) // 2
    return secret[:half] in out or secret[half:] in out


class Figures(NamedTuple):
    secrets: int
    caught: int
    ordinary: int
    changed: int
    missed: list[Case]
    mangled: list[Case]


def measure(cases: list[Case], redact: Callable[[str], str]) -> Figures:
    missed = [c for c in cases if c.type == "secret" and leaked(c.secret, redact(c.text))]
    mangled = [c for c in cases if c.type == "ordinary" and redact(c.text) != c.text]
    n_secrets = sum(1 for c in cases if c.type == "secret")
    n_ordinary = sum(1 for c in cases if c.type == "ordinary")
    return Figures(n_secrets, n_secrets - len(missed), n_ordinary, len(mangled), missed, mangled)


# The well-formedness checks corpora E to G share (tests/core/test_public_corpus_{e,f,g}.py): a
# held-out corpus is only worth its figure if every line says what it is, where it comes from
# and under which license, and if its secrets are really in its texts.
CORPUS_LICENSES = {
    "MIT", "Apache-2.0", "BSD-3-Clause", "made here", "real output", "real text", "MIT (engram)",
}  # fmt: skip


def check_lines_say_what_they_are(rows: list[dict[str, str]], public: tuple[str, ...]) -> None:
    for row in rows:
        assert row["type"] in {"secret", "ordinary", "negative"}, row
        assert row["split"] in {"holdout", "tune"}, row
        assert row["kind"] and row["source"] and row["context"] and row["text"], row
        assert row["license"] in CORPUS_LICENSES, row
        if row["source"].startswith(public):
            # a public source is named with its commit and the file the line comes from
            assert re.match(r"^[\w.-]+/[\w.-]+@[0-9a-f]{12}:\S", row["source"]), row
            assert row["license"] in {"MIT", "Apache-2.0"}, row


def check_secrets_are_in_their_texts(cases: list[Case]) -> None:
    secrets = [c for c in cases if c.type == "secret"]
    for case in secrets:
        assert case.secret and case.secret in case.text, case
    assert all(not c.secret for c in cases if c.type != "secret")
    # No ordinary string carries one of the corpus' own secrets: a case counted as a change
    # must be one where nothing needed hiding.
    long_secrets = {c.secret for c in secrets if len(c.secret) >= 12}
    for case in cases:
        if case.type == "ordinary":
            assert not any(s in case.text for s in long_secrets), case


def check_split_follows_the_rule(rows: list[dict[str, str]]) -> None:
    # The split was fixed once, by kind, before the detector was worked on from the rest: a
    # line whose split no longer follows the rule would move a case between the figures.
    split = corpus_e_split(rows)
    assert all(row["split"] == split[(row["type"], row["kind"])] for row in rows)
    held = {r["kind"] for r in rows if r["type"] == "secret" and r["split"] == "holdout"}
    tuned = {r["kind"] for r in rows if r["type"] == "secret" and r["split"] == "tune"}
    assert held and not held & tuned
    assert len(held) * 3 >= len(held | tuned) - 12  # a third of each family
