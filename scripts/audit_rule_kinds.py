"""Kind-coverage audit: does engram hide a secret of every format the public rule sets know?

    .venv/bin/python scripts/audit_rule_kinds.py RULES_DIR [--show] [--samples N]

RULES_DIR holds checkouts (or extracted rule files) of gitleaks (`config/gitleaks.toml`),
kingfisher (`data/rules/*.yml`) and noseyparker (`crates/noseyparker/data/default/rules/*.yml`),
found anywhere below it. For every rule, values are GENERATED from the rule's own regular
expression (random characters of each class, the shortest keyword context the rule allows),
checked to match the rule, put in a line with no secret word of engram's, and redacted: the rule's
kind counts as covered when no sample's secret (the rule's capture group) survives. This is a
measure of kinds, not of examples: no example value of a rule set is used.

Rules that find what engram deliberately leaves alone (ids, user names, hosts, URLs, public keys,
regions) are counted apart, by their names. Rules whose pattern this generator cannot read are
counted as unparsed.
"""

from __future__ import annotations

import random
import re
import string
import sys
import tomllib
from pathlib import Path

import regex
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from memory_core.redact import redact
from tests.core.public_secret_corpus import leaked

_parser = re._parser  # type: ignore[attr-defined]
_constants = re._constants  # type: ignore[attr-defined]

POSIX = {
    "[:alnum:]": "A-Za-z0-9",
    "[:alpha:]": "A-Za-z",
    "[:digit:]": "0-9",
    "[:xdigit:]": "0-9A-Fa-f",
    "[:upper:]": "A-Z",
    "[:lower:]": "a-z",
    "[:space:]": r"\s",
    "[:word:]": r"\w",
    "[:punct:]": r"!-/:-@\[-`{-~",
}

# What a rule finds when its name says so: not a secret by engram's choice (see docs/secrets.md).
NOT_SECRET_NAME = re.compile(
    r"\b(?:id|ids|identifier|user ?name|username|user|login|email|host|hostname|url|uri|"
    r"endpoint|domain|region|account|tenant|org(?:anization)?|bucket|public|publishable|"
    r"client id|app id|project|subdomain|instance|workspace|namespace|site|server|"
    r"cluster|database|team|realm|location|zone|address)\b",
    re.IGNORECASE,
)


def to_python(pattern: str) -> str:
    for posix, chars in POSIX.items():
        pattern = pattern.replace(posix, chars)
    pattern = pattern.replace(r"\z", r"\Z").replace("(?<", "(?P<").replace("(?P<=", "(?<=")
    pattern = pattern.replace("(?P<!", "(?<!")
    pattern = re.sub(
        r"\(\?([a-z]*)-u\)", lambda m: f"(?{m.group(1)})" if m.group(1) else "", pattern
    )
    pattern = re.sub(
        r"\(\?([a-z]*)-u:", lambda m: f"(?{m.group(1)}:" if m.group(1) else "(?:", pattern
    )
    pattern = pattern.replace("(?s-u)", "(?s)").replace("(?x-u)", "(?x)")
    pattern = re.sub(r"\\x\{([0-9A-Fa-f]+)\}", lambda m: f"\\x{int(m.group(1), 16):02x}", pattern)
    # Flags in the middle of a pattern (RE2 allows them): move global ones to the front.
    flags = "".join(sorted(set("".join(re.findall(r"\(\?([imsx]+)\)", pattern)))))
    pattern = re.sub(r"\(\?[imsx]+\)", "", pattern)
    return (f"(?{flags})" if flags else "") + pattern


PRINTABLE = string.ascii_letters + string.digits + "_-.=:/+ \"'"
FILLER_CHOICES = " =:\"'"


