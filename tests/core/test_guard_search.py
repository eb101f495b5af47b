"""The one-pass guard search finds exactly what `str.find` finds, guard by guard, and redaction
of a large text is the same whichever way its guards were found."""

from __future__ import annotations

import itertools
import marshal
import random
import re
from pathlib import Path

import pytest

from memory_core import compiled_patterns, redact
from memory_core.guard_search import GuardSearch, usable


def _find_all(haystack: str, needle: str) -> list[int]:
    found = []
    at = haystack.find(needle)
    while at != -1:
        found.append(at)
        at = haystack.find(needle, at + 1)
    return found


def _expected(text: str, keys: list[tuple[str, bool]]) -> dict[tuple[str, bool], list[int]]:
    lowered = text.lower()
    return {key: _find_all(lowered if key[1] else text, key[0]) for key in keys}


def _found(text: str, keys: list[tuple[str, bool]]) -> dict[tuple[str, bool], list[int]]:
    encoded = text.encode("latin-1", "replace")
    return GuardSearch(keys).find(encoded, encoded.lower())


# Guards that overlap themselves (`aba`), hold one another (`pass` in `password`, in both folds),
# are shorter than the three-character window (`0x`), or hold punctuation and spaces.
KEYS = [
    ("aba", True),
    ("pass", True),
    ("password", True),
    ("sshpass", False),
    ("PASS", False),
    ("PRIVATE KEY", False),
    ("private", True),
    ("0x", False),
    ("-p", True),
    ("key", True),
    ("apikey", True),
    ("getconnection(", True),
    ("auth token", True),
    ("ing", True),
]


def test_overlapping_nested_and_short_guards_are_found_where_find_finds_them() -> None:
    text = (
        "ababa PassWord sshpass SSHPASS -----BEGIN PRIVATE KEY----- 0x1F 0X2 -p -P "
        "apiKey=1 getConnection( auth token password"
    )
    assert _found(text, KEYS) == _expected(text, KEYS)


def test_a_guard_at_the_very_start_and_end_of_the_text() -> None:
    for text in ("password", "x password", "password x", "keykey", "ke", "k", "", "aba"):
        assert _found(text, KEYS) == _expected(text, KEYS), text


def test_random_texts_of_every_size_around_the_windows() -> None:
    rng = random.Random(29)
    alphabet = "abpsworkdey -()0xPASKEYI\n"
    for size in (0, 1, 2, 3, 4, 7, 64, 4097, 65537):
        text = "".join(rng.choice(alphabet) for _ in range(size))
        assert _found(text, KEYS) == _expected(text, KEYS), size


def test_non_ascii_text_keeps_the_offsets() -> None:
    # Latin-1 letters, characters beyond it (one `?` each in the bytes), a real `?`, an emoji.
    text = "é Password ☃ key? 🔑apikey ünïcode PASS Ω0x 中文 password"
    assert usable(text, text.lower())
    assert _found(text, KEYS) == _expected(text, KEYS)


def test_a_guard_at_the_very_end_of_texts_of_every_length_near_the_window() -> None:
    # A window's last pair reads the character after it; at the text's end there is none.
    keys = [("key", True), ("pass", True), ("token", True), ("ab", False), ("AKIA", False)]
    for guard in ("key", "pass", "token", "ab", "AKIA", "KEY", "Token"):
        for before in ("", "x", "xy", "xyz", "e ", "pas", "tok"):
            text = before + guard
            assert _found(text, keys) == _expected(text, keys), text


def test_overlapping_guards_and_windows_inside_a_guard() -> None:
    # A guard's window may start after its first character: found at the text's start too;
    # guards overlapping one another and themselves are each found at every place.
    keys = [("password", True), ("word", True), ("ordpass", True), ("passpass", True)]
    keys += [("sword", True), ("-----begin ", True), ("egin", True), ("aaaa", False)]
    text = "passwordpasspasspass swordpassword -----BEGIN -----begin aaaaaaa ordpassword"
    assert _found(text, keys) == _expected(text, keys)
    for cut in range(len(text)):
        assert _found(text[cut:], keys) == _expected(text[cut:], keys), cut


def test_guards_whose_characters_no_frequency_table_lists() -> None:
    # Characters and pairs the table of ordinary text does not have (`~§`, `qzx`): counted as
    # rare, still found; a guard set of windows of three only, and of four only.
    for keys in (
        [("qzx", True), ("~~~", False), ("\x7f\x7f\x7f", False), ("zq~j", True)],
        [("qzx", True), ("key", True), ("pat", True)],
        [("qzxjv", True), ("password", True)],
    ):
        text = "QZX qzx ~~~~ \x7f\x7f\x7f\x7f zq~j ZQ~J key pat password qzxjv"
        assert _found(text, keys) == _expected(text, keys), keys


