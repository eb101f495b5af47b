"""Redaction on secrets and ordinary strings it was not written from.

The corpus (`public_secret_corpus.jsonl`, see `public_secret_corpus.py`) holds the examples
of two public rule sets and engram's own cases of secrets given to commands and config
files; a third of its kinds was held out before the detectors were tuned on the rest. The
figures are printed by `scripts/measure_redaction.py` and reported in docs/secrets.md. The
thresholds here are the figures this version reaches (a regression guard), not the goal.
"""

from __future__ import annotations

import base64
import json
import random
import re
import string

import pytest

from memory_core.redact import redact
from tests.core.public_secret_corpus import PATH_B, PATH_C, PATH_D, load, measure
from tests.core.redaction_state import redaction_computed_afresh  # noqa: F401

CASES = load()
_rng = random.Random(20261127)
ALNUM = string.ascii_letters + string.digits


def r(alphabet: str, n: int) -> str:
    return "".join(_rng.choice(alphabet) for _ in range(n))


def test_the_corpus_is_large_sourced_and_a_third_of_its_kinds_is_held_out() -> None:
    secrets = [c for c in CASES if c.type == "secret"]
    kinds = {c.kind for c in secrets}
    held = {c.kind for c in secrets if c.split == "holdout"}
    assert len(secrets) >= 1000 and len(kinds) >= 600
    assert 0.28 <= len(held) / len(kinds) <= 0.38
    assert sum(c.type == "ordinary" for c in CASES) >= 150
    # Every line names where it comes from: a rule file at a commit, or engram's own cases.
    assert all(
        ("@" in c.source and ":" in c.source) or c.source.startswith("engram") for c in CASES
    )
    # A kind is wholly on one side.
    assert not {c.kind for c in secrets if c.split == "tune"} & held


@pytest.mark.parametrize("split", ["holdout", "tune"])
def test_figures_on_each_part_of_the_corpus(split: str) -> None:
    figures = measure([c for c in CASES if c.split == split], redact)
    caught = figures.caught / figures.secrets
    changed = figures.changed / figures.ordinary
    floor = {"holdout": (0.85, 0.13), "tune": (0.90, 0.05)}[split]
    assert caught >= floor[0], (split, caught)
    assert changed <= floor[1], (split, changed)


PASSWORD = "Kiwi^" + r(string.digits, 4) + "`x$"


@pytest.mark.parametrize(
    ("text", "secret"),
    [
        # Passwords given as arguments of well-known commands.
        (f"docker login -u deploy -p {PASSWORD} registry.example.com", PASSWORD),
        (f"PsExec.exe \\\\fileserver01 -u CORP\\admin -p {PASSWORD} cmd.exe", PASSWORD),
        (f"Connect-VIServer vc01 -User administrator -Password '{PASSWORD}'", PASSWORD),
        (f'var cred = new NetworkCredential("svc_backup", "{PASSWORD}", "CORP");', PASSWORD),
        (f"vault login --token={PASSWORD}", PASSWORD),
        ("aws configure set aws_secret_access_key " + (v := r(ALNUM + "+/", 40)), v),
        # Config files.
        (f"machine api.heroku.com\n  login me@example.com\n  password {PASSWORD}\n", PASSWORD),
        (
            f'<appSettings>\n  <add key="SmtpPassword" value="{PASSWORD}" />\n</appSettings>',
            PASSWORD,
        ),
        (f'new Dictionary<string, string> {{ {{ "DbPassword", "{PASSWORD}" }} }}', PASSWORD),
        (f"<password>{PASSWORD}</password>", PASSWORD),
        ('env:\n  global:\n    - secure: "' + (v2 := r(ALNUM + "+/", 340)) + '"\n', v2),
        ("WEATHER_API_KEY=" + (v3 := r(string.digits, 12)), v3),
        (f'if password == "{PASSWORD}":', PASSWORD),
        # Split across lines the way a shell command is: the value after a continuation.
        (f"export DB_PASSWORD=\\\n    {PASSWORD}", PASSWORD),
        # A URL's whole password, even with a token inside it.
        (
            "https://deploy:" + (v4 := PASSWORD + "ghp_" + r(ALNUM, 36)) + "@github.com/a/b.git",
            v4,
        ),
        # Formats the issue found leaking.
        (
            "https://discord.com/api/webhooks/" + (v5 := r(string.digits, 18) + "/" + r(ALNUM, 68)),
            v5,
        ),
        (
            "nuget push app.nupkg -k "
            + (v6 := "oy2" + r(string.ascii_lowercase + string.digits, 43)),
            v6,
        ),
        ("cargo login " + (v7 := "cio" + r(ALNUM, 32)), v7),
        ("IO_KEY = " + (v8 := "aio_" + r(ALNUM, 28)), v8),
        ("sonar-scanner -Dsonar.token=" + (v9 := "squ_" + r("0123456789abcdef", 40)), v9),
        ("DOCKER_TOKEN " + (v10 := "dckr_oat_" + r(ALNUM, 32)), v10),
        ("ALIBABA " + (v11 := "LTAI" + r(ALNUM, 20)), v11),
        (
            "tailscale up --authkey " + (v12 := "tskey-auth-" + r(ALNUM, 12) + "-" + r(ALNUM, 30)),
            v12,
        ),
        (
            "url: https://outlook.office.com/webhook/"
            + (
                v13
                := f"{r('0123456789abcdef', 8)}-{r('0123456789abcdef', 4)}@{r('0123456789abcdef', 8)}/IncomingWebhook/{r('0123456789abcdef', 32)}"
            ),
            v13,
        ),
        # A key of a provider engram has no rule for, in the shapes keys are issued in.
        ("the deploy fails with " + (v14 := "acme_live_" + r(ALNUM, 32)), v14),
        ("coinlayerKEY=" + (v15 := r(ALNUM, 32)), v15),
        ("bitbar TOKEN " + (v16 := r(ALNUM, 32)), v16),
    ],
)
def test_secrets_the_issue_found_leaking_are_hidden(text: str, secret: str) -> None:
    out = redact(text)
    assert secret not in out, out
    half = len(secret) // 2
    assert secret[:half] not in out and secret[half:] not in out, out


