r"""Build tests/core/public_secret_corpus_g.jsonl: a seventh corpus, all of it held out.

Corpus G measures engram's redaction on data its detector never saw (issue 29, "on new public
examples"), once, at the end of the night, on the merged detector. It was built by someone who did
not read the detector (`memory_core/redact.py`, `memory_core/guard_search.py`,
`memory_core/secret_providers.py`, `memory_core/secret_words.py`, `memory_core/privacy.py`), its
tests, nor any line of corpora A to F, and who ran no case through engram while building it: the
rules below were written first, then the file was built and committed, unmeasured.

Run with copies of the sources under one folder (any Python 3.11 with `openssl`, `ssh-keygen`,
`gpg`, `git`, `sha256sum` and `base64` on the PATH; not part of engram):

    python scripts/build_public_secret_corpus_g.py --sources /tmp/g_src
    # /tmp/g_src/credsweeper  `git archive` of Samsung/CredSweeper: tests/samples, tests/data,
    #                         LICENSE (its commit in credsweeper/.commit)
    # /tmp/g_src/checkov      `git archive` of bridgecrewio/checkov: tests/secrets, LICENSE,
    #                         the two secrets docs, Pipfile.lock, tests/sca_package_2/examples/
    #                         go.sum and package-lock.json (its commit in checkov/.commit)
    # /tmp/g_src/betterleaks  `git archive` of betterleaks/betterleaks: cmd/generate/config/rules,
    #                         LICENSE (its commit in betterleaks/.commit)
    # /tmp/g_src/gitleaks     `git archive` of gitleaks/gitleaks: cmd/generate/config/rules, read
    #                         only to leave out what betterleaks shares with it
    # /tmp/g_src/real         real files copied from this machine (see `real_cases`): Go 1.19's
    #                         go.sum files (BSD-3-Clause), source-map's minified JS and source map
    #                         (BSD-3-Clause), opentype.js's minified JS (MIT), xterm.css (MIT),
    #                         engram's client-vscode/package-lock.json and icon.png (MIT), four
    #                         public CA certificates (/etc/ssl/certs), `npm ls --depth=2` and the
    #                         npm install log of code-server installed on this machine

Public sources none of corpora A to F used (each line names its source, commit and file, and has
a `license`):
- Samsung/CredSweeper (MIT), `tests/samples/*` with the scanner's expected findings
  `tests/data/output.json` (its full run, machine-learning filter on) and
  `tests/data/no_filters_no_ml.json` (every candidate, no filter): the line a finding is on, as the
  scanner reports it, is the case's text and the finding's value its secret.
- bridgecrewio/checkov (Apache-2.0), `tests/secrets/sanity/`: its labelled true positives
  (`secrets/true_positive.json`), true negatives (`non_secrets/true_negative.json`, Norwegian UI
  strings naming passwords) and its false-positive regression files (`iac_fp/`, `non_iac_fp/`);
  lines of its secrets documentation give ordinary strings.
- betterleaks/betterleaks (MIT), `cmd/generate/config/rules/*.go`: the positive (`tps`) and
  negative (`fps`) examples of the 125 rule files gitleaks does not have (gitleaks' rule tests
  were corpus B's); an example found anywhere in gitleaks' rule files is left out, and examples
  drawn at random by the rule generator are not used. The credential of a positive example is
  its URL password, else its longest token-like run that is not a name being assigned.
- Samsung/CredData (real lines from open-source repositories, labelled) was NOT used: its data
  must be downloaded from thousands of repositories under their own licenses, and its values are
  obfuscated per line; nothing of it is copied or derived here.
- Checkmarx/kics was NOT used (its repository is too large to fetch here); microsoft/DevSkim's
  secrets rule tests were not used either (two dummies such as `121212...`).

Made here, in contexts an agent shows and corpus F did not emphasise: tokens of 113 documented
formats (real prefixes, lengths and alphabets; GitHub's CRC32 checksum computed), each in two of
28 contexts (database shells: psql, mysql, redis-cli, mongosh; cloud CLIs: aws secretsmanager,
gcloud, az keyvault, doctl, flyctl; package managers' config: pip.conf, gradle.properties, maven
settings.xml, composer auth.json, .yarnrc.yml, bundler, cargo; IDE run configs: .vscode/launch.json,
IntelliJ workspace.xml; systemd units and journal lines; `docker inspect`; SQL dumps; YAML
anchors; READMEs; settings printed by Django, Rails, Spring Boot's actuator and an Express debug
log); passwords from eight generators given to 50 commands, written in 40 config files and
printed by 24 tool outputs (database shells' logs, cloud CLIs' JSON, package managers' errors);
test fixtures in 18 languages; chat prompts in 18 languages. Ordinary strings come from real
material (lock files, go.sum, minified JS, source maps, CSS, `openssl x509 -text` of public CA
certificates, `sha256sum`, base64 of a real file, `git log`, `pip list`), public key material
made here (SSH public keys and fingerprints, a JWKS, SAML metadata, a PGP public key and
signature, a signed git tag and commit), tool output in the secrets' contexts that holds none
(`\conninfo`, `aws configure list`, `gh auth status`, `fly secrets list`...) and placeholders.

Rules fixed before anything was built (and never changed after a look at a figure; no figure was
taken):
- A value a public source flags is a `secret` when it is at least 8 characters long and none of:
  a placeholder (`<...>`, `${...}`, `{{...}}`, `$VAR`, `xxxx`, `***`, `...`), a value naming its
  role or nature (it contains `password`, `passwd`, `secret`, `token`, `key`, `example`,
  `sample`, `test`, `dummy`, `fake`, `changeme`, `change_me`), an alphabet or digit run, or a
  common password. In a short value (at most 48 characters after a token prefix, no base64
  JSON) the role's name counts in leetspeak too (`SqLpa5sW0rD`, `g1re0g1T0keN`) and so does a
  made-up word said twice (`gireogigireogi`) and so do six letters or digits of a run
  interleaved with the other (`a1b2c3d4e5f6`); a run counts at the start of a value
  (`1234567890123...`), and twelve zeros make a dummy. Otherwise it is a `negative` (reported apart, never
  counted). Keys public by design (`pk_live_`, `pk_test_`, `phc_`, `pk.ey`) are negatives. A documented
  token prefix holding one of those words (`AGE-SECRET-KEY-1`, `dnkey-`, `SWMKEY-1-`, `key-`,
  `xkeysib-`, `secret_`, `tskey-`) is not a name: the rest of the value is judged.
- Identifiers that grant nothing alone are `negative` whatever the scanner says: UUIDs, bucket
  names, domains, app and client IDs, access key IDs (`AKIA...`, Alibaba `LTAI...`, Google client
  IDs, Twilio `AC...` and `SK...` SIDs, Salesforce `00D...` org IDs), salts, nonces. In a scanner's pair (ID then key) the key is the secret.
- A line its source marks as a false positive (a trailing `FP` / `fp` / `false` comment) is a
  `negative` even when the scanner flags it.
- At most eight CredSweeper findings per kind (rule, and sample file for generic rules), the
  first in its report order: a file repeating one value in forty phrasings is not forty formats.
- betterleaks: a rule's negative examples are `negative`; a rule reported only with its pair
  (`SkipReport`) is an ID, a name or a host, so its examples are `negative` unless the rule's
  name says it is the secret half.
- CredSweeper's candidates that its full run drops (in `no_filters_no_ml.json`, not in
  `output.json`) are `negative`. Lines of its negative sample files (`*_n`, `*_FALSE`,
  `false_positive`, `pass_filtered`, `*_fp`, `*_f`) that no stage flags are ordinary strings when
  the fixed filter `looks_secret` (below) finds nothing in them; the unflagged lines of its
  positive files are not used (they may be parts of a multi-line secret).
- checkov: a true-negative entry whose value is prose (has a space, or is one word of letters
  such as `Passord`) is an ordinary string; any other value (`Pa$$w0rd`, a high-entropy word) is
  a `negative` (the scanner keeps it, but it may be a dummy or a real credential).
- Placeholders made here in the secrets' own contexts (`<...>`, `${...}`, `$VAR`, `{{ ... }}`,
  `***`, `xxxx`, `YOUR_..._HERE`, `(sensitive value)`, `[FILTERED]`, `secretsmanager:` ARNs,
  `op://`, `vault:`) hold no secret: ordinary strings (family `placeholder-*`). Dictionary dummies
  (`changeme`, `admin`, `password123`) and keys public by design are `negative`.
- Public keys, certificates, fingerprints, digests, integrity hashes, lock-file checksums, commit
  hashes, UUIDs, ULIDs, PGP signatures, JWKS and OIDC discovery documents, SAML metadata are
  ordinary strings.
- Real material is sampled after `looks_secret` drops any line holding a value after a secret's
  name, a URL with a password or a private key; no ordinary string may hold one of the corpus'
  secrets.
- The secret of a case is what must not survive: the value, the whole token, or a middle line of
  a key block. A password made here for a URL's user info needs no percent-encoding (one that
  would is drawn again): a URL is not made malformed on purpose.

Every case is held out (`"split": "holdout"`): corpus G is measured once, never tuned on. A
rebuild draws new values; the committed file is the corpus.
"""

from __future__ import annotations

import argparse
import base64
import json
import random
import re
import string
import subprocess
import tempfile
import uuid
import zlib
from collections.abc import Callable
from pathlib import Path
from urllib.parse import quote

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "tests" / "core" / "public_secret_corpus_g.jsonl"
MADE = "made for this corpus"

rng = random.Random(2026112807)
rows: list[dict[str, str]] = []

UPPER = string.ascii_uppercase
LOWER = string.ascii_lowercase
DIGITS = string.digits
ALNUM = UPPER + LOWER + DIGITS
LOWNUM = LOWER + DIGITS
UPNUM = UPPER + DIGITS
HEX = "0123456789abcdef"
B64 = ALNUM + "+/"
B64URL = ALNUM + "-_"
BASE32 = UPPER + "234567"

COMMON_PASSWORDS = {
    "password", "admin", "root", "secret", "pass", "1234", "12345", "123456", "12345678",
    "qwerty", "letmein", "changeme", "password1", "password123", "welcome", "test", "guest",
    "default", "toor", "abc123", "iloveyou", "monkey", "dragon", "master", "changeit",
}  # fmt: skip
NAMES_ITSELF = (
    "password", "passwd", "secret", "token", "key", "example", "sample", "test", "dummy",
    "fake", "changeme", "change_me",
)  # fmt: skip


def r(alphabet: str, n: int) -> str:
    return "".join(rng.choice(alphabet) for _ in range(n))


def add(
    type_: str,
    kind: str,
    source: str,
    license_: str,
    context: str,
    text: str,
    secret: str = "",
    rule: str = "",
) -> None:
    if type_ == "secret":
        assert secret and secret in text, (kind, secret, text)
    else:
        secret = ""
    row = {
        "type": type_,
        "split": "holdout",
        "kind": kind,
        "rule": rule or kind,
        "source": source,
        "license": license_,
        "context": context,
        "text": text,
    }
    if type_ == "secret":
        row["secret"] = secret
    rows.append(row)


# Documented token prefixes that hold one of the words above (age, Defined Networking, Docker
# swarm, Brevo, Mailgun, Supabase, Notion, Tailscale): the rest of the value is what is judged.
FORMAT_PREFIXES = (
    "age-secret-key-1", "dnkey-", "swmkey-1-", "xkeysib-", "key-", "sb_secret_", "secret_",
    "tskey-auth-", "tskey-api-", "tskey-client-", "tskey-",
)  # fmt: skip


LEET = str.maketrans("013457$@", "oieastsa")
# Keys public by design (Stripe and Clerk publishable keys, PostHog project keys, Mapbox public
# tokens): whatever a scanner says, they are negatives.
PUBLIC_BY_DESIGN = re.compile(r"^(pk_(live|test)_|phc_|pk\.ey)")


def value_class(value: str) -> str:
    """The rule for a value a public source flags: `secret` or `negative` (see the docstring)."""
    low = value.lower().strip("\"'`")
    runs = ("abcdefghijklmnopqrstuvwxyz", "0123456789")
    if PUBLIC_BY_DESIGN.match(low):
        return "negative"
    for prefix in FORMAT_PREFIXES:  # a documented format's prefix does not name a dummy
        low = low.removeprefix(prefix)
    if len(low) < 8 or low in COMMON_PASSWORDS or any(w in low for w in NAMES_ITSELF):
        return "negative"
    # Short values only (not base64 or JWT payloads, where any letters occur by chance):
    # `SqLpa5sW0rD` and `g1re0g1T0keN` name themselves too, and a made-up word said twice
    # (`gireogigireogi`) is filler.
    body = re.sub(r"^[a-z0-9]{2,12}[-_.]", "", low)
    if len(body) <= 48 and "eyj" not in body:
        if any(w in body.translate(LEET) for w in NAMES_ITSELF):
            return "negative"
        words = re.findall(r"(?=([a-z]{6}))", body)
        if any(len(set(w)) >= 4 and words.count(w) > 1 for w in words):
            return "negative"
        # an alphabet or digit run interleaved with the other (`a1b2c3d4e5f6`, `k9l8m7n6o5`)
        letters, digits = re.sub(r"[^a-z]", "", body), re.sub(r"[^0-9]", "", body)
        if any(letters[i : i + 6] in runs[0] for i in range(len(letters) - 5)) or any(
            digits[i : i + 6] in runs[1] or digits[i : i + 6] in runs[1][::-1]
            for i in range(len(digits) - 5)
        ):
            return "negative"
    if re.search(r"x{4,}|0{12,}|\*{3,}|^<.*>$|\$\{|\{\{|\.\.\.|^\$[a-z_]+$", low):
        return "negative"
    if any(low in run or low[::-1] in run or low[:8] in run for run in runs):
        return "negative"
    return "secret"


