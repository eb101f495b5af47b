"""Build tests/core/public_secret_corpus_b.jsonl: a second corpus, from sources the first never used.

Run with checkouts of the sources (any Python with `regex`; not part of engram):

    python scripts/build_public_secret_corpus_b.py \
        --gitleaks ~/src/gitleaks --secretlint ~/src/secretlint --detect-secrets ~/src/detect-secrets

Secrets (each line names its source file and commit):
- gitleaks/gitleaks `cmd/generate/config/rules/*.go` (MIT): every rule's true positives. A
  literal one is kept as written; a sample secret given to `GenerateSampleSecrets` is put in
  one of gitleaks' own sample contexts and, when the rule finds it without its provider's
  name, also alone in a context with no secret word (a prompt, a command, a log line...), so
  that only its format can give it away. Values gitleaks
  generates at test time (`secrets.NewSecret(utils.AlphaNumeric("32"))`) are generated here
  from the same pattern. The secret is what the rule's pattern (`config/gitleaks.toml`)
  captures: its `secretGroup`, else its first non-empty group, else the whole match.
- secretlint/secretlint `packages/@secretlint/secretlint-rule-*/test/snapshots` (MIT): each
  snapshot's input with the ranges its expected output reports.
- Yelp/detect-secrets `tests/plugins/*_test.py` (Apache-2.0): the lines of each plugin's tests,
  the secret being what the plugin itself reports (run from the checkout).

Ordinary strings:
- strings written for this corpus from real material on the machine that builds it and from
  generated values, of the kinds that look secret and are not: git commit ids, lockfile
  integrity and hash lines, UUIDs and GUIDs, base64 of images, digests, ARNs, identifiers and
  code lines naming keys, tokens and passwords, URLs, CSS and minified JavaScript, docs prose,
  placeholders. Each line says how it was made.
- the scanners' negative examples are kept apart (`"type": "negative"`): gitleaks' rules' false
  positives, secretlint's snapshots with no finding, detect-secrets' test strings its plugins do
  not flag. Most of them are keys of the provider with one thing wrong (too short, wrong prefix,
  a placeholder body, an example key), which a redactor hiding does no harm; their figure is
  reported on its own, not as ordinary strings. (Decided before the first measurement.)

A third of the kinds is held out (`"split": "holdout"`) by a hash of the kind, salted so that it
is not the first corpus's third; its figures are measured, never looked at case by case.
"""

from __future__ import annotations

import argparse
import ast
import base64
import contextlib
import hashlib
import json
import random
import re
import string
import subprocess
import sys
import uuid
from pathlib import Path

import regex

OUT = Path(__file__).resolve().parents[1] / "tests" / "core" / "public_secret_corpus_b.jsonl"
RNG = random.Random(20261127)
SALT = "corpus-b/2026-11-27"
# Commit ids are taken from engram's own history up to a fixed commit, so the file rebuilds
# the same.
GIT_LOG_AT = "3bae3ac"


def split_of(kind: str) -> str:
    digest = hashlib.sha256(f"{SALT}:{kind}".encode()).hexdigest()
    return "holdout" if int(digest, 16) % 3 == 0 else "tune"


def commit_of(repo: Path) -> str:
    # A checkout, or an exported tree with the commit written in `.commit`.
    if (repo / ".commit").exists():
        return (repo / ".commit").read_text().strip()[:12]
    out = subprocess.run(
        ["git", "-C", str(repo), "rev-parse", "HEAD"], capture_output=True, text=True
    )
    return out.stdout.strip()[:12] or "unknown"


# Contexts for a bare token: no word in them names a secret, and none is the first corpus's.
BARE_CONTEXTS = (
    ("prompt", "why does the integration test fail when I pass {v} here?"),
    ("command", "python tools/sync.py --env staging {v}"),
    ("log", "[2026-05-11 09:12:44] client init ok: {v}"),
    ("yaml", "integration:\n  provider: acme\n  value: {v}\n"),
    ("tool-output", "$ cat .local/settings\n{v}\n"),
    ("markdown", "Paste this into the settings page: `{v}`"),
)

