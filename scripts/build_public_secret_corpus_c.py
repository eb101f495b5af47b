"""Build tests/core/public_secret_corpus_c.jsonl: a third corpus, all of it held out.

Corpus C is made from sources neither corpus A nor corpus B used, to measure engram's
redaction on examples its detector was never built from (issue 29: "on new public examples").
Nobody tuning the detector may read it; its figures are measured, never looked at case by case
(`scripts/measure_redaction.py --corpus-c` prints them by family only).

Run with checkouts (or bare clones) of the sources (any Python 3.11; not part of engram):

    python scripts/build_public_secret_corpus_c.py \
        --whispers ~/src/whispers --ripsecrets ~/src/ripsecrets --ggshield ~/src/ggshield

Secrets (each line names its source file and commit, and the source's license):
- Skyscanner/whispers `tests/fixtures/*` (Apache-2.0): every line of a fixture's non-compliant
  part whose value holds `hardcoded` (whispers' own tests assert that every value it reports
  holds that word), the secret being that value; plus the fixtures whispers detects by key
  (AWS keys, private keys, Jenkins' API token and password hash).
- sirwart/ripsecrets `test/one_per_line/*`, `test/one_per_file/*` (MIT): each line (file) holds
  one secret; the secret is the value (after `=`, `:` or between tags) or the whole token.
  Its `test/none` strings are its negative examples (`"type": "negative"`), except two real
  keys it only skips because of an allowlist comment or its ignore file: secrets.
- GitGuardian/ggshield `tests/unit/conftest.py` (MIT): the test patches with the matches its
  scan results report (passwords, keys, a private key given as a diff).
- made here, in the contexts an agent shows a secret in (issue 29, item 2): tokens generated
  from the formats their providers document (GitHub's token formats with their CRC32
  checksum, AWS, Slack, Stripe, OpenAI, Anthropic, GitLab, npm, PyPI, Google, ... ), a private
  key made here by `openssl`, and passwords, placed in command arguments (`docker login -p`,
  `curl -u`, `mysql -p`, `aws configure set`, PowerShell `-Password`, `sshpass`, `sqlcmd -P`,
  `kubectl --from-literal`, ...), tool output, config files (.netrc, .npmrc, .pypirc, docker
  `config.json`, .NET config and connection strings, YAML, TOML, `.env`), URLs with
  credentials, prompts, JSON, code, and split across lines.

Ordinary strings (real material of this machine, none of the kinds corpus B used): lines of
man pages and `/etc` files that mention passwords, keys, tokens or hashes; lines of JavaScript
from globally installed npm packages naming tokens and keys; output of tools run here
(`openssl x509 -text` of the system's CA certificates, `kubectl create ... --dry-run -o yaml`,
`pytest --collect-only` of engram's secret tests, `git log --stat`, `pip show`); lines of GitHub
Actions workflows of the permissive sources above (`${{ secrets.X }}`, actions pinned by
commit).

The placeholder rule, fixed before the first measurement: a value mostly of one character or
holding `xxxxxx` (corpus B's rule), holding `EXAMPLE`, written `<...>`, `${...}`, `{{...}}`,
starting with `your`, or a bare word naming itself (`PASSWORD`, `USERNAME:PASSWORD`) is a
placeholder: neither a secret nor an ordinary string (`"type": "negative"`).

Every case is held out (`"split": "holdout"`). A rebuild writes the same file except for the
private keys, which `openssl` makes anew each time: the committed file is the corpus.
"""

from __future__ import annotations

import argparse
import base64
import json
import random
import re
import string
import subprocess
import sys
import zlib
from pathlib import Path

OUT = Path(__file__).resolve().parents[1] / "tests" / "core" / "public_secret_corpus_c.jsonl"
RNG = random.Random(20261127_3)
MADE = "made for this corpus"
# engram's history is read up to a fixed commit, so the file rebuilds the same.
GIT_LOG_AT = "1c9a7ec"

ALNUM = string.ascii_letters + string.digits
HEX = "0123456789abcdef"
B64 = ALNUM + "+/"
B64URL = ALNUM + "-_"


def rand(alphabet: str, n: int) -> str:
    return "".join(RNG.choice(alphabet) for _ in range(n))


def placeholder(secret: str) -> bool:
    """Fixed before the first measurement (see the module's docstring)."""
    if "xxxxxx" in secret.lower() or "EXAMPLE" in secret:
        return True
    if re.fullmatch(r"<[^>]*>|\$\{?[\w.]+\}?|\{\{.*\}\}|\{[\w ]*\}", secret.strip()):
        return True
    if secret.lower().startswith("your"):
        return True
    words = {"password", "passwd", "secret", "token", "username:password", "apikey", "api_key"}
    if secret.lower() in words and secret.upper() == secret:
        return True
    body = re.sub(r"[^A-Za-z0-9]", "", secret)
    return len(body) >= 8 and max(body.count(c) for c in set(body)) >= 0.7 * len(body)


def row(type_: str, kind: str, source: str, context: str, text: str, secret: str = "") -> dict:
    out = {
        "type": type_,
        "split": "holdout",
        "kind": kind,
        "rule": kind,
        "source": source,
        "context": context,
        "text": text,
    }
    if secret:
        assert secret in text, (kind, secret, text)
        out["secret"] = secret
        if placeholder(secret):
            out["type"] = "negative"
    return out


class Repo:
    """A checkout or a bare clone, read at HEAD."""

    def __init__(self, path: Path, name: str, license_: str) -> None:
        self.path = path
        self.name = name
        self.license = license_
        # A checkout (or worktree) is read with -C; a bare clone by its directory.
        has_tree = (path / ".git").exists()
        self.git = ["git", "-C", str(path)] if has_tree else ["git", "--git-dir", str(path)]
        self.commit = self._run("rev-parse", "HEAD").strip()[:12]

    def _run(self, *args: str) -> str:
        return subprocess.run([*self.git, *args], capture_output=True, text=True, check=True).stdout

    def files(self, under: str) -> list[str]:
        return self._run("ls-tree", "-r", "--name-only", "HEAD", under).splitlines()

    def read(self, path: str) -> str:
        return self._run("show", f"HEAD:{path}")

    def source(self, path: str) -> str:
        return f"{self.name}@{self.commit}:{path} ({self.license})"


