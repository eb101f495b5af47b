"""Build tests/core/public_secret_corpus_d.jsonl: a fourth corpus, all of it held out.

Corpus D measures engram's redaction on data its detector never saw (issue 29, "on new public
examples"). It was built while the detector was being changed from corpora A, B and C, by
someone who did not read the detector, and no case was chosen, kept or dropped by how engram
handles it: the rules below were fixed first and the detector was run once, at the end.
`scripts/measure_redaction.py --corpus-d` prints its figures by family only.

Run with bare clones (or checkouts) of the sources (any Python 3.11; not part of engram):

    python scripts/build_public_secret_corpus_d.py --trivy ~/src/trivy --twoms ~/src/2ms \
        [--code-server ~/.cache/engram-editors/code-server/node_modules/code-server]

Sources none of corpora A, B and C used (each line names its source and has a `license` field):
- aquasecurity/trivy `pkg/fanal/secret/testdata/*` (Apache-2.0): the secrets trivy's own test
  (`scanner_test.go`) expects to find, read off the masked `Match` strings of its expected
  findings (each `*` run aligned on the test file gives the secret), plus the one-token files
  named after a kind; `openai-invalid.txt` holds its negative examples. A field trivy masks
  as `user` is a user name, not a secret: left out.
- Checkmarx/2ms `engine/rules/ruledefine/*_test.go` (Apache-2.0): for every rule, two of its
  true positives (picked by a fixed seed, preferring two different context templates) with the
  secret the value they all share; its false positives are negative examples.
- made here, in the contexts an agent shows a secret in (issue 29, item 2): passwords from ten
  generators (word lists, season+year, names and dates, KeePass-like, pronounceable as pwgen,
  hex and base64 from `openssl rand`, leetspeak, digits; with `$`, `^`, `%`, a backtick) and
  tokens of 60 documented formats, in 89 command lines whose flag syntax is taken from the
  tools' man pages and --help (database clients, cloud CLIs, container and package tools,
  Windows commands, ssh/smb/ldap tools), 25 tool outputs, 39 config files, connection strings,
  URLs, prompts, JSON, code in nine languages, and split across lines.

Ordinary strings, from real material: aquasecurity/trivy's test data and docs (lock files'
integrity hashes, go.sum, Cargo.lock checksums, poetry hashes, image digests, SBOM UUIDs, IAM
ARNs, Go code naming passwords/tokens/keys, documentation URLs, placeholders in its docs'
commands); AWS API routes naming keys and tokens (botocore's models, Apache-2.0, when the AWS
CLI's library is installed); lines of CPython's standard library (PSF-2.0) naming passwords,
keys and digests; code-server's CSS and minified JavaScript (MIT; the copy engram's editor tests
install); output of tools run here (`ssh-keygen` public keys, fingerprints and hashed
known_hosts, `keytool -list -cacerts`, `sha256sum`, `md5sum`, `git log`, `npm config ls -l`,
`pip hash`, `openssl dgst`, `kubectl config view`, `base64` of an image) and `/var/log` lines;
and the placeholders below written into the same contexts as the secrets.

Placeholders (decided before the first measurement): a value written `<...>`, `${...}`,
`$VAR`, `%VAR%`, `$(command)`, `{{ ... }}`, `***`, `xxxx`, `YOUR_...` holds no secret: a line holding one
is an **ordinary string** (family `placeholder-*`), because a redactor that rewrites
`--token <your-token>` changes documentation for nothing. Default and sample passwords
(`changeme`, `admin`, `password123`) are real passwords on many systems and placeholders in
many docs: they are neither (`"type": "negative"`, reported apart). A value that is wholly one short
unit repeated six times or more (`abcabcabcabcabcabc`) is a negative as well.

Every case is held out (`"split": "holdout"`). A rebuild writes the same file except for what
the machine gives anew (ssh keys, UUIDs, logs, installed versions): the committed file is the
corpus.
"""

from __future__ import annotations

import argparse
import base64
import collections
import gzip
import json
import random
import re
import string
import subprocess
import tempfile
import zlib
from collections.abc import Callable
from pathlib import Path

OUT = Path(__file__).resolve().parents[1] / "tests" / "core" / "public_secret_corpus_d.jsonl"
RNG = random.Random(20261127_4)
MADE = "made for this corpus"
MADE_LICENSE = "made here"
REAL_LICENSE = "real output of tools run here"

ALNUM = string.ascii_letters + string.digits
LOWER_DIGITS = string.ascii_lowercase + string.digits
HEX = "0123456789abcdef"
B64 = ALNUM + "+/"
B64URL = ALNUM + "-_"


def rand(alphabet: str, n: int) -> str:
    return "".join(RNG.choice(alphabet) for _ in range(n))


def is_negative(secret: str) -> bool:
    """Fixed before the first measurement (see the module's docstring)."""
    if secret.lower() in {"changeme", "admin", "password123", "password", "secret", "test"}:
        return True
    return bool(re.fullmatch(r"(.{1,4})\1{5,}", secret))


def row(
    type_: str, kind: str, source: str, license_: str, context: str, text: str, secret: str = ""
) -> dict:
    out = {
        "type": type_,
        "split": "holdout",
        "kind": kind,
        "rule": kind,
        "source": source,
        "license": license_,
        "context": context,
        "text": text,
    }
    if secret:
        assert secret in text, (kind, secret, text)
        out["secret"] = secret
        if type_ == "secret" and is_negative(secret):
            out["type"] = "negative"
    return out


class Repo:
    """A bare clone or a checkout, read at HEAD."""

    def __init__(self, path: Path, name: str, license_: str) -> None:
        self.name = name
        self.license = license_
        has_tree = (path / ".git").exists()
        self.git = ["git", "-C", str(path)] if has_tree else ["git", "--git-dir", str(path)]
        self.commit = self._run("rev-parse", "HEAD").strip()[:12]

    def _run(self, *args: str) -> str:
        out = subprocess.run([*self.git, *args], capture_output=True, check=True).stdout
        return out.decode("utf-8", "replace")

    def files(self, under: str) -> list[str]:
        return self._run(
            "ls-tree", "-r", "--name-only", "HEAD", *([under] if under else [])
        ).splitlines()

    def read(self, path: str) -> str:
        return self._run("show", f"HEAD:{path}")

    def source(self, path: str) -> str:
        return f"{self.name}@{self.commit}:{path}"

    def log(self, *args: str) -> str:
        return self._run("log", *args)


# ---------------------------------------------------------------------------------------------
# trivy (Apache-2.0): the secrets its scanner test expects
# ---------------------------------------------------------------------------------------------

TRIVY_DIR = "pkg/fanal/secret/testdata"
# One token a file, named after its kind; trivy's test expects the whole token.
TRIVY_ONE_TOKEN = (
    "openai-admin-api-key.txt",
    "openai-legacy-api-key.txt",
    "openai-project-api-key.txt",
    "openai-realtime-client-secret.txt",
    "openai-service-account-key.txt",
    "openai-service-api-key.txt",
    "azure-ai-services-key.txt",
    "azure-container-registry-credential.txt",
)


def trivy_match_patterns(test_src: str) -> list[str]:
    """The masked `Match` strings of the test's expected findings (`*` marks the secret)."""
    out = []
    for m in re.finditer(r"Match:\s*(.+?),\s*(?://.*)?$", test_src, re.M):
        pieces = re.findall(
            r'"((?:[^"\\]|\\.)*)"|`([^`]*)`|strings\.Repeat\("\*",\s*(\d+)\)|(\w+)', m.group(1)
        )
        text, literal_only = "", True
        for quoted, raw, repeat, name in pieces:
            if repeat:
                text += "*" * int(repeat)
            elif name and name != "strings":
                literal_only = False  # a variable: not read
            elif quoted:
                text += quoted.encode().decode("unicode_escape")
            else:
                text += raw
        # All-star matches say nothing of where the secret lies: not used.
        if literal_only and "*" in text and len(text.replace("*", "")) >= 4:
            out.append(text)
    return list(dict.fromkeys(out))


def from_trivy(repo: Repo) -> list[dict]:
    rows: list[dict] = []
    patterns = trivy_match_patterns(repo.read("pkg/fanal/secret/scanner_test.go"))
    seen: set[tuple[str, str]] = set()
    for path in repo.files(TRIVY_DIR):
        name = Path(path).name
        if name.endswith((".yaml", ".json")) and "secret" not in name:
            continue  # scanner configurations
        text = repo.read(path)
        kind = "trivy-" + re.sub(r"[^a-z0-9]+", "-", Path(name).stem.lower()).strip("-")
        if name == "openai-invalid.txt":
            for line in text.splitlines():
                rows.append(row("negative", kind, repo.source(path), repo.license, "file", line))
            continue
        for block in re.finditer(
            r"-----BEGIN [A-Z ]*PRIVATE KEY-----\n(.*?)\n-----END [A-Z ]*PRIVATE KEY-----",
            text,
            re.S,
        ):
            body = [ln for ln in block.group(1).splitlines() if len(ln) >= 40]
            if len(body) >= 3:
                # A line of the key's body, whole: the block is what a tool prints.
                rows.append(
                    row(
                        "secret",
                        kind,
                        repo.source(path),
                        repo.license,
                        "file",
                        block.group(),
                        body[2],
                    )
                )
        if name in TRIVY_ONE_TOKEN:
            for line in text.splitlines():
                if line.strip():
                    secret = line.strip()
                    rows.append(
                        row("secret", kind, repo.source(path), repo.license, "file", line, secret)
                    )
            continue
        for pattern in patterns:
            pieces = re.findall(r"\*+|[^*]+", pattern)
            rx = "".join(f"(.{{{len(p)}}})" if p[0] == "*" else re.escape(p) for p in pieces)
            stars = [p for p in pieces if p[0] == "*"]
            for m in re.finditer(rx, text):
                literal_before = [p for p in pieces[: pieces.index(stars[0])]]
                for i, secret in enumerate(m.groups()):
                    before = "".join(literal_before) if i == 0 else ""
                    if re.search(r"\buser\W*$", before) or (
                        i == 0 and re.search(r"user: \"$", pattern.split("*")[0])
                    ):
                        continue  # a user name, not a secret
                    secret = secret.strip("\"' ").removeprefix("\\n").removesuffix("\\n")
                    if not secret or (path, secret) in seen:
                        continue
                    seen.add((path, secret))
                    line_start = text.rfind("\n", 0, m.start()) + 1
                    line_end = text.find("\n", m.end())
                    shown = text[line_start : line_end if line_end >= 0 else len(text)]
                    if "BEGIN" in shown or "\\n" in secret:
                        shown = text  # a key block: the whole file, as a tool prints it
                    rows.append(
                        row("secret", kind, repo.source(path), repo.license, "file", shown, secret)
                    )
    return rows