# gitleaks' sample contexts (cmd/generate/config/utils/generate.go), a rotating few of them.
SAMPLE_CONTEXTS = (
    '{i}Token="{s}"',
    "{i}Token = {s}",
    '{{\n    "{i}_token": "{s}"\n}}',
    "<{i}Token>\n    {s}\n</{i}Token>",
    "{i}_token: '{s}'",
    'string {i}Token = "{s}";',
    "{i}Token := `{s}`",
    '${i}Token .= "{s}"',
    'System.setProperty("{I}_TOKEN", "{s}")',
    '  "{i}Token" => "{s}"',
    '{I}_TOKEN ?= "{s}"',
)


def placeholder(secret: str) -> bool:
    """`AKCxxxxxxxxxx`, `0000...0aa`: a format's placeholder (x's, or one character for most of it),
    which the scanners' tests flag but a redactor should leave readable (rule added after the
    first measurement; it took N secrets out of each part, see docs/secrets.md)."""
    if "xxxxxx" in secret.lower():
        return True
    body = re.sub(r"[^A-Za-z0-9]", "", secret)
    return len(body) >= 8 and max(body.count(c) for c in set(body)) >= 0.7 * len(body)


def row(type_: str, kind: str, rule: str, source: str, context: str, text: str, secret: str = ""):
    # Secrets are held out by kind (a new provider is what a user meets); ordinary strings by
    # kind and text (their kinds are few, and each is a family of many different strings).
    out = {
        "type": type_,
        "split": split_of(kind if type_ == "secret" else f"{kind}:{text}"),
        "kind": kind,
        "rule": rule,
        "source": source,
        "context": context,
        "text": text,
    }
    if secret:
        out["secret"] = secret
        if placeholder(secret):
            out["type"] = "negative"  # a placeholder: not a secret, not counted as ordinary
    return out


# ---------------------------------------------------------------------------------------------
# gitleaks
# ---------------------------------------------------------------------------------------------

GO_TOKEN = re.compile(
    r"""(?P<ws>\s+)|(?P<comment>//[^\n]*|/\*.*?\*/)|(?P<raw>`[^`]*`)|(?P<str>"(?:[^"\\\n]|\\.)*")"""
    r"""|(?P<num>\d+)|(?P<ident>[A-Za-z_][A-Za-z0-9_.]*)|(?P<op>:=|\.\.\.|[^\sA-Za-z0-9_])""",
    re.DOTALL,
)


def go_tokens(source: str) -> list[tuple[str, str]]:
    out = []
    for m in GO_TOKEN.finditer(source):
        kind = m.lastgroup
        if kind in ("ws", "comment"):
            continue
        value = m.group()
        if kind == "raw":
            out.append(("str", value[1:-1]))
        elif kind == "str":
            out.append(
                ("str", json.loads(value) if "\\x" not in value else ast.literal_eval(value))
            )
        else:
            out.append((kind or "op", value))
    return out


PATTERNS = {
    "utils.Numeric": "[0-9]{%s}",
    "utils.Hex": "[a-f0-9]{%s}",
    "utils.AlphaNumeric": "[a-z0-9]{%s}",
    "utils.AlphaNumericExtendedShort": "[a-z0-9_-]{%s}",
    "utils.AlphaNumericExtended": r"[a-z0-9=_\-]{%s}",
    "utils.AlphaNumericExtendedLong": r"[a-z0-9\/=_\+\-]{%s}",
}


class Unsupported(Exception):
    pass


