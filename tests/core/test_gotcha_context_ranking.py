"""The gotchas listed for a task (`gotchas.context`): which are in and which are out, in what
order, and what each entry shows. Each piece of evidence is tested on both sides: a task file
matching a gotcha's glob at the root and in a folder (and given with Windows separators) vs a
file that does not; a word of the task in a gotcha vs only a task verb; equal evidence broken by
severity vs more evidence winning."""

from __future__ import annotations

from memory_core.gotchas.context import context_for_task, format_markdown, rank_for_task
from memory_core.gotchas.records import Anchor, Gotcha, add
from memory_core.store import Store


def _ids(store: Store, task: str, files: tuple[str, ...] = (), limit: int = 5) -> list[str]:
    return [gotcha.id for _score, gotcha in rank_for_task(store, task, files, limit)]


def test_a_glob_naming_a_file_matches_it_in_any_folder(store: Store) -> None:
    gotcha = add(store, "Settings are read once at import", related_files=["settings.py"])
    assert _ids(store, "rename a variable", ("settings.py",)) == [gotcha.id]
    assert _ids(store, "rename a variable", ("app/settings.py",)) == [gotcha.id]
    assert _ids(store, "rename a variable", ("app/urls.py",)) == []
    xml = add(store, "The loader resolves entities", related_files=["XmlLoader.py"])
    assert _ids(store, "rename a variable", ("./XmlLoader.py",)) == [xml.id]


def test_task_files_given_with_windows_separators_or_dot_slash_match(store: Store) -> None:
    gotcha = add(store, "The pool deadlocks with size 1", related_files=["src/db.py"])
    assert _ids(store, "rename a variable", ("src\\db.py",)) == [gotcha.id]
    assert _ids(store, "rename a variable", ("./src/db.py",)) == [gotcha.id]
    assert _ids(store, "rename a variable", ("src\\dbx.py",)) == []


def test_a_file_an_anchor_cites_is_evidence(store: Store) -> None:
    (store.root / "db.py").write_text("def connect():\n    return open_pool(size=1)\n")
    gotcha = add(
        store,
        "The pool deadlocks with size 1",
        anchors=[Anchor("db.py", 1, 1, None, "    return open_pool(size=1)")],
    )
    assert _ids(store, "rename a variable", ("db.py",)) == [gotcha.id]
    assert _ids(store, "rename a variable", ("./db.py",)) == [gotcha.id]
    assert _ids(store, "rename a variable", ("models.py",)) == []


def test_task_verbs_alone_are_no_evidence(store: Store) -> None:
    add(
        store,
        "Fix imports before you add a module",
        description="use isort, then make",
        category="general",
    )
    assert context_for_task(store, "fix the login page and add a use case") == ""


def test_a_word_of_the_task_is_evidence(store: Store) -> None:
    gotcha = add(store, "Migrations lock the users table")
    assert _ids(store, "fix the migrations") == [gotcha.id]


def test_equal_evidence_is_ordered_by_severity_and_confirmation(store: Store) -> None:
    low = add(store, "Cache keys collide on tenant", severity="low")
    critical = add(store, "Cache is shared across tenant workers", severity="critical")
    medium = add(store, "Cache tenant ids are strings", severity="medium")
    unconfirmed = add(
        store, "Cache tenant prefix is optional", severity="medium", status="candidate"
    )
    ranked = rank_for_task(store, "look at the cache")
    assert [g.id for _s, g in ranked] == [critical.id, medium.id, unconfirmed.id, low.id]
    scores = [score for score, _g in ranked]
    # An unconfirmed medium and a confirmed low weigh the same; severity orders them.
    assert scores[0] > scores[1] > scores[2] == scores[3]


def test_more_evidence_outranks_severity(store: Store) -> None:
    critical = add(store, "Queue workers drop messages", severity="critical")
    low = add(store, "Queue retries double the invoice", severity="low")
    assert _ids(store, "queue retries for the invoice") == [low.id, critical.id]


def test_gotchas_with_no_evidence_are_left_out_and_the_limit_holds(store: Store) -> None:
    for i in range(4):
        add(store, f"Deploy step {i} needs the token", severity="critical")
    add(store, "Fonts render blurry in Safari", severity="critical")
    assert len(_ids(store, "deploy the app", limit=3)) == 3
    assert len(_ids(store, "deploy the app", limit=0)) == 0
    assert all("Safari" not in g.title for _s, g in rank_for_task(store, "deploy the app", (), 9))
    assert context_for_task(store, "") == ""