THINKING_SIGNATURE = (
    "EqQBCkYIBxgCKkA" + base64.b64encode(bytes(_rng.randrange(256) for _ in range(240))).decode()
)


@pytest.mark.parametrize(
    "text",
    [
        "passwordField.sendKeys(username)",
        "const resetPasswordRoute = '/account/reset-password';",
        'this.addPassword = "#add-password";',
        "document.querySelector('#api-key-input').value = ''",
        "See https://docs.github.com/en/authentication/keeping-your-account-and-data-secure/creating-a-personal-access-token",
        'IAMUserChangePassword = "arn:aws:iam::aws:policy/IAMUserChangePassword"',
        "redis-cli GET session:token:user:4821",
        '"hashed_secret": "513e0a36963ae1e8431c041b744679ee578b7c44",',
        "cache_key = 9b74c9897bac770ffc029102a200c5de",
        "from sklearn.model_selection import train_test_split  # sk-learn",
        f'{{"type": "thinking", "thinking": "Let me check.", "signature": "{THINKING_SIGNATURE}"}}',
        "commit 8f2d6a1c4b7e9d0f3a5c6b8e1d2f4a7c9b0e3d5f",
        "request_id=3f1c9a2e-7b4d-4e8f-9a6c-2d5b8e1f0a7c",
        "Digest: sha256:a3ed95caeb02ffe68cdd9fd84406680ae93d633cb16422d00e8a7c22955b46d4",
        "exports.X509KeyUsageExtension = X509KeyUsageExtension;",
        "The --username and --password options can't be used for this",
        "readonly STENCIL_PASS_DEPTH_PASS: 0x0B96;",
        "--- PASS: TestRedactKeepsIdentifiers (0.00s)",
        'if token == "lambda":',
    ],
)
def test_strings_that_only_look_secret_are_left_alone(text: str) -> None:
    assert redact(text) == text


# The second corpus: gitleaks' rule tests, secretlint's snapshots, detect-secrets' plugin tests
# and lookalikes made from real files, never used before its first measurement.
CASES_B = load(PATH_B)


def test_the_second_corpus_is_sourced_and_a_third_is_held_out() -> None:
    secrets = [c for c in CASES_B if c.type == "secret"]
    kinds = {c.kind for c in secrets}
    held = {c.kind for c in secrets if c.split == "holdout"}
    assert len(secrets) >= 600 and len(kinds) >= 150
    assert 0.28 <= len(held) / len(kinds) <= 0.40
    assert sum(c.type == "ordinary" for c in CASES_B) >= 400
    assert all(
        ("@" in c.source and ":" in c.source) or c.source.startswith("made") for c in CASES_B
    )
    assert not {c.kind for c in secrets if c.split == "tune"} & held
    # No kind of the first corpus's held-out third decides this one's split: a salted hash.
    assert {c.split for c in CASES_B} == {"holdout", "tune"}


