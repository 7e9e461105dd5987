"""Recall that answers from what was said and what was extracted, at any point in time."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from memctl import BadInput, IngestOptions, Memory
from memctl.recall import recall
from memctl.recall.fusion import reinforce, rrf
from memctl.recall.query import parse
from memctl.recall.rankers import EntityGraph, EpisodeText, FactText
from memctl.store.search import Window
from tests.conftest import write_jsonl

FIXTURE = Path(__file__).parent.parent / "fixtures" / "team.facts.jsonl"


def chat(path: Path, *turns: tuple[str, str, str]) -> Path:
    """A generic chat log: (time, what the user said, the reply) per turn."""
    lines = []
    for at, user, reply in turns:
        lines += [{"role": "user", "content": user, "timestamp": at},
                  {"role": "assistant", "content": reply, "timestamp": at}]
    return write_jsonl(path, lines)


@pytest.fixture
def frontend(memory: Memory, tmp_path: Path) -> Memory:
    """A session about a build tool, with a lot of talk that shares its common words."""
    memory.ingest([chat(
        tmp_path / "frontend.jsonl",
        ("2024-03-01T10:00:00Z", "should we use webpack or vite for the new dashboard?", "Both work; vite is faster."),
        ("2024-03-01T10:05:00Z", "ok, fine, let's do vite", "Done: the dashboard now builds with Vite."),
        ("2024-03-02T09:00:00Z", "what do we use for the test runner", "We use pytest for the backend tests."),
        ("2024-03-02T09:30:00Z", "we should use types everywhere", "We use mypy in CI."),
        ("2024-03-03T11:00:00Z", "we need to decide on a logo colour", "Blue it is, we decided."),
    )], IngestOptions())
    return memory


def turns(result) -> list:
    """The episodes found, in order: each alone, or each turn of a conversation found in several."""
    return [turn for r in result.results if r.kind in ("episode", "session")
            for turn in (r.turns if r.kind == "session" else [r])]


def said(result) -> list[str]:
    """The first line of each episode's snippet, its marks taken off."""
    return [r.snippet.split("\n")[0].replace("**", "") for r in turns(result)]


def test_what_was_said_is_found_when_no_fact_was_extracted(frontend):
    result = frontend.recall("what did we decide about vite")
    assert "User: ok, fine, let's do vite" in said(result)[:3]
    top = turns(frontend.recall("let's do vite"))[0]
    assert top.kind == "episode" and "**vite**" in top.snippet.lower() and top.text is None
    assert top.reference_time == "2024-03-01T10:05:00.000000Z" and top.format == "jsonl"
    # One conversation found in several turns is one result: its title, span and size once,
    # then the turns found, best first; as JSON it names its source by its place in "sessions".
    session = result.results[0]
    assert session.kind == "session" and session.title == "should we use webpack or vite for the new dashboard?"
    assert session.participants == ["user", "assistant"] and session.episodes >= len(session.turns) >= 2
    json = result.to_json()["results"][0]
    assert list(json) == ["kind", "session", "title", "first_at", "last_at", "episodes", "participants", "turns"]
    assert list(json["turns"][0]) == ["episode_id", "reference_time", "snippet", "chars"]
    assert result.to_json()["sessions"][json["session"]] == {"source": top.source}
    whole = turns(frontend.recall("let's do vite", full=True))[0]
    assert whole.text == "User: ok, fine, let's do vite\n\nAssistant: Done: the dashboard now builds with Vite."
    assert whole.chars == len(whole.text) == top.chars


def test_stop_words_alone_do_not_match(frontend):
    # "what do we use for the" matches every turn; only "test runner" should rank.
    assert said(frontend.recall("what do we use for the test runner", limit=1)) == [
        "User: what do we use for the test runner"]
    # A question of nothing but stop words would match any text: it is refused, saying to
    # quote it (issue 30: "the and of" gave ten results); quoted, it searches as a phrase.
    with pytest.raises(BadInput, match="only stop words"):
        frontend.recall("the and of")
    assert said(frontend.recall('"what do we use"', limit=3))[0] == "User: what do we use for the test runner"