SECRET_NAME = re.compile(
    r"(pass(word|wd|phrase)?|pwd|secret|token|api[_-]?key|apikey|private[_-]?key|credential|"
    r"auth|access[_-]?key|client[_-]?secret|bearer)",
    re.IGNORECASE,
)


def looks_secret(line: str) -> bool:
    """The fixed filter for real lines: a value after a secret's name, a URL with a password,
    a private key, or a long high-entropy word next to a secret's name."""
    if re.search(r"PRIVATE KEY|://[^/\s:@]+:[^/\s@]+@", line):
        return True
    for m in SECRET_NAME.finditer(line):
        after = line[m.end() : m.end() + 80]
        v = re.match(r"""[\w-]*["']?\s*[:=]+\s*["']?([^\s"',;]{6,})""", after)
        if v and not re.fullmatch(r"(true|false|null|none|\d{1,6})", v.group(1), re.I):
            return True
        if re.match(r"""[\w-]*["']?\s+["']?[A-Za-z0-9+/_\-.]{20,}""", after):
            return True
    return False


def slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", text.lower()).strip("_")


# --------------------------------------------------------------------------------------------
# Samsung/CredSweeper: samples with the scanner's expected findings

IDENTIFIER_RULES = {
    "UUID", "AWS S3 Bucket", "Firebase Domain", "Tencent WeChat API App ID", "Nonce", "Salt",
    "AWS Client ID", "Alibaba Access Key ID", "Square Client ID",
}  # fmt: skip
# Rules whose values are generic: the sample file (its language or format) names the case's kind.
GENERIC_RULES = {
    "Password", "SQL Password", "Token", "Key", "Secret", "Auth", "Credential", "API",
    "CMD Password", "CMD Token", "CMD Secret", "CURL Options", "URL Credentials",
}  # fmt: skip
# A sample file that repeats one value in 40 phrasings would weigh more than 40 formats: the
# first eight findings of a kind, in the scanner's report order, are kept.
PER_KIND = 8
NEGATIVE_FILES = re.compile(r"(_n(\.\w+)?|_FALSE|false_positive|pass_filtered|_fp|_f)$")
FP_MARK = re.compile(r"(#|//|--|-|/\*|\s)\s*(fp|false)\b\s*(\*/)?\s*$", re.IGNORECASE)


ID_VALUE = re.compile(
    r"^(AKIA|ASIA|AIDA|LTAI)[A-Z0-9]{12,}$|^\d{6,}-[a-z0-9]{20,}(\.apps\.googleusercontent\.com)?$"
    r"|^3MVG9[\w.]{40,}$|^(AC|SK)[0-9a-fA-F]{32}$|^00D[0-9A-Za-z]{12,15}$"
)


def is_identifier(item: dict[str, object]) -> bool:
    """An access key ID, a client or app ID: named so, or in an ID's documented format."""
    value = str(item["value"])
    variable = str(item.get("variable") or "")
    named = re.search(
        r"(?i)(client|app|account|access_?key)[_-]?id\W{0,4}" + re.escape(value), str(item["line"])
    )
    return bool(ID_VALUE.match(value) or re.search(r"(?i)_?id$", variable) or named)


def _commit(folder: Path) -> str:
    return (folder / ".commit").read_text().strip()[:12]


def _findings(path: Path) -> list[tuple[str, list[dict[str, object]]]]:
    return [(f["rule"], f["line_data_list"]) for f in json.loads(path.read_text())]