def test_each_entry_shows_what_a_user_needs(store: Store) -> None:
    (store.root / "db.py").write_text("def connect():\n    return open_pool(size=1)\n")
    anchored = add(
        store,
        "The pool deadlocks with size 1",
        description="Tests hang forever",
        workaround="use size=2",
        anchors=[Anchor("db.py", 1, 1, None, "    return open_pool(size=1)")],
    )
    candidate = add(store, "The pool leaks on reload", status="candidate", related_files=["*.py"])
    text = context_for_task(store, "the pool")
    assert text.startswith("## Known gotchas\n\n")
    assert f"- **[medium] The pool deadlocks with size 1** `{anchored.id}`\n" in text
    assert "  Tests hang forever\n  Workaround: use size=2\n  Files: db.py\n" in text
    assert f"- **[medium] The pool leaks on reload** (unconfirmed) `{candidate.id}`" in text
    assert "  Files: *.py" in text


def test_no_gotchas_format_to_nothing() -> None:
    assert format_markdown([]) == ""
    bare = Gotcha(id="g1", title="Bare")
    assert format_markdown([bare]) == "## Known gotchas\n\n- **[medium] Bare** `g1`\n"


def _scores(store: Store, task: str, files: tuple[str, ...] = ()) -> dict[str, float]:
    return {gotcha.id: score for score, gotcha in rank_for_task(store, task, files, 50)}


def test_each_kind_of_evidence_weighs_what_it_should(store: Store) -> None:
    """Word 2 each, category 3, the task quoting the gotcha's error 8, a task file 5 (a low,
    unconfirmed gotcha adds nothing for severity or confirmation)."""
    plain = {"severity": "low", "status": "candidate", "category": "general"}
    worded = add(store, "Startup imports numpy", description="Lazy loading helps", **plain)
    fixtures = add(store, "Fixtures leak", severity="low", status="candidate", category="test")
    tenant = add(store, "Tenant header missing", error_pattern="KeyError: 'tenant_id'", **plain)
    settings = add(store, "Settings read once", related_files=["settings.py"], **plain)
    # Words from the end of the title and the start of the description count alike.
    assert _scores(store, "numpy lazy") == {worded.id: 4.0}
    # The category named in the task, or only inferred from it ("pytest" is about tests).
    assert _scores(store, "review the test") == {fixtures.id: 3.0}
    assert _scores(store, "the pytest run is slow") == {fixtures.id: 3.0}
    assert _scores(store, "review the test fixtures") == {fixtures.id: 5.0}  # they add up
    # Quoting the error (inside a longer task) vs the same words without its shape.
    quoted = _scores(store, "KeyError: 'tenant_id' raised in billing")
    unquoted = _scores(store, "keyerror tenant id raised in billing")
    assert quoted[tenant.id] - unquoted[tenant.id] == 8.0
    assert _scores(store, "rename", ("settings.py",)) == {settings.id: 5.0}


def test_the_task_for_an_agent_lists_five_gotchas_at_most(store: Store) -> None:
    for i in range(6):
        add(store, f"Deploy step {i} needs the token")
    text = context_for_task(store, "deploy")
    assert text.count("\n- **[") == 5
    assert context_for_task(store, "deploy", limit=2).count("\n- **[") == 2


