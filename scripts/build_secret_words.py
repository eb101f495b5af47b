"""Write memory_core/secret_words.py: the word for password, passphrase, token and secret in
other languages, from the translations of open-source programs' own prompts.

    .venv/bin/python scripts/build_secret_words.py [LOCALE_DIR]

The words are read from the compiled message catalogues (`.mo`) a Debian or Ubuntu system
installs under /usr/share/locale (the default LOCALE_DIR), each program's translation of its
own prompt or label:

- password: GTK 3 and GTK 2's `Password:` / `_Password` (LGPL-2.1-or-later), Linux-PAM's
  `Password: ` (BSD-3-Clause or GPL-2.0-or-later), shadow's `Password: ` (BSD-3-Clause),
  system-config-printer's `Password:` (GPL-2.0-or-later);
- passphrase: GnuPG's `Passphrase:` (GPL-3.0-or-later);
- token: git's `token` (GPL-2.0) and psql's `Token` (PostgreSQL licence), where the
  translation names an access token (see _NOT_AN_ACCESS_TOKEN);
- secret: GTK 2's `Secret` (a print job's classification, LGPL-2.1-or-later).

A single word's translation is a fact, not a work; the programs and their licences are listed
so that anyone can check and rebuild the table. English is left out: its words are known to
the detectors already.
"""

from __future__ import annotations

import gettext
import sys
from pathlib import Path

SOURCES: tuple[tuple[str, str, str], ...] = (
    ("password", "gtk30", "Password:"),
    ("password", "gtk30", "_Password"),
    ("password", "gtk20", "Password:"),
    ("password", "gtk20", "_Password:"),
    ("password", "Linux-PAM", "Password: "),
    ("password", "shadow", "Password: "),
    ("password", "system-config-printer", "Password:"),
    ("passphrase", "gnupg2", "Passphrase:"),
    ("token", "git", "token"),
    ("token", "psql-15", "Token"),
    ("secret", "gtk20", "Secret"),
)

# Translations of "token" in its other sense (a piece of parsed text, a symbol, a command):
# they name no credential, and after them a value is no secret.
_NOT_AN_ACCESS_TOKEN = frozenset(
    (
        "elemento",
        "symbol",
        "igenkänningstecken",
        "polecenie",
        "фрагмент",
        "testimoni",
        "лексема",
        "ενδεικτικό",
        "thẻ bài",
        "标志符",
    )
)

# Characters around a label that are not part of the word: the mnemonic's underscore, the
# colon in its scripts' forms, spaces, a Khmer colon, zero-width spaces.
_STRIP = " :：_-·\u00a0\u200b៖․"


def clean(translation: str) -> str:
    word = translation.replace("_", "").split("(")[0]
    return word.strip(_STRIP).replace("\u200b", "").lower()


def too_short(word: str) -> bool:
    """A word too short to tell apart from a part of other words: one ideograph (`密` of
    zh_TW's `Secret`), a syllable of a script written without spaces (Thai `ลับ` is in `กลับ`,
    "back"), two Arabic letters. Ideographs, kana and Hangul carry a word in two characters;
    other scripts need four."""
    dense = all(
        "\u3040" <= c <= "\u30ff" or "\u4e00" <= c <= "\u9fff" or "\uac00" <= c <= "\ud7af"
        for c in word
    )
    return len(word) < (2 if dense else 4)


def read(locale_dir: Path) -> dict[str, dict[str, set[str]]]:
    words: dict[str, dict[str, set[str]]] = {}
    for kind, domain, message in SOURCES:
        for path in sorted(locale_dir.glob(f"*/LC_MESSAGES/{domain}.mo")):
            language = path.parts[-3]
            if language.startswith("en"):
                continue
            try:
                with path.open("rb") as handle:
                    catalogue = gettext.GNUTranslations(handle)
            except (OSError, UnicodeDecodeError):
                continue
            translation = catalogue._catalog.get(message)  # type: ignore[attr-defined]
            if not isinstance(translation, str) or translation in ("", message):
                continue
            word = clean(translation)
            if kind == "token" and word in _NOT_AN_ACCESS_TOKEN:
                continue
            if too_short(word):
                continue
            words.setdefault(language, {}).setdefault(kind, set()).add(word)
    return words


def render(words: dict[str, dict[str, set[str]]]) -> str:
    lines = [
        '"""The word for password, passphrase, token and secret in other languages.',
        "",
        "Written by scripts/build_secret_words.py from the translations of open-source",
        "programs' own prompts (GTK, Linux-PAM, shadow, system-config-printer, GnuPG, git,",
        "psql): see that script for the sources and their licences. Lowercased. Do not edit",
        'by hand: run the script again."""',
        "",
        "from __future__ import annotations",
        "",
        "# language (the catalogue's locale name) -> kind -> words",
        "WORDS: dict[str, dict[str, tuple[str, ...]]] = {",
    ]
    for language in sorted(words):
        lines.append(f"    {language!r}: {{")
        for kind in sorted(words[language]):
            spelled = ", ".join(repr(w) for w in sorted(words[language][kind]))
            lines.append(f"        {kind!r}: ({spelled},),")
        lines.append("    },")
    lines.append("}")
    return "\n".join(lines) + "\n"


def main() -> None:
    locale_dir = Path(sys.argv[1]) if len(sys.argv) > 1 else Path("/usr/share/locale")
    words = read(locale_dir)
    if not words:
        sys.exit(f"no message catalogues under {locale_dir}")
    out = Path(__file__).resolve().parents[1] / "memory_core" / "secret_words.py"
    out.write_text(render(words), encoding="utf-8")
    print(f"{out}: {len(words)} languages")


if __name__ == "__main__":
    main()
