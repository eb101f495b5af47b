"""Corpora for the redaction tests: real-format secrets, and ordinary text that must survive.

`secrets()`: one or more secrets of each kind engram must redact. The formats are those of
public secret scanners' rules and test vectors (gitleaks `cmd/generate/config/rules`,
trufflehog `pkg/detectors`, detect-secrets `tests/plugins`): each value is generated at run time
from its format (seeded, so a failure is reproducible), and embedded in text the way it turns
up in a coding session (an export line, a config file, a JSON payload, a command). Nothing here
is a live credential, and no value is written out literally, so scanners do not flag the file.

`ORDINARY`: strings from coding sessions that look a bit like secrets (names with token or
secret in them, hashes, ids, version ranges, base64 test data, public keys) and must come out
unchanged. Some are gitleaks' own false-positive vectors (MIT licence, gitleaks authors).
"""

from __future__ import annotations

import base64
import json
import random
import string
from typing import NamedTuple


class Secret(NamedTuple):
    kind: str
    text: str  # as it would appear in a prompt, a tool's output or a file
    secret: str  # the part that must never be stored
    label: str  # the `[REDACTED:<label>]` it must become


_rng = random.Random(20261123)

ALNUM = string.ascii_letters + string.digits
UPPER_NUM = string.ascii_uppercase + string.digits
LOWER_NUM = string.ascii_lowercase + string.digits
HEX = "0123456789abcdef"
B64 = ALNUM + "+/"
URLSAFE = ALNUM + "_-"
BECH32 = "QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L"
BASE32 = string.ascii_uppercase + "234567"


def r(alphabet: str, n: int) -> str:
    """`n` random characters of `alphabet`, with at least one digit and one letter when the
    alphabet has both (as a generated key has; a value of one class only reads as a word)."""
    while True:
        value = "".join(_rng.choice(alphabet) for _ in range(n))
        has_digit = any(c.isdigit() for c in alphabet)
        has_alpha = any(c.isalpha() for c in alphabet)
        if n < 8 or (
            (not has_digit or any(c.isdigit() for c in value))
            and (not has_alpha or any(c.isalpha() for c in value))
        ):
            return value


def _b64url(obj: dict[str, object]) -> str:
    return base64.urlsafe_b64encode(json.dumps(obj).encode()).decode().rstrip("=")


def _jwt() -> str:
    return (
        _b64url({"alg": "HS256", "typ": "JWT"})
        + "."
        + _b64url({"sub": r(string.digits, 10), "name": "x"})
        + "."
        + r(URLSAFE, 43)
    )


def _discord() -> str:
    # base64 of the bot's numeric id, a timestamp part, an HMAC part.
    user_id = base64.b64encode(str(_rng.randrange(10**17, 10**18)).encode()).decode().rstrip("=")
    return user_id + "." + r(URLSAFE, 6) + "." + r(URLSAFE, 38)