# ---------------------------------------------------------------------------------------------
# 2ms (Apache-2.0): its rules' true and false positives
# ---------------------------------------------------------------------------------------------

GO_STRING = r'"(?:[^"\\\n]|\\.)*"|`[^`]*`'


def go_literal(s: str) -> str:
    if s[0] == "`":
        return s[1:-1]
    return s[1:-1].encode("latin-1", "backslashreplace").decode("unicode_escape")


def go_string_list(block: str) -> list[str]:
    """The entries of a Go `[]string{...}` made of literals joined by `+` (others skipped)."""
    out = []
    entry = rf"((?:{GO_STRING})(?:\s*\+\s*(?:{GO_STRING}))*)\s*,"
    for m in re.finditer(entry, block):
        out.append("".join(go_literal(s) for s in re.findall(GO_STRING, m.group(1))))
    return out


TOKEN = re.compile(r"[A-Za-z0-9_\-+/=.~]{8,}")


def looks_like_value(token: str) -> bool:
    """A value rather than an identifier: it holds a digit, or it is long and not camelCase."""
    if token.startswith("/"):
        return False  # a URL's path
    if re.fullmatch(r"[A-Za-z]+(?:[_-][A-Za-z]+)*", token) and len(token) < 30:
        return False
    return bool(re.search(r"\d", token)) or len(token) >= 30


def template_of(line: str, secret: str) -> str:
    return re.sub(r"[A-Za-z]+", "w", line.replace(secret, "S"))