def generate(pattern: str) -> str:
    """A random string matching a simple pattern: literals, classes, {n}, {n,m}, +, *, ?."""
    out, i = [], 0
    while i < len(pattern):
        c = pattern[i]
        if c == "[":
            j = i + 1
            chars: list[str] = []
            while pattern[j] != "]":
                if pattern[j] == "\\":
                    chars.append(pattern[j + 1])
                    j += 2
                elif j + 2 < len(pattern) and pattern[j + 1] == "-" and pattern[j + 2] != "]":
                    chars.extend(chr(x) for x in range(ord(pattern[j]), ord(pattern[j + 2]) + 1))
                    j += 3
                else:
                    chars.append(pattern[j])
                    j += 1
            i = j + 1
            alphabet = "".join(chars)
        elif c == "\\":
            alphabet = {"d": string.digits, "w": string.ascii_letters + string.digits + "_"}.get(
                pattern[i + 1], pattern[i + 1]
            )
            i += 2
        elif c in "()|^$":
            raise Unsupported(pattern)
        else:
            alphabet = c
            i += 1
        low = high = 1
        if i < len(pattern) and pattern[i] == "{":
            j = pattern.index("}", i)
            spec = pattern[i + 1 : j]
            i = j + 1
            if "," in spec:
                a, b = spec.split(",")
                low, high = int(a), int(b or int(a) + 8)
            else:
                low = high = int(spec)
        elif i < len(pattern) and pattern[i] in "+*?":
            low, high = {"+": (1, 12), "*": (0, 12), "?": (0, 1)}[pattern[i]]
            i += 1
        out.append("".join(RNG.choice(alphabet) for _ in range(RNG.randint(low, high))))
    return "".join(out)


class GoExpr:
    """Evaluates the expressions gitleaks' rule files build their test values with."""

    def __init__(self, tokens: list[tuple[str, str]], at: int) -> None:
        self.t, self.i = tokens, at

    def peek(self, k: int = 0) -> tuple[str, str]:
        return self.t[self.i + k] if self.i + k < len(self.t) else ("eof", "")

    def take(self, value: str | None = None) -> tuple[str, str]:
        tok = self.peek()
        if value is not None and tok[1] != value:
            raise Unsupported(f"expected {value} got {tok}")
        self.i += 1
        return tok

    def expr(self):
        value = self.primary()
        while self.peek()[1] == "+":
            self.take()
            right = self.primary()
            if not isinstance(value, str) or not isinstance(right, str):
                raise Unsupported("+")
            value = value + right
        return value

    def args(self) -> list:
        self.take("(")
        out = []
        while self.peek()[1] != ")":
            out.append(self.expr())
            if self.peek()[1] == "...":
                self.take()
            if self.peek()[1] == ",":
                self.take()
        self.take(")")
        return out

    def primary(self):
        kind, value = self.take()
        if kind == "str":
            return value
        if kind == "num":
            return value
        if value == "[" and self.peek()[1] == "]":
            self.take("]")
            self.take()  # string
            self.take("{")
            items = []
            while self.peek()[1] != "}":
                try:
                    items.append(self.expr())
                except Unsupported:
                    self.skip_element()
                if self.peek()[1] == ",":
                    self.take()
            self.take("}")
            return items
        if kind == "ident":
            if self.peek()[1] != "(":
                if value == "tps":
                    return []
                raise Unsupported(value)
            start = self.i
            try:
                args = self.args()
            except Unsupported:
                self.i = start
                self.skip_parens()
                raise
            if value in PATTERNS:
                return PATTERNS[value] % args[0]
            if value == "utils.Hex8_4_4_4_12":
                return "[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
            if value == "secrets.NewSecret":
                return generate(args[0])
            if value == "fmt.Sprintf":
                return args[0].replace("%s", "{}").format(*args[1:])
            if value == "strings.Repeat":
                return args[0] * int(args[1])
            if value == "utils.GenerateSampleSecrets":
                return [("sample", args[0], args[1])]
            if value == "utils.GenerateSampleSecret":
                return [("sample", args[0], args[1])]
            if value == "append":
                out = []
                for a in args:
                    out.extend(a if isinstance(a, list) else [a])
                return out
        raise Unsupported(value)

    def skip_parens(self) -> None:
        depth = 0
        while True:
            _k, v = self.take()
            if v in "([{":
                depth += 1
            elif v in ")]}":
                depth -= 1
                if depth == 0:
                    return

    def skip_element(self) -> None:
        depth = 0
        while True:
            v = self.peek()[1]
            if depth == 0 and v in (",", "}"):
                return
            if v in "([{":
                depth += 1
            elif v in ")]}":
                depth -= 1
            self.take()