def test_stemming_and_quoted_phrases(frontend):
    assert said(frontend.recall("deciding logos", limit=1)) == ["User: we need to decide on a logo colour"]
    phrase = said(frontend.recall('"should we use"', kind="episode"))
    assert phrase and all("should we use" in text for text in phrase)
    assert "User: what do we use for the test runner" not in phrase  # has the words, not the phrase


def test_abbreviations_and_irregular_forms_search_as_the_word_they_stand_for(memory):
    memory.ingest([FIXTURE], IngestOptions())
    # "DB" is "database" and "led" is "leads", which stemming alone does not join
    assert memory.recall("what's billing's DB", kind="fact").results[0].object == "Postgres"
    led = memory.recall("who led the billing team before Sam", kind="fact")
    assert ("Dana", "ended") in [(r.subject, r.status) for r in led.results]
    assert memory.recall("when did billing migrate to postgres", kind="fact").results[0].object == "Postgres"
    assert parse("which dbs").parts() == ['("database" OR "db")']
    assert parse("which db").kind_match() == '("database" OR "db")'


@pytest.mark.parametrize(("question", "implied"), [
    ("Who is the head of the billing team?", "lead"), ("who's in charge of billing", "lead"),
    ("who was running the mobile team in June", "lead"), ("who runs billing", "lead"),
    ("Which city is Felix based in?", "lives"),
    ("git reset HEAD of the branch", None), ("how do I run the tests", None), ("what is the head commit", None),
])
def test_a_way_of_asking_implies_the_word_facts_state_it_with(question, implied):
    terms = parse(question).terms
    assert (implied in terms) if implied else not {"lead", "lives"} & set(terms)


def test_who_is_in_charge_is_who_leads(memory):
    memory.ingest([FIXTURE], IngestOptions())
    for question in ("who's in charge of billing", "who is the head of the billing team"):
        assert memory.recall(question, kind="fact").results[0].subject == "Sam", question


@pytest.mark.parametrize("hostile", ['"', "*", "NEAR(", "-", "vite AND", "OR OR", "col:vite", "vite*", "(vite",
                                     "🚀 vite", "x" * 10_000, "vite " * 3_000, "'; DROP TABLE episodes; --"])
def test_hostile_queries_give_results_or_one_clear_error(frontend, hostile):
    try:
        result = frontend.recall(hostile)
    except BadInput as error:
        assert ("no words" in str(error) or "only stop words" in str(error)) and "\n" not in str(error)
        return
    assert isinstance(result.results, list)
    assert frontend.stats().episodes == 5


@pytest.mark.parametrize("hostile", ['"', "🚀", "NEAR(", "*"])
def test_hostile_queries_on_the_command_line_are_one_line(cli, tmp_path, hostile):
    chat(tmp_path / "c.jsonl", ("2024-03-01T10:00:00Z", "let's do vite", "ok"))
    assert cli("ingest", tmp_path / "c.jsonl").code == 0
    run = cli("recall", hostile, "--json")
    if run.code == 0:
        assert isinstance(run.json()["results"], list) and run.err == ""
    else:
        assert run.code == 2 and run.err.count("\n") == 1 and run.err.startswith("memctl: error: query")


def test_the_window_is_inside_every_ranker_so_a_limit_never_hides_what_was_said_in_time(memory, tmp_path):
    # One early mention of the deploy target, then many later ones.
    later = [(f"2024-06-{day:02d}T10:00:00Z", f"deploy target talk number {day}", "ok") for day in range(1, 29)]
    memory.ingest([chat(tmp_path / "d.jsonl", ("2024-01-05T10:00:00Z", "deploy target is fly.io", "noted"), *later)],
                  IngestOptions())
    assert said(memory.recall("deploy target", as_of="2024-02-01", limit=1)) == ["User: deploy target is fly.io"]
    window = said(memory.recall("deploy target", since="2024-06-10", until="2024-06-12", limit=10))
    assert window == ["User: deploy target talk number 10", "User: deploy target talk number 11"] or \
        sorted(window) == ["User: deploy target talk number 10", "User: deploy target talk number 11"]
    with pytest.raises(BadInput, match="since"):
        memory.recall("deploy", since="2024-06-12", until="2024-06-10")