def test_many_random_guards_against_random_text() -> None:
    # More guards than places to put them apart: the groups' windows cross and their pair codes
    # coincide, which may only cost places read, never a place found.
    rng = random.Random(2029)
    alphabet = "abcdeikpstwy-_=:( \nAKPS"
    keys = sorted(
        {
            ("".join(rng.choice(alphabet) for _ in range(rng.randrange(1, 9))), rng.random() < 0.7)
            for _ in range(300)
        }
    )
    text = "".join(rng.choice(alphabet) for _ in range(20_000))
    assert _found(text, keys) == _expected(text, keys)
    encoded = text[:300].encode()
    expected = {key for key, places in _expected(text[:300], keys).items() if places}
    assert GuardSearch(keys).present(encoded, encoded.lower()) == expected


def test_pair_codes_are_what_the_shifted_translation_computes() -> None:
    # Seven bits per character: an eighth would cross into the next character's byte and the
    # planned codes would not be the ones the text's places get.
    import memory_core.guard_search as guard_search

    assert sorted(guard_search._CODES[:128]) == list(range(128))
    text = bytes(range(256)) + b"password token key"
    codes = int.from_bytes(text.translate(guard_search._CODES), "little")
    pairs = (codes ^ codes >> 7).to_bytes(len(text), "little")
    expected = [guard_search._pair_code(a, b) for a, b in itertools.pairwise(text)]
    assert list(pairs[:-1]) == expected