def credsweeper_cases(root: Path) -> None:
    commit = _commit(root)
    full = _findings(root / "tests/data/output.json")
    raw = _findings(root / "tests/data/no_filters_no_ml.json")

    def where(item: dict[str, object]) -> tuple[str, int]:
        return str(item["path"]).removeprefix("./"), int(str(item["line_num"]))

    kept_values = {(where(i), i["value"]) for _, items in full for i in items}
    flagged_lines = {where(i) for _, items in raw + full for i in items}
    per_kind: dict[tuple[str, str], int] = {}
    for rule, items in full:
        items = sorted(items, key=lambda i: int(str(i["line_num"])))
        path, _ = where(items[0])
        name = path.split("/")[-1]
        source = f"Samsung/CredSweeper@{commit}:{path}"
        kind = "credsweeper-" + slug(rule)
        if rule in GENERIC_RULES:
            kind += "-" + slug(name)
        lines: list[str] = []
        for item in items:
            if not lines or str(item["line"]) != lines[-1]:
                lines.append(str(item["line"]))
        text = "\n".join(lines).strip("\n")
        if len(text) > 4000:
            continue
        if len(items) > 2:  # a key block: its middle line must not survive
            secret = str(items[len(items) // 2]["value"]).strip("\"'\t +\\n")
        else:  # a pair: the key, not the ID
            secret = str(([i for i in items if not is_identifier(i)] or items)[-1]["value"])
        if not secret or secret not in text:
            continue
        type_ = value_class(secret)
        if (
            rule in IDENTIFIER_RULES
            or is_identifier({"value": secret, "line": text})
            or any(FP_MARK.search(line) for line in lines)
        ):
            type_ = "negative"
        per_kind[(type_, kind)] = per_kind.get((type_, kind), 0) + 1
        if per_kind[(type_, kind)] > PER_KIND:
            continue
        add(type_, kind, source, "MIT", f"credsweeper sample {name}", text, secret, rule)
    # Candidates the full run drops: reported apart.
    for rule, items in raw:
        for item in items:
            path, _ = where(item)
            if (where(item), item["value"]) in kept_values:
                continue
            text = str(item["line"]).strip()
            if not text or len(text) > 2000:
                continue
            source = f"Samsung/CredSweeper@{commit}:{path}"
            add("negative", "credsweeper-" + slug(rule), source, "MIT", "candidate dropped", text)
    # Ordinary lines of its negative sample files that no stage flags.
    for sample in sorted((root / "tests/samples").iterdir()):
        if not sample.is_file() or not NEGATIVE_FILES.search(sample.name):
            continue
        try:
            content = sample.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue
        path = f"tests/samples/{sample.name}"
        for number, line in enumerate(content.splitlines(), start=1):
            text = line.strip()
            if len(text) < 8 or (path, number) in flagged_lines or looks_secret(text):
                continue
            source = f"Samsung/CredSweeper@{commit}:{path}"
            add("ordinary", "credsweeper-unflagged", source, "MIT", "negative sample", text)


# --------------------------------------------------------------------------------------------
# bridgecrewio/checkov: labelled sanity files and docs


def checkov_cases(root: Path) -> None:
    commit = _commit(root)
    base = "tests/secrets/sanity"
    for rel, positive in (
        ("secrets/true_positive.json", True),
        ("non_secrets/true_negative.json", False),
    ):
        source = f"bridgecrewio/checkov@{commit}:{base}/{rel}"
        for line in (root / base / rel).read_text(encoding="utf-8").splitlines():
            m = re.match(r'\s*"([^"]+)":\s*"(.*)",?$', line)
            if not m:
                continue
            name, value = m.groups()
            text = line.strip().rstrip(",")
            if positive:
                add(value_class(value), "checkov-" + slug(name), source, "Apache-2.0",
                    "json", text, value)  # fmt: skip
            elif " " in value or re.fullmatch(r"[^\W\d_]+[:.!]?", value):
                add("ordinary", "checkov-true-negative", source, "Apache-2.0", "json", text)
            else:
                add("negative", "checkov-true-negative", source, "Apache-2.0", "json", text)
    for rel in ("iac_fp/main.tf", "iac_fp/main.json", "non_iac_fp/a.py"):
        source = f"bridgecrewio/checkov@{commit}:{base}/{rel}"
        for line in (root / base / rel).read_text(encoding="utf-8").splitlines():
            text = line.strip()
            if len(text) >= 12 and not looks_secret(text) and text not in "{}[]()":
                add("ordinary", "checkov-false-positive-regression", source, "Apache-2.0",
                    rel.split("/")[0], text)  # fmt: skip
    docs = root / "docs"
    if docs.is_dir():
        picked = []
        for doc in sorted(docs.rglob("*.md")):
            if "secret" not in doc.name.lower() and "Secret" not in str(doc):
                continue
            for line in doc.read_text(encoding="utf-8", errors="replace").splitlines():
                text = line.strip()
                if (
                    20 <= len(text) <= 300
                    and re.search(r"(?i)password|secret|token|api key|credential", text)
                    and not looks_secret(text)
                ):
                    picked.append((doc.relative_to(root).as_posix(), text))
        for rel, text in rng.sample(picked, min(25, len(picked))):
            add("ordinary", "checkov-docs", f"bridgecrewio/checkov@{commit}:{rel}",
                "Apache-2.0", "documentation", text)  # fmt: skip


# --------------------------------------------------------------------------------------------
# betterleaks: the rule tests of the formats gitleaks does not have


def _go_literal(src: str, i: int) -> tuple[str, int]:
    """The Go string literal starting at src[i] (raw or interpreted) and the index after it."""
    if src[i] == "`":
        end = src.index("`", i + 1)
        return src[i + 1 : end], end + 1
    j = i + 1
    while src[j] != '"':
        j += 2 if src[j] == "\\" else 1
    raw = src[i + 1 : j]
    return raw.encode().decode("unicode_escape").encode("latin-1").decode("utf-8"), j + 1


def _go_string_list(src: str, i: int) -> list[str]:
    """The plain literals of a Go `[]string{...}` whose body starts at src[i]; elements built by
    a call or a concatenation (random samples) are skipped."""
    out: list[str] = []
    while True:
        while src[i] in " \t\r\n":
            i += 1
        if src.startswith("//", i):
            i = src.index("\n", i)
            continue
        if src[i] == "}":
            return out
        plain = None
        if src[i] in '`"':
            literal, i = _go_literal(src, i)
            k = i
            while src[k] in " \t":
                k += 1
            if src[k] in ",}\n":
                plain = literal
        depth = 0
        while True:  # to the next top-level comma, or the list's closing brace
            c = src[i]
            if c in '`"':
                _, i = _go_literal(src, i)
                continue
            if c in "([{":
                depth += 1
            elif c in ")]}":
                if depth == 0:
                    if plain is not None:
                        out.append(plain)
                    return out
                depth -= 1
            elif c == "," and depth == 0:
                i += 1
                break
            i += 1
        if plain is not None:
            out.append(plain)


def _rule_examples(body: str) -> tuple[list[str], list[str]]:
    tps: list[str] = []
    fps: list[str] = []
    for name, found in (("tps", tps), ("fps", fps)):
        for m in re.finditer(r"\b" + name + r"\s*:?=\s*\[\]string\{", body):
            found += _go_string_list(body, m.end())
    inline = re.search(r"Validate\(\s*r\s*,\s*\[\]string\{", body)
    if inline:
        tps += _go_string_list(body, inline.end())
        second = re.compile(r"\},\s*\[\]string\{").search(body, inline.end())
        if second:
            fps += _go_string_list(body, second.end())
    return tps, fps


def example_value(example: str) -> str:
    """The credential in a rule's positive example: a URL's password, else the longest
    token-like run that is not a name being assigned (`NAME=`, `"name":`) nor an env name."""
    url = re.search(r"://[^/\s:@]+:([^@\s/]+)@", example)
    if url:
        return url.group(1)
    runs = []
    for m in re.finditer(r"[A-Za-z0-9+/_\-.~]{12,}(?:={1,2}(?![A-Za-z0-9+/_\-.~]))?", example):
        run = m.group()
        if re.match(r"\s*[\"']?\s*[:=]", example[m.end() :]):
            continue  # a name being assigned
        if re.fullmatch(r"[A-Za-z][A-Za-z0-9]*([_.-][A-Za-z0-9]+)*", run) and run.upper() == run:
            continue  # an environment variable's name
        runs.append(run)
    return max(runs, key=len) if runs else ""


def betterleaks_cases(root: Path, gitleaks: Path) -> None:
    """Rule tests of betterleaks (MIT) for the formats whose rule file gitleaks does not have;
    any example found anywhere in gitleaks' rule files is left out (corpus B used those)."""
    commit = _commit(root)
    rules = root / "cmd/generate/config/rules"
    theirs = gitleaks / "cmd/generate/config/rules"
    shared_files = {p.name for p in theirs.iterdir()}
    shared_text = "\n".join(p.read_text(encoding="utf-8") for p in theirs.glob("*.go"))
    for path in sorted(rules.glob("*.go")):
        if path.name in shared_files or path.name.endswith("_test.go"):
            continue
        source = f"betterleaks/betterleaks@{commit}:cmd/generate/config/rules/{path.name}"
        for body in path.read_text(encoding="utf-8").split("\nfunc ")[1:]:
            rule_id = re.search(r'RuleID:\s*"([^"]+)"', body)
            if not rule_id:
                continue
            rule = rule_id.group(1)
            kind = "betterleaks-" + slug(rule.split(".")[0])
            # A component reported only with its pair (`SkipReport`) is an ID, a name or a host
            # unless its name says it is the secret half.
            component = re.search(r"SkipReport:\s*true", body) and not re.search(
                r"secret|passphrase|token$|password", rule
            )
            tps, fps = _rule_examples(body)
            for example in tps:
                if example in shared_text or not example.strip():
                    continue
                value = example_value(example)
                if not value:
                    continue
                type_ = "negative" if component else value_class(value)
                add(type_, kind, source, "MIT", "rule example", example, value, rule)
            for example in fps:
                if example.strip() and example not in shared_text:
                    add("negative", kind, source, "MIT", "rule's negative example", example)


# --------------------------------------------------------------------------------------------
# Value generators (documented formats: prefixes, lengths, alphabets)


def base62(n: int, width: int) -> str:
    digits = DIGITS + UPPER + LOWER
    out = ""
    while n:
        n, rem = divmod(n, 62)
        out = digits[rem] + out
    return out.rjust(width, "0")


def github(prefix: str) -> str:
    body = r(ALNUM, 30)
    return prefix + body + base62(zlib.crc32(body.encode()), 6)


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def jwt(payload: dict[str, object], alg: str = "HS256") -> str:
    head = b64url(json.dumps({"alg": alg, "typ": "JWT"}, separators=(",", ":")).encode())
    body = b64url(json.dumps(payload, separators=(",", ":")).encode())
    return f"{head}.{body}.{b64url(rng.randbytes(32 if alg == 'HS256' else 256))}"


def b64(n_bytes: int) -> str:
    return base64.b64encode(rng.randbytes(n_bytes)).decode()


WORDS = [
    "marble",
    "copper",
    "violet",
    "harbor",
    "lantern",
    "quartz",
    "meadow",
    "falcon",
    "ember",
    "willow",
    "cobalt",
    "saffron",
    "thunder",
    "orchid",
    "glacier",
    "canyon",
    "pepper",
    "walnut",
    "juniper",
    "tundra",
    "nectar",
    "velvet",
    "summit",
    "riddle",
    "anchor",
    "prism",
    "lotus",
    "cedar",
    "raven",
    "maple",
]


def password(style: int) -> str:
    """Passwords as eight kinds of generators make them."""
    if style == 0:  # pwgen -s 16
        return r(ALNUM, 16)
    if style == 1:  # a manager's 20 characters with symbols
        return (
            r(ALNUM, 8)
            + rng.choice("!#%&*+-=?@^_")
            + r(ALNUM, 6)
            + rng.choice("!#%*")
            + r(ALNUM, 4)
        )
    if style == 2:  # diceware
        return "-".join(rng.sample(WORDS, 4))
    if style == 3:  # pronounceable, with a digit and a symbol
        syll = [rng.choice("bdfgklmnprstvz") + rng.choice("aeiou") for _ in range(5)]
        return "".join(syll).capitalize() + str(rng.randint(10, 99)) + rng.choice("!.$")
    if style == 4:  # openssl rand -base64 24
        return b64(24)
    if style == 5:  # openssl rand -hex 16
        return r(HEX, 32)
    if style == 6:  # a person's: word, year, symbol
        return rng.choice(WORDS).capitalize() + str(rng.randint(1970, 2024)) + rng.choice("!#@")
    return r(ALNUM + "_-", 24)  # a URL-safe generated one


_style = 0


def pw() -> str:
    global _style
    _style += 1
    return password(_style % 8)


def uid() -> str:
    return str(uuid.UUID(bytes=rng.randbytes(16), version=4))


# (name, environment variable, generator): formats from the providers' documentation and
# GitHub's secret scanning list of token prefixes; values drawn here.
TOKENS: list[tuple[str, str, Callable[[], str]]] = [
    ("github-classic-pat", "GITHUB_TOKEN", lambda: github("ghp_")),
    ("github-oauth", "GH_OAUTH_TOKEN", lambda: github("gho_")),
    ("github-user-to-server", "GH_USER_TOKEN", lambda: github("ghu_")),
    ("github-server-to-server", "GH_INSTALLATION_TOKEN", lambda: github("ghs_")),
    ("github-refresh", "GH_REFRESH_TOKEN", lambda: github("ghr_")),
    ("github-fine-grained", "GH_PAT", lambda: "github_pat_11" + r(UPNUM, 20) + "_" + r(ALNUM, 59)),
    ("gitlab-pat", "GITLAB_TOKEN", lambda: "glpat-" + r(ALNUM + "-_", 20)),
    ("gitlab-runner", "RUNNER_TOKEN", lambda: "glrt-" + r(ALNUM + "-_", 20)),
    ("gitlab-deploy", "GITLAB_DEPLOY_TOKEN", lambda: "gldt-" + r(ALNUM + "-_", 20)),
    ("gitlab-feed", "GITLAB_FEED_TOKEN", lambda: "glft-" + r(ALNUM + "-_", 20)),
    ("gitlab-trigger", "CI_TRIGGER_TOKEN", lambda: "glptt-" + r(HEX, 40)),
    ("gitlab-oauth-secret", "GITLAB_APP_SECRET", lambda: "gloas-" + r(HEX, 64)),
    ("slack-bot", "SLACK_BOT_TOKEN", lambda: f"xoxb-{r(DIGITS, 12)}-{r(DIGITS, 13)}-{r(ALNUM, 24)}"),
    ("slack-user", "SLACK_USER_TOKEN", lambda: f"xoxp-{r(DIGITS, 12)}-{r(DIGITS, 12)}-{r(DIGITS, 13)}-{r(HEX, 32)}"),
    ("slack-app", "SLACK_APP_TOKEN", lambda: f"xapp-1-A{r(UPNUM, 10)}-{r(DIGITS, 13)}-{r(HEX, 64)}"),
    ("slack-webhook", "SLACK_WEBHOOK_URL", lambda: f"https://hooks.slack.com/services/T{r(UPNUM, 10)}/B{r(UPNUM, 10)}/{r(ALNUM, 24)}"),
    ("stripe-secret", "STRIPE_SECRET_KEY", lambda: "sk_live_51" + r(ALNUM, 97)),
    ("stripe-restricted", "STRIPE_RESTRICTED_KEY", lambda: "rk_live_51" + r(ALNUM, 97)),
    ("stripe-webhook", "STRIPE_WEBHOOK_SECRET", lambda: "whsec_" + r(ALNUM, 32)),
    ("openai-project", "OPENAI_API_KEY", lambda: "sk-proj-" + r(ALNUM + "-_", 74) + "T3BlbkFJ" + r(ALNUM + "-_", 74)),
    ("openai-svcacct", "OPENAI_ADMIN_KEY", lambda: "sk-svcacct-" + r(ALNUM + "-_", 74) + "T3BlbkFJ" + r(ALNUM + "-_", 74)),
    ("anthropic", "ANTHROPIC_API_KEY", lambda: "sk-ant-api03-" + r(ALNUM + "-_", 93) + "AA"),
    ("anthropic-admin", "ANTHROPIC_ADMIN_KEY", lambda: "sk-ant-admin01-" + r(ALNUM + "-_", 93) + "AA"),
    ("google-api", "GOOGLE_API_KEY", lambda: "AIza" + r(ALNUM + "-_", 35)),
    ("google-oauth-secret", "GOOGLE_CLIENT_SECRET", lambda: "GOCSPX-" + r(ALNUM + "-_", 28)),
    ("google-refresh", "GOOGLE_REFRESH_TOKEN", lambda: "1//0" + r(ALNUM + "-_", 99)),
    ("google-access", "GOOGLE_ACCESS_TOKEN", lambda: "ya29.a0" + r(ALNUM + "-_", 150)),
    ("aws-secret", "AWS_SECRET_ACCESS_KEY", lambda: r(B64, 40)),
    ("aws-session", "AWS_SESSION_TOKEN", lambda: "IQoJb3JpZ2luX2VjE" + r(B64, 300)),
    ("azure-storage-key", "AZURE_STORAGE_KEY", lambda: b64(64)),
    ("azure-client-secret", "AZURE_CLIENT_SECRET", lambda: r(ALNUM, 3) + "8Q~" + r(ALNUM + "-_.~", 31)),
    ("azure-devops-pat", "AZURE_DEVOPS_PAT", lambda: r(ALNUM, 52) + "AZDO" + r(ALNUM, 28)),
    ("twilio-api-secret", "TWILIO_API_SECRET", lambda: r(ALNUM, 32)),
    ("twilio-auth", "TWILIO_AUTH_TOKEN", lambda: r(HEX, 32)),
    ("sendgrid", "SENDGRID_API_KEY", lambda: f"SG.{r(ALNUM + '-_', 22)}.{r(ALNUM + '-_', 43)}"),
    ("mailgun", "MAILGUN_API_KEY", lambda: f"key-{r(HEX, 32)}"),
    ("mailchimp", "MAILCHIMP_API_KEY", lambda: f"{r(HEX, 32)}-us{rng.randint(2, 21)}"),
    ("npm", "NPM_TOKEN", lambda: "npm_" + r(ALNUM, 36)),
    ("pypi", "PYPI_TOKEN", lambda: "pypi-AgEIcHlwaS5vcmc" + r(B64URL, 120)),
    ("rubygems", "GEM_HOST_API_KEY", lambda: "rubygems_" + r(HEX, 48)),
    ("nuget", "NUGET_API_KEY", lambda: "oy2" + r(LOWNUM, 43)),
    ("crates-io", "CARGO_REGISTRY_TOKEN", lambda: "cio" + r(ALNUM, 32)),
    ("docker-hub-pat", "DOCKERHUB_TOKEN", lambda: "dckr_pat_" + r(ALNUM + "-_", 27)),
    ("docker-hub-oat", "DOCKER_ORG_TOKEN", lambda: "dckr_oat_" + r(ALNUM + "-_", 32)),
    ("vault-service", "VAULT_TOKEN", lambda: "hvs." + r(ALNUM + "-_", 90)),
    ("vault-batch", "VAULT_BATCH_TOKEN", lambda: "hvb." + r(ALNUM + "-_", 130)),
    ("terraform-cloud", "TFE_TOKEN", lambda: f"{r(ALNUM, 14)}.atlasv1.{r(ALNUM, 67)}"),
    ("doppler", "DOPPLER_TOKEN", lambda: "dp.st.prd." + r(ALNUM, 43)),
    ("pulumi", "PULUMI_ACCESS_TOKEN", lambda: "pul-" + r(HEX, 40)),
    ("shopify-admin", "SHOPIFY_ACCESS_TOKEN", lambda: "shpat_" + r(HEX, 32)),
    ("shopify-secret", "SHOPIFY_SHARED_SECRET", lambda: "shpss_" + r(HEX, 32)),
    ("square-access", "SQUARE_ACCESS_TOKEN", lambda: "EAAA" + r(ALNUM + "-_", 60)),
    ("square-oauth-secret", "SQUARE_APP_SECRET", lambda: "sq0csp-" + r(ALNUM + "-_", 43)),
    ("linear", "LINEAR_API_KEY", lambda: "lin_api_" + r(ALNUM, 40)),
    ("notion", "NOTION_TOKEN", lambda: "ntn_" + r(DIGITS, 11) + r(ALNUM, 35)),
    ("figma", "FIGMA_TOKEN", lambda: f"figd_{r(ALNUM + '-_', 40)}"),
    ("atlassian", "ATLASSIAN_API_TOKEN", lambda: "ATATT3xFfGF0" + r(ALNUM + "-_", 170) + "=" + r(HEX.upper(), 8)),
    ("huggingface", "HF_TOKEN", lambda: "hf_" + r(ALNUM, 34)),
    ("replicate", "REPLICATE_API_TOKEN", lambda: "r8_" + r(ALNUM, 37)),
    ("groq", "GROQ_API_KEY", lambda: "gsk_" + r(ALNUM, 52)),
    ("perplexity", "PERPLEXITY_API_KEY", lambda: "pplx-" + r(ALNUM, 48)),
    ("xai", "XAI_API_KEY", lambda: "xai-" + r(ALNUM, 80)),
    ("openrouter", "OPENROUTER_API_KEY", lambda: "sk-or-v1-" + r(HEX, 64)),
    ("langsmith", "LANGSMITH_API_KEY", lambda: f"lsv2_pt_{r(HEX, 32)}_{r(HEX, 10)}"),
    ("pinecone", "PINECONE_API_KEY", lambda: "pcsk_" + r(ALNUM, 5) + "_" + r(ALNUM, 63)),
    ("databricks", "DATABRICKS_TOKEN", lambda: "dapi" + r(HEX, 32)),
    ("digitalocean-pat", "DIGITALOCEAN_TOKEN", lambda: "dop_v1_" + r(HEX, 64)),
    ("digitalocean-oauth", "DO_OAUTH_TOKEN", lambda: "doo_v1_" + r(HEX, 64)),
    ("flyio", "FLY_API_TOKEN", lambda: "FlyV1 fm2_" + r(ALNUM + "+/", 180) + "==,fm2_" + r(ALNUM + "+/", 120)),
    ("netlify", "NETLIFY_AUTH_TOKEN", lambda: "nfp_" + r(ALNUM, 36) + r(HEX, 4)),
    ("supabase", "SUPABASE_ACCESS_TOKEN", lambda: "sbp_" + r(HEX, 40)),
    ("supabase-secret", "SUPABASE_SECRET_KEY", lambda: "sb_secret_" + r(ALNUM + "-_", 31)),
    ("planetscale", "PLANETSCALE_TOKEN", lambda: "pscale_tkn_" + r(ALNUM + "_", 43)),
    ("planetscale-password", "PLANETSCALE_PASSWORD", lambda: "pscale_pw_" + r(ALNUM + "_", 43)),
    ("postman", "POSTMAN_API_KEY", lambda: f"PMAK-{r(HEX, 24)}-{r(HEX, 34)}"),
    ("sentry-user", "SENTRY_AUTH_TOKEN", lambda: "sntryu_" + r(HEX, 64)),
    ("grafana-service-account", "GRAFANA_TOKEN", lambda: f"glsa_{r(ALNUM, 32)}_{r(HEX, 8)}"),
    ("newrelic-user", "NEW_RELIC_API_KEY", lambda: "NRAK-" + r(UPNUM, 27)),
    ("newrelic-license", "NEW_RELIC_LICENSE_KEY", lambda: r(HEX, 36) + "NRAL"),
    ("dynatrace", "DT_API_TOKEN", lambda: f"dt0c01.{r(UPNUM, 24)}.{r(UPNUM, 64)}"),
    ("telegram-bot", "TELEGRAM_BOT_TOKEN", lambda: f"{rng.randint(10**9, 8 * 10**9)}:AA{r(ALNUM + '-_', 33)}"),
    ("discord-bot", "DISCORD_TOKEN", lambda: f"MT{r(ALNUM, 24)}.{r(ALNUM + '-_', 6)}.{r(ALNUM + '-_', 38)}"),
    ("discord-webhook", "DISCORD_WEBHOOK", lambda: f"https://discord.com/api/webhooks/{r(DIGITS, 19)}/{r(ALNUM + '-_', 68)}"),
    ("tailscale", "TS_AUTHKEY", lambda: f"tskey-auth-k{r(ALNUM, 16)}CNTRL-{r(ALNUM, 33)}"),
    ("ngrok", "NGROK_AUTHTOKEN", lambda: f"2{r(ALNUM, 26)}_{r(ALNUM, 21)}"),
    ("onepassword-service", "OP_SERVICE_ACCOUNT_TOKEN", lambda: "ops_eyJzaWduSW5BZGRyZXNzIjoi" + r(B64URL, 400)),
    ("age", "SOPS_AGE_KEY", lambda: "AGE-SECRET-KEY-1" + r("QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L", 58)),
    ("airtable", "AIRTABLE_TOKEN", lambda: f"pat{r(ALNUM, 14)}.{r(HEX, 64)}"),
    ("contentful", "CONTENTFUL_MANAGEMENT_TOKEN", lambda: "CFPAT-" + r(ALNUM + "-_", 43)),
    ("mapbox-secret", "MAPBOX_SECRET_TOKEN", lambda: f"sk.eyJ1Ijoi{r(ALNUM, 20)}.{r(ALNUM + '-_', 22)}"),
    ("shippo", "SHIPPO_API_TOKEN", lambda: "shippo_live_" + r(HEX, 40)),
    ("easypost", "EASYPOST_API_KEY", lambda: "EZAK" + r(HEX, 54)),
    ("prefect", "PREFECT_API_KEY", lambda: "pnu_" + r(ALNUM, 36)),
    ("readme", "README_API_KEY", lambda: "rdme_" + r(LOWNUM, 70)),
    ("sonarqube-user", "SONAR_TOKEN", lambda: "squ_" + r(HEX, 40)),
    ("jfrog-reference", "JFROG_ACCESS_TOKEN", lambda: "cmVmdGtuOjAxOjE3" + r(ALNUM, 48)),
    ("artifactory-api", "ARTIFACTORY_API_KEY", lambda: "AKCp8" + r(ALNUM, 68)),
    ("octopus", "OCTOPUS_API_KEY", lambda: "API-" + r(UPNUM, 26)),
    ("buildkite", "BUILDKITE_API_TOKEN", lambda: "bkua_" + r(HEX, 40)),
    ("circleci", "CIRCLECI_TOKEN", lambda: "CCIPAT_" + r(ALNUM, 22) + "_" + r(HEX, 40)),
    ("posthog-personal", "POSTHOG_PERSONAL_API_KEY", lambda: "phx_" + r(ALNUM, 47)),
    ("resend", "RESEND_API_KEY", lambda: f"re_{r(ALNUM, 8)}_{r(ALNUM, 24)}"),
    ("clerk", "CLERK_SECRET_KEY", lambda: "sk_live_" + r(ALNUM, 50)),
    ("firebase-fcm", "FCM_SERVER_KEY", lambda: f"AAAA{r(ALNUM + '-_', 7)}:APA91b{r(ALNUM + '-_', 134)}"),
    ("cloudinary-url", "CLOUDINARY_URL", lambda: f"cloudinary://{r(DIGITS, 15)}:{r(ALNUM + '-_', 27)}@acme-media"),
    ("heroku", "HEROKU_API_KEY", lambda: "HRKU-AA" + r(ALNUM + "-_", 58)),
    ("cloudflare-api", "CLOUDFLARE_API_TOKEN", lambda: r(ALNUM + "-_", 40)),
    ("datadog-api", "DD_API_KEY", lambda: r(HEX, 32)),
    ("datadog-app", "DD_APP_KEY", lambda: r(HEX, 40)),
    ("okta", "OKTA_API_TOKEN", lambda: "00" + r(ALNUM + "-_", 40)),
    ("jwt-supabase-service", "SUPABASE_SERVICE_ROLE_KEY", lambda: jwt({"iss": "supabase", "ref": r(LOWER, 20), "role": "service_role", "iat": 1731000000, "exp": 2046576000})),
    ("typeform", "TYPEFORM_TOKEN", lambda: "tfp_" + r(ALNUM, 44) + "_" + r(ALNUM, 14)),
    ("snyk", "SNYK_TOKEN", uid),
]  # fmt: skip


def _lower(env: str) -> str:
    return env.lower()


def _camel(env: str) -> str:
    head, *rest = env.lower().split("_")
    return head + "".join(p.capitalize() for p in rest)


# Contexts an agent shows: (name, render(env, value)). Each renders a whole tool output or file
# excerpt, as the tool prints it.
def _ctx_psql(env: str, v: str) -> str:
    name = _lower(env)
    width = max(len(v), 5)
    return (
        f"app=> SELECT name, value FROM settings WHERE name = '{name}';\n"
        f" {'name'.ljust(len(name))} | {'value'.ljust(width)}\n"
        f"-{'-' * len(name)}-+-{'-' * width}\n"
        f" {name} | {v}\n(1 row)\n"
    )


def _ctx_mysql(env: str, v: str) -> str:
    name = _lower(env)
    w1, w2 = max(len(name), 4), max(len(v), 5)
    bar = f"+{'-' * (w1 + 2)}+{'-' * (w2 + 2)}+"
    return (
        f"mysql> SELECT name, value FROM app_config WHERE name='{name}';\n{bar}\n"
        f"| {'name'.ljust(w1)} | {'value'.ljust(w2)} |\n{bar}\n| {name.ljust(w1)} | {v.ljust(w2)} |\n"
        f"{bar}\n1 row in set (0.00 sec)"
    )


def _ctx_redis(env: str, v: str) -> str:
    return f'127.0.0.1:6379> HGET service:config {_lower(env)}\n"{v}"\n127.0.0.1:6379>'


def _ctx_mongosh(env: str, v: str) -> str:
    oid = r(HEX, 24)
    return (
        f"acme> db.integrations.findOne({{ name: '{_lower(env)}' }})\n{{\n"
        f"  _id: ObjectId('{oid}'),\n  name: '{_lower(env)}',\n  value: '{v}',\n"
        f"  updatedAt: ISODate('2026-11-20T09:14:03.118Z')\n}}"
    )


def _ctx_aws_secretsmanager(env: str, v: str) -> str:
    return json.dumps(
        {
            "ARN": f"arn:aws:secretsmanager:eu-west-1:{r(DIGITS, 12)}:secret:prod/{_lower(env)}-{r(ALNUM, 6)}",
            "Name": f"prod/{_lower(env)}",
            "VersionId": uid(),
            "SecretString": json.dumps({env: v}),
            "VersionStages": ["AWSCURRENT"],
            "CreatedDate": "2026-11-02T10:21:44.512000+00:00",
        },
        indent=4,
    )


def _ctx_gcloud(env: str, v: str) -> str:
    name = env.lower().replace("_", "-")
    return f"$ gcloud secrets versions access latest --secret={name} --project=acme-prod\n{v}"


def _ctx_az_keyvault(env: str, v: str) -> str:
    name = env.lower().replace("_", "-")
    return json.dumps(
        {
            "attributes": {"created": "2026-10-30T08:12:55+00:00", "enabled": True,
                           "recoveryLevel": "Recoverable+Purgeable"},
            "contentType": None,
            "id": f"https://acme-kv.vault.azure.net/secrets/{name}/{r(HEX, 32)}",
            "kid": None,
            "managed": None,
            "name": name,
            "tags": {},
            "value": v,
        },
        indent=2,
    )  # fmt: skip


def _ctx_doctl(env: str, v: str) -> str:
    return (
        "$ doctl apps spec get 6f1c2e9a-0d4b-4a57-9a3e-2b8d51f0c7aa\nname: acme-api\n"
        'services:\n- name: api\n  envs:\n  - key: PORT\n    scope: RUN_TIME\n    value: "8080"\n'
        f"  - key: {env}\n    scope: RUN_AND_BUILD_TIME\n    value: {v}\n"
    )


def _ctx_flyctl(env: str, v: str) -> str:
    return (
        f"$ fly secrets set {env}={v} -a acme-api\n"
        "Updating existing machines in 'acme-api' with rolling strategy\n"
        "  Finished deploying"
    )


def _ctx_docker_inspect(env: str, v: str) -> str:
    return (
        '        "Env": [\n'
        '            "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",\n'
        f'            "{env}={v}",\n'
        '            "NODE_VERSION=22.11.0",\n'
        '            "YARN_VERSION=1.22.22"\n        ],'
    )


def _ctx_systemd_unit(env: str, v: str) -> str:
    return (
        "# /etc/systemd/system/acme-worker.service\n[Unit]\nDescription=acme worker\n"
        "After=network-online.target\n\n[Service]\nUser=acme\n"
        f'Environment="{env}={v}"\nExecStart=/opt/acme/bin/worker --queue default\n'
        "Restart=on-failure\n"
    )


def _ctx_journal(env: str, v: str) -> str:
    return (
        f"Nov 27 22:41:07 web-2 acme-api[1893]: loaded configuration: {env}={v} PORT=8080 "
        "LOG_LEVEL=info\nNov 27 22:41:07 web-2 acme-api[1893]: listening on :8080"
    )


def _ctx_launch_json(env: str, v: str) -> str:
    return json.dumps(
        {
            "version": "0.2.0",
            "configurations": [
                {
                    "type": "node",
                    "request": "launch",
                    "name": "Launch API",
                    "program": "${workspaceFolder}/src/server.ts",
                    "env": {"NODE_ENV": "development", env: v},
                }
            ],
        },
        indent=4,
    )


def _ctx_intellij(env: str, v: str) -> str:
    return (
        '    <configuration name="Application" type="SpringBootApplicationConfigurationType">\n'
        '      <option name="SPRING_BOOT_MAIN_CLASS" value="com.acme.Application" />\n'
        "      <envs>\n"
        f'        <env name="{env}" value="{v}" />\n'
        "      </envs>\n"
        "    </configuration>"
    )


def _ctx_sql_dump(env: str, v: str) -> str:
    return (
        "--\n-- Dumping data for table `integrations`\n--\n\nLOCK TABLES `integrations` WRITE;\n"
        f"INSERT INTO `integrations` VALUES (1,'{_lower(env)}','{v}','2026-11-03 12:01:19'),"
        "(2,'feature_flags','on','2026-11-03 12:01:19');\nUNLOCK TABLES;"
    )


def _ctx_yaml_anchor(env: str, v: str) -> str:
    return (
        f"x-common-env: &common-env\n  {env}: {v}\n  LOG_LEVEL: info\n\nservices:\n  api:\n"
        "    image: acme/api:1.8.2\n    environment: *common-env\n  worker:\n"
        "    image: acme/worker:1.8.2\n    environment: *common-env\n"
    )


def _ctx_readme(env: str, v: str) -> str:
    return (
        "## Configuration\n\n| Variable | Value used on staging |\n|---|---|\n"
        f"| `{env}` | `{v}` |\n| `PORT` | `8080` |\n"
    )


def _ctx_django(env: str, v: str) -> str:
    return (
        "Settings:\nUsing settings module acme.settings.staging\n"
        f"ALLOWED_HOSTS = ['staging.acme.io']\n{env} = '{v}'\nDEBUG = True"
    )


def _ctx_rails(env: str, v: str) -> str:
    return (
        "$ bin/rails credentials:show --environment production\n"
        f"aws:\n  region: eu-west-1\n{_lower(env)}: {v}\n"
    )


def _ctx_spring(env: str, v: str) -> str:
    prop = env.lower().replace("_", ".")
    return json.dumps(
        {
            "name": 'Config resource \'class path resource [application-dev.yml]\'',
            "properties": {
                prop: {"value": v, "origin": "class path resource [application-dev.yml] - 14:12"},
                "server.port": {"value": 8080, "origin": "class path resource [application-dev.yml] - 2:9"},
            },
        },
        indent=2,
    )  # fmt: skip


def _ctx_express(env: str, v: str) -> str:
    return (
        f"  acme:config loaded {{ port: 3000, {_camel(env)}: '{v}', trustProxy: true }} +0ms\n"
        "  express:router use '/' query +2ms"
    )


def _ctx_pip_conf(env: str, v: str) -> str:
    return f"[global]\nextra-index-url = https://ci-bot:{v}@pkgs.acme.io/simple/\ntimeout = 60"


def _ctx_gradle(env: str, v: str) -> str:
    return f"org.gradle.jvmargs=-Xmx2g\nacme.{_camel(env)}={v}\norg.gradle.caching=true"


def _ctx_maven(env: str, v: str) -> str:
    return (
        "<settings>\n  <servers>\n    <server>\n      <id>acme-releases</id>\n"
        f"      <username>ci-bot</username>\n      <password>{v}</password>\n"
        "    </server>\n  </servers>\n</settings>"
    )


def _ctx_composer(env: str, v: str) -> str:
    return json.dumps(
        {"http-basic": {"repo.acme.io": {"username": "ci-bot", "password": v}}}, indent=4
    )


def _ctx_yarnrc(env: str, v: str) -> str:
    return (
        'nodeLinker: node-modules\nnpmScopes:\n  acme:\n    npmRegistryServer: "https://npm.acme.io"\n'
        f'    npmAuthToken: "{v}"\n'
    )


def _ctx_bundler(env: str, v: str) -> str:
    return f'---\nBUNDLE_PATH: "vendor/bundle"\nBUNDLE_GEMS__ACME__IO: "ci-bot:{v}"\n'


def _ctx_cargo(env: str, v: str) -> str:
    return f'[registries.acme]\ntoken = "{v}"\n'


TOKEN_CONTEXTS: list[tuple[str, Callable[[str, str], str]]] = [
    ("psql", _ctx_psql), ("mysql", _ctx_mysql), ("redis-cli", _ctx_redis),
    ("mongosh", _ctx_mongosh), ("aws secretsmanager", _ctx_aws_secretsmanager),
    ("gcloud secrets", _ctx_gcloud), ("az keyvault", _ctx_az_keyvault), ("doctl", _ctx_doctl),
    ("flyctl", _ctx_flyctl), ("docker inspect", _ctx_docker_inspect),
    ("systemd unit", _ctx_systemd_unit), ("journalctl", _ctx_journal),
    ("launch.json", _ctx_launch_json), ("IntelliJ workspace.xml", _ctx_intellij),
    ("SQL dump", _ctx_sql_dump), ("YAML anchor", _ctx_yaml_anchor), ("README", _ctx_readme),
    ("Django settings", _ctx_django), ("rails credentials:show", _ctx_rails),
    ("Spring actuator env", _ctx_spring), ("express debug log", _ctx_express),
    ("pip.conf", _ctx_pip_conf), ("gradle.properties", _ctx_gradle),
    ("maven settings.xml", _ctx_maven), ("composer auth.json", _ctx_composer),
    (".yarnrc.yml", _ctx_yarnrc), ("bundler config", _ctx_bundler),
    ("cargo credentials.toml", _ctx_cargo),
]  # fmt: skip
# Contexts that hold a password-like value in a URL or a basic-auth field: only for tokens that
# are used that way (not for URLs and multi-part values).
URL_CONTEXTS = {"pip.conf", "maven settings.xml", "composer auth.json", "bundler config"}


def token_cases() -> None:
    for name, env, make in TOKENS:
        usable = [
            (label, render)
            for label, render in TOKEN_CONTEXTS
            if not (label in URL_CONTEXTS and (":" in make() or " " in make() or "/" in make()))
        ]
        for label, render in rng.sample(usable, 2):
            value = make()
            add("secret", f"token-{name}", MADE, "made here", label, render(env, value), value)


# --------------------------------------------------------------------------------------------
# Passwords given to commands, written in config files, printed by tools

# (kind, template): `{p}` is the password. Commands an agent runs for database shells, cloud
# CLIs, package managers, archivers and directory tools.
COMMANDS: list[tuple[str, str]] = [
    ("mysql-p-attached", "mysql -h db.internal -u root -p{p} acme_prod -e 'SHOW TABLES;'"),
    ("mysql-password-eq", "mysql --host=10.0.3.12 --user=app --password='{p}' --database=acme"),
    ("mysqldump", "mysqldump -u backup --password={p} --single-transaction acme > acme.sql"),
    ("mysqladmin", "mysqladmin -u root -p'{p}' password '{q}'"),
    ("psql-uri", 'psql "postgresql://app:{p}@db.internal:5432/acme?sslmode=require"'),
    ("pgpassword-env-pg-dump", "PGPASSWORD='{p}' pg_dump -h db.internal -U app -Fc acme > acme.dump"),
    ("psql-alter-user", "psql -U postgres -c \"ALTER USER app WITH PASSWORD '{p}';\""),
    ("redis-cli-a", "redis-cli -h cache.internal -p 6379 -a '{p}' --no-auth-warning INFO keyspace"),
    ("redis-cli-uri", "redis-cli -u redis://default:{p}@cache.internal:6379/0 PING"),
    ("redis-cli-auth", "redis-cli -h cache.internal\ncache.internal:6379> AUTH default {p}\nOK"),
    ("mongosh-uri", 'mongosh "mongodb://admin:{p}@mongo-0.internal:27017/?authSource=admin"'),
    ("mongosh-p", "mongosh --host mongo-0.internal -u admin -p '{p}' --authenticationDatabase admin"),
    ("mongodump-uri", 'mongodump --uri="mongodb+srv://backup:{p}@cluster0.ab1cd.mongodb.net/acme" --gzip'),
    ("sqlcmd", "sqlcmd -S tcp:sql.internal,1433 -U sa -P '{p}' -Q \"SELECT @@VERSION\""),
    ("clickhouse-client", "clickhouse-client --host ch.internal --user default --password '{p}' --query 'SELECT 1'"),
    ("cqlsh", "cqlsh cassandra.internal 9042 -u cassandra -p '{p}'"),
    ("influx-setup", "influx setup --username admin --password '{p}' --org acme --bucket metrics --force"),
    ("rabbitmqctl", "rabbitmqctl add_user app '{p}' && rabbitmqctl set_user_tags app monitoring"),
    ("neo4j-cypher-shell", "cypher-shell -a bolt://graph.internal:7687 -u neo4j -p '{p}'"),
    ("pip-index-url", "pip install --index-url https://deploy:{p}@pkgs.acme.io/simple/ acme-core==2.4.1"),
    ("poetry-http-basic", "poetry config http-basic.acme deploy '{p}'"),
    ("uv-index-password", "UV_INDEX_ACME_USERNAME=deploy UV_INDEX_ACME_PASSWORD='{p}' uv sync --frozen"),
    ("twine-upload-p", "twine upload --repository-url https://pkgs.acme.io/ -u deploy -p '{p}' dist/*"),
    ("gradle-p-property", "./gradlew publish -PmavenUser=deploy -PmavenPassword='{p}'"),
    ("mvn-d-password", "mvn -B deploy -Drepo.username=deploy -Drepo.password='{p}'"),
    ("composer-config-http-basic", "composer config --global http-basic.repo.acme.io deploy '{p}'"),
    ("bundle-config", "bundle config set --global gems.acme.io 'deploy:{p}'"),
    ("npm-config-set-auth", "npm config set //npm.acme.io/:_password '{b}'"),
    ("az-login-sp", "az login --service-principal -u 5f0c3a1e-8b2d-4c7e-9f11-0a2b3c4d5e6f -p '{p}' --tenant acme.onmicrosoft.com"),
    ("gcloud-sql-set-password", "gcloud sql users set-password app --host=% --instance=acme-db --password='{p}'"),
    ("aws-rds-master-password", "aws rds create-db-instance --db-instance-identifier acme-db --engine postgres --master-username app --master-user-password '{p}' --db-instance-class db.t4g.micro --allocated-storage 20"),
    ("aws-rds-modify", "aws rds modify-db-instance --db-instance-identifier acme-db --master-user-password '{p}' --apply-immediately"),
    ("doctl-db-user-reset", "doctl databases user reset 9cc10173-e9ea-4176-9dbc-a4cee4c4ff30 app --password '{p}'"),
    ("fly-secrets-set-db", "fly secrets set DATABASE_PASSWORD='{p}' --app acme-api --stage"),
    ("heroku-config-set", "heroku config:set SMTP_PASSWORD='{p}' -a acme-web"),
    ("smbclient-percent", "smbclient //files.acme.local/share -U 'ACME\\svc_backup%{p}'"),
    ("ldapsearch-w", "ldapsearch -x -H ldaps://ldap.acme.local -D 'cn=reader,dc=acme,dc=local' -w '{p}' -b 'dc=acme,dc=local' '(uid=jdoe)'"),
    ("sshpass", "sshpass -p '{p}' ssh -o StrictHostKeyChecking=no deploy@10.0.4.21 'systemctl restart acme'"),
    ("wget-password", "wget --user=deploy --password='{p}' https://files.acme.io/builds/acme-2.4.1.tar.gz"),
    ("openssl-passout", "openssl pkcs12 -export -in cert.pem -inkey key.pem -out bundle.p12 -passout pass:{p}"),
    ("keytool-storepass", "keytool -importcert -alias acme-ca -file ca.crt -keystore truststore.jks -storepass '{p}' -noprompt"),
    ("7z-p", "7z a -p'{p}' -mhe=on backup-2026-11-27.7z ./exports"),
    ("zip-P", "zip -r -P '{p}' reports.zip reports/"),
    ("htpasswd-b", "htpasswd -bB /etc/nginx/.htpasswd admin '{p}'"),
    ("vault-login-userpass", "vault login -method=userpass username=jdoe password='{p}'"),
    ("docker-run-e", "docker run -d --name pg -e POSTGRES_PASSWORD='{p}' -p 5432:5432 postgres:17"),
    ("helm-set-password", "helm upgrade --install redis bitnami/redis --set auth.password='{p}'"),
    ("curl-u-colon", "curl -sS -u 'deploy:{p}' https://nexus.acme.io/service/rest/v1/repositories"),
    ("git-clone-url", "git clone https://jdoe:{p}@git.acme.io/platform/infra.git"),
    ("rclone-obscure", "rclone config create acme-s3 s3 provider=Minio access_key_id=minio secret_access_key='{p}' endpoint=http://minio:9000"),
]  # fmt: skip

# (kind, file, template) config files of package managers, IDEs, services and frameworks.
CONFIGS: list[tuple[str, str, str]] = [
    ("pgpass", "~/.pgpass", "db.internal:5432:acme:app:{p}\n*:*:*:replicator:{q}"),
    ("my-cnf", "~/.my.cnf", "[client]\nuser=app\npassword=\"{p}\"\nhost=db.internal"),
    ("redis-conf", "redis.conf", "bind 0.0.0.0\nport 6379\nrequirepass {p}\nmaxmemory 512mb"),
    ("redis-acl", "users.acl", "user worker on >{p} ~queue:* +@list +@connection"),
    ("pgbouncer-userlist", "userlist.txt", '"app" "{p}"\n"stats" "{q}"'),
    ("odbc-ini", "odbc.ini", "[acme]\nDriver=PostgreSQL Unicode\nServername=db.internal\nUsername=app\nPassword={p}"),
    ("pip-conf-url", "pip.conf", "[global]\nindex-url = https://deploy:{p}@pkgs.acme.io/simple/"),
    ("poetry-auth-toml", "~/.config/pypoetry/auth.toml", '[http-basic.acme]\nusername = "deploy"\npassword = "{p}"'),
    ("uv-toml", "uv.toml", '[[index]]\nname = "acme"\nurl = "https://deploy:{p}@pkgs.acme.io/simple/"'),
    ("cargo-config-registry", ".cargo/config.toml", '[registry]\nglobal-credential-providers = ["cargo:token"]\n\n[registries.acme]\nindex = "sparse+https://crates.acme.io/"\ntoken = "{p}"'),
    ("gradle-properties", "~/.gradle/gradle.properties", "mavenUser=deploy\nmavenPassword={p}\nsigning.keyId=24875D73"),
    ("maven-settings", "~/.m2/settings.xml", "<server>\n  <id>acme-snapshots</id>\n  <username>deploy</username>\n  <password>{p}</password>\n</server>"),
    ("composer-auth", "auth.json", '{{\n    "http-basic": {{\n        "repo.acme.io": {{\n            "username": "deploy",\n            "password": "{p}"\n        }}\n    }}\n}}'),
    ("yarnrc-v1", ".yarnrc", 'registry "https://npm.acme.io/"\n"//npm.acme.io/:_password" "{b}"'),
    ("bundle-config-file", ".bundle/config", '---\nBUNDLE_GEMS__ACME__IO: "deploy:{p}"'),
    ("nuget-config", "NuGet.Config", '<packageSourceCredentials>\n  <acme>\n    <add key="Username" value="deploy" />\n    <add key="ClearTextPassword" value="{p}" />\n  </acme>\n</packageSourceCredentials>'),
    ("launch-json-args", ".vscode/launch.json", '{{\n  "name": "Debug worker",\n  "type": "python",\n  "request": "launch",\n  "module": "acme.worker",\n  "args": ["--db-password", "{p}"]\n}}'),
    ("launch-json-env", ".vscode/launch.json", '"env": {{\n  "DATABASE_URL": "postgres://app:{p}@localhost:5432/acme"\n}}'),
    ("intellij-datasource", ".idea/dataSources.local.xml", '<data-source name="acme@db" uuid="{u}">\n  <user-name>app</user-name>\n  <password>{p}</password>\n</data-source>'),
    ("intellij-run-vm-options", ".idea/workspace.xml", '<option name="VM_PARAMETERS" value="-Dspring.datasource.password={p} -Xmx1g" />'),
    ("systemd-environment", "acme.service", "[Service]\nEnvironment=DB_USER=app\nEnvironment=DB_PASSWORD={p}\nExecStart=/usr/bin/acme"),
    ("systemd-execstart", "backup.service", "[Service]\nType=oneshot\nExecStart=/usr/bin/restic -r s3:s3.amazonaws.com/acme-backup backup /srv --password-command 'echo {p}'"),
    ("flyway-conf", "flyway.conf", "flyway.url=jdbc:postgresql://db.internal:5432/acme\nflyway.user=app\nflyway.password={p}"),
    ("liquibase-properties", "liquibase.properties", "url: jdbc:mysql://db.internal:3306/acme\nusername: app\npassword: {p}"),
    ("alembic-ini", "alembic.ini", "[alembic]\nscript_location = migrations\nsqlalchemy.url = postgresql+psycopg://app:{p}@db.internal/acme"),
    ("airflow-cfg", "airflow.cfg", "[database]\nsql_alchemy_conn = postgresql+psycopg2://airflow:{p}@pg.internal:5432/airflow"),
    ("knexfile", "knexfile.js", "module.exports = {{\n  client: 'pg',\n  connection: {{ host: 'db.internal', user: 'app', password: '{p}', database: 'acme' }}\n}};"),
    ("sequelize-config", "config/config.json", '{{\n  "production": {{\n    "username": "app",\n    "password": "{p}",\n    "database": "acme",\n    "dialect": "mysql"\n  }}\n}}'),
    ("appsettings-connection-string", "appsettings.Production.json", '"ConnectionStrings": {{\n  "Default": "Server=sql.internal;Database=Acme;User Id=app;Password={p};TrustServerCertificate=True"\n}}'),
    ("wp-config", "wp-config.php", "define( 'DB_NAME', 'wordpress' );\ndefine( 'DB_USER', 'wp' );\ndefine( 'DB_PASSWORD', '{p}' );"),
    ("hibernate-cfg", "hibernate.cfg.xml", '<property name="hibernate.connection.username">app</property>\n<property name="hibernate.connection.password">{p}</property>'),
    ("jenkins-credentials", "credentials.xml", "<com.cloudbees.plugins.credentials.impl.UsernamePasswordCredentialsImpl>\n  <id>nexus</id>\n  <username>deploy</username>\n  <password>{p}</password>\n</com.cloudbees.plugins.credentials.impl.UsernamePasswordCredentialsImpl>"),
    ("supervisor-conf", "supervisord.conf", "[program:worker]\ncommand=/opt/acme/worker\nenvironment=QUEUE_URL=\"amqp://worker:{p}@mq.internal:5672/acme\""),
    ("s3cfg", ".s3cfg", "[default]\naccess_key = AKIA2QWERTYUIOPASDF7\nsecret_key = {s}\nhost_base = s3.amazonaws.com"),
    ("docker-compose-anchor", "compose.yaml", "x-db: &db\n  POSTGRES_USER: app\n  POSTGRES_PASSWORD: {p}\nservices:\n  db:\n    image: postgres:17\n    environment: *db"),
    ("mongod-keyfile-conf", "mongod.conf", "security:\n  authorization: enabled\nsetParameter:\n  ldapQueryPassword: {p}"),
    ("grafana-ini", "grafana.ini", "[security]\nadmin_user = admin\nadmin_password = {p}\nsecret_key = {q}"),
    ("php-fpm-env", "www.conf", "env[DB_HOST] = db.internal\nenv[DB_PASSWORD] = {p}"),
    ("kafka-jaas", "client.properties", 'sasl.mechanism=SCRAM-SHA-512\nsasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username="app" password="{p}";'),
    ("tomcat-users", "tomcat-users.xml", '<user username="manager" password="{p}" roles="manager-gui,manager-script"/>'),
]  # fmt: skip

# (kind, template) tool output that prints a password.
OUTPUTS: list[tuple[str, str]] = [
    ("redis-config-get", '127.0.0.1:6379> CONFIG GET requirepass\n1) "requirepass"\n2) "{p}"'),
    ("az-ad-sp-create", '{{\n  "appId": "{u}",\n  "displayName": "acme-ci",\n  "password": "{p}",\n  "tenant": "{u2}"\n}}'),
    ("aws-iam-create-access-key", '{{\n    "AccessKey": {{\n        "UserName": "ci-bot",\n        "AccessKeyId": "AKIA5EXAMPLEZ7Q2WXYR",\n        "Status": "Active",\n        "SecretAccessKey": "{s}",\n        "CreateDate": "2026-11-27T21:03:11+00:00"\n    }}\n}}'),
    ("aws-rds-describe-master-secret", '$ aws secretsmanager get-secret-value --secret-id rds!db-{u} --query SecretString --output text\n{{"username":"app","password":"{p}"}}'),
    ("doctl-db-connection", "$ doctl databases connection 9cc10173-e9ea-4176-9dbc-a4cee4c4ff30\nURI                                                                                        Database     Host                                  Port     User       Password            SSL\npostgresql://doadmin:{p}@db-pg-acme-do-user-1-0.k.db.ondigitalocean.com:25060/defaultdb?sslmode=require    defaultdb    db-pg-acme-do-user-1-0.k.db.ondigitalocean.com    25060    doadmin    {p}    true"),
    ("fly-postgres-create", "Postgres cluster acme-db created\n  Username:    postgres\n  Password:    {p}\n  Hostname:    acme-db.internal\n  Flycast:     fdaa:2:45b:0:1::6\n  Proxy port:  5432\n  Postgres port:  5433"),
    ("heroku-config", "=== acme-web Config Vars\nDATABASE_URL: postgres://u{h}:{p}@ec2-52-1-2-3.compute-1.amazonaws.com:5432/d{h}\nLOG_LEVEL:    info"),
    ("gh-auth-token", "$ gh auth token\n{g}"),
    ("kubectl-decode", "$ kubectl get secret acme-db -o jsonpath='{{.data.password}}' | base64 -d\n{p}"),
    ("docker-compose-config", "services:\n  db:\n    environment:\n      MYSQL_DATABASE: acme\n      MYSQL_ROOT_PASSWORD: {p}\n    image: mysql:8.4"),
    ("systemctl-show-environment", "$ systemctl show acme-api -p Environment\nEnvironment=PORT=8080 DB_PASSWORD={p} LOG_LEVEL=info"),
    ("postgres-log-statement", "2026-11-27 22:10:41.301 UTC [4121] app@acme LOG:  statement: ALTER ROLE reporting WITH LOGIN PASSWORD '{p}'"),
    ("mysql-general-log", "2026-11-27T22:11:02.114311Z\t   18 Query\tCREATE USER 'reporting'@'%' IDENTIFIED BY '{p}'"),
    ("django-debug-databases", "DATABASES = {{'default': {{'ENGINE': 'django.db.backends.postgresql', 'HOST': 'db.internal', 'NAME': 'acme', 'PASSWORD': '{p}', 'PORT': 5432, 'USER': 'app'}}}}"),
    ("spring-boot-startup", "2026-11-27T22:12:09.118Z  INFO 1 --- [           main] c.a.config.DataSourceConfig              : Connecting with url=jdbc:postgresql://db.internal:5432/acme user=app password={p}"),
    ("rails-log-params", 'Started POST "/api/integrations" for 10.0.0.8 at 2026-11-27 22:13:55 +0000\nProcessing by IntegrationsController#create as JSON\n  Parameters: {{"name"=>"smtp", "smtp_password"=>"{p}"}}'),
    ("express-morgan-body", 'POST /login 200 41.113 ms - 120 body={{"username":"jdoe","password":"{p}"}}'),
    ("pip-error-url", "WARNING: Retrying (Retry(total=4, connect=None, read=None, redirect=None, status=None)) after connection broken by 'NewConnectionError(...)': https://deploy:{p}@pkgs.acme.io/simple/acme-core/"),
    ("gradle-error-url", "> Could not resolve com.acme:core:2.4.1.\n   > Could not GET 'https://deploy:{p}@maven.acme.io/releases/com/acme/core/2.4.1/core-2.4.1.pom'. Received status code 401 from server: Unauthorized"),
    ("npm-error-url", "npm error 404 Not Found - GET https://deploy:{p}@npm.acme.io/@acme%2fui - Not found"),
    ("mongosh-connection-log", "Current Mongosh Log ID:\t6745f1a2c3d4e5f6a7b8c9d0\nConnecting to:\t\tmongodb://admin:{p}@mongo-0.internal:27017/?directConnection=true&authSource=admin"),
    ("docker-inspect-cmd", '"Cmd": [\n    "redis-server",\n    "--requirepass",\n    "{p}"\n],'),
    ("journal-sudo-leak", "Nov 27 22:15:31 build-1 sudo[9911]:   deploy : TTY=pts/0 ; PWD=/srv ; USER=root ; COMMAND=/usr/bin/mysql -uroot -p{p}"),
    ("psql-history", "$ tail -3 ~/.psql_history\n\\conninfo\nALTER USER app PASSWORD '{p}';\n\\q"),
]  # fmt: skip


def _fill(template: str) -> tuple[str, str]:
    password = pw()
    if ":{p}@" in template:  # in a URL's user info: a password that needs no percent-encoding
        while quote(password, safe="") != password:
            password = pw()
    values = {
        "p": password,
        "q": pw(),
        "s": r(B64, 40),
        "u": uid(),
        "u2": uid(),
        "h": r(LOWNUM, 12),
        "g": github("gho_"),
    }
    values["b"] = base64.b64encode(values["p"].encode()).decode()
    text = template.format(**values)
    for key in ("p", "s", "g", "b"):
        if "{" + key + "}" in template:
            return text, values[key]
    raise AssertionError(template)


def password_cases() -> None:
    for kind, template in COMMANDS:
        text, secret = _fill(template)
        add("secret", f"cmd-{kind}", MADE, "made here", "shell command", text, secret)
    for kind, file, template in CONFIGS:
        text, secret = _fill(template)
        add("secret", f"cfg-{kind}", MADE, "made here", file, text, secret)
    for kind, template in OUTPUTS:
        text, secret = _fill(template)
        add("secret", f"out-{kind}", MADE, "made here", "tool output", text, secret)


# (language, template) test fixtures: `{p}` a password, `{t}` a token.
FIXTURES: list[tuple[str, str]] = [
    ("python", '@pytest.fixture\ndef smtp_client():\n    return SMTPClient(host="mail.acme.io", user="alerts", password="{p}")'),
    ("javascript", "beforeAll(async () => {{\n  db = await connect({{ user: 'app', password: '{p}', database: 'acme_test' }});\n}});"),
    ("typescript", "const fixture: ClientOptions = {{\n  baseUrl: 'https://api.acme.io',\n  apiToken: '{t}',\n}};"),
    ("go", 'func newTestClient(t *testing.T) *Client {{\n\tt.Helper()\n\treturn NewClient("https://api.acme.io", "{t}")\n}}'),
    ("rust", '#[test]\nfn connects_with_credentials() {{\n    let cfg = Config::new("app", "{p}");\n    assert!(cfg.connect().is_ok());\n}}'),
    ("java", '@BeforeEach\nvoid setUp() {{\n    dataSource.setUsername("app");\n    dataSource.setPassword("{p}");\n}}'),
    ("kotlin", '@BeforeTest\nfun setUp() {{\n    client = ApiClient(baseUrl = "https://api.acme.io", token = "{t}")\n}}'),
    ("csharp", 'public class SmtpFixture\n{{\n    public SmtpClient Client {{ get; }} = new("mail.acme.io") {{ Credentials = new NetworkCredential("alerts", "{p}") }};\n}}'),
    ("ruby", 'RSpec.describe AcmeClient do\n  let(:client) {{ described_class.new(api_token: "{t}") }}\nend'),
    ("php", 'protected function setUp(): void\n{{\n    $this->pdo = new PDO("mysql:host=db;dbname=acme_test", "app", "{p}");\n}}'),
    ("swift", 'override func setUp() {{\n    super.setUp()\n    client = APIClient(token: "{t}")\n}}'),
    ("elixir", 'setup do\n  {{:ok, conn}} = Postgrex.start_link(hostname: "db", username: "app", password: "{p}", database: "acme_test")\n  %{{conn: conn}}\nend'),
    ("scala", 'class ClientSpec extends AnyFlatSpec {{\n  val client = new AcmeClient(token = "{t}")\n}}'),
    ("dart", "setUp(() {{\n  client = AcmeClient(apiToken: '{t}');\n}});"),
    ("lua", 'local conn = assert(env:connect("acme_test", "app", "{p}", "db.internal", 5432))'),
    ("perl", 'my $dbh = DBI->connect("dbi:Pg:dbname=acme_test;host=db", "app", "{p}", {{ RaiseError => 1 }});'),
    ("r", 'con <- DBI::dbConnect(RPostgres::Postgres(), host = "db.internal", user = "analyst", password = "{p}")'),
    ("powershell", 'Describe "Deploy" {{\n    BeforeAll {{ $cred = New-Object PSCredential("deploy", (ConvertTo-SecureString "{p}" -AsPlainText -Force)) }}\n}}'),
]  # fmt: skip

# (language, template) prompts an agent receives, in many languages.
PROMPTS: list[tuple[str, str]] = [
    ("english", "The staging deploy fails with 401. The registry password is {p}, can you check the CI config?"),
    ("french", "Le déploiement échoue : voici le mot de passe de la base de prod, {p}, vérifie la chaîne de connexion."),
    ("german", "Bitte trag den neuen API-Schlüssel {t} in die .env ein und starte den Worker neu."),
    ("spanish", "No puedo conectarme a Redis. La contraseña es {p} y el host es cache.internal, ¿qué falla?"),
    ("portuguese", "Atualiza o token do bot para {t} e testa o webhook de novo, por favor."),
    ("italian", "La password dell'utente admin di Grafana è {p}: aggiungila al secret di Kubernetes."),
    ("dutch", "Gebruik dit token voor de CI: {t}. Het oude is ingetrokken."),
    ("polish", "Hasło do bazy to {p}, ustaw je w docker-compose i uruchom migracje."),
    ("russian", "Вот токен для доступа к API: {t}. Добавь его в секреты репозитория."),
    ("ukrainian", "Пароль до сервера SMTP: {p}. Перевір, чи листи відправляються."),
    ("turkish", "Veritabanı şifresi {p}, bağlantı dizesini buna göre güncelle."),
    ("japanese", "本番DBのパスワードは {p} です。接続設定を直してください。"),
    ("chinese", "这是新的访问令牌：{t}，请更新到 CI 的环境变量里。"),
    ("korean", "레지스트리 비밀번호는 {p} 입니다. 배포 스크립트를 수정해 주세요."),
    ("hindi", "यह नया API टोकन है: {t} — इसे .env फ़ाइल में डाल दो।"),
    ("arabic", "كلمة مرور قاعدة البيانات هي {p}، حدّث ملف الإعدادات من فضلك."),
    ("vietnamese", "Mật khẩu của tài khoản deploy là {p}, hãy cập nhật vào GitHub Actions."),
    ("indonesian", "Token API yang baru: {t}. Tolong ganti yang lama di konfigurasi."),
]  # fmt: skip


def _fixture_values() -> dict[str, str]:
    return {"p": pw(), "t": rng.choice(TOKENS[:20])[2]()}


def code_and_prompt_cases() -> None:
    for language, template in FIXTURES:
        values = _fixture_values()
        text = template.format(**values)
        secret = values["t"] if "{t}" in template else values["p"]
        add(
            "secret",
            f"code-{language}",
            MADE,
            "made here",
            f"{language} test fixture",
            text,
            secret,
        )
    for language, template in PROMPTS:
        values = _fixture_values()
        text = template.format(**values)
        secret = values["t"] if "{t}" in template else values["p"]
        add("secret", f"prompt-{language}", MADE, "made here", "prompt", text, secret)


# --------------------------------------------------------------------------------------------
# Placeholders in the same contexts (ordinary) and dictionary dummies (negative)

PLACEHOLDERS = [
    "<password>", "<YOUR_API_TOKEN>", "${DB_PASSWORD}", "$PGPASSWORD", "{{ .Values.auth.password }}",
    "********", "xxxxxxxxxxxxxxxx", "YOUR_TOKEN_HERE", "(sensitive value)", "[FILTERED]",
    "op://Engineering/acme-db/password", "vault:secret/data/acme/db#password", "%env(DB_PASSWORD)%",
    "#{DbPassword}", "__DB_PASSWORD__", "${{ secrets.REGISTRY_PASSWORD }}", "{{ db_password }}",
    "arn:aws:secretsmanager:eu-west-1:123456789012:secret:prod/db-AbCdEf", "$(cat /run/secrets/db_password)",
    "<redacted>", "REPLACE_ME", "${env:ACME_TOKEN}",
]  # fmt: skip
DUMMIES = ["changeme", "admin", "password123", "postgres", "root", "secret", "hunter2", "letmein"]


def placeholder_cases() -> None:
    # (an access key ID is an identifier, not a secret, but kept out of ordinary strings)
    contexts = [
        ("cmd", [t for _, t in COMMANDS if "AKIA" not in t]),
        ("cfg", [t for _, _, t in CONFIGS if "AKIA" not in t]),
    ]
    for index, holder in enumerate(PLACEHOLDERS):
        for family, templates in contexts:
            template = rng.choice(templates)
            text = template.format(p=holder, q=holder, s=holder, b=holder, u=uid(), u2=uid(),
                                   h="x", g=holder)  # fmt: skip
            add("ordinary", f"placeholder-{family}-{index}", MADE, "made here", family, text)
        label, render = TOKEN_CONTEXTS[index % len(TOKEN_CONTEXTS)]
        add("ordinary", f"placeholder-token-{index}", MADE, "made here", label,
            render("API_TOKEN", holder))  # fmt: skip
    for index, dummy in enumerate(DUMMIES):
        kind, template = COMMANDS[(index * 7) % len(COMMANDS)]
        text = template.format(
            p=dummy, q=dummy, s=dummy, b=dummy, u=uid(), u2=uid(), h="x", g=dummy
        )
        add("negative", f"dummy-{kind}", MADE, "made here", "shell command", text)
    # Keys public by design, in the contexts their secret siblings are shown in.
    public = [
        ("stripe-publishable", "STRIPE_PUBLISHABLE_KEY", "pk_live_51" + r(ALNUM, 97)),
        ("supabase-anon", "SUPABASE_ANON_KEY", jwt({"iss": "supabase", "ref": r(LOWER, 20), "role": "anon", "iat": 1731000000, "exp": 2046576000})),
        ("supabase-publishable", "SUPABASE_PUBLISHABLE_KEY", "sb_publishable_" + r(ALNUM + "-_", 31)),
        ("posthog-project", "POSTHOG_KEY", "phc_" + r(ALNUM, 43)),
        ("clerk-publishable", "CLERK_PUBLISHABLE_KEY", "pk_live_" + b64url(b"clerk.acme.io$")),
        ("sentry-dsn", "SENTRY_DSN", f"https://{r(HEX, 32)}@o{r(DIGITS, 6)}.ingest.sentry.io/{r(DIGITS, 7)}"),
        ("algolia-search", "ALGOLIA_SEARCH_KEY", r(HEX, 32)),
        ("mapbox-public", "MAPBOX_TOKEN", f"pk.eyJ1Ijoi{r(ALNUM, 20)}.{r(ALNUM + '-_', 22)}"),
    ]  # fmt: skip
    for name, env, value in public:
        label, render = rng.choice(TOKEN_CONTEXTS[:21])
        add("negative", f"public-{name}", MADE, "made here", label, render(env, value))


# --------------------------------------------------------------------------------------------
# Ordinary strings from real material on this machine


def _run(args: list[str], stdin: bytes | None = None, cwd: str | Path | None = None) -> str:
    return subprocess.run(
        args, input=stdin, cwd=cwd, check=True, capture_output=True
    ).stdout.decode("utf-8", "replace")


def sample(lines: list[str], n: int, *, minlen: int = 16, maxlen: int = 300) -> list[str]:
    pool = []
    for line in lines:
        text = line.strip()
        if minlen <= len(text) <= maxlen and not looks_secret(text) and text not in pool:
            pool.append(text)
    return rng.sample(pool, min(n, len(pool)))


def chunks(text: str, n: int, size: int = 200) -> list[str]:
    out = []
    for _ in range(n):
        start = rng.randrange(0, max(1, len(text) - size))
        piece = text[start : start + size].strip()
        if piece and not looks_secret(piece):
            out.append(piece)
    return out


def real_cases(sources: Path) -> None:
    real = sources / "real"
    checkov = sources / "checkov"
    ck = f"bridgecrewio/checkov@{_commit(checkov)}"

    def o(kind: str, source: str, license_: str, context: str, text: str) -> None:
        add("ordinary", f"real-{kind}", source, license_, context, text)

    gosum = checkov / "tests/sca_package_2/examples/go.sum"
    for line in sample(gosum.read_text().splitlines(), 35):
        o("go-sum", f"{ck}:tests/sca_package_2/examples/go.sum", "Apache-2.0", "go.sum", line)
    for name in ("go-std.sum", "go-cmd.sum"):
        for line in sample((real / name).read_text().splitlines(), 6):
            o("go-sum-std", f"Go 1.19 source, {name}", "BSD-3-Clause", "go.sum", line)
    pipfile = [ln for ln in (checkov / "Pipfile.lock").read_text().splitlines() if "sha256:" in ln]
    for line in sample(pipfile, 30):
        o("pipfile-lock", f"{ck}:Pipfile.lock", "Apache-2.0", "Pipfile.lock", line)
    lock = [ln for ln in (checkov / "tests/sca_package_2/examples/package-lock.json").read_text().splitlines() if "integrity" in ln or "resolved" in ln]  # fmt: skip
    for line in sample(lock, 15):
        o("npm-lock", f"{ck}:tests/sca_package_2/examples/package-lock.json", "Apache-2.0",
          "package-lock.json", line)  # fmt: skip
    ours = [ln for ln in (real / "client-vscode-package-lock.json").read_text().splitlines() if '"integrity"' in ln or '"resolved"' in ln]  # fmt: skip
    for line in sample(ours, 25):
        o(
            "npm-lock",
            "engram client-vscode/package-lock.json",
            "MIT (engram)",
            "package-lock.json",
            line,
        )
    dev_lock = (ROOT / "requirements/dev.lock").read_text().splitlines()
    for line in sample([ln for ln in dev_lock if "--hash=sha256:" in ln], 20):
        o("pip-hash-lock", "engram requirements/dev.lock", "MIT (engram)", "pip lock", line)
    for piece in chunks((real / "source-map.min.js").read_text(), 12):
        o(
            "minified-js",
            "source-map 0.7 dist/source-map.min.js (npm)",
            "BSD-3-Clause",
            "minified JS",
            piece,
        )
    for piece in chunks((real / "opentype.min.js").read_text(), 12):
        o("minified-js", "opentype.js dist/opentype.min.js (npm)", "MIT", "minified JS", piece)
    mappings = json.loads((real / "source-map.min.js.map").read_text())["mappings"]
    for piece in chunks(mappings, 10, 160):
        o("source-map", "source-map 0.7 dist/source-map.min.js.map (npm)", "BSD-3-Clause",
          "source map mappings", piece)  # fmt: skip
    for line in sample((real / "xterm.css").read_text().splitlines(), 12, minlen=12):
        o("css", "@xterm/xterm css/xterm.css (npm)", "MIT", "CSS", line)
    for cert in sorted(real.glob("*.pem")):
        text = _run(
            ["openssl", "x509", "-in", str(cert), "-noout", "-text", "-fingerprint", "-sha256"]
        )
        for line in sample(text.splitlines(), 7, minlen=20):
            o("x509-text", f"/etc/ssl/certs/{cert.name} (public CA certificate)", "real output",
              "openssl x509 -text", line)  # fmt: skip
        body = cert.read_text().splitlines()[1:-1]
        o("certificate-pem", f"/etc/ssl/certs/{cert.name} (public CA certificate)", "real output",
          "PEM certificate", body[len(body) // 2])  # fmt: skip
    sums = _run(["sha256sum", *sorted(str(p) for p in real.iterdir())]).replace(str(real) + "/", "")
    for line in sums.splitlines():
        o("sha256sum", "sha256sum of the real files used here", "real output", "sha256sum", line)
    for line in _run(["md5sum", *sorted(str(p) for p in real.glob("*.js"))]).replace(str(real) + "/", "").splitlines():  # fmt: skip
        o("md5sum", "md5sum of the real files used here", "real output", "md5sum", line)
    icon = (real / "icon.png").read_bytes()
    encoded = base64.b64encode(icon).decode()
    for i in range(8):
        line = encoded[76 * (3 + i * 5) : 76 * (4 + i * 5)]
        o(
            "base64-file",
            "engram client-vscode/images/icon.png",
            "MIT (engram)",
            "base64 -w 76",
            line,
        )
    o("data-uri", "engram client-vscode/images/icon.png", "MIT (engram)", "HTML",
      f'<img alt="engram" src="data:image/png;base64,{encoded[:260]}">')  # fmt: skip
    log = _run(["git", "log", "--format=%H %an %s", "-n", "300"], cwd=ROOT).splitlines()
    for line in sample(log, 20, maxlen=200):
        o("git-log", "engram git log", "MIT (engram)", "git log", line)
    show = _run(["git", "log", "--format=fuller", "-n", "30"], cwd=ROOT).splitlines()
    for line in sample([ln for ln in show if ln.startswith("commit ")], 6):
        o("git-log", "engram git log --format=fuller", "MIT (engram)", "git log", line)
    for name, context, n in (
        ("npm-ls.txt", "npm ls --depth=2", 10),
        ("npm-install.log", "npm install log", 10),
    ):
        text = (real / name).read_text(encoding="utf-8", errors="replace")
        for line in sample(text.splitlines(), n):
            o("npm-output", f"{context} of code-server 4.100 installed on this machine", "real output",
              context, line)  # fmt: skip
    freeze = _run(
        [str(ROOT / ".venv/bin/python"), "-m", "pip", "list", "--format=freeze"]
    ).splitlines()
    for line in sample(freeze, 8, minlen=8):
        o("pip-list", "pip list in engram's virtualenv", "real output", "pip list", line)
    pip_show = _run([str(ROOT / ".venv/bin/python"), "-m", "pip", "show", "pygls", "lsprotocol"]).splitlines()  # fmt: skip
    for line in sample(pip_show, 6, minlen=10):
        o("pip-show", "pip show in engram's virtualenv", "real output", "pip show", line)


def key_material_cases() -> None:
    """Public halves, fingerprints and signatures: made here with ssh-keygen, openssl and gpg,
    then only the public parts kept (ordinary strings)."""
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp)
        for kind, args in (("ed25519", ["-t", "ed25519"]), ("rsa", ["-t", "rsa", "-b", "3072"]),
                           ("ecdsa", ["-t", "ecdsa", "-b", "256"])):  # fmt: skip
            key = home / f"id_{kind}"
            _run(["ssh-keygen", *args, "-N", "", "-C", "jdoe@laptop", "-f", str(key), "-q"])
            pub = (home / f"id_{kind}.pub").read_text().strip()
            add("ordinary", "look-ssh-public-key", MADE, "made here", "authorized_keys", pub)
            finger = _run(["ssh-keygen", "-l", "-f", str(key) + ".pub"]).strip()
            add("ordinary", "look-ssh-fingerprint", MADE, "made here", "ssh-keygen -l", finger)
            add("ordinary", "look-ssh-known-hosts", MADE, "made here", "known_hosts",
                "git.acme.io,10.0.4.2 " + " ".join(pub.split()[:2]))  # fmt: skip
        rsa = home / "rsa.pem"
        _run(["openssl", "genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048", "-out", str(rsa)])  # fmt: skip
        cert = _run(["openssl", "req", "-x509", "-key", str(rsa), "-days", "365", "-subj", "/CN=idp.acme.io"])  # fmt: skip
        der_lines = cert.splitlines()[1:-1]
        add("ordinary", "look-saml-metadata", MADE, "made here", "SAML metadata",
            '<md:KeyDescriptor use="signing">\n  <ds:KeyInfo xmlns:ds="http://www.w3.org/2000/09/xmldsig#">\n'
            f"    <ds:X509Data>\n      <ds:X509Certificate>{''.join(der_lines)}</ds:X509Certificate>\n"
            "    </ds:X509Data>\n  </ds:KeyInfo>\n</md:KeyDescriptor>")  # fmt: skip
        modulus = (
            _run(["openssl", "rsa", "-in", str(rsa), "-noout", "-modulus"]).strip().split("=")[1]
        )
        n = b64url(bytes.fromhex(modulus))
        jwks = {"keys": [{"kty": "RSA", "use": "sig", "alg": "RS256", "kid": r(HEX, 16), "n": n, "e": "AQAB"}]}  # fmt: skip
        add("ordinary", "look-jwks", MADE, "made here", "GET /.well-known/jwks.json",
            json.dumps(jwks, indent=2))  # fmt: skip
        add("ordinary", "look-jwks", MADE, "made here", "JWKS one line", json.dumps(jwks))
        pubpem = _run(["openssl", "pkey", "-in", str(rsa), "-pubout"]).splitlines()
        add("ordinary", "look-public-key-pem", MADE, "made here", "PEM public key",
            "\n".join(pubpem))  # fmt: skip
        gnupg = home / "gnupg"
        gnupg.mkdir(mode=0o700)
        gpg = ["gpg", "--homedir", str(gnupg), "--batch", "--pinentry-mode", "loopback", "--passphrase", ""]  # fmt: skip
        _run([*gpg, "--quick-gen-key", "Jo Doe <jdoe@acme.io>", "ed25519", "sign", "2y"])
        listing = _run([*gpg, "--list-keys", "--with-subkey-fingerprints"])
        for line in sample(listing.splitlines(), 3, minlen=10):
            add("ordinary", "look-gpg-list-keys", MADE, "made here", "gpg --list-keys", line)
        armored = _run([*gpg, "--armor", "--export"]).splitlines()
        add("ordinary", "look-pgp-public-key", MADE, "made here", "gpg --armor --export",
            "\n".join(armored))  # fmt: skip
        sig = _run([*gpg, "--armor", "--detach-sign"], stdin=b"release v2.4.1\n")
        add("ordinary", "look-pgp-signature", MADE, "made here", "detached signature", sig.strip())
        repo = home / "repo"
        repo.mkdir()
        fpr = next(ln.split(":")[9] for ln in _run([*gpg, "--with-colons", "--list-keys"]).splitlines() if ln.startswith("fpr"))  # fmt: skip
        env_git = ["git", "-c", "user.name=Jo Doe", "-c", "user.email=jdoe@acme.io",
                   "-c", f"gpg.program={_gpg_wrapper(home, gnupg)}", "-c", f"user.signingkey={fpr}"]  # fmt: skip
        _run(["git", "init", "-q"], cwd=repo)
        (repo / "README.md").write_text("acme\n")
        _run(["git", "add", "."], cwd=repo)
        _run([*env_git, "commit", "-q", "-S", "-m", "Initial commit"], cwd=repo)
        _run([*env_git, "tag", "-s", "v2.4.1", "-m", "acme 2.4.1"], cwd=repo)
        tag = _run(["git", "cat-file", "-p", "v2.4.1"], cwd=repo).strip()
        add("ordinary", "look-signed-tag", MADE, "made here", "git cat-file -p <tag>", tag)
        commit = _run(["git", "cat-file", "-p", "HEAD"], cwd=repo).strip()
        add("ordinary", "look-signed-commit", MADE, "made here", "git cat-file -p HEAD", commit)


def _gpg_wrapper(home: Path, gnupg: Path) -> str:
    wrapper = home / "gpg-wrapper.sh"
    wrapper.write_text(f'#!/bin/sh\nexec gpg --homedir "{gnupg}" --batch --pinentry-mode loopback --passphrase "" "$@"\n')  # fmt: skip
    wrapper.chmod(0o755)
    return str(wrapper)


def ulid() -> str:
    alphabet = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
    return "01J" + r(alphabet, 23)


def lookalike_cases() -> None:
    """Tool output in the secrets' own contexts that holds no secret (made here, real formats)."""
    account = r(DIGITS, 12)
    looks = [
        ("psql-conninfo", 'You are connected to database "acme" as user "app" on host "db.internal" (address "10.0.3.12") at port "5432".\nSSL connection (protocol: TLSv1.3, cipher: TLS_AES_256_GCM_SHA384, compression: off, ALPN: postgresql)'),
        ("mysql-status", f"mysql  Ver 8.4.3 for Linux on x86_64 (MySQL Community Server - GPL)\nConnection id:\t\t{rng.randint(10, 999)}\nCurrent user:\t\tapp@10.0.4.21\nSSL:\t\t\tCipher in use is TLS_AES_256_GCM_SHA384\nServer version:\t\t8.4.3 MySQL Community Server - GPL"),
        ("redis-info", f"# Server\nredis_version:7.4.1\nredis_git_sha1:00000000\nredis_build_id:{r(HEX, 16)}\nrun_id:{r(HEX, 40)}\ntcp_port:6379"),
        ("mongosh-hello", f"{{\n  isWritablePrimary: true,\n  topologyVersion: {{ processId: ObjectId('{r(HEX, 24)}'), counter: Long('6') }},\n  maxBsonObjectSize: 16777216,\n  ok: 1\n}}"),
        ("aws-sts-identity", json.dumps({"UserId": "AIDA" + r(UPNUM, 17), "Account": account, "Arn": f"arn:aws:iam::{account}:user/ci-bot"}, indent=4)),
        ("aws-configure-list", f"      Name                    Value             Type    Location\n      ----                    -----             ----    --------\n   profile                <not set>             None    None\naccess_key     ****************{r(UPNUM, 4)} shared-credentials-file\nsecret_key     ****************{r(ALNUM, 4)} shared-credentials-file\n    region                eu-west-1      config-file    ~/.aws/config"),
        ("az-account-show", json.dumps({"environmentName": "AzureCloud", "homeTenantId": uid(), "id": uid(), "isDefault": True, "name": "acme-prod", "state": "Enabled", "tenantId": uid(), "user": {"name": "jdoe@acme.io", "type": "user"}}, indent=2)),
        ("gcloud-config-list", "[core]\naccount = jdoe@acme.io\ndisable_usage_reporting = True\nproject = acme-prod-381207\n\nYour active configuration is: [default]"),
        ("gcloud-secrets-list", "NAME                CREATED              REPLICATION_POLICY  LOCATIONS\ndb-password         2026-10-02T08:11:31  automatic           -\nstripe-secret-key   2026-10-02T08:12:05  automatic           -"),
        ("fly-secrets-list", f"NAME             \tDIGEST          \tCREATED AT\nDATABASE_URL     \t{r(HEX, 16)}\t2026-11-20T10:14:22Z\nSTRIPE_SECRET_KEY\t{r(HEX, 16)}\t2026-11-20T10:14:22Z"),
        ("kubectl-get-secrets", "NAME                  TYPE                             DATA   AGE\nacme-db               Opaque                           2      41d\nacme-registry         kubernetes.io/dockerconfigjson   1      41d\ndefault-token-7xq2k   kubernetes.io/service-account-token 3  212d"),
        ("gh-auth-status", "github.com\n  ✓ Logged in to github.com account jdoe (keyring)\n  - Active account: true\n  - Git operations protocol: https\n  - Token: gho_************************************\n  - Token scopes: 'gist', 'read:org', 'repo', 'workflow'"),
        ("docker-inspect-clean", json.dumps([{"Id": r(HEX, 64), "Created": "2026-11-27T21:58:03.118Z", "Image": "sha256:" + r(HEX, 64), "Config": {"Env": ["PATH=/usr/local/bin:/usr/bin:/bin", "NODE_VERSION=22.11.0"], "Cmd": ["node", "dist/server.js"]}}], indent=4)),
        ("docker-images-digests", f"REPOSITORY    TAG       DIGEST                                                                    IMAGE ID       CREATED       SIZE\nacme/api      1.8.2     sha256:{r(HEX, 64)}   {r(HEX, 12)}   2 days ago    212MB"),
        ("docker-pull", f"1.8.2: Pulling from acme/api\n{r(HEX, 12)}: Pull complete\nDigest: sha256:{r(HEX, 64)}\nStatus: Downloaded newer image for acme/api:1.8.2"),
        ("systemctl-status", "● acme-api.service - acme api\n     Loaded: loaded (/etc/systemd/system/acme-api.service; enabled; preset: enabled)\n     Active: active (running) since Thu 2026-11-27 22:41:07 UTC; 3h ago\n   Main PID: 1893 (node)\n     CGroup: /system.slice/acme-api.service\n             └─1893 /usr/bin/node /opt/acme/dist/server.js"),
        ("journal-boot-id", f"-- Boot {r(HEX, 32)} --\nNov 27 22:40:59 web-2 systemd[1]: Started acme-api.service - acme api."),
        ("request-ids", f"2026-11-27T22:44:10.221Z INFO request_id={uid()} trace_id={r(HEX, 32)} span_id={r(HEX, 16)} GET /api/v1/projects 200 12ms"),
        ("ulids", f"created job {ulid()} for tenant {ulid()} (parent {ulid()})"),
        ("uuid-v7-list", "\n".join(f"{r(HEX, 8)}-{r(HEX, 4)}-7{r(HEX, 3)}-{rng.choice('89ab')}{r(HEX, 3)}-{r(HEX, 12)}" for _ in range(4))),
        ("mongo-objectids", f"{{ _id: ObjectId('{r(HEX, 24)}'), orgId: ObjectId('{r(HEX, 24)}') }}"),
        ("django-password-hash-doc", "Django stores passwords as <algorithm>$<iterations>$<salt>$<hash>, e.g. pbkdf2_sha256 with 1,000,000 iterations by default."),
        ("rails-filtered-params", 'Parameters: {"user"=>{"email"=>"jdoe@acme.io", "password"=>"[FILTERED]", "password_confirmation"=>"[FILTERED]"}}'),
        ("spring-actuator-masked", json.dumps({"spring.datasource.password": {"value": "******", "origin": "System Environment Property \"SPRING_DATASOURCE_PASSWORD\""}}, indent=2)),
        ("oidc-discovery", json.dumps({"issuer": "https://accounts.google.com", "authorization_endpoint": "https://accounts.google.com/o/oauth2/v2/auth", "token_endpoint": "https://oauth2.googleapis.com/token", "jwks_uri": "https://www.googleapis.com/oauth2/v3/certs", "response_types_supported": ["code", "token", "id_token"], "id_token_signing_alg_values_supported": ["RS256"], "token_endpoint_auth_methods_supported": ["client_secret_post", "client_secret_basic"]}, indent=2)),
        ("maven-settings-encrypted-doc", "Run `mvn --encrypt-password` and paste the {…} output into <password> in settings.xml; never the clear text."),
        ("npmrc-env-ref", "//npm.pkg.github.com/:_authToken=${NODE_AUTH_TOKEN}\n@acme:registry=https://npm.pkg.github.com"),
        ("poetry-config-list", "cache-dir = \"/home/jdoe/.cache/pypoetry\"\nhttp-basic.acme.username = \"deploy\"\nhttp-basic.acme.password = \"**********\"\nvirtualenvs.in-project = true"),
        ("pip-download-log", f"Collecting acme-core==2.4.1\n  Downloading https://files.pythonhosted.org/packages/{r(HEX, 2)}/{r(HEX, 2)}/{r(HEX, 60)}/acme_core-2.4.1-py3-none-any.whl (48 kB)\nSaved ./acme_core-2.4.1-py3-none-any.whl"),
        ("cargo-lock-checksum", f'[[package]]\nname = "serde"\nversion = "1.0.215"\nsource = "registry+https://github.com/rust-lang/crates.io-index"\nchecksum = "{r(HEX, 64)}"'),
        ("yarn-lock-checksum", f'"left-pad@npm:^1.3.0":\n  version: 1.3.0\n  resolution: "left-pad@npm:1.3.0"\n  checksum: 10c0/{r(HEX, 128)}'),
        ("launch-json-envfile", '{\n  "name": "Debug API",\n  "type": "node",\n  "request": "launch",\n  "envFile": "${workspaceFolder}/.env.local",\n  "program": "${workspaceFolder}/src/server.ts"\n}'),
        ("intellij-password-stored", '<data-source name="acme@db" uuid="' + uid() + '">\n  <user-name>app</user-name>\n  <schema-mapping />\n</data-source>'),
        ("thinking-like-hex", f"cache key {r(HEX, 32)} hit for /api/v1/projects?page=2"),
        ("docs-password-rule", "Passwords must be at least 12 characters; the API token is shown only once, at creation, then stored hashed."),
        ("docs-token-env", "Set GITHUB_TOKEN in the repository's secrets, then read it as ${{ secrets.GITHUB_TOKEN }} in the workflow."),
        ("selector-password", "input[type=password]:focus-visible { outline: 2px solid var(--accent); }"),
        ("route-token", "router.post('/api/auth/token/refresh', refreshTokenHandler);"),
        ("identifier-secret", "const secretManagerClient = new SecretManagerServiceClient({ projectId });"),
    ]  # fmt: skip
    for kind, text in looks:
        add("ordinary", f"look-{kind}", MADE, "made here", kind, text)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sources", type=Path, required=True)
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    credsweeper_cases(args.sources / "credsweeper")
    checkov_cases(args.sources / "checkov")
    betterleaks_cases(args.sources / "betterleaks", args.sources / "gitleaks")
    token_cases()
    password_cases()
    code_and_prompt_cases()
    real_cases(args.sources)
    key_material_cases()
    lookalike_cases()
    placeholder_cases()
    # No ordinary string may hold one of the corpus' own secrets; no text twice (the first
    # occurrence is kept, so a public source's line wins over a later duplicate).
    secrets = {
        row["secret"] for row in rows if row["type"] == "secret" and len(row["secret"]) >= 12
    }
    seen: set[str] = set()
    kept = []
    for row in rows:
        if row["text"] in seen:
            continue
        if row["type"] == "ordinary" and any(s in row["text"] for s in secrets):
            continue
        seen.add(row["text"])
        kept.append(row)
    args.out.write_text(
        "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in kept), encoding="utf-8"
    )
    types: dict[str, int] = {}
    for row in kept:
        types[row["type"]] = types.get(row["type"], 0) + 1
    kinds = len({row["kind"] for row in kept if row["type"] == "secret"})
    print(f"{args.out}: {types}, {kinds} secret kinds")


if __name__ == "__main__":
    main()