def test_an_undone_episode_is_found_only_as_known_before_its_undo(frontend, clock):
    (vite,) = [e.id for e in frontend.episodes() if "let's do vite" in frontend.show(e.id).content]
    before_undo = frontend.now()
    clock.advance(seconds=5)
    frontend.undo([vite], apply=True)
    ids = lambda **when: [r.episode_id for r in turns(frontend.recall("let's do vite", kind="episode", **when))]  # noqa: E731
    assert vite not in ids()
    assert vite in ids(known_at=before_undo, as_of="2024-12-31")
    clock.advance(seconds=5)
    frontend.undo([frontend.operations()[-1].id], apply=True)  # undo the undo: held again from now on
    assert vite in ids()


@pytest.mark.sqlite_only
def test_a_purge_leaves_no_copy_of_the_text_in_the_file(tmp_path, clock, db_path):
    memory = Memory.open(db_path, clock)
    memory.ingest([chat(tmp_path / "s.jsonl", ("2024-03-01T10:00:00Z", "the codename is zebracornflakes", "ok"),
                        ("2024-03-02T10:00:00Z", "unrelated", "fine"))], IngestOptions())
    (episode,) = [r.episode_id for r in memory.recall("zebracornflakes").results]
    clock.advance(seconds=1)
    memory.undo([episode], apply=True, purge=True)
    assert memory.recall("zebracornflakes").results == []
    memory.close()
    raw = b"".join(p.read_bytes() for p in tmp_path.glob("memory.db*"))
    assert b"zebracornflakes" not in raw and b"unrelated" in raw
    with sqlite3.connect(db_path) as conn:
        conn.execute("INSERT INTO episodes_fts (episodes_fts) VALUES ('integrity-check')")


def test_each_ranker_alone(memory, tmp_path):
    memory.ingest([FIXTURE], IngestOptions())
    db, window = memory.db, Window(as_of="2024-03-01T00:00:00.000000Z")
    query = parse("which database does billing use")
    facts = FactText().rank(db, query, window, 10)
    assert facts and all(kind == "fact" for kind, _ in facts)
    assert all(kind == "episode" for kind, _ in EpisodeText().rank(db, query, window, 10))
    # The graph finds the facts about billing, though "tell me about" matches no text.
    about = EntityGraph().rank(db, parse("tell me about billing"), window, 10)
    assert FactText().rank(db, parse("tell me about billing"), window, 10) != about
    objects = {memory.db.execute("SELECT o.name FROM facts f JOIN entities o ON o.id = f.object_id WHERE f.id = ?",
                                 [fact_id]).fetchone()[0] for _, fact_id in about}
    assert "MySQL" in objects


def test_rrf_and_a_fact_taking_in_its_episodes():
    scores = rrf([[("fact", 1), ("episode", "a")], [("episode", "a"), ("episode", "b")]])
    assert scores[("episode", "a")] == pytest.approx(1 / 62 + 1 / 61)
    merged = reinforce(scores, {1: ["a"]})
    assert ("episode", "a") not in merged and merged[("fact", 1)] == pytest.approx(1 / 61 + 1 / 62 + 1 / 61)
    assert merged[("episode", "b")] == scores[("episode", "b")]


def test_a_fact_and_the_episode_it_came_from_fill_one_place(memory, tmp_path):
    write_jsonl(tmp_path / "f.jsonl", [{"reference_time": "2024-01-01", "content": "billing moved to Postgres",
                                        "facts": [{"subject": "billing", "predicate": "uses", "object": "Postgres"}]}])
    memory.ingest([tmp_path / "f.jsonl"], IngestOptions())
    results = memory.recall("billing postgres").results
    # (the summary of billing, which the question names, heads the facts about it)
    assert [r.kind for r in results] == ["summary", "fact"] and len(results[1].episodes) == 1