# ---------------------------------------------------------------------------------------------
# whispers (Apache-2.0)
# ---------------------------------------------------------------------------------------------

WHISPERS_SKIP = {
    # Not secrets or repeats: HTML comments (whispers' "comments" rule), paths, a copy of other
    # fixtures used to test severities and rule lists, credit card numbers, excluded values.
    "language.html",
    "paths.yml",
    "severity.yml",
    "ruleslist.yml",
    "creditcards.yml",
    "excluded.yml",
    "excluded.json",
    "excluded.xml",
}
VALUE = re.compile(r"""[^\s"'=:<>,&@;()\[\]{}`\\]+""")


def whispers_values(line: str) -> list[str]:
    """The values holding `hardcoded` on a line, not the keys (a token followed by `:` or `=`)."""
    out = []
    for m in VALUE.finditer(line):
        if "hardcoded" not in m.group().lower():
            continue
        after = line[m.end() :].lstrip("\"' ")
        if after[:1] in (":", "=") and not after.startswith("://"):
            continue  # a key: `"01_hardcoded_password": ...`
        if line[: m.start()].endswith(("<", "</")):
            continue  # an XML element's name
        value = m.group()
        if value.startswith("//"):
            value = value.rsplit("/", 1)[1]  # a webhook URL's last part
        out.append(value)
    return out


def from_whispers(repo: Repo) -> list[dict]:
    rows = []
    for path in repo.files("tests/fixtures"):
        name = path.removeprefix("tests/fixtures/")
        if name in WHISPERS_SKIP or ("/" in name.strip("/") and not name.startswith(".aws")):
            continue
        text = repo.read(path)
        kind = "whispers-" + re.sub(r"[^a-z]+", "-", Path(name).stem.lower()).strip("-")
        compliant = False
        for line in text.splitlines():
            low = line.lower()
            if "noncompliant" in low or "non-compliant" in low:
                compliant = False
            elif "compliant" in low:
                compliant = True
            if compliant:
                continue
            if name == ".dockercfg" and '"auth"' in line and "hardcoded" not in line:
                # `AWS:hardcoded` in base64, the value whispers reports here.
                value = line.split('"')[3]
                rows.append(row("secret", kind, repo.source(path), "docker config", line, value))
                continue
            values = whispers_values(line)
            if values and re.fullmatch(
                r"""\s*(-\s*)?["']?[^:=<"']*["']?,?\s*|\s*(- )?<?value\b.*""", line
            ):
                # A list item or a `value` entry: whispers reads its name from the lines
                # before it (the list's key, the entry's `<key>`), and so does this case.
                lines = text.splitlines()
                at = lines.index(line)
                start = at - 1
                while start > 0 and re.fullmatch(
                    r"""\s*(-\s*)?["']?[^:=<"']*["']?,?\s*""", lines[start]
                ):
                    start -= 1
                line = "\n".join(lines[start : at + 1])
            for value in values:
                # `"prefix_{hardcoded9}"` is a format string's field, not a value: not counted.
                type_ = "negative" if "{" + value + "}" in line else "secret"
                rows.append(row(type_, kind, repo.source(path), name, line, value))
        # Detected by key (test_detection_by_key): the values are not `hardcoded`.
        if Path(name).stem == "aws" and not compliant:
            for m in re.finditer(
                r"(AKIA[A-Z0-9]{16})|(PA3Xsx[A-Za-z0-9/+]{34})|(FakeYXdz[A-Za-z0-9/+]{40,})", text
            ):
                line = next(ln for ln in text.splitlines() if m.group() in ln)
                rows.append(row("secret", "whispers-aws", repo.source(path), name, line, m.group()))
        if Path(name).stem == "privatekeys":
            for m in re.finditer(r"-----BEGIN ((?:RSA |DSA |EC |OPENSSH )?(?:PRIVATE )?KEY)", text):
                if "PRIVATE" not in m.group(1) and "RSA KEY" not in m.group(1):
                    continue
                end = text.index("-----END", m.end())
                block = text[m.start() : text.index("-----", end + 8) + 5]
                body = "QyNTUxOQAAACCtrF27B/zd9DEpd38IbVBy93wSeYXKU0AGXMyO8ePu2QAAAKBSzpYEUs6W"
                rows.append(
                    row("secret", "whispers-privatekeys", repo.source(path), name, block, body)
                )
        if name == "jenkins.xml":
            for line in text.splitlines():
                m = re.search(r"<noncompliant\w+>(.*?)</", line)
                if m:
                    value = m.group(1).removeprefix("#jbcrypt:")
                    rows.append(
                        row("secret", "whispers-jenkins", repo.source(path), name, line, value)
                    )
    return rows


# ---------------------------------------------------------------------------------------------
# ripsecrets (MIT)
# ---------------------------------------------------------------------------------------------


def ripsecrets_value(line: str) -> str:
    m = re.search(r"://[^:/\s]+:([^@\s]+)@", line)
    if m:
        return m.group(1)
    m = re.search(r"<(\w+)>(.*)</\1>", line)
    if m:
        return m.group(2)
    m = re.search(r"""(?::=|[=:])\s*["'`]?(.+?)["'`]?,?\s*$""", line)
    if m and not line.startswith(("http", "xox", "sq0", "EAAA")):
        return m.group(1).strip()
    return line.strip()