@pytest.mark.parametrize("split", ["holdout", "tune"])
def test_figures_on_each_part_of_the_second_corpus(split: str) -> None:
    figures = measure([c for c in CASES_B if c.split == split], redact)
    caught = figures.caught / figures.secrets
    changed = figures.changed / figures.ordinary
    floor = {"holdout": (0.88, 0.015), "tune": (0.96, 0.005)}[split]
    assert caught >= floor[0], (split, caught)
    assert changed <= floor[1], (split, changed)


GHP = "ghp_" + r(ALNUM, 36)
SK_ANT = "sk-ant-api03-" + r(ALNUM, 40)


@pytest.mark.parametrize(
    ("text", "secret"),
    [
        # String literals joined across a line, in the languages that do it.
        (f'const token = "{GHP[:20]}" +\n  "{GHP[20:]}";', GHP),
        (f'String k = "{GHP[:17]}"\n    + "{GHP[17:]}";', GHP),
        (f'client = Client(\n    "{SK_ANT[:30]}"\n    "{SK_ANT[30:]}"\n)', SK_ANT),
        (f'x = "{GHP[:12]}" +\n "{GHP[12:26]}" +\n "{GHP[26:]}"', GHP),
        # A key wrapped at the end of a long line of a tool's output.
        (
            f"  ✓ Logged in to github.com account octo (keyring) - Token: {GHP[:22]}\n{GHP[22:]}\n",
            GHP,
        ),
        (
            "INFO 2026-01-02 worker: configured the upstream with "
            f"{SK_ANT[:25]}\n{SK_ANT[25:]} and retries 3",
            SK_ANT,
        ),
        # Printed in two halves, each alone on its line.
        (
            "Your new key (copy it now, it is shown once):\n  "
            + (HALVES := "k7Qm2xW9pL4vT8nR3bY6" + "hZcDfGjKsMqVwXeAtUoN")[:20]
            + "\n  "
            + HALVES[20:]
            + "\n",
            HALVES,
        ),
    ],
)
def test_a_secret_written_in_two_pieces_on_two_lines_is_hidden(text: str, secret: str) -> None:
    out = redact(text)
    for piece in (secret[:12], secret[12:24], secret[-12:]):
        assert piece not in out, out


@pytest.mark.parametrize(
    "text",
    [
        'message = "Loading the configuration" +\n    " from disk"',
        'url = ("https://example.org/api/v2/"\n       "projects/members")',
        "The quick brown fox jumps over the lazy dog and keeps running far away\nfrom here",
        'sql = "SELECT id, name FROM users " +\n  "WHERE created_at > NOW()"',
        "[2026-05-11 09:12:44] compiled 1432 modules in 2.3 s, wrote build/app-bundle.js\n"
        "build/app-bundle.js.map written",
        "Modules:\n  ObjectMapperConfiguration\n  SerializationFeature\n",
        "commits:\n  8f2d6a1c4b7e9d0f3a5c6b8e1d2f4a7c9b0e3d5f\n  3a5c6b8e1d2f\n",
    ],
)
def test_ordinary_text_over_two_lines_is_left_alone(text: str) -> None:
    assert redact(text) == text


DJANGO_KEY = "django-insecure-" + r(string.ascii_lowercase + string.digits + "!@#$%^&*(-_=+)", 50)
DEFAULT = r(ALNUM + "!@#%&*", 40)


@pytest.mark.parametrize(
    ("text", "secret"),
    [
        # Django's generated key, with the `(`, `%` and `^` of its alphabet.
        (f"SECRET_KEY = '{DJANGO_KEY}'", DJANGO_KEY),
        (f"the settings still say {DJANGO_KEY} in production", DJANGO_KEY),
        # A secret as the default of an environment lookup.
        (f"SECRET_KEY = os.environ.get('DJANGO_SECRET_KEY', '{DEFAULT}')", DEFAULT),
        (f'API_TOKEN = os.getenv("API_TOKEN", "{DEFAULT}")', DEFAULT),
        (f"SECRET_KEY = env('SECRET_KEY', default='{DEFAULT}')", DEFAULT),
        # A quoted literal with a bracket in it is a literal, not a call.
        (f'DB_PASSWORD = "{(pw := "Tr0ub4dor(&3" + r(ALNUM, 6))}"', pw),
    ],
)
def test_secrets_of_settings_files_are_hidden(text: str, secret: str) -> None:
    assert secret not in redact(text)


@pytest.mark.parametrize(
    "text",
    [
        'HOME = os.environ.get("HOME", "/root")',
        'TOKEN_URL = env("TOKEN_URL", default="https://example.org/oauth/token")',
        "password = get_password(user)",
        'token = os.getenv("API_TOKEN", "")',
        'db_password = "$(cat /run/secrets/db)"',
    ],
)
def test_environment_lookups_and_calls_are_left_alone(text: str) -> None:
    assert redact(text) == text