def from_twoms(repo: Repo) -> list[dict]:
    rows: list[dict] = []
    for path in sorted(repo.files("engine/rules/ruledefine")):
        if not path.endswith("_test.go"):
            continue
        src = repo.read(path)
        kind = "2ms-" + Path(path).name.removesuffix("_test.go").replace("_", "-")
        positives = re.search(r"truePositives:\s*\[\]string\{(.*?)\n\t*\},", src, re.S)
        negatives = re.search(r"falsePositives:\s*\[\]string\{(.*?)\n\t*\},", src, re.S)
        found = go_string_list(positives.group(1)) if positives else []
        counts: collections.Counter[str] = collections.Counter()
        for line in found:
            for token in set(TOKEN.findall(line)):
                if looks_like_value(token):
                    counts[token] += 1
        shared = [t for t, n in counts.items() if n >= 2 and n >= len(found) // 2]
        shared.sort(key=lambda t: (-counts[t], -len(t), t))
        picked: list[tuple[str, str]] = []
        if shared:
            secret = shared[0]
            lines = [ln for ln in found if secret in ln]
            RNG.shuffle(lines)
            templates: set[str] = set()
            for line in lines:
                if template_of(line, secret) not in templates:
                    templates.add(template_of(line, secret))
                    picked.append((line, secret))
                if len(picked) == 2:
                    break
        else:
            # Each positive has its own value: the longest value-like token of two of them.
            lines = list(found)
            RNG.shuffle(lines)
            for line in lines:
                values = sorted(
                    (t for t in TOKEN.findall(line) if looks_like_value(t)), key=len, reverse=True
                )
                if values:
                    picked.append((line, values[0]))
                if len(picked) == 2:
                    break
        for line, secret in picked:
            rows.append(
                row("secret", kind, repo.source(path), repo.license, "rule test", line, secret)
            )
        for line in go_string_list(negatives.group(1)) if negatives else []:
            rows.append(
                row("negative", kind, repo.source(path), repo.license, "rule negative", line)
            )
    return rows


# ---------------------------------------------------------------------------------------------
# Made here: passwords and tokens in the contexts an agent shows them in
# ---------------------------------------------------------------------------------------------

WORDS = [
    "maple",
    "orbit",
    "canyon",
    "lantern",
    "velvet",
    "harbor",
    "tundra",
    "copper",
    "falcon",
    "meadow",
    "quartz",
    "ember",
    "willow",
    "saffron",
    "glacier",
    "pepper",
    "juniper",
    "cobalt",
    "thistle",
    "marble",
    "summit",
    "raven",
    "sierra",
    "nectar",
    "pebble",
    "walnut",
    "cactus",
    "lagoon",
    "mosaic",
    "tango",
    "violet",
    "hazel",
    "cedar",
    "acorn",
    "bramble",
    "comet",
    "drizzle",
    "fjord",
    "gravel",
    "indigo",
    "jasper",
    "kettle",
    "lilac",
    "mango",
    "nutmeg",
]
NAMES = [
    "rosalind",
    "marcus",
    "priya",
    "tobias",
    "ingrid",
    "mateo",
    "keiko",
    "olusegun",
    "hannah",
    "dmitri",
]
SEASONS = ("Spring", "Summer", "Autumn", "Winter", "January", "October")
SAFE_SYMBOLS = "!#%^*_+-=.@~"  # safe in a shell word when quoted with '...'
ALL_SYMBOLS = SAFE_SYMBOLS + "$&`;|?"


def password(style: int, shell_safe: bool = True) -> str:
    """A password of one of ten kinds people and tools make (see the module's docstring)."""
    symbols = SAFE_SYMBOLS if shell_safe else ALL_SYMBOLS
    style %= 10
    if style == 0:  # word list, as Bitwarden's or 1Password's generator
        words = RNG.sample(WORDS, 3)
        return "-".join(w.capitalize() if i == 1 else w for i, w in enumerate(words)) + str(
            RNG.randint(2, 99)
        )
    if style == 1:  # season and year, the corporate classic
        return f"{RNG.choice(SEASONS)}{RNG.randint(2019, 2026)}{RNG.choice('!#@$' if not shell_safe else '!#@')}"
    if style == 2:  # a name and a date
        return f"{RNG.choice(NAMES).capitalize()}{RNG.randint(1960, 2005)}{RNG.choice(symbols)}"
    if style == 3:  # KeePass-like: every class, 18 characters
        body = rand(ALNUM + symbols, 15)
        return (
            body
            + RNG.choice(string.digits)
            + RNG.choice(symbols)
            + RNG.choice(string.ascii_uppercase)
        )
    if style == 4:  # pronounceable, as pwgen
        cons, vows = "bcdfghjkmnprstvwz", "aeiou"
        out = "".join(RNG.choice(cons) + RNG.choice(vows) for _ in range(4))
        pos = RNG.randrange(len(out))
        return out[:pos] + str(RNG.randint(0, 9)) + out[pos:].capitalize()
    if style == 5:  # openssl rand -hex 16
        return rand(HEX, 32)
    if style == 6:  # openssl rand -base64 18
        return base64.b64encode(RNG.randbytes(18)).decode()
    if style == 7:  # leetspeak on a word, with a symbol and digits
        word = RNG.choice(WORDS)
        leet = word.translate(str.maketrans("aeios", "@3!05"))
        return leet.capitalize() + RNG.choice(symbols) + str(RNG.randint(10, 999))
    if style == 8:  # digits only (a PIN, an all-digit key)
        return "".join(RNG.choice(string.digits) for _ in range(RNG.randint(8, 12)))
    # 9: awkward characters: ^, %, $ and a backtick where the context allows them
    specials = "^%" if shell_safe else "^%$`"
    return (
        rand(ALNUM, 5)
        + RNG.choice(specials)
        + rand(ALNUM, 4)
        + RNG.choice(specials)
        + rand(ALNUM, 3)
    )


def base62(n: int, width: int) -> str:
    out = ""
    while n:
        n, r = divmod(n, 62)
        out = (string.digits + string.ascii_letters)[r] + out
    return out.rjust(width, "0")


def github(prefix: str) -> str:
    body = rand(ALNUM, 30)
    return f"{prefix}_{body}{base62(zlib.crc32(body.encode()), 6)}"


def jwt(claims: dict) -> str:
    def enc(data: dict) -> str:
        return base64.urlsafe_b64encode(json.dumps(data).encode()).rstrip(b"=").decode()

    head = enc({"alg": "RS256", "typ": "JWT", "kid": rand(HEX, 16)})
    sig = base64.urlsafe_b64encode(RNG.randbytes(64)).rstrip(b"=").decode()
    return f"{head}.{enc(claims)}.{sig}"


def token_formats() -> list[tuple[str, str]]:
    """(kind, token): one token per documented format, made with this corpus' seed."""
    up_digits = string.ascii_uppercase + string.digits
    return [
        ("github-pat-classic", github("ghp")),
        ("github-oauth", github("gho")),
        ("github-app-installation", github("ghs")),
        ("github-fine-grained", f"github_pat_11{rand(up_digits, 20)}_{rand(ALNUM, 59)}"),
        ("gitlab-pat", "glpat-" + rand(B64URL, 20)),
        ("gitlab-runner", "glrt-" + rand(B64URL, 20)),
        ("gitlab-deploy", "gldt-" + rand(B64URL, 20)),
        ("aws-access-key-id", "AKIA" + rand("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", 16)),
        ("aws-temporary-key-id", "ASIA" + rand("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", 16)),
        ("aws-secret-access-key", rand(B64, 40)),
        ("google-api-key", "AIza" + rand(B64URL, 35)),
        ("google-oauth-access", "ya29." + rand(B64URL, 120)),
        ("google-oauth-client-secret", "GOCSPX-" + rand(B64URL, 28)),
        (
            "slack-bot",
            f"xoxb-{rand(string.digits, 12)}-{rand(string.digits, 13)}-{rand(ALNUM, 24)}",
        ),
        (
            "slack-user",
            f"xoxp-{rand(string.digits, 12)}-{rand(string.digits, 12)}-{rand(string.digits, 13)}-{rand(HEX, 32)}",
        ),
        (
            "slack-webhook",
            f"https://hooks.slack.com/services/T{rand(up_digits, 10)}/B{rand(up_digits, 10)}/{rand(ALNUM, 24)}",
        ),
        (
            "discord-webhook",
            f"https://discord.com/api/webhooks/{rand(string.digits, 19)}/{rand(B64URL, 68)}",
        ),
        ("discord-bot", f"{rand(B64URL, 26)}.{rand(B64URL, 6)}.{rand(B64URL, 38)}"),
        ("stripe-live-secret", "sk_live_" + rand(ALNUM, 99)),
        ("stripe-restricted", "rk_live_" + rand(ALNUM, 99)),
        ("stripe-webhook-secret", "whsec_" + rand(ALNUM, 32)),
        ("openai-project", f"sk-proj-{rand(B64URL, 74)}T3BlbkFJ{rand(B64URL, 74)}"),
        ("anthropic-api", f"sk-ant-api03-{rand(B64URL, 93)}AA"),
        ("anthropic-admin", f"sk-ant-admin01-{rand(B64URL, 93)}AA"),
        ("huggingface", "hf_" + rand(string.ascii_letters, 34)),
        ("groq", "gsk_" + rand(ALNUM, 52)),
        ("replicate", "r8_" + rand(ALNUM, 37)),
        ("npm-token", "npm_" + rand(ALNUM, 36)),
        ("pypi-token", "pypi-AgEIcHlwaS5vcmcCJ" + rand(B64URL, 150)),
        ("cargo-token", "cio" + rand(ALNUM, 32)),
        ("rubygems", "rubygems_" + rand(HEX, 48)),
        ("nuget-api-key", "oy2" + rand(string.ascii_lowercase + string.digits, 43)),
        ("docker-hub-pat", "dckr_pat_" + rand(B64URL, 27)),
        ("digitalocean-pat", "dop_v1_" + rand(HEX, 64)),
        ("hashicorp-vault-service", "hvs." + rand(B64URL, 91)),
        ("terraform-cloud", f"{rand(ALNUM, 14)}.atlasv1.{rand(ALNUM, 67)}"),
        ("databricks", "dapi" + rand(HEX, 32)),
        ("atlassian-api", "ATATT3xFfGF0" + rand(B64URL, 171) + "=" + rand(HEX.upper(), 8)),
        ("grafana-service-account", f"glsa_{rand(ALNUM, 32)}_{rand(HEX, 8)}"),
        ("grafana-cloud", "glc_" + rand(B64, 80) + "=="),
        ("sendgrid", f"SG.{rand(B64URL, 22)}.{rand(B64URL, 43)}"),
        ("mailgun", "key-" + rand(HEX, 32)),
        ("twilio-api-key", "SK" + rand(HEX, 32)),
        ("postman", f"PMAK-{rand(HEX, 24)}-{rand(HEX, 34)}"),
        ("linear", "lin_api_" + rand(ALNUM, 40)),
        ("notion", "ntn_" + rand(ALNUM, 46)),
        ("figma", "figd_" + rand(B64URL, 40)),
        ("airtable-pat", f"pat{rand(ALNUM, 14)}.{rand(HEX, 64)}"),
        ("supabase", "sbp_" + rand(HEX, 40)),
        ("doppler", "dp.st.prd." + rand(ALNUM, 43)),
        ("flyio", "FlyV1 fm2_" + rand(B64, 120)),
        ("netlify", "nfp_" + rand(ALNUM, 36)),
        ("tailscale-auth", f"tskey-auth-{rand(ALNUM, 17)}-{rand(ALNUM, 33)}"),
        ("newrelic-user", "NRAK-" + rand(up_digits, 27)),
        ("sentry-user", "sntryu_" + rand(HEX, 64)),
        ("shopify-admin", "shpat_" + rand(HEX, 32)),
        ("okta-api", "00" + rand(B64URL, 40)),
        ("azure-storage-key", rand(B64, 86) + "=="),
        ("age-secret-key", "AGE-SECRET-KEY-1" + rand("QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L", 58)),
        ("jwt-bearer", jwt({"sub": "svc-build", "aud": "api.internal", "exp": 1798761600})),
    ]


Template = tuple[str, str, str]  # (kind, context, text with {pw} / {tok} / {user} / {host})

# Command lines: flag syntax from each tool's man page or --help (psql, pg_dump, aws, gcloud,
# docker, npm, pip, curl, wget, git, ssh, openssl, keytool, kubectl, terraform, java, cargo,
# gem, mvn here; the others from their published manuals).
COMMANDS: list[Template] = [
    ("cmd-mysql-p", "command", "mysql -h {host} -u {user} -p'{pw}' orders"),
    (
        "cmd-mysqldump",
        "command",
        "mysqldump --user={user} --password='{pw}' --single-transaction shop > shop.sql",
    ),
    (
        "cmd-psql-env",
        "command",
        "PGPASSWORD='{pw}' psql -h {host} -U {user} -d analytics -c 'select 1'",
    ),
    (
        "cmd-psql-conninfo",
        "command",
        'psql "host={host} port=5432 dbname=app user={user} password={pw}"',
    ),
    (
        "cmd-pg-dump-dbname",
        "command",
        "pg_dump --dbname='postgresql://{user}:{pw}@{host}:5432/app' -Fc -f app.dump",
    ),
    ("cmd-sqlcmd", "command", "sqlcmd -S {host},1433 -U sa -P '{pw}' -Q \"SELECT @@VERSION\""),
    ("cmd-bcp", "command", "bcp dbo.Orders out orders.dat -S {host} -U {user} -P '{pw}' -c"),
    ("cmd-sqlplus", "command", "sqlplus {user}/'{pw}'@//{host}:1521/ORCLPDB1"),
    (
        "cmd-mongosh",
        "command",
        'mongosh "mongodb://{user}:{pw}@{host}:27017/admin?authSource=admin"',
    ),
    (
        "cmd-mongodump",
        "command",
        "mongodump --host {host} --username {user} --password '{pw}' --authenticationDatabase admin",
    ),
    ("cmd-redis-cli", "command", "redis-cli -h {host} -p 6379 -a '{pw}' --no-auth-warning INFO"),
    (
        "cmd-influx",
        "command",
        "influx -host {host} -username {user} -password '{pw}' -database metrics",
    ),
    ("cmd-cqlsh", "command", "cqlsh {host} 9042 -u {user} -p '{pw}'"),
    (
        "cmd-aws-configure-set",
        "command",
        "aws configure set aws_secret_access_key {tok} --profile staging",
    ),
    (
        "cmd-aws-rds",
        "command",
        "aws rds create-db-instance --db-instance-identifier pg1 --engine postgres --master-username {user} --master-user-password '{pw}' --db-instance-class db.t3.micro",
    ),
    (
        "cmd-aws-iam-login-profile",
        "command",
        "aws iam create-login-profile --user-name {user} --password '{pw}' --password-reset-required",
    ),
    (
        "cmd-az-login",
        "command",
        "az login --service-principal -u 3f1c2a8e-7d4b-4c1e-9a6f-2b8d0e5c7a91 -p '{pw}' --tenant contoso.onmicrosoft.com",
    ),
    (
        "cmd-az-vm-create",
        "command",
        "az vm create -g rg-web -n vm01 --image Ubuntu2204 --admin-username {user} --admin-password '{pw}'",
    ),
    (
        "cmd-gcloud-sql-password",
        "command",
        "gcloud sql users set-password {user} --instance=prod-pg --password='{pw}'",
    ),
    ("cmd-docker-login-p", "command", "docker login -u {user} -p '{pw}' registry.{host}"),
    (
        "cmd-docker-login-stdin",
        "command",
        "echo '{pw}' | docker login --username {user} --password-stdin ghcr.io",
    ),
    (
        "cmd-docker-run-env",
        "command",
        "docker run -d --name db -e POSTGRES_PASSWORD='{pw}' -p 5432:5432 postgres:16",
    ),
    (
        "cmd-docker-run-mysql",
        "command",
        "docker run -d -e MYSQL_ROOT_PASSWORD='{pw}' -e MYSQL_DATABASE=wp mysql:8.4",
    ),
    ("cmd-podman-login", "command", "podman login --username {user} --password '{pw}' quay.io"),
    (
        "cmd-skopeo-creds",
        "command",
        "skopeo copy --src-creds {user}:'{pw}' docker://registry.{host}/app:1.4 dir:/tmp/app",
    ),
    (
        "cmd-helm-repo-add",
        "command",
        "helm repo add internal https://charts.{host} --username {user} --password '{pw}'",
    ),
    (
        "cmd-helm-set",
        "command",
        "helm install pg bitnami/postgresql --set auth.postgresPassword='{pw}'",
    ),
    (
        "cmd-kubectl-from-literal",
        "command",
        "kubectl create secret generic db-creds --from-literal=username={user} --from-literal=password='{pw}'",
    ),
    (
        "cmd-kubectl-docker-registry",
        "command",
        "kubectl create secret docker-registry regcred --docker-server=registry.{host} --docker-username={user} --docker-password='{pw}'",
    ),
    (
        "cmd-kubectl-set-credentials",
        "command",
        "kubectl config set-credentials deployer --token={tok}",
    ),
    ("cmd-oc-login", "command", "oc login https://api.{host}:6443 -u {user} -p '{pw}'"),
    (
        "cmd-argocd-login",
        "command",
        "argocd login argocd.{host} --username admin --password '{pw}' --grpc-web",
    ),
    ("cmd-vault-login", "command", "vault login {tok}"),
    ("cmd-vault-kv-put", "command", "vault kv put secret/app/db username={user} password='{pw}'"),
    ("cmd-terraform-var", "command", "terraform apply -var 'db_password={pw}' -auto-approve"),
    (
        "cmd-ansible-extra-vars",
        "command",
        "ansible-playbook site.yml -e 'ansible_become_password={pw}'",
    ),
    ("cmd-npm-config-set", "command", "npm config set //registry.npmjs.org/:_authToken {tok}"),
    ("cmd-yarn-config", "command", "yarn config set npmAuthToken {tok}"),
    (
        "cmd-pip-index-url",
        "command",
        "pip install --index-url https://{user}:{pw}@pypi.{host}/simple/ internal-lib",
    ),
    ("cmd-twine-upload", "command", "twine upload -u __token__ -p {tok} dist/*"),
    ("cmd-poetry-http-basic", "command", "poetry config http-basic.internal {user} '{pw}'"),
    ("cmd-cargo-login", "command", "cargo login {tok}"),
    ("cmd-gem-push-key", "command", "GEM_HOST_API_KEY={tok} gem push pkg/widget-2.1.0.gem"),
    (
        "cmd-dotnet-nuget-source",
        "command",
        "dotnet nuget add source https://nuget.{host}/v3/index.json -n internal -u {user} -p '{pw}' --store-password-in-clear-text",
    ),
    (
        "cmd-nuget-push",
        "command",
        "nuget push Widget.2.1.0.nupkg -ApiKey {tok} -Source https://api.nuget.org/v3/index.json",
    ),
    ("cmd-mvn-d-password", "command", "mvn deploy -Drepo.username={user} -Drepo.password='{pw}'"),
    ("cmd-gradle-p", "command", "./gradlew publish -PmavenUser={user} -PmavenPassword='{pw}'"),
    (
        "cmd-java-keystore-password",
        "command",
        "java -Djavax.net.ssl.keyStore=app.jks -Djavax.net.ssl.keyStorePassword='{pw}' -jar app.jar",
    ),
    (
        "cmd-keytool-storepass",
        "command",
        "keytool -importcert -alias corp-ca -file ca.pem -keystore truststore.jks -storepass '{pw}' -noprompt",
    ),
    (
        "cmd-openssl-passout",
        "command",
        "openssl pkcs12 -export -in cert.pem -inkey key.pem -out bundle.p12 -passout 'pass:{pw}'",
    ),
    (
        "cmd-openssl-enc-pass",
        "command",
        "openssl enc -aes-256-cbc -pbkdf2 -in backup.tar -out backup.tar.enc -pass 'pass:{pw}'",
    ),
    ("cmd-curl-u", "command", "curl -u {user}:'{pw}' https://api.{host}/v1/status"),
    (
        "cmd-curl-bearer",
        "command",
        "curl -H 'Authorization: Bearer {tok}' https://api.{host}/v2/me",
    ),
    ("cmd-curl-header-key", "command", 'curl -s -H "X-API-Key: {tok}" https://api.{host}/reports'),
    (
        "cmd-wget-password",
        "command",
        "wget --user={user} --password='{pw}' https://files.{host}/dist/release.tar.gz",
    ),
    (
        "cmd-git-clone-token",
        "command",
        "git clone https://oauth2:{tok}@gitlab.{host}/team/service.git",
    ),
    (
        "cmd-git-extraheader",
        "command",
        "git -c http.extraHeader='Authorization: Bearer {tok}' fetch origin",
    ),
    ("cmd-gh-auth-token", "command", "echo {tok} | gh auth login --with-token"),
    ("cmd-glab-auth", "command", "glab auth login --hostname gitlab.{host} --token {tok}"),
    ("cmd-sshpass", "command", "sshpass -p '{pw}' ssh {user}@{host} uptime"),
    ("cmd-ssh-keygen-n", "command", "ssh-keygen -t ed25519 -N '{pw}' -f ~/.ssh/deploy_ed25519"),
    ("cmd-smbclient", "command", "smbclient //{host}/finance -U 'CORP\\{user}%{pw}'"),
    (
        "cmd-mount-cifs",
        "command",
        "sudo mount -t cifs //{host}/share /mnt/share -o username={user},password='{pw}',vers=3.0",
    ),
    (
        "cmd-ldapsearch",
        "command",
        "ldapsearch -x -H ldaps://{host} -D 'cn={user},dc=corp,dc=example' -w '{pw}' -b 'dc=corp,dc=example'",
    ),
    ("cmd-xfreerdp", "command", "xfreerdp /v:{host} /u:{user} /p:'{pw}' /cert:ignore"),
    (
        "cmd-net-use",
        "command",
        "net use Z: \\\\{host}\\projects {pw} /user:CORP\\{user} /persistent:no",
    ),
    ("cmd-net-user", "command", "net user {user} {pw} /add /domain"),
    ("cmd-cmdkey", "command", "cmdkey /generic:TERMSRV/{host} /user:{user} /pass:{pw}"),
    (
        "cmd-schtasks",
        "command",
        "schtasks /Create /TN Backup /TR C:\\ops\\backup.cmd /SC DAILY /RU CORP\\{user} /RP {pw}",
    ),
    ("cmd-psexec", "command", "PsExec.exe \\\\{host} -u CORP\\{user} -p {pw} cmd /c ipconfig"),
    ("cmd-wmic", "command", "wmic /node:{host} /user:{user} /password:{pw} os get caption"),
    (
        "cmd-runas-securestring",
        "command",
        "$cred = New-Object PSCredential('{user}', (ConvertTo-SecureString '{pw}' -AsPlainText -Force))",
    ),
    (
        "cmd-invoke-sqlcmd",
        "command",
        "Invoke-Sqlcmd -ServerInstance {host} -Username {user} -Password '{pw}' -Query 'SELECT 1'",
    ),
    ("cmd-zip-p", "command", "zip -P '{pw}' -r payroll.zip payroll/"),
    ("cmd-7z-p", "command", "7z a -p'{pw}' -mhe=on secrets.7z ./keys"),
    (
        "cmd-gpg-passphrase",
        "command",
        "gpg --batch --pinentry-mode loopback --passphrase '{pw}' -d vault.gpg",
    ),
    (
        "cmd-restic-env",
        "command",
        "RESTIC_PASSWORD='{pw}' restic -r s3:s3.amazonaws.com/backups snapshots",
    ),
    ("cmd-rabbitmqctl", "command", "rabbitmqctl add_user {user} '{pw}'"),
    (
        "cmd-mosquitto-pub",
        "command",
        "mosquitto_pub -h {host} -u {user} -P '{pw}' -t sensors/temp -m 21.5",
    ),
    ("cmd-nmcli-wifi", "command", "nmcli dev wifi connect HomeNet-5G password '{pw}'"),
    ("cmd-htpasswd-b", "command", "htpasswd -b -c /etc/nginx/.htpasswd {user} '{pw}'"),
    ("cmd-mc-alias", "command", "mc alias set minio https://s3.{host} {user} {tok}"),
    (
        "cmd-rclone-config",
        "command",
        "rclone config create r2 s3 provider=Cloudflare access_key_id=0b5f3a8c2d1e4f6a7b8c9d0e1f2a3b4c secret_access_key={tok}",
    ),
    (
        "cmd-s3cmd",
        "command",
        "s3cmd --access_key=AKIAX3D2YQ7LRT5NBW4E --secret_key={tok} ls s3://logs",
    ),
    (
        "cmd-jenkins-cli",
        "command",
        "java -jar jenkins-cli.jar -s https://ci.{host}/ -auth {user}:{tok} build deploy-prod",
    ),
    (
        "cmd-sonar-scanner",
        "command",
        "sonar-scanner -Dsonar.projectKey=web -Dsonar.host.url=https://sonar.{host} -Dsonar.token={tok}",
    ),
    ("cmd-heroku-config", "command", "heroku config:set STRIPE_SECRET_KEY={tok} -a shop-prod"),
    ("cmd-fly-secrets", "command", "fly secrets set DATABASE_PASSWORD='{pw}' -a api-prod"),
    (
        "cmd-continuation",
        "command",
        "docker run --rm \\\n  -e DB_USER={user} \\\n  -e DB_PASS='{pw}' \\\n  app:latest migrate",
    ),
]

# Tool output, config files, connection strings, URLs, prompts, JSON, code, split lines.
FILES: list[Template] = [
    (
        "out-aws-sts",
        "tool output",
        '{{\n    "Credentials": {{\n        "AccessKeyId": "ASIAQ4RZ7KX2M5TBNW3D",\n        "SecretAccessKey": "{tok}",\n        "Expiration": "2026-11-27T20:14:03+00:00"\n    }}\n}}',
    ),
    (
        "out-az-sp-create",
        "tool output",
        '{{\n  "appId": "6c0f8a2e-94b1-4d7c-b3e5-0a9f1d2c8e47",\n  "displayName": "ci-deployer",\n  "password": "{pw}",\n  "tenant": "72f988bf-86f1-41af-91ab-2d7cd011db47"\n}}',
    ),
    (
        "out-kubectl-get-secret",
        "tool output",
        "apiVersion: v1\ndata:\n  password: {b64pw}\n  username: YWRtaW4=\nkind: Secret\nmetadata:\n  name: db-creds",
    ),
    (
        "out-docker-inspect-env",
        "tool output",
        '            "Env": [\n                "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin",\n                "POSTGRES_PASSWORD={pw}",\n                "PGDATA=/var/lib/postgresql/data"\n            ],',
    ),
    (
        "out-printenv",
        "tool output",
        "HOME=/home/dev\nLANG=C.UTF-8\nOPENAI_API_KEY={tok}\nPATH=/usr/local/bin:/usr/bin:/bin",
    ),
    (
        "out-vault-kv-get",
        "tool output",
        "====== Data ======\nKey         Value\n---         -----\npassword    {pw}\nusername    {user}",
    ),
    (
        "out-heroku-config",
        "tool output",
        "=== shop-prod Config Vars\nDATABASE_URL:      postgres://{user}:{pw}@ec2-54-87-12-9.compute-1.amazonaws.com:5432/d8l2",
    ),
    (
        "out-git-config-list",
        "tool output",
        "core.editor=vim\nremote.origin.url=https://{user}:{tok}@github.com/acme/infra.git\nbranch.main.remote=origin",
    ),
    (
        "out-terraform-output",
        "tool output",
        'db_endpoint = "prod-pg.c9x2k1.eu-west-1.rds.amazonaws.com"\ndb_password = "{pw}"',
    ),
    (
        "out-http-log",
        "tool output",
        '10.0.4.17 - - [27/Nov/2026:17:02:11 +0000] "GET /api/export?api_key={tok}&fmt=csv HTTP/1.1" 200 5120',
    ),
    ("cfg-netrc", "config", "machine api.{host}\n  login {user}\n  password {pw}"),
    ("cfg-netrc-one-line", "config", "machine github.com login {user} password {tok}"),
    (
        "cfg-npmrc",
        "config",
        "registry=https://registry.npmjs.org/\n//npm.pkg.github.com/:_authToken={tok}\n@acme:registry=https://npm.pkg.github.com",
    ),
    (
        "cfg-npmrc-basic",
        "config",
        "//nexus.{host}/repository/npm/:username={user}\n//nexus.{host}/repository/npm/:_password={b64pw}",
    ),
    (
        "cfg-pypirc",
        "config",
        "[distutils]\nindex-servers = pypi\n\n[pypi]\nusername = __token__\npassword = {tok}",
    ),
    (
        "cfg-pip-conf",
        "config",
        "[global]\nextra-index-url = https://{user}:{pw}@pkgs.{host}/simple",
    ),
    (
        "cfg-docker-config",
        "config",
        '{{\n  "auths": {{\n    "registry.{host}": {{\n      "auth": "{b64userpw}"\n    }}\n  }}\n}}',
    ),
    (
        "cfg-web-config",
        "config",
        '<connectionStrings>\n  <add name="Main" connectionString="Server={host};Database=Sales;User Id={user};Password={pw};" providerName="System.Data.SqlClient" />\n</connectionStrings>',
    ),
    (
        "cfg-appsettings-json",
        "config",
        '{{\n  "ConnectionStrings": {{\n    "Default": "Host={host};Database=app;Username={user};Password={pw}"\n  }}\n}}',
    ),
    (
        "cfg-nuget-config",
        "config",
        '<packageSourceCredentials>\n  <internal>\n    <add key="Username" value="{user}" />\n    <add key="ClearTextPassword" value="{pw}" />\n  </internal>\n</packageSourceCredentials>',
    ),
    (
        "cfg-compose-yaml",
        "config",
        'services:\n  db:\n    image: mariadb:11\n    environment:\n      MARIADB_ROOT_PASSWORD: "{pw}"',
    ),
    (
        "cfg-k8s-stringdata",
        "config",
        "apiVersion: v1\nkind: Secret\nmetadata:\n  name: smtp\nstringData:\n  SMTP_PASSWORD: '{pw}'",
    ),
    (
        "cfg-spring-yaml",
        "config",
        "spring:\n  datasource:\n    url: jdbc:postgresql://{host}:5432/app\n    username: {user}\n    password: '{pw}'",
    ),
    (
        "cfg-github-actions-env",
        "config",
        "    env:\n      SENTRY_AUTH_TOKEN: {tok}\n    steps:\n      - run: make release",
    ),
    ("cfg-cargo-credentials-toml", "config", '[registry]\ntoken = "{tok}"'),
    (
        "cfg-streamlit-secrets-toml",
        "config",
        '[connections.snowflake]\naccount = "xy12345.eu-central-1"\nuser = "{user}"\npassword = "{pw}"',
    ),
    (
        "cfg-dotenv",
        "config",
        "APP_ENV=production\nDB_HOST={host}\nDB_PASSWORD={pw}\nREDIS_URL=redis://localhost:6379/0",
    ),
    ("cfg-dotenv-export", "config", 'export STRIPE_API_KEY="{tok}"'),
    ("cfg-my-cnf", "config", '[client]\nuser={user}\npassword="{pw}"\nhost={host}'),
    (
        "cfg-ini-odbc",
        "config",
        "[ReportingDB]\nDriver=ODBC Driver 18 for SQL Server\nServer={host}\nUID={user}\nPWD={pw}",
    ),
    (
        "cfg-properties",
        "config",
        "spring.mail.host=smtp.{host}\nspring.mail.username={user}\nspring.mail.password={pw}",
    ),
    (
        "cfg-gradle-properties",
        "config",
        "org.gradle.jvmargs=-Xmx2g\nartifactoryUser={user}\nartifactoryPassword={pw}",
    ),
    (
        "cfg-maven-settings",
        "config",
        "<server>\n  <id>nexus-releases</id>\n  <username>{user}</username>\n  <password>{pw}</password>\n</server>",
    ),
    (
        "cfg-terraform-provider",
        "config",
        'provider "aws" {{\n  region     = "eu-west-1"\n  access_key = "AKIAW7N3QX5RZ2KTBL4M"\n  secret_key = "{tok}"\n}}',
    ),
    ("cfg-tfvars", "config", 'db_username = "{user}"\ndb_password = "{pw}"'),
    ("cfg-pgpass", "config", "{host}:5432:*:{user}:{pw}"),
    ("cfg-git-credentials", "config", "https://{user}:{tok}@github.com"),
    (
        "cfg-s3cfg",
        "config",
        "[default]\naccess_key = AKIAZ2T5W8QK3MN7RB4X\nsecret_key = {tok}\nhost_base = s3.amazonaws.com",
    ),
    (
        "cfg-rclone-conf",
        "config",
        "[b2]\ntype = b2\naccount = 0025f2a8c1e3d4b0000000003\nkey = {tok}",
    ),
    ("cfg-wpa-supplicant", "config", 'network={{\n    ssid="HomeNet-5G"\n    psk="{pw}"\n}}'),
    (
        "cfg-wp-config",
        "config",
        "define( 'DB_NAME', 'wordpress' );\ndefine( 'DB_USER', '{user}' );\ndefine( 'DB_PASSWORD', '{pw}' );",
    ),
    (
        "cfg-django-settings",
        "config",
        "DATABASES = {{\n    'default': {{\n        'ENGINE': 'django.db.backends.postgresql',\n        'USER': '{user}',\n        'PASSWORD': '{pw}',\n    }}\n}}",
    ),
    (
        "cfg-rails-database-yml",
        "config",
        "production:\n  adapter: postgresql\n  username: {user}\n  password: <%= ENV.fetch('DB_PASS', '{pw}') %>",
    ),
    (
        "cfg-kafka-jaas",
        "config",
        'sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required username="{user}" password="{pw}";',
    ),
    ("cfg-kubeconfig-token", "config", "users:\n- name: ci\n  user:\n    token: {tok}"),
    (
        "cfg-gh-hosts-yml",
        "config",
        "github.com:\n    oauth_token: {tok}\n    user: {user}\n    git_protocol: https",
    ),
    (
        "cfg-composer-auth",
        "config",
        '{{\n    "http-basic": {{\n        "repo.packagist.com": {{\n            "username": "token",\n            "password": "{tok}"\n        }}\n    }}\n}}',
    ),
    ("cfg-gem-credentials", "config", "---\n:rubygems_api_key: {tok}"),
    (
        "cfg-jenkins-credentials-xml",
        "config",
        "<com.cloudbees.plugins.credentials.impl.UsernamePasswordCredentialsImpl>\n  <username>{user}</username>\n  <password>{pw}</password>\n</com.cloudbees.plugins.credentials.impl.UsernamePasswordCredentialsImpl>",
    ),
    (
        "conn-jdbc-sqlserver",
        "connection string",
        "jdbc:sqlserver://{host}:1433;databaseName=erp;user={user};password={pw};encrypt=true",
    ),
    (
        "conn-jdbc-mysql",
        "connection string",
        "jdbc:mysql://{host}:3306/shop?user={user}&password={pw}&useSSL=true",
    ),
    (
        "conn-ado-net",
        "connection string",
        "Data Source={host};Initial Catalog=Billing;User ID={user};Password={pw};TrustServerCertificate=True",
    ),
    (
        "conn-odbc-pwd",
        "connection string",
        "Driver={{PostgreSQL Unicode}};Server={host};Port=5432;Database=gis;Uid={user};Pwd={pw};",
    ),
    (
        "conn-azure-servicebus",
        "connection string",
        "Endpoint=sb://acme-bus.servicebus.windows.net/;SharedAccessKeyName=RootManageSharedAccessKey;SharedAccessKey={tok}",
    ),
    (
        "conn-azure-storage",
        "connection string",
        "DefaultEndpointsProtocol=https;AccountName=acmelogs;AccountKey={tok};EndpointSuffix=core.windows.net",
    ),
    ("url-postgres", "URL", "postgresql://{user}:{pw}@{host}:5432/warehouse?sslmode=require"),
    ("url-amqp", "URL", "amqps://{user}:{pw}@rabbit.{host}:5671/%2f"),
    ("url-redis", "URL", "rediss://default:{pw}@cache.{host}:6380/0"),
    ("url-smtp", "URL", "smtp://{user}:{pw}@smtp.{host}:587"),
    ("url-ftp", "URL", "ftp://{user}:{pw}@ftp.{host}/incoming/"),
    ("url-proxy", "URL", "export https_proxy=http://{user}:{pw}@proxy.{host}:3128"),
    ("url-query-token", "URL", "https://api.{host}/v1/download?id=8841&access_token={tok}"),
    (
        "prompt-password",
        "prompt",
        "The staging DB password is {pw}, can you check why the migration fails?",
    ),
    (
        "prompt-api-key",
        "prompt",
        "use this key for the test: {tok} and tell me if the endpoint answers",
    ),
    (
        "prompt-login",
        "prompt",
        "log in as {user} with password {pw} and click through the checkout",
    ),
    ("prompt-fr", "prompt", "mon mot de passe pour le VPN est {pw}, note-le dans la config"),
    ("json-body", "JSON", '{{"username": "{user}", "password": "{pw}", "remember": true}}'),
    (
        "json-client-secret",
        "JSON",
        '{{"installed":{{"client_id":"48213.apps.googleusercontent.com","client_secret":"{tok}","redirect_uris":["http://localhost"]}}}}',
    ),
    (
        "json-nested-token",
        "JSON",
        '{{"integrations": {{"pagerduty": {{"routing_key": "{tok}"}}}}}}',
    ),
    (
        "code-python-psycopg",
        "code",
        'conn = psycopg2.connect(host="{host}", user="{user}", password="{pw}", dbname="app")',
    ),
    (
        "code-python-requests-auth",
        "code",
        'resp = requests.get(url, auth=("{user}", "{pw}"), timeout=10)',
    ),
    ("code-python-header", "code", 'headers = {{"Authorization": f"token {tok}"}}'),
    (
        "code-js-client",
        "code",
        "const client = new Client({{ host: '{host}', user: '{user}', password: '{pw}' }});",
    ),
    ("code-js-fetch", "code", "await fetch(url, {{ headers: {{ 'x-api-key': '{tok}' }} }});"),
    ("code-go-dsn", "code", 'db, err := sql.Open("mysql", "{user}:{pw}@tcp({host}:3306)/orders")'),
    (
        "code-java-drivermanager",
        "code",
        'Connection c = DriverManager.getConnection(url, "{user}", "{pw}");',
    ),
    (
        "code-csharp-networkcredential",
        "code",
        'client.Credentials = new NetworkCredential("{user}", "{pw}");',
    ),
    (
        "code-ruby-smtp",
        "code",
        "Net::SMTP.start('smtp.{host}', 587, 'localhost', '{user}', '{pw}', :login)",
    ),
    ("code-php-pdo", "code", "$pdo = new PDO('mysql:host={host};dbname=shop', '{user}', '{pw}');"),
    (
        "code-rust-basic-auth",
        "code",
        'let res = client.get(url).basic_auth("{user}", Some("{pw}")).send().await?;',
    ),
    ("code-kotlin-const", "code", 'private const val API_TOKEN = "{tok}"'),
    ("code-shell-export", "code", "export GITLAB_TOKEN='{tok}'"),
    ("code-powershell-env", "code", "$env:AZURE_CLIENT_SECRET = '{pw}'"),
    (
        "out-ecr-login-password",
        "tool output",
        "$ aws ecr get-login-password --region eu-west-1\n{tok}",
    ),
    ("out-gcloud-access-token", "tool output", "$ gcloud auth print-access-token\n{tok}"),
    (
        "out-az-access-token",
        "tool output",
        '{{\n  "accessToken": "{tok}",\n  "expiresOn": "2026-11-27 19:41:07.000000",\n  "tokenType": "Bearer"\n}}',
    ),
    (
        "out-kubectl-create-token",
        "tool output",
        "$ kubectl create token ci-deployer -n build\n{tok}",
    ),
    (
        "out-aws-configure-prompt",
        "tool output",
        "AWS Access Key ID [None]: AKIAR3WQ5TZ7N2KX8B4M\nAWS Secret Access Key [None]: {tok}\nDefault region name [None]: eu-west-1",
    ),
    (
        "out-netsh-wlan-key",
        "tool output",
        "Security settings\n-----------------\n    Authentication         : WPA2-Personal\n    Security key           : Present\n    Key Content            : {pw}",
    ),
    (
        "out-shell-xtrace",
        "tool output",
        "+ curl -sf -u {user}:{pw} https://artifacts.{host}/api/v1/upload\n+ echo done",
    ),
    (
        "out-compose-config",
        "tool output",
        "    environment:\n      POSTGRES_DB: app\n      POSTGRES_PASSWORD: {pw}\n    image: postgres:16",
    ),
    ("out-op-read", "tool output", "$ op read op://Private/prod-db/password\n{pw}"),
    (
        "out-vault-token-create",
        "tool output",
        "Key                  Value\n---                  -----\ntoken                {tok}\ntoken_duration       768h\ntoken_renewable      true",
    ),
    (
        "out-gh-auth-status",
        "tool output",
        "github.com\n  \u2713 Logged in to github.com account {user} (keyring)\n  - Token: {tok}",
    ),
    (
        "out-windows-set",
        "tool output",
        "C:\\Users\\dev> set\nAPPDATA=C:\\Users\\dev\\AppData\\Roaming\nDB_PASSWORD={pw}\nOS=Windows_NT",
    ),
    ("out-ansible-debug", "tool output", 'ok: [web1] => {{\n    "db_password": "{pw}"\n}}'),
    (
        "out-requests-error",
        "tool output",
        "requests.exceptions.ConnectionError: HTTPSConnectionPool(host='api.{host}', port=443): Max retries exceeded with url: /v1/items?api_key={tok} (Caused by NewConnectionError('<urllib3.connection.HTTPSConnection object at 0x7f3a2c1d5e50>: Failed to establish a new connection'))",
    ),
    (
        "out-git-auth-failed",
        "tool output",
        "remote: Invalid username or password.\nfatal: Authentication failed for 'https://{user}:{tok}@github.com/acme/app.git/'",
    ),
    ("split-wrapped-80", "split", "{wrap_tok}"),
    ("split-python-implicit", "split", 'API_KEY = (\n    "{tok_a}"\n    "{tok_b}"\n)'),
    ("split-js-concat", "split", "const key = '{tok_a}' +\n  '{tok_b}';"),
    ("split-label-next-line", "split", "Your new password:\n{pw}\nStore it somewhere safe."),
    ("split-table", "split", "NAME         TYPE     VALUE\nDB_PASSWORD  secret   {pw}"),
    ("split-yaml-block", "split", "smtp:\n  password: >-\n    {pw}"),
]

PLACEHOLDERS = (
    ("placeholder-angle", "<your-password>", "<your-token>"),
    ("placeholder-env", "$DB_PASSWORD", "$API_TOKEN"),
    ("placeholder-env-braces", "${DB_PASSWORD}", "${NPM_TOKEN}"),
    ("placeholder-actions", "${{ secrets.DB_PASSWORD }}", "${{ secrets.NPM_TOKEN }}"),
    ("placeholder-template", "{{ .Values.db.password }}", "{{ vault_api_token }}"),
    ("placeholder-masked", "********", "****************"),
    ("placeholder-x", "xxxxxxxx", "xxxxxxxxxxxxxxxxxxxxxxxx"),
    ("placeholder-your", "YOUR_PASSWORD", "YOUR_API_TOKEN"),
    ("placeholder-windows-env", "%DB_PASSWORD%", "%API_TOKEN%"),
    (
        "placeholder-command",
        "$(cat /run/secrets/db_password)",
        "$(vault kv get -field=token secret/ci)",
    ),
)


def placeholders() -> list[dict]:
    """Documentation's forms of a secret that is not there: ordinary strings (see above)."""
    rows = []
    templates = [t for t in COMMANDS + FILES if not t[0].startswith(("split-", "out-"))]
    RNG.shuffle(templates)
    for i, (kind, pw, tok) in enumerate(PLACEHOLDERS):
        for kind_, context, template in templates[4 * i : 4 * i + 4]:
            values = {
                "pw": pw,
                "tok": tok,
                "user": "deploy",
                "host": "db.example.com",
                "b64pw": pw,
                "b64userpw": pw,
                "wrap_tok": tok,
                "tok_a": tok,
                "tok_b": tok,
            }
            text = template.format(**values)
            rows.append(row("ordinary", kind, MADE, MADE_LICENSE, f"{context} ({kind_})", text))
    return rows


# Where the value has a known format, the token is of that format (a `vault login` gets a
# Vault token); elsewhere any of the formats above.
TOKEN_FOR: dict[str, str | Callable[[], str]] = {
    "cmd-aws-configure-set": lambda: rand(B64, 40),
    "cfg-terraform-provider": lambda: rand(B64, 40),
    "cfg-s3cfg": lambda: rand(B64, 40),
    "cmd-s3cmd": lambda: rand(B64, 40),
    "out-aws-sts": lambda: rand(B64, 40),
    "out-aws-configure-prompt": lambda: rand(B64, 40),
    "cmd-mc-alias": lambda: rand(ALNUM, 40),
    "cmd-rclone-config": lambda: rand(HEX, 64),
    "cfg-rclone-conf": lambda: "K005" + rand(B64, 27),
    "conn-azure-servicebus": lambda: rand(B64, 43) + "=",
    "conn-azure-storage": lambda: rand(B64, 86) + "==",
    "out-http-log": lambda: rand(HEX, 32),
    "out-requests-error": lambda: rand(ALNUM, 32),
    "json-nested-token": lambda: rand(HEX, 32),
    "cmd-jenkins-cli": lambda: "11" + rand(HEX, 32),
    "cmd-sonar-scanner": lambda: "squ_" + rand(HEX, 40),
    "cfg-composer-auth": lambda: rand(ALNUM, 40),
    "out-ecr-login-password": lambda: base64.b64encode(
        json.dumps(
            {
                "payload": rand(B64, 600),
                "datakey": rand(B64, 300),
                "version": "2",
                "type": "DATA_KEY",
                "expiration": 1764312000,
            }
        ).encode()
    ).decode(),
    "cmd-kubectl-set-credentials": "jwt-bearer",
    "cfg-kubeconfig-token": "jwt-bearer",
    "out-kubectl-create-token": "jwt-bearer",
    "out-az-access-token": "jwt-bearer",
    "out-gcloud-access-token": "google-oauth-access",
    "url-query-token": "google-oauth-access",
    "cmd-vault-login": "hashicorp-vault-service",
    "out-vault-token-create": "hashicorp-vault-service",
    "cmd-npm-config-set": "npm-token",
    "cmd-yarn-config": "npm-token",
    "cfg-npmrc": "npm-token",
    "cmd-twine-upload": "pypi-token",
    "cfg-pypirc": "pypi-token",
    "cmd-cargo-login": "cargo-token",
    "cfg-cargo-credentials-toml": "cargo-token",
    "cmd-gem-push-key": "rubygems",
    "cfg-gem-credentials": "rubygems",
    "cmd-nuget-push": "nuget-api-key",
    "cmd-git-clone-token": "gitlab-pat",
    "cmd-glab-auth": "gitlab-pat",
    "code-shell-export": "gitlab-pat",
    "cmd-git-extraheader": "github-fine-grained",
    "cfg-git-credentials": "github-fine-grained",
    "cmd-gh-auth-token": "github-pat-classic",
    "cfg-netrc-one-line": "github-pat-classic",
    "out-git-config-list": "github-pat-classic",
    "out-git-auth-failed": "github-pat-classic",
    "code-python-header": "github-pat-classic",
    "cfg-gh-hosts-yml": "github-oauth",
    "out-gh-auth-status": "github-oauth",
    "cmd-heroku-config": "stripe-live-secret",
    "cfg-dotenv-export": "stripe-live-secret",
    "out-printenv": "openai-project",
    "cfg-github-actions-env": "sentry-user",
    "json-client-secret": "google-oauth-client-secret",
    "prompt-api-key": "anthropic-api",
}
# Values that sit in a URL, a connection string or a Windows command: no `@ : / ; % # ?`.
URL_LIKE = (
    "url-",
    "conn-",
    "cfg-netrc",
    "cfg-pgpass",
    "cfg-web-config",
    "cfg-appsettings-json",
    "cmd-net-",
    "cmd-cmdkey",
    "cmd-schtasks",
    "cmd-psexec",
    "cmd-wmic",
)

HOSTS = ("db.internal.acme.io", "pg-prod-01.corp.local", "corp-sql.contoso.local", "acme.dev")
USERS = ("deploy", "svc_backup", "jmartin", "admin_ro", "ci-bot", "analytics")


def made_here() -> list[dict]:
    rows: list[dict] = []
    tokens = token_formats()
    # Each token format once in a context that names it, once bare in a second context.
    for kind, tok in tokens:
        env = kind.upper().replace("-", "_")
        rows.append(row("secret", kind, MADE, MADE_LICENSE, "env assignment", f"{env}={tok}", tok))
        rows.append(
            row(
                "secret",
                kind,
                MADE,
                MADE_LICENSE,
                "prompt",
                f"here is the token we use in CI: {tok} (rotate it next week)",
                tok,
            )
        )
    plain_tokens = [t for k, t in tokens if not t.startswith(("https://", "FlyV1 "))]
    style = 0
    for kind, context, template in COMMANDS + FILES:
        for _ in range(2 if kind.startswith(("cmd-", "cfg-")) else 1):
            # A command's unquoted argument cannot hold `$`, a backtick, `&` or `;`; a quoted
            # one and a file's value can.
            shell_safe = kind.startswith("cmd-") and "'{pw}'" not in template
            pw = password(style, shell_safe=shell_safe)
            style += 1
            if "{pw}@" in template or kind.startswith(URL_LIKE):
                pw = re.sub(r"[@:/;%#? ^$`&|]", "", pw) or "Kt7vQm2x"
            if "</" in template or "/>" in template:
                pw = pw.replace("&", "")  # XML would escape it
            user = RNG.choice(USERS)
            host = RNG.choice(HOSTS)
            made = TOKEN_FOR.get(kind)
            if made is None:
                tok = RNG.choice(plain_tokens)
            elif isinstance(made, str):
                tok = dict(token_formats())[made]  # a new token of that format each time
            else:
                tok = made()
            values = {
                "pw": pw,
                "user": user,
                "host": host,
                "tok": tok,
                "b64pw": base64.b64encode(pw.encode()).decode(),
                "b64userpw": base64.b64encode(f"{user}:{pw}".encode()).decode(),
            }
            if kind.startswith("split-"):
                long_tok = RNG.choice([t for t in plain_tokens if len(t) > 90])
                values["wrap_tok"] = "\n".join(
                    (f"token: {long_tok}")[j : j + 80] for j in range(0, len(long_tok) + 7, 80)
                )
                half = len(tok) // 2
                values["tok_a"], values["tok_b"] = tok[:half], tok[half:]
            text = template.format(**values)
            if "{b64pw}" in template:
                secret = values["b64pw"]
            elif "{b64userpw}" in template:
                secret = values["b64userpw"]
            elif "{wrap_tok}" in template:
                # The token's piece on the second line, whole: what a reader could copy.
                secret = text.split("\n")[1]
            elif "{tok_a}" in template:
                secret = values["tok_b"]
            elif "{tok}" in template:
                secret = tok
            else:
                secret = pw
            rows.append(row("secret", kind, MADE, MADE_LICENSE, context, text, secret))
    return rows


# ---------------------------------------------------------------------------------------------
# Ordinary strings: real material that only looks secret
# ---------------------------------------------------------------------------------------------

# Fixed before sampling: a line holding a value under a secret's name, a provider's key or a
# private key is not an ordinary string (it may be a real or a test secret).
CREDENTIAL = re.compile(
    r"""(?ix)
    (pass(word|wd)?|secret|token|api[_-]?key|auth|credential)\w*["']?\s*[:=]\s*["']?
        (?!\$|<|\{|\(|null|none|true|false|""|'')[^\s"',;]{6,}
    | AKIA[0-9A-Z]{16} | gh[pousr]_[A-Za-z0-9]{20} | xox[abpr]- | sk_live_ | -----BEGIN[^-]*PRIVATE
    | ://[^/\s:@]+:[^/\s@]+@
    """
)


PLACEHOLDER = r"""(?:YOUR_\w+|<[^>\s]+>|X{6,}|x{6,}|\*{6,}|\$\{\{[^}]+\}\}|\$\{?[A-Z_][A-Z0-9_]*\}?|\$\([^)]*\)|%[A-Z_]+%|REDACTED|\{\{[^}]+\}\})"""
PLACEHOLDER_ASSIGNMENT = re.compile(
    rf"""(?i)(?:pass(?:word)?|secret|token|key|username)\w*["']?\s*(?:[:=]|\s)\s*["']?{PLACEHOLDER}"""
)


def only_placeholders(line: str) -> bool:
    """Every value under a secret's name on the line is a placeholder (and there is one)."""
    values = re.findall(
        r"""(?i)(?:pass(?:word)?|secret|token|api_?key)\w*["']?\s*[:=]\s*["']?([^\s"',;]+)""", line
    )
    return all(re.fullmatch(PLACEHOLDER + r"[\w./-]*", v) for v in values)


def clean(line: str) -> bool:
    return 8 <= len(line.strip()) <= 400 and not CREDENTIAL.search(line)


def sample(items: list[str], n: int) -> list[str]:
    items = list(dict.fromkeys(i for i in items if clean(i)))
    RNG.shuffle(items)
    return items[:n]


def trivy_lines(repo: Repo, paths: list[str], want: Callable[[str], bool]) -> list[tuple[str, str]]:
    out = []
    for path in paths:
        try:
            text = repo.read(path)
        except subprocess.CalledProcessError:
            continue
        out += [(path, ln.rstrip()) for ln in text.splitlines() if want(ln)]
    return out


def ordinary_from_trivy(repo: Repo) -> list[dict]:
    rows: list[dict] = []
    files = repo.files("")
    outside_secrets = [f for f in files if "/secret" not in f and "secret" not in Path(f).name]

    def add(kind: str, context: str, picks: list[tuple[str, str]], n: int) -> None:
        by_line = {ln: p for p, ln in picks}
        for line in sample(list(by_line), n):
            rows.append(
                row(
                    "ordinary",
                    kind,
                    repo.source(by_line[line]),
                    repo.license,
                    context,
                    line.strip(),
                )
            )

    def named(suffix: str) -> list[str]:
        return [f for f in outside_secrets if f.endswith(suffix)]

    add(
        "npm-integrity",
        "package-lock.json",
        trivy_lines(repo, named("package-lock.json"), lambda ln: '"integrity"' in ln),
        15,
    )
    add(
        "yarn-lock",
        "yarn.lock",
        trivy_lines(repo, named("yarn.lock"), lambda ln: "integrity " in ln or "resolved " in ln),
        12,
    )
    add("go-sum", "go.sum", trivy_lines(repo, named("go.sum"), lambda ln: " h1:" in ln), 15)
    add(
        "cargo-lock-checksum",
        "Cargo.lock",
        trivy_lines(repo, named("Cargo.lock"), lambda ln: ln.startswith("checksum")),
        8,
    )
    add(
        "poetry-lock-hash",
        "poetry.lock",
        trivy_lines(repo, named("poetry.lock"), lambda ln: "sha256:" in ln),
        10,
    )
    goldens = [f for f in outside_secrets if f.endswith((".golden", ".json")) and "testdata" in f][
        :400
    ]
    add(
        "image-digest",
        "scan report",
        trivy_lines(repo, goldens, lambda ln: re.search(r"sha256:[0-9a-f]{64}", ln) is not None),
        15,
    )
    add(
        "sbom-uuid",
        "SBOM",
        trivy_lines(
            repo,
            goldens,
            lambda ln: (
                re.search(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", ln)
                is not None
            ),
        ),
        10,
    )
    iac = [
        f
        for f in outside_secrets
        if f.startswith("pkg/iac/") and f.endswith(("_test.go", ".json", ".yaml", ".tf"))
    ][:1500]
    add("aws-arn", "IaC test", trivy_lines(repo, iac, lambda ln: "arn:aws:" in ln), 12)
    code = [
        f
        for f in outside_secrets
        if f.endswith(".go") and not f.endswith("_test.go") and f.startswith("pkg/")
    ][:2500]
    add(
        "code-identifier",
        "Go code",
        trivy_lines(
            repo,
            code,
            lambda ln: (
                re.search(r"(?i)password|passwd|token|secret|apikey|api_key|credential", ln)
                is not None
                and '"' not in ln
            ),
        ),
        25,
    )
    add(
        "code-string-naming",
        "Go code",
        trivy_lines(
            repo,
            code,
            lambda ln: re.search(r'"[^"]*(?i:password|token|secret|key)[^"]*"', ln) is not None,
        ),
        15,
    )
    docs = [f for f in files if f.startswith("docs/") and f.endswith(".md")]
    add(
        "docs-url",
        "documentation",
        trivy_lines(
            repo,
            docs,
            lambda ln: (
                re.search(r"https?://\S*(?i:token|secret|password|key|auth|credential)", ln)
                is not None
            ),
        ),
        15,
    )
    placeholder_lines = [
        (p, ln)
        for p, ln in trivy_lines(
            repo, docs, lambda ln: PLACEHOLDER_ASSIGNMENT.search(ln) is not None
        )
        if only_placeholders(ln)
    ]
    for path, line in placeholder_lines[:15]:
        rows.append(
            row(
                "ordinary",
                "placeholder-docs",
                repo.source(path),
                repo.license,
                "documentation",
                line.strip(),
            )
        )
    return rows


def ordinary_from_code_server(root: Path) -> list[dict]:
    rows: list[dict] = []
    version = json.loads((root / "package.json").read_text())["version"]
    source = f"coder/code-server {version} (npm package)"
    css_lines: list[tuple[str, str]] = []
    data_uris: list[tuple[str, str]] = []
    for css in sorted(root.rglob("*.css"))[:3000]:
        try:
            text = css.read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        rel = str(css.relative_to(root))
        for ln in text.splitlines():
            if re.search(r"(?i)password|token|secret|key", ln) and "{" in ln:
                css_lines.append((rel, ln.strip()[:300]))
            m = re.search(r"data:image/[a-z+]+;base64,[A-Za-z0-9+/=]{60,}", ln)
            if m:
                data_uris.append((rel, f"background-image: url({m.group()[:240]}"))
    minified: list[tuple[str, str]] = []
    for js in sorted(root.rglob("*.min.js"))[:300]:
        text = js.read_text(encoding="utf-8", errors="replace")
        for m in re.finditer(r"(?i)key|token|hash", text):
            start = max(0, m.start() - 100)
            minified.append(
                (str(js.relative_to(root)), text[start : start + 220].replace("\n", " "))
            )
    for kind, context, picks, n in (
        ("css-selector", "CSS", css_lines, 15),
        ("base64-image", "CSS", data_uris, 10),
        ("minified-js", "JavaScript", minified, 12),
    ):
        by_line = {ln: p for p, ln in picks}
        for line in sample(list(by_line), n):
            rows.append(row("ordinary", kind, f"{source}:{by_line[line]}", "MIT", context, line))
    return rows


def run(*cmd: str, input_: str | None = None) -> str:
    try:
        return subprocess.run(cmd, capture_output=True, text=True, input=input_, timeout=60).stdout
    except (OSError, subprocess.TimeoutExpired):
        return ""


def ordinary_from_tools(trivy: Repo) -> list[dict]:
    rows: list[dict] = []

    def add(kind: str, context: str, command: str, lines: list[str], n: int) -> None:
        for line in sample(lines, n):
            rows.append(
                row("ordinary", kind, f"output of `{command}` here", REAL_LICENSE, context, line)
            )

    with tempfile.TemporaryDirectory() as tmp:
        pubs, fingerprints = [], []
        for t in ("ed25519", "rsa", "ecdsa"):
            key = Path(tmp) / f"id_{t}"
            run("ssh-keygen", "-q", "-t", t, "-N", "", "-C", f"dev@workstation-{t}", "-f", str(key))
            pubs.append((key.with_suffix(".pub")).read_text().strip())
            fingerprints += run("ssh-keygen", "-lf", str(key.with_suffix(".pub"))).splitlines()
            fingerprints += run(
                "ssh-keygen", "-E", "md5", "-lf", str(key.with_suffix(".pub"))
            ).splitlines()
        add("ssh-public-key", "~/.ssh/id_*.pub", "ssh-keygen", pubs, 3)
        add("ssh-fingerprint", "tool output", "ssh-keygen -lf", fingerprints, 6)
        known = Path(tmp) / "known_hosts"
        known.write_text(
            "".join(
                f"{h} {p.rsplit(' ', 1)[0]}\n"
                for h, p in zip(("github.com", "gitlab.com", "10.0.0.5"), pubs, strict=True)
            )
        )
        run("ssh-keygen", "-H", "-f", str(known))
        add(
            "known-hosts-hashed",
            "~/.ssh/known_hosts",
            "ssh-keygen -H",
            known.read_text().splitlines(),
            3,
        )
    keytool = run("keytool", "-list", "-cacerts", "-storepass", "changeit")
    add(
        "cert-fingerprint",
        "tool output",
        "keytool -list -cacerts",
        [ln for ln in keytool.splitlines() if "fingerprint" in ln],
        8,
    )
    sums = run("sh", "-c", "sha256sum /usr/bin/* 2>/dev/null | head -400")
    add("sha256sum", "tool output", "sha256sum /usr/bin/*", sums.splitlines(), 8)
    md5 = run("sh", "-c", "md5sum /etc/*.conf 2>/dev/null")
    add("md5sum", "tool output", "md5sum /etc/*.conf", md5.splitlines(), 4)
    git_log = trivy.log("-300", "--format=%H %an %s")
    add(
        "git-log-sha",
        "tool output",
        "git log --format='%H %an %s' (trivy)",
        git_log.splitlines(),
        10,
    )
    short = trivy.log("-300", "--oneline", "--decorate=no")
    add("git-log-oneline", "tool output", "git log --oneline (trivy)", short.splitlines(), 5)
    npm = run("npm", "config", "ls", "-l")
    add(
        "npm-config-list",
        "tool output",
        "npm config ls -l",
        [ln for ln in npm.splitlines() if re.search(r"(?i)auth|key|cert|token|pass|integrity", ln)],
        8,
    )
    dgst = [
        run("openssl", "dgst", "-sha256", p).strip()
        for p in ("/etc/hostname", "/etc/os-release", "/etc/passwd", "/etc/group")
    ]
    add("openssl-dgst", "tool output", "openssl dgst -sha256", dgst, 3)
    uuids = [run("cat", "/proc/sys/kernel/random/uuid").strip() for _ in range(3)]
    add(
        "uuid",
        "tool output",
        "cat /proc/sys/kernel/random/uuid",
        [f"request_id={u}" for u in uuids],
        3,
    )
    kube = run("kubectl", "config", "view")
    add(
        "kubectl-config-view",
        "tool output",
        "kubectl config view",
        [ln for ln in kube.splitlines() if ln.strip()],
        4,
    )
    png = next(iter(sorted(Path("/usr/share").rglob("*.png"))), None)
    if png is not None:
        data = base64.b64encode(png.read_bytes()[:180]).decode()
        add(
            "base64-image",
            "tool output",
            f"base64 {png}",
            [f'<img src="data:image/png;base64,{data}">'],
            1,
        )
    return rows


STDLIB_MODULES = (
    "getpass.py",
    "netrc.py",
    "smtplib.py",
    "imaplib.py",
    "ftplib.py",
    "poplib.py",
    "hmac.py",
    "secrets.py",
    "ssl.py",
    "urllib/request.py",
    "http/cookiejar.py",
    "http/client.py",
    "hashlib.py",
    "base64.py",
    "uuid.py",
    "email/utils.py",
)


def ordinary_from_python_stdlib() -> list[dict]:
    """Lines of CPython's standard library naming passwords, keys, tokens and hashes."""
    import sysconfig

    root = Path(sysconfig.get_paths()["stdlib"])
    version = sysconfig.get_python_version()
    picks: dict[str, str] = {}
    for module in STDLIB_MODULES:
        path = root / module
        if not path.exists():
            continue
        for line in path.read_text(encoding="utf-8").splitlines():
            code = line.strip()
            if code.startswith("#") or not re.search(
                r"(?i)passw|token|secret|\bkey|digest|hash", code
            ):
                continue
            picks.setdefault(code, module)
    return [
        row(
            "ordinary",
            "python-identifier",
            f"CPython {version} Lib/{picks[ln]}",
            "PSF-2.0",
            "Python code",
            ln,
        )
        for ln in sample(list(picks), 20)
    ]


def ordinary_from_logs() -> list[dict]:
    """Log lines of this machine that mention keys, certificates, hashes or authentication."""
    rows = []
    for log in (
        "/var/log/dpkg.log",
        "/var/log/apt/history.log",
        "/var/log/apt/term.log",
        "/var/log/alternatives.log",
        "/var/log/postgresql/postgresql-15-main.log",
    ):
        try:
            text = Path(log).read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        lines = [
            ln
            for ln in text.splitlines()
            if re.search(r"(?i)key|cert|ssl|gpg|hash|auth|token|passw|crypt", ln)
        ]
        rows += [
            row("ordinary", "log-line", f"{log} here", REAL_LICENSE, "log", ln)
            for ln in sample(lines, 4)
        ]
    wheels = sorted(Path("/root/.pyenv").glob("versions/*/lib/python*/ensurepip/_bundled/*.whl"))[
        :3
    ]
    for wheel in wheels:
        out = run("pip", "hash", str(wheel)).strip().replace(str(wheel.parent) + "/", "")
        if out:
            rows.append(
                row(
                    "ordinary",
                    "pip-hash",
                    "output of `pip hash` here",
                    REAL_LICENSE,
                    "tool output",
                    out,
                )
            )
    return rows


def ordinary_routes_from_botocore() -> list[dict]:
    """HTTP routes of AWS APIs that name keys, tokens and secrets (botocore's models)."""
    try:
        import botocore  # the AWS CLI's library, when installed
    except ImportError:
        return []
    root = Path(botocore.__file__).parent / "data"
    routes: list[tuple[str, str]] = []
    for model in sorted(root.glob("*/*/service-2.json*")):
        raw = model.read_bytes()
        data = json.loads(gzip.decompress(raw) if model.suffix == ".gz" else raw)
        for name, op in sorted(data.get("operations", {}).items()):
            http = op.get("http", {})
            uri = http.get("requestUri", "")
            if re.search(r"(?i)key|token|secret|password|credential", uri):
                routes.append(
                    (model.parent.parent.name, f"{http.get('method', 'GET')} {uri}  # {name}")
                )
    by_line = {ln: svc for svc, ln in routes}
    version = botocore.__version__
    return [
        row(
            "ordinary",
            "api-route",
            f"boto/botocore {version}:data/{by_line[ln]}/service-2.json",
            "Apache-2.0",
            "API route",
            ln,
        )
        for ln in sample(list(by_line), 15)
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--trivy", type=Path, required=True)
    parser.add_argument("--twoms", type=Path, required=True)
    parser.add_argument("--code-server", type=Path)
    args = parser.parse_args()
    trivy = Repo(args.trivy, "aquasecurity/trivy", "Apache-2.0")
    twoms = Repo(args.twoms, "Checkmarx/2ms", "Apache-2.0")
    rows = from_trivy(trivy) + from_twoms(twoms) + made_here()
    rows += ordinary_from_trivy(trivy) + ordinary_from_tools(trivy) + placeholders()
    rows += ordinary_routes_from_botocore() + ordinary_from_python_stdlib() + ordinary_from_logs()
    if args.code_server:
        rows += ordinary_from_code_server(args.code_server)
    seen: set[tuple[str, str, str]] = set()
    unique = []
    for r in rows:
        key = (r["type"], r["text"], r.get("secret", ""))
        if key not in seen:
            seen.add(key)
            unique.append(r)
    OUT.write_text(
        "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in unique), encoding="utf-8"
    )
    counts = collections.Counter(r["type"] for r in unique)
    kinds = len({r["kind"] for r in unique if r["type"] == "secret"})
    print(f"{OUT}: {dict(counts)}, {kinds} kinds of secret")


if __name__ == "__main__":
    main()