def from_ripsecrets(repo: Repo) -> list[dict]:
    rows = []
    for path in repo.files("test/one_per_line"):
        kind = "ripsecrets-" + Path(path).name
        for line in repo.read(path).splitlines():
            if line.strip():
                rows.append(
                    row(
                        "secret",
                        kind,
                        repo.source(path),
                        "one per line",
                        line,
                        ripsecrets_value(line),
                    )
                )
    for path in repo.files("test/one_per_file"):
        text = repo.read(path)
        kind = "ripsecrets-" + Path(path).name
        if "PRIVATE KEY" in text:
            body = [ln for ln in text.splitlines() if re.fullmatch(r"[A-Za-z0-9+/=]{60,}", ln)]
            rows.append(row("secret", kind, repo.source(path), "file", text, body[3]))
        else:
            m = re.search(r"AKIA[A-Z0-9]{16}", text)
            assert m
            rows.append(row("secret", kind, repo.source(path), "http response", text, m.group()))
    for line in repo.read("test/none").splitlines():
        if not line.strip():
            continue
        source = repo.source("test/none")
        if "pragma: allowlist" in line or ".secretsignore" in line:
            # Skipped by ripsecrets only because of its own allowlist: a live key all the same.
            value = "ReTllpYQYfIZu2Jnf2lAPFjD"
            secret = line.split()[0] if line.startswith("sk_") else value
            rows.append(
                row("secret", "ripsecrets-allowlisted", source, "allowlisted", line, secret)
            )
        else:
            rows.append(row("negative", "ripsecrets-none", source, "negative example", line))
    return rows


# ---------------------------------------------------------------------------------------------
# ggshield (MIT)
# ---------------------------------------------------------------------------------------------


def from_ggshield(repo: Repo) -> list[dict]:
    path = "tests/unit/conftest.py"
    src = repo.read(path)
    rows = []

    def const(name: str) -> str:
        m = re.search(rf'^{name} = f?"""(.*?)"""', src, re.M | re.S)
        if m:
            return m.group(1)
        m = re.search(rf"^{name} = '([^'\n]*)'", src, re.M)
        if m:
            return m.group(1).replace("\\n", "\n")
        m = re.search(rf'^{name} = (?:\(\s*)?((?:"[^"\n]*"\s*)+)\)?', src, re.M)
        assert m, name
        return "".join(re.findall(r'"([^"\n]*)"', m.group(1)))

    token = const("GG_TEST_TOKEN")
    simple = const("_SIMPLE_SECRET_TOKEN")
    patches = {
        "_MULTIPLE_SECRETS_PATCH_CONTENT": ["m42ploz2wd"],
        "_SIMPLE_SECRET_PATCH": [simple],
        "_MULTI_SECRET_ONE_LINE_PATCH": ["ce3f9f0362bbe5ab01dfc8ee565e4372"],
        "_MULTI_SECRET_ONE_LINE_PATCH_OVERLAY": ["ce3f9f0362bbe5ab01dfc8ee565e4372"],
        "_MULTI_SECRET_TWO_LINES_PATCH": ["ce3f9f0362bbe5ab01dfc8ee565e4372"],
        "_ONE_LINE_AND_MULTILINE_PATCH_CONTENT": [
            "ce3f9f0362bbe5ab01dfc8ee565e4371",
            "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",
            "+bKO9LFtMiVPy700oMWLScwAN5OAiqVLMvHUCAwEAAQJANLr8nmEWuV6t2hAwhK5I"[1:],
        ],
        "_SECRET_RAW_FILE": [
            "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"
        ],
    }
    for name, secrets in patches.items():
        text = const(name).replace("{_SIMPLE_SECRET_TOKEN}", simple)
        for secret in secrets:
            kind = "ggshield-" + name.strip("_").lower().replace("_", "-")
            rows.append(row("secret", kind, repo.source(path), "diff", text, secret))
    text = const("UNCHECKED_SECRET_PATCH").replace("{GG_TEST_TOKEN}", token).replace("\\0", "\0")
    rows.append(row("secret", "ggshield-gg-test-token", repo.source(path), "git show", text, token))
    return rows


# ---------------------------------------------------------------------------------------------
# Made here: tokens of documented formats, passwords, in an agent's contexts
# ---------------------------------------------------------------------------------------------


def base62(n: int, width: int) -> str:
    out = ""
    while n:
        n, r = divmod(n, 62)
        out = (string.digits + string.ascii_letters)[r] + out
    return out.rjust(width, "0")


def github(prefix: str) -> str:
    # GitHub's documented format: prefix, 30 random base62 characters, a CRC32 of them in base62.
    body = rand(ALNUM, 30)
    return f"{prefix}_{body}{base62(zlib.crc32(body.encode()), 6)}"


