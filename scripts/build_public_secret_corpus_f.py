"""Build tests/core/public_secret_corpus_f.jsonl: a sixth corpus, all of it held out.

Corpus F measures engram's redaction on data its detector never saw (issue 29, "on new public
examples"). It was built by someone who did not read the detector (`memory_core/redact.py`,
`memory_core/secret_providers.py`, `memory_core/privacy.py`), its tests, nor any line of corpora A
to E, and who ran no case through engram while building it: the rules below were written first,
the file built and committed, and the detector run once, at the end
(`scripts/measure_redaction.py --corpus-f`, totals and by family).

Run with copies of the sources under one folder (any Python 3.11 with `openssl`, `ssh-keygen`,
`gpg` and `git` on the PATH; not part of engram):

    python scripts/build_public_secret_corpus_f.py --sources /tmp/f_src
    # /tmp/f_src/gosec     `git archive` of securego/gosec (its commit in gosec/.commit)
    # /tmp/f_src/bandit    `git archive` of PyCQA/bandit (its commit in bandit/.commit)
    # /tmp/f_src/real      real files copied from this machine: two npm package-lock.json files
    #                      (MIT packages), ipaddr.min.js (MIT), KaTeX's katex.min.css (MIT) and
    #                      the ISRG Root X1 certificate (public)

Public sources none of corpora A to E used (each line names its source, commit and file, and has
a `license`):
- securego/gosec (Apache-2.0), `testutils/g101_samples.go`: every G101 ("hard-coded
  credentials") sample, positives and negatives, as the Go code it is. Its `go.sum`, its rule
  sources and its documentation give ordinary strings.
- PyCQA/bandit (Apache-2.0), `examples/hardcoded-passwords.py` (B105-B107): each flagged value in
  its own statement; its plugin documentation gives ordinary strings.
- github/codeql (MIT), the hard-coded credentials query tests
  (`javascript/ql/test/query-tests/Security/CWE-798/HardcodedCredentials.js`,
  `java/ql/test/query-tests/security/CWE-798/semmle/tests/HardcodedAzureCredentials.java`):
  read with the code-search tool (the repository is too large to fetch); the statements used
  are copied into this file with their path and commit.

Made here, in the contexts an agent shows them in: tokens of 142 documented formats (real
prefixes, lengths and alphabets; GitHub's CRC32 checksum computed), each in two of 31 contexts
(shell, `curl -v`, devtools' "Copy as cURL", `env` dumps, Kubernetes, Helm, Terraform, Ansible,
CI files, Dockerfiles, notebook cells, stack traces, logs, diff hunks, `git log -p`, HTTP
responses...); passwords from ten generators given to 70 commands, 62 config files, code in 24
languages, prompts in 16 languages and 30 tool outputs; keys made here with `openssl`,
`ssh-keygen` and `gpg`, and in the documented formats of WireGuard, age, minisign, signify,
Nostr, Bitcoin WIF, Ethereum, Solana and BIP-39 (random bytes encoded as those tools do; no
wallet software was run).

Rules fixed before anything was measured:
- A value flagged by a public source is a `secret` when it is at least 8 characters long and
  none of: a placeholder (below), a value naming its role or nature (it contains `password`,
  `passwd`, `secret`, `token`, `key`, `example`, `sample`, `test`, `dummy`, `fake`, `hardcoded`,
  `changeme`, `change_me`), an alphabet or digit run (`abcdefgh`, `hgfedcba`, `12345678`), or a
  value of the common-password list below. Otherwise it is a `negative` (reported apart).
  A value the source does NOT flag because of a suppression comment (`#nosec`) is still a
  secret; a source's unflagged statement holding a value flagged elsewhere is a `negative`;
  its unflagged statements holding no value are ordinary strings.
- Placeholders made here in the same contexts as the secrets (`<...>`, `${...}`, `$VAR`,
  `{{ ... }}`, `***`, `xxxx`, `...`, `YOUR_..._HERE`, references to a secret store such as
  `secretKeyRef`, `vault:`, `op://`, `${{ secrets.X }}`) hold no secret: ordinary strings
  (family `placeholder-*`). Dictionary dummies (`changeme`, `password123`, `admin`) and a
  provider's publishable (public by design) keys are `negative`.
- Public keys, certificates, fingerprints, digests, integrity hashes, commit hashes, UUIDs,
  public OIDC and JWKS documents are ordinary strings.
- Real material (files and tool output) is sampled after a fixed filter (`looks_secret`) drops
  any line holding a value after a secret's name, a URL with a password or a private key; no
  ordinary string may hold one of the corpus' secrets.
- The secret of a case is what must not survive: the value, the whole token, one line of a key
  block (a middle line), or the base64 form when the context encodes it (Kubernetes `data:`).

Every case is held out (`"split": "holdout"`). A rebuild draws new keys (`openssl`, `ssh-keygen`
and `gpg` make them); the committed file is the corpus.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
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

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "tests" / "core" / "public_secret_corpus_f.jsonl"
MADE = "made for this corpus"
CODEQL_JS = (
    "github/codeql@05e4677fd167:javascript/ql/test/query-tests/Security/CWE-798/"
    "HardcodedCredentials.js"
)
CODEQL_JAVA = (
    "github/codeql@11c89adbe3b2:java/ql/test/query-tests/security/CWE-798/semmle/tests/"
    "HardcodedAzureCredentials.java"
)

rng = random.Random(2026112806)
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
BASE58 = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"
BECH32 = "qpzry9x8gf2tvdw0s3jn54khce6mua7l"

COMMON_PASSWORDS = {
    "password", "admin", "root", "secret", "pass", "1234", "12345", "123456", "12345678",
    "qwerty", "letmein", "changeme", "password1", "password123", "welcome", "test", "guest",
    "default", "toor", "abc123", "iloveyou", "monkey", "dragon", "master",
}  # fmt: skip


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


def public_value_class(value: str) -> str:
    """The rule for a value a public source flags: `secret` or `negative` (see the docstring)."""
    low = value.lower()
    names_itself = (
        "password", "passwd", "secret", "token", "key", "example", "sample", "test", "dummy",
        "fake", "hardcoded", "changeme", "change_me",
    )  # fmt: skip
    if len(value) < 8 or low in COMMON_PASSWORDS or any(w in low for w in names_itself):
        return "negative"
    if re.search(r"x{4,}|\*{3,}|^<.*>$|\$\{|\{\{|\.\.\.", low):
        return "negative"
    runs = ("abcdefghijklmnopqrstuvwxyz", "0123456789")
    if any(low in run or low[::-1] in run for run in runs):
        return "negative"
    return "secret"


# --------------------------------------------------------------------------------------------
# Value generators


def base62(n: int, width: int) -> str:
    digits = DIGITS + UPPER + LOWER
    out = ""
    while n:
        n, rem = divmod(n, 62)
        out = digits[rem] + out
    return out.rjust(width, "0")


def github(prefix: str) -> str:
    body = r(ALNUM, 30)
    return f"{prefix}_{body}{base62(zlib.crc32(body.encode()), 6)}"


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def jwt(payload: dict[str, object], alg: str = "HS256") -> str:
    import hmac

    head = b64url(json.dumps({"alg": alg, "typ": "JWT"}, separators=(",", ":")).encode())
    body = b64url(json.dumps(payload, separators=(",", ":")).encode())
    sig = hmac.new(rng.randbytes(32), f"{head}.{body}".encode(), hashlib.sha256).digest()
    return f"{head}.{body}.{b64url(sig)}"


def bech32_encode(hrp: str, data: bytes) -> str:
    """BIP-173 bech32 (what age and Nostr use), computed here."""

    def polymod(values: list[int]) -> int:
        gen = [0x3B6A57B2, 0x26508E6D, 0x1EA119FA, 0x3D4233DD, 0x2A1462B3]
        chk = 1
        for v in values:
            top = chk >> 25
            chk = (chk & 0x1FFFFFF) << 5 ^ v
            for i in range(5):
                chk ^= gen[i] if (top >> i) & 1 else 0
        return chk

    acc, bits, five = 0, 0, []
    for byte in data:
        acc = (acc << 8) | byte
        bits += 8
        while bits >= 5:
            bits -= 5
            five.append((acc >> bits) & 31)
    if bits:
        five.append((acc << (5 - bits)) & 31)
    expand = [ord(c) >> 5 for c in hrp] + [0] + [ord(c) & 31 for c in hrp]
    mod = polymod(expand + five + [0] * 6) ^ 1
    checksum = [(mod >> 5 * (5 - i)) & 31 for i in range(6)]
    return hrp + "1" + "".join(BECH32[d] for d in five + checksum)


def base58check(payload: bytes) -> str:
    check = hashlib.sha256(hashlib.sha256(payload).digest()).digest()[:4]
    n = int.from_bytes(payload + check, "big")
    out = ""
    while n:
        n, rem = divmod(n, 58)
        out = BASE58[rem] + out
    pad = len(payload + check) - len((payload + check).lstrip(b"\0"))
    return "1" * pad + out


def password(style: int) -> str:
    """Passwords as ten generators print them (shell-safe characters only where noted)."""
    words = [
        "maple",
        "orbit",
        "tundra",
        "velvet",
        "quarry",
        "lantern",
        "pepper",
        "saddle",
        "cobalt",
        "juniper",
        "walnut",
        "harbor",
        "thistle",
        "ember",
        "falcon",
        "prism",
        "meadow",
        "ribbon",
        "glacier",
        "canyon",
    ]
    if style == 0:  # pwgen -cny 14 1
        return (
            "".join(rng.choice(LOWER if i % 3 else UPPER) for i in range(10))
            + r(DIGITS, 2)
            + rng.choice("#%+=")
            + r(LOWER, 1)
        )
    if style == 1:  # diceware, 5 words
        return "-".join(rng.choice(words) for _ in range(5))
    if style == 2:  # 1Password's "memorable": three groups of six
        return "-".join(r(LOWNUM, 6) for _ in range(3))
    if style == 3:  # Bitwarden, 20 with specials
        return r(ALNUM, 8) + rng.choice("!@%^") + r(ALNUM, 6) + rng.choice("!@%^") + r(ALNUM, 4)
    if style == 4:  # KeePassXC, 32 alnum
        return r(ALNUM, 32)
    if style == 5:  # openssl rand -base64 24
        return base64.b64encode(rng.randbytes(24)).decode()
    if style == 6:  # python -c 'import secrets; print(secrets.token_urlsafe(24))'
        return b64url(rng.randbytes(24))
    if style == 7:  # openssl rand -hex 20
        return rng.randbytes(20).hex()
    if style == 8:  # apg -a 1 -m 16
        return r(ALNUM + "._,", 16)
    # a person's password: a word, digits, a sign
    return rng.choice(words).capitalize() + rng.choice(words) + r(DIGITS, 3) + rng.choice("!?.")


_pw_style = 0


def pw() -> str:
    global _pw_style
    _pw_style += 1
    return password(_pw_style % 10)


def uid() -> str:
    return str(uuid.UUID(bytes=rng.randbytes(16), version=4))


# --------------------------------------------------------------------------------------------
# Token formats: (name, the variable a user keeps it in, a generator). Prefixes, lengths and
# alphabets as the providers document them (or as their tokens are printed).

TOKENS: list[tuple[str, str, Callable[[], str]]] = [
    ("github-oauth", "GH_TOKEN", lambda: github("gho")),
    ("github-user-to-server", "GITHUB_USER_TOKEN", lambda: github("ghu")),
    ("github-server-to-server", "GITHUB_APP_TOKEN", lambda: github("ghs")),
    ("github-refresh", "GITHUB_REFRESH_TOKEN", lambda: github("ghr")),
    ("github-fine-grained", "GITHUB_PAT", lambda: f"github_pat_11{r(UPNUM, 20)}_{r(ALNUM, 59)}"),
    ("gitlab-deploy-token", "CI_DEPLOY_PASSWORD", lambda: "gldt-" + r(ALNUM + "_-", 20)),
    ("gitlab-runner-token", "RUNNER_TOKEN", lambda: "glrt-" + r(ALNUM + "_-", 20)),
    ("gitlab-trigger-token", "TRIGGER_TOKEN", lambda: "glptt-" + r(HEX, 40)),
    ("gitlab-feed-token", "GITLAB_FEED_TOKEN", lambda: "glft-" + r(ALNUM + "_-", 20)),
    ("gitlab-oauth-secret", "GITLAB_APP_SECRET", lambda: "gloas-" + r(HEX, 64)),
    ("gitlab-agent-token", "KAS_AGENT_TOKEN", lambda: "glagent-" + r(ALNUM + "_-", 50)),
    ("gitlab-runner-registration", "REGISTRATION_TOKEN", lambda: "GR1348941" + r(ALNUM + "_-", 20)),
    ("slack-app-token", "SLACK_APP_TOKEN", lambda: f"xapp-1-A{r(UPNUM, 10)}-{r(DIGITS, 13)}-{r(HEX, 64)}"),
    ("slack-config-token", "SLACK_CONFIG_TOKEN", lambda: f"xoxe.xoxp-1-{r(ALNUM, 160)}"),
    ("slack-refresh-token", "SLACK_REFRESH_TOKEN", lambda: f"xoxe-1-{r(ALNUM, 140)}"),
    ("stripe-restricted", "STRIPE_RESTRICTED_KEY", lambda: "rk_live_51" + r(ALNUM, 97)),
    ("stripe-webhook-secret", "STRIPE_WEBHOOK_SECRET", lambda: "whsec_" + r(ALNUM, 32)),
    ("openai-project", "OPENAI_API_KEY", lambda: f"sk-proj-{r(B64URL, 74)}T3BlbkFJ{r(B64URL, 74)}"),
    ("openai-service-account", "OPENAI_SVC_KEY", lambda: f"sk-svcacct-{r(B64URL, 74)}T3BlbkFJ{r(B64URL, 74)}"),
    ("openai-admin", "OPENAI_ADMIN_KEY", lambda: f"sk-admin-{r(B64URL, 74)}T3BlbkFJ{r(B64URL, 74)}"),
    ("anthropic-admin", "ANTHROPIC_ADMIN_KEY", lambda: f"sk-ant-admin01-{r(B64URL, 93)}AA"),
    ("google-oauth-client-secret", "GOOGLE_CLIENT_SECRET", lambda: "GOCSPX-" + r(B64URL, 28)),
    ("google-oauth-access", "GOOGLE_ACCESS_TOKEN", lambda: "ya29.a0" + r(B64URL, 150)),
    ("google-refresh", "GOOGLE_REFRESH_TOKEN", lambda: "1//0" + r(B64URL, 99)),
    ("huggingface-org", "HF_ORG_TOKEN", lambda: "api_org_" + r(ALNUM, 34)),
    ("pypi-upload", "TWINE_PASSWORD", lambda: "pypi-AgEIcHlwaS5vcmcCJD" + r(B64URL, 150)),
    ("rubygems", "GEM_HOST_API_KEY", lambda: "rubygems_" + r(HEX, 48)),
    ("docker-hub-pat", "DOCKERHUB_TOKEN", lambda: "dckr_pat_" + r(B64URL, 27)),
    ("docker-hub-org", "DOCKER_ORG_TOKEN", lambda: "dckr_oat_" + r(B64URL, 32)),
    ("shopify-access", "SHOPIFY_ACCESS_TOKEN", lambda: "shpat_" + r(HEX, 32)),
    ("shopify-custom-app", "SHOPIFY_CUSTOM_TOKEN", lambda: "shpca_" + r(HEX, 32)),
    ("shopify-shared-secret", "SHOPIFY_API_SECRET", lambda: "shpss_" + r(HEX, 32)),
    ("twilio-api-secret", "TWILIO_API_SECRET", lambda: r(ALNUM, 32)),
    ("sendgrid", "SENDGRID_API_KEY", lambda: f"SG.{r(B64URL, 22)}.{r(B64URL, 43)}"),
    ("mailgun", "MAILGUN_API_KEY", lambda: f"key-{r(HEX, 32)}"),
    ("mailchimp", "MAILCHIMP_API_KEY", lambda: f"{r(HEX, 32)}-us{rng.randint(1, 21)}"),
    ("digitalocean-pat", "DIGITALOCEAN_TOKEN", lambda: "dop_v1_" + r(HEX, 64)),
    ("digitalocean-oauth", "DO_OAUTH_TOKEN", lambda: "doo_v1_" + r(HEX, 64)),
    ("linear", "LINEAR_API_KEY", lambda: "lin_api_" + r(ALNUM, 40)),
    ("notion", "NOTION_TOKEN", lambda: "ntn_" + r(DIGITS, 11) + r(ALNUM, 35)),
    ("figma", "FIGMA_TOKEN", lambda: f"figd_{r(B64URL, 40)}"),
    ("postman", "POSTMAN_API_KEY", lambda: f"PMAK-{r(HEX, 24)}-{r(HEX, 34)}"),
    ("atlassian-api", "JIRA_API_TOKEN", lambda: f"ATATT3xFfGF0{r(B64URL, 171)}={r(HEX.upper(), 8)}"),
    ("vault-service", "VAULT_TOKEN", lambda: "hvs." + r(ALNUM + "_-", 90)),
    ("vault-batch", "VAULT_BATCH_TOKEN", lambda: "hvb." + r(ALNUM + "_-", 138)),
    ("terraform-cloud", "TFE_TOKEN", lambda: f"{r(ALNUM, 14)}.atlasv1.{r(ALNUM, 67)}"),
    ("doppler-service", "DOPPLER_TOKEN", lambda: "dp.st.prd." + r(ALNUM, 43)),
    ("doppler-personal", "DOPPLER_PERSONAL_TOKEN", lambda: "dp.pt." + r(ALNUM, 43)),
    ("pulumi", "PULUMI_ACCESS_TOKEN", lambda: "pul-" + r(HEX, 40)),
    ("grafana-service-account", "GRAFANA_TOKEN", lambda: f"glsa_{r(ALNUM, 32)}_{r(HEX, 8)}"),
    ("grafana-cloud", "GRAFANA_CLOUD_TOKEN", lambda: "glc_" + base64.b64encode(json.dumps({"o": str(rng.randint(10**5, 10**6)), "n": "stack-" + r(DIGITS, 6) + "-hm-read", "k": r(ALNUM, 24), "m": {"r": "prod-eu-west-2"}}).encode()).decode()),
    ("newrelic-user", "NEW_RELIC_API_KEY", lambda: "NRAK-" + r(UPNUM, 27)),
    ("newrelic-insert", "NEW_RELIC_INSERT_KEY", lambda: "NRII-" + r(B64URL, 32)),
    ("sentry-user", "SENTRY_AUTH_TOKEN", lambda: "sntryu_" + r(HEX, 64)),
    ("sentry-org", "SENTRY_ORG_TOKEN", lambda: "sntrys_" + b64url(json.dumps({"iat": 1732700000.1, "url": "https://sentry.io", "region_url": "https://us.sentry.io", "org": "acme"}).encode()) + "_" + r(B64URL, 43)),
    ("planetscale-token", "PLANETSCALE_SERVICE_TOKEN", lambda: "pscale_tkn_" + r(B64URL, 43)),
    ("planetscale-password", "DATABASE_PASSWORD", lambda: "pscale_pw_" + r(B64URL, 43)),
    ("flyio", "FLY_API_TOKEN", lambda: "fm2_" + r(B64URL, 200)),
    ("supabase-pat", "SUPABASE_ACCESS_TOKEN", lambda: "sbp_" + r(HEX, 40)),
    ("supabase-secret", "SUPABASE_SECRET_KEY", lambda: "sb_secret_" + r(B64URL, 31)),
    ("netlify", "NETLIFY_AUTH_TOKEN", lambda: "nfp_" + r(ALNUM, 36)),
    ("render", "RENDER_API_KEY", lambda: "rnd_" + r(ALNUM, 28)),
    ("age-secret-key", "SOPS_AGE_KEY", lambda: bech32_encode("age-secret-key-", rng.randbytes(32)).upper()),
    ("telegram-bot", "TELEGRAM_BOT_TOKEN", lambda: f"{rng.randint(10**9, 8 * 10**9)}:AA{r(B64URL, 33)}"),
    ("discord-bot", "DISCORD_TOKEN", lambda: f"M{r(B64URL, 25)}.{r(B64URL, 6)}.{r(B64URL, 38)}"),
    ("groq", "GROQ_API_KEY", lambda: "gsk_" + r(ALNUM, 52)),
    ("xai", "XAI_API_KEY", lambda: "xai-" + r(ALNUM, 80)),
    ("perplexity", "PERPLEXITY_API_KEY", lambda: "pplx-" + r(ALNUM, 48)),
    ("replicate", "REPLICATE_API_TOKEN", lambda: "r8_" + r(ALNUM, 37)),
    ("openrouter", "OPENROUTER_API_KEY", lambda: "sk-or-v1-" + r(HEX, 64)),
    ("langsmith", "LANGSMITH_API_KEY", lambda: f"lsv2_pt_{r(HEX, 32)}_{r(HEX, 10)}"),
    ("tavily", "TAVILY_API_KEY", lambda: "tvly-" + r(ALNUM, 32)),
    ("firecrawl", "FIRECRAWL_API_KEY", lambda: "fc-" + r(HEX, 32)),
    ("pinecone", "PINECONE_API_KEY", lambda: f"pcsk_{r(ALNUM, 6)}_{r(ALNUM, 63)}"),
    ("elevenlabs", "ELEVENLABS_API_KEY", lambda: "sk_" + r(HEX, 48)),
    ("deepseek", "DEEPSEEK_API_KEY", lambda: "sk-" + r(HEX, 32)),
    ("voyage", "VOYAGE_API_KEY", lambda: "pa-" + r(B64URL, 43)),
    ("cohere", "CO_API_KEY", lambda: r(ALNUM, 40)),
    ("mistral", "MISTRAL_API_KEY", lambda: r(ALNUM, 32)),
    ("wandb", "WANDB_API_KEY", lambda: r(HEX, 40)),
    ("kaggle", "KAGGLE_KEY", lambda: r(HEX, 32)),
    ("alibaba-access-key", "ALIBABA_CLOUD_ACCESS_KEY_SECRET", lambda: r(ALNUM, 30)),
    ("tencent-secret-id", "TENCENTCLOUD_SECRET_ID", lambda: "AKID" + r(ALNUM, 32)),
    ("yandex-iam", "YC_TOKEN", lambda: "t1.9euelZq" + r(B64URL, 150)),
    ("yandex-oauth", "YC_OAUTH_TOKEN", lambda: "y0_" + r(B64URL, 55)),
    ("scaleway-secret", "SCW_SECRET_KEY", lambda: uid()),
    ("linode", "LINODE_TOKEN", lambda: r(HEX, 64)),
    ("hetzner", "HCLOUD_TOKEN", lambda: r(ALNUM, 64)),
    ("heroku", "HEROKU_API_KEY", lambda: "HRKU-AA" + r(B64URL, 58)),
    ("okta-api", "OKTA_API_TOKEN", lambda: "00" + r(B64URL, 40)),
    ("square-access", "SQUARE_ACCESS_TOKEN", lambda: "EAAA" + r(B64URL, 60)),
    ("square-oauth-secret", "SQUARE_APP_SECRET", lambda: "sq0csp-" + r(B64URL, 43)),
    ("braintree-access", "BRAINTREE_ACCESS_TOKEN", lambda: f"access_token$production${r(LOWNUM, 16)}${r(HEX, 32)}"),
    ("razorpay-secret", "RAZORPAY_KEY_SECRET", lambda: r(ALNUM, 24)),
    ("flutterwave", "FLW_SECRET_KEY", lambda: f"FLWSECK-{r(HEX, 32)}-X"),
    ("mollie", "MOLLIE_API_KEY", lambda: "live_" + r(ALNUM, 30)),
    ("paystack", "PAYSTACK_SECRET_KEY", lambda: "sk_live_" + r(HEX, 40)),
    ("shippo", "SHIPPO_API_TOKEN", lambda: "shippo_live_" + r(HEX, 40)),
    ("mapbox-secret", "MAPBOX_DOWNLOADS_TOKEN", lambda: "sk.eyJ1IjoiYWNtZS1tYXBzIiwiYSI6I" + r(B64URL, 30) + "." + r(B64URL, 22)),
    ("algolia-admin", "ALGOLIA_ADMIN_KEY", lambda: r(HEX, 32)),
    ("asana-pat", "ASANA_TOKEN", lambda: f"2/{r(DIGITS, 16)}/{r(DIGITS, 16)}:{r(HEX, 32)}"),
    ("clickup", "CLICKUP_API_TOKEN", lambda: f"pk_{r(DIGITS, 8)}_{r(UPNUM, 32)}"),
    ("airtable-pat", "AIRTABLE_TOKEN", lambda: f"pat{r(ALNUM, 14)}.{r(HEX, 64)}"),
    ("typeform", "TYPEFORM_TOKEN", lambda: "tfp_" + r(ALNUM, 44) + "_" + r(ALNUM, 14)),
    ("hubspot-private-app", "HUBSPOT_ACCESS_TOKEN", lambda: "pat-na1-" + uid()),
    ("dropbox-short-lived", "DROPBOX_TOKEN", lambda: "sl." + r(B64URL, 136)),
    ("pagerduty", "PAGERDUTY_TOKEN", lambda: "u+" + r(B64URL, 18)),
    ("datadog-app-key", "DD_APP_KEY", lambda: r(HEX, 40)),
    ("honeycomb-ingest", "HONEYCOMB_API_KEY", lambda: "hcaik_01" + r(LOWNUM, 56)),
    ("dynatrace", "DT_API_TOKEN", lambda: f"dt0c01.{r(UPNUM, 24)}.{r(UPNUM, 64)}"),
    ("buildkite", "BUILDKITE_API_TOKEN", lambda: "bkua_" + r(HEX, 40)),
    ("circleci-personal", "CIRCLE_TOKEN", lambda: "CCIPAT_" + r(ALNUM, 22) + "_" + r(HEX, 40)),
    ("sonarqube-user", "SONAR_TOKEN", lambda: "squ_" + r(HEX, 40)),
    ("jfrog-api-key", "ARTIFACTORY_API_KEY", lambda: "AKCp8" + r(ALNUM, 68)),
    ("jenkins-api", "JENKINS_API_TOKEN", lambda: "11" + r(HEX, 32)),
    ("octopus", "OCTOPUS_API_KEY", lambda: "API-" + r(UPNUM, 26)),
    ("contentful-pat", "CONTENTFUL_MANAGEMENT_TOKEN", lambda: "CFPAT-" + r(B64URL, 43)),
    ("clerk-secret", "CLERK_SECRET_KEY", lambda: "sk_live_" + r(ALNUM, 40)),
    ("stytch-secret", "STYTCH_SECRET", lambda: "secret-live-" + r(B64URL, 36) + "="),
    ("posthog-personal", "POSTHOG_PERSONAL_API_KEY", lambda: "phx_" + r(ALNUM, 43)),
    ("launchdarkly-api", "LD_API_KEY", lambda: "api-" + uid()),
    ("statsig-server", "STATSIG_SERVER_SECRET", lambda: "secret-" + r(ALNUM, 43)),
    ("neon", "NEON_API_KEY", lambda: "napi_" + r(LOWNUM, 64)),
    ("aiven", "AIVEN_PASSWORD", lambda: "AVNS_" + r(ALNUM + "_-", 19)),
    ("apify", "APIFY_TOKEN", lambda: "apify_api_" + r(ALNUM, 36)),
    ("prefect", "PREFECT_API_KEY", lambda: "pnu_" + r(ALNUM, 36)),
    ("runpod", "RUNPOD_API_KEY", lambda: "rpa_" + r(UPNUM, 44)),
    ("1password-service-account", "OP_SERVICE_ACCOUNT_TOKEN", lambda: "ops_eyJzaWduSW5BZGRyZXNzIjoibXkuMXBhc3N3b3JkLmNvbSIsInVzZXJBdXRoIjp7Im1ldGhvZCI6IlNSUGctNDA5NiIsImFsZyI6IlBCRVMyZy1IUzI1NiIsIml0ZXJhdGlvbnMiOjY1MDAwMCwic2FsdCI6Ij" + r(B64URL, 160)),
    ("bitwarden-access", "BWS_ACCESS_TOKEN", lambda: f"0.{uid()}.{r(ALNUM, 30)}:{r(B64, 22)}=="),
    ("infisical-service", "INFISICAL_TOKEN", lambda: f"st.{uid()}.{r(HEX, 32)}.{r(HEX, 32)}"),
    ("salesforce-access", "SF_ACCESS_TOKEN", lambda: f"00D{r(ALNUM, 15)}!{r(ALNUM + '._', 96)}"),
    ("woocommerce-secret", "WC_CONSUMER_SECRET", lambda: "cs_" + r(HEX, 40)),
    ("facebook-page", "FB_PAGE_ACCESS_TOKEN", lambda: "EAA" + r(ALNUM, 180)),
    ("twitter-bearer", "TWITTER_BEARER_TOKEN", lambda: "AAAAAAAAAAAAAAAAAAAAA" + r(ALNUM, 20) + "%3D" + r(ALNUM, 50)),
    ("duffel", "DUFFEL_ACCESS_TOKEN", lambda: "duffel_live_" + r(B64URL, 43)),
    ("lob", "LOB_API_KEY", lambda: "live_" + r(HEX, 35)),
    ("frameio", "FRAMEIO_TOKEN", lambda: "fio-u-" + r(B64URL, 64)),
    ("cloudflare-api-token", "CLOUDFLARE_API_TOKEN", lambda: r(B64URL, 40)),
    ("cloudflare-origin-ca", "CF_ORIGIN_CA_KEY", lambda: "v1.0-" + r(HEX, 24) + "-" + r(HEX, 146)),
    ("azure-sas-sig", "AZURE_STORAGE_SAS", lambda: "sv=2022-11-02&ss=b&srt=sco&sp=rwdlacx&se=2026-12-31T00:00:00Z&st=2026-11-27T00:00:00Z&spr=https&sig=" + r(ALNUM, 43) + "%3D"),
    ("jwt-session", "SESSION_TOKEN", lambda: jwt({"sub": uid(), "iat": 1732700000, "exp": 1732786400, "scope": "read write"})),
    ("jwt-rs256-id-token", "ID_TOKEN", lambda: jwt({"iss": "https://accounts.example.org", "aud": "app-" + r(LOWNUM, 12), "sub": r(DIGITS, 21), "email": "dev@acme.io", "iat": 1732700000, "exp": 1732703600}, "RS256")),
]  # fmt: skip


def _lower(env: str) -> str:
    return env.lower()


def _camel(env: str) -> str:
    head, *rest = env.lower().split("_")
    return head + "".join(p.capitalize() for p in rest)


def _b64(value: str) -> str:
    return base64.b64encode(value.encode()).decode()


# Contexts a token is shown in: name -> f(variable, value) -> (text, the secret to look for).
Context = Callable[[str, str], tuple[str, str]]
CONTEXTS: list[tuple[str, Context]] = [
    ("curl-verbose-request", lambda e, v: (
        "*   Trying 104.18.6.192:443...\n* Connected to api.service.io (104.18.6.192) port 443\n"
        "* ALPN: server accepted h2\n> GET /v1/projects HTTP/2\n> Host: api.service.io\n"
        f"> User-Agent: curl/8.5.0\n> Accept: */*\n> Authorization: Bearer {v}\n>\n"
        "< HTTP/2 200\n< content-type: application/json", v)),
    ("devtools-copy-as-curl", lambda e, v: (
        "curl 'https://app.service.io/api/graphql' \\\n  -H 'accept: application/json' \\\n"
        "  -H 'accept-language: en-GB,en;q=0.9' \\\n"
        f"  -H 'authorization: Bearer {v}' \\\n  -H 'content-type: application/json' \\\n"
        "  --data-raw '{\"operationName\":\"Viewer\",\"variables\":{}}'", v)),
    ("devtools-request-headers", lambda e, v: (
        ":authority: api.service.io\n:method: POST\n:path: /v2/events\n:scheme: https\n"
        f"accept: */*\nx-api-key: {v}\norigin: https://dashboard.service.io\n"
        "sec-fetch-mode: cors", v)),
    ("env-dump", lambda e, v: (
        "SHELL=/bin/bash\nLANG=C.UTF-8\nHOME=/home/dev\n"
        f"{e}={v}\nPATH=/usr/local/bin:/usr/bin:/bin\nTERM=xterm-256color", v)),
    ("k8s-secret-stringdata", lambda e, v: (
        "apiVersion: v1\nkind: Secret\nmetadata:\n  name: app-credentials\n  namespace: prod\n"
        f"type: Opaque\nstringData:\n  {_lower(e).replace('_', '-')}: \"{v}\"", v)),
    ("k8s-secret-data-base64", lambda e, v: (
        "apiVersion: v1\nkind: Secret\nmetadata:\n  name: api-keys\ntype: Opaque\ndata:\n"
        f"  {e}: {_b64(v)}", _b64(v))),
    ("helm-values", lambda e, v: (
        "# values-prod.yaml\nreplicaCount: 3\nimage:\n  repository: ghcr.io/acme/api\n"
        f"  tag: 1.14.2\nintegrations:\n  {_camel(e)}: \"{v}\"\n  enabled: true", v)),
    ("terraform-tfvars", lambda e, v: (
        f"region        = \"eu-west-1\"\ninstance_type = \"t3.small\"\n{_lower(e)} = \"{v}\"", v)),
    ("terraform-provider", lambda e, v: (
        f"provider \"service\" {{\n  endpoint = \"https://api.service.io\"\n  token    = \"{v}\"\n}}",
        v)),
    ("ansible-vars", lambda e, v: (
        "---\n# group_vars/web/main.yml\nnginx_worker_processes: auto\n"
        f"app_{_lower(e)}: \"{v}\"\napp_port: 8080", v)),
    ("github-actions-env", lambda e, v: (
        "jobs:\n  deploy:\n    runs-on: ubuntu-latest\n    env:\n"
        f"      {e}: {v}\n    steps:\n      - uses: actions/checkout@v4", v)),
    ("gitlab-ci-variables", lambda e, v: (
        f"variables:\n  {e}: \"{v}\"\n  DOCKER_DRIVER: overlay2\n\ndeploy:\n  stage: deploy", v)),
    ("dockerfile-env", lambda e, v: (
        f"FROM python:3.12-slim\nWORKDIR /app\nENV {e}={v}\nCOPY . .\nRUN pip install -r requirements.txt",
        v)),
    ("docker-run-e", lambda e, v: (
        f"docker run -d --name worker -e {e}={v} -p 8080:8080 ghcr.io/acme/worker:latest", v)),
    ("compose-environment", lambda e, v: (
        f"services:\n  api:\n    image: acme/api:2.3\n    environment:\n      - {e}={v}\n"
        "      - LOG_LEVEL=info", v)),
    ("notebook-cell", lambda e, v: (
        '{\n "cell_type": "code",\n "execution_count": 3,\n "metadata": {},\n "source": [\n'
        f'  "import os\\n",\n  "os.environ[\\"{e}\\"] = \\"{v}\\"\\n"\n ]\n}}', v)),
    ("python-traceback", lambda e, v: (
        "Traceback (most recent call last):\n  File \"/app/sync.py\", line 41, in <module>\n"
        f"    client = Client(api_key=\"{v}\")\n  File \"/app/lib/client.py\", line 88, in __init__\n"
        "    raise AuthError(\"401 Unauthorized\")\nlib.client.AuthError: 401 Unauthorized", v)),
    ("app-log-line", lambda e, v: (
        "2026-11-27T21:14:03.512Z DEBUG http.client send: headers={'Accept': 'application/json', "
        f"'Authorization': 'Bearer {v}', 'User-Agent': 'python-requests/2.32.3'}}", v)),
    ("diff-hunk-env", lambda e, v: (
        "diff --git a/.env.production b/.env.production\nindex 3f2a9c1..8b7d0e4 100644\n"
        "--- a/.env.production\n+++ b/.env.production\n@@ -3,4 +3,5 @@ APP_ENV=production\n"
        f" LOG_LEVEL=warn\n+{e}={v}\n REDIS_URL=redis://cache:6379/0", v)),
    ("git-log-p", lambda e, v: (
        "commit 5c1e0a7b9d3f24e6a8c0b2d4f6e8a0c2b4d6f8e0\nAuthor: Dana Lee <dana@acme.io>\n"
        "Date:   Thu Nov 26 18:02:11 2026 +0100\n\n    wire up the sync job\n\n"
        "diff --git a/config/sync.json b/config/sync.json\n--- a/config/sync.json\n"
        f"+++ b/config/sync.json\n@@ -1,3 +1,4 @@\n {{\n+  \"{_camel(e)}\": \"{v}\",\n"
        "   \"interval\": 300", v)),
    ("systemd-unit", lambda e, v: (
        "[Service]\nType=simple\nUser=app\n"
        f"Environment=\"{e}={v}\"\nExecStart=/opt/app/bin/worker\nRestart=on-failure", v)),
    ("json-config", lambda e, v: (
        f'{{\n  "endpoint": "https://api.service.io/v1",\n  "{_camel(e)}": "{v}",\n  "timeout": 30\n}}',
        v)),
    ("http-response-json", lambda e, v: (
        "< HTTP/1.1 200 OK\n< Content-Type: application/json\n< Cache-Control: no-store\n<\n"
        f'{{"access_token":"{v}","token_type":"Bearer","expires_in":3600}}', v)),
    ("url-query-string", lambda e, v: (
        f"> GET /v1/export?format=csv&access_token={v} HTTP/1.1\n> Host: api.service.io", v)),
    ("powershell-env", lambda e, v: (
        f"PS C:\\src\\api> $env:{e} = \"{v}\"\nPS C:\\src\\api> npm run deploy", v)),
    ("fish-set", lambda e, v: (f"set -gx {e} {v}", v)),
    ("gh-secret-set", lambda e, v: (f"gh secret set {e} --repo acme/api --body \"{v}\"", v)),
    ("vault-kv-put", lambda e, v: (
        f"vault kv put -mount=secret apps/api {_lower(e)}={v}", v)),
    ("kubectl-create-secret", lambda e, v: (
        f"kubectl -n prod create secret generic api-keys --from-literal={_lower(e)}={v}", v)),
    ("fly-secrets-set", lambda e, v: (f"fly secrets set {e}={v} --app acme-api", v)),
    ("ssm-put-parameter", lambda e, v: (
        f"aws ssm put-parameter --name /prod/api/{_lower(e)} --type SecureString --value '{v}' "
        "--overwrite", v)),
]  # fmt: skip


def token_cases() -> None:
    # Each format in two contexts, walking the list so that every context is used about equally.
    i = 0
    for name, env, make in TOKENS:
        for _ in range(2):
            ctx_name, ctx = CONTEXTS[i % len(CONTEXTS)]
            i += 1
            value = make()
            text, secret = ctx(env, value)
            add("secret", f"token-{name}", MADE, "made here", ctx_name, text, secret)


def q(value: str) -> str:
    """Quote a value for a POSIX shell the way a person would: only when it needs it."""
    return value if re.fullmatch(r"[\w.,:/=+-]+", value) else f"'{value}'"


# Commands given a password or key (flag syntax from each tool's manual page or --help).
COMMANDS: list[tuple[str, Callable[[str], str]]] = [
    ("ipmitool", lambda p: f"ipmitool -I lanplus -H 10.0.4.21 -U ADMIN -P {q(p)} chassis power status"),
    ("snmpwalk-v3", lambda p: f"snmpwalk -v3 -l authPriv -u monitor -a SHA -A {q(p)} -x AES -X {q(p + 'x')} 10.0.0.1 system"),
    ("xfreerdp", lambda p: f"xfreerdp /v:win-build01.corp.local /u:CORP\\\\builder /p:{q(p)} /cert:ignore"),
    ("smbclient", lambda p: f"smbclient //fileserver/projects -U 'CORP/dana%{p}' -c 'ls'"),
    ("mount-cifs", lambda p: f"sudo mount -t cifs //nas/backup /mnt/backup -o username=backup,password={p},vers=3.0"),
    ("lftp", lambda p: f"lftp -u deploy,{q(p)} sftp://files.acme.io -e 'mirror -R dist /var/www; quit'"),
    ("keytool-storepass", lambda p: f"keytool -importcert -alias acme-ca -file ca.crt -keystore truststore.jks -storepass {q(p)} -noprompt"),
    ("jarsigner", lambda p: f"jarsigner -keystore release.jks -storepass {q(p)} app-release.apk release"),
    ("rabbitmqctl", lambda p: f"rabbitmqctl add_user orders {q(p)}"),
    ("mosquitto-pub", lambda p: f"mosquitto_pub -h mqtt.acme.io -p 8883 -u sensor01 -P {q(p)} -t plant/temp -m 21.4"),
    ("influx-cli", lambda p: f"influx setup --username admin --password {q(p)} --org acme --bucket metrics --force"),
    ("sqlcmd", lambda p: f"sqlcmd -S tcp:sql01.corp.local,1433 -U sa -P {q(p)} -Q \"SELECT @@VERSION\""),
    ("cf-login", lambda p: f"cf login -a https://api.cf.acme.io -u ci-bot -p {q(p)} -o acme -s prod"),
    ("oc-login", lambda p: f"oc login https://api.ocp.acme.io:6443 -u developer -p {q(p)}"),
    ("rclone-obscure", lambda p: f"rclone config create nas webdav url=https://nas.local/dav vendor=other user=dana pass={q(p)}"),
    ("restic-env", lambda p: f"RESTIC_PASSWORD={q(p)} restic -r s3:s3.amazonaws.com/acme-backups backup /srv"),
    ("borg-passphrase", lambda p: f"BORG_PASSPHRASE={q(p)} borg create ::'{{hostname}}-{{now}}' /home"),
    ("nmcli-wifi", lambda p: f"nmcli device wifi connect 'Office-5G' password {q(p)}"),
    ("wpa-passphrase", lambda p: f"wpa_passphrase HomeNet {q(p)} | sudo tee /etc/wpa_supplicant.conf"),
    ("openconnect", lambda p: f"echo {q(p)} | sudo openconnect --user=dana --passwd-on-stdin vpn.acme.io"),
    ("mysqladmin", lambda p: f"mysqladmin -u root --password={q(p)} password {q(p[::-1])}"),
    ("mariadb-dump", lambda p: f"mariadb-dump -h db01 -u backup -p{q(p)} --all-databases > all.sql"),
    ("clickhouse-client", lambda p: f"clickhouse-client --host ch01 --user analyst --password {q(p)} --query 'SELECT 1'"),
    ("cqlsh", lambda p: f"cqlsh cassandra01 9042 -u cassandra -p {q(p)}"),
    ("neo4j-cypher-shell", lambda p: f"cypher-shell -a neo4j://graph01:7687 -u neo4j -p {q(p)} 'MATCH (n) RETURN count(n);'"),
    ("arangosh", lambda p: f"arangosh --server.endpoint tcp://127.0.0.1:8529 --server.username root --server.password {q(p)}"),
    ("couchbase-cli", lambda p: f"couchbase-cli bucket-list -c cb01:8091 -u Administrator -p {q(p)}"),
    ("etcdctl", lambda p: f"etcdctl --endpoints=https://etcd0:2379 --user root:{p} get /config --prefix"),
    ("nats-cli", lambda p: f"nats sub 'orders.>' --server nats://orders:{p}@nats.acme.io:4222"),
    ("kafka-console", lambda p: f"kafka-console-consumer --bootstrap-server kafka:9093 --topic audit --consumer-property sasl.jaas.config='org.apache.kafka.common.security.plain.PlainLoginModule required username=\"audit\" password=\"{p}\";'"),
    ("ldapmodify", lambda p: f"ldapmodify -H ldaps://ldap.corp.local -D 'cn=admin,dc=corp,dc=local' -w {q(p)} -f users.ldif"),
    ("kinit-stdin", lambda p: f"echo {q(p)} | kinit svc_build@CORP.LOCAL"),
    ("net-use", lambda p: f"net use Z: \\\\fs01\\share /user:CORP\\dana {p} /persistent:no"),
    ("runas-psexec", lambda p: f"psexec64 \\\\build02 -u CORP\\svc_ci -p {p} cmd /c whoami"),
    ("schtasks", lambda p: f"schtasks /create /tn Nightly /tr C:\\jobs\\sync.bat /sc daily /st 02:00 /ru CORP\\svc_sync /rp {p}"),
    ("vmrun", lambda p: f"vmrun -T ws -gu vagrant -gp {q(p)} runProgramInGuest vm.vmx /bin/ls"),
    ("vboxmanage", lambda p: f"VBoxManage guestcontrol win11 run --username dev --password {q(p)} --exe cmd.exe"),
    ("ansible-become", lambda p: f"ansible-playbook site.yml -i hosts.ini -e ansible_become_password={q(p)}"),
    ("helm-repo-add", lambda p: f"helm repo add internal https://charts.acme.io --username ci --password {q(p)}"),
    ("skopeo-creds", lambda p: f"skopeo copy --dest-creds robot$ci:{p} docker://alpine:3.20 docker://registry.acme.io/base/alpine:3.20"),
    ("podman-login", lambda p: f"podman login quay.io -u acme+ci -p {q(p)}"),
    ("crane-auth", lambda p: f"crane auth login registry.acme.io -u ci -p {q(p)}"),
    ("twine-upload", lambda p: f"twine upload --repository-url https://pypi.acme.io/ -u ci -p {q(p)} dist/*"),
    ("gem-push-env", lambda p: f"GEM_HOST_API_KEY={q(p)} gem push acme-client-2.1.0.gem"),
    ("mvn-deploy", lambda p: f"mvn deploy -DaltDeploymentRepository=acme::https://nexus.acme.io/repository/releases -Drepo.password={q(p)}"),
    ("gradle-signing", lambda p: f"./gradlew publish -Psigning.password={q(p)} -PsonatypePassword={q(p[::-1])}"),
    ("dotnet-nuget-add", lambda p: f"dotnet nuget add source https://nuget.acme.io/v3/index.json -n acme -u ci -p {q(p)} --store-password-in-clear-text"),
    ("composer-config", lambda p: f"composer config --global http-basic.repo.acme.io ci {q(p)}"),
    ("git-credential-store", lambda p: f"printf 'protocol=https\\nhost=git.acme.io\\nusername=ci\\npassword={p}\\n' | git credential approve"),
    ("svn-checkout", lambda p: f"svn checkout https://svn.acme.io/repos/app/trunk --username dana --password {q(p)} --non-interactive"),
    ("hg-clone", lambda p: f"hg clone https://dana:{p}@hg.acme.io/app"),
    ("rsync-password", lambda p: f"RSYNC_PASSWORD={q(p)} rsync -av backup@nas::backups/ /srv/restore/"),
    ("sshpass-scp", lambda p: f"sshpass -p {q(p)} scp -o StrictHostKeyChecking=no dump.sql ops@10.1.2.3:/tmp/"),
    ("expect-send", lambda p: f"expect -c 'spawn ssh admin@switch01; expect \"assword:\"; send \"{p}\\r\"; interact'"),
    ("zip-encrypt", lambda p: f"zip -r -P {q(p)} handover.zip reports/"),
    ("7z-extract", lambda p: f"7z x -p{q(p)} archive.7z -o./out"),
    ("gpg-batch", lambda p: f"gpg --batch --pinentry-mode loopback --passphrase {q(p)} -d secrets.tar.gpg | tar x"),
    ("openssl-pkcs12", lambda p: f"openssl pkcs12 -export -in cert.pem -inkey key.pem -out bundle.p12 -passout pass:{p}"),
    ("openssl-enc", lambda p: f"openssl enc -aes-256-cbc -pbkdf2 -in db.sql -out db.sql.enc -k {q(p)}"),
    ("htpasswd-b", lambda p: f"htpasswd -bB /etc/nginx/.htpasswd admin {q(p)}"),
    ("curl-proxy-user", lambda p: f"curl -x http://proxy.corp.local:3128 --proxy-user dana:{p} https://pypi.org/simple/"),
    ("wget-ftp", lambda p: f"wget --ftp-user=mirror --ftp-password={q(p)} ftp://ftp.acme.io/pub/data.tar.gz"),
    ("redis-cli-user", lambda p: f"redis-cli -h cache01 --user app --pass {q(p)} --no-auth-warning PING"),
    ("mongosh-uri", lambda p: f"mongosh 'mongodb+srv://reporting:{p}@cluster0.ab1cd.mongodb.net/sales?retryWrites=true'"),
    ("pgcli-uri", lambda p: f"pgcli postgresql://analyst:{p}@warehouse.acme.io:5432/dwh"),
    ("usql", lambda p: f"usql sqlserver://sa:{p}@localhost/master"),
    ("java-keystore-props", lambda p: f"java -Djavax.net.ssl.keyStore=client.p12 -Djavax.net.ssl.keyStorePassword={p} -jar client.jar"),
    ("chpasswd", lambda p: f"echo 'deploy:{p}' | sudo chpasswd"),
    ("useradd-openssl", lambda p: f"sudo usermod --password $(openssl passwd -6 {q(p)}) deploy"),
    ("az-login-sp", lambda p: f"az login --service-principal -u 5b2f1c3e-9a7d-4e21-b0f4-2c6d8e1a9f03 -p {q(p)} --tenant acme.onmicrosoft.com"),
]  # fmt: skip


def command_cases() -> None:
    for name, make in COMMANDS:
        for prompt in ("$ ", "dev@build01:~/app$ "):
            value = pw()
            add(
                "secret",
                f"cmd-{name}",
                MADE,
                "made here",
                "shell command",
                prompt + make(value),
                value,
            )


# Config files holding a password (syntax from each program's documentation).
CONFIGS: list[tuple[str, Callable[[str], str]]] = [
    ("pgpass", lambda p: f"# ~/.pgpass\nwarehouse.acme.io:5432:dwh:analyst:{p}\n*:*:*:replicator:{p[::-1]}"),
    ("my-cnf", lambda p: f"[client]\nuser=backup\npassword=\"{p}\"\nhost=db01.internal"),
    ("s3cfg", lambda p: f"[default]\naccess_key = GOOGTS7C7FUP3AIRVJTE2BCD\nsecret_key = {p}\nhost_base = storage.googleapis.com"),
    ("rclone-conf", lambda p: f"[nas]\ntype = sftp\nhost = nas.local\nuser = dana\npass = {p}"),
    ("wpa-supplicant", lambda p: f"network={{\n\tssid=\"Office-5G\"\n\tpsk=\"{p}\"\n\tkey_mgmt=WPA-PSK\n}}"),
    ("nmconnection", lambda p: f"[wifi]\nmode=infrastructure\nssid=Office-5G\n\n[wifi-security]\nkey-mgmt=wpa-psk\npsk={p}"),
    ("postfix-sasl-passwd", lambda p: f"[smtp.sendgrid.net]:587 apikey:{p}"),
    ("msmtprc", lambda p: f"account work\nhost smtp.office365.com\nport 587\nauth on\nuser dana@acme.io\npassword {p}\ntls on"),
    ("fetchmailrc", lambda p: f"poll imap.acme.io protocol IMAP user \"dana\" password \"{p}\" ssl"),
    ("muttrc", lambda p: f"set imap_user = \"dana@acme.io\"\nset imap_pass = \"{p}\"\nset folder = \"imaps://imap.acme.io:993\""),
    ("pip-conf", lambda p: f"[global]\nindex-url = https://ci:{p}@pypi.acme.io/simple/\ntimeout = 60"),
    ("poetry-auth-toml", lambda p: f"[http-basic.acme]\nusername = \"ci\"\npassword = \"{p}\""),
    ("yarnrc-yml", lambda p: f"npmScopes:\n  acme:\n    npmRegistryServer: \"https://npm.acme.io\"\n    npmAuthToken: \"{p}\""),
    ("bunfig-toml", lambda p: f"[install.scopes]\nacme = {{ token = \"{p}\", url = \"https://npm.acme.io/\" }}"),
    ("cargo-credentials", lambda p: f"[registries.acme]\ntoken = \"{p}\""),
    ("composer-auth-json", lambda p: f"{{\n  \"http-basic\": {{\n    \"repo.acme.io\": {{\"username\": \"ci\", \"password\": \"{p}\"}}\n  }}\n}}"),
    ("maven-settings", lambda p: f"<servers>\n  <server>\n    <id>acme-releases</id>\n    <username>ci</username>\n    <password>{p}</password>\n  </server>\n</servers>"),
    ("gradle-properties", lambda p: f"org.gradle.jvmargs=-Xmx2g\nsigning.keyId=24875D73\nsigning.password={p}\nossrhUsername=acme"),
    ("tomcat-context-xml", lambda p: f"<Resource name=\"jdbc/app\" auth=\"Container\" type=\"javax.sql.DataSource\"\n  username=\"app\" password=\"{p}\"\n  url=\"jdbc:postgresql://db:5432/app\"/>"),
    ("tomcat-users-xml", lambda p: f"<tomcat-users>\n  <user username=\"manager\" password=\"{p}\" roles=\"manager-gui\"/>\n</tomcat-users>"),
    ("spring-application-yml", lambda p: f"spring:\n  datasource:\n    url: jdbc:mysql://db:3306/shop\n    username: shop\n    password: {p}"),
    ("spring-properties", lambda p: f"spring.mail.host=smtp.acme.io\nspring.mail.username=noreply\nspring.mail.password={p}"),
    ("hibernate-cfg", lambda p: f"<property name=\"hibernate.connection.username\">app</property>\n<property name=\"hibernate.connection.password\">{p}</property>"),
    ("wp-config", lambda p: f"define( 'DB_NAME', 'wordpress' );\ndefine( 'DB_USER', 'wp' );\ndefine( 'DB_PASSWORD', '{p}' );"),
    ("nextcloud-config-php", lambda p: f"  'dbtype' => 'pgsql',\n  'dbuser' => 'nextcloud',\n  'dbpassword' => '{p}',"),
    ("gitea-app-ini", lambda p: f"[database]\nDB_TYPE  = postgres\nHOST     = db:5432\nUSER     = gitea\nPASSWD   = `{p}`"),
    ("grafana-ini", lambda p: f"[security]\nadmin_user = admin\nadmin_password = {p}"),
    ("home-assistant-secrets", lambda p: f"# secrets.yaml\nmqtt_password: \"{p}\"\nlatitude_home: 52.37"),
    ("prometheus-basic-auth", lambda p: f"scrape_configs:\n  - job_name: node\n    basic_auth:\n      username: prom\n      password: {p}"),
    ("alertmanager-smtp", lambda p: f"global:\n  smtp_smarthost: smtp.acme.io:587\n  smtp_auth_username: alerts@acme.io\n  smtp_auth_password: '{p}'"),
    ("fluent-bit", lambda p: f"[OUTPUT]\n    Name  es\n    Host  es01\n    HTTP_User elastic\n    HTTP_Passwd {p}"),
    ("telegraf-toml", lambda p: f"[[outputs.influxdb]]\n  urls = [\"http://influx:8086\"]\n  username = \"telegraf\"\n  password = \"{p}\""),
    ("logstash-output", lambda p: f"output {{\n  elasticsearch {{\n    hosts => [\"https://es01:9200\"]\n    user => \"logstash_writer\"\n    password => \"{p}\"\n  }}\n}}"),
    ("haproxy-stats", lambda p: f"listen stats\n    bind :8404\n    stats enable\n    stats auth admin:{p}"),
    ("kafka-jaas", lambda p: f"KafkaClient {{\n  org.apache.kafka.common.security.scram.ScramLoginModule required\n  username=\"orders\"\n  password=\"{p}\";\n}};"),
    ("redis-conf", lambda p: f"bind 127.0.0.1\nport 6379\nrequirepass {p}\nmaxmemory 256mb"),
    ("pgbouncer-userlist", lambda p: f"\"app\" \"{p}\"\n\"stats\" \"md5a1b2c3\""),
    ("mongod-keyfile-conf", lambda p: f"security:\n  authorization: enabled\nsetParameter:\n  ldapQueryPassword: \"{p}\""),
    ("jupyter-config", lambda p: f"c.ServerApp.ip = '0.0.0.0'\nc.ServerApp.token = '{p}'\nc.ServerApp.open_browser = False"),
    ("airflow-connection-env", lambda p: f"AIRFLOW_CONN_WAREHOUSE='postgres://etl:{p}@dwh.acme.io:5432/analytics'"),
    ("superset-config", lambda p: f"ROW_LIMIT = 5000\nSECRET_KEY = '{p}'\nSQLALCHEMY_TRACK_MODIFICATIONS = False"),
    ("laravel-env", lambda p: f"APP_NAME=Shop\nAPP_ENV=production\nAPP_KEY=base64:{base64.b64encode(p.encode()).decode()}\nDB_CONNECTION=mysql"),
    ("symfony-env", lambda p: f"APP_ENV=prod\nAPP_SECRET={p}\nMESSENGER_TRANSPORT_DSN=doctrine://default"),
    ("rails-database-yml", lambda p: f"production:\n  adapter: postgresql\n  database: shop_production\n  username: shop\n  password: <%= ENV.fetch('DB_PASSWORD', '{p}') %>"),
    ("vagrantfile", lambda p: f"config.vm.provider \"vmware_desktop\" do |v|\n  config.ssh.password = \"{p}\"\nend"),
    ("packer-hcl", lambda p: f"source \"vsphere-iso\" \"ubuntu\" {{\n  vcenter_server = \"vc.corp.local\"\n  username       = \"packer@vsphere.local\"\n  password       = \"{p}\"\n}}"),
    ("keycloak-client-json", lambda p: f"{{\n  \"clientId\": \"grafana\",\n  \"secret\": \"{p}\",\n  \"redirectUris\": [\"https://grafana.acme.io/*\"]\n}}"),
    ("argocd-repo-secret", lambda p: f"apiVersion: v1\nkind: Secret\nmetadata:\n  labels:\n    argocd.argoproj.io/secret-type: repository\nstringData:\n  url: https://git.acme.io/infra.git\n  username: argocd\n  password: {p}"),
    ("tekton-basic-auth", lambda p: f"apiVersion: v1\nkind: Secret\nmetadata:\n  annotations:\n    tekton.dev/git-0: https://github.com\ntype: kubernetes.io/basic-auth\nstringData:\n  username: bot\n  password: {p}"),
    ("jenkinsfile-withenv", lambda p: f"pipeline {{\n  agent any\n  environment {{\n    DEPLOY_PASSWORD = '{p}'\n  }}\n  stages {{ stage('deploy') {{ steps {{ sh './deploy.sh' }} }} }}\n}}"),
    ("azure-pipelines", lambda p: f"variables:\n  buildConfiguration: Release\n  sqlPassword: '{p}'\nsteps:\n- script: dotnet build"),
    ("bitbucket-pipelines", lambda p: f"pipelines:\n  default:\n    - step:\n        script:\n          - export FTP_PASSWORD={q(p)}\n          - lftp -u deploy,$FTP_PASSWORD ftp.acme.io"),
    ("drone-yml", lambda p: f"steps:\n- name: publish\n  image: plugins/docker\n  settings:\n    username: acme\n    password: {p}"),
    ("circleci-config", lambda p: f"jobs:\n  test:\n    docker:\n      - image: cimg/postgres:16.2\n        environment:\n          POSTGRES_PASSWORD: {p}"),
    ("docker-compose-mysql", lambda p: f"services:\n  db:\n    image: mysql:8.4\n    environment:\n      MYSQL_ROOT_PASSWORD: \"{p}\""),
    ("helm-values-postgres", lambda p: f"postgresql:\n  auth:\n    username: app\n    password: \"{p}\"\n    database: app"),
    ("terraform-rds", lambda p: f"resource \"aws_db_instance\" \"main\" {{\n  engine   = \"postgres\"\n  username = \"app\"\n  password = \"{p}\"\n}}"),
    ("ansible-inventory", lambda p: f"[windows]\nwin01 ansible_host=10.0.5.11\n\n[windows:vars]\nansible_user=Administrator\nansible_password={p}\nansible_connection=winrm"),
    ("ssh-config-ignored", lambda p: f"# password for bastion (do not commit): {p}\nHost bastion\n  HostName 203.0.113.10\n  User ops"),
    ("ini-odbc", lambda p: f"[warehouse]\nDriver=ODBC Driver 18 for SQL Server\nServer=tcp:dwh.corp.local,1433\nUID=report\nPWD={p}"),
    ("ovpn-auth-file", lambda p: f"# /etc/openvpn/client/auth.txt (auth-user-pass)\ndana\n{p}"),
    ("nginx-proxy-auth", lambda p: f"location /api/ {{\n    proxy_pass https://upstream;\n    proxy_set_header Authorization \"Basic {base64.b64encode(('svc:' + p).encode()).decode()}\";\n}}"),
]  # fmt: skip


def config_cases() -> None:
    for name, make in CONFIGS:
        value = pw()
        text = make(value)
        if name == "laravel-env":
            value = base64.b64encode(value.encode()).decode()
        elif name == "nginx-proxy-auth":
            value = re.search(r"Basic (\S+)\"", text).group(1)  # type: ignore[union-attr]
        add("secret", f"cfg-{name}", MADE, "made here", "config file", text, value)


# Code in 24 languages holding a credential (idioms of each language's common clients).
CODE: list[tuple[str, Callable[[str], str]]] = [
    ("rust", lambda v: f"let client = reqwest::Client::new();\nlet res = client.get(url)\n    .bearer_auth(\"{v}\")\n    .send().await?;"),
    ("kotlin", lambda v: f"val dataSource = HikariDataSource().apply {{\n    jdbcUrl = \"jdbc:postgresql://db/app\"\n    username = \"app\"\n    password = \"{v}\"\n}}"),
    ("swift", lambda v: f"var request = URLRequest(url: url)\nrequest.setValue(\"Bearer {v}\", forHTTPHeaderField: \"Authorization\")"),
    ("scala", lambda v: f"val db = Database.forURL(\"jdbc:postgresql://db/app\", user = \"app\", password = \"{v}\", driver = \"org.postgresql.Driver\")"),
    ("elixir", lambda v: f"config :my_app, MyApp.Repo,\n  username: \"postgres\",\n  password: \"{v}\",\n  hostname: \"localhost\""),
    ("haskell", lambda v: f"connInfo = defaultConnectInfo {{ connectUser = \"app\", connectPassword = \"{v}\", connectDatabase = \"app\" }}"),
    ("lua", lambda v: f"local red = redis:new()\nlocal ok, err = red:connect(\"127.0.0.1\", 6379)\nlocal res, err = red:auth(\"{v}\")"),
    ("perl", lambda v: f"my $dbh = DBI->connect(\"dbi:Pg:dbname=app;host=db\", \"app\", \"{v}\", {{ RaiseError => 1 }});"),
    ("r", lambda v: f"con <- dbConnect(RPostgres::Postgres(), dbname = \"dwh\", user = \"analyst\", password = \"{v}\")"),
    ("julia", lambda v: f"conn = LibPQ.Connection(\"host=db dbname=app user=app password={v}\")"),
    ("dart", lambda v: f"final response = await http.get(uri, headers: {{'Authorization': 'Bearer {v}'}});"),
    ("zig", lambda v: f"const api_key: []const u8 = \"{v}\";\ntry headers.append(\"X-Api-Key\", api_key);"),
    ("nim", lambda v: f"let client = newHttpClient()\nclient.headers = newHttpHeaders({{\"Authorization\": \"Token {v}\"}})"),
    ("php", lambda v: f"$pdo = new PDO('mysql:host=db;dbname=shop', 'shop', '{v}');"),
    ("cpp", lambda v: f"curl_easy_setopt(curl, CURLOPT_USERPWD, \"deploy:{v}\");"),
    ("clojure", lambda v: f"(def db {{:dbtype \"postgresql\" :dbname \"app\" :user \"app\" :password \"{v}\"}})"),
    ("fsharp", lambda v: f"let connStr = \"Host=db;Database=app;Username=app;Password={v}\"\nuse conn = new NpgsqlConnection(connStr)"),
    ("ocaml", lambda v: f"let api_token = \"{v}\" in\nCohttp_lwt_unix.Client.get ~headers:(Cohttp.Header.init_with \"Authorization\" (\"Bearer \" ^ api_token)) uri"),
    ("groovy", lambda v: f"def sql = Sql.newInstance('jdbc:mysql://db:3306/app', 'app', '{v}', 'com.mysql.cj.jdbc.Driver')"),
    ("powershell", lambda v: f"$secure = ConvertTo-SecureString '{v}' -AsPlainText -Force\n$cred = New-Object System.Management.Automation.PSCredential('CORP\\svc_ci', $secure)"),
    ("sql", lambda v: f"CREATE USER reporting WITH LOGIN PASSWORD '{v}';\nGRANT SELECT ON ALL TABLES IN SCHEMA public TO reporting;"),
    ("vbnet", lambda v: f"Dim cs As String = \"Server=sql01;Database=Erp;User Id=erp;Password={v};\"\nUsing conn As New SqlConnection(cs)"),
    ("objective-c", lambda v: f"[request setValue:@\"Bearer {v}\" forHTTPHeaderField:@\"Authorization\"];"),
    ("solidity-hardhat", lambda v: f"networks: {{\n  sepolia: {{\n    url: \"https://sepolia.infura.io/v3/{r(HEX, 32)}\",\n    accounts: [\"0x{v}\"]\n  }}\n}}"),
]  # fmt: skip


def code_cases() -> None:
    for name, make in CODE:
        for _ in range(2):
            if name == "solidity-hardhat":
                value = r(HEX, 64)
            elif name in ("rust", "swift", "dart", "nim", "ocaml", "objective-c", "zig"):
                value = rng.choice(TOKENS)[2]()
                if " " in value:
                    value = github("ghp")
            else:
                value = pw()
            add("secret", f"code-{name}", MADE, "made here", f"{name} source", make(value), value)


# Prompts in 16 languages: a person pasting a credential into a request to the agent.
PROMPTS: list[tuple[str, str]] = [
    ("english", "the staging db password is {v}, can you check why the migration fails?"),
    ("french", "voici le mot de passe de la base de recette : {v} — peux-tu relancer l'import ?"),
    ("german", "Das Passwort für den Build-Server lautet {v}, bitte trag es in die Pipeline ein."),
    ("spanish", "mi token de la API es {v}, ¿por qué me devuelve 401?"),
    ("portuguese", "a senha do banco de homologação é {v}; pode verificar a conexão?"),
    ("italian", "la password dell'utente admin è {v}, aggiorna lo script di deploy per favore"),
    ("dutch", "het wachtwoord van de testomgeving is {v}, kun je de login fixen?"),
    ("polish", "hasło do serwera to {v}, sprawdź proszę dlaczego ssh nie działa"),
    ("russian", "пароль от базы на стенде: {v} — посмотри, почему падает миграция"),
    ("ukrainian", "ось ключ API для тестового акаунта: {v}, додай його в конфіг"),
    ("turkish", "sunucunun şifresi {v}, bağlantı neden reddediliyor bakar mısın?"),
    ("japanese", "ステージング環境のAPIキーは {v} です。認証エラーの原因を調べてください。"),
    ("chinese", "测试环境的数据库密码是 {v}，帮我看看为什么连不上。"),
    ("korean", "개발 서버 비밀번호는 {v} 입니다. 배포 스크립트에 넣어 주세요."),
    ("vietnamese", "mật khẩu của tài khoản quản trị là {v}, bạn kiểm tra giúp lỗi đăng nhập nhé"),
    ("indonesian", "kata sandi database staging adalah {v}, tolong cek kenapa koneksinya gagal"),
]


def prompt_cases() -> None:
    for lang, template in PROMPTS:
        for j in range(2):
            value = pw() if j == 0 else rng.choice(TOKENS)[2]()
            add(
                "secret",
                f"prompt-{lang}",
                MADE,
                "made here",
                "prompt",
                template.format(v=value),
                value,
            )


# Tool output showing a credential (each tool's output layout as it prints it).
OUTPUTS: list[tuple[str, str, Callable[[str], str]]] = [
    ("gh-auth-status-show-token", "github-oauth", lambda v: f"github.com\n  ✓ Logged in to github.com account dana-lee (keyring)\n  - Active account: true\n  - Git operations protocol: https\n  - Token: {v}\n  - Token scopes: 'gist', 'read:org', 'repo', 'workflow'"),
    ("gcloud-print-access-token", "google-oauth-access", lambda v: f"$ gcloud auth print-access-token\n{v}"),
    ("az-get-access-token", "jwt-rs256-id-token", lambda v: f'{{\n  "accessToken": "{v}",\n  "expiresOn": "2026-11-27 23:41:09.000000",\n  "subscription": "6f1d2c3b-8a9e-4f70-b1c2-d3e4f5a6b7c8",\n  "tokenType": "Bearer"\n}}'),
    ("doppler-secrets-get-plain", "pw", lambda v: f"$ doppler secrets get DB_PASSWORD --plain\n{v}"),
    ("op-item-get-reveal", "pw", lambda v: f"$ op item get 'Prod DB' --fields password --reveal\n{v}"),
    ("kubectl-config-view-raw", "jwt-session", lambda v: f"users:\n- name: ci-deployer\n  user:\n    token: {v}\ncontexts:\n- context:\n    cluster: prod"),
    ("docker-config-json", "pw", lambda v: f'{{\n\t"auths": {{\n\t\t"registry.acme.io": {{\n\t\t\t"auth": "{_b64("ci:" + v)}"\n\t\t}}\n\t}}\n}}'),
    ("ps-aux", "pw", lambda v: f"USER   PID %CPU %MEM    VSZ   RSS TTY STAT START TIME COMMAND\nbackup 8123  2.1  0.3 108312 24576 ?  S    02:00 0:04 mysqldump -h db01 -u backup -p{v} shop"),
    ("proc-environ", "vault-service", lambda v: f"$ tr '\\0' '\\n' < /proc/8123/environ\nHOSTNAME=worker-7d9f\nVAULT_ADDR=https://vault.acme.io:8200\nVAULT_TOKEN={v}\nHOME=/root"),
    ("bash-xtrace", "github-fine-grained", lambda v: f"+ curl -fsSL -H 'Authorization: token {v}' https://api.github.com/repos/acme/api/releases/latest\n+ jq -r .tag_name"),
    ("make-echo", "pw", lambda v: f"make[1]: Entering directory '/src/app'\npsql \"postgresql://migrator:{v}@db:5432/app\" -f migrations/0042.sql\nALTER TABLE"),
    ("java-stack-trace", "pw", lambda v: f"org.postgresql.util.PSQLException: Connection to db:5432 refused.\n\tat org.postgresql.core.v3.ConnectionFactoryImpl.openConnectionImpl(ConnectionFactoryImpl.java:342)\nCaused by: url=jdbc:postgresql://db:5432/app?user=app&password={v}"),
    ("node-error", "pw", lambda v: f"Error: connect ECONNREFUSED 10.0.3.7:5672\n    at TCPConnectWrap.afterConnect [as oncomplete] (node:net:1607:16) {{\n  errno: -111,\n  code: 'ECONNREFUSED',\n  url: 'amqp://orders:{v}@rabbit:5672/%2F'\n}}"),
    ("python-requests-error", "tavily", lambda v: f"requests.exceptions.HTTPError: 429 Client Error: Too Many Requests for url: https://api.search.io/v1/search?q=engram&api_key={v}"),
    ("git-push-403", "github-server-to-server", lambda v: f"remote: Permission to acme/api.git denied to github-actions[bot].\nfatal: unable to access 'https://x-access-token:{v}@github.com/acme/api.git/': The requested URL returned error: 403"),
    ("docker-compose-config", "pw", lambda v: f"name: shop\nservices:\n  db:\n    environment:\n      POSTGRES_DB: shop\n      POSTGRES_PASSWORD: {v}\n    image: postgres:16"),
    ("systemctl-show-environment", "sentry-user", lambda v: f"$ systemctl show worker -p Environment\nEnvironment=LOG_LEVEL=info SENTRY_AUTH_TOKEN={v} PORT=8080"),
    ("helm-get-values", "pw", lambda v: f"$ helm get values shop -n prod\nUSER-SUPPLIED VALUES:\nmariadb:\n  auth:\n    rootPassword: {v}"),
    ("ansible-vvv", "pw", lambda v: f"<10.0.5.11> ESTABLISH WINRM CONNECTION FOR USER: Administrator on PORT 5986 TO 10.0.5.11\nok: [win01] => {{\"ansible_facts\": {{}}, \"invocation\": {{\"module_args\": {{\"ansible_password\": \"{v}\"}}}}}}"),
    ("postgres-statement-log", "pw", lambda v: f"2026-11-27 21:03:44.120 UTC [4121] app@shop LOG:  statement: ALTER USER app WITH PASSWORD '{v}';"),
    ("mysql-general-log", "pw", lambda v: f"2026-11-27T21:04:02.338912Z\t   12 Query\tCREATE USER 'report'@'%' IDENTIFIED BY '{v}'"),
    ("shell-history", "pw", lambda v: f"  501  cd ~/src/shop\n  502  export PGPASSWORD={q(v)}\n  503  psql -h db -U shop"),
    ("nginx-access-log", "firecrawl", lambda v: f"203.0.113.7 - - [27/Nov/2026:21:05:11 +0000] \"GET /api/v1/export?token={v} HTTP/1.1\" 200 5123 \"-\" \"python-requests/2.32.3\""),
    ("curl-set-cookie", "pw", lambda v: f"< HTTP/2 302\n< location: /dashboard\n< set-cookie: sessionid={r(LOWNUM, 32)}; expires=Fri, 11 Dec 2026 21:05:11 GMT; HttpOnly; Path=/; SameSite=Lax; Secure\n< x-frame-options: DENY"),
    ("har-entry", "jwt-session", lambda v: f'"request": {{\n  "method": "GET",\n  "url": "https://app.service.io/api/me",\n  "headers": [\n    {{"name": "authorization", "value": "Bearer {v}"}},\n    {{"name": "accept", "value": "application/json"}}\n  ]\n}}'),
    ("git-config-remote", "gitlab-deploy-token", lambda v: f"[remote \"origin\"]\n\turl = https://gitlab+deploy-token-41:{v}@gitlab.acme.io/acme/api.git\n\tfetch = +refs/heads/*:refs/remotes/origin/*"),
    ("printenv-grep", "langsmith", lambda v: f"$ printenv | grep -i key\nLANGSMITH_API_KEY={v}\nGPG_KEY_ID=24875D73"),
    ("terraform-output-json", "pw", lambda v: f'{{\n  "db_password": {{\n    "sensitive": true,\n    "type": "string",\n    "value": "{v}"\n  }}\n}}'),
    ("vault-token-create", "vault-service", lambda v: f"Key                  Value\n---                  -----\ntoken                {v}\ntoken_accessor       {r(ALNUM, 24)}\ntoken_duration       768h\ntoken_renewable      true"),
    ("journalctl-line", "telegram-bot", lambda v: f"Nov 27 21:06:40 bot01 notifier[912]: POST https://api.telegram.org/bot{v}/sendMessage -> 200"),
]  # fmt: skip


def output_cases() -> None:
    by_name = {name: make for name, _, make in TOKENS}
    for name, value_kind, make in OUTPUTS:
        value = pw() if value_kind == "pw" else by_name[value_kind]()
        text = make(value)
        secret = value
        if name == "docker-config-json":
            secret = _b64("ci:" + value)
        elif name == "curl-set-cookie":
            secret = re.search(r"sessionid=(\w+)", text).group(1)  # type: ignore[union-attr]
        add("secret", f"out-{name}", MADE, "made here", "tool output", text, secret)


def _run(args: list[str], stdin: bytes | None = None, cwd: str | None = None) -> bytes:
    return subprocess.run(args, input=stdin, capture_output=True, check=True, cwd=cwd).stdout


def middle_line(block: str) -> str:
    """The secret of a key block: its longest middle line of key material."""
    lines = [ln for ln in block.splitlines() if len(ln) >= 40 and not ln.startswith("-----")]
    lines = [ln for ln in lines if ":" not in ln and " " not in ln]
    return lines[len(lines) // 2]


BIP39_HEAD = [
    "abandon",
    "ability",
    "able",
    "about",
    "above",
    "absent",
    "absorb",
    "abstract",
    "absurd",
    "abuse",
    "access",
    "accident",
    "account",
    "accuse",
    "achieve",
    "acid",
    "acoustic",
    "acquire",
    "across",
    "act",
    "action",
    "actor",
    "actress",
    "actual",
    "adapt",
    "add",
    "addict",
    "address",
    "adjust",
    "admit",
    "adult",
    "advance",
    "advice",
    "aerobic",
    "affair",
    "afford",
    "afraid",
    "again",
    "age",
    "agent",
    "agree",
    "ahead",
    "aim",
    "air",
    "airport",
    "aisle",
    "alarm",
    "album",
    "alcohol",
    "alert",
    "alien",
    "all",
    "alley",
    "allow",
    "almost",
    "alone",
    "alpha",
    "already",
    "also",
    "alter",
    "always",
    "amateur",
    "amazing",
    "among",
    "amount",
    "amused",
    "analyst",
    "anchor",
    "ancient",
    "anger",
    "angle",
    "angry",
    "animal",
    "ankle",
    "announce",
    "annual",
    "another",
    "answer",
    "antenna",
    "antique",
    "anxiety",
    "any",
    "apart",
    "apology",
    "appear",
    "apple",
    "approve",
    "april",
    "arch",
    "arctic",
    "area",
    "arena",
    "argue",
    "arm",
    "armed",
    "armor",
    "army",
    "around",
]


def key_cases() -> None:
    def k(kind: str, context: str, text: str, secret: str) -> None:
        add("secret", f"key-{kind}", MADE, "made here", context, text, secret)

    with tempfile.TemporaryDirectory() as tmp:
        rsa = _run(
            ["openssl", "genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048"]
        ).decode()
        k("openssl-rsa-pkcs8", "cat key.pem", f"$ cat certs/server.key\n{rsa}", middle_line(rsa))
        sa_json = json.dumps(
            {"type": "service_account", "project_id": "acme-prod-31337",
             "private_key_id": r(HEX, 40), "private_key": rsa,
             "client_email": "deployer@acme-prod-31337.iam.gserviceaccount.com"}, indent=2)  # fmt: skip
        k("service-account-json", "service account file", sa_json, middle_line(rsa))
        ec = _run(["openssl", "ecparam", "-name", "prime256v1", "-genkey", "-noout"]).decode()
        k("openssl-ec-sec1", "cat key.pem", ec, middle_line(ec))
        ec384 = _run(
            ["openssl", "genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:secp384r1"]
        ).decode()
        k("openssl-ec-p384-pkcs8", "terraform heredoc",
          f'resource "tls_locally_signed_cert" "api" {{\n  ca_private_key_pem = <<-EOT\n{ec384}  EOT\n}}',
          middle_line(ec384))  # fmt: skip
        enc = _run(["openssl", "genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048",
                    "-aes-256-cbc", "-pass", "pass:" + password(4)]).decode()  # fmt: skip
        k("openssl-encrypted-pkcs8", "cat key.pem", enc, middle_line(enc))
        ed_pem = _run(["openssl", "genpkey", "-algorithm", "ed25519"]).decode()
        ed_body = ed_pem.splitlines()[1]
        k(
            "openssl-ed25519-pkcs8",
            "helm values",
            f"tls:\n  key: |\n    {ed_pem.replace(chr(10), chr(10) + '    ').rstrip()}\n  cert: tls.crt",
            ed_body,
        )
        tls_b64 = _b64(rsa)
        k("k8s-tls-secret-base64", "kubernetes secret",
          f"apiVersion: v1\nkind: Secret\ntype: kubernetes.io/tls\nmetadata:\n  name: api-tls\ndata:\n  tls.crt: LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCk1JSUM=\n  tls.key: {tls_b64}",
          tls_b64[400:480])  # fmt: skip
        for algo in ("ed25519", "ecdsa"):
            path = Path(tmp) / f"id_{algo}"
            _run(["ssh-keygen", "-q", "-t", algo, "-N", "", "-C", "dana@laptop", "-f", str(path)])
            block = path.read_text()
            k(
                f"ssh-{algo}-openssh",
                "cat ~/.ssh key",
                f"$ cat ~/.ssh/id_{algo}\n{block}",
                middle_line(block),
            )
        path = Path(tmp) / "id_rsa_pem"
        _run(
            ["ssh-keygen", "-q", "-t", "rsa", "-b", "2048", "-m", "PEM", "-N", "", "-f", str(path)]
        )
        block = path.read_text()
        k("ssh-rsa-pem", "github actions secret",
          "- name: deploy key\n  run: |\n    mkdir -p ~/.ssh\n    cat > ~/.ssh/id_rsa <<'EOF'\n"
          + "".join("    " + ln + "\n" for ln in block.splitlines()) + "    EOF",
          middle_line(block))  # fmt: skip
        home = Path(tmp) / "gnupg"
        home.mkdir(mode=0o700)
        _run(["gpg", "--homedir", str(home), "--batch", "--pinentry-mode", "loopback",
              "--passphrase", "", "--quick-gen-key", "Release Bot <release@acme.io>", "ed25519", "sign", "1y"])  # fmt: skip
        armored = _run(["gpg", "--homedir", str(home), "--batch", "--pinentry-mode", "loopback",
                        "--passphrase", "", "--armor", "--export-secret-keys"]).decode()  # fmt: skip
        k(
            "gpg-secret-armored",
            "gpg export",
            f"$ gpg --armor --export-secret-keys release@acme.io\n{armored}",
            middle_line(armored),
        )
        gpg_pub = _run(["gpg", "--homedir", str(home), "--armor", "--export"]).decode()
        x_der = _run(["openssl", "genpkey", "-algorithm", "X25519", "-outform", "DER"])
        wg_priv = base64.b64encode(x_der[-32:]).decode()
        wg_pub = base64.b64encode(
            _run(["openssl", "pkey", "-inform", "DER", "-pubout", "-outform", "DER"], x_der)[-32:]
        ).decode()
        k("wireguard-private", "wg0.conf",
          f"[Interface]\nAddress = 10.8.0.2/24\nPrivateKey = {wg_priv}\nDNS = 1.1.1.1\n\n[Peer]\nPublicKey = {wg_pub}\nEndpoint = vpn.acme.io:51820\nAllowedIPs = 0.0.0.0/0",
          wg_priv)  # fmt: skip
        x2 = _run(["openssl", "genpkey", "-algorithm", "X25519", "-outform", "DER"])
        wg2 = base64.b64encode(x2[-32:]).decode()
        k(
            "wireguard-showconf",
            "wg showconf",
            f"$ sudo wg showconf wg0\n[Interface]\nListenPort = 51820\nPrivateKey = {wg2}",
            wg2,
        )
        ed_der = _run(["openssl", "genpkey", "-algorithm", "ed25519", "-outform", "DER"])
        ed_pub = _run(["openssl", "pkey", "-inform", "DER", "-pubout", "-outform", "DER"], ed_der)[
            -32:
        ]
        d = b64url(ed_der[-32:])
        k("jwk-okp-private", "jwks file",
          json.dumps({"keys": [{"kty": "OKP", "crv": "Ed25519", "kid": r(HEX, 16), "x": b64url(ed_pub), "d": d}]}, indent=2), d)  # fmt: skip
    age = bech32_encode("age-secret-key-", rng.randbytes(32)).upper()
    k("age-keys-txt", "keys.txt",
      f"# created: 2026-11-27T21:10:02Z\n# public key: {bech32_encode('age', rng.randbytes(32))}\n{age}", age)  # fmt: skip
    # minisign: "Ed" + kdf "Sc" + checksum "B2" + salt, ops/mem limits, key id, secret key, checksum
    mini = base64.b64encode(
        b"EdScB2"
        + rng.randbytes(32 + 16)
        + rng.randbytes(8)
        + rng.randbytes(64)
        + rng.randbytes(32)
    ).decode()
    k(
        "minisign-secret",
        "minisign.key",
        f"untrusted comment: minisign encrypted secret key\n{mini}",
        mini,
    )
    sig = base64.b64encode(b"EdBK" + b"\0\0\0\x2a" + rng.randbytes(16 + 8 + 8 + 64)).decode()
    k("signify-secret", "signify .sec", f"untrusted comment: signify secret key\n{sig}", sig)
    nsec = bech32_encode("nsec", rng.randbytes(32))
    k(
        "nostr-nsec",
        "prompt",
        f"here's my nostr key for the bot account: {nsec} (npub is on the website)",
        nsec,
    )
    wif = base58check(b"\x80" + rng.randbytes(32) + b"\x01")
    k("bitcoin-wif", "bitcoin-cli", f'$ bitcoin-cli importprivkey {wif} "cold-storage" false', wif)
    eth = r(HEX, 64)
    k(
        "ethereum-private",
        ".env",
        f"RPC_URL=https://eth-mainnet.g.alchemy.com/v2/demo\nDEPLOYER_PRIVATE_KEY=0x{eth}\nCHAIN_ID=1",
        eth,
    )
    sol = json.dumps(list(rng.randbytes(64)))
    k("solana-keypair", "cat keypair.json", f"$ cat ~/.config/solana/id.json\n{sol}", sol[1:120])
    words = " ".join(rng.choice(BIP39_HEAD) for _ in range(12))
    k("bip39-mnemonic", "config", f'wallet:\n  network: testnet\n  mnemonic: "{words}"', words)
    ppk = base64.b64encode(rng.randbytes(48)).decode()
    k("putty-ppk", "cat .ppk",
      f"PuTTY-User-Key-File-3: ssh-ed25519\nEncryption: none\nComment: ed25519-key-20261127\nPublic-Lines: 2\n"
      f"AAAAC3NzaC1lZDI1NTE5AAAAI{r(B64, 43)}\n{r(B64, 8)}\nPrivate-Lines: 1\n{ppk}\nPrivate-MAC: {r(HEX, 64)}",
      ppk)  # fmt: skip
    global GPG_PUBLIC
    GPG_PUBLIC = gpg_pub


GPG_PUBLIC = ""


# --------------------------------------------------------------------------------------------
# Public sources


def _commit(folder: Path) -> str:
    return (folder / ".commit").read_text().strip()[:12]


def gosec_cases(root: Path) -> None:
    source = f"securego/gosec@{_commit(root)}:testutils/g101_samples.go"
    text = (root / "testutils" / "g101_samples.go").read_text()
    samples = re.findall(r"\{\[\]string\{`(.*?)`\}, (\d+), gosec\.NewConfig\(\)\}", text, re.S)
    parsed = []
    for code, count in samples:
        literals = []
        for line in code.splitlines():
            if re.match(r"\s*(import|package)\b", line) or "fmt.Print" in line:
                continue
            literals += re.findall(r'"([^"\n]{4,})"', line)
        value = max(literals, key=len) if literals else None
        if value and value.startswith("Bearer: "):
            value = value[len("Bearer: ") :]
        if value and "://" in value and "@" in value:
            value = value.split("://", 1)[1].split("@", 1)[0].split(":", 1)[1]
        flagged = int(count) > 0 or bool(re.search(r"#nosec|gosec:disable", code))
        parsed.append((code.strip(), flagged, value))
    secret_values = {
        v for _, flagged, v in parsed if flagged and v and public_value_class(v) == "secret"
    }
    seen = set()
    for i, (code, flagged, value) in enumerate(parsed):
        if code in seen:
            continue
        seen.add(code)
        kind = f"gosec-g101-{i:02d}"
        if flagged and value and public_value_class(value) == "secret":
            add("secret", kind, source, "Apache-2.0", "go source", code, value, "gosec G101")
        elif flagged or (value and (value in secret_values or value.lower() in COMMON_PASSWORDS)):
            add("negative", kind, source, "Apache-2.0", "go source", code, rule="gosec G101")
        else:
            add("ordinary", kind, source, "Apache-2.0", "go source", code, rule="gosec G101")


def bandit_cases(root: Path) -> None:
    source = f"PyCQA/bandit@{_commit(root)}:examples/hardcoded-passwords.py"
    text = (root / "examples" / "hardcoded-passwords.py").read_text()
    for i, block in enumerate(re.split(r"\n\s*\n", text)):
        flagged = re.search(r"# Possible hardcoded password: '(.*)'", block)
        code = "\n".join(ln for ln in block.splitlines() if not ln.strip().startswith("#")).strip()
        if not code:
            continue
        kind = f"bandit-b10x-{i:02d}"
        value = flagged.group(1) if flagged else ""
        if value and public_value_class(value) == "secret":
            add(
                "secret",
                kind,
                source,
                "Apache-2.0",
                "python source",
                code,
                value,
                "bandit B105-B107",
            )
        elif value:
            add(
                "negative",
                kind,
                source,
                "Apache-2.0",
                "python source",
                code,
                rule="bandit B105-B107",
            )
        else:
            add(
                "ordinary",
                kind,
                source,
                "Apache-2.0",
                "python source",
                code,
                rule="bandit B105-B107",
            )


# github/codeql's statements (MIT), copied as they are: (flagged by the query?, statement).
CODEQL_JS_LINES = [
    (True, "    password: 'hgfedcba',  // $ Alert"),
    (True, "    basicAuth({users: { 'admin': 'hgfedcba' }});  // $ Alert"),
    (
        True,
        "    AWS.config.update({ accessKeyId: 'username', secretAccessKey: 'hgfedcba'}); // $ Alert",
    ),
    (True, "    digitalocean.client('TOKEN'); // $ Alert"),
    (True, '    require("cookie-session")({ secret: "hgfedcba" }); // $ Alert'),
    (True, '\trequire("cookie-session")({ secret: "oiuneawrgiyubaegr" }); // $ Alert'),
    (True, "\trequire('crypto').createHmac('sha256', 'oiuneawrgiyubaegr'); // $ Alert"),
    (True, "    const PASS = 'sdsdag'; // $ Alert"),
    (True, '    headers.append("Authorization", `Basic sdsdag:aaaiuogrweuibgbbbbb`); // $ Alert'),
    (True, "    require('crypto').createHmac('sha256', 'iubfewiaaweiybgaeuybgera'); // $ Alert"),
    (True, '    var privateKey = "myHardCodedPrivateKey"; // $ Alert'),
    (
        True,
        '    const ec2 = new AWS.EC2({accessKeyId: "AccessID1", secretAccessKey: "NotSoSecretKey1"}); // $ Alert',
    ),
    (False, '    headers.append("Authorization", `Basic sdsdag:xxxxxxxxxxxxxx`);'),
    (False, '    headers.append("Authorization", `Basic sdsdag:000000000000001`);'),
    (False, '    require("http").request({auth: "user:mypassword"})'),
    (False, "    basicAuth({users: { [adminName]: 'change_me' }});"),
    (False, "    require('crypto').createHmac('sha256', 'SampleToken');"),
    (False, '    require("http").request({auth: "user:{{ INSERT_HERE }}"});'),
    (False, '    require("http").request({auth: "user:{{ env.access_token }}"});'),
    (
        False,
        "    MsRest.loginWithUsernamePassword(process.env.AZURE_USER, process.env.AZURE_PASS, function(){});",
    ),
    (False, "    digitalocean.client(process.env.DIGITAL_OCEAN_TOKEN);"),
    (False, "    const password = config.get('some_actually_secrect_password');"),
    (
        False,
        "            \"Authorization\": `${foo ? 'Bearer' : 'OAuth'} ${accessToken}`, // OK - just a protocol selector",
    ),
    (
        False,
        "        Authorization: 'Basic ' + Buffer.from(username + ':' + password).toString('base64'), // $ Sink",
    ),
    (
        False,
        "    pkgcloud.compute.createClient({\n        username: process.env.USERNAME,\n        password: process.env.PASSWORD\n    });",
    ),
]
CODEQL_JAVA_LINES = [
    (True, '\tprivate final String clientSecret = "1n1.qAc~3Q-1t38aF79Xzv5AUEfR5-ct3_";'),
    (False, '\t\t.password(System.getenv("mySuperSecurePass"))'),
    (False, '\t\t.clientSecret(System.getenv("myClientSecret"))'),
]


def codeql_cases() -> None:
    for source, lines, lang in (
        (CODEQL_JS, CODEQL_JS_LINES, "javascript"),
        (CODEQL_JAVA, CODEQL_JAVA_LINES, "java"),
    ):
        for i, (flagged, line) in enumerate(lines):
            bare = re.sub(r"""require\(['"][^'"]+['"]\)""", "", line)
            values = re.findall(r"""['"`](?:Basic \w+:)?([^'"`]{4,})['"`]""", bare)
            values = [
                v
                for v in values
                if v not in ("sha256", "username", "AccessID1", "admin", "base64", "Basic ")
            ]
            value = max(values, key=len) if values else ""
            kind = f"codeql-{lang}-{i:02d}"
            placeholder = bool(re.search(r"\{\{|process\.env|getenv|config\.get|\$\{", line))
            if flagged and value and public_value_class(value) == "secret":
                add(
                    "secret",
                    kind,
                    source,
                    "MIT",
                    f"{lang} source",
                    line.strip(),
                    value,
                    "codeql hardcoded credentials",
                )
            elif flagged or (value and not placeholder):
                add(
                    "negative",
                    kind,
                    source,
                    "MIT",
                    f"{lang} source",
                    line.strip(),
                    rule="codeql hardcoded credentials",
                )
            else:
                add(
                    "ordinary",
                    kind,
                    source,
                    "MIT",
                    f"{lang} source",
                    line.strip(),
                    rule="codeql hardcoded credentials",
                )


# --------------------------------------------------------------------------------------------
# Ordinary strings from real material, and placeholders

_SECRET_NAME = r"(?i)(pass(word|wd|phrase)?|pwd|secret|token|api[_-]?key|apikey|auth|credential|private[_-]?key|access[_-]?key)"
_SECRET_LOOK = re.compile(
    _SECRET_NAME
    + r"[\w.-]*[\"']?\s*(=|:|=>|\s)\s*[\"'`]?(?![$<{%*\[(]|os\.|process\.|env|ENV|None|null|nil|true|false)[^\s\"'`,;)]{6,}"
    r"|://[^/\s:@]+:[^@\s/]+@|PRIVATE KEY|\b(gh[pousr]_|github_pat_|glpat-|sk-|xox[abpe]|AKIA|ASIA|AIza|ya29\.|hf_|npm_|pypi-)"
)


def looks_secret(line: str) -> bool:
    return bool(_SECRET_LOOK.search(line))


def sample(lines: list[str], n: int, *, minlen: int = 16, maxlen: int = 300) -> list[str]:
    seen: set[str] = set()
    pool = []
    for line in lines:
        line = line.rstrip()
        if minlen <= len(line.strip()) <= maxlen and not looks_secret(line) and line not in seen:
            seen.add(line)
            pool.append(line)
    picked = rng.sample(pool, min(n, len(pool)))
    return sorted(picked, key=pool.index)


def _sh(args: list[str], cwd: Path | None = None) -> list[str]:
    return _run(args, cwd=str(cwd) if cwd else None).decode(errors="replace").splitlines()


def real_cases(sources: Path) -> None:
    def real(kind: str, source: str, license_: str, context: str, lines: list[str]) -> None:
        for line in lines:
            add("ordinary", f"real-{kind}", source, license_, context, line)

    gosec, bandit, files = sources / "gosec", sources / "bandit", sources / "real"
    gs = f"securego/gosec@{_commit(gosec)}"
    bs = f"PyCQA/bandit@{_commit(bandit)}"
    real(
        "go-sum",
        f"{gs}:go.sum",
        "Apache-2.0",
        "go.sum",
        sample((gosec / "go.sum").read_text().splitlines(), 25),
    )
    go_lines = []
    for path in sorted((gosec / "rules").glob("*.go")) + sorted((gosec / "analyzers").glob("*.go")):
        go_lines += [
            ln for ln in path.read_text().splitlines()
            if re.search(r"(?i)pass|secret|token|cred|key", ln) and not ln.strip().startswith("//")
        ]  # fmt: skip
    real(
        "gosec-go-source",
        f"{gs}:rules/,analyzers/",
        "Apache-2.0",
        "go source",
        sample(go_lines, 30, minlen=20),
    )
    doc_lines = []
    for path in sorted((gosec).glob("*.md")):
        doc_lines += [
            ln
            for ln in path.read_text().splitlines()
            if re.search(r"(?i)pass|secret|token|credential|key", ln)
        ]
    real(
        "gosec-docs", f"{gs}:*.md", "Apache-2.0", "documentation", sample(doc_lines, 15, minlen=30)
    )
    rst = []
    for path in sorted((bandit / "doc" / "source" / "plugins").glob("*.rst")) + sorted(
        (bandit / "bandit" / "plugins").glob("*.py")
    ):
        rst += [
            ln
            for ln in path.read_text().splitlines()
            if re.search(r"(?i)pass|secret|token|key|credential", ln)
        ]
    real(
        "bandit-docs-and-plugins",
        f"{bs}:doc/source/plugins/,bandit/plugins/",
        "Apache-2.0",
        "documentation",
        sample(rst, 25, minlen=20),
    )
    lock = json.loads((files / "code-server-package-lock.json").read_text())
    lock_lines = []
    for meta in lock.get("packages", {}).values():
        if meta.get("integrity"):
            lock_lines.append(f'      "integrity": "{meta["integrity"]}",')
        if meta.get("resolved"):
            lock_lines.append(f'      "resolved": "{meta["resolved"]}",')
    real(
        "npm-lock",
        "code-server package-lock.json (MIT packages)",
        "real text",
        "package-lock.json",
        sample(lock_lines, 25),
    )
    js = (files / "ipaddr.min.js").read_text()
    real("minified-js", "ipaddr.js 2.x ipaddr.min.js", "MIT", "minified javascript",
         sample([js[i : i + 180] for i in range(0, len(js), 180)], 15, minlen=100))  # fmt: skip
    css = (files / "katex.min.css").read_text()
    real("minified-css", "KaTeX katex.min.css", "MIT", "minified css",
         sample([css[i : i + 180] for i in range(0, len(css), 180)], 15, minlen=100))  # fmt: skip
    pem = (files / "ISRG_Root_X1.pem").read_text()
    real(
        "certificate-pem",
        "ISRG Root X1 (public CA certificate)",
        "real text",
        "certificate",
        sample(pem.splitlines(), 12, minlen=60),
    )
    x509 = _sh(
        [
            "openssl",
            "x509",
            "-in",
            str(files / "ISRG_Root_X1.pem"),
            "-noout",
            "-text",
            "-fingerprint",
            "-sha256",
        ]
    )
    real(
        "x509-text",
        "openssl x509 -text of ISRG Root X1",
        "real output",
        "openssl output",
        sample(x509, 15, minlen=20),
    )
    log = _sh(["git", "log", "-n", "400", "--format=%H %s"], ROOT)
    real(
        "git-log-engram",
        "engram git log",
        "MIT (engram)",
        "git log",
        sample(log, 20, minlen=50, maxlen=200),
    )
    digests = _sh(["sha512sum", *sorted(str(p) for p in (gosec / "rules").glob("*.go"))[:6]])
    digests += _sh(
        ["sha384sum", *sorted(str(p) for p in (bandit / "bandit" / "plugins").glob("*.py"))[:6]]
    )
    digests = [d.replace(str(sources) + "/", "") for d in digests]
    real(
        "sha2-digests",
        "sha512sum/sha384sum of the sources' files",
        "real output",
        "checksum output",
        digests,
    )
    hashes = _sh(
        ["git", "hash-object", *sorted(str(p) for p in (gosec / "testutils").glob("*.go"))[:10]]
    )
    real("git-hash-object", "git hash-object of gosec's test files", "real output", "git output",
         [f"{h}  testutils/{Path(p).name}" for h, p in zip(hashes, sorted((gosec / "testutils").glob("*.go"))[:10], strict=False)])  # fmt: skip
    sri = []
    for path in sorted((bandit / "bandit" / "formatters").glob("*.py"))[:8]:
        digest = base64.b64encode(hashlib.sha384(path.read_bytes()).digest()).decode()
        sri.append(
            f'<script src="https://cdn.acme.io/{path.stem}.js" integrity="sha384-{digest}" crossorigin="anonymous"></script>'
        )
    real("sri-integrity", "SRI hashes of bandit's formatter files", "real output", "html", sri)
    images = []
    for path in sorted((gosec / "rules").glob("*.go"))[:10]:
        images.append(
            f"ghcr.io/securego/gosec@sha256:{hashlib.sha256(path.read_bytes()).hexdigest()}"
        )
    real(
        "image-digests",
        "sha256 of gosec's rule files written as image digests",
        "real output",
        "container image reference",
        images,
    )
    gz = base64.b64encode(zlib.compress((gosec / "LICENSE.txt").read_bytes(), 9)).decode()
    real(
        "base64-of-file",
        "base64 of zlib(gosec LICENSE.txt)",
        "real output",
        "base64 blob",
        [gz[i : i + 76] for i in range(0, 76 * 12, 76)],
    )


def public_key_cases() -> None:
    def o(kind: str, context: str, text: str) -> None:
        add("ordinary", f"pub-{kind}", MADE, "made here", context, text)

    with tempfile.TemporaryDirectory() as tmp:
        for algo in ("ed25519", "ecdsa", "rsa"):
            path = Path(tmp) / f"id_{algo}"
            _run(
                [
                    "ssh-keygen",
                    "-q",
                    "-t",
                    algo,
                    "-N",
                    "",
                    "-C",
                    f"dana@{algo}-laptop",
                    "-f",
                    str(path),
                ]
            )
            pub = (path.with_suffix(".pub")).read_text().strip()
            o(f"ssh-{algo}", "authorized_keys", f"$ cat ~/.ssh/authorized_keys\n{pub}")
            o(
                f"ssh-{algo}-fingerprint",
                "ssh-keygen -l",
                _run(["ssh-keygen", "-lf", str(path.with_suffix(".pub"))]).decode().strip(),
            )
            o(
                f"ssh-{algo}-known-hosts",
                "known_hosts",
                "git.acme.io,203.0.113.20 " + " ".join(pub.split()[:2]),
            )
        rsa = _run(["openssl", "genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048"])
        pub_pem = _run(["openssl", "pkey", "-pubout"], rsa).decode()
        o("rsa-public-pem", "public key file", pub_pem.strip())
        mod = _run(["openssl", "rsa", "-noout", "-modulus"], rsa).decode().strip().split("=")[1]
        n = b64url(bytes.fromhex(mod))
        o("jwks-rsa", "jwks_uri response",
          json.dumps({"keys": [{"kty": "RSA", "use": "sig", "alg": "RS256", "kid": r(HEX, 40), "n": n, "e": "AQAB"}]}))  # fmt: skip
        cert = _run(
            [
                "openssl",
                "req",
                "-x509",
                "-key",
                "/dev/stdin",
                "-subj",
                "/CN=api.acme.io",
                "-days",
                "30",
            ],
            rsa,
        ).decode()
        for i, line in enumerate(cert.splitlines()[3:9]):
            o(f"self-signed-cert-line{i}", "certificate", line)
        o(
            "cert-sha256-fingerprint",
            "openssl output",
            _run(["openssl", "x509", "-noout", "-fingerprint", "-sha256"], cert.encode())
            .decode()
            .strip(),
        )
        for i in range(3):
            x = _run(["openssl", "genpkey", "-algorithm", "X25519", "-outform", "DER"])
            pub = base64.b64encode(
                _run(["openssl", "pkey", "-inform", "DER", "-pubout", "-outform", "DER"], x)[-32:]
            ).decode()
            o(
                f"wireguard-peer-{i}",
                "wg0.conf",
                f"[Peer]\nPublicKey = {pub}\nAllowedIPs = 10.8.0.{i + 2}/32\nPersistentKeepalive = 25",
            )
    gpg_lines = [ln for ln in GPG_PUBLIC.splitlines() if len(ln) > 50]
    for i, line in enumerate(gpg_lines[:4]):
        o(f"gpg-public-line{i}", "gpg --export --armor", line)
    o(
        "age-recipient",
        "sops config",
        f"creation_rules:\n  - path_regex: secrets/.*\\.yaml$\n    age: {bech32_encode('age', rng.randbytes(32))}",
    )
    o("nostr-npub", "profile", f"find me on nostr: {bech32_encode('npub', rng.randbytes(32))}")
    address = base58check(bytes(1) + rng.randbytes(20))
    o("bitcoin-address", "invoice", f"Send 0.0042 BTC to {address} (memo: invoice 2026-114)")
    o("ethereum-address", "etherscan", f"Contract 0x{r(HEX, 40)} verified at block 21,304,118")


def made_ordinary_cases() -> None:
    """Strings that only look secret, written here in an agent's contexts (no value in them is a
    credential: identifiers, routes, selectors, public documents, ids and digests)."""

    def o(kind: str, context: str, text: str) -> None:
        add("ordinary", f"look-{kind}", MADE, "made here", context, text)

    oidc = {
        "issuer": "https://accounts.google.com",
        "authorization_endpoint": "https://accounts.google.com/o/oauth2/v2/auth",
        "token_endpoint": "https://oauth2.googleapis.com/token",
        "userinfo_endpoint": "https://openidconnect.googleapis.com/v1/userinfo",
        "revocation_endpoint": "https://oauth2.googleapis.com/revoke",
        "jwks_uri": "https://www.googleapis.com/oauth2/v3/certs",
        "response_types_supported": ["code", "token", "id_token", "code token", "code id_token", "token id_token", "code token id_token", "none"],
        "id_token_signing_alg_values_supported": ["RS256"],
        "token_endpoint_auth_methods_supported": ["client_secret_post", "client_secret_basic"],
        "code_challenge_methods_supported": ["plain", "S256"],
        "grant_types_supported": ["authorization_code", "refresh_token", "urn:ietf:params:oauth:grant-type:device_code", "urn:ietf:params:oauth:grant-type:jwt-bearer"],
    }  # fmt: skip
    o(
        "oidc-discovery",
        "curl output",
        "$ curl -s https://accounts.google.com/.well-known/openid-configuration | jq\n"
        + json.dumps(oidc, indent=2),
    )
    for key in (
        "token_endpoint",
        "token_endpoint_auth_methods_supported",
        "grant_types_supported",
        "revocation_endpoint",
    ):
        o(f"oidc-{key}", "json", f'  "{key}": {json.dumps(oidc[key])},')
    # request ids, etags, trace ids in curl -v and logs
    for i in range(8):
        o(f"curl-response-ids-{i}", "curl -v output",
          f"< HTTP/2 200\n< date: Fri, 27 Nov 2026 21:{10 + i}:03 GMT\n< content-type: application/json; charset=utf-8\n"
          f"< etag: W/\"{r(HEX, 40)}\"\n< x-request-id: {uid()}\n< x-github-request-id: {r(HEX.upper(), 4)}:{r(HEX.upper(), 5)}:{r(HEX.upper(), 7)}:{r(HEX.upper(), 7)}:{r(HEX.upper(), 8)}\n"
          f"< strict-transport-security: max-age=31536000; includeSubDomains; preload")  # fmt: skip
    for i in range(6):
        o(f"trace-log-{i}", "log line",
          f"2026-11-27T21:{20 + i}:44.{r(DIGITS, 3)}Z INFO  traceparent=00-{r(HEX, 32)}-{r(HEX, 16)}-01 span={r(HEX, 16)} route=/api/v1/tokens/refresh status=204")  # fmt: skip
    for i in range(6):
        o(f"k8s-metadata-{i}", "kubectl get -o yaml",
          f"metadata:\n  creationTimestamp: \"2026-11-2{i}T09:12:44Z\"\n  name: api-credentials\n  namespace: prod\n"
          f"  resourceVersion: \"{r(DIGITS, 8)}\"\n  uid: {uid()}\ntype: Opaque")  # fmt: skip
    o("kubectl-describe-secret", "kubectl describe",
      "Name:         api-credentials\nNamespace:    prod\nType:  Opaque\n\nData\n====\npassword:  24 bytes\ntoken:     40 bytes\napi-key:   64 bytes")  # fmt: skip
    o("docker-pull", "docker output",
      f"latest: Pulling from library/postgres\nDigest: sha256:{r(HEX, 64)}\nStatus: Downloaded newer image for postgres:16")  # fmt: skip
    o("git-log-oneline", "git log", "\n".join(f"{r(HEX, 7)} {m}" for m in (
        "Rotate the token cache key on logout", "Rename PasswordResetForm to ResetPasswordForm",
        "Add secret scanning to CI", "Fix api_key validation message", "Bump jsonwebtoken to 9.0.2")))  # fmt: skip
    urls = [
        "https://github.com/acme/api/compare/4f1c2a9e0b7d...9e3b5d7f1a2c?diff=split",
        "https://www.google.com/search?q=postgres+password+authentication+failed+for+user&oq=postgres+password",
        "https://docs.github.com/en/authentication/keeping-your-account-and-data-secure/managing-your-personal-access-tokens",
        "https://fonts.googleapis.com/css2?family=Inter:wght@400;600&display=swap",
        "https://example.com/reset-password?utm_source=newsletter&utm_medium=email&utm_campaign=nov26",
        "https://console.cloud.google.com/apis/credentials?project=acme-prod-31337",
        "https://stackoverflow.com/questions/1234567/how-to-store-api-keys-securely?answertab=votes#tab-top",
        "https://app.datadoghq.com/logs?query=service%3Aapi%20status%3Aerror&from_ts=1732700000000&to_ts=1732786400000",
        "https://github.com/acme/api/actions/runs/11987654321/job/33456789012?pr=412",
        "https://api.service.io/v1/tokens?page=2&per_page=50&sort=created_at&direction=desc",
        "https://portal.azure.com/#view/Microsoft_AAD_RegisteredApps/ApplicationMenuBlade/~/Credentials/appId/5b2f1c3e-9a7d-4e21-b0f4-2c6d8e1a9f03",
        "https://www.youtube.com/watch?v=dQw4w9WgXcQ&t=42s",
    ]  # fmt: skip
    for i, url in enumerate(urls):
        o(f"url-{i:02d}", "url", url)
    names = [
        ("identifier-go", "func (s *Server) handlePasswordReset(w http.ResponseWriter, r *http.Request) {"),
        ("identifier-ts", "export const selectAccessTokenExpiry = (state: RootState) => state.auth.tokenExpiresAt;"),
        ("identifier-py", "def rotate_api_key(self, key_id: str, *, grace_period_seconds: int = 3600) -> ApiKey:"),
        ("identifier-java", "private final PasswordEncoder passwordEncoder = new BCryptPasswordEncoder(12);"),
        ("identifier-rust", "pub fn verify_secret_hash(stored: &SecretHash, candidate: &[u8]) -> Result<bool, AuthError> {"),
        ("route-express", "router.post('/api/v1/users/:userId/reset-password', requireAuth, resetPassword);"),
        ("route-rails", "  resources :api_keys, only: [:index, :create, :destroy]"),
        ("route-openapi", "  /v1/oauth/token/introspect:\n    post:\n      operationId: introspectToken"),
        ("css-selector", ".login-form input[type=\"password\"]:focus-visible, .password-strength-meter > .bar { outline: 2px solid var(--accent); }"),
        ("css-class-names", "<div class=\"api-key-row secret-masked token-chip\" data-testid=\"api-key-row\">"),
        ("arn-managed-policy", "arn:aws:iam::aws:policy/SecretsManagerReadWrite"),
        ("arn-secret", "arn:aws:secretsmanager:eu-west-1:123456789012:secret:prod/api/db-AbCdEf"),
        ("redis-keys", "127.0.0.1:6379> KEYS session:token:*\n1) \"session:token:expiry:42\"\n2) \"session:token:user:42\""),
        ("env-names-only", "Required environment variables: DATABASE_URL, REDIS_URL, JWT_SECRET, STRIPE_WEBHOOK_SECRET, SENTRY_DSN"),
        ("sql-schema", "CREATE TABLE api_tokens (id BIGSERIAL PRIMARY KEY, token_hash BYTEA NOT NULL, last_used_at TIMESTAMPTZ);"),
        ("graphql-schema", "type Mutation {\n  createPersonalAccessToken(name: String!, scopes: [Scope!]!): TokenPayload!\n}"),
        ("i18n-keys", "\"auth.password.tooShort\": \"Password must be at least 12 characters\","),
        ("error-message", "psql: error: connection to server at \"db\" (10.0.3.7), port 5432 failed: FATAL:  password authentication failed for user \"app\""),
        ("ssh-log", "Nov 27 21:30:02 bastion sshd[2211]: Failed password for invalid user admin from 198.51.100.23 port 52144 ssh2"),
        ("git-secret-scanning-msg", "remote: error: GH013: Repository rule violations found for refs/heads/main.\nremote: - Push cannot contain secrets"),
        ("terraform-var-decl", "variable \"db_password\" {\n  type      = string\n  sensitive = true\n}"),
        ("helm-secret-template", "  password: {{ .Values.postgresql.auth.password | b64enc | quote }}"),
        ("crontab", "0 3 * * * /usr/local/bin/rotate-tokens --older-than 30d >> /var/log/rotate-tokens.log 2>&1"),
        ("package-names", "\"dependencies\": {\n  \"jsonwebtoken\": \"^9.0.2\",\n  \"passport-http-bearer\": \"^1.0.1\",\n  \"keytar\": \"^7.9.0\"\n}"),
        ("semver-hash-lock", "keyring==25.5.0 \\\n    --hash=sha256:" + r(HEX, 64)),
        ("timestamps-ids", "order_id=ord_" + r(DIGITS, 14) + " created=1732742400 amount=4200 currency=eur"),
        ("mac-ip", "link/ether 02:42:ac:11:00:02 brd ff:ff:ff:ff:ff:ff link-netnsid 0\ninet 172.17.0.2/16 brd 172.17.255.255"),
        ("uuid-list", "\n".join(uid() for _ in range(4))),
        ("jwt-header-doc", "A JWT has three parts: header.payload.signature, for example eyJhbGciOiJIUzI1NiJ9 is the header {\"alg\":\"HS256\"}."),
        ("hex-color-and-hash", "--brand-600: #4f46e5; /* build " + r(HEX, 12) + " */"),
    ]  # fmt: skip
    for kind, text in names:
        o(kind, "code or text", text)


def placeholder_cases() -> None:
    def p(kind: str, text: str) -> None:
        add("ordinary", f"placeholder-{kind}", MADE, "made here", "placeholder", text)

    items = [
        ("shell-angle", "export OPENROUTER_API_KEY=<your-openrouter-key>"),
        ("shell-var", "curl -H \"Authorization: Bearer $GROQ_API_KEY\" https://api.groq.com/openai/v1/models"),
        ("shell-subst", "export VAULT_TOKEN=$(vault login -token-only -method=oidc)"),
        ("shell-user-pass-vars", "curl -u \"$NEXUS_USER:$NEXUS_PASSWORD\" https://nexus.acme.io/service/rest/v1/status"),
        ("gha-secrets", "      env:\n        NPM_TOKEN: ${{ secrets.NPM_TOKEN }}\n        SENTRY_AUTH_TOKEN: ${{ secrets.SENTRY_AUTH_TOKEN }}"),
        ("gha-masked-log", "Run npm publish\n  npm publish --access public\n  env:\n    NODE_AUTH_TOKEN: ***"),
        ("k8s-secret-key-ref", "        env:\n          - name: DB_PASSWORD\n            valueFrom:\n              secretKeyRef:\n                name: db-credentials\n                key: password"),
        ("helm-values-ref", "  existingSecret: db-credentials\n  secretKeys:\n    adminPasswordKey: postgres-password"),
        ("terraform-var", "  password = var.db_password\n  token    = data.vault_generic_secret.api.data[\"token\"]"),
        ("ansible-vault-var", "ansible_become_password: \"{{ vault_become_password }}\""),
        ("dockerfile-arg", "ARG NPM_TOKEN\nRUN --mount=type=secret,id=npmrc,target=/root/.npmrc npm ci"),
        ("compose-required", "    environment:\n      POSTGRES_PASSWORD: ${POSTGRES_PASSWORD:?set it in .env}"),
        ("notebook-getenv", '  "api_key = os.environ[\\"PINECONE_API_KEY\\"]\\n",'),
        ("dotenv-example", "# .env.example\nSTRIPE_RESTRICTED_KEY=rk_live_...\nSTRIPE_WEBHOOK_SECRET=whsec_...\nLINEAR_API_KEY="),
        ("stars", "password: ********"),
        ("redacted-label", "DATABASE_URL=postgres://app:[REDACTED]@db:5432/app"),
        ("pip-masked", "Looking in indexes: https://ci:****@pypi.acme.io/simple/"),
        ("npm-protected", "; \"user\" config from /home/dev/.npmrc\n//npm.acme.io/:_authToken = (protected)"),
        ("op-reference", "DB_PASSWORD=op://Production/Postgres/password"),
        ("vault-reference", "spring.datasource.password=${vault:secret/data/shop#db_password}"),
        ("your-key-here", "const client = new Linear({ apiKey: 'YOUR_LINEAR_API_KEY_HERE' });"),
        ("x-filled", "HUGGING_FACE_HUB_TOKEN=hf_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"),
        ("ellipsis-token", "Your token starts with ghp_… and is shown only once."),
        ("windows-env", "sqlcmd -S sql01 -U sa -P %SQL_SA_PASSWORD% -Q \"SELECT 1\""),
        ("powershell-env", "$cred = New-Object PSCredential('svc', (ConvertTo-SecureString $env:SVC_PASSWORD -AsPlainText -Force))"),
        ("rails-env-fetch", "  password: <%= ENV.fetch(\"DATABASE_PASSWORD\") %>"),
        ("python-getenv", "client = Anthropic(api_key=os.getenv(\"ANTHROPIC_API_KEY\"))"),
        ("node-process-env", "const stripe = new Stripe(process.env.STRIPE_SECRET_KEY, { apiVersion: '2024-06-20' });"),
        ("go-getenv", "token := os.Getenv(\"DIGITALOCEAN_TOKEN\")"),
        ("java-getenv", "String pw = System.getenv(\"KEYSTORE_PASSWORD\");"),
        ("curl-v-masked", "> GET /v1/me HTTP/2\n> Host: api.service.io\n> Authorization: Bearer <redacted>"),
        ("env-dump-masked", "GITHUB_TOKEN=[MASKED]\nCI=true\nRUNNER_OS=Linux"),
        ("mysql-prompt", "mysql -u root -p\nEnter password:"),
        ("gh-secret-stdin", "gh secret set DEPLOY_KEY < ~/.ssh/deploy_ed25519"),
        ("kubectl-from-file", "kubectl create secret generic api-keys --from-env-file=.env.production"),
        ("docker-login-stdin", "echo \"$CR_PAT\" | docker login ghcr.io -u dana-lee --password-stdin"),
        ("mustache", "  smtp_auth_password: '{{ smtp_password }}'"),
        ("jinja-lookup", "db_password: \"{{ lookup('community.hashi_vault.hashi_vault', 'secret=secret/data/db:password') }}\""),
        ("azure-keyvault-ref", "\"value\": \"@Microsoft.KeyVault(SecretUri=https://acme-kv.vault.azure.net/secrets/DbPassword/)\""),
        ("sql-bind", "UPDATE users SET password_hash = %(password_hash)s WHERE id = %(user_id)s"),
        ("prompt-placeholder-en", "set SENDGRID_API_KEY to your own key before running the script, it isn't in the repo"),
        ("prompt-placeholder-fr", "mets ta propre clé API dans OPENAI_API_KEY, je ne l'ai pas commitée"),
        ("git-diff-placeholder", "-API_TOKEN=\n+API_TOKEN=<set-in-ci>"),
        ("systemd-credential", "[Service]\nLoadCredential=db-password:/etc/credstore/db-password\nExecStart=/opt/app/bin/api"),
        ("traceback-no-value", "  File \"/app/client.py\", line 12, in __init__\n    self.api_key = api_key or os.environ[\"SERVICE_API_KEY\"]\nKeyError: 'SERVICE_API_KEY'"),
    ]  # fmt: skip
    for kind, text in items:
        p(kind, text)


def negative_cases() -> None:
    def n(kind: str, text: str) -> None:
        add("negative", f"dummy-{kind}", MADE, "made here", "dummy or public-by-design value", text)

    items = [
        ("changeme-compose", "      POSTGRES_PASSWORD: changeme"),
        ("password123-env", "DB_PASSWORD=password123"),
        ("admin-admin", "default login: admin / admin"),
        ("stripe-publishable", "const stripe = Stripe('pk_live_51" + r(ALNUM, 97) + "');"),
        ("mapbox-public", "mapboxgl.accessToken = 'pk.eyJ1IjoiYWNtZS1tYXBzIiwiYSI6I" + r(B64URL, 30) + "." + r(B64URL, 22) + "';"),
        ("posthog-project", "posthog.init('phc_" + r(ALNUM, 43) + "', { api_host: 'https://eu.i.posthog.com' })"),
        ("firebase-web-config", "const firebaseConfig = {\n  apiKey: \"AIza" + r(B64URL, 35) + "\",\n  authDomain: \"acme-app.firebaseapp.com\",\n  projectId: \"acme-app\"\n};"),
        ("sentry-dsn", "Sentry.init({ dsn: \"https://" + r(HEX, 32) + "@o" + r(DIGITS, 6) + ".ingest.sentry.io/" + r(DIGITS, 7) + "\" });"),
        ("algolia-search-only", "const searchClient = algoliasearch('" + r(UPNUM, 10) + "', '" + r(HEX, 32) + "'); // search-only key"),
        ("letmein", "redis-cli -a letmein PING"),
    ]  # fmt: skip
    for kind, text in items:
        n(kind, text)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sources", type=Path, required=True)
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    token_cases()
    command_cases()
    config_cases()
    code_cases()
    prompt_cases()
    output_cases()
    key_cases()
    gosec_cases(args.sources / "gosec")
    bandit_cases(args.sources / "bandit")
    codeql_cases()
    real_cases(args.sources)
    public_key_cases()
    made_ordinary_cases()
    placeholder_cases()
    negative_cases()
    # No ordinary string may hold one of the corpus' own secrets; no text twice.
    secrets = {
        row["secret"] for row in rows if row["type"] == "secret" and len(row["secret"]) >= 12
    }
    seen: set[tuple[str, str]] = set()
    kept = []
    for row in rows:
        key = (row["type"], row["text"])
        if key in seen:
            continue
        if row["type"] == "ordinary" and any(s in row["text"] for s in secrets):
            continue
        seen.add(key)
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