def test_pair_codes_that_all_coincide_give_the_same_answer(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The codes decide only how many places are read: with every pair the same code, every
    # place is read, and the answer is the same.
    import memory_core.guard_search as guard_search

    monkeypatch.setattr(guard_search, "_CODES", bytes(256))
    text = "ababa PassWord sshpass -----BEGIN PRIVATE KEY----- 0x1F apiKey getConnection( ing"
    search = GuardSearch(KEYS)
    encoded = text.encode()
    # Every place but the last two, where no window of three fits.
    assert search._places(encoded.lower()) == b"\x01" * (len(text) - 2) + b"\x00\x00"
    assert search.find(encoded, encoded.lower()) == _expected(text, KEYS)


def test_a_text_whose_lowering_moves_offsets_is_not_searched_as_bytes() -> None:
    # İ lowers to two characters; the Kelvin sign lowers to an ASCII `k`.
    assert not usable("İ password", "İ password".lower())
    assert not usable("\u212aey", "\u212aey".lower())
    assert usable("plain key", "plain key")


def test_guards_that_are_not_ascii_or_hold_a_question_mark_are_left_to_the_caller() -> None:
    search = GuardSearch([("mot de passe é", True), ("who?", False), ("key", True)])
    assert search.covered == {("key", True)}


def test_present_names_exactly_the_guards_that_occur() -> None:
    rng = random.Random(32)
    search = GuardSearch(KEYS)
    for _ in range(200):
        text = "".join(rng.choice("abpsword kyPASI0x-") for _ in range(rng.randrange(0, 40)))
        encoded = text.encode("latin-1", "replace")
        expected = {key for key, places in _expected(text, KEYS).items() if places}
        assert search.present(encoded, encoded.lower()) == expected, text


@pytest.fixture(scope="module")
def large_text() -> str:
    # 64 kB + 1 characters of code with secrets and non-ASCII prose: above the size where the
    # rules that read a command's pieces stop running.
    from tests.core.secret_corpus import secrets

    pieces = [case.text for case in secrets()]
    filler = "def handle(path, key): return path.key  # the café’s token — naïve\n"
    text = "\n".join(pieces) + "\n" + filler * 1000
    return text[: redact.SPLIT_SEARCHED_UP_TO + 1]


@pytest.mark.parametrize("cut", [redact.WINDOWED_ABOVE + 1, redact.SPLIT_SEARCHED_UP_TO + 1])
def test_every_rule_guard_of_a_large_text_is_found_as_find_finds_it(
    large_text: str, cut: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    # As in a process that has redacted many texts (a cold one asks guard by guard below 64 kB).
    monkeypatch.setattr(redact, "_short_texts", redact._ONE_PASS_AFTER)
    text = large_text[:cut]
    lowered = text.lower()
    hits = redact._Hits(text, lowered)
    search = redact._guard_search(cut > redact.SPLIT_SEARCHED_UP_TO)
    for guard, fold in sorted(search.covered):
        assert hits.of(guard, fold) == _find_all(lowered if fold else text, guard), guard
    assert hits._every_guard is not None  # the one pass answered


@pytest.mark.parametrize("prefix", ["", "é "])
def test_a_large_text_is_redacted_the_same_as_when_each_guard_is_searched_alone(
    large_text: str, prefix: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # `é` keeps every offset: the bytes are searched, and one pass finds what each search did.
    text = prefix + large_text
    one_pass = redact._redact(text)
    monkeypatch.setattr(redact._Hits, "_in_one_pass", lambda self, key: None)
    assert redact._redact(text) == one_pass
    assert one_pass != text


def test_after_the_warm_up_a_prompt_compiles_no_pattern(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    redact.warm_up()
    compiled = len(redact._COMPILED)
    redact._redact("deploy with export API_TOKEN=abc123def456 and curl -u me:pw https://x")
    redact._redact('conn = psycopg2.connect(password="hunter2hunter2") # ssh-keygen -N pw')
    assert len(redact._COMPILED) == compiled


@pytest.fixture
def pattern_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setattr(compiled_patterns, "_entries", None)
    return Path(compiled_patterns.path())


def _specs() -> list[tuple[str, int]]:
    specs = [
        value
        for value in vars(redact).values()
        if isinstance(value, tuple) and len(value) == 2 and isinstance(value[0], str)
        if isinstance(value[1], int)
    ]
    specs += [(spec, 0) for _name, _guards, spec in redact._TOKEN_DETECTORS]
    specs += [(d[3], 0) if isinstance(d[3], str) else d[3] for d in redact._CONTEXT_DETECTORS]
    return specs


def test_patterns_made_from_the_cache_match_what_re_compile_matches(pattern_cache: Path) -> None:
    from tests.core.secret_corpus import secrets

    specs = _specs()
    compiled_patterns.save(specs)
    assert pattern_cache.exists()
    compiled_patterns._entries = None
    text = "\n".join(case.text for case in secrets())
    for source, flags in specs:
        cached, usual = compiled_patterns.make(source, flags), re.compile(source, flags)
        assert cached is not usual  # made from the file, not re's own cache
        assert (cached.pattern, cached.flags, cached.groupindex) == (
            usual.pattern,
            usual.flags,
            usual.groupindex,
        )
        found = [(m.span(), m.groups()) for m in cached.finditer(text)]
        assert found == [(m.span(), m.groups()) for m in usual.finditer(text)], source
    assert len(compiled_patterns._load()) == len(set(specs))


def test_a_foreign_or_broken_cache_file_is_ignored(pattern_cache: Path) -> None:
    pattern_cache.parent.mkdir(parents=True)
    for content in (b"not marshal", marshal.dumps(("another python", {("a+", 0): 1}))):
        pattern_cache.write_bytes(content)
        compiled_patterns._entries = None
        assert compiled_patterns.make("a+").findall("caaab") == ["aaa"]
        assert compiled_patterns._entries == {}


def test_the_line_scans_find_what_their_patterns_found() -> None:
    # Wrapped tokens and listed passwords are found line by line instead of by a pattern tried
    # at every character; on random lines of token runs, colons, brackets and line ends (CR LF
    # too) they give the pattern's matches.
    rng = random.Random(5)
    parts = ["abcd", "x", "AKIA1234567890ABCDEF", "\n", "\r\n", "\r", " ", "é", "中", "=", ":"]
    parts += ["-", "\t", "a" * 30, "?", '"', "+/", "line of prose and text ", "[", "pass: ["]
    wrapped = lists = 0
    for _ in range(3000):
        text = "".join(rng.choice(parts) for _ in range(rng.randrange(0, 40)))
        expected = [(m.span(1), m.span(2)) for m in redact._rx(redact._WRAPPED).finditer(text)]
        mask = redact._Hits(text, text.lower()).run_mask()
        assert list(redact._wrapped_lines(text, mask)) == expected, text
        heads = [(m.span(), m.groups()) for m in redact._rx(redact._LIST_HEAD).finditer(text)]
        assert [(m.span(), m.groups()) for m in redact._list_heads(text)] == heads, text
        wrapped += len(expected)
        lists += len(heads)
    assert wrapped > 50 and lists > 50  # both kinds of line were there to find


def test_a_large_text_is_lowered_exactly_as_str_lower_does() -> None:
    code = "def Handle(Path, KEY):  # Ünïcode — naïve café ΑΣ Σ İstanbul \u212aelvin ?\n"
    for text in (code * 2000, "中文 ÉTÉ Straße " * 8000, "plain ASCII TEXT\n" * 9000):
        encoded = text.encode("latin-1", "replace")
        assert redact._lowered(text, encoded) == text.lower()


@pytest.mark.parametrize(
    "text",
    [
        # Several guards of their own windows, apart: each is named, the middle ones too.
        "x = getconnection(h) # then an auth token ... and -----PRIVATE KEY----- apikey=1 private",
        "apikey " + "filler text, " * 40 + "auth token " + "more filler; " * 40 + "getconnection(",
        # A guard read without folding stays unnamed when only its other case occurs.
        "value 0X1F and PASS",
        "value 0x1f and pass",
    ],
)
def test_present_names_every_guard_of_a_text_where_it_occurs(text: str) -> None:
    """Which rules run on a short text: a guard missed here is a rule that never runs."""
    encoded = text.encode("latin-1", "replace")
    expected = {key for key, places in _expected(text, KEYS).items() if places}
    assert GuardSearch(KEYS).present(encoded, encoded.lower()) == expected