class Generator:
    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.groups: dict[int, str] = {}

    def chars_of(self, items: list) -> tuple[str, bool]:
        chars: list[str] = []
        negate = False
        for op, av in items:
            name = str(op)
            if name == "NEGATE":
                negate = True
            elif name == "LITERAL":
                chars.append(chr(av))
            elif name == "RANGE":
                chars.extend(chr(c) for c in range(av[0], min(av[1], 126) + 1))
            elif name == "CATEGORY":
                cat = str(av)
                if cat == "CATEGORY_DIGIT":
                    chars.extend(string.digits)
                elif cat == "CATEGORY_WORD":
                    chars.extend(string.ascii_letters + string.digits + "_")
                elif cat == "CATEGORY_SPACE":
                    chars.append(" ")
                elif cat == "CATEGORY_NOT_SPACE":
                    chars.extend(string.ascii_letters + string.digits)
                elif cat == "CATEGORY_NOT_DIGIT":
                    chars.extend(string.ascii_letters)
                elif cat == "CATEGORY_NOT_WORD":
                    chars.append(" ")
        if negate:
            chars = [c for c in PRINTABLE if c not in chars]
            return "".join(chars) or " ", True
        return "".join(dict.fromkeys(chars)), False

    def broad(self, sub: list) -> bool:
        """A class that is context filler (`\\s`, `.`, `[^...]`, `[\\w.-]`), not a token body."""
        if len(sub) != 1:
            return False
        op, av = sub[0]
        if str(op) == "ANY":
            return True
        if str(op) == "IN":
            chars, negate = self.chars_of(av)
            return negate or " " in chars or (len(chars) > 60 and "-" in chars and "." in chars)
        return str(op) == "CATEGORY"

    def spacing(self, sub: list) -> bool:
        """Filler that can be a space or a line break (`.`, `\\s`, `(?:.|[\\n\\r])`)."""
        text = "".join(Generator(random.Random(0)).gen(sub) for _ in range(1))
        return any(str(op) in ("ANY", "BRANCH", "SUBPATTERN") for op, _ in sub) or text.isspace()

    def gen(self, items) -> str:
        out = []
        for op, av in items:
            name = str(op)
            if name == "LITERAL":
                out.append(chr(av))
            elif name == "NOT_LITERAL":
                out.append(" " if chr(av) != " " else "=")
            elif name == "ANY":
                out.append(" ")
            elif name == "IN":
                chars, _ = self.chars_of(av)
                if chars in (" ",):
                    out.append(" ")
                else:
                    out.append(self.rng.choice(chars))
            elif name == "CATEGORY":
                out.append(self.gen([(_constants.IN, [(op, av)])]))
            elif name in ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT"):
                low, high, sub = av
                if high == _constants.MAXREPEAT:
                    high = low + 24
                if name == "MIN_REPEAT" or self.broad(list(sub)):
                    # Context filler: one character where the rule allows it, so that a word
                    # boundary the rule asks for after it can hold.
                    count = max(low, min(high, 1)) if self.spacing(list(sub)) else low
                else:
                    count = self.rng.randint(low, min(high, low + 12))
                out.extend(self.gen(sub) for _ in range(count))
            elif name == "SUBPATTERN":
                group, _add, _del, sub = av
                text = self.gen(sub)
                if group:
                    self.groups[group] = text
                out.append(text)
            elif name == "BRANCH":
                out.append(self.gen(self.rng.choice(av[1])))
            elif name == "GROUPREF":
                out.append(self.groups.get(av, ""))
            elif name in ("AT", "ASSERT", "ASSERT_NOT") or name == "GROUPREF_EXISTS":
                continue
            else:
                raise ValueError(name)
        return "".join(out)


def rules_of(root: Path) -> list[tuple[str, str, str]]:
    """(source, rule id and name, pattern) of every rule below root."""
    out = []
    for toml in root.rglob("config/gitleaks.toml"):
        for rule in tomllib.loads(toml.read_text())["rules"]:
            if "regex" in rule:
                out.append(
                    ("gitleaks", f"{rule['id']} {rule.get('description', '')}", rule["regex"])
                )
    for yml in sorted(root.rglob("*.yml")):
        source = "kingfisher" if "kingfisher" in str(yml) else "noseyparker"
        if "rules" not in yml.parts:
            continue
        try:
            data = yaml.safe_load(yml.read_text())
        except yaml.YAMLError:
            continue
        for rule in (data or {}).get("rules", []) or []:
            if isinstance(rule, dict) and "pattern" in rule:
                out.append((source, f"{rule.get('id')} {rule.get('name')}", rule["pattern"]))
    return out


CONTEXTS = (
    "deploy log: {}",
    "$ ./run.sh {}\n",
    '{{"config": "{}"}}',
)


def audit(root: Path, samples: int, show: bool) -> None:
    rng = random.Random(29)
    totals: dict[str, dict[str, int]] = {}
    missed_lines = []
    for source, name, pattern in rules_of(root):
        bucket = totals.setdefault(
            source, dict.fromkeys(("rules", "covered", "not-secret", "unparsed", "missed"), 0)
        )
        bucket["rules"] += 1
        if NOT_SECRET_NAME.search(name.split(" ", 1)[-1]) and not re.search(
            r"secret|token|key|password|credential|pat\b", name, re.IGNORECASE
        ):
            bucket["not-secret"] += 1
            continue
        try:
            compiled = regex.compile(to_python(pattern))
            parsed = _parser.parse(to_python(pattern))
        except Exception:
            bucket["unparsed"] += 1
            continue
        found = []
        for attempt in range(samples * 20):
            if len(found) >= samples:
                break
            try:
                text = Generator(rng).gen(parsed)
            except Exception:
                break
            m = compiled.search(text)
            if not m:
                continue
            secret = next((g for g in m.groups() if g), m.group())
            if len(secret) < 6:
                continue
            found.append((text, secret, CONTEXTS[attempt % len(CONTEXTS)].format(text)))
        if not found:
            bucket["unparsed"] += 1
            continue
        leaks = [(t, s, c) for t, s, c in found if leaked(s, redact(c))]
        if leaks:
            bucket["missed"] += 1
            missed_lines.append(f"{source} {name}: {leaks[0][2]!r} secret {leaks[0][1]!r}")
        else:
            bucket["covered"] += 1
    for source, b in totals.items():
        judged = b["covered"] + b["missed"]
        print(
            f"{source}: {b['rules']} rules; {b['covered']}/{judged} covered "
            f"({100 * b['covered'] / max(1, judged):.1f} %); not secrets by name {b['not-secret']}; "
            f"unparsed {b['unparsed']}"
        )
    if show:
        for line in missed_lines:
            print("  MISSED", line[:400])


if __name__ == "__main__":
    samples = 3
    if "--samples" in sys.argv:
        samples = int(sys.argv[sys.argv.index("--samples") + 1])
    audit(Path(sys.argv[1]), samples, "--show" in sys.argv)