def tokens() -> list[tuple[str, str, str]]:
    """(kind, environment name, value): one value per provider format."""
    jwt_head = base64.urlsafe_b64encode(b'{"alg":"HS256","typ":"JWT"}').rstrip(b"=").decode()
    claims = (
        base64.urlsafe_b64encode(
            json.dumps({"sub": "svc-deploy", "iat": 1764201600, "scope": "repo:write"}).encode()
        )
        .rstrip(b"=")
        .decode()
    )
    return [
        ("github-pat-classic", "GITHUB_TOKEN", github("ghp")),
        ("github-oauth", "GH_OAUTH_TOKEN", github("gho")),
        ("github-user-to-server", "GH_USER_TOKEN", github("ghu")),
        ("github-server-to-server", "GH_APP_TOKEN", github("ghs")),
        ("github-refresh", "GH_REFRESH", github("ghr")),
        (
            "github-pat-fine-grained",
            "GH_PAT",
            f"github_pat_11{rand(string.ascii_uppercase + string.digits, 20)}_{rand(ALNUM, 59)}",
        ),
        (
            "aws-access-key-id",
            "AWS_ACCESS_KEY_ID",
            "AKIA" + rand(string.ascii_uppercase + "234567", 16),
        ),
        ("aws-secret-access-key", "AWS_SECRET_ACCESS_KEY", rand(B64, 40)),
        ("aws-session-token", "AWS_SESSION_TOKEN", "IQoJb3JpZ2luX2VjE" + rand(B64, 300)),
        (
            "slack-bot-token",
            "SLACK_BOT_TOKEN",
            f"xoxb-{rand(string.digits, 12)}-{rand(string.digits, 13)}-{rand(ALNUM, 24)}",
        ),
        (
            "slack-user-token",
            "SLACK_USER_TOKEN",
            f"xoxp-{rand(string.digits, 12)}-{rand(string.digits, 12)}-{rand(string.digits, 13)}-{rand(HEX, 32)}",
        ),
        (
            "slack-app-token",
            "SLACK_APP_TOKEN",
            f"xapp-1-A{rand(string.ascii_uppercase + string.digits, 10)}-{rand(string.digits, 13)}-{rand(HEX, 64)}",
        ),
        ("stripe-secret-key", "STRIPE_SECRET_KEY", "sk_live_51" + rand(ALNUM, 97)),
        ("stripe-restricted-key", "STRIPE_RESTRICTED_KEY", "rk_live_51" + rand(ALNUM, 97)),
        ("stripe-webhook-secret", "STRIPE_WEBHOOK_SECRET", "whsec_" + rand(ALNUM, 32)),
        (
            "openai-project-key",
            "OPENAI_API_KEY",
            "sk-proj-" + rand(B64URL, 74) + "T3BlbkFJ" + rand(B64URL, 74),
        ),
        ("anthropic-api-key", "ANTHROPIC_API_KEY", "sk-ant-api03-" + rand(B64URL, 93) + "AA"),
        ("gitlab-pat", "GITLAB_TOKEN", "glpat-" + rand(B64URL, 20)),
        ("gitlab-runner", "RUNNER_TOKEN", "glrt-" + rand(B64URL, 20)),
        ("npm-token", "NPM_TOKEN", "npm_" + rand(ALNUM, 36)),
        ("pypi-token", "PYPI_TOKEN", "pypi-AgEIcHlwaS5vcmcCJD" + rand(B64URL, 120)),
        ("google-api-key", "GOOGLE_API_KEY", "AIza" + rand(B64URL, 35)),
        ("google-oauth-client-secret", "GOOGLE_CLIENT_SECRET", "GOCSPX-" + rand(B64URL, 28)),
        ("google-oauth-access-token", "GOOGLE_ACCESS_TOKEN", "ya29.a0" + rand(B64URL, 150)),
        ("sendgrid", "SENDGRID_API_KEY", f"SG.{rand(B64URL, 22)}.{rand(B64URL, 43)}"),
        ("twilio-api-key-secret", "TWILIO_API_SECRET", rand(ALNUM, 32)),
        ("azure-storage-account-key", "AZURE_STORAGE_KEY", rand(B64, 86) + "=="),
        ("digitalocean", "DIGITALOCEAN_TOKEN", "dop_v1_" + rand(HEX, 64)),
        ("huggingface", "HF_TOKEN", "hf_" + rand(string.ascii_letters, 34)),
        ("shopify-admin", "SHOPIFY_ACCESS_TOKEN", "shpat_" + rand(HEX, 32)),
        ("databricks", "DATABRICKS_TOKEN", "dapi" + rand(HEX, 32)),
        ("doppler", "DOPPLER_TOKEN", "dp.pt." + rand(ALNUM, 43)),
        ("linear", "LINEAR_API_KEY", "lin_api_" + rand(ALNUM, 40)),
        ("postman", "POSTMAN_API_KEY", f"PMAK-{rand(HEX, 24)}-{rand(HEX, 34)}"),
        (
            "atlassian",
            "JIRA_API_TOKEN",
            "ATATT3xFfGF0" + rand(B64URL, 170) + "=" + rand(HEX.upper(), 8),
        ),
        ("grafana-service-account", "GRAFANA_TOKEN", f"glsa_{rand(ALNUM, 32)}_{rand(HEX, 8)}"),
        ("sentry-user-token", "SENTRY_AUTH_TOKEN", "sntryu_" + rand(HEX, 64)),
        ("vault-service-token", "VAULT_TOKEN", "hvs." + rand(ALNUM, 24)),
        ("terraform-cloud", "TFE_TOKEN", f"{rand(ALNUM, 14)}.atlasv1.{rand(ALNUM, 67)}"),
        ("pulumi", "PULUMI_ACCESS_TOKEN", "pul-" + rand(HEX, 40)),
        ("figma", "FIGMA_TOKEN", "figd_" + rand(B64URL, 40)),
        ("notion", "NOTION_TOKEN", "ntn_" + rand(string.digits, 11) + rand(ALNUM, 35)),
        ("mailgun", "MAILGUN_API_KEY", "key-" + rand(HEX, 32)),
        ("heroku", "HEROKU_API_KEY", "HRKU-AA" + rand(B64URL, 58)),
        ("flyio", "FLY_API_TOKEN", "fo1_" + rand(B64URL, 43)),
        ("tailscale", "TS_AUTHKEY", f"tskey-auth-k{rand(ALNUM, 11)}CNTRL-{rand(ALNUM, 32)}"),
        ("supabase", "SUPABASE_ACCESS_TOKEN", "sbp_" + rand(HEX, 40)),
        ("planetscale", "PLANETSCALE_PASSWORD", "pscale_pw_" + rand(B64URL, 43)),
        ("groq", "GROQ_API_KEY", "gsk_" + rand(ALNUM, 52)),
        ("perplexity", "PPLX_API_KEY", "pplx-" + rand(ALNUM, 48)),
        ("xai", "XAI_API_KEY", "xai-" + rand(ALNUM, 80)),
        ("replicate", "REPLICATE_API_TOKEN", "r8_" + rand(ALNUM, 37)),
        ("dockerhub-pat", "DOCKERHUB_TOKEN", "dckr_pat_" + rand(B64URL, 27)),
        (
            "newrelic-user-key",
            "NEW_RELIC_API_KEY",
            "NRAK-" + rand(string.ascii_uppercase + string.digits, 27),
        ),
        ("datadog-api-key", "DD_API_KEY", rand(HEX, 32)),
        ("square-access-token", "SQUARE_ACCESS_TOKEN", "EAAA" + rand(B64URL, 60)),
        ("shippo", "SHIPPO_API_KEY", "shippo_live_" + rand(HEX, 40)),
        ("telegram-bot", "TELEGRAM_BOT_TOKEN", f"{rand(string.digits, 10)}:AA{rand(B64URL, 33)}"),
        ("alibaba-access-key", "ALIBABA_CLOUD_ACCESS_KEY_SECRET", rand(ALNUM, 30)),
        (
            "mapbox-secret",
            "MAPBOX_SECRET_TOKEN",
            "sk.eyJ1Ijoi" + rand(ALNUM, 20) + "." + rand(B64URL, 22),
        ),
        ("cloudflare-api-token", "CLOUDFLARE_API_TOKEN", rand(B64URL, 40)),
        ("jwt", "SESSION_JWT", f"{jwt_head}.{claims}.{rand(B64URL, 43)}"),
        (
            "age-secret-key",
            "SOPS_AGE_KEY",
            "AGE-SECRET-KEY-1" + rand("QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L", 58),
        ),
    ]