def test_recall_json_and_table_on_the_command_line(cli, tmp_path):
    chat(tmp_path / "c.jsonl", ("2024-03-01T10:00:00Z", "ok, fine, let's do vite", "Done."))
    assert cli("ingest", tmp_path / "c.jsonl", "--extractor", "rules").code == 0
    found = cli("recall", "what did we decide about vite", "--json").json()["results"]
    assert found[0]["kind"] == "episode" and "**vite**" in found[0]["snippet"] and "text" not in found[0]
    whole = cli("recall", "what did we decide about vite", "--json", "--full").json()["results"]
    assert whole[0]["text"] == "User: ok, fine, let's do vite\n\nAssistant: Done."
    assert cli("recall", "vite", "--kind", "fact", "--json").json()["results"] == []
    table = cli("recall", "vite")
    assert table.code == 0 and "let's do" in table.out and "said" in table.out
    run = cli("recall", "vite", "--kind", "nonsense")
    assert run.code == 2 and "--kind" in run.err


def test_facts_lists_without_a_question(cli):
    assert cli("ingest", FIXTURE).code == 0
    now = cli("facts", "--subject", "billing", "--json").json()
    assert {f["object"] for f in now} >= {"Postgres"} and all(f["subject"].lower() == "billing" for f in now)
    then = cli("facts", "--subject", "Billing", "--predicate", "primary database", "--as-of", "2024-03-01", "--json")
    assert [f["object"] for f in then.json()] == ["MySQL"]
    every = cli("facts", "--subject", "billing", "--predicate", "primary_database", "--history", "--json").json()
    assert [f["object"] for f in every] == ["MySQL", "Postgres"]
    assert cli("facts").code == 0
    for bad, flag in ((["--limit", "0"], "--limit"), (["--as-of", "yesterday"], "--as-of")):
        run = cli("facts", *bad)
        assert run.code == 2 and run.err.count("\n") == 1 and flag in run.err
    run = cli("recall", "billing", "--since", "2024-06-01", "--until", "2024-01-01")
    assert run.code == 2 and "--since must be before" in run.err


def test_library_recall_takes_the_rankers_it_is_given(frontend):
    result = recall(frontend.db, "vite", now=frontend.now(), rankers=(EpisodeText(),))
    assert result.results and all(r.kind in ("episode", "session") for r in result.results)


def test_the_ranked_candidates_grow_until_the_window_has_enough(memory, tmp_path):
    # The one text in the window is the worst match (long, one mention): with a limit of
    # 1 the first four candidates are all outside the window, and the search goes deeper.
    early = "deploy " + "unrelated words " * 200
    later = [(f"2024-06-{day:02d}T10:00:00Z", f"deploy target deploy target {day}", "ok") for day in range(1, 29)]
    memory.ingest([chat(tmp_path / "d.jsonl", ("2024-01-05T10:00:00Z", early, "noted"), *later)], IngestOptions())
    from memctl.store import search

    found = search.episodes_matching(memory.db, parse("deploy target").parts(),
                                     Window(as_of="2024-02-01T00:00:00.000000Z"), 1)
    assert len(found) == 1 and memory.show(found[0]).reference_time.startswith("2024-01-05")


def test_the_fact_rankers_apply_the_window_before_their_limit(memory, tmp_path):
    # Forty services use Kafka from 2025 on; one used it in 2020 and stopped in 2021.
    lines = [{"reference_time": "2020-01-01", "facts": [
        {"subject": "old service", "predicate": "uses", "object": "Kafka", "invalid_at": "2021-01-01"}]}]
    lines += [{"reference_time": f"2025-01-{n % 28 + 1:02d}", "facts": [
        {"subject": f"service {n}", "predicate": "uses", "object": "Kafka"}]} for n in range(40)]
    memory.ingest([write_jsonl(tmp_path / "k.jsonl", lines)], IngestOptions())
    window = Window(as_of="2020-06-01T00:00:00.000000Z")
    for ranker, question in ((FactText(), "who uses kafka"), (EntityGraph(), "kafka")):
        (found,) = ranker.rank(memory.db, parse(question), window, 1)
        subject = memory.db.execute("SELECT s.name FROM facts f JOIN entities s ON s.id = f.subject_id "
                                    "WHERE f.id = ?", [found[1]]).fetchone()[0]
        assert subject == "old service", ranker.name