def gitleaks_rules(root: Path) -> dict[str, dict]:
    import tomllib

    config = tomllib.loads((root / "config" / "gitleaks.toml").read_text())
    return {r["id"]: r for r in config["rules"]}


def go_regex(pattern: str) -> regex.Pattern:
    # RE2 syntax that Python's `regex` reads differently.
    pattern = pattern.replace(r"\z", r"\Z")
    return regex.compile(pattern)


def secret_of(rule: dict, text: str) -> str | None:
    m = go_regex(rule["regex"]).search(text)
    if not m:
        return None
    group = rule.get("secretGroup", 0)
    if group:
        return m.group(group)
    for g in m.groups():
        if g:
            return g
    return m.group()


def from_gitleaks(root: Path) -> list[dict]:
    rules = gitleaks_rules(root)
    commit = commit_of(root)
    out: list[dict] = []
    for path in sorted((root / "cmd" / "generate" / "config" / "rules").glob("*.go")):
        if path.name.endswith("_test.go") or path.stem in ("generic", "rule", "config"):
            continue
        source = path.read_text()
        src = f"gitleaks/gitleaks@{commit}:cmd/generate/config/rules/{path.name}"
        for func in re.split(r"\nfunc ", source)[1:]:
            ids = re.findall(r'RuleID:\s*"([^"]+)"', func)
            if not ids or ids[0] not in rules:
                continue
            rule = rules[ids[0]]
            kind = path.stem
            tokens = go_tokens(func)
            tps: list = []
            fps: list = []
            for i, (k, v) in enumerate(tokens):
                if k != "ident" or v not in ("tps", "fps") or i + 1 >= len(tokens):
                    continue
                if tokens[i + 1][1] not in (":=", "="):
                    continue
                try:
                    value = GoExpr(tokens, i + 2).expr()
                except (Unsupported, IndexError, ValueError, KeyError):
                    continue
                items = value if isinstance(value, list) else [value]
                (tps if v == "tps" else fps).extend(items)
            seen = set()
            for n, tp in enumerate(tps):
                if isinstance(tp, tuple):
                    _s, ident, secret = tp
                    if not isinstance(secret, str) or secret in seen:
                        continue
                    seen.add(secret)
                    template = SAMPLE_CONTEXTS[n % len(SAMPLE_CONTEXTS)]
                    text = (
                        template.replace("{i}", ident)
                        .replace("{I}", ident.upper())
                        .replace("{s}", secret)
                        .replace("{{", "{")
                        .replace("}}", "}")
                    )
                    out.append(
                        row("secret", kind, rule["id"], src, "gitleaks sample", text, secret)
                    )
                    if r"[\w.-]{0,50}?" in rule["regex"]:
                        # The rule finds the value only next to its provider's name: alone,
                        # it is a random string like any other, so no bare context.
                        continue
                    name, bare = BARE_CONTEXTS[(len(out) + n) % len(BARE_CONTEXTS)]
                    out.append(
                        row("secret", kind, rule["id"], src, name, bare.format(v=secret), secret)
                    )
                    continue
                if not isinstance(tp, str):
                    continue
                secret = secret_of(rule, tp)
                if not secret or len(secret) < 8 or secret in seen:
                    continue
                seen.add(secret)
                out.append(row("secret", kind, rule["id"], src, "as in the rule", tp, secret))
            for fp in fps:
                if isinstance(fp, str) and fp.strip():
                    out.append(row("negative", kind, rule["id"], src, "rule false positive", fp))
    return out


# ---------------------------------------------------------------------------------------------
# secretlint
# ---------------------------------------------------------------------------------------------

SECRETLINT_NOT_PROVIDER = (
    "filter-comments",
    "pattern",
    "no-dotenv",
    "no-homedir",
    "no-k8s-kind-secret",
    "example",
)