def _pem(kind: str, lines: int, end: bool = True) -> tuple[str, str]:
    body = "\n".join(r(B64, 64) for _ in range(lines))
    begin = f"-----BEGIN {kind}PRIVATE KEY-----"
    block = begin + "\n" + body + ("\n" + begin.replace("BEGIN", "END") if end else "")
    return block, body.splitlines()[lines // 2]


def secrets() -> list[Secret]:
    out: list[Secret] = []

    def add(kind: str, text: str, secret: str, label: str) -> None:
        assert secret in text, kind
        out.append(Secret(kind, text, secret, label))

    # --- Tokens recognisable by their format ------------------------------------------------
    v = "AKIA" + r(BASE32, 16)
    add("aws-access-key-id", f"export AWS_ACCESS_KEY_ID={v}", v, "aws-access-key")
    v = "ASIA" + r(BASE32, 16)
    add("aws-sts-key-id", f'"AccessKeyId": "{v}",', v, "aws-access-key")
    v = "ABSK" + r(B64, 130) + "="
    add("aws-bedrock-api-key", f"AWS_BEARER_TOKEN_BEDROCK {v}", v[:60], "aws-bedrock-key")
    v = "ghp_" + r(ALNUM, 36)
    add("github-pat", f"git clone https://{v}@github.com/acme/app.git", v, "github-token")
    v = "gho_" + r(ALNUM, 36)
    add("github-oauth", f"oauth: {v}", v, "github-token")
    v = "ghs_" + r(ALNUM, 36)
    add("github-app-token", f"GH_APP_INSTALLATION={v}", v, "github-token")
    v = "github_pat_" + r(ALNUM, 22) + "_" + r(ALNUM, 59)
    add("github-fine-grained-pat", f"gh auth login --with-token <<< {v}", v, "github-token")
    v = "glpat-" + r(URLSAFE, 20)
    add("gitlab-pat", f"PRIVATE-TOKEN: {v}", v, "gitlab-token")
    v = "glrt-" + r(URLSAFE, 20)
    add("gitlab-runner-token", f'  token = "{v}"', v, "gitlab-token")
    v = "gldt-" + r(URLSAFE, 20)
    add("gitlab-deploy-token", f"docker login -p {v} registry.gitlab.com", v, "gitlab-token")
    v = "glft-" + r(URLSAFE, 20)
    add("gitlab-feed-token", f"feed url ?feed_token={v}", v, "gitlab-token")
    v = "xoxb-" + r(string.digits, 12) + "-" + r(string.digits, 13) + "-" + r(ALNUM, 24)
    add("slack-bot-token", f"SLACK_BOT_TOKEN={v}", v, "slack-token")
    v = "xoxp-" + "-".join(r(string.digits, 12) for _ in range(3)) + "-" + r(HEX, 32)
    add("slack-user-token", f"client = WebClient(token='{v}')", v, "slack-token")
    v = "xapp-1-A" + r(UPPER_NUM, 10) + "-" + r(string.digits, 13) + "-" + r(HEX, 64)
    add("slack-app-token", f"SLACK_APP_TOKEN: {v}", v, "slack-token")
    v = "T" + r(UPPER_NUM, 8) + "/B" + r(UPPER_NUM, 10) + "/" + r(ALNUM, 24)
    add(
        "slack-webhook",
        f"curl -X POST https://hooks.slack.com/services/{v} -d @msg.json",
        v,
        "slack-webhook",
    )
    v = "sk_live_" + r(ALNUM, 24)
    add("stripe-secret-key", f"stripe.api_key = '{v}'", v, "stripe-key")
    v = "rk_prod_" + r(ALNUM, 99)
    add("stripe-restricted-key", f"STRIPE_RK={v}", v, "stripe-key")
    v = "sk_test_" + r(ALNUM, 99)
    add("stripe-test-key", f'Stripe("{v}")', v, "stripe-key")
    v = "whsec_" + r(ALNUM, 32)
    add("stripe-webhook-secret", f"endpoint secret {v}", v, "stripe-key")
    v = "AIza" + r(URLSAFE, 35)
    add("google-api-key", f'<script src="maps.js?key={v}"></script>', v, "google-api-key")
    v = "ya29." + r(URLSAFE, 120)
    add("google-oauth-access-token", f"access_token ya29 {v}", v, "google-oauth")
    v = "GOCSPX-" + r(URLSAFE, 28)
    add("google-oauth-client-secret", f'"client_secret": "{v}"', v, "google-oauth")
    v = "1//0" + r(URLSAFE, 100)
    add("google-refresh-token", f"refresh {v}", v, "google-oauth")
    v = "sk-proj-" + r(URLSAFE, 74) + "T3BlbkFJ" + r(URLSAFE, 74)
    add("openai-project-key", f"OPENAI_API_KEY={v}", v, "openai-key")
    v = "sk-" + r(ALNUM, 20) + "T3BlbkFJ" + r(ALNUM, 20)
    add("openai-legacy-key", f'openai.api_key = "{v}"', v, "openai-key")
    v = "sk-ant-api03-" + r(URLSAFE, 93) + "AA"
    add("anthropic-api-key", f"use {v} for the eval", v, "anthropic-key")
    v = "sk-ant-admin01-" + r(URLSAFE, 93) + "AA"
    add("anthropic-admin-key", f"x-api-key: {v}", v, "anthropic-key")
    v = "hf_" + r(string.ascii_letters, 34)
    add("huggingface-token", f"huggingface-cli login --token {v}", v, "huggingface-token")
    v = "api_org_" + r(string.ascii_letters, 34)
    add("huggingface-org-token", f"HF_ORG={v}", v, "huggingface-token")
    v = "npm_" + r(ALNUM, 36)
    add("npm-token", f"//registry.npmjs.org/:_authToken={v}", v, "npm-token")
    v = "pypi-AgEIcHlwaS5vcmc" + r(URLSAFE, 70)
    add("pypi-token", f"twine upload -u __token__ -p {v}", v, "pypi-token")
    v = "SG." + r(URLSAFE, 22) + "." + r(URLSAFE, 43)
    add("sendgrid-key", f"SENDGRID_API_KEY='{v}'", v, "sendgrid-key")
    v = "SK" + r(HEX, 32)
    add("twilio-api-key", f"client = Client('{v}', api_secret)", v, "twilio-key")
    v = "key-" + r(HEX, 32)
    add("mailgun-key", f"auth=('api', '{v}')", v, "mailgun-key")
    v = "dop_v1_" + r(HEX, 64)
    add("digitalocean-pat", f"doctl auth init -t {v}", v, "digitalocean-token")
    v = "shpat_" + r("0123456789abcdefABCDEF", 32)
    add("shopify-access-token", f"X-Shopify-Access-Token: {v}", v, "shopify-token")
    v = r(string.digits, 10) + ":AA" + r(URLSAFE, 33)
    add("telegram-bot-token", f"https://api.telegram.org/bot{v}/getMe", v, "telegram-bot-token")
    v = "glc_" + r(B64, 120) + "=="
    add("grafana-cloud-token", f'GRAFANA_CLOUD_TOKEN="{v}"', v, "grafana-token")
    v = "glsa_" + r(ALNUM, 32) + "_" + r(HEX, 8)
    add("grafana-service-account-token", f"grafana token {v}", v, "grafana-token")
    v = "eyJrIjoi" + r(ALNUM, 80) + "="
    add("grafana-api-key", f"Grafana key: {v}", v, "grafana-token")
    v = _jwt()
    add("jwt", f"Cookie: session={v}", v.split(".")[2], "jwt")
    v = _discord()
    add("discord-bot-token", f"client.login('{v}')", v, "discord-bot-token")
    v = _discord()
    add("discord-bot-token-env", f"DISCORD_TOKEN={v}", v, "discord-bot-token")
    v = "lin_api_" + r(ALNUM, 40)
    add("linear-api-key", f"LINEAR_API_KEY: {v}", v, "linear-api-key")
    v = "pul-" + r(HEX, 40)
    add("pulumi-token", f"pulumi login --token {v}", v, "pulumi-token")
    v = "pplx-" + r(ALNUM, 48)
    add("perplexity-key", f"PPLX={v}", v, "perplexity-key")
    v = "AGE-SECRET-KEY-1" + r(BECH32, 58)
    add("age-secret-key", f"# created: 2026-01-02\n{v}", v, "age-secret-key")
    v = "ATATT3" + r(URLSAFE, 180) + "=" + r(HEX, 8)
    add("atlassian-api-token", f"jira token {v}", v, "atlassian-token")
    v = "NRAK-" + r(UPPER_NUM, 27)
    add("new-relic-user-key", f"NEW_RELIC_API_KEY={v}", v, "new-relic-key")
    v = "NRII-" + r(URLSAFE.replace("_", ""), 32)
    add("new-relic-insert-key", f"insert key {v}", v, "new-relic-key")
    v = "NRJS-" + r(HEX, 19)
    add("new-relic-browser-key", f"licenseKey:'{v}'", v, "new-relic-key")
    v = r(HEX, 32) + "-us" + str(_rng.randrange(1, 22))
    add("mailchimp-key", f"mailchimp.setConfig({{ apiKey: '{v}' }})", v, "mailchimp-key")
    v = "v1.0-" + r(HEX, 24) + "-" + r(HEX, 146)
    add("cloudflare-origin-ca-key", f"X-Auth-User-Service-Key: {v}", v, "cloudflare-origin-ca-key")
    v = r(ALNUM, 14) + ".atlasv1." + r(URLSAFE, 67)
    add(
        "terraform-cloud-token",
        f'credentials "app.terraform.io" {{ token = "{v}" }}',
        v,
        "terraform-token",
    )
    v = "dapi" + r(HEX, 32)
    add("databricks-token", f"DATABRICKS_TOKEN={v}", v, "databricks-token")
    v = "dp.pt." + r(ALNUM, 43)
    add("doppler-token", f"doppler configure set token {v}", v, "doppler-token")
    v = "dt0c01." + r(UPPER_NUM, 24) + "." + r(UPPER_NUM, 64)
    add("dynatrace-token", f"Api-Token {v}", v, "dynatrace-token")
    v = "hvs." + r(URLSAFE, 95)
    add("vault-token", f"VAULT_TOKEN={v}", v, "vault-token")
    v = "PMAK-" + r(HEX, 24) + "-" + r(HEX, 34)
    add("postman-key", f"x-api-key: {v}", v, "postman-key")
    v = "pnu_" + r(ALNUM, 36)
    add("prefect-key", f"prefect cloud login -k {v}", v, "prefect-key")
    v = "rdme_" + r(LOWER_NUM, 70)
    add("readme-key", f"rdme openapi --key={v}", v, "readme-key")
    v = "rubygems_" + r(HEX, 48)
    add("rubygems-key", f":rubygems_api_key: {v}", v, "rubygems-key")
    v = "xkeysib-" + r(HEX, 64) + "-" + r(ALNUM, 16)
    add("brevo-key", f"api-key: {v}", v, "brevo-key")
    v = "sntryu_" + r(HEX, 64)
    add("sentry-user-token", f"SENTRY_AUTH_TOKEN={v}", v, "sentry-token")
    v = "shippo_live_" + r(HEX, 40)
    add("shippo-token", f"ShippoToken {v}", v, "shippo-token")
    v = "EAAA" + r(URLSAFE, 60)
    add("square-access-token", f"square: {v}", v, "square-token")
    v = "sq0csp-" + r(URLSAFE, 43)
    add("square-oauth-secret", f"application secret {v}", v, "square-token")
    v = "EZAK" + r(ALNUM, 54)
    add("easypost-key", f"EasyPost::Client.new(api_key: '{v}')", v, "easypost-key")
    v = "FLWSECK_TEST-" + r(HEX, 32) + "-X"
    add("flutterwave-key", f"FLW_SECRET_KEY={v}", v, "flutterwave-key")
    v = "fio-u-" + r(URLSAFE, 64)
    add("frameio-token", f"frame.io {v}", v, "frameio-token")
    v = "duffel_test_" + r(URLSAFE, 43)
    add("duffel-token", f"Duffel(access_token='{v}')", v, "duffel-token")
    v = "ops_eyJ" + r(B64, 300) + "="
    add("1password-service-account", f"OP_SERVICE_ACCOUNT_TOKEN={v}", v[:80], "1password-token")
    v = "A3-" + "-".join((r(UPPER_NUM, 6), r(UPPER_NUM, 11), *[r(UPPER_NUM, 5) for _ in range(3)]))
    add("1password-secret-key", f"Secret Key {v}", v, "1password-token")
    v = "AKCp" + r(ALNUM, 69)
    add("artifactory-api-key", f"X-JFrog-Art-Api: {v}", v, "artifactory-token")
    v = "cmVmd" + r(ALNUM, 59)
    add("artifactory-reference-token", f"JFROG_REF={v}", v, "artifactory-token")
    v = "LTAI" + r(ALNUM, 20)
    add("alibaba-access-key-id", f"access_key_id: {v}", v, "alibaba-key")
    v = "ico-" + r(ALNUM, 32)
    add("infracost-key", f"INFRACOST_API_KEY={v}", v, "infracost-key")
    v = "ntn_" + r(string.digits, 11) + r(ALNUM, 35)
    add("notion-token", f"new Client({{ auth: '{v}' }})", v, "notion-token")
    v = "secret_" + r(ALNUM, 43)
    add("notion-legacy-token", f"NOTION_KEY {v}", v, "notion-token")
    v = "pscale_tkn_" + r(URLSAFE, 43)
    add("planetscale-token", f"pscale auth login --service-token {v}", v, "planetscale-token")
    v = "sgp_" + r(HEX, 16) + "_" + r(HEX, 40)
    add("sourcegraph-token", f"SRC_ACCESS_TOKEN={v}", v, "sourcegraph-token")
    v = "sha256~" + r(URLSAFE, 43)
    add(
        "openshift-token",
        f"oc login --token={v} --server=https://api.example:6443",
        v,
        "openshift-token",
    )
    v = "HRKU-AA" + r(URLSAFE, 58)
    add("heroku-key", f"HEROKU_API_KEY={v}", v, "heroku-key")
    v = "CLOJARS_" + r(LOWER_NUM, 60)
    add("clojars-token", f':password "{v}"', v, "clojars-token")
    v = "4b1d" + r(ALNUM, 38)
    add("clickhouse-key", f"clickhouse cloud key {v}", v, "clickhouse-key")
    v = "API-" + r(UPPER_NUM, 26)
    add("octopus-key", f"X-Octopus-ApiKey: {v}", v, "octopus-key")
    v = "tk-us-" + r(URLSAFE, 48)
    add("scalingo-token", f"scalingo login --api-token {v}", v, "scalingo-token")
    v = "sm_pat_" + r(ALNUM, 16)
    add("settlemint-token", f"SETTLEMINT_ACCESS_TOKEN={v}", v, "settlemint-token")
    v = r(ALNUM, 6) + "_" + r(ALNUM, 29) + "_mmk"
    add("maxmind-license-key", f"LicenseKey {v}", v, "maxmind-key")
    v = r(ALNUM, 3) + "8Q~" + r(ALNUM + "_~.-", 34)
    add(
        "azure-ad-client-secret",
        f"az login --service-principal -p {v}",
        v,
        "azure-ad-client-secret",
    )
    v = "EAAC" + r(ALNUM, 140)
    add("facebook-page-token", f"graph.facebook.com/me?access={v}", v, "facebook-token")
    v = "fo1_" + r(URLSAFE, 43)
    add("flyio-token", f"FLY_API_TOKEN={v}", v, "flyio-token")
    v = "pat" + r(ALNUM, 14) + "." + r(HEX, 64)
    add("airtable-pat", f"Airtable.configure({{ apiKey: '{v}' }})", v, "airtable-token")
    v = "pat." + r(URLSAFE, 22) + "." + r(ALNUM, 24) + "." + r(ALNUM, 20)
    add("harness-pat", f"x-api-key: {v}", v, "harness-token")
    v = "p8e-" + r(ALNUM, 32)
    add("adobe-client-secret", f"ADOBE_SECRET={v}", v, "adobe-client-secret")
    v = "s-s4t2ud-" + r(HEX, 64)
    add("intra42-secret", f"client secret {v}", v, "intra42-secret")
    v = "tfp_" + r(URLSAFE, 59)
    add("typeform-token", f"typeform {v}", v, "typeform-token")
    v = "AQVN" + r(URLSAFE, 36)
    add("yandex-api-key", f"Api-Key {v}", v, "yandex-key")
    v = "tskey-api-k" + r(ALNUM, 10) + "-" + r(ALNUM, 30)
    add("tailscale-key", f"TS_AUTHKEY={v}", v, "tailscale-key")
    v = "sbp_" + r(HEX, 40)
    add("supabase-token", f"supabase login --token {v}", v, "supabase-token")
    v = "r8_" + r(ALNUM, 37)
    add("replicate-token", f"REPLICATE_API_TOKEN={v}", v, "replicate-token")
    v = "gsk_" + r(ALNUM, 52)
    add("groq-key", f'Groq(api_key="{v}")', v, "groq-key")
    v = "xai-" + r(ALNUM, 80)
    add("xai-key", f"XAI_API_KEY={v}", v, "xai-key")
    v = "dckr_pat_" + r(URLSAFE, 27)
    add(
        "docker-hub-token", f"echo {v} | docker login -u me --password-stdin", v, "docker-hub-token"
    )
    v = "bkua_" + r(HEX, 40)
    add("buildkite-token", f"BUILDKITE_API_TOKEN={v}", v, "buildkite-token")
    v = f"pub-c-{r(HEX, 8)}-{r(HEX, 4)}-{r(HEX, 4)}-{r(HEX, 4)}-{r(HEX, 12)}"
    add("pubnub-publish-key", f"PUBNUB_PUBLISH={v}", v, "pubnub-key")
    v = "tkn.v1_" + r(ALNUM, 64) + "="
    add("teamwork-token", f"teamwork login {v}", v, "teamwork-token")
    # Formats of noseyparker's and gitleaks' rules added by the 2026-11-27 kind audit.
    v = "ATBB" + r(ALNUM, 32)
    add(
        "bitbucket-app-password",
        f"git push https://dev:{v}@bitbucket.org/a/b",
        v[4:],
        "bitbucket-token",
    )
    v = "da2-" + r(LOWER_NUM, 26)
    add("appsync-key", f'"x-api-key": "{v}"', v, "appsync-key")
    v = "hawk." + r(URLSAFE, 20) + "." + r(URLSAFE, 20)
    add("stackhawk-key", f"hawk init --api-key {v}", v, "stackhawk-key")
    v = f"px-api-{r(HEX, 8)}-{r(HEX, 4)}-{r(HEX, 4)}-{r(HEX, 4)}-{r(HEX, 12)}"
    add("newrelic-pixie-key", f"px auth login --api_key {v}", v, "newrelic-pixie-key")
    v = f"amzn.mws.{r(HEX, 8)}-{r(HEX, 4)}-{r(HEX, 4)}-{r(HEX, 4)}-{r(HEX, 12)}"
    add("amazon-mws-token", f"MWSAuthToken: {v}", v, "amazon-mws-token")
    v = "eyJ0eXAiOiAiVENWMiJ9." + r(URLSAFE, 36) + "." + r(URLSAFE, 48)
    add("teamcity-token", f"teamcity token {v}", v, "teamcity-token")
    v = "A" * 22 + r(ALNUM, 60) + "%3D" + r(ALNUM, 30)
    add("twitter-bearer-token", f"twitter api: {v}", v, "twitter-bearer-token")
    v = "t1." + r(URLSAFE, 12) + "." + r(URLSAFE, 86)
    add("yandex-iam-token", f"yc iam create-token -> {v}", v, "yandex-key")
    v = "dt0s01." + r(UPPER_NUM, 24) + "." + r(UPPER_NUM, 64)
    add("dynatrace-platform-token", f"export DT_PLATFORM={v}", v, "dynatrace-token")
    v = "hvs." + r(ALNUM, 24)
    add("vault-token-short", f"vault login {v}", v, "vault-token")
    v = "SG." + r(URLSAFE, 22) + "." + r(URLSAFE, 43)
    add("sendgrid-key-glued", f"oops\nsom{v}", v, "sendgrid-key")
    v = "tskey-api-" + r(ALNUM, 12) + "-" + r(ALNUM, 24)
    add("tailscale-key-glued", f"MY_{v}", v, "tailscale-key")
    v = str(_rng.randrange(10**8, 10**9)) + ":A" + r(URLSAFE, 34)
    add("telegram-bot-token-one-a", f"bot = Bot({v!r})", v, "telegram-bot-token")
    v = "xapp-1-A0" + r(UPPER_NUM, 9) + "-" + r(string.digits, 13) + "-" + r(HEX, 64)
    add("slack-app-token", f"SLACK_APP={v}", v, "slack-token")
    v = "ATMy" + r(URLSAFE, 22) + "." + r(URLSAFE, 6) + "." + r(URLSAFE, 38)
    add("discord-bot-token-any-capital", f"client.run('{v}')", v, "discord-bot-token")
    # A provider's name near a key-shaped value (the shape most rule-set kinds share).
    v = r(LOWER_NUM, 32)
    add("provider-name-lowercase-key", f"adafruit io: {v}", v, "secret")
    v = r(HEX, 40)
    add("provider-name-hex-key", f"wandb login {v}", v, "secret")
    v = f"{r(HEX, 8)}-{r(HEX, 4)}-{r(HEX, 4)}-{r(HEX, 4)}-{r(HEX, 12)}"
    add("provider-name-uuid-key", f"heroku: {v}", v, "secret")
    v = r(ALNUM, 28)
    add("provider-name-newline-key", f"visualcrossing\nKEY\n{v}\n", v, "secret")
    v = r(ALNUM, 30)
    add("provider-name-glued-key", f"zipcodeapiPRIVATE {v}", v, "secret")
    # Context: a URL's user that is a key, a 0x private key near a key word, Jenkins, Okta.
    user, pw = r(HEX, 8), r(HEX, 8)
    add("url-key-user", f"https://{user}:{pw}@gems.contribsys.com/", user, "secret")
    v = "0x" + r(HEX, 64)
    add(
        "hex-private-key",
        f"forgot this here {v}! don't send money to this wallet",
        v,
        "private-key",
    )
    v = r(HEX, 32)
    add(
        "jenkins-initial-password",
        f"Please use the following password to proceed to installation:\n\n{v}\n",
        v,
        "password",
    )
    v = "00" + r(URLSAFE, 40)
    add("okta-ssws-lowercase", f"ssws {v}", v, "okta-token")
    v = "$2b$12$" + r(ALNUM + "./", 53)
    add("bcrypt-password-hash", f"deploy:{v}:19000:0:99999:7:::", v, "password-hash")
    v = "sk.eyJ1" + r(URLSAFE, 60) + "." + r(URLSAFE, 22)
    add("mapbox-secret-token", f"MAPBOX_DOWNLOADS_TOKEN={v}", v, "mapbox-token")

    # --- Secrets known by their context ----------------------------------------------------
    block, line = _pem("RSA ", 8)
    add("rsa-private-key", f"key file:\n{block}\n", line, "private-key")
    block, line = _pem("OPENSSH ", 5)
    add("openssh-private-key", block, line, "private-key")
    block, line = _pem("EC ", 4, end=False)
    add("truncated-ec-private-key", f"cat id_ecdsa\n{block}", line, "private-key")
    block, line = _pem("", 6)
    add("pkcs8-private-key", json.dumps({"private_key": block}), line, "private-key")
    v = r(B64, 40)
    add("aws-secret-access-key", f"aws_secret_access_key = {v}", v, "aws-secret-key")
    v = r(B64, 86) + "=="
    add(
        "azure-storage-connection-string",
        f"DefaultEndpointsProtocol=https;AccountName=acme;AccountKey={v};EndpointSuffix=core.windows.net",
        v,
        "azure-key",
    )
    v = r(B64, 43) + "="
    add(
        "azure-service-bus-key",
        f"Endpoint=sb://acme.servicebus.windows.net/;SharedAccessKeyName=Root;SharedAccessKey={v}",
        v,
        "azure-key",
    )
    v = "Tr0ub4dor" + r(ALNUM, 8)
    add(
        "postgres-url-password",
        f"DATABASE_URL=postgres://admin:{v}@db.internal:5432/app",
        v,
        "password",
    )
    v = r(ALNUM, 16)
    add("redis-url-password", f"redis://:{v}@cache.internal:6379/0", v, "password")
    v = r(ALNUM + "!~", 14)
    add(
        "curl-user",
        f"curl -sw '%{{http_code}}' -X POST --user 'deploy:{v}' $API_URL",
        v,
        "password",
    )
    v = r(ALNUM, 16)
    add(
        "curl-user-continuation-line",
        f"curl -k -X POST https://infinispan:11222/rest \\\n  -d 'world' \\\n  -u developer:{v}",
        v,
        "password",
    )
    v = r(ALNUM, 14)
    add("mysql-password-flag", f"mysql -h db -u root -p{v} app < dump.sql", v, "password")
    v = r(ALNUM, 14)
    add("sshpass-password", f"sshpass -p '{v}' ssh deploy@host", v, "password")
    v = r(URLSAFE, 40)
    add("bearer-header", f"curl -H 'Authorization: Bearer {v}' https://api.example.com", v, "token")
    v = base64.b64encode(f"svc:{r(ALNUM, 20)}".encode()).decode()
    add("basic-auth-header", f'-H "Authorization: Basic {v}"', v, "token")
    v = (
        f"{r(HEX, 8)}-{r(HEX, 4)}-{r(HEX, 4)}-{r(HEX, 4)}-{r(HEX, 12)}@"
        f"{r(HEX, 8)}-{r(HEX, 4)}-{r(HEX, 4)}-{r(HEX, 4)}-{r(HEX, 12)}/IncomingWebhook/{r(HEX, 32)}/"
        f"{r(HEX, 8)}-{r(HEX, 4)}-{r(HEX, 4)}-{r(HEX, 4)}-{r(HEX, 12)}"
    )
    add(
        "teams-webhook",
        f"TEAMS_HOOK=https://acme.webhook.office.com/webhookb2/{v}",
        v,
        "teams-webhook",
    )

    # --- Values under secret names ------------------------------------------------------------
    v = "hunter2.hunter2"
    add("dotted-password", f"DB_PASSWORD={v}", v, "secret")
    v = r(B64, 42) + "=="
    add("api-token-base64-padding", f'api_token = "{v}"', v, "secret")
    v = r(B64, 86) + "=="
    add("azure-storage-account-key", f"AZURE_STORAGE_KEY={v}", v, "secret")
    v = r(ALNUM, 30)
    add("creds-assignment", f"creds = {v}", v, "secret")
    v = r(HEX, 64)
    add("credentials-json", f'"credentials" : "{v}"', v, "secret")
    v = r(ALNUM, 30)
    add("camelcase-secret", f'const secretKey = "{v}";', v, "secret")
    v = r(ALNUM, 30)
    add("my-secret-string", f"mySecretString={v}", v, "secret")
    v = "p@ss-" + r(ALNUM, 10)
    add("yaml-password", f"database:\n  password: {v}\n", v, "secret")
    v = r(ALNUM, 24)
    add("toml-token", f'[auth]\ntoken = "{v}"', v, "secret")
    v = r(ALNUM, 18)
    add("cli-password-flag", f"psql --password={v} -h db", v, "secret")
    v = r(ALNUM, 10) + "11"
    add("terraform-password", f'administrator_login_password = "{v}"', v, "secret")
    v = r(URLSAFE + ".=", 100)
    add("private-key-field", f"private-key: {v}", v, "secret")
    v = f"{r(HEX, 8)}-{r(HEX, 4)}-{r(HEX, 4)}-{r(HEX, 4)}-{r(HEX, 12)}"
    add("npm-legacy-auth-token", f"//registry.npmjs.org/:_authToken={v}", v, "secret")
    v = r(ALNUM, 20)
    add("php-array-secret", f"'client_secret' => '{v}',", v, "secret")
    v = r(ALNUM, 16)
    add("go-struct-password", f'cfg := Config{{Password: "{v}"}}', v, "secret")
    v = r(ALNUM, 32)
    add("docker-env-api-key", f"docker run -e API_KEY={v} app", v, "secret")
    v = r(ALNUM, 12)
    add("json-api-token", json.dumps({"api_token": v}), v, "secret")
    v = r(ALNUM, 40)
    add("high-entropy-signing-key", f"signing_key={v}", v, "secret")
    v = f"{r(HEX, 8)}-{r(HEX, 4)}-{r(HEX, 4)}-{r(HEX, 4)}-{r(HEX, 12)}"
    add("authorization-uuid", f"curl --header 'Authorization: {v}'", v, "secret")
    v = r(ALNUM, 14)
    add("pgpassword-env", f"PGPASSWORD={v} pg_dump app", v, "secret")
    # Formats found missing by the public corpus (tests/core/public_secret_corpus.jsonl).
    v = "aio_" + r(ALNUM, 28)
    add("adafruit-io-key", f'#define IO_KEY "{v}"', v, "adafruit-key")
    v = "oy2" + r(LOWER_NUM, 43)
    add("nuget-api-key", f"dotnet nuget push app.nupkg -k {v} -s nuget.org", v, "nuget-key")
    v = "cio" + r(ALNUM, 32)
    add("crates-io-token", f"cargo login {v}", v, "crates-io-token")
    v = "jina_" + r(ALNUM, 60)
    add("jina-api-key", f"jina auth {v}", v, "jina-key")
    v = "squ_" + r(HEX, 40)
    add(
        "sonarqube-user-token",
        f"sonar-scanner -Dsonar.host.url=https://sq.example {v}",
        v,
        "sonarqube-token",
    )
    v = "tvly-" + r(ALNUM, 32)
    add("tavily-api-key", f'TavilyClient("{v}")', v, "tavily-key")
    v = "odt_" + r(ALNUM, 32)
    add("dependency-track-key", f"X-Api-Key: {v}", v, "dependency-track-key")
    v = "CFPAT-" + r(URLSAFE, 43)
    add("contentful-pat", f"contentful login --management-token {v}", v, "contentful-token")
    v = "sl." + r(URLSAFE, 138)
    add("dropbox-short-lived-token", f"dbx = dropbox.Dropbox('{v}')", v, "dropbox-token")
    v = "sk_" + r(HEX, 48)
    add("elevenlabs-key", f"ElevenLabs({v})", v, "elevenlabs-key")
    v = r(ALNUM, 52) + "AZDO" + r(ALNUM, 28)
    add("azure-devops-pat", f"az devops login {v}", v, "azure-devops-token")
    v = r(string.digits, 18) + "/" + r(URLSAFE, 68)
    add(
        "discord-webhook",
        f"curl -X POST https://discord.com/api/webhooks/{v} -d @msg.json",
        v,
        "discord-webhook",
    )
    v = f"{r(HEX, 8)}-{r(HEX, 4)}-{r(HEX, 4)}-{r(HEX, 4)}-{r(HEX, 12)}@{r(HEX, 8)}-{r(HEX, 4)}-{r(HEX, 4)}-{r(HEX, 4)}-{r(HEX, 12)}/IncomingWebhook/{r(HEX, 32)}"
    add(
        "teams-webhook-legacy",
        f"webhookUrl: 'https://outlook.office.com/webhook/{v}'",
        v,
        "teams-webhook",
    )
    v = "figd_" + r(URLSAFE, 40)
    add(
        "figma-token", f"curl -H 'X-Figma-Token: {v}' https://api.figma.com/v1/me", v, "figma-token"
    )
    v = "phx_" + r(ALNUM, 43)
    add("posthog-personal-key", f"POSTHOG_PERSONAL_API_KEY {v}", v, "posthog-key")
    v = "mdb_sa_sk_" + r(URLSAFE, 40)
    add(
        "mongodb-atlas-sa-secret",
        f"atlas auth login --client-secret {v}",
        v,
        "mongodb-atlas-secret",
    )
    v = f"pat-na1-{r(HEX, 8)}-{r(HEX, 4)}-{r(HEX, 4)}-{r(HEX, 4)}-{r(HEX, 12)}"
    add(
        "hubspot-private-app-token",
        f"hubspot.Client.create(access_token='{v}')",
        v,
        "hubspot-token",
    )
    v = "VF.DM." + r(HEX, 24) + "." + r(ALNUM, 16)
    add("voiceflow-api-key", f"Authorization: {v}", v, "voiceflow-key")
    v = "BBFF-" + r(ALNUM, 30)
    add("ubidots-token", f"X-Auth-Token: {v}", v, "ubidots-token")
    v = "NF-" + r(ALNUM, 32)
    add("nightfall-key", f"NIGHTFALL_API_KEY {v}", v, "nightfall-key")
    uuid = "-".join(r(HEX, n) for n in (8, 4, 4, 4, 12))
    v = f"0.{uuid}.{r(ALNUM, 30)}:{r(B64, 22)}=="
    add("bitwarden-access-token", f"export BWS_ACCESS_TOKEN={v}", v, "bitwarden-access-token")
    return out


# Strings from coding sessions that must come out of redaction unchanged.
ORDINARY: list[str] = [
    # Names that describe a secret, values that count or reference one.
    "token_budget=budget",
    "UPDATE usage SET input_tokens = input_tokens + ?, output_tokens = output_tokens + ?",
    '"jsonwebtoken": "^9.0.0"',
    'secret_name = "prod/db/credentials"',
    "max_tokens=4096, temperature=0.2",
    'tokenizer = AutoTokenizer.from_pretrained("bert-base-uncased")',
    "password_hash = bcrypt.hashpw(password.encode(), salt)",
    "const apiKey = process.env.OPENAI_API_KEY;",
    "password: str = Field(..., min_length=12)",
    'headers = {"Authorization": f"Bearer {token}"}',
    "Authorization: Bearer ${API_TOKEN}",
    'token = request.headers.get("Authorization")',
    "SECRET_KEY = os.environ['DJANGO_SECRET_KEY']",
    "api_key: ${{ secrets.OPENAI_API_KEY }}",
    "tokens_used = response.usage.total_tokens",
    'token_type = "Bearer"',
    "password_min_length = 12",
    "secretary_id = 42",
    "refresh_token_expires_in: 2592000",
    'access_token_url="https://github.com/login/oauth/access_token",',
    'curl -u "$USER" https://api.example.com/v1/me',
    "key: 'Enter'",
    # From engram's own code and tests: token counts, placeholders in f-strings.
    "cache_creation_tokens=creation,",
    "sort_key = user_profile_cache_key",
    # From CPython's standard library (PSF licence): parser tokens, header names, messages.
    "self.token = nextchar",
    "TOKEN_ENDS = TSPECIALS | WSP",
    "Token = Ignore + PlainToken",
    'raise TypeError("pwd: expected bytes, got %s" % type(pwd).__name__)',
    'proxy_auth_hdr = "Proxy-Authorization"',
    "self.key = '_threading_local._localimpl.' + str(id(self))",
    '"compactMetadata": {"trigger": trigger, "preTokens": pre_tokens},',
    't.compaction("auto", pre_tokens=167000)',
    'curl -H "Authorization: Bearer {GITHUB_TOKEN}" https://api.github.com/user',
    'f"postgres://admin:{DB_PASSWORD}@db.local/app"',
    "git push https://x:${TOKEN}@github.com/acme/app.git",
    # gitleaks' false-positive vectors (MIT licence).
    '"accessor":"rA1wk0Y45YCufyfq",',
    "report_access_id: e8e4df51-2054-49b0-ab1c-516ac95c691d",
    "apiUrl=apigee.corpint.com",
    'author = "james.fake@ymail.com",',
    "credentialsId: '29f63271-dc2f-4734-8221-5b31b5169bac'",
    'public_key = "9Cnzj4p4WGeKLs1Pt8QuKUpRKfFLfRYC9AIKjbJTWit"',
    'publicToken = "9Cnzj4p4WGeKLs1Pt8QuKUpRKfFLfRYC9AIKjbJTWit"',
    "secret_length = X25519.secret_length",
    "key_length = XSalsa20.key_length",
    'LLM_SECRET_NAME = "NEXUS-GPT4-API-KEY"',
    'notes            = "Maven - io.jsonwebtoken:jjwt-jackson-0.11.2"',
    'clientId = "73082700-1f09-405b-80d0-3131bfd6272d"',
    'SRCREV_moby = "43fc912ef59a83054ea7f6706df4d53a7dea4d80"',
    'LIC_FILES_CHKSUM = "file://${WORKDIR}/license.html;md5=5c94767cedb5d6987c902ac850ded2c6"',
    # Hashes, ids, versions.
    "commit 3f9c2b8e1d4a5f6b7c8d9e0f1a2b3c4d5e6f7a8b (HEAD -> main, origin/main)",
    "da39a3ee5e6b4b0d3255bfef95601890afd80709  empty.txt",
    "image: postgres:16.2@sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
    '"session_id": "5f2c1d4e-9a3b-4c7d-8e6f-123456789abc"',
    '"integrity": "sha512-v2kDEe57lecTulaDIuNTPy3Ry4gLGJ6Z1O3vE1krgXZNrsQ+LFTGHVxVjcXPs17LhbZVGedAJv8XZ1tvj5FvSg=="',
    'resolved "https://registry.yarnpkg.com/lodash/-/lodash-4.17.21.tgz#679591c564c3bffaae8454cf0b3df370c3d6911c"',
    '"typescript": ">=5.0.0 <6"',
    "requests>=2.31,<3",
    '"react": "~18.2.0"',
    '"version": "1.0.0-beta.3+exp.sha.5114f85"',
    "pip install scikit-learn==1.4.2",
    "fingerprint: SHA256:uNiVztksCsDhcc0u9e8BujQXVUpKZIDTMczCvj3tD2s",
    "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGJ0d2Fyb0RXb3J0aEZha2VLZXlGb3JUZXN0cw dev@laptop",
    # Base64 in test data, URLs without credentials, commands, errors.
    'assert base64.b64encode(b"hello world") == b"aGVsbG8gd29ybGQ="',
    'data = base64.b64decode("SGVsbG8sIFdvcmxkIQ==")',
    "https://user@github.com/acme/app.git",
    "postgres://localhost:5432/app",
    "mongodb+srv://cluster0.example.mongodb.net/test?retryWrites=true",
    "docker run -p 8080:80 nginx:1.25-alpine",
    "pytest tests/test_auth.py::test_login_with_expired_token -q",
    'File "/home/dev/app/auth/tokens.py", line 42, in refresh_token',
    "ModuleNotFoundError: No module named 'jwt'",
    'git commit -m "fix: rotate expired token handling (#512)"',
    "task-runner-queue-worker-production-02",
    "return ObjectMapperConfiguration.getter.serializeWithDefaultPrettyPrinter();",
    "The tokenizer splits the word into three tokens before the secret sauce.",
    "ssh-keygen -t ed25519 -C dev@example.com",
    "mysql -u root -p app",
    # Near a provider's name but not a key: digests, ids, words, hex ids under a name.
    "stripe listen: commit 3f9c2b8e1d4a5f6b7c8d9e0f1a2b3c4d5e6f7a8b",
    'heroku releases: "id": "5f2c1d4e-9a3b-4c7d-8e6f-123456789abc"',
    '    "AWS::AppSync::Api": "6d38a4dc05f24601",',
    "'1st_linear', 'Bernoulli', '1st_power_series',",
    '"sonarqube-reporter-1.2.4.tgz#3b335d612137949d2f21fcc6c8c8164db7603227"',
    "slack notification sent for release-2024-11-27-build",
    # `0x` and 64 hex: a transaction hash, a storage slot.
    "tx hash 0x5c504ed432cb51138bcf09aa5e8a410dd4a1e204ef84bfed1be16dfba1b22060 (see wallet)",
    "bytes32 constant SLOT = 0x360894a13ba1a3210667c828492db98dca3e2076cc3735a920a3ca505d382bbc;",
]