def test_a_fact_matching_one_word_of_a_longer_question_is_chance_not_an_answer(memory, tmp_path):
    lines = [{"reference_time": "2024-01-01", "facts": [
        {"subject": "Felix", "predicate": "is based in", "object": "Dublin", "fact": "Felix just moved to Dublin."},
        {"subject": "Priya", "predicate": "lives in", "object": "Nairobi", "fact": "Priya just moved to Nairobi."}]}]
    memory.ingest([write_jsonl(tmp_path / "m.jsonl", lines)], IngestOptions())
    found = FactText().rank(memory.db, parse("where did Priya live before moving to Nairobi"),
                            Window(as_of=memory.now()), 10)
    texts = [memory.db.execute("SELECT fact FROM facts WHERE id = ?", [fact_id]).fetchone()[0] for _, fact_id in found]
    assert texts == ["Priya just moved to Nairobi."]
    assert len(FactText().rank(memory.db, parse("moved"), Window(as_of=memory.now()), 10)) == 2  # one word: both


def test_over_the_rank_budget_one_common_word_alone_does_not_rank(memory, tmp_path, monkeypatch):
    """Above RANK_BUDGET matches, a text holding only a common word of the question is
    not scored; texts with a rarer word, or with two common ones, still are; a question
    whose rarer words and pairs match nothing falls back to every match."""
    from memctl.store import search

    at = [f"2024-02-{n % 28 + 1:02d}T10:{n % 60:02d}:00Z" for n in range(60)]
    turns = [(at[n], f"team standup {n}", "noted") for n in range(30)]
    turns += [(at[30 + n], f"meeting notes {n}", "noted") for n in range(30)]
    turns += [("2024-03-01T10:00:00Z", f"team meeting {n} ran long", "ok") for n in range(3)]
    turns += [("2024-03-02T10:00:00Z", "zanzibar was on the agenda", "ok")]
    memory.ingest([chat(tmp_path / "t.jsonl", *turns)], IngestOptions())
    window = Window(as_of=memory.now())

    def found(question: str) -> set[str]:
        return {memory.show(i).content.split("\n")[0] for i in
                search.episodes_matching(memory.db, parse(question).parts(), window, 100)}

    assert len(found("team meeting zanzibar")) == 64  # under the budget: every text holding any word
    monkeypatch.setattr(search, "RANK_BUDGET", 20)
    assert found("team meeting zanzibar") == {"User: zanzibar was on the agenda",
                                              *(f"User: team meeting {n} ran long" for n in range(3))}
    # The pairs match more than the budget: the rarer words alone rank.
    monkeypatch.setattr(search, "RANK_BUDGET", 2)
    assert found("team meeting zanzibar") == {"User: zanzibar was on the agenda"}
    # Nothing rarer and no pair matches: every text holding a word, as under the budget.
    assert len(found("team ostrich")) == 33


def test_a_fact_needs_two_words_even_when_the_ranking_is_narrowed(memory, tmp_path, monkeypatch):
    from memctl.store import search

    lines = [{"reference_time": "2024-01-01", "facts": [
        {"subject": f"service {n}", "predicate": "uses", "object": "Kafka"} for n in range(20)]}]
    memory.ingest([write_jsonl(tmp_path / "k.jsonl", lines)], IngestOptions())
    window = Window(as_of=memory.now())
    monkeypatch.setattr(search, "RANK_BUDGET", 5)
    assert len(search.facts_matching(memory.db, parse("kafka uses").parts(), window, 50)) == 20
    assert search.facts_matching(memory.db, parse("kafka ostrich").parts(), window, 50) == []