def _ranked_as_listed(store: Store, task: str, files: tuple[str, ...], limit: int) -> list:  # type: ignore[type-arg]
    """The ranking as it was first written, over every gotcha `list_gotchas` gives: what
    `rank_for_task` (which reads only what ranking needs of each gotcha) must equal."""
    from fnmatch import fnmatch

    from memory_core.gotchas.normalize import infer_category, normalize, words
    from memory_core.gotchas.records import list_gotchas
    from memory_core.text import STOPWORDS

    task_words = words(task) - (STOPWORDS | {"add", "fix", "make", "use"})
    category = infer_category(task)
    normalized = normalize(task).lower() if task.strip() else ""
    paths = [f.replace("\\", "/").lstrip("./") for f in files]
    scored = []
    for gotcha in list_gotchas(store):
        text = " ".join(
            [gotcha.title, gotcha.description, gotcha.workaround, gotcha.error_pattern or ""]
        )
        score = 2.0 * len(task_words & words(text))
        if gotcha.category in task_words or (category != "general" and gotcha.category == category):
            score += 3.0
        trigger = normalize(gotcha.error_pattern).lower() if gotcha.error_pattern else ""
        if trigger and normalized and (trigger in normalized or normalized in trigger):
            score += 8.0
        if any(
            any(fnmatch(p, g) or fnmatch(p, f"**/{g}") for g in gotcha.related_files)
            or any(a.path == p for a in gotcha.anchors)
            for p in paths
        ):
            score += 5.0
        if score <= 0:
            continue
        score += (3 - min(gotcha.severity_rank, 3)) * 0.5 + (
            0.5 if gotcha.status == "confirmed" else 0.0
        )
        scored.append((score, gotcha))
    scored.sort(key=lambda item: (-item[0], item[1].severity_rank, item[1].id))
    return scored[:limit]


def test_the_ranking_is_the_same_as_over_every_listed_gotcha(store: Store) -> None:
    """Many gotchas of every kind of evidence, stored (open, candidate, resolved, anchored) and
    from the team file (one of them also stored): the same gotchas, scores and order, and
    the same Gotcha objects, for tasks with words, a quoted error, files, or nothing."""
    import random

    from memory_core.gotchas import records

    chooser = random.Random(32)
    topics = ["cookie", "pool", "migration", "timeout", "import", "cache", "login", "upload"]
    files = ["app.py", "src/db.py", "settings.py", "web/views.py", "docs/index.md"]
    with records.exports_deferred(store):  # the exports written once, not per gotcha
        for index in range(25):
            topic = chooser.choice(topics)
            add(
                store,
                f"The {topic} breaks when {chooser.choice(topics)} runs ({index})",
                description=f"Seen with the {chooser.choice(topics)} under load.",
                workaround=chooser.choice(["", f"Restart the {topic} worker."]),
                severity=chooser.choice(["critical", "high", "medium", "low"]),
                status=chooser.choice(["candidate", "confirmed", "resolved"]),
                related_files=chooser.sample(
                    ["*.py", "settings.py", "src/*", "views.py"], k=index % 3
                ),
                error_pattern=(f"TimeoutError: {topic} took {index} s" if index % 4 == 0 else None),
                anchors=(
                    [Anchor(chooser.choice(files), index, index, None, "x = 1")]
                    if index % 5 == 0
                    else []
                ),
            )
    shared = add(store, "The team's cookie rule", related_files=["web/*"])
    team = store.root / ".engram" / "team"
    team.mkdir()
    (team / "gotchas.toml").write_text(
        "[[gotchas]]\n"
        'id = "G-0000aaaa"\n'
        'title = "Uploads over 10 MB time out behind the proxy"\n'
        'related_files = ["web/*.py"]\n'
        'error_pattern = "TimeoutError: upload took 30 s"\n'
        "[[gotchas]]\n"
        f'id = "{shared.id}"\n'
        'title = "The team file says this cookie rule differently"\n'
        'severity = "critical"\n'
    )
    assert any(g.id == "G-0000aaaa" for g in records.team_only(store))
    tasks = [
        "",
        "fix the cookie in the login view",
        "TimeoutError: upload took 30 s",
        "the pool and the migration",
        "rename a variable",
    ]
    file_sets: list[tuple[str, ...]] = [(), ("app.py",), ("src/db.py", "web/views.py")]
    for task in tasks:
        for chosen in file_sets:
            for limit in (3, 100):
                expected = _ranked_as_listed(store, task, chosen, limit)
                got = rank_for_task(store, task, chosen, limit)
                assert [(s, g.id) for s, g in got] == [(s, g.id) for s, g in expected]
                assert [g for _s, g in got] == [g for _s, g in expected], (task, chosen)
    ranked = dict((g.id, g) for _s, g in rank_for_task(store, "the upload", ("web/v.py",), 100))
    assert "G-0000aaaa" in ranked  # from the team file
    assert ranked[shared.id].title == "The team's cookie rule"  # the stored one, not the file's