def from_secretlint(root: Path) -> list[dict]:
    commit = commit_of(root)
    out = []
    for output in sorted(
        root.glob("packages/@secretlint/secretlint-rule-*/test/snapshots/**/output.json")
    ):
        rule = output.parts[output.parts.index("test") - 1].removeprefix("secretlint-rule-")
        if rule in SECRETLINT_NOT_PROVIDER:
            continue
        data = json.loads(output.read_text())
        text = data.get("sourceContent")
        if not text or len(text) > 4000:
            continue
        rel = output.parent.relative_to(root)
        src = f"secretlint/secretlint@{commit}:{rel}"
        kind = f"secretlint-{rule}"
        if not data["messages"]:
            out.append(row("negative", kind, rule, src, "no finding", text))
            continue
        for message in data["messages"]:
            start, end = message["range"]
            secret = text[start:end]
            if len(secret) >= 8:
                out.append(row("secret", kind, rule, src, "as in the test", text, secret))
    return out


# ---------------------------------------------------------------------------------------------
# detect-secrets
# ---------------------------------------------------------------------------------------------


def from_detect_secrets(root: Path) -> list[dict]:
    sys.path.insert(0, str(root))
    import importlib

    commit = commit_of(root)
    out = []
    for test in sorted((root / "tests" / "plugins").glob("*_test.py")):
        if test.stem in (
            "base_test",
            "high_entropy_strings_test",
            "keyword_test",
            "ip_public_test",
        ):
            continue
        source = test.read_text()
        tree = ast.parse(source)
        plugin_classes = []
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.ImportFrom)
                and node.module
                and node.module.startswith("detect_secrets.plugins")
            ):
                module = importlib.import_module(node.module)
                plugin_classes += [getattr(module, a.name) for a in node.names]
        plugins = [c() for c in plugin_classes if isinstance(c, type)]
        lines = []
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                value = node.value
                if 8 <= len(value) <= 2000 and not value.startswith(("mock_", "test_")):
                    lines.append(value)
        src = f"Yelp/detect-secrets@{commit}:tests/plugins/{test.name}"
        kind = "detect-secrets-" + test.stem.removesuffix("_test")
        for line in dict.fromkeys(lines):
            found = []
            for plugin in plugins:
                with contextlib.suppress(Exception):
                    found += [s.secret_value for s in plugin.analyze_line(filename="t", line=line)]
            found = [f for f in found if f and len(f) >= 8 and f in line]
            if found:
                out.append(
                    row("secret", kind, test.stem, src, "as in the test", line, max(found, key=len))
                )
            elif re.search(r"\S{12,}", line) and "{" not in line:
                out.append(row("negative", kind, test.stem, src, "not flagged", line))
    return out


# ---------------------------------------------------------------------------------------------
# Ordinary strings made here
# ---------------------------------------------------------------------------------------------


def hexstr(n: int) -> str:
    return "".join(RNG.choice("0123456789abcdef") for _ in range(n))


def sh(cmd: list[str]) -> str:
    return subprocess.run(cmd, capture_output=True, text=True).stdout


