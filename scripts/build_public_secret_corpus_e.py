"""Build tests/core/public_secret_corpus_e.jsonl: a fifth corpus, all of it held out.

Corpus E measures engram's redaction on data its detector never saw (issue 29, "on new public
examples"). It was built by someone who did not read the detector (`memory_core/redact.py`,
`memory_core/secret_providers.py`), its tests, nor the cases of corpora A to D, and no case was
chosen, kept or dropped by how engram handles it: the rules below were fixed first, the file
built and committed, and the detector run once, at the end.
`scripts/measure_redaction.py --corpus-e` prints its figures by family only.

Run with checkouts (or `git archive` copies) of the sources under one folder (any Python 3.11;
not part of engram):

    python scripts/build_public_secret_corpus_e.py --sources /tmp/e_src
    # /tmp/e_src/{msu,talisman,gitsecrets,earlybird,deepfence}

Public sources none of corpora A to D used (each line names its source and has a `license`):
- microsoft/security-utilities (MIT), `GeneratedRegexPatterns/*.json`: the formats of
  Microsoft's identifiable keys (Azure Storage, Cosmos DB, Service Bus, Event Hub, Relay, IoT,
  API Management, Search, Functions, Container Registry, Redis, Batch, ML, Event Grid, Entra
  client secrets) and of its "common annotated security keys" (52 + `JQQJ9` + provider
  signature: Azure OpenAI, AI services, Cognitive Services, Maps, DevOps...), NuGet, npm,
  Databricks and legacy Azure DevOps PATs. Its tests generate their examples at run time, so
  values are generated here from each format's pattern (random characters of each class; the
  fixed signature as written; Marvin/CRC checksums are NOT computed, so a checksum-validating
  detector would rightly reject them: engram does not validate them). Each format is shown in
  two of six contexts an agent shows a key in. Its literal contrived test keys
  (`dddd...AzFu...`) are negatives; its innocuous base64 sentence is an ordinary string. The
  legacy forms found only with context (connection strings, SAS `sig=`, bearer headers, URL
  credentials) are written in those contexts.
- awslabs/git-secrets (Apache-2.0): the AWS formats its `--register-aws` patterns describe
  (access key ids of every prefix it lists, a secret key after each of its separators and
  quotes, Bedrock long-term `ABSK` and short-term `bedrock-api-key-` keys), values generated.
- thoughtworks/talisman (MIT), `detector/**/*_test.go`: the strings its tests expect to be
  flagged and not flagged. A value naming itself (`UnsafeString`, `randomStringGoesHere`) or an
  AWS `EXAMPLE` key is a negative; the rest as they are.
- americanexpress/earlybird (Apache-2.0), `config/rules/{content,password-secret}.yaml`: the
  `Example` of each rule. Credential rules' examples are secrets unless they are placeholders
  (`foobar`, `xxxx`, `test`, `EXAMPLE`, a template of `a` and `0`), default passwords (its own
  "default password" rules: `changeme`, `letmein`, `w2e3r4t5`) or malformed (`ya29X...`):
  those are negatives. Examples of its non-secret rules (IP and MAC addresses, URLs, a TODO
  comment, hash-function code) are ordinary strings; its personal-data examples (phone, SSN,
  IBAN, passport) are left out (not what a secret redactor is for, either way).
- deepfence/SecretScanner (MIT), `test/keys.txt`: all placeholders (`EXAMPLE`, `0123...`):
  negatives.
- godaddy/tartufo is GPL-2.0: nothing is copied; its exclusion-signature config form is the
  model for one family of ordinary strings made here (sha256 signatures computed here).

Made here, in the contexts an agent shows a secret in: tokens of 80 documented formats (GitHub's
with their CRC32 checksum, JWTs signed here), keys made here by `openssl`, `ssh-keygen` and
`gpg`, and passwords from ten generators, in 100 command lines (flag syntax from the tools'
man pages and --help), 22 tool outputs, 60 config files, code, prompts in 14 languages and text
split across lines.

Ordinary strings: output of tools run here (`sha256sum`, `sha1sum`, `md5sum`, `b2sum`,
`openssl dgst`, `openssl x509 -fingerprint`, `ssh-keygen -l`, `gpg --fingerprint`, `git log` and
`git ls-tree` of the fetched sources, `base64` of a PNG, UUIDs in log lines), lines of the
tools' `--help` and manual pages that name passwords, tokens and keys, engram's own lock files
(`--hash=sha256:` lines, `package-lock.json` integrity), lines of the Google Cloud SDK and AWS
CLI Python (Apache-2.0) naming credentials, `/var/log` lines, tartufo-style exclusion
signatures, and placeholders written into the same contexts as the secrets.

Rules fixed before the measurement:
- Placeholders (`<...>`, `${...}`, `$VAR`, `%VAR%`, `$(command)`, `{{ ... }}`, `********`,
  `xxxx`, `YOUR_...`, `os.environ[...]`, `%(name)s`, SQL bind parameters) hold no secret: a line
  holding one is an ordinary string (family `placeholder-*`).
- Scanners' contrived or placeholder examples are `negative` (reported apart), never counted.
- Real material is sampled after a fixed filter drops any line that holds a value after a
  secret's name, a known key prefix, a private key, a URL with a password or a password flag
  with a value (see `_looks_secret`): an ordinary string must hold no secret. Documentation's
  credentials written as words (`curl -u user:password`, `password=bar`) are dropped by the same
  filter: neither secrets nor ordinary strings.
- The secret of a case is what must not survive: the value, the whole token, one line of a key
  block, or the piece of a wrapped value on its own line; `leaked()` also counts either half
  of a long secret as a leak.

Every case is held out (`"split": "holdout"`). A rebuild gives a different file (values are
drawn anew where the machine makes them: keys, UUIDs); the committed file is the corpus.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import hmac
import json
import os
import random
import re
import string
import subprocess
import tempfile
import uuid
import zlib
from collections.abc import Callable, Iterable
from pathlib import Path

OUT = Path(__file__).resolve().parents[1] / "tests" / "core" / "public_secret_corpus_e.jsonl"
ROOT = Path(__file__).resolve().parents[1]

MSU = "microsoft/security-utilities@638ad20eb4d4"
TALISMAN = "thoughtworks/talisman@efcb1a3629f6"
GITSECRETS = "awslabs/git-secrets@7d6b970cbd3c"
EARLYBIRD = "americanexpress/earlybird@573753e6f39a"
DEEPFENCE = "deepfence/SecretScanner@3a9b485525f2"
MADE = "made for this corpus"

rng = random.Random(20261127)
rows: list[dict[str, str]] = []

UPPER = string.ascii_uppercase
LOWER = string.ascii_lowercase
DIGITS = string.digits
ALNUM = UPPER + LOWER + DIGITS
HEX = "0123456789abcdef"
B64 = ALNUM + "+/"
B64URL = ALNUM + "-_"
BASE32L = LOWER + "234567"


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


# --------------------------------------------------------------------------------------------
# A small generator for the subset of regular expressions Microsoft's patterns use.


def _parse_class(p: str, i: int) -> tuple[str, int]:
    assert p[i] == "["
    i += 1
    chars: list[str] = []
    while p[i] != "]":
        c = p[i]
        if c == "\\":
            c = p[i + 1]
            i += 2
        else:
            i += 1
        if i + 1 < len(p) and p[i] == "-" and p[i + 1] != "]":
            end = p[i + 1]
            if end == "\\":
                end = p[i + 2]
                i += 3
            else:
                i += 2
            chars.extend(chr(x) for x in range(ord(c), ord(end) + 1))
        else:
            chars.append(c)
    return "".join(dict.fromkeys(chars)), i + 1


def _gen_seq(p: str, i: int, stop: str) -> tuple[list[Callable[[], str]], int]:
    """Parse a sequence up to `stop` ('|' or ')' or end) into generators."""
    parts: list[Callable[[], str]] = []
    while i < len(p) and p[i] not in stop:
        c = p[i]
        atom: Callable[[], str]
        if c == "[":
            cls, i = _parse_class(p, i)
            atom = lambda cls=cls: rng.choice(cls)  # noqa: E731
        elif c == "(":
            i += 1
            if p.startswith("?:", i):
                i += 2
            elif p.startswith("?P<", i):
                i = p.index(">", i) + 1
            alts = []
            while True:
                seq, i = _gen_seq(p, i, "|)")
                alts.append(seq)
                if p[i] == ")":
                    i += 1
                    break
                i += 1
            atom = lambda alts=alts: "".join(g() for g in rng.choice(alts))  # noqa: E731
        elif c == "\\":
            lit = p[i + 1]
            i += 2
            atom = lambda lit=lit: lit  # noqa: E731
        else:
            i += 1
            atom = lambda c=c: c  # noqa: E731
        lo = hi = 1
        if i < len(p) and p[i] == "{":
            j = p.index("}", i)
            spec = p[i + 1 : j]
            lo, hi = (int(x) for x in spec.split(",")) if "," in spec else (int(spec),) * 2
            i = j + 1
        elif i < len(p) and p[i] == "?":
            lo, hi = 0, 1
            i += 1
        n = rng.randint(lo, hi)
        parts.append(lambda atom=atom, n=n: "".join(atom() for _ in range(n)))
    return parts, i


def generate(pattern: str) -> str:
    seq, _ = _gen_seq(pattern, 0, "")
    return "".join(g() for g in seq)


def refine_group(pattern: str) -> str | None:
    start = pattern.find("(?P<refine>")
    if start < 0:
        return None
    depth, i = 0, start
    while True:
        if pattern[i] == "\\":
            i += 2
            continue
        if pattern[i] == "[":
            i = pattern.index("]", i + 1) + 1
            continue
        if pattern[i] == "(":
            depth += 1
        elif pattern[i] == ")":
            depth -= 1
            if depth == 0:
                return pattern[start + len("(?P<refine>") : i]
        i += 1


# --------------------------------------------------------------------------------------------
# Passwords and tokens.

WORDS = [
    "maple",
    "tiger",
    "orbit",
    "copper",
    "lantern",
    "violet",
    "harbor",
    "cactus",
    "falcon",
    "meadow",
    "quartz",
    "ember",
    "river",
    "saddle",
    "pepper",
    "glacier",
    "mosaic",
    "thunder",
    "velvet",
    "walnut",
    "canyon",
    "juniper",
    "beacon",
    "cobalt",
    "prairie",
    "marble",
    "raven",
    "summit",
    "tundra",
    "willow",
    "anchor",
    "basil",
    "cedar",
    "dolphin",
    "fjord",
    "garnet",
    "hazel",
    "iris",
    "jasper",
    "kettle",
    "lemon",
    "magnet",
    "nectar",
    "oyster",
    "pebble",
    "quiver",
    "rocket",
    "sable",
    "timber",
    "umber",
    "vortex",
]


def password(style: int, safe: str = "shell") -> str:
    """Ten styles of password people use; `safe` keeps the characters the context allows."""
    style %= 10
    if style == 0:  # words, as a password manager's passphrase
        pw = "-".join(rng.choice(WORDS).capitalize() for _ in range(3)) + str(rng.randint(10, 99))
    elif style == 1:  # KeePass-like with symbols
        pw = r(ALNUM + "!#%&*+=?@^_~", 20)
    elif style == 2:  # pronounceable, as pwgen
        pw = "".join(
            rng.choice("bcdfghjkmnprstvz") + rng.choice("aeiou") + rng.choice("hy347")
            for _ in range(4)
        )
        pw = pw[0].upper() + pw[1:]
    elif style == 3:  # openssl rand -hex 16
        pw = r(HEX, 32)
    elif style == 4:  # openssl rand -base64 18
        pw = base64.b64encode(rng.randbytes(18)).decode()
    elif style == 5:  # season and year, the way people rotate
        pw = rng.choice(["Winter", "Spring", "Summer", "Autumn"]) + str(rng.randint(2019, 2026))
        pw += rng.choice("!#.*")
    elif style == 6:  # leetspeak
        pw = rng.choice(["P@ssw0rd-", "S3cur3!", "Adm1n#", "W3lc0me_"]) + rng.choice(WORDS)
        pw = pw.replace("e", "3").replace("a", "4") + str(rng.randint(1, 999))
    elif style == 7:  # digits only
        pw = str(rng.randint(10**9, 10**10 - 1))
    elif style == 8:  # with the characters that break naive parsers
        pw = r(ALNUM, 6) + rng.choice(["^", "%", "$", "`"]) + r(ALNUM, 5) + rng.choice("^%$`") + "9"
    else:  # name and date, still common
        pw = rng.choice(["Julia", "Marco", "Helene", "Tomasz", "Aiko"]) + str(
            rng.randint(1970, 2012)
        )
        pw += rng.choice(["!", "#", "@", "*"])
    if safe == "url":
        pw = re.sub(r"[^A-Za-z0-9._~-]", "", pw) + r(ALNUM, 3)
    elif safe == "plain":  # no quote, no backslash, no whitespace, no $ or backtick
        pw = re.sub(r"[\s'\"\\$`]", "", pw) + r(DIGITS, 1)
    elif safe == "shell":  # inside single quotes
        pw = pw.replace("'", "")
    return pw


B62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"


def base62(n: int, width: int) -> str:
    out = ""
    while n:
        n, d = divmod(n, 62)
        out = B62[d] + out
    return out.rjust(width, "0")


def github(prefix: str) -> str:
    body = r(ALNUM, 30)
    return prefix + body + base62(zlib.crc32(body.encode()), 6)


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def jwt(payload: dict[str, object]) -> str:
    head = b64url(json.dumps({"alg": "HS256", "typ": "JWT"}, separators=(",", ":")).encode())
    body = b64url(json.dumps(payload, separators=(",", ":")).encode())
    sig = hmac.new(rng.randbytes(32), f"{head}.{body}".encode(), hashlib.sha256).digest()
    return f"{head}.{body}.{b64url(sig)}"


def uid() -> str:
    return str(uuid.UUID(bytes=rng.randbytes(16), version=4))


# The documented formats: (kind, env name, generator). Lengths and prefixes from the providers'
# documentation and changelogs.
TOKENS: list[tuple[str, str, Callable[[], str]]] = [
    ("github-classic-pat", "GITHUB_TOKEN", lambda: github("ghp_")),
    ("github-oauth", "GH_TOKEN", lambda: github("gho_")),
    ("github-app-user", "GITHUB_USER_TOKEN", lambda: github("ghu_")),
    ("github-app-installation", "GITHUB_APP_TOKEN", lambda: github("ghs_")),
    ("github-refresh", "GITHUB_REFRESH_TOKEN", lambda: github("ghr_")),
    (
        "github-fine-grained-pat",
        "GITHUB_PAT",
        lambda: f"github_pat_11{r(UPPER + DIGITS, 20)}_{r(ALNUM, 59)}",
    ),
    ("gitlab-pat", "GITLAB_TOKEN", lambda: "glpat-" + r(ALNUM + "-_", 20)),
    ("gitlab-deploy-token", "CI_DEPLOY_PASSWORD", lambda: "gldt-" + r(ALNUM + "-_", 20)),
    ("gitlab-runner-token", "RUNNER_TOKEN", lambda: "glrt-" + r(ALNUM + "-_", 20)),
    (
        "slack-bot",
        "SLACK_BOT_TOKEN",
        lambda: f"xoxb-{r(DIGITS, 12)}-{r(DIGITS, 13)}-{r(ALNUM, 24)}",
    ),
    (
        "slack-user",
        "SLACK_USER_TOKEN",
        lambda: f"xoxp-{r(DIGITS, 12)}-{r(DIGITS, 12)}-{r(DIGITS, 13)}-{r(HEX, 32)}",
    ),
    (
        "slack-app-level",
        "SLACK_APP_TOKEN",
        lambda: f"xapp-1-A{r(UPPER + DIGITS, 10)}-{r(DIGITS, 13)}-{r(HEX, 64)}",
    ),
    (
        "slack-webhook",
        "SLACK_WEBHOOK_URL",
        lambda: (
            f"https://hooks.slack.com/services/T{r(UPPER + DIGITS, 8)}/B{r(UPPER + DIGITS, 10)}/{r(ALNUM, 24)}"
        ),
    ),
    ("stripe-secret-live", "STRIPE_SECRET_KEY", lambda: "sk_live_51" + r(ALNUM, 97)),
    ("stripe-restricted", "STRIPE_API_KEY", lambda: "rk_live_51" + r(ALNUM, 97)),
    ("stripe-webhook-secret", "STRIPE_WEBHOOK_SECRET", lambda: "whsec_" + r(ALNUM, 32)),
    ("sendgrid", "SENDGRID_API_KEY", lambda: f"SG.{r(B64URL, 22)}.{r(B64URL, 43)}"),
    ("mailchimp", "MAILCHIMP_API_KEY", lambda: f"{r(HEX, 32)}-us{rng.randint(1, 21)}"),
    ("openai-project", "OPENAI_API_KEY", lambda: f"sk-proj-{r(B64URL, 74)}T3BlbkFJ{r(B64URL, 74)}"),
    ("anthropic", "ANTHROPIC_API_KEY", lambda: f"sk-ant-api03-{r(B64URL, 93)}AA"),
    ("anthropic-admin", "ANTHROPIC_ADMIN_KEY", lambda: f"sk-ant-admin01-{r(B64URL, 93)}AA"),
    ("huggingface", "HF_TOKEN", lambda: "hf_" + r(ALNUM, 34)),
    ("replicate", "REPLICATE_API_TOKEN", lambda: "r8_" + r(ALNUM, 37)),
    ("groq", "GROQ_API_KEY", lambda: "gsk_" + r(ALNUM, 52)),
    ("perplexity", "PPLX_API_KEY", lambda: "pplx-" + r(ALNUM, 48)),
    ("xai", "XAI_API_KEY", lambda: "xai-" + r(ALNUM, 80)),
    ("google-api-key", "GOOGLE_API_KEY", lambda: "AIza" + r(ALNUM + "-_", 35)),
    ("google-oauth-access", "GOOGLE_ACCESS_TOKEN", lambda: "ya29." + r(ALNUM + "-_", 150)),
    ("google-oauth-client-secret", "GOOGLE_CLIENT_SECRET", lambda: "GOCSPX-" + r(ALNUM + "-_", 28)),
    ("aws-access-key-id", "AWS_ACCESS_KEY_ID", lambda: "AKIA" + r(UPPER + "234567", 16)),
    ("aws-secret-access-key", "AWS_SECRET_ACCESS_KEY", lambda: r(B64, 40)),
    ("digitalocean-pat", "DIGITALOCEAN_TOKEN", lambda: "dop_v1_" + r(HEX, 64)),
    ("digitalocean-oauth", "DO_OAUTH_TOKEN", lambda: "doo_v1_" + r(HEX, 64)),
    ("linear", "LINEAR_API_KEY", lambda: "lin_api_" + r(ALNUM, 40)),
    ("notion", "NOTION_TOKEN", lambda: f"ntn_{r(DIGITS, 11)}{r(ALNUM, 35)}"),
    ("shopify-admin", "SHOPIFY_ACCESS_TOKEN", lambda: "shpat_" + r(HEX, 32)),
    ("shopify-shared-secret", "SHOPIFY_API_SECRET", lambda: "shpss_" + r(HEX, 32)),
    (
        "atlassian-api-token",
        "JIRA_API_TOKEN",
        lambda: f"ATATT3xFfGF0{r(B64URL, 170)}={r(HEX.upper(), 8)}",
    ),
    ("pypi", "TWINE_PASSWORD", lambda: "pypi-AgEIcHlwaS5vcmc" + r(B64URL, 160)),
    ("npm", "NPM_TOKEN", lambda: "npm_" + r(ALNUM, 36)),
    ("rubygems", "GEM_HOST_API_KEY", lambda: "rubygems_" + r(HEX, 48)),
    ("dockerhub-pat", "DOCKERHUB_TOKEN", lambda: "dckr_pat_" + r(B64URL, 27)),
    ("terraform-cloud", "TFE_TOKEN", lambda: f"{r(ALNUM, 14)}.atlasv1.{r(ALNUM, 67)}"),
    ("vault-service", "VAULT_TOKEN", lambda: "hvs." + r(ALNUM + "_-", 90)),
    ("vault-batch", "VAULT_BATCH_TOKEN", lambda: "hvb." + r(ALNUM + "_-", 138)),
    ("doppler-service", "DOPPLER_TOKEN", lambda: f"dp.st.prd.{r(ALNUM, 43)}"),
    ("pulumi", "PULUMI_ACCESS_TOKEN", lambda: "pul-" + r(HEX, 40)),
    ("postman", "POSTMAN_API_KEY", lambda: f"PMAK-{r(HEX, 24)}-{r(HEX, 34)}"),
    ("sentry-user", "SENTRY_AUTH_TOKEN", lambda: "sntryu_" + r(HEX, 64)),
    ("grafana-service-account", "GRAFANA_TOKEN", lambda: f"glsa_{r(ALNUM, 32)}_{r(HEX, 8)}"),
    ("newrelic-user", "NEW_RELIC_API_KEY", lambda: "NRAK-" + r(UPPER + DIGITS, 27)),
    ("heroku", "HEROKU_API_KEY", lambda: "HRKU-AA" + r(B64URL, 58)),
    ("netlify", "NETLIFY_AUTH_TOKEN", lambda: "nfp_" + r(ALNUM, 36)),
    ("supabase-pat", "SUPABASE_ACCESS_TOKEN", lambda: "sbp_" + r(HEX, 40)),
    ("planetscale", "PLANETSCALE_SERVICE_TOKEN", lambda: "pscale_tkn_" + r(ALNUM + "_", 43)),
    ("databricks", "DATABRICKS_TOKEN", lambda: f"dapi{r(HEX, 32)}-2"),
    ("dropbox", "DROPBOX_ACCESS_TOKEN", lambda: "sl." + r(ALNUM + "-_", 135)),
    ("figma", "FIGMA_TOKEN", lambda: f"figd_{r(ALNUM + '-_', 40)}"),
    ("airtable", "AIRTABLE_API_KEY", lambda: f"pat{r(ALNUM, 14)}.{r(HEX, 64)}"),
    ("cloudflare-origin-ca", "CF_ORIGIN_CA_KEY", lambda: f"v1.0-{r(HEX, 24)}-{r(HEX, 146)}"),
    (
        "age-secret-key",
        "SOPS_AGE_KEY",
        lambda: "AGE-SECRET-KEY-1" + r("QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L", 58),
    ),
    ("tailscale-auth", "TS_AUTHKEY", lambda: f"tskey-auth-k{r(ALNUM, 10)}CNTRL-{r(ALNUM, 33)}"),
    (
        "telegram-bot",
        "TELEGRAM_BOT_TOKEN",
        lambda: f"{rng.randint(10**9, 10**10 - 1)}:AA{r(B64URL, 33)}",
    ),
    (
        "discord-webhook",
        "DISCORD_WEBHOOK",
        lambda: f"https://discord.com/api/webhooks/{r(DIGITS, 19)}/{r(B64URL, 68)}",
    ),
    ("square-access", "SQUARE_ACCESS_TOKEN", lambda: "EAAA" + r(B64URL, 60)),
    (
        "braintree-access",
        "BRAINTREE_ACCESS_TOKEN",
        lambda: f"access_token$production${r(LOWER + DIGITS, 16)}${r(HEX, 32)}",
    ),
    ("flutterwave", "FLW_SECRET_KEY", lambda: f"FLWSECK-{r(HEX, 32)}-X"),
    ("contentful", "CONTENTFUL_MANAGEMENT_TOKEN", lambda: "CFPAT-" + r(B64URL, 43)),
    ("firebase-fcm", "FCM_SERVER_KEY", lambda: f"AAAA{r(ALNUM, 7)}:APA91b{r(B64URL, 134)}"),
    ("circleci", "CIRCLE_TOKEN", lambda: f"CCIPAT_{r(ALNUM, 22)}_{r(HEX, 40)}"),
    ("buildkite", "BUILDKITE_API_TOKEN", lambda: "bkua_" + r(HEX, 40)),
    (
        "bitbucket-app-password",
        "BITBUCKET_APP_PASSWORD",
        lambda: f"ATBB{r(ALNUM, 32)}{r(HEX.upper(), 8)}",
    ),
    ("launchdarkly", "LD_SDK_KEY", lambda: f"sdk-{uid()}"),
    ("1password-service-account", "OP_SERVICE_ACCOUNT_TOKEN", lambda: "ops_eyJ" + r(B64URL, 300)),
    (
        "mapbox-secret",
        "MAPBOX_SECRET_TOKEN",
        lambda: (
            "sk."
            + b64url(json.dumps({"u": "acme-maps", "a": "cl" + r(LOWER + DIGITS, 23)}).encode())
            + "."
            + r(B64URL, 22)
        ),
    ),
    (
        "jwt-hs256",
        "API_JWT",
        lambda: jwt({"sub": str(rng.randint(1000, 99999)), "role": "admin", "iat": 1764000000}),
    ),
    (
        "supabase-service-role",
        "SUPABASE_SERVICE_ROLE_KEY",
        lambda: jwt(
            {
                "iss": "supabase",
                "ref": r(LOWER, 20),
                "role": "service_role",
                "iat": 1730000000,
                "exp": 2045576000,
            }
        ),
    ),
    ("deepseek", "DEEPSEEK_API_KEY", lambda: "sk-" + r(HEX, 32)),
    ("clojars", "CLOJARS_TOKEN", lambda: "CLOJARS_" + r(HEX, 60)),
    ("crates-io", "CARGO_REGISTRY_TOKEN", lambda: "cio" + r(ALNUM, 32)),
]

# Contexts for a token: a neutral one (no secret word) and one naming it.
TOKEN_CONTEXTS: list[tuple[str, str]] = [
    ("env-export", "export {env}={v}"),
    ("dotenv", "# .env.local\nNODE_ENV=development\n{env}={v}\nLOG_LEVEL=debug"),
    ("prompt", "this is what I got from the dashboard: {v} -- wire it into the deploy script"),
    ("json", '{{\n  "service": "billing",\n  "{camel}": "{v}",\n  "timeout": 30\n}}'),
    ("log", "2026-11-21T09:12:44Z INFO bootstrap: loaded {v} from vault path kv/ci"),
    ("yaml", 'env:\n  - name: {env}\n    value: "{v}"\n  - name: REGION\n    value: eu-west-1'),
    ("powershell", '$env:{env} = "{v}"'),
    ("github-actions", "      - run: ./release.sh\n        env:\n          {env}: {v}"),
    ("python", 'client = Client(\n    base_url=BASE,\n    {snake}="{v}",\n)'),
    ("docker-run", "docker run --rm -e {env}={v} ghcr.io/acme/worker:1.8"),
]


def camel(env: str) -> str:
    parts = env.lower().split("_")
    return parts[0] + "".join(p.capitalize() for p in parts[1:])


def token_cases() -> None:
    for i, (kind, env, make) in enumerate(TOKENS):
        for j in (i % len(TOKEN_CONTEXTS), (i + 5) % len(TOKEN_CONTEXTS)):
            ctx, template = TOKEN_CONTEXTS[j]
            v = make()
            text = template.format(env=env, v=v, camel=camel(env), snake=env.lower())
            add("secret", f"token-{kind}", MADE, "made here", ctx, text, v)


# --------------------------------------------------------------------------------------------
# Microsoft's formats.

MSU_CONTEXTS = [
    ("dotenv", "{env}={v}"),
    (
        "appsettings",
        '"{name}": {{\n  "Endpoint": "https://acme-prod.example.net/",\n  "Key": "{v}"\n}}',
    ),
    ("prompt", "the portal shows {v} under the resource, can you add it to the pipeline?"),
    ("log", "2026-11-20 10:14:03.221 [INF] Startup: using {v} for {name}"),
    ("setx", "setx {env} {v}"),
    ("az-cli", 'az webapp config appsettings set -g rg-prod -n acme-api --settings {env}="{v}"'),
]


def _snake_upper(name: str) -> str:
    for noise in ("LegacyCommonAnnotatedSecurity", "Identifiable", "Legacy", "Credentials"):
        name = name.replace(noise, "")
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name).upper()


def msu_cases(root: Path) -> None:
    seen: set[str] = set()
    n = 0
    for path in sorted((root / "GeneratedRegexPatterns").glob("*.json")):
        for pat in json.loads(path.read_text(encoding="utf-8-sig")):
            refine = refine_group(pat["Pattern"])
            if refine is None or refine in seen or "Unclassified" in pat["Name"]:
                continue
            seen.add(refine)
            if pat["Name"] in ("UrlCredentials", "LooseSasSecret", "OAuth2BearerToken"):
                continue  # context-only forms: written below in their contexts
            if refine.startswith("[0-9a-z\\/+]"):
                continue  # the legacy forms found by context (connection strings): below
            src = f"{MSU}:{path.relative_to(root)}"
            for j in (n % len(MSU_CONTEXTS), (n + 3) % len(MSU_CONTEXTS)):
                v = generate(refine)
                ctx, template = MSU_CONTEXTS[j]
                env = _snake_upper(pat["Name"])
                text = template.format(env=env, v=v, name=pat["Name"])
                add("secret", f"msu-{pat['Name']}", src, "MIT", ctx, text, v, rule=pat["Id"])
            n += 1
    src = f"{MSU}:GeneratedRegexPatterns/MediumConfidenceSecurityModels.json"
    b64_88 = lambda: r(B64, 86) + "=="  # noqa: E731
    b64_44 = lambda: r(B64, 43) + "="  # noqa: E731
    contexts = [
        (
            "msu-AzureStorageAccountLegacyCredentials",
            "connection-string",
            "DefaultEndpointsProtocol=https;AccountName=acmebackups;AccountKey={v};EndpointSuffix=core.windows.net",
            b64_88,
        ),
        (
            "msu-AzureStorageAccountLegacyCredentials",
            "appsettings",
            '"Storage": "DefaultEndpointsProtocol=https;AccountName=acmelogs;AccountKey={v}"',
            b64_88,
        ),
        (
            "msu-AzureCosmosDBLegacyCredentials",
            "connection-string",
            "AccountEndpoint=https://acme-orders.documents.azure.com:443/;AccountKey={v};",
            b64_88,
        ),
        (
            "msu-AzureCosmosDBLegacyCredentials",
            "python",
            'client = CosmosClient("https://acme-orders.documents.azure.com:443/", credential="{v}")',
            b64_88,
        ),
        (
            "msu-AzureMessagingLegacyCredentials",
            "connection-string",
            "Endpoint=sb://acme-bus.servicebus.windows.net/;SharedAccessKeyName=RootManageSharedAccessKey;SharedAccessKey={v}",
            b64_44,
        ),
        (
            "msu-AzureMessagingLegacyCredentials",
            "env-export",
            'export SERVICEBUS_CONNECTION="Endpoint=sb://acme-events.servicebus.windows.net/;SharedAccessKeyName=send;SharedAccessKey={v}"',
            b64_44,
        ),
        (
            "msu-LooseSasSecret",
            "url",
            "https://acmebackups.blob.core.windows.net/db/full.bak?sv=2022-11-02&ss=b&srt=co&sp=rl&se=2026-12-31T00:00:00Z&sig={v}",
            lambda: r(ALNUM, 42) + "%3D",
        ),
        (
            "msu-LooseSasSecret",
            "azcopy",
            'azcopy copy ./dist "https://acmeweb.blob.core.windows.net/$web?sv=2022-11-02&sp=rcwl&se=2026-12-01&sr=c&sig={v}" --recursive',
            lambda: r(ALNUM, 43) + "=",
        ),
        (
            "msu-OAuth2BearerToken",
            "http-log",
            "GET /api/v2/orders HTTP/1.1\nHost: api.acme.example\nAuthorization: Bearer {v}\nAccept: */*",
            lambda: r(ALNUM + "-_", 64),
        ),
        (
            "msu-OAuth2BearerToken",
            "curl",
            "curl -s https://management.azure.com/subscriptions?api-version=2022-12-01 -H 'authorization: bearer {v}'",
            lambda: jwt({"aud": "https://management.azure.com/", "tid": uid()}),
        ),
        (
            "msu-UrlCredentials",
            "url",
            "git remote set-url origin https://build:{v}@dev.azure.com/acme/_git/payments",
            lambda: password(4, "url"),
        ),
        (
            "msu-UrlCredentials",
            "ftp",
            "ftp://deploy:{v}@ftp.acme.example/public_html/",
            lambda: password(2, "url"),
        ),
        (
            "msu-AdoLegacyPat",
            "git-config",
            "git -c http.extraheader=\"AUTHORIZATION: basic $(printf ':%s' {v} | base64)\" clone https://dev.azure.com/acme/web/_git/web",
            lambda: r(BASE32L, 52),
        ),
        (
            "msu-AdoLegacyPat",
            "env-export",
            "export AZURE_DEVOPS_EXT_PAT={v}",
            lambda: r(BASE32L, 52),
        ),
    ]
    for kind, ctx, template, make in contexts:
        v = make()
        add("secret", kind, src, "MIT", ctx, template.format(v=v), v)
    # Contrived test keys of its SecretMaskerTests (mostly one repeated unit): negatives.
    tests = root / "src/Tests.Microsoft.Security.Utilities.Core/SecretMaskerTests.cs"
    text = tests.read_text(encoding="utf-8-sig")
    for m in re.finditer(r'\[DataRow\("([A-Za-z0-9+/_~.=-]{30,})", "SEC', text):
        add(
            "negative",
            "msu-contrived-test-key",
            f"{MSU}:{tests.relative_to(root)}",
            "MIT",
            "scanner test",
            f"key: {m.group(1)}",
        )
    m = re.search(r'\[DataRow\("(SSdt[A-Za-z0-9+/=]+)"\)\]', text)
    assert m
    add(
        "ordinary",
        "msu-innocuous-base64",
        f"{MSU}:{tests.relative_to(root)}",
        "MIT",
        "scanner test",
        f'payload = "{m.group(1)}"',
    )


# --------------------------------------------------------------------------------------------
# git-secrets' AWS patterns.


def gitsecrets_cases(root: Path) -> None:
    script = (root / "git-secrets").read_text()
    assert "ABSK[A-Za-z0-9+/]{109,}" in script and "bedrock-api-key-" in script
    src = f"{GITSECRETS}:git-secrets"
    for prefix in ("AKIA", "ASIA", "AGPA", "AIPA", "ANPA", "A3TX"):
        v = prefix + r(UPPER + "234567", 16)
        # ids of users, groups, roles are not secrets: git-secrets flags them, a redactor need
        # not; only key ids (AKIA, ASIA, A3T) are counted as secrets.
        if prefix in ("AKIA", "ASIA", "A3TX"):
            add(
                "secret",
                f"gitsecrets-aws-key-id-{prefix.lower()}",
                src,
                "Apache-2.0",
                "log",
                f"botocore.credentials: Found credentials in environment variables. key={v}",
                v,
            )
    seps = [
        ("ini", "aws_secret_access_key = {v}"),
        ("ruby", 'aws_secret_access_key => "{v}"'),
        ("yaml", "'AWS_SECRET_ACCESS_KEY': '{v}'"),
        ("json", '"SecretAccessKey": "{v}"'),
        ("python", "AwsSecretKey = '{v}'"),
        ("shell", "SECRET_ACCESS_KEY={v}"),
    ]
    for ctx, template in seps:
        v = r(B64, 40)
        add(
            "secret",
            f"gitsecrets-aws-secret-{ctx}",
            src,
            "Apache-2.0",
            ctx,
            template.format(v=v),
            v,
        )
    for ctx, template in [
        ("env-export", "export AWS_BEARER_TOKEN_BEDROCK={v}"),
        ("prompt", "bedrock keeps saying access denied with {v}, is the key scoped wrong?"),
    ]:
        v = (
            "ABSK"
            + base64.b64encode(
                b"BedrockAPIKey-"
                + r(ALNUM, 4).encode()
                + b"-at-"
                + r(DIGITS, 12).encode()
                + b":"
                + r(B64, 60).encode()
            ).decode()
        )
        add(
            "secret",
            "gitsecrets-bedrock-long-term",
            src,
            "Apache-2.0",
            ctx,
            template.format(v=v),
            v,
        )
    for ctx, template in [
        ("env-export", "export AWS_BEARER_TOKEN_BEDROCK={v}"),
        (
            "curl",
            'curl -H "Authorization: Bearer {v}" https://bedrock-runtime.us-east-1.amazonaws.com/model/x/converse',
        ),
    ]:
        v = "bedrock-api-key-YmVkcm9jay5hbWF6b25hd3MuY29t" + r(B64, 120) + "&Version=1"
        add(
            "secret",
            "gitsecrets-bedrock-short-term",
            src,
            "Apache-2.0",
            ctx,
            template.format(v=v),
            v,
        )
    # Its account-id pattern finds ids, not secrets: ordinary strings.
    for _ in range(2):
        acct = r(DIGITS, 12)
        add(
            "ordinary",
            "gitsecrets-aws-account-id",
            src,
            "Apache-2.0",
            "config",
            f"aws_account_id = {acct}",
        )


# --------------------------------------------------------------------------------------------
# talisman's and earlybird's test strings, deepfence's test file.

SELF_NAMING = re.compile(
    r"(?i)^(?:unsafe\w*|random\w*goeshere|foobar|x{3,}|test|changeme|password|secret|appropriate)$"
)


def talisman_cases(root: Path) -> None:
    pat = root / "detector/pattern/pattern_detector_test.go"
    text = pat.read_text()
    src = f"{TALISMAN}:{pat.relative_to(root)}"
    # Flagged by its tests, with a real-looking value.
    for literal, secret in [
        ("password=y0uw1lln3v3rgu3ssmyP@55w0rd", "y0uw1lln3v3rgu3ssmyP@55w0rd"),
        (
            "<ConsumerKey>alksjdhfkjaklsdhflk12345adskjf</ConsumerKey>",
            "alksjdhfkjaklsdhflk12345adskjf",
        ),
    ]:
        assert literal in text, literal
        add("secret", "talisman-pattern", src, "MIT", "scanner test", literal, secret)
    for literal in [
        '"\\"password\\" : UnsafePassword"',
        "password=UnsafeString",
        "Pw=UnsafeString",
    ]:
        add(
            "negative",
            "talisman-self-naming",
            src,
            "MIT",
            "scanner test",
            literal.strip('"').replace('\\"', '"'),
        )
    fc = root / "detector/filecontent/filecontent_detector_test.go"
    text = fc.read_text()
    src = f"{TALISMAN}:{fc.relative_to(root)}"
    m = re.search(r'const jwt string = "([^"]+)" \+\s*"([^"]+)"', text)
    assert m
    token = m.group(1) + m.group(2)
    add("secret", "talisman-jwt", src, "MIT", "scanner test", f"Authorization: {token}", token)
    add(
        "negative",
        "talisman-aws-example",
        src,
        "MIT",
        "scanner test",
        'String accessKey="wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY";',
    )
    for literal in [
        "TestBase64DetectorShouldNotDetectLongMethodNamesEvenWithRidiculousHighEntropyWordsMightExist",
        "helloWorldGreetingsFromThoughtWorks",
    ]:
        add(
            "ordinary",
            "talisman-identifier",
            src,
            "MIT",
            "scanner test",
            f"func {literal}(t *testing.T) {{",
        )
    add(
        "ordinary",
        "talisman-hex-text",
        src,
        "MIT",
        "scanner test",
        'greeting := "68656C6C6F20776F726C6421" // hex of "hello world!"',
    )
    add(
        "ordinary",
        "talisman-low-entropy-base64",
        src,
        "MIT",
        "scanner test",
        "YWFhYWFhYWFhYWFhYWFhYWFhYWFhYWFhYWFhYWFhYWEK",
    )
    add(
        "ordinary",
        "talisman-checksum",
        f"{TALISMAN}:detector/pattern/pattern_detector_test.go",
        "MIT",
        "talismanrc",
        "fileignoreconfig:\n- filename: secret.txt\n  checksum: 833b6c24c8c2c5c7e1663226dc401b29c005492dc76a1150fc0e0f07f29d4cc3",
    )


EARLYBIRD_PLACEHOLDER = re.compile(r"(?i)foobar|'xxxx'|\"test\"|EXAMPLE|'xxx\d|^[aA0]{20,}$")


def earlybird_cases(root: Path) -> None:
    import yaml

    for name in ("content.yaml", "password-secret.yaml"):
        path = root / "config/rules" / name
        src = f"{EARLYBIRD}:config/rules/{name}"
        data = yaml.safe_load(path.read_text())
        for rule in data["rules"]:
            ex = rule.get("Example") or rule.get('Example"')
            caption = rule.get("Caption", "")
            if not ex:
                continue
            ex = str(ex).strip()
            code = str(rule.get("Code", "jwt"))
            cat = rule.get("Category", "")
            if name == "content.yaml":
                if any(
                    w in caption
                    for w in ("phone", "SSN", "IBAN", "National ID", "Passport", "email")
                ):
                    continue  # personal data: not a secret redactor's business either way
                if "key" in caption.lower() or "Private key" in caption:
                    add(
                        "negative",
                        "earlybird-rule-example",
                        src,
                        "Apache-2.0",
                        "rule example",
                        ex,
                        rule=code,
                    )
                else:
                    add(
                        "ordinary",
                        f"earlybird-{re.sub(r'[^a-z0-9]+', '-', caption.lower()).strip('-')[:40]}",
                        src,
                        "Apache-2.0",
                        "rule example",
                        ex,
                        rule=code,
                    )
                continue
            assert cat == "password-secret", cat
            value_m = re.search(r"['\"]([^'\"]{4,})['\"]\s*$", ex)
            quoted = re.findall(r"'([^']+)'", ex)
            shape = quoted[-1] if quoted else ""
            if (
                "default password" in caption
                or EARLYBIRD_PLACEHOLDER.search(ex)
                or (shape and set(shape.lower()) <= set("a0-"))
                or ex.startswith("ya29X")
                or "Mapbox Secure Key" in ex
                or re.search(r"xoxa-123", ex)
                or (value_m and SELF_NAMING.match(value_m.group(1)))
                or "mypassword" in ex
            ):
                add(
                    "negative",
                    "earlybird-placeholder",
                    src,
                    "Apache-2.0",
                    "rule example",
                    ex,
                    rule=code,
                )
                continue
            secret = {
                "3084": "QWxhZGRpbjpvcGVuIHNlc2FtZQ==",
                "3043": "AIzaSyQ4kHseoBZiO7anxQJ2IzlfzfMLjNU5ma_",
                "3047": ex,
                "3048": ex.split("=", 1)[-1],
                "5001": ex.strip("'"),
                "jwt": ex,
            }[code]
            add(
                "secret",
                f"earlybird-{code}",
                src,
                "Apache-2.0",
                "rule example",
                ex,
                secret,
                rule=code,
            )


def deepfence_cases(root: Path) -> None:
    path = root / "test/keys.txt"
    for line in path.read_text().splitlines():
        if re.search(r"EXAMPLE|0123456789|AKIA", line):
            add(
                "negative",
                "deepfence-placeholder",
                f"{DEEPFENCE}:test/keys.txt",
                "MIT",
                "scanner test",
                line,
            )


# --------------------------------------------------------------------------------------------
# Passwords in commands (flag syntax from each tool's man page or --help).

COMMANDS: list[tuple[str, str, str]] = [
    # (kind, template, password safety)
    ("mongosh-uri", 'mongosh "mongodb://admin:{pw}@db.internal:27017/?authSource=admin"', "url"),
    (
        "mongosh-flags",
        "mongosh --host db1.internal -u admin -p '{pw}' --authenticationDatabase admin",
        "shell",
    ),
    (
        "mongodump-uri",
        'mongodump --uri="mongodb+srv://backup:{pw}@cluster0.ab1cd.mongodb.net/shop" --out=/tmp/dump',
        "url",
    ),
    (
        "clickhouse-client",
        "clickhouse-client --host ch1 --user default --password '{pw}' --query 'SELECT 1'",
        "shell",
    ),
    ("mariadb", "mariadb -h 10.0.0.5 -u root --password='{pw}' inventory", "shell"),
    ("mysqldump", "mysqldump -uroot -p'{pw}' --single-transaction shop > shop.sql", "shell"),
    (
        "pg_dump-env",
        "PGPASSWORD='{pw}' pg_dump -h db.internal -U app -Fc appdb > appdb.dump",
        "shell",
    ),
    (
        "psql-conninfo",
        'psql "host=db.internal port=5432 dbname=app user=app password={pw} sslmode=require"',
        "plain",
    ),
    (
        "pg_basebackup",
        'pg_basebackup -d "postgresql://replicator:{pw}@primary.internal:5432/" -D /var/lib/pg/standby -R',
        "url",
    ),
    (
        "influx-setup",
        "influx setup --username admin --password '{pw}' --org acme --bucket metrics --force",
        "shell",
    ),
    ("mc-alias", "mc alias set minio http://127.0.0.1:9000 minioadmin '{pw}'", "shell"),
    ("lftp", "lftp -u deploy,'{pw}' sftp://files.acme.example", "shell"),
    (
        "curl-ftp",
        "curl --ssl-reqd -u deploy:{pw} -T build.zip ftp://ftp.acme.example/upload/",
        "plain",
    ),
    (
        "svn",
        "svn checkout https://svn.acme.example/repo/trunk --username jdoe --password '{pw}'",
        "shell",
    ),
    ("hdbsql", "hdbsql -n hana01:30015 -u SYSTEM -p '{pw}' \"SELECT * FROM DUMMY\"", "shell"),
    (
        "etcdctl",
        "etcdctl --user root:'{pw}' --endpoints=https://10.0.0.2:2379 get /config/app",
        "shell",
    ),
    (
        "nats",
        "nats --server nats://10.0.0.8:4222 --user app --password '{pw}' pub orders.created hello",
        "shell",
    ),
    ("rabbitmqadmin", "rabbitmqadmin -H mq.internal -u admin -p '{pw}' list queues", "shell"),
    (
        "argocd-login",
        "argocd login argocd.acme.example --username admin --password '{pw}' --grpc-web",
        "shell",
    ),
    (
        "helm-repo-add",
        "helm repo add internal https://charts.acme.example --username ci --password '{pw}'",
        "shell",
    ),
    (
        "kubectl-docker-registry",
        "kubectl create secret docker-registry regcred --docker-server=registry.acme.example --docker-username=ci --docker-password='{pw}'",
        "shell",
    ),
    (
        "openstack",
        "openstack --os-auth-url https://keystone.acme.example:5000/v3 --os-username admin --os-password '{pw}' server list",
        "shell",
    ),
    (
        "ipmitool",
        "ipmitool -I lanplus -H 10.0.0.40 -U ADMIN -P '{pw}' chassis power status",
        "shell",
    ),
    (
        "snmpwalk-v3",
        "snmpwalk -v3 -l authNoPriv -u monitor -a SHA -A '{pw}' 10.0.0.1 system",
        "shell",
    ),
    (
        "ansible-extra-vars",
        'ansible-playbook site.yml -i hosts -e "ansible_become_password={pw}"',
        "plain",
    ),
    (
        "docker-run-env",
        "docker run -d --name pg -e POSTGRES_PASSWORD='{pw}' -p 5432:5432 postgres:16",
        "shell",
    ),
    ("valkey-cli", "valkey-cli -h cache.internal --pass '{pw}' INFO replication", "shell"),
    (
        "httpie-auth",
        "http -a admin:'{pw}' POST https://api.acme.example/v1/jobs name=reindex",
        "shell",
    ),
    (
        "twine-upload",
        "twine upload --repository-url https://pypi.acme.example/ -u ci -p '{pw}' dist/*",
        "shell",
    ),
    (
        "composer-http-basic",
        "composer config --global http-basic.repo.acme.example ci '{pw}'",
        "shell",
    ),
    ("bundle-config", "bundle config set --global https://gems.acme.example ci:{pw}", "plain"),
    (
        "jfrog-config",
        "jf config add art --url https://acme.jfrog.io --user ci --password '{pw}' --interactive=false",
        "shell",
    ),
    ("vault-userpass", "vault login -method=userpass username=ops password='{pw}'", "shell"),
    (
        "openssl-enc",
        "openssl enc -aes-256-cbc -salt -pbkdf2 -in backup.tar -out backup.tar.enc -k '{pw}'",
        "shell",
    ),
    (
        "openssl-pkcs12-password",
        "openssl pkcs12 -in bundle.p12 -nodes -password pass:{pw} -out all.pem",
        "plain",
    ),
    ("unzip-P", "unzip -P '{pw}' quarterly-report.zip", "shell"),
    ("rar-hp", "rar a -hp'{pw}' backup.rar docs/", "shell"),
    ("plink", "plink -ssh deploy@10.0.0.9 -pw '{pw}' uptime", "shell"),
    ("pscp", "pscp -pw '{pw}' build.zip deploy@10.0.0.9:/srv/releases/", "shell"),
    (
        "powershell-pscredential",
        "$cred = New-Object System.Management.Automation.PSCredential('svc-backup', (ConvertTo-SecureString '{pw}' -AsPlainText -Force))",
        "shell",
    ),
    (
        "az-storage-account-key",
        "az storage blob upload --account-name acmebackups --account-key '{pw}' -c backups -f db.bak",
        "b64key",
    ),
    (
        "heroku-config-set",
        "heroku config:set DATABASE_URL=postgres://app:{pw}@ec2-3-1-2-3.compute-1.amazonaws.com:5432/d1 -a acme-api",
        "url",
    ),
    (
        "wp-user-create",
        "wp user create bob bob@acme.example --role=editor --user_pass='{pw}'",
        "shell",
    ),
    ("mysqladmin-password", "mysqladmin -u root password '{pw}'", "shell"),
    ("sql-alter-user", "ALTER USER app WITH PASSWORD '{pw}';", "shell"),
    ("sql-create-user", "CREATE USER 'report'@'%' IDENTIFIED BY '{pw}';", "shell"),
    (
        "docker-login-stdin",
        "echo '{pw}' | docker login ghcr.io -u octocat --password-stdin",
        "shell",
    ),
    ("sudo-S", "echo '{pw}' | sudo -S systemctl restart nginx", "shell"),
    ("passwd-stdin", "echo 'deploy:{pw}' | chpasswd", "shell"),
    ("openssl-passwd", "usermod -p \"$(openssl passwd -6 '{pw}')\" deploy", "shell"),
    (
        "keytool-storepass",
        "keytool -importkeystore -srckeystore app.p12 -srcstoretype PKCS12 -srcstorepass '{pw}' -destkeystore app.jks",
        "shell",
    ),
    (
        "spring-boot-arg",
        "java -jar app.jar --spring.datasource.url=jdbc:postgresql://db:5432/app --spring.datasource.password={pw}",
        "plain",
    ),
    ("gradle-property", "./gradlew publish -PmavenUser=ci -PmavenPassword='{pw}'", "shell"),
    ("dotnet-user-secrets", 'dotnet user-secrets set "Database:Password" "{pw}"', "plain"),
    (
        "ldapmodify",
        "ldapmodify -x -H ldap://ldap.acme.example -D cn=admin,dc=acme,dc=example -w '{pw}' -f change.ldif",
        "shell",
    ),
    ("rdesktop", "rdesktop -u Administrator -p '{pw}' 10.0.0.20", "shell"),
    ("x11vnc", "x11vnc -display :0 -passwd '{pw}' -forever", "shell"),
    ("wpa_passphrase", "wpa_passphrase HomeNet '{pw}' >> /etc/wpa_supplicant.conf", "shell"),
    ("mosquitto_sub", "mosquitto_sub -h broker.local -u sensor -P '{pw}' -t 'home/#'", "shell"),
    ("redis-cli-uri", "redis-cli -u redis://default:{pw}@cache.internal:6379/0 PING", "url"),
    (
        "kafka-jaas-arg",
        'kafka-console-producer --bootstrap-server b1:9092 --topic t --producer-property sasl.jaas.config=\'org.apache.kafka.common.security.plain.PlainLoginModule required username="app" password="{pw}";\'',
        "plain",
    ),
    ("expdp", "expdp system/{pw}@ORCL schemas=HR directory=DATA_PUMP_DIR dumpfile=hr.dmp", "url"),
    ("db2-connect", "db2 connect to SAMPLE user db2inst1 using '{pw}'", "shell"),
    ("isql", "isql -v PROD_DSN app '{pw}'", "shell"),
    ("neo4j-initial-password", "neo4j-admin dbms set-initial-password '{pw}'", "shell"),
    ("cypher-shell", "cypher-shell -a neo4j://graph.internal:7687 -u neo4j -p '{pw}'", "shell"),
    (
        "arangosh",
        "arangosh --server.endpoint tcp://127.0.0.1:8529 --server.username root --server.password '{pw}'",
        "shell",
    ),
    (
        "couchbase-cli",
        "couchbase-cli cluster-init -c localhost --cluster-username Administrator --cluster-password '{pw}' --services data,index,query",
        "shell",
    ),
    ("curl-elastic", "curl -k -u elastic:{pw} https://localhost:9200/_cat/indices?v", "plain"),
    (
        "git-clone-token",
        "git clone https://oauth2:{pw}@gitlab.acme.example/platform/infra.git",
        "url",
    ),
    (
        "smb-credentials-printf",
        "printf 'username=backup\\npassword={pw}\\n' > /root/.smbcred",
        "plain",
    ),
    (
        "invoke-sqlcmd-connection-string",
        'Invoke-Sqlcmd -ConnectionString "Server=sql01;Database=erp;User Id=sa;Password={pw};" -Query "SELECT 1"',
        "plain",
    ),
    (
        "aws-rds-modify",
        "aws rds modify-db-instance --db-instance-identifier prod-db --master-user-password '{pw}' --apply-immediately",
        "shell",
    ),
    (
        "gcloud-sql-create-user",
        "gcloud sql users create report --instance=prod-pg --password='{pw}'",
        "shell",
    ),
    (
        "az-vm-create",
        "az vm create -g rg-lab -n vm1 --image Ubuntu2204 --admin-username azureuser --admin-password '{pw}'",
        "shell",
    ),
    ("az-acr-login", "az acr login -n acmeregistry -u acmeregistry -p '{pw}'", "shell"),
    ("podman-login", "podman login quay.io -u robot+ci -p '{pw}'", "shell"),
    (
        "skopeo-dest-creds",
        "skopeo copy docker://alpine:3.20 docker://registry.acme.example/alpine:3.20 --dest-creds ci:{pw}",
        "plain",
    ),
    ("crane-auth", "crane auth login registry.acme.example -u ci -p '{pw}'", "shell"),
    ("oras-login", "oras login registry.acme.example -u ci -p '{pw}'", "shell"),
    ("nerdctl-login", "nerdctl login -u ci -p '{pw}' registry.acme.example", "shell"),
    (
        "gitlab-runner-register",
        "gitlab-runner register --non-interactive --url https://gitlab.acme.example --registration-token '{pw}' --executor docker",
        "shell",
    ),
    ("mssql-tools-bcp", "bcp dbo.orders out orders.dat -S sql01 -U sa -P '{pw}' -c", "shell"),
    ("mongo-legacy", "mongo admin --username root --password '{pw}' --eval 'db.stats()'", "shell"),
    (
        "rsync-password-env",
        "RSYNC_PASSWORD='{pw}' rsync -av ./site/ backup@nas.local::web/",
        "shell",
    ),
    ("sshpass-env", "SSHPASS='{pw}' sshpass -e ssh deploy@10.0.0.9", "shell"),
    ("encfs-stdin", "echo '{pw}' | encfs -S ~/.crypt ~/private", "shell"),
    ("cryptsetup", "echo -n '{pw}' | cryptsetup luksOpen /dev/sdb1 vault -d -", "shell"),
    (
        "veracrypt",
        "veracrypt --text --mount vault.hc /mnt/vault --password='{pw}' --pim=0 --keyfiles= --protect-hidden=no",
        "shell",
    ),
    ("zip-encrypt", "zip --password '{pw}' -r handover.zip handover/", "shell"),
    ("pgcli", "pgcli postgres://app:{pw}@localhost:5432/app", "url"),
    ("mycli", "mycli -h db.internal -u root -p '{pw}' shop", "shell"),
    ("usql", "usql sqlserver://sa:{pw}@sql01/erp", "url"),
    ("ftp-url-wget", "wget ftp://anonymous:{pw}@mirror.acme.example/pub/iso/debian.iso", "url"),
    ("ncftpput", "ncftpput -u deploy -p '{pw}' ftp.acme.example /htdocs index.html", "shell"),
    (
        "mutt-imap",
        "mutt -e 'set imap_user=me@acme.example imap_pass={pw}' -f imaps://imap.acme.example/",
        "plain",
    ),
    (
        "ansible-adhoc",
        "ansible web -i hosts -m ping -e 'ansible_user=admin ansible_password={pw}'",
        "plain",
    ),
    ("hashicorp-consul-token", "consul kv get -token={pw} config/app", "uuid"),
    ("nomad-token", "NOMAD_TOKEN={pw} nomad job status web", "uuid"),
    ("snyk-auth", "snyk auth {pw}", "uuid"),
]


def command_cases() -> None:
    for i, (kind, template, safe) in enumerate(COMMANDS):
        if safe == "b64key":
            pw = base64.b64encode(rng.randbytes(64)).decode()
        elif safe == "uuid":
            pw = uid()
        else:
            pw = password(i, safe)
        add("secret", f"cmd-{kind}", MADE, "made here", "command", template.format(pw=pw), pw)


# --------------------------------------------------------------------------------------------
# Config files.


def config_cases() -> None:
    def pw(i: int, safe: str = "plain") -> str:
        return password(i, safe)

    cases: list[tuple[str, str, str]] = []  # kind, text, secret

    def c(kind: str, text: str, secret: str) -> None:
        cases.append((kind, text, secret))

    v = "rubygems_" + r(HEX, 48)
    c("gem-credentials", f"---\n:rubygems_api_key: {v}\n", v)
    v = pw(1)
    c(
        "composer-auth-json",
        '{\n  "http-basic": {\n    "repo.acme.example": {\n      "username": "ci",\n      "password": "'
        + v
        + '"\n    }\n  }\n}',
        v,
    )
    v = "npm_" + r(ALNUM, 36)
    c(
        "yarnrc-yml",
        f'npmScopes:\n  acme:\n    npmRegistryServer: "https://npm.acme.example"\n    npmAuthToken: "{v}"',
        v,
    )
    v = pw(2)
    c(
        "gradle-properties",
        f"org.gradle.jvmargs=-Xmx2g\nmavenUser=ci\nmavenPassword={v}\nsigning.keyId=24875D73",
        v,
    )
    v = pw(3)
    c(
        "android-signing",
        f"storeFile=release.keystore\nstorePassword={v}\nkeyAlias=upload\nkeyPassword={v}",
        v,
    )
    v = r(B64, 40)
    c(
        "boto",
        f"[Credentials]\naws_access_key_id = AKIA{r(UPPER + '234567', 16)}\naws_secret_access_key = {v}\n[Boto]\nnum_retries = 3",
        v,
    )
    v = github("gho_")
    c(
        "gh-hosts-yml",
        f"github.com:\n    user: octocat\n    oauth_token: {v}\n    git_protocol: https",
        v,
    )
    v = "cio" + r(ALNUM, 32)
    c("cargo-credentials", f'[registry]\ntoken = "{v}"', v)
    v = f"{r(ALNUM, 14)}.atlasv1.{r(ALNUM, 67)}"
    c(
        "terraform-credentials-json",
        '{\n  "credentials": {\n    "app.terraform.io": {\n      "token": "'
        + v
        + '"\n    }\n  }\n}',
        v,
    )
    v = pw(4)
    c(
        "hibernate-cfg",
        f'<property name="hibernate.connection.username">app</property>\n<property name="hibernate.connection.password">{v}</property>',
        v,
    )
    v = pw(5)
    c(
        "spring-properties",
        f"spring.datasource.url=jdbc:mysql://db:3306/shop\nspring.datasource.username=shop\nspring.datasource.password={v}",
        v,
    )
    v = pw(6)
    c(
        "spring-yaml",
        f"spring:\n  datasource:\n    url: jdbc:postgresql://db:5432/app\n    username: app\n    password: {v}",
        v,
    )
    v = pw(7)
    c(
        "compose-environment",
        f"services:\n  db:\n    image: mysql:8.4\n    environment:\n      MYSQL_ROOT_PASSWORD: {v}\n      MYSQL_DATABASE: shop",
        v,
    )
    v = pw(8, "url")
    c(
        "k8s-secret-stringdata",
        f"apiVersion: v1\nkind: Secret\nmetadata:\n  name: db\ntype: Opaque\nstringData:\n  username: app\n  password: {v}",
        v,
    )
    raw = pw(9, "url")
    v = base64.b64encode(raw.encode()).decode()
    c(
        "k8s-secret-data",
        f"apiVersion: v1\nkind: Secret\nmetadata:\n  name: api\ndata:\n  api-key: {v}",
        v,
    )
    v = "hvs." + r(ALNUM, 90)
    c("vault-token-file", f"$ cat ~/.vault-token\n{v}", v)
    v = pw(10)
    c(
        "prometheus-basic-auth",
        f"scrape_configs:\n  - job_name: node\n    basic_auth:\n      username: prom\n      password: {v}\n    static_configs:\n      - targets: ['10.0.0.3:9100']",
        v,
    )
    v = pw(11)
    c(
        "grafana-ini",
        f"[security]\nadmin_user = admin\nadmin_password = {v}\nsecret_key = {r(ALNUM, 16)}",
        v,
    )
    v = pw(12)
    c("redis-conf", f"bind 127.0.0.1\nport 6379\nrequirepass {v}\nmaxmemory 256mb", v)
    v = pw(13)
    c("pgbouncer-userlist", f'"app" "{v}"\n"report" "md5{r(HEX, 32)}"', v)
    v = pw(14)
    c(
        "muttrc",
        f'set imap_user = "me@acme.example"\nset imap_pass = "{v}"\nset folder = "imaps://imap.acme.example/"',
        v,
    )
    v = pw(15)
    c(
        "msmtprc",
        f"account work\nhost smtp.acme.example\nport 587\nauth on\nuser me@acme.example\npassword {v}\nfrom me@acme.example",
        v,
    )
    v = pw(16)
    c("fetchmailrc", f'poll imap.acme.example protocol IMAP user "me" password "{v}" ssl', v)
    v = pw(17)
    c(
        "offlineimaprc",
        f"[Repository Remote]\ntype = IMAP\nremotehost = imap.acme.example\nremoteuser = me\nremotepass = {v}",
        v,
    )
    v = base64.b64encode(rng.randbytes(32)).decode()
    c(
        "wireguard-conf",
        f"[Interface]\nAddress = 10.8.0.2/24\nPrivateKey = {v}\nDNS = 1.1.1.1\n\n[Peer]\nPublicKey = {base64.b64encode(rng.randbytes(32)).decode()}",
        v,
    )
    v = pw(18)
    c("ipsec-secrets", f'# /etc/ipsec.secrets\n203.0.113.5 198.51.100.7 : PSK "{v}"', v)
    v = pw(19)
    c("openvpn-auth-txt", f"$ cat /etc/openvpn/client/auth.txt\nvpnuser\n{v}", v)
    v = pw(20)
    c(
        "gha-docker-login",
        f"      - uses: docker/login-action@v3\n        with:\n          registry: ghcr.io\n          username: octocat\n          password: {v}",
        v,
    )
    v = pw(21)
    c(
        "gitlab-ci-variables",
        f'variables:\n  POSTGRES_DB: test\n  POSTGRES_USER: runner\n  POSTGRES_PASSWORD: "{v}"',
        v,
    )
    v = pw(22)
    c(
        "circleci-environment",
        f"    docker:\n      - image: cimg/postgres:16.0\n        environment:\n          POSTGRES_USER: circle\n          POSTGRES_PASSWORD: {v}",
        v,
    )
    v = pw(23)
    c("terraform-tfvars", f'region      = "eu-west-1"\ndb_username = "app"\ndb_password = "{v}"', v)
    v = pw(24)
    c("ansible-inventory", f"[web]\n10.0.0.11 ansible_user=admin ansible_password={v}", v)
    v = pw(25)
    c("ansible-group-vars", f"---\nansible_become_pass: {v}\nnginx_worker_processes: 4", v)
    v = base64.b64encode(f"admin:{pw(26)}".encode()).decode()
    c(
        "nginx-basic-header",
        f'location /api/ {{\n    proxy_pass http://backend;\n    proxy_set_header Authorization "Basic {v}";\n}}',
        v,
    )
    v = base64.b64encode(f"ci:{pw(27)}".encode()).decode()
    c("npmrc-auth", f"registry=https://npm.acme.example/\n_auth={v}\nalways-auth=true", v)
    v = pw(28)
    c("uv-env", f"UV_INDEX_ACME_USERNAME=ci\nUV_INDEX_ACME_PASSWORD={v}", v)
    v = "sntrys_eyJ" + r(B64URL, 120) + "_" + r(B64URL, 43)
    c("sentry-properties", f"defaults.url=https://sentry.io/\ndefaults.org=acme\nauth.token={v}", v)
    v = pw(29)
    c(
        "appsettings-connection",
        '{\n  "ConnectionStrings": {\n    "Default": "Server=sql01;Database=erp;User Id=erp;Password='
        + v
        + ';TrustServerCertificate=True"\n  }\n}',
        v,
    )
    v = pw(30)
    c(
        "laravel-env",
        f"DB_CONNECTION=mysql\nDB_HOST=127.0.0.1\nDB_DATABASE=shop\nDB_USERNAME=shop\nDB_PASSWORD={v}",
        v,
    )
    v = pw(31)
    c(
        "rails-database-yml",
        f"production:\n  adapter: postgresql\n  database: app_production\n  username: app\n  password: {v}",
        v,
    )
    v = pw(32)
    c(
        "knexfile",
        f"module.exports = {{\n  client: 'pg',\n  connection: {{ host: 'db', user: 'app', password: '{v}', database: 'app' }},\n}};",
        v,
    )
    v = pw(33)
    c(
        "ormconfig-json",
        '{\n  "type": "postgres",\n  "host": "localhost",\n  "username": "app",\n  "password": "'
        + v
        + '",\n  "database": "app"\n}',
        v,
    )
    v = pw(34)
    c("samba-credentials", f"username=backup\npassword={v}\ndomain=CORP", v)
    v = pw(35)
    c("rsyncd-secrets", f"$ cat /etc/rsyncd.secrets\nbackup:{v}", v)
    v = r(B64, 40)
    token = "IQoJb3JpZ2luX2VjE" + r(B64, 300)
    c(
        "aws-credentials-session",
        f"[prod]\naws_access_key_id = ASIA{r(UPPER + '234567', 16)}\naws_secret_access_key = {v}\naws_session_token = {token}",
        v,
    )
    c(
        "aws-credentials-session-token",
        f"[prod]\nregion = eu-west-1\naws_session_token = {token}",
        token,
    )
    v = r(HEX, 48)
    c("jupyter-config", f"c.ServerApp.ip = '0.0.0.0'\nc.ServerApp.token = '{v}'", v)
    v = base64.urlsafe_b64encode(rng.randbytes(32)).decode()
    c("airflow-fernet", f"[core]\nexecutor = LocalExecutor\nfernet_key = {v}", v)
    v = r(LOWER + DIGITS + "!@#%^&*(-_=+)", 50)
    c("django-secret-key", f"SECRET_KEY = '{v}'\nDEBUG = False", v)
    v = r(HEX, 32)
    c("rails-master-key", f"$ cat config/master.key\n{v}", v)
    v = pw(36)
    c(
        "toml-database",
        f'[database]\nhost = "db.internal"\nuser = "app"\npassword = "{v}"\npool = 10',
        v,
    )
    v = pw(37)
    c("ini-section", f"[mysql]\nhost=db.internal\nuser=report\npassword={v}", v)
    v = pw(38)
    c(
        "xml-settings",
        f'<settings>\n  <add key="SmtpUser" value="alerts@acme.example" />\n  <add key="SmtpPassword" value="{v}" />\n</settings>',
        v,
    )
    v = pw(39)
    c(
        "php-array",
        f"return [\n    'host' => 'db',\n    'username' => 'shop',\n    'password' => '{v}',\n];",
        v,
    )
    v = pw(40)
    c(
        "hcl-provider",
        f'provider "postgresql" {{\n  host     = "db.internal"\n  username = "admin"\n  password = "{v}"\n}}',
        v,
    )
    v = pw(41)
    c(
        "systemd-environment",
        f"[Service]\nEnvironment=DB_USER=app\nEnvironment=DB_PASS={v}\nExecStart=/usr/local/bin/app",
        v,
    )
    v = pw(42)
    c(
        "kafka-client-properties",
        f'security.protocol=SASL_SSL\nsasl.mechanism=PLAIN\nsasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required username="app" password="{v}";',
        v,
    )
    v = pw(43)
    c(
        "liquibase-properties",
        f"url: jdbc:postgresql://db:5432/app\nusername: app\npassword: {v}\nchangeLogFile: db/changelog.xml",
        v,
    )
    v = pw(44)
    c(
        "flyway-conf",
        f"flyway.url=jdbc:postgresql://db:5432/app\nflyway.user=app\nflyway.password={v}",
        v,
    )
    v = pw(45)
    c(
        "odbc-dsn",
        f"[PROD]\nDriver=ODBC Driver 18 for SQL Server\nServer=sql01\nUID=report\nPWD={v}",
        v,
    )

    for kind, text, secret in cases:
        add("secret", f"cfg-{kind}", MADE, "made here", "config", text, secret)


# --------------------------------------------------------------------------------------------
# Keys made here.


def _run(args: list[str], **kw: object) -> str:
    return subprocess.run(args, check=True, capture_output=True, text=True, **kw).stdout  # type: ignore[call-overload,no-any-return]


def key_cases() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        keys: list[tuple[str, str]] = []
        keys.append(
            (
                "pem-rsa-pkcs8",
                _run(
                    ["openssl", "genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048"]
                ),
            )
        )
        keys.append(
            (
                "pem-ec-sec1",
                _run(["openssl", "ecparam", "-name", "prime256v1", "-genkey", "-noout"]),
            )
        )
        keys.append(("pem-rsa-traditional", _run(["openssl", "genrsa", "-traditional", "2048"])))
        keys.append(
            (
                "pem-encrypted-pkcs8",
                _run(
                    [
                        "openssl",
                        "genpkey",
                        "-algorithm",
                        "ed25519",
                        "-aes256",
                        "-pass",
                        "pass:" + password(1, "plain"),
                    ]
                ),
            )
        )
        path = os.path.join(tmp, "id")
        _run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "deploy@ci", "-f", path])
        keys.append(("openssh-ed25519", Path(path).read_text()))
        home = os.path.join(tmp, "gpg")
        os.mkdir(home, 0o700)
        env = dict(os.environ, GNUPGHOME=home)
        _run(
            [
                "gpg",
                "--batch",
                "--pinentry-mode",
                "loopback",
                "--passphrase",
                "",
                "--quick-gen-key",
                "Release Bot <release@acme.example>",
                "ed25519",
                "sign",
                "never",
            ],
            env=env,
        )
        keys.append(
            (
                "pgp-private-block",
                _run(
                    [
                        "gpg",
                        "--batch",
                        "--pinentry-mode",
                        "loopback",
                        "--passphrase",
                        "",
                        "--armor",
                        "--export-secret-keys",
                    ],
                    env=env,
                ),
            )
        )
    for kind, pem in keys:
        body = [
            ln
            for ln in pem.strip().splitlines()
            if ln and not ln.startswith("-----") and ":" not in ln
        ]
        secret = max(body[1:-1] or body, key=len)
        add(
            "secret",
            f"key-{kind}",
            MADE,
            "made here",
            "file",
            f"$ cat key.pem\n{pem.strip()}",
            secret,
        )
    # A key inside JSON (a Google service account file) and inside a kubeconfig.
    pem = keys[0][1].strip()
    body = pem.splitlines()[3]
    sa = json.dumps(
        {
            "type": "service_account",
            "project_id": "acme-prod",
            "private_key_id": r(HEX, 40),
            "private_key": pem + "\n",
            "client_email": "ci@acme-prod.iam.gserviceaccount.com",
        },
        indent=2,
    )
    add("secret", "key-gcp-service-account-json", MADE, "made here", "file", sa, body)
    kd = base64.b64encode(keys[1][1].encode()).decode()
    add(
        "secret",
        "key-kubeconfig-client-key-data",
        MADE,
        "made here",
        "file",
        f"users:\n- name: admin\n  user:\n    client-certificate-data: LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCk1J\n    client-key-data: {kd}",
        kd,
    )


# --------------------------------------------------------------------------------------------
# Tool output, code, prompts, split lines.


def output_cases() -> None:
    def o(kind: str, text: str, secret: str) -> None:
        add("secret", f"out-{kind}", MADE, "made here", "tool output", text, secret)

    v = r(B64, 40)
    o(
        "aws-iam-create-access-key",
        '{\n    "AccessKey": {\n        "UserName": "ci",\n        "AccessKeyId": "AKIA'
        + r(UPPER + "234567", 16)
        + '",\n        "Status": "Active",\n        "SecretAccessKey": "'
        + v
        + '",\n        "CreateDate": "2026-11-20T09:12:44+00:00"\n    }\n}',
        v,
    )
    v = "IQoJb3JpZ2luX2VjE" + r(B64, 400)
    o(
        "aws-sts-assume-role",
        '{\n    "Credentials": {\n        "AccessKeyId": "ASIA'
        + r(UPPER + "234567", 16)
        + '",\n        "SecretAccessKey": "'
        + r(B64, 40)
        + '",\n        "SessionToken": "'
        + v
        + '",\n        "Expiration": "2026-11-20T10:12:44+00:00"\n    }\n}',
        v,
    )
    v = base64.b64encode(rng.randbytes(64)).decode()
    o(
        "az-storage-keys-list",
        '[\n  {\n    "creationTime": "2026-01-04T10:00:00+00:00",\n    "keyName": "key1",\n    "permissions": "FULL",\n    "value": "'
        + v
        + '"\n  }\n]',
        v,
    )
    v = "ya29." + r(ALNUM + "-_", 180)
    o("gcloud-print-access-token", f"$ gcloud auth print-access-token\n{v}", v)
    v = "HRKU-AA" + r(B64URL, 58)
    o(
        "heroku-auth-token",
        f"$ heroku auth:token\n ›   Warning: token will expire 11/27/2027\n{v}",
        v,
    )
    v = password(3, "plain")
    o(
        "kubectl-secret-decoded",
        f"$ kubectl get secret db -o jsonpath='{{.data.password}}' | base64 -d\n{v}",
        v,
    )
    v = "hvs." + r(ALNUM, 90)
    o(
        "vault-token-create",
        f"Key                  Value\n---                  -----\ntoken                {v}\ntoken_accessor       {r(ALNUM, 24)}\ntoken_duration       768h\ntoken_renewable      true",
        v,
    )
    v = uid()
    o(
        "consul-acl-token-create",
        f"AccessorID:       {uid()}\nSecretID:         {v}\nDescription:      ci\nLocal:            false",
        v,
    )
    v = password(0, "plain")
    o(
        "terraform-output-json",
        '{\n  "db_password": {\n    "sensitive": true,\n    "type": "string",\n    "value": "'
        + v
        + '"\n  }\n}',
        v,
    )
    v = password(1, "plain")
    o(
        "docker-compose-config",
        f"services:\n  api:\n    environment:\n      DATABASE_USER: app\n      DATABASE_PASSWORD: {v}\n    image: acme/api:2.3",
        v,
    )
    v = password(5, "plain")
    o(
        "env-grep",
        f"$ env | grep -i pass\nPGPASSWORD={v}\nPASSWORD_STORE_DIR=/home/me/.password-store",
        v,
    )
    v = "npm_" + r(ALNUM, 36)
    o(
        "npm-token-create",
        f"┌────────────────┬──────────────────────────────────────────┐\n│ token          │ {v} │\n│ readonly       │ false                                    │\n└────────────────┴──────────────────────────────────────────┘",
        v,
    )
    v = github("gho_")
    o("gh-auth-token", f"$ gh auth token\n{v}", v)
    v = password(2, "plain")
    o("op-read", f"$ op read op://Private/prod-db/password\n{v}", v)
    v = github("ghp_")
    o(
        "git-remote-v",
        f"origin\thttps://octocat:{v}@github.com/acme/api.git (fetch)\norigin\thttps://octocat:{v}@github.com/acme/api.git (push)",
        v,
    )
    v = password(4, "url")
    o(
        "pip-config-list",
        f"$ pip config list\nglobal.index-url='https://ci:{v}@pypi.acme.example/simple'",
        v,
    )
    v = r(ALNUM + "-_", 43)
    o(
        "nginx-access-log",
        f'203.0.113.9 - - [20/Nov/2026:10:01:22 +0000] "GET /oauth/callback?code=4%2F0Ad&access_token={v}&state=x HTTP/1.1" 302 0',
        v,
    )
    v = password(6, "url")
    o(
        "python-traceback",
        f'  File "/app/db.py", line 12, in connect\n    engine = create_engine("postgresql+psycopg://app:{v}@db.internal/app")\nsqlalchemy.exc.OperationalError: connection refused',
        v,
    )
    v = password(7, "plain")
    o(
        "set-x-trace",
        f"+ curl -fsS -u admin:{v} https://jenkins.acme.example/api/json\ncurl: (22) The requested URL returned error: 403",
        v,
    )
    v = "dop_v1_" + r(HEX, 64)
    o(
        "doctl-auth-list",
        f"$ cat ~/.config/doctl/config.yaml\naccess-token: {v}\ncontext: default",
        v,
    )
    v = password(8, "plain")
    o(
        "journalctl-leak",
        f"Nov 20 10:01:22 web1 app[812]: DEBUG connecting with user=app password={v} host=db.internal",
        v,
    )
    v = r(ALNUM, 32)
    o(
        "firebase-init-output",
        f"✔  Created service account key.\n   Web API key (server): {v}\n   Store it in functions config.",
        v,
    )


def code_cases() -> None:
    def k(kind: str, text: str, secret: str) -> None:
        add("secret", f"code-{kind}", MADE, "made here", "code", text, secret)

    v = password(0, "plain")
    k(
        "go-sql-open",
        f'db, err := sql.Open("postgres", "host=db user=app password={v} dbname=app sslmode=disable")',
        v,
    )
    v = password(1, "plain")
    k(
        "csharp-sqlconnection",
        f'using var conn = new SqlConnection("Server=sql01;Database=erp;User Id=erp;Password={v};");',
        v,
    )
    v = password(2, "plain")
    k(
        "python-psycopg",
        f'conn = psycopg.connect(host="db", user="app", password="{v}", dbname="app")',
        v,
    )
    v = password(3, "plain")
    k("python-redis", f'r = redis.Redis(host="cache", port=6379, password="{v}")', v)
    v = r(B64, 40)
    k(
        "python-boto3",
        f's3 = boto3.client("s3", aws_access_key_id="AKIA{r(UPPER + "234567", 16)}", aws_secret_access_key="{v}")',
        v,
    )
    v = password(4, "plain")
    k(
        "node-pg-client",
        f"const client = new Client({{ host: 'db', user: 'app', password: '{v}', database: 'app' }});",
        v,
    )
    v = password(5, "url")
    k(
        "node-mongoose",
        f'await mongoose.connect("mongodb+srv://app:{v}@cluster0.xk2ab.mongodb.net/shop");',
        v,
    )
    v = "sk_live_51" + r(ALNUM, 97)
    k("ruby-stripe", f"Stripe.api_key = '{v}'", v)
    v = password(6, "plain")
    k("php-mysqli", f"$db = new mysqli('localhost', 'shop', '{v}', 'shop');", v)
    v = password(7, "plain")
    k("python-requests-auth", f'resp = requests.get(url, auth=("admin", "{v}"), timeout=10)', v)
    v = password(8, "plain")
    k("python-smtplib", f"server.login('alerts@acme.example', '{v}')", v)
    v = password(9, "plain")
    k("python-paramiko", f'ssh.connect("10.0.0.9", username="deploy", password="{v}")', v)
    v = password(10, "plain")
    k("python-ftplib", f"ftp = FTP('ftp.acme.example'); ftp.login('deploy', '{v}')", v)
    v = password(11, "plain")
    k("java-properties-put", f'props.put("mail.smtp.password", "{v}");', v)
    v = password(12, "plain")
    k("kotlin-datasource", f'dataSource.password = "{v}"', v)
    v = r(ALNUM, 40)
    k("swift-let", f'let apiSecret = "{v}"', v)
    v = password(13, "plain")
    k(
        "rust-struct",
        f'let cfg = Config {{ user: "app".into(), password: "{v}".into(), ..Default::default() }};',
        v,
    )
    v = password(14, "plain")
    k("bash-function", f'db() {{ mysql -h db.internal -u app --password="{v}" "$@"; }}', v)
    v = password(15, "plain")
    k(
        "terraform-resource",
        f'resource "aws_db_instance" "main" {{\n  engine   = "postgres"\n  username = "app"\n  password = "{v}"\n}}',
        v,
    )
    v = password(16, "plain")
    k("js-basic-auth", f"headers: {{ Authorization: 'Basic ' + btoa('admin:{v}') }}", v)


PROMPTS: list[tuple[str, str]] = [
    ("en", "my db password is {pw}, why does psql keep saying authentication failed?"),
    (
        "en-next-line",
        "here's the new password for the staging box:\n{pw}\nplease update the runbook",
    ),
    (
        "fr",
        "Voici mon mot de passe pour le serveur de test : {pw}. Peux-tu te connecter et regarder les logs ?",
    ),
    ("de", "Das Passwort für den Staging-Server lautet {pw} – bitte in die .env eintragen."),
    ("es", "La contraseña de la base de datos es {pw}, ¿puedes actualizar el docker-compose?"),
    ("pt", "A senha do usuário admin é {pw}, configura o pipeline pra usar ela."),
    ("it", "La password di root è {pw}, aggiungila al playbook di ansible."),
    ("nl", "Het wachtwoord van de VPN is {pw}, zet het in de config."),
    ("ja", "ステージングのDBパスワードは {pw} です。接続設定を直してください。"),
    ("zh", "数据库密码是 {pw}，帮我改一下配置文件。"),
    ("ko", "관리자 비밀번호는 {pw} 입니다. 설정 파일에 넣어 주세요."),
    ("ru", "Пароль от сервера: {pw}, подключись и проверь логи."),
    ("pl", "Hasło do bazy to {pw}, popraw konfigurację połączenia."),
    ("tr", "Veritabanı şifresi {pw}, bağlantı ayarlarını düzelt."),
    ("sv", "Lösenordet till Wi-Fi är {pw}, lägg in det i wpa-filen."),
    ("en-api-key", "use this API key for the integration test: {key}"),
    ("de-token", "Hier ist mein Token für die API: {key} – bitte nicht committen."),
    ("ja-token", "APIキーはこれです: {key}"),
]


def prompt_cases() -> None:
    for i, (lang, template) in enumerate(PROMPTS):
        if "{key}" in template:
            v = r(ALNUM, 40)
            text = template.format(key=v)
        else:
            v = password(i, "plain")
            text = template.format(pw=v)
        add("secret", f"prompt-{lang}", MADE, "made here", "prompt", text, v)


def split_cases() -> None:
    def s(kind: str, text: str, secret: str) -> None:
        add("secret", f"split-{kind}", MADE, "made here", "split", text, secret)

    v = password(1, "shell")
    s(
        "shell-continuation",
        f"docker login registry.acme.example \\\n    --username ci \\\n    --password '{v}'",
        v,
    )
    v = password(2, "plain")
    s("yaml-folded", f"db:\n  user: app\n  password: >-\n    {v}", v)
    tok = github("ghp_")
    s("python-implicit-join", f'TOKEN = (\n    "{tok[:20]}"\n    "{tok[20:]}"\n)', tok[20:])
    tok = "sk-ant-api03-" + r(B64URL, 93) + "AA"
    line1, line2 = tok[:60], tok[60:]
    s("terminal-wrap", f"$ echo $ANTHROPIC_API_KEY\n{line1}\n{line2}", line2)
    tok = "xoxb-" + r(DIGITS, 12) + "-" + r(DIGITS, 13) + "-" + r(ALNUM, 24)
    s("js-concat", f'const slackToken = "{tok[:18]}" +\n  "{tok[18:]}";', tok[18:])
    v = password(4, "plain")
    s("json-pretty", '{\n  "database": {\n    "password":\n      "' + v + '"\n  }\n}', v)
    v = r(B64, 40)
    s(
        "table-wrap",
        "| name | value |\n|------|-------|\n| AWS_SECRET_ACCESS_KEY | "
        + v[:20]
        + " |\n|  | "
        + v[20:]
        + " |",
        v[20:],
    )
    v = password(6, "plain")
    s(
        "powershell-backtick",
        f"New-LocalUser -Name svc-web `\n  -Password (ConvertTo-SecureString '{v}' -AsPlainText -Force) `\n  -PasswordNeverExpires",
        v,
    )
    v = password(7, "plain")
    s("heredoc", f"cat > .env <<'EOF'\nDB_USER=app\nDB_PASSWORD={v}\nEOF", v)


# --------------------------------------------------------------------------------------------
# Placeholders: the same contexts, no secret.

PLACEHOLDERS: list[tuple[str, str]] = [
    (
        "angle",
        "mongosh --host db1.internal -u admin -p '<password>' --authenticationDatabase admin",
    ),
    ("angle-token", "export GITHUB_TOKEN=<your-token>"),
    (
        "angle-url",
        'mongodump --uri="mongodb+srv://backup:<db_password>@cluster0.ab1cd.mongodb.net/shop"',
    ),
    ("dollar-brace", 'psql "host=db.internal dbname=app user=app password=${DB_PASSWORD}"'),
    ("dollar", 'mysqldump -uroot -p"$MYSQL_ROOT_PASSWORD" --single-transaction shop > shop.sql'),
    (
        "command-substitution",
        'vault login -method=userpass username=ops password="$(pass show ops/vault)"',
    ),
    ("github-secrets", "          password: ${{ secrets.REGISTRY_PASSWORD }}"),
    ("jinja", 'ansible_become_pass: "{{ vault_become_pass }}"'),
    ("helm", "        - name: DB_PASSWORD\n          value: {{ .Values.db.password | quote }}"),
    ("stars", "DB_PASSWORD=********"),
    ("stars-output", "Password: ********\nLogin Succeeded"),
    ("percent-windows", "net use Z: \\\\nas\\share /user:CORP\\backup %BACKUP_PASS%"),
    (
        "powershell-env",
        "Invoke-Sqlcmd -ServerInstance sql01 -Username sa -Password $env:SA_PASSWORD -Query 'SELECT 1'",
    ),
    (
        "python-environ",
        'conn = psycopg.connect(host="db", user="app", password=os.environ["DB_PASSWORD"])',
    ),
    (
        "node-env",
        "const client = new Client({ host: 'db', user: 'app', password: process.env.PGPASSWORD });",
    ),
    ("python-format", 'dsn = "postgresql://{user}:{password}@{host}/{db}".format(**cfg)'),
    ("python-percent", 'cursor.execute("ALTER USER %(user)s WITH PASSWORD %(password)s", params)'),
    ("sql-bind", "UPDATE users SET password_hash = :password_hash WHERE id = :id"),
    ("your", "STRIPE_SECRET_KEY=YOUR_STRIPE_SECRET_KEY"),
    ("your-lower", "api_key: your-api-key-here"),
    ("xxxx", "OPENAI_API_KEY=sk-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"),
    ("redacted", "Authorization: Bearer [REDACTED]"),
    ("ellipsis", "token: ghp_...  # paste yours"),
    ("dotenv-empty", "DB_PASSWORD=\nDB_USER=app"),
    ("docker-secret-file", "environment:\n  POSTGRES_PASSWORD_FILE: /run/secrets/db_password"),
    (
        "k8s-secretkeyref",
        "          valueFrom:\n            secretKeyRef:\n              name: db\n              key: password",
    ),
    ("terraform-var", "password = var.db_password"),
    ("aws-ssm-ref", "DB_PASSWORD: '{{resolve:ssm-secure:/prod/db/password:1}}'"),
    ("spring-placeholder", "spring.datasource.password=${SPRING_DATASOURCE_PASSWORD}"),
    ("angle-curl", "curl -u admin:<password> https://localhost:9200/_cat/indices"),
    (
        "caps-placeholder",
        "az login --service-principal -u APP_ID -p CLIENT_SECRET --tenant TENANT_ID",
    ),
    ("read-prompt", "read -s -p 'Password: ' DB_PASSWORD && export DB_PASSWORD"),
    ("getpass", "password = getpass.getpass('Vault password: ')"),
    ("keyring", 'password = keyring.get_password("acme-db", "app")'),
    ("op-ref", "DB_PASSWORD=op://Private/prod-db/password"),
    ("vault-ref", "password: vault:secret/data/db#password"),
    (
        "azure-keyvault-ref",
        '"DbPassword": "@Microsoft.KeyVault(SecretUri=https://acme-kv.vault.azure.net/secrets/db-password/)"',
    ),
    ("sops-enc", "password: ENC[AES256_GCM,data:,iv:,tag:,type:str]"),
    ("hash-dollar-env", 'export PGPASSWORD="${PGPASSWORD:?set it first}"'),
    (
        "prompt-placeholder",
        "set your password with `passwd` and then run `ssh-copy-id deploy@host`",
    ),
]


def placeholder_cases() -> None:
    for kind, text in PLACEHOLDERS:
        add("ordinary", f"placeholder-{kind}", MADE, "made here", "placeholder", text)


# --------------------------------------------------------------------------------------------
# Ordinary strings from real material.

SECRET_NAME = r"(?i)(pass(word|wd|phrase)?|pwd|secret|token|api[_-]?key|auth|credential|private[_-]?key|access[_-]?key)"
_SECRET_LINE = [
    re.compile(SECRET_NAME + r"\w*['\"]?\s*(:|=|=>)\s*['\"]?[^\s'\"<>${}()*\[\]]{6,}"),
    re.compile(
        r"(AKIA|ASIA|ghp_|gho_|github_pat_|glpat-|xox[abpr]-|sk-|sk_live|AIza|eyJ|-----BEGIN|hvs\.|npm_[A-Za-z0-9]{10})"
    ),
    re.compile(r"://[^/\s:@]+:[^/\s@]+@"),
    re.compile(
        r"(?i)(--?(password|passwd|pass|pw|token|secret|api-key|key)[= ]\s*['\"]?[^\s'\"<>${}-][^\s'\"]{3,})"
    ),
    re.compile(r"(?i)\b-p\S{4,}"),
    # documentation's credentials written as words (`-u user:password`, `password=bar`): such a
    # line is neither a secret nor an ordinary string (as corpus C's `USERNAME:PASSWORD`)
    re.compile(r"(?i)(\s-u|--proxy-user|--user)\s*['\"]?[^\s:'\"]+:[^\s'\"]+"),
    re.compile(r"(?i)(pass(word|wd)?|pwd|user)=[^\s&'\"]+"),
    re.compile(r"(?i)-[\w-]*(password|passwd|pass)[= ]\s*[^\s-]\S*"),
]


def _looks_secret(line: str) -> bool:
    return any(p.search(line) for p in _SECRET_LINE)


def sample(lines: Iterable[str], n: int, *, minlen: int = 16, maxlen: int = 300) -> list[str]:
    pool = sorted(
        {
            ln.rstrip()
            for ln in lines
            if minlen <= len(ln.strip()) <= maxlen and not _looks_secret(ln)
        }
    )
    return rng.sample(pool, min(n, len(pool)))


def _sh(cmd: str) -> list[str]:
    out = subprocess.run(cmd, shell=True, capture_output=True, text=True, errors="replace")
    return (out.stdout + out.stderr).splitlines()


def real_cases(sources: Path) -> None:
    def real(kind: str, source: str, license_: str, context: str, lines: list[str]) -> None:
        for ln in lines:
            add("ordinary", kind, source, license_, context, ln)

    bins = " ".join(
        f"/usr/bin/{b}"
        for b in ("ls", "cp", "tar", "gzip", "ssh", "git", "curl", "openssl", "python3", "perl")
    )
    real(
        "sha256sum",
        "sha256sum /usr/bin/* (run here)",
        "real output",
        "tool output",
        sample(_sh(f"sha256sum {bins}"), 6),
    )
    real(
        "sha1sum",
        "sha1sum (run here)",
        "real output",
        "tool output",
        sample(_sh(f"sha1sum {bins}"), 5),
    )
    real(
        "md5sum",
        "md5sum (run here)",
        "real output",
        "tool output",
        sample(_sh(f"md5sum {bins}"), 5),
    )
    real(
        "b2sum",
        "b2sum (run here)",
        "real output",
        "tool output",
        sample(_sh(f"b2sum {bins}"), 4, maxlen=400),
    )
    real(
        "openssl-dgst",
        "openssl dgst (run here)",
        "real output",
        "tool output",
        sample(_sh(f"openssl dgst -sha512 {bins}"), 4, maxlen=400),
    )
    real(
        "x509-fingerprint",
        "openssl x509 -fingerprint of /etc/ssl/certs (run here)",
        "real output",
        "tool output",
        sample(
            _sh(
                "for f in $(ls /etc/ssl/certs/*.pem | head -40); do openssl x509 -noout -fingerprint -sha256 -in $f; done"
            ),
            8,
        ),
    )
    real(
        "x509-serial",
        "openssl x509 -serial (run here)",
        "real output",
        "tool output",
        sample(
            _sh(
                "for f in $(ls /etc/ssl/certs/*.pem | head -40); do openssl x509 -noout -serial -subject_hash -in $f; done"
            ),
            5,
            minlen=10,
        ),
    )
    with tempfile.TemporaryDirectory() as tmp:
        _sh(
            f"ssh-keygen -q -t ed25519 -N '' -f {tmp}/k && ssh-keygen -q -t rsa -b 2048 -N '' -f {tmp}/r"
        )
        real(
            "ssh-public-key",
            "ssh-keygen (run here)",
            "real output",
            "tool output",
            _sh(f"cat {tmp}/k.pub {tmp}/r.pub"),
        )
        real(
            "ssh-fingerprint",
            "ssh-keygen -l (run here)",
            "real output",
            "tool output",
            _sh(
                f"ssh-keygen -lf {tmp}/k.pub; ssh-keygen -lf {tmp}/r.pub; ssh-keygen -E md5 -lf {tmp}/r.pub; ssh-keygen -B -f {tmp}/k.pub"
            ),
        )
        real(
            "ssh-randomart",
            "ssh-keygen -lv (run here)",
            "real output",
            "tool output",
            sample(_sh(f"ssh-keygen -lvf {tmp}/k.pub"), 3, minlen=12),
        )
    real(
        "git-log",
        f"git log of {TALISMAN.split('@')[0]} (fetched)",
        "real output",
        "tool output",
        sample(
            _sh("git -C /work/.mirror/thoughtworks+talisman/repo log --format='%H %an %s' -n 400"),
            10,
        ),
    )
    real(
        "git-log-short",
        f"git log --oneline of {EARLYBIRD.split('@')[0]} (fetched)",
        "real output",
        "tool output",
        sample(
            _sh(
                "git -C /work/.mirror/americanexpress+earlybird/repo log --oneline --decorate -n 300"
            ),
            6,
            minlen=12,
        ),
    )
    real(
        "git-ls-tree",
        f"git ls-tree of {MSU.split('@')[0]} (fetched)",
        "real output",
        "tool output",
        sample(
            _sh(
                "git -C /work/.mirror/microsoft+security-utilities/repo ls-tree -r HEAD src/Microsoft.Security.Utilities.Core"
            ),
            6,
        ),
    )
    real(
        "pip-lock-hash",
        "engram requirements/dev.lock",
        "MIT (engram)",
        "lock file",
        sample((ROOT / "requirements/dev.lock").read_text().splitlines(), 10),
    )
    lock = json.loads((ROOT / "client-vscode/package-lock.json").read_text())
    integ = [
        f'      "integrity": "{p["integrity"]}"'
        for p in lock.get("packages", {}).values()
        if p.get("integrity")
    ]
    real(
        "npm-integrity",
        "engram client-vscode/package-lock.json",
        "MIT (engram)",
        "lock file",
        sample(integ, 8),
    )
    resolved = [
        f'      "resolved": "{p["resolved"]}"'
        for p in lock.get("packages", {}).values()
        if p.get("resolved")
    ]
    real(
        "npm-resolved",
        "engram client-vscode/package-lock.json",
        "MIT (engram)",
        "lock file",
        sample(resolved, 4),
    )
    png = "/root/.cache/engram-editors/code-server/node_modules/code-server/src/browser/media/pwa-icon-192.png"
    if os.path.exists(png):
        real(
            "base64-image",
            "base64 of code-server's pwa-icon-192.png (MIT)",
            "MIT",
            "tool output",
            sample(_sh(f"base64 -w 76 {png}"), 6),
        )
    ids = [
        f"{ts} INFO request_id={uuid.uuid4()} method=GET path=/api/v1/orders status=200"
        for ts in ("2026-11-20T10:00:01Z", "2026-11-20T10:00:02Z", "2026-11-20T10:00:03Z")
    ]
    ids += [
        f'{{"traceId": "{uuid.uuid4().hex}", "spanId": "{uuid.uuid4().hex[:16]}"}}',
        f"Correlation ID: {str(uuid.uuid4()).upper()}",
    ]
    real("uuid-log", "uuid4 (made here)", "real output", "log", ids)
    help_cmds = [
        "aws configure help",
        "aws sts assume-role help",
        "aws secretsmanager get-secret-value help",
        "gcloud auth --help",
        "gcloud secrets versions access --help",
        "kubectl create secret generic --help",
        "docker login --help",
        "psql --help",
        "curl --help all",
        "wget --help",
        "gpg --help",
        "openssl pkcs12 -help",
        "ssh-keygen --help",
        "git credential --help",
        "npm help config",
        "pip config --help",
        "openssl passwd -help",
        "sqlite3 -help",
    ]
    help_lines: list[str] = []
    for cmd in help_cmds:
        help_lines += [
            ln
            for ln in _sh(f"COLUMNS=100 MANPAGER=cat PAGER=cat timeout 60 {cmd} 2>&1 | col -b")
            if re.search(r"(?i)pass|token|secret|key|credential|auth", ln)
        ]
    real(
        "tool-help",
        "--help of aws, gcloud, kubectl, docker, psql, curl, wget, gpg, openssl, ssh-keygen, git, npm, pip (run here)",
        "real output",
        "tool output",
        sample(help_lines, 60),
    )
    man_lines: list[str] = []
    for page in (
        "sshd_config",
        "ssh_config",
        "ssh-agent",
        "gpg-agent",
        "openssl-passwd",
        "openssl-enc",
        "curl",
        "wget",
        "psql",
        "git-credential-store",
        "sudoers",
        "passwd",
        "chpasswd",
        "smbclient",
        "rsync",
        "ldapsearch",
        "mount.cifs",
        "crypttab",
    ):
        man_lines += [
            ln
            for ln in _sh(f"MANWIDTH=100 man -P cat {page} 2>/dev/null | col -b")
            if re.search(r"(?i)pass|token|secret|key|credential", ln)
        ]
    real(
        "man-page",
        "man pages of this machine (Debian)",
        "real text",
        "documentation",
        sample(man_lines, 40),
    )
    gc = Path("/usr/lib/google-cloud-sdk/lib/googlecloudsdk")
    gc_lines: list[str] = []
    for f in sorted((gc / "core/credentials").glob("*.py")) + sorted(
        (gc / "api_lib/secrets").glob("*.py")
    ):
        gc_lines += [
            ln
            for ln in f.read_text(errors="replace").splitlines()
            if re.search(r"(?i)token|secret|credential|password|key", ln)
        ]
    real(
        "gcloud-sdk-python",
        "Google Cloud SDK 528.0.0 lib/googlecloudsdk (core/credentials, api_lib/secrets)",
        "Apache-2.0",
        "code",
        sample(gc_lines, 30),
    )
    import awscli

    aw = Path(awscli.__file__).parent / "customizations"
    aw_lines: list[str] = []
    for f in sorted(aw.rglob("*.py")):
        aw_lines += [
            ln
            for ln in f.read_text(errors="replace").splitlines()
            if re.search(r"(?i)token|secret|credential|password|access_key", ln)
        ]
    real(
        "awscli-python",
        "aws-cli 1.45.11 awscli/customizations",
        "Apache-2.0",
        "code",
        sample(aw_lines, 30),
    )
    logs: list[str] = []
    for f in ("/var/log/dpkg.log", "/var/log/apt/history.log", "/var/log/alternatives.log"):
        if os.path.exists(f):
            logs += Path(f).read_text(errors="replace").splitlines()
    real("var-log", "/var/log of this machine", "real output", "log", sample(logs, 8))
    sigs = [
        f'  {{signature = "{hashlib.sha256(rng.randbytes(16)).hexdigest()}", reason = "test fixture, not a secret"}},'
        for _ in range(4)
    ]
    real(
        "tartufo-exclusion-signature",
        "made here in the form of tartufo's exclude-signatures (GPL-2.0 project: form only)",
        "made here",
        "config",
        sigs,
    )
    gpg_lines: list[str] = []
    with tempfile.TemporaryDirectory() as home:
        os.chmod(home, 0o700)
        env = f"GNUPGHOME={home}"
        _sh(
            f"{env} gpg --batch --pinentry-mode loopback --passphrase '' --quick-gen-key 'Corpus E <e@example.org>' ed25519 sign never"
        )
        gpg_lines = _sh(f"{env} gpg --fingerprint --with-keygrip 2>/dev/null")
    real(
        "gpg-fingerprint",
        "gpg --fingerprint --with-keygrip (run here)",
        "real output",
        "tool output",
        sample(gpg_lines, 4, minlen=12),
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sources", type=Path, required=True)
    args = parser.parse_args()
    src: Path = args.sources
    msu_cases(src / "msu")
    gitsecrets_cases(src / "gitsecrets")
    talisman_cases(src / "talisman")
    earlybird_cases(src / "earlybird")
    deepfence_cases(src / "deepfence")
    token_cases()
    command_cases()
    config_cases()
    key_cases()
    output_cases()
    code_cases()
    prompt_cases()
    split_cases()
    placeholder_cases()
    real_cases(src)
    with OUT.open("w", encoding="utf-8") as f:
        for row in rows:
            f.write(json.dumps(row, ensure_ascii=False) + "\n")
    counts: dict[str, int] = {}
    for row in rows:
        counts[row["type"]] = counts.get(row["type"], 0) + 1
    kinds = len({row["kind"] for row in rows if row["type"] == "secret"})
    print(f"wrote {OUT}: {counts}, {kinds} secret kinds")


if __name__ == "__main__":
    main()