def test_the_third_corpus_is_new_sourced_and_wholly_held_out() -> None:
    # Corpus C (docs/secrets.md): its figures are measured by `scripts/measure_redaction.py
    # --corpus-c` on the final code, not asserted here, so that no test run shows which of its
    # cases a detector misses. What is checked is that it is what the docs say it is.
    rows = [json.loads(line) for line in PATH_C.read_text(encoding="utf-8").splitlines()]
    secrets = [r for r in rows if r["type"] == "secret"]
    assert len(secrets) >= 500 and len({r["kind"] for r in secrets}) >= 150
    assert sum(r["type"] == "ordinary" for r in rows) >= 300
    assert {r["split"] for r in rows} == {"holdout"}
    # Every secret lies in its text; every line says where it comes from, under which license.
    assert all(r["secret"] and r["secret"] in r["text"] for r in secrets)
    licensed = ("(Apache-2.0)", "(MIT)")
    for r in rows:
        source = r["source"]
        assert source.endswith(licensed) or not source.startswith(
            ("Skyscanner/", "sirwart/", "GitGuardian/")
        ), source
    # None of corpus A's or B's sources.
    assert not any(
        name in r["source"]
        for r in rows
        for name in ("gitleaks", "noseyparker", "kingfisher", "secretlint", "detect-secrets")
    )


def test_the_fourth_corpus_is_independent_sourced_licensed_and_wholly_held_out() -> None:
    # Corpus D (docs/secrets.md): built while the detector changed, by someone who never read it;
    # like C, its figures are measured by `scripts/measure_redaction.py --corpus-d`, never asserted
    # here. What is checked is that it is what the docs say it is.
    rows = [json.loads(line) for line in PATH_D.read_text(encoding="utf-8").splitlines()]
    secrets = [r for r in rows if r["type"] == "secret"]
    ordinary = [r for r in rows if r["type"] == "ordinary"]
    assert len(secrets) >= 300 and len({r["kind"] for r in secrets}) >= 100
    assert len(ordinary) >= 200
    assert {r["split"] for r in rows} == {"holdout"}
    assert {r["type"] for r in rows} == {"secret", "ordinary", "negative"}
    assert all(r["secret"] and r["secret"] in r["text"] for r in secrets)
    # Every line says where it comes from, under which license, and in what context.
    assert all(r["source"] and r["context"] and r["license"] for r in rows)
    by_repo = {"aquasecurity/trivy": "Apache-2.0", "Checkmarx/2ms": "Apache-2.0"}
    for r in rows:
        repo = r["source"].split("@")[0]
        if repo in by_repo:
            assert r["license"] == by_repo[repo], r["source"]
    assert {r["license"] for r in rows} <= {
        "Apache-2.0",
        "MIT",
        "PSF-2.0",
        "made here",
        "real output of tools run here",
    }
    # Secrets from both public sources and from the agents' contexts made here.
    sources = {r["source"].split("@")[0] for r in secrets}
    assert {"aquasecurity/trivy", "Checkmarx/2ms", "made for this corpus"} <= sources
    # None of corpora A's, B's or C's sources.
    used = (
        "gitleaks",
        "noseyparker",
        "kingfisher",
        "trufflehog",
        "secretlint",
        "semgrep",
        "detect-secrets",
        "ggshield",
        "whispers",
        "ripsecrets",
    )
    assert not any(name in r["source"].lower() for r in rows for name in used)


def spread_digits(n: int) -> str:
    while True:
        value = r(ALNUM, n)
        if len(re.findall(r"\d+", value)) >= 2:
            return value


def test_the_generated_cases_above_hold_for_many_values_not_only_their_seed() -> None:
    # The cases above are generated once, at import; these shapes held for one value and missed
    # others (a first piece that was a token by itself, random letters read as words).
    for _ in range(200):
        key = "sk-ant-api03-" + r(ALNUM, 40)
        # A key of an unknown provider is told from a name by its digits spread through it
        # (docs/secrets.md): letters alone, or one number among them, read as a name.
        live = "acme_live_" + spread_digits(32)
        for text, secret in (
            (f'client = Client(\n    "{key[:30]}"\n    "{key[30:]}"\n)', key),
            (
                f"INFO 2026-01-02 worker: configured the upstream with {key[:25]}\n"
                f"{key[25:]} and retries 3",
                key,
            ),
            (f"the deploy fails with {live}", live),
        ):
            out = redact(text)
            for piece in (secret[:12], secret[12:24], secret[-12:]):
                assert piece not in out, (text, out)