def passwords() -> list[str]:
    """Passwords as people and generators make them: words and digits, symbols a shell or a
    format treats specially (`$`, `^`, `%`, backtick, `;`), generated ones."""
    made = [
        "Winter2026!deploy",
        "c0rrect-h0rse-Battery",
        "Sup3r$ecretPa55",
        "p@ssW0rd^2026",
        "Tr0ub4dor&3xq",
        "hunter2hunter2",
        "Qz`9!vR%2mLx",
        "admin;drop42",
        "Melbourne#1987",
        "blue-Falcon-77",
        "S3cure*Backup*Key",
        "jK8#pL2$vN5@",
    ]
    made += [rand(ALNUM + "!#%*-_", 16) for _ in range(12)]
    made += [rand(ALNUM, 24) for _ in range(6)]
    return made


def made_here() -> list[dict]:
    rows: list[dict] = []

    def add(kind: str, context: str, text: str, secret: str) -> None:
        rows.append(row("secret", kind, MADE, context, text, secret))

    toks = tokens()
    # Each token in a rotation of contexts an agent shows it in; the name-free contexts only
    # let its format give it away.
    named = (
        ("shell export", "export {n}={v}"),
        (".env", "{n}={v}\n"),
        ("yaml", 'env:\n  - name: {n}\n    value: "{v}"\n'),
        ("toml", '[credentials]\n{l} = "{v}"\n'),
        ("json", '{{\n  "{l}": "{v}",\n  "region": "eu-west-1"\n}}'),
        ("docker run", "docker run --rm -e {n}={v} ghcr.io/acme/worker:2.4"),
        ("printenv output", "$ printenv | sort\nHOME=/home/dev\n{n}={v}\nPATH=/usr/bin:/bin"),
        ("github actions log", "Run ./deploy.sh\n  env:\n    {n}: {v}\n"),
        ("python", 'client = Client(\n    {l}="{v}",\n    timeout=30,\n)'),
        (
            "k8s secret",
            "apiVersion: v1\nkind: Secret\nmetadata:\n  name: app\nstringData:\n  {n}: {v}\n",
        ),
    )
    bare = (
        ("prompt", "this call keeps failing with 401, here is what I use: {v} - what's wrong?"),
        ("bearer header", 'curl -sS -H "Authorization: Bearer {v}" https://api.example.com/v1/me'),
        (
            "http log",
            "DEBUG urllib3 send: b'GET /v2/items HTTP/1.1\\r\\nAuthorization: token {v}\\r\\n'",
        ),
        ("code", 'const client = new ApiClient("{v}");'),
        ("python call", 'svc = connect("{v}", region="us-east-1")'),
        ("cli arg", "acme-cli login {v}"),
    )
    for i, (kind, name, value) in enumerate(toks):
        for ctx, template in (
            named[i % len(named)],
            named[(i + 3) % len(named)],
            bare[i % len(bare)],
        ):
            text = template.format(n=name, l=name.lower(), v=value)
            add(kind, ctx, text, value)

    # Tokens in URLs, with the credential in the user part.
    gh = toks[0][2]
    gl = toks[17][2]
    add(
        "url-credential",
        "git remote -v",
        f"origin\thttps://x-access-token:{gh}@github.com/acme/api.git (fetch)",
        gh,
    )
    add(
        "url-credential",
        "git clone",
        f"git clone https://oauth2:{gl}@gitlab.com/acme/infra.git",
        gl,
    )
    add(
        "url-credential",
        "pip index",
        f"pip install --index-url https://__token__:{toks[20][2]}@upload.pypi.org/simple/ acme",
        toks[20][2],
    )

    pw = passwords()
    user = "deploy"
    aws_secret = toks[7][2]
    # Command arguments (issue 29, item 2, and the commands agents run).
    commands = [
        ("cmd-docker-login", "docker login -u {u} -p {p} registry.example.com"),
        ("cmd-docker-login", "docker login --username {u} --password '{p}' ghcr.io"),
        ("cmd-podman-login", "podman login -u {u} -p {p} quay.io"),
        ("cmd-curl-user", "curl -u {u}:{p} https://jenkins.example.com/api/json"),
        (
            "cmd-curl-user",
            "curl --user '{u}:{p}' -X POST https://nexus.example.com/service/rest/v1/components",
        ),
        ("cmd-mysql", "mysql -h db.internal -u root -p{p} app_production"),
        ("cmd-mysql", "mysqldump -uroot -p'{p}' --all-databases > all.sql"),
        ("cmd-mysqladmin", "mysqladmin -u root password '{p}'"),
        ("cmd-pgpassword", "PGPASSWORD={p} psql -h db.internal -U app -d app"),
        ("cmd-sshpass", "sshpass -p '{p}' ssh {u}@10.0.4.17"),
        ("cmd-sqlcmd", "sqlcmd -S tcp:sql01,1433 -U sa -P '{p}' -Q \"SELECT @@VERSION\""),
        ("cmd-psexec", "PsExec.exe \\\\WS-0142 -u CORP\\{u} -p {p} cmd /c ipconfig"),
        ("cmd-net-user", "net user svc_backup {p} /add /domain"),
        ("cmd-powershell-securestring", '$pw = ConvertTo-SecureString "{p}" -AsPlainText -Force'),
        (
            "cmd-powercli",
            "Connect-VIServer -Server vcsa.corp.local -User administrator@vsphere.local -Password '{p}'",
        ),
        (
            "cmd-powershell-credential",
            "New-LocalUser -Name svc_app -Password (ConvertTo-SecureString '{p}' -AsPlainText -Force)",
        ),
        (
            "cmd-kubectl-secret",
            "kubectl create secret generic db-creds --from-literal=username={u} --from-literal=password='{p}'",
        ),
        (
            "cmd-helm-set",
            "helm upgrade --install pg bitnami/postgresql --set auth.postgresPassword={p}",
        ),
        ("cmd-az-login", "az login -u {u}@contoso.com -p '{p}'"),
        ("cmd-redis-cli", "redis-cli -h cache.internal -a '{p}' INFO"),
        (
            "cmd-mongosh",
            "mongosh \"mongodb://db0.internal:27017/app\" --username {u} --password '{p}'",
        ),
        (
            "cmd-ldapsearch",
            "ldapsearch -x -H ldap://dc01 -D \"cn=admin,dc=corp,dc=local\" -w '{p}' -b dc=corp,dc=local",
        ),
        ("cmd-smbclient", "smbclient //fs01/share -U {u}%{p}"),
        (
            "cmd-openssl-pass",
            "openssl pkcs12 -export -in cert.pem -inkey key.pem -out bundle.p12 -passout pass:{p}",
        ),
        (
            "cmd-keytool",
            "keytool -importcert -file ca.crt -keystore truststore.jks -storepass {p} -noprompt",
        ),
        ("cmd-htpasswd", "htpasswd -b -c /etc/nginx/.htpasswd {u} '{p}'"),
        ("cmd-rabbitmqctl", "rabbitmqctl add_user {u} '{p}'"),
        ("cmd-wget", "wget --user={u} --password='{p}' https://artifacts.example.com/build.tar.gz"),
        ("cmd-docker-env", "docker run -d -e POSTGRES_PASSWORD={p} -p 5432:5432 postgres:16"),
        (
            "cmd-git-credential",
            "printf 'protocol=https\\nhost=git.example.com\\nusername={u}\\npassword={p}\\n' | git credential approve",
        ),
        (
            "cmd-echo-password-stdin",
            "echo '{p}' | docker login -u {u} --password-stdin registry.example.com",
        ),
        (
            "cmd-continuation",
            "docker login registry.example.com \\\n    --username {u} \\\n    --password '{p}'",
        ),
        (
            "cmd-continuation",
            "curl -X POST https://ci.example.com/job/build \\\n  -u {u}:{p} \\\n  -d delay=0sec",
        ),
    ]
    for i, (kind, template) in enumerate(commands):
        p = pw[i % len(pw)]
        add(kind, "command", template.format(u=user, p=p), p)
    add(
        "cmd-aws-configure",
        "command",
        f"aws configure set aws_secret_access_key {aws_secret}",
        aws_secret,
    )
    add(
        "cmd-aws-configure",
        "command",
        f"aws configure set aws_secret_access_key {toks[7][2][::-1]} --profile prod",
        toks[7][2][::-1],
    )

    # Config files.
    configs = [
        ("netrc", ".netrc", "machine api.heroku.com\n  login dev@example.com\n  password {p}\n"),
        ("netrc", ".netrc", "machine git.example.com login {u} password {p}\n"),
        (
            "npmrc-password",
            ".npmrc",
            "registry=https://npm.example.com/\n//npm.example.com/:username={u}\n//npm.example.com/:_password={b}\n//npm.example.com/:email=dev@example.com\n",
        ),
        (
            "npmrc-auth",
            ".npmrc",
            "@acme:registry=https://npm.pkg.github.com\n//npm.pkg.github.com/:_authToken={t}\n",
        ),
        (
            "pypirc",
            ".pypirc",
            "[distutils]\nindex-servers =\n    internal\n\n[internal]\nrepository = https://pypi.example.com/\nusername = {u}\npassword = {p}\n",
        ),
        (
            "pip-conf",
            "pip.conf",
            "[global]\nextra-index-url = https://{u}:{p}@pypi.example.com/simple\n",
        ),
        (
            "docker-config-auth",
            "docker config.json",
            '{{\n  "auths": {{\n    "registry.example.com": {{\n      "auth": "{a}"\n    }}\n  }}\n}}',
        ),
        (
            "dotnet-connection-string",
            "appsettings.json",
            '{{\n  "ConnectionStrings": {{\n    "Default": "Server=tcp:sql01.database.windows.net,1433;Initial Catalog=app;User ID={u};Password={p};Encrypt=True;"\n  }}\n}}',
        ),
        (
            "dotnet-web-config",
            "web.config",
            '<connectionStrings>\n  <add name="Db" connectionString="Data Source=SQL01;Initial Catalog=App;User Id={u};Pwd={p};" providerName="System.Data.SqlClient" />\n</connectionStrings>',
        ),
        (
            "dotnet-app-setting",
            "web.config",
            '<appSettings>\n  <add key="SmtpPassword" value="{p}" />\n  <add key="SmtpHost" value="smtp.example.com" />\n</appSettings>',
        ),
        (
            "yaml-password",
            "docker-compose.yml",
            "services:\n  db:\n    image: mariadb:11\n    environment:\n      MARIADB_ROOT_PASSWORD: {p}\n",
        ),
        (
            "yaml-password",
            "application.yml",
            "spring:\n  datasource:\n    url: jdbc:postgresql://db:5432/app\n    username: {u}\n    password: {p}\n",
        ),
        (
            "toml-password",
            "config.toml",
            '[database]\nhost = "db.internal"\nuser = "{u}"\npassword = "{p}"\n',
        ),
        ("env-password", ".env", "DB_HOST=db.internal\nDB_USER={u}\nDB_PASS={p}\n"),
        ("env-password", ".env", 'SMTP_PASSWORD="{p}"\n'),
        ("ini-password", "settings.ini", "[mail]\nserver = smtp.example.com\npasswd = {p}\n"),
        (
            "properties-password",
            "application.properties",
            "spring.datasource.password={p}\nspring.datasource.username={u}\n",
        ),
        (
            "xml-password",
            "settings.xml",
            "<server>\n  <id>nexus</id>\n  <username>{u}</username>\n  <password>{p}</password>\n</server>",
        ),
        ("pgpass", ".pgpass", "db.internal:5432:app:{u}:{p}\n"),
        ("git-credentials", ".git-credentials", "https://{u}:{p}@git.example.com\n"),
        ("php-config", "wp-config.php", "define( 'DB_PASSWORD', '{p}' );"),
        (
            "rails-database-yml",
            "database.yml",
            "production:\n  adapter: postgresql\n  password: <%= ENV.fetch('DB_PASSWORD', '{p}') %>\n",
        ),
    ]
    for i, (kind, ctx, template) in enumerate(configs):
        p = pw[(i + 7) % len(pw)]
        b64 = base64.b64encode(p.encode()).decode()
        auth = base64.b64encode(f"{user}:{p}".encode()).decode()
        t = toks[19][2]
        text = template.format(u=user, p=p, b=b64, a=auth, t=t)
        secret = {"npmrc-password": b64, "docker-config-auth": auth, "npmrc-auth": t}.get(kind, p)
        add(kind, ctx, text, secret)

    # Connection URLs.
    urls = [
        "postgresql://app:{p}@db.internal:5432/app?sslmode=require",
        "mongodb+srv://svc:{p}@cluster0.ab1cd.mongodb.net/prod?retryWrites=true",
        "redis://:{p}@cache.internal:6379/0",
        "amqp://worker:{p}@mq.internal:5672/%2f",
        "mysql://root:{p}@127.0.0.1:3306/shop",
        "https://admin:{p}@grafana.internal/api/dashboards",
        "ftp://backup:{p}@files.example.com/nightly/",
        "smtp://mailer:{p}@smtp.example.com:587",
    ]
    for i, u in enumerate(urls):
        p = pw[(i + 3) % len(pw)]
        ctx = ("DATABASE_URL=" if i % 2 else "connecting to ") + u.format(p=p)
        add("url-password", "url", ctx, p)
    # The URL password survives whole even when a token sits inside it.
    add("url-password", "url", f"https://ci:{toks[0][2]}@git.example.com/acme/app.git", toks[0][2])

    # Prompts that give a password in words.
    prompts = [
        "the staging db password is '{p}', can you log in and check the migrations?",
        "use password {p} for the admin user when you run the seed script",
        "my sudo password is {p} if the install asks",
        "log into the router (admin / {p}) and tell me the firmware version",
    ]
    for i, t in enumerate(prompts):
        p = pw[(i + 11) % len(pw)]
        add("prompt-password", "prompt", t.format(p=p), p)

    # Split across lines, the ways tools and code print a long value.
    for i, (kind, _name, value) in enumerate(toks[:12]):
        forms = [
            # An aligned key and value, the value cut in its middle by the 80th column.
            ("wrapped at 80", f"{'X-Service-Credential:':<{max(22, 80 - len(value) // 2)}}{value}"),
            (
                "python implicit join",
                f'API_KEY = (\n    "{value[: len(value) // 2]}"\n    "{value[len(value) // 2 :]}"\n)',
            ),
            (
                "js concatenation",
                f'const token = "{value[: len(value) // 2]}" +\n  "{value[len(value) // 2 :]}";',
            ),
        ]
        ctx, text = forms[i % len(forms)]
        half = len(value) // 2
        pieces = [value[:half], value[half:]]
        if ctx == "wrapped at 80":
            # A terminal 80 columns wide: the value goes on at the start of the next line.
            cut = 80 - text.index(value)
            pieces = [value[:cut], value[cut:]]
            text = text[:80] + "\n" + text[80:]
        # Each piece is a secret: a detector that hides only one of them lets the other out.
        for piece in pieces:
            add(kind + "-split", ctx, text, piece)

    # A private key made here, in the ways a session shows one.
    key = subprocess.run(
        ["openssl", "genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:1024"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    ec = subprocess.run(
        ["openssl", "genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    body = key.splitlines()[5]
    add("private-key-pem", "cat output", f"$ cat deploy/key.pem\n{key}", body)
    add(
        "private-key-pem",
        "json escaped",
        json.dumps({"type": "service_account", "private_key": ec}),
        json.dumps(ec)[30:60],
    )
    add(
        "private-key-pem",
        "truncated tool output",
        "\n".join(key.splitlines()[:8]) + "\n... (truncated)",
        body,
    )
    return rows


# ---------------------------------------------------------------------------------------------
# Ordinary strings from real material of this machine
# ---------------------------------------------------------------------------------------------

WORDS = re.compile(
    r"(?i)passw|secret|token|api.?key|private key|credential|\bhash|digest|base64|\bhex\b|fingerprint|\bkey\b"
)


# Lines of real material that hold a value under a secret's name, a provider's key or a
# credential in a command are not ordinary strings (Debian's Chromium ships a Google API key in
# /etc; manuals show `--user "key:secret"`): left out before sampling, by these rules alone.
HOLDS_A_VALUE = re.compile(
    r"""(?i)(pass|secret|token|key|pwd)\w*["']?\s*[:=]\s*["'][^"'\s$\{<]{6,}"""
    r"|AIza[\w-]{30}|gh[pousr]_\w{30}|sk_live|xox[bpa]-|AKIA[A-Z0-9]{16}|glpat-|PRIVATE KEY-"
    r"""|(-u|--user)\s+["']?\w+:\w+|\bpass:\w+"""
)


def sample(lines: list[str], n: int) -> list[str]:
    seen = sorted(
        {
            ln.strip()
            for ln in lines
            if 12 <= len(ln.strip()) <= 300 and not HOLDS_A_VALUE.search(ln)
        }
    )
    return RNG.sample(seen, min(n, len(seen)))


def sh(*cmd: str, cwd: Path | None = None) -> str:
    return subprocess.run(cmd, capture_output=True, text=True, cwd=cwd).stdout


def ordinary(project: Repo, permissive: list[Repo]) -> list[dict]:
    rows: list[dict] = []

    def add(kind: str, source: str, text: str) -> None:
        rows.append(row("ordinary", kind, source, kind, text))

    # Man pages (roff stripped of its requests and font escapes).
    man_lines: list[str] = []
    pages = sorted(Path("/usr/share/man").glob("man[158]/*.gz"))
    gcloud = [p for p in pages if p.name.startswith("gcloud")]
    others = [p for p in pages if not p.name.startswith("gcloud")]
    for page in RNG.sample(gcloud, min(200, len(gcloud))) + RNG.sample(
        others, min(1500, len(others))
    ):
        try:
            raw = subprocess.run(
                ["zcat", str(page)], capture_output=True, text=True, errors="replace"
            ).stdout
        except OSError:
            continue
        for ln in raw.splitlines():
            if ln.startswith((".", "'")):
                continue
            ln = re.sub(
                r"\\f[BIRP0-9]|\\f\(..|\\\(..|\\-|\\&|\\e",
                lambda m: "-" if m.group() == "\\-" else "",
                ln,
            )
            if WORDS.search(ln):
                man_lines.append(ln)
    for s in sample(man_lines, 70):
        add("man-page", "/usr/share/man (Debian packages' manual pages)", s)

    # /etc files.
    etc_lines = []
    for p in sorted(Path("/etc").rglob("*")):
        if (
            not p.is_file()
            or p.stat().st_size > 200_000
            or "ssl/private" in str(p)
            or p.name in ("shadow", "gshadow", "shadow-", "gshadow-")
        ):
            continue
        try:
            text = p.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        etc_lines += [ln for ln in text.splitlines() if WORDS.search(ln)]
    for s in sample(etc_lines, 40):
        add("etc-config", "/etc (Debian's default configuration files)", s)

    # JavaScript of globally installed npm packages (not minified).
    js_lines = []
    for p in sorted(Path("/usr/lib/node_modules").rglob("*.js"))[:8000]:
        if ".min." in p.name or p.stat().st_size > 300_000:
            continue
        try:
            js_lines += [
                ln
                for ln in p.read_text(encoding="utf-8").splitlines()
                if WORDS.search(ln) and len(ln) < 200
            ]
        except (OSError, UnicodeDecodeError):
            continue
    for s in sample(js_lines, 60):
        add("npm-package-js", "/usr/lib/node_modules (npm and its dependencies)", s)

    # Tool output run here.
    cert_out = ""
    for pem in sorted(Path("/etc/ssl/certs").glob("*.pem"))[:6]:
        cert_out += sh(
            "openssl", "x509", "-in", str(pem), "-noout", "-text", "-fingerprint", "-sha256"
        )
    cert_lines = [
        ln
        for ln in cert_out.splitlines()
        if re.search(r"[0-9a-fA-F]{2}:[0-9a-fA-F]{2}:|Key|Fingerprint|Signature", ln)
    ]
    for s in sample(cert_lines, 35):
        add("openssl-x509-text", "openssl x509 -noout -text of /etc/ssl/certs", s)
    kube = ""
    for args in (
        ["create", "deployment", "web", "--image=nginx:1.27", "--replicas=2"],
        ["create", "serviceaccount", "ci-deployer"],
        ["create", "role", "secret-reader", "--verb=get,list", "--resource=secrets"],
        [
            "create",
            "rolebinding",
            "read-secrets",
            "--role=secret-reader",
            "--serviceaccount=ci:ci-deployer",
        ],
        [
            "create",
            "configmap",
            "app",
            "--from-literal=token_ttl=3600",
            "--from-literal=key_rotation_days=90",
        ],
        ["create", "clusterrole", "token-reviewer", "--verb=create", "--resource=tokenreviews"],
        ["create", "job", "rotate-keys", "--image=busybox", "--", "/bin/rotate-keys", "--dry-run"],
    ):
        kube += "---\n" + sh("kubectl", *args, "--dry-run=client", "-o", "yaml")
    for doc in kube.split("---\n"):
        if doc.strip():
            add(
                "kubectl-manifest",
                "kubectl create ... --dry-run=client -o yaml (run here)",
                doc.strip(),
            )
    collected = sh(
        sys.executable,
        "-m",
        "pytest",
        "--collect-only",
        "-q",
        "tests/core/test_redact.py",
        cwd=project.path,
    )
    for s in sample([ln for ln in collected.splitlines() if "::" in ln], 40):
        add(
            "pytest-collect",
            "pytest --collect-only -q tests/core/test_redact.py (engram, run here)",
            s,
        )
    log = sh("git", "log", "--stat", "-n", "300", GIT_LOG_AT, cwd=project.path)
    log_lines = [
        ln
        for ln in log.splitlines()
        if WORDS.search(ln) and not ln.startswith(("commit ", "Author"))
    ]
    for s in sample(log_lines, 30):
        add("git-log-stat", f"git log --stat of engram at {GIT_LOG_AT}", s)
    pip = sh(sys.executable, "-m", "pip", "show", "-f", "cryptography", "pyjwt", "keyring")
    for s in sample([ln for ln in pip.splitlines() if WORDS.search(ln) or "/" in ln], 20):
        add("pip-show", "pip show -f (run here)", s)

    # CI workflows of the permissive sources (public configuration, secrets by reference).
    wf_lines = []
    for repo in permissive:
        for path in repo.files(".github/workflows"):
            for ln in repo.read(path).splitlines():
                if WORDS.search(ln) or re.search(r"uses: \S+@[0-9a-f]{40}", ln):
                    wf_lines.append((ln.strip(), repo.source(path)))
    seen: set[str] = set()
    picked = [w for w in wf_lines if not (w[0] in seen or seen.add(w[0]))]
    for s, source in RNG.sample(picked, min(40, len(picked))):
        add("ci-workflow", source, s)
    return rows


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--whispers", type=Path, required=True)
    ap.add_argument("--ripsecrets", type=Path, required=True)
    ap.add_argument("--ggshield", type=Path, required=True)
    ap.add_argument("--workflows-from", type=Path, nargs="*", default=[])
    args = ap.parse_args()
    whispers = Repo(args.whispers, "Skyscanner/whispers", "Apache-2.0")
    ripsecrets = Repo(args.ripsecrets, "sirwart/ripsecrets", "MIT")
    ggshield = Repo(args.ggshield, "GitGuardian/ggshield", "MIT")
    project = Repo(Path(__file__).resolve().parents[1], "engram", "this project")
    rows = from_whispers(whispers) + from_ripsecrets(ripsecrets) + from_ggshield(ggshield)
    rows += made_here()
    rows += ordinary(project, [whispers, ripsecrets, ggshield])
    with OUT.open("w", encoding="utf-8") as f:
        for r in rows:
            f.write(json.dumps(r, ensure_ascii=False) + "\n")
    counts: dict[str, int] = {}
    for r in rows:
        counts[r["type"]] = counts.get(r["type"], 0) + 1
    print(OUT, counts, file=sys.stderr)


if __name__ == "__main__":
    main()