def made_here(gitleaks: Path, project: Path) -> list[dict]:
    out = []
    src = "made for this corpus"

    def add(kind: str, context: str, text: str) -> None:
        out.append(row("ordinary", kind, kind, src, context, text))

    shas = sh(
        ["git", "-C", str(project), "log", "--format=%H %s", "-n", "400", GIT_LOG_AT]
    ).splitlines()
    RNG.shuffle(shas)
    git_forms = (
        "commit {h}\nAuthor: Dev <dev@example.org>",
        "git checkout {h}",
        "HEAD is now at {s} {m}",
        '"sha": "{h}",',
        "https://github.com/gitleaks/gitleaks/commit/{h}",
        "{s} {m}",
        "Merge: {s} {s2}",
        "git rebase --onto main {h}",
        "pinned to {h} (see CHANGELOG)",
        "uses: actions/checkout@{h} # v4",
    )
    for i, line in enumerate(shas[:40]):
        h, _, m = line.partition(" ")
        text = git_forms[i % len(git_forms)].format(h=h, s=h[:7], s2=shas[i + 50][:7], m=m[:60])
        add("git-commit", "git", text)

    lock = json.loads((project / "client-vscode" / "package-lock.json").read_text())
    integrities = [
        (name, p.get("integrity"), p.get("resolved"))
        for name, p in lock.get("packages", {}).items()
        if p.get("integrity")
    ]
    RNG.shuffle(integrities)
    for i, (name, integrity, resolved) in enumerate(integrities[:25]):
        forms = (
            f'      "integrity": "{integrity}"',
            f'"{name}": {{"resolved": "{resolved}", "integrity": "{integrity}"}}',
            f"  integrity {integrity}",
            f'<script src="https://cdn.example.org/lib.js" integrity="{integrity}" crossorigin="anonymous"></script>',
        )
        add("lockfile-integrity", "package-lock", forms[i % len(forms)])
    for line in (project / "requirements" / "dev.lock").read_text().splitlines():
        if "--hash=sha256:" in line and RNG.random() < 0.05:
            add("lockfile-hash", "pip lock", line.strip())
    gosum = (gitleaks / "go.sum").read_text().splitlines()
    for line in RNG.sample(gosum, 15):
        add("lockfile-hash", "go.sum", line)
    for _ in range(8):
        add(
            "lockfile-hash",
            "Cargo.lock",
            f'[[package]]\nname = "serde"\nversion = "1.0.{RNG.randint(100, 230)}"\nchecksum = "{hexstr(64)}"',
        )

    uuid_forms = (
        '"requestId": "{u}"',
        "X-Request-Id: {u}",
        "{{{U}}}",
        "  uid: {u}",
        "session {u} closed after 31s",
        "/api/v2/projects/{u}/members",
        'Project("{{{U}}}") = "App", "App.csproj", "{{{U2}}}"',
        "trace_id={h32} span_id={h16}",
        "Correlation ID: {u}",
        "kubectl delete pod worker-{h10}",
    )
    for i in range(30):
        u, u2 = (
            str(uuid.UUID(int=RNG.getrandbits(128), version=4)),
            str(uuid.UUID(int=RNG.getrandbits(128), version=4)),
        )
        add(
            "uuid",
            "ids",
            uuid_forms[i % len(uuid_forms)].format(
                u=u,
                U=u.upper(),
                U2=u2.upper(),
                h32=hexstr(32),
                h16=hexstr(16),
                h10=hexstr(5) + "-" + hexstr(5),
            ),
        )

    images = (
        sorted(Path("/usr/share").rglob("*.png"))[:400]
        + sorted(Path("/usr/share").rglob("*.gif"))[:100]
    )
    images = [p for p in images if p.stat().st_size < 1500]
    RNG.shuffle(images)
    for i, p in enumerate(images[:15]):
        data = base64.b64encode(p.read_bytes()).decode()
        mime = "image/png" if p.suffix == ".png" else "image/gif"
        forms = (
            f".icon {{ background: url(data:{mime};base64,{data}) no-repeat; }}",
            f'<img alt="logo" src="data:{mime};base64,{data}">',
            f"![badge](data:{mime};base64,{data})",
            f'"icon": "data:{mime};base64,{data}"',
        )
        add("image-base64", "data uri", forms[i % len(forms)])

    for i in range(20):
        digest = hashlib.sha256(str(i).encode()).hexdigest()
        forms = (
            f"{digest}  dist/engram-0.{i}.0.tar.gz",
            f"docker pull python@sha256:{digest}",
            f"md5: {hashlib.md5(str(i).encode()).hexdigest()}",
            f"SHA1 ({i}.zip) = {hashlib.sha1(str(i).encode()).hexdigest()}",
            f"Digest: sha256:{digest}",
            f'etag: W/"{hashlib.md5(str(i).encode()).hexdigest()}"',
            f"cache hit {digest[:40]}",
            f"blake2b: {hashlib.blake2b(str(i).encode()).hexdigest()}",
            f"sha512-{base64.b64encode(hashlib.sha512(str(i).encode()).digest()).decode()}",
            f"Fingerprint: SHA256:{base64.b64encode(hashlib.sha256(str(i).encode()).digest()).decode().rstrip('=')}",
        )
        add("digest", "hash", forms[i % len(forms)])

    acct = "".join(RNG.choice(string.digits) for _ in range(12))
    arns = (
        f"arn:aws:iam::{acct}:role/service-role/lambda-token-refresher",
        f"arn:aws:kms:eu-west-1:{acct}:key/{uuid.UUID(int=RNG.getrandbits(128), version=4)}",
        f"arn:aws:secretsmanager:us-east-1:{acct}:secret:prod/db-password-Xk3Lp9",
        f"arn:aws:ssm:us-east-1:{acct}:parameter/app/api_key",
        f"arn:aws:lambda:us-east-1:{acct}:function:rotate-access-keys:7",
        f"arn:aws:iam::{acct}:policy/AllowGetSessionToken",
        "arn:aws:iam::aws:policy/AWSKeyManagementServicePowerUser",
        f"arn:aws:sts::{acct}:assumed-role/Deploy/botocore-session-{RNG.randint(10**9, 10**10)}",
        f"arn:aws:cognito-idp:us-east-1:{acct}:userpool/us-east-1_{''.join(RNG.choice(string.ascii_letters + string.digits) for _ in range(9))}",
        f"arn:aws:acm:us-east-1:{acct}:certificate/{uuid.UUID(int=RNG.getrandbits(128), version=4)}",
    )
    for a in arns:
        add("arn", "aws", a)

    code_lines = []
    for py in sorted(Path(sys.prefix).rglob("*.py"))[:6000]:
        try:
            for line in py.read_text(encoding="utf-8").splitlines():
                s = line.strip()
                if (
                    20 < len(s) < 160
                    and re.search(r"(?i)password|passwd|secret|token|api_?key|credential", s)
                    and not re.search(r"""[=:]\s*[rbf]?["'][^"'{}$%<]{4,}["']""", s)
                ):
                    code_lines.append(s)
        except (UnicodeDecodeError, OSError):
            pass
    for s in RNG.sample(code_lines, min(60, len(code_lines))):
        add("code-naming-secrets", f"python of {sys.prefix}", s)

    css_files = [
        p for p in Path("/root/.cache/engram-editors").rglob("*.css") if p.stat().st_size < 200_000
    ]
    js_files = [
        p
        for p in Path("/root/.cache/engram-editors").rglob("*.min.js")
        if p.stat().st_size < 400_000
    ]
    for files, kind in ((css_files, "css"), (js_files, "minified-js")):
        RNG.shuffle(files)
        for p in files[:15]:
            text = p.read_text(errors="replace")
            start = RNG.randrange(0, max(1, len(text) - 400))
            add(kind, f"{p.name}", text[start : start + 400])

    md = []
    for doc in (
        sorted(Path("/usr/share/doc").rglob("*.md"))[:500]
        + sorted(Path(sys.prefix).rglob("*.md"))[:500]
    ):
        try:
            for line in doc.read_text(encoding="utf-8").splitlines():
                if (
                    30 < len(line) < 300
                    and re.search(r"(?i)\b(?:token|api key|secret|password|key)s?\b", line)
                    and not re.search(r"[A-Za-z0-9_\-]{20,}", line)
                ):
                    md.append(line)
        except (UnicodeDecodeError, OSError):
            pass
    for s in RNG.sample(md, min(40, len(md))):
        add("docs-prose", "markdown", s)

    urls = (
        "https://docs.github.com/en/authentication/keeping-your-account-and-data-secure/managing-your-personal-access-tokens",
        "https://developer.mozilla.org/en-US/docs/Web/HTTP/Headers/Authorization",
        "https://cloud.google.com/docs/authentication/api-keys#api_key_restrictions",
        "https://example.com/reset-password?utm_source=email&utm_campaign=spring",
        "https://api.example.com/v1/oauth/token?grant_type=client_credentials",
        "https://github.com/settings/tokens/new?scopes=repo,workflow",
        "https://www.youtube.com/watch?v=dQw4w9WgXcQ&list=PLx0sYbCqOb8TBPRdmBHs5Iftvv9TPboYG",
        "https://login.microsoftonline.com/common/oauth2/v2.0/authorize?client_id=6731de76-14a6-49ae-97bc-6eba6914391e&response_type=code",
        "https://pypi.org/project/keyring/24.3.1/#files",
        "https://registry.npmjs.org/jsonwebtoken/-/jsonwebtoken-9.0.2.tgz",
        "https://raw.githubusercontent.com/pallets/flask/3.0.x/src/flask/sessions.py",
        "https://console.aws.amazon.com/iam/home#/security_credentials$access_key",
    )
    for u in urls:
        add("url", "url", u)

    placeholders = (
        "export OPENAI_API_KEY=<your-api-key>",
        "Authorization: Bearer <token>",
        'api_key = os.environ["STRIPE_API_KEY"]',
        "GITHUB_TOKEN=${{ secrets.GITHUB_TOKEN }}",
        "password: ${DB_PASSWORD}",
        "aws_secret_access_key = YOUR_SECRET_ACCESS_KEY",
        "token: xxxxxxxxxxxxxxxxxxxxxxxx",
        "Replace sk-... with your key from the dashboard.",
        "SLACK_WEBHOOK_URL=https://hooks.slack.com/services/XXXXXXXXX/XXXXXXXXX/XXXXXXXXXXXXXXXXXXXXXXXX",
        "const apiKey = process.env.API_KEY ?? '';",
        "secret_key: '{{ vault_secret_key }}'",
        "--token $(cat ~/.config/tool/token)",
        "API_TOKEN=********",
        "client_secret: REDACTED",
    )
    for p in placeholders:
        add("placeholder", "docs", p)

    idents = (
        "def rotate_api_key(self, key_id: str) -> ApiKey:",
        "if (!isValidToken(refreshTokenExpiry)) return res.status(401).end();",
        ".password-reset-form input[type=password]:focus { outline: 2px solid #3b82f6; }",
        "router.post('/auth/forgot-password', forgotPasswordHandler)",
        "const TOKEN_REFRESH_MARGIN_SECONDS = 300;",
        "SECRET_KEY_FALLBACKS = []",
        "private final KeyStore keyStore = KeyStore.getInstance(KeyStore.getDefaultType());",
        "self.max_new_tokens = config.max_new_tokens",
        'error: password authentication failed for user "postgres"',
        "INFO  [alembic] Running upgrade 3f1c9a2b7d4e -> 9e8d7c6b5a41, add api_keys table",
        "CREATE INDEX idx_tokens_user_id_created_at ON tokens (user_id, created_at);",
        "keyof typeof PASSWORD_STRENGTH_LABELS",
        "E/TokenManager(4312): failed to refresh access token: network unreachable",
        'tokenizer = AutoTokenizer.from_pretrained("bert-base-uncased")',
        '<input type="password" name="current-password" autocomplete="current-password">',
    )
    for s in idents:
        add("identifier", "code", s)
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--gitleaks", type=Path, required=True)
    parser.add_argument("--secretlint", type=Path, required=True)
    parser.add_argument("--detect-secrets", type=Path, required=True)
    parser.add_argument("--project", type=Path, default=Path(__file__).resolve().parents[1])
    args = parser.parse_args()
    rows = (
        from_gitleaks(args.gitleaks)
        + from_secretlint(args.secretlint)
        + from_detect_secrets(args.detect_secrets)
        + made_here(args.gitleaks, args.project)
    )
    seen = set()
    with OUT.open("w", encoding="utf-8") as f:
        for r in rows:
            key = (r["type"], r["text"], r.get("secret", ""))
            if key in seen:
                continue
            seen.add(key)
            f.write(json.dumps(r, ensure_ascii=False) + "\n")
    print(f"wrote {len(seen)} lines to {OUT}")


if __name__ == "__main__":
    main()
