"""What `engram anonymize` hides and what it keeps (issue 31): the names it finds (login, home,
git identity, the project, names given), the placeholder of each kind, words that merely contain
a name, JSON inside a column, and the store rewritten in place (trash, events and the search
index included). An export that leaks a name, or mangles a word that is no one's name, is what
a user would notice."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memory_core import events, lifecycle, memory, privacy, search, sessions
from memory_core.store import Store

NOW = 1_800_000_000.0


@pytest.fixture
def quiet_identity(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """An environment with no login name of its own: each test says which names exist. The
    home is an empty folder (no ~/.gitconfig) named too short to count as a user's name."""
    home = tmp_path / "h"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    for name in ("USER", "LOGNAME"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(privacy.getpass, "getuser", lambda: "")
    return home


def _store(root: Path) -> Store:
    root.mkdir(parents=True, exist_ok=True)
    return Store.init(root)


# -- the names found -------------------------------------------------------------------------


def test_login_names_of_two_letters_are_hidden_and_of_one_are_not(
    quiet_identity: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with _store(tmp_path / "shop") as store:
        monkeypatch.setenv("USER", "jo")
        monkeypatch.setenv("LOGNAME", "k")
        found = privacy.identities(store)
    assert found["jo"] == "user"
    # A one-letter name would replace that letter in every word of the export.
    assert "k" not in found


def test_each_login_source_counts(
    quiet_identity: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("USER", "uname")
    monkeypatch.setenv("LOGNAME", "lname")
    monkeypatch.setattr(privacy.getpass, "getuser", lambda: "pwname")
    with _store(tmp_path / "shop") as store:
        found = privacy.identities(store)
    assert {name for name, kind in found.items() if kind == "user"} >= {"uname", "lname", "pwname"}


def test_a_login_lookup_that_fails_is_not_an_error(
    quiet_identity: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_user() -> str:
        raise KeyError("uid 1234 has no passwd entry")  # a container without /etc/passwd

    monkeypatch.setattr(privacy.getpass, "getuser", no_user)
    with _store(tmp_path / "shop") as store:
        found = privacy.identities(store)
    assert found[str(store.root)] == "project-path"


def test_the_home_folder_and_its_name_are_hidden(
    quiet_identity: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "users" / "dana"
    home.mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home) + "/")
    with _store(tmp_path / "shop") as store:
        found = privacy.identities(store)
    assert found[str(home)] == "home"  # without its trailing slash
    assert found["dana"] == "user"


def test_a_home_of_slash_hides_nothing(
    quiet_identity: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", "/")
    with _store(tmp_path / "shop") as store:
        found = privacy.identities(store)
    # "/" (a service account's home) would be replaced in every path of the export.
    assert "/" not in found and "" not in found
    assert set(found.values()) == {"project-path", "project"}


def test_the_git_identity_of_the_project_wins_over_the_global_one(
    quiet_identity: Path, tmp_path: Path
) -> None:
    (quiet_identity / ".gitconfig").write_text(
        '[core]\n\tname = not-a-person\n[user]\n\tname = "Global Name"\n'
        "\temail = global@corp.example.com\n\tsigningkey = ABCDEF\n"
    )
    with _store(tmp_path / "shop") as store:
        (store.root / ".git").mkdir()
        (store.root / ".git" / "config").write_text(
            '[ User ]\n  Name = Project Person\n[remote "origin"]\n\turl = x\n'
        )
        found = privacy.identities(store, extra=["  Wonder Corp  ", "", "   "])
    assert found["Project Person"] == "user"
    assert "Global Name" not in found  # the project's own name is the one used
    assert found["global@corp.example.com"] == "email"  # the project sets none
    assert "not-a-person" not in found and "ABCDEF" not in found and "x" not in found
    assert found["Wonder Corp"] == "name"
    assert "" not in found and "   " not in found


def test_the_project_name_is_hidden_from_three_letters(
    quiet_identity: Path, tmp_path: Path
) -> None:
    with _store(tmp_path / "abc") as store:
        assert privacy.identities(store)["abc"] == "project"
    with _store(tmp_path / "ab") as store:
        found = privacy.identities(store)
    assert "ab" not in found
    assert found[str(tmp_path / "ab")] == "project-path"


# -- placeholders ----------------------------------------------------------------------------


def test_each_kind_of_name_gets_its_own_placeholder() -> None:
    anonymizer = privacy.Anonymizer(
        {
            "alicew": "user",
            "bobb": "user",
            "Wonder Corp": "name",
            "alice@corp.example.com": "email",
            "/home/alicew": "home",
            "payments": "project",
            "/srv/payments": "project-path",
            "Other": "something new",
        }
    )
    assert anonymizer.mapping == {
        "alicew": "USER_1",
        "bobb": "USER_2",
        "Wonder Corp": "NAME_1",
        "alice@corp.example.com": "user1@example.invalid",
        "/home/alicew": "/home/USER_H1",
        "payments": "PROJECT_1",
        "/srv/payments": "/workspace/PROJECT_P1",
        "Other": "NAME_1",
    }
    # The longest name first: the home path whole, not its user name inside it.
    assert (
        anonymizer.text("cd /home/alicew/payments && ls /srv/payments; ask alicew or bobb")
        == "cd /home/USER_H1/PROJECT_1 && ls /workspace/PROJECT_P1; ask USER_1 or USER_2"
    )


def test_a_name_inside_a_longer_word_is_left_alone() -> None:
    anonymizer = privacy.Anonymizer({"ann": "user", "dev": "user", "café": "name"})
    assert (
        anonymizer.text("ann reviewed the annotation; devops, dev_tools and dev.")
        == "USER_1 reviewed the annotation; devops, dev_tools and USER_2."
    )
    assert anonymizer.text("cafés and café.") == "cafés and NAME_1."


def test_names_beginning_or_ending_with_punctuation_are_still_found() -> None:
    anonymizer = privacy.Anonymizer({"-x-": "name", "(ops)": "name"})
    assert anonymizer.text("a-x-b and (ops)team") == "aNAME_2b and NAME_1team"


def test_nothing_to_hide_leaves_text_as_it_is() -> None:
    assert privacy.Anonymizer({}).text("alice@corp.example.com") == "alice@corp.example.com"


def test_addresses_and_home_folders_in_the_records_are_learned() -> None:
    anonymizer = privacy.Anonymizer({})
    anonymizer.learn(
        "mail bob@corp.example.com or user3@example.invalid; files in /home/carol/x,"
        " /Users/dave/y and C:\\Users\\erin\\z; /home/USER_9/old and /home/a/b"
    )
    assert anonymizer.mapping == {
        "bob@corp.example.com": "user1@example.invalid",
        "carol": "USER_1",
        "dave": "USER_2",
        "erin": "USER_3",
    }
    # Placeholders of an earlier run are not names, nor is a one-letter folder.
    assert anonymizer.text("user3@example.invalid /home/USER_9 a") == (
        "user3@example.invalid /home/USER_9 a"
    )
    assert anonymizer.text("bob@corp.example.com carol") == "user1@example.invalid USER_1"


def test_folders_under_root_and_shared_homes_are_no_ones_name() -> None:
    # /root is root's own home: `src` in /root/src is a folder, and hiding it as a user's name
    # replaced every `src` of the export (src/app.py became USER_1/app.py).
    anonymizer = privacy.Anonymizer({})
    text = "built in /root/src from src/app.py; /Users/Shared/tools, C:\\Users\\Public\\x"
    anonymizer.learn(text)
    assert anonymizer.mapping == {}
    assert anonymizer.text(text) == text


def test_an_address_learned_once_keeps_its_placeholder() -> None:
    anonymizer = privacy.Anonymizer({"bob@corp.example.com": "email"})
    anonymizer.learn("again bob@corp.example.com, and new@corp.example.com")
    assert anonymizer.mapping == {
        "bob@corp.example.com": "user1@example.invalid",
        "new@corp.example.com": "user2@example.invalid",
    }


# -- values ----------------------------------------------------------------------------------


def test_ids_and_vocabularies_are_kept_and_text_is_hidden() -> None:
    anonymizer = privacy.Anonymizer({"alicew": "user"})
    row = {
        "id": "alicew-1",
        "session_id": "alicew-laptop",
        "content_hash": "alicew",
        "type": "alicew",
        "Status": "alicew",
        "client_uuid": "alicew",
        "api_key": "alicew",
        "line_anchor": "alicew",
        "content": "alicew said so",
        "count": 3,
        "score": None,
    }
    assert {c: anonymizer.value(v, c) for c, v in row.items()} == {
        **row,
        "content": "USER_1 said so",
    }


def test_json_in_a_column_is_hidden_inside_and_stays_json() -> None:
    anonymizer = privacy.Anonymizer({"alicew": "user"})
    provenance = json.dumps(
        {"by": "alicew", "session_id": "alicew-laptop", "paths": ["/x/alicew", 3], "n": 1}
    )
    hidden = anonymizer.value("  " + provenance + "\n", "provenance")
    assert json.loads(hidden) == {
        "by": "USER_1",
        "session_id": "alicew-laptop",
        "paths": ["/x/USER_1", 3],
        "n": 1,
    }
    # Text that only looks like JSON is hidden as text.
    assert anonymizer.value("[alicew's notes]", "content") == "[USER_1's notes]"
    assert anonymizer.value("{alicew}", None) == "{USER_1}"
    assert anonymizer.value({1: "alicew"}) == {1: "USER_1"}


def test_an_export_is_anonymized_with_its_root_and_says_so() -> None:
    data = {
        "format": privacy.FORMAT,
        "root": "/home/alicew/shop",
        "tables": {"memories": [{"id": "M-1", "content": "ask bob@corp.example.com"}]},
    }
    out, mapping = privacy.anonymize(data, {"alicew": "user", "/home/alicew": "home"})
    assert out["root"] == "/home/USER_H1/shop"
    assert out["anonymized"] is True
    assert out["tables"]["memories"] == [{"id": "M-1", "content": "ask user1@example.invalid"}]
    assert mapping["bob@corp.example.com"] == "user1@example.invalid"
    assert "anonymized" not in data and data["root"] == "/home/alicew/shop"  # a copy
    assert privacy.anonymize({"tables": {}}, {})[0]["root"] == ""


# -- the store rewritten ---------------------------------------------------------------------


def test_anonymizing_in_place_hides_names_everywhere_and_keeps_ids(
    quiet_identity: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("USER", "carolq")
    with _store(tmp_path / "shop") as store:
        sessions.start(store, session_id="carolq-laptop", agent="claude-code", now=NOW)
        kept = memory.add(
            store,
            "carolq moved the cache; mail carol@corp.example.com",
            type="decision",
            session_id="carolq-laptop",
            now=NOW,
        )
        gone = memory.add(store, "carolq's scratch note", type="finding", now=NOW)
        lifecycle.delete(store, memory_ids=[gone["id"]], now=NOW)
        events.append(
            store,
            events.Event(
                "file.changed",
                actor="editor",
                path="notes/carolq.md",
                data={"by": "carolq"},
                ts=NOW,
            ),
        )
        assert search.search(store, "carolq", record_access=False, now=NOW)

        result = privacy.anonymize_store(store)

        assert result["replaced"] >= 3 and result["names"] >= 2
        # Ids untouched: the memory still points at its session, which still opens by its id.
        row = memory.get(store, kept["id"], record_access=False)
        assert row["session_id"] == "carolq-laptop"
        assert row["content"] == "USER_1 moved the cache; mail user1@example.invalid"
        assert sessions.get(store, "carolq-laptop")["id"] == "carolq-laptop"
        # The search index was rebuilt from the new text.
        assert search.search(store, "carolq", record_access=False, now=NOW) == []
        assert [r["id"] for r in search.search(store, "USER_1", record_access=False, now=NOW)] == [
            kept["id"]
        ]
        # The trash was rewritten too: what comes back is the anonymized note.
        lifecycle.undelete(store, gone["id"], now=NOW)
        assert memory.get(store, gone["id"], record_access=False)["content"] == (
            "USER_1's scratch note"
        )
        # Events refuse updates (append-only): they are replaced, same id, same time.
        changed = store.query("SELECT * FROM events WHERE kind = 'file.changed'")
        assert [(e["ts"], e["path"], json.loads(e["data"])) for e in changed] == [
            (NOW, "notes/USER_1.md", {"by": "USER_1"})
        ]
        db = store.dir / "engram.db"
    text = db.read_bytes()
    assert b"carolq moved" not in text and b"carol@corp.example.com" not in text
