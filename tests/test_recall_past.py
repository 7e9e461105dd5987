"""Recall asked with no time: what holds now answers, and what held before is found under it;
and a question that names the kind of thing it asks for ("which database") finds that kind."""

from __future__ import annotations

import time
from datetime import UTC, datetime
from pathlib import Path

import pytest

from memctl import IngestOptions, Memory
from memctl.recall.fusion import PAST_WEIGHT, discount_past, ranked
from memctl.recall.query import parse

FIXTURE = Path(__file__).parent.parent / "fixtures" / "team.facts.jsonl"


@pytest.fixture
def team(memory: Memory) -> Memory:
    memory.ingest([FIXTURE], IngestOptions())
    return memory


def answers(result) -> list[tuple[str, str | None]]:
    """(what, status) of each result: a fact's object, or an episode's first words (an
    entity's summary heading the facts about it is left out)."""
    return [(r.object, r.status) if r.kind == "fact" else (r.snippet.replace("**", "")[:20], None)
            for r in result.results if r.kind != "summary"]


def test_which_database_does_billing_use_is_postgres_with_mysql_under_it(team):
    # the task's own question: "Billing reports errors to Sentry" matches "billing use" as well as any
    result = team.recall("which database does billing use")
    assert answers(result)[:2] == [("Postgres", "current"), ("MySQL", "superseded")]
    assert result.results[0].score == result.results[1].score  # one place: the answer and what it replaced
    as_of = team.recall("which database does billing use", as_of="2025-03-01")
    assert answers(as_of)[0] == ("Postgres", "current")
    assert "MySQL" not in [r.object for r in as_of.results if r.kind == "fact"]  # a given time is strict
    assert answers(team.recall("which database does billing use", as_of="2024-03-01"))[0] == ("MySQL", "current")


def test_a_fact_that_ended_answers_a_question_about_it(team):
    result = team.recall("does billing still use Redis?")
    assert answers(result)[0] == ("Redis", "ended")
    assert result.results[0].kind == "summary" and "Redis (until 2024-09-12)" in result.results[0].summary
    assert result.results[1].invalid_at == "2024-09-12T13:05:00.000000Z"
    dana = team.recall("did Dana lead the billing team?").results
    assert (dana[0].kind, dana[0].entity, dana[1].subject) == ("summary", "Dana", "Dana")


def test_asked_in_the_present_what_holds_comes_first(team):
    # Redis matches "billing use" as well as Sentry does (better: its sentence says "uses")
    result = team.recall("what does billing use", kind="fact")
    assert result.results[0].status == "current" and result.results[0].object == "Sentry"
    assert ("Redis", "ended") in answers(result)
    # Dana's lead and Sam's match alike, and the episode saying Sam took over also ended Dana's: it goes to Sam
    leads = team.recall("who leads the billing team")
    assert [(r.subject, r.status) for r in leads.results[:2]] == [("Sam", "current"), ("Dana", "ended")]


def test_a_time_given_or_named_keeps_to_facts_valid_in_it(team):
    assert all(r.status == "current" for r in team.recall("billing", as_of="2026-01-01", kind="fact").results)
    named = team.recall("who was leading the billing team in mid 2023", kind="fact")
    assert "Sam" not in [r.subject for r in named.results]


def test_history_lists_each_slot_under_what_holds(team):
    result = team.recall("billing database", history=True, kind="fact")
    assert answers(result)[:2] == [("Postgres", "current"), ("MySQL", "superseded")]


def test_a_known_at_before_the_change_is_answered_as_memctl_then_believed(cli, tmp_path):
    # memctl learns of MySQL first, then of the move: asked as known in between, MySQL holds
    lines = FIXTURE.read_text().splitlines()
    first, later = tmp_path / "first.jsonl", tmp_path / "later.jsonl"
    first.write_text(lines[0] + "\n")
    later.write_text(lines[2] + "\n")
    assert cli("ingest", str(first)).code == 0
    time.sleep(0.01)
    between = datetime.now(UTC).isoformat()
    time.sleep(0.01)
    assert cli("ingest", str(later)).code == 0
    run = cli("recall", "which database does billing use", "--kind", "fact", "--known-at", between, "--json")
    assert [(r["object"], r["status"]) for r in run.json()["results"]] == [("MySQL", "current")]
    run = cli("recall", "which database does billing use", "--kind", "fact", "--json")
    assert [(r["object"], r["status"]) for r in run.json()["results"]] == [("Postgres", "current"),
                                                                           ("MySQL", "superseded")]


@pytest.mark.parametrize(("question", "kind"), [
    ("which database does billing use", ("database",)),
    ("What database?", ("database",)),
    ("what kind of test framework do we use", ("test", "framework")),
    ("which team does Sam lead", ("team",)),
    ("what did we decide about vite", ()),
    ("what is the deploy target", ()),
    ("who leads billing", ()),
])
def test_the_kind_a_question_asks_for(question, kind):
    assert parse(question).asked_kind == kind


def test_the_kind_asked_for_must_match_with_the_rest_of_the_question():
    assert parse("what kind of test framework do we use").kind_match() == '"test framework" AND ("use")'
    assert parse("what team").kind_match() == '"team"'
    assert parse("who leads billing").kind_match() is None


@pytest.mark.parametrize(("question", "back"), [
    ("does billing still use Redis?", True), ("who led billing before Sam", True), ("did we ever use Kafka", True),
    ("what happened with Redis", True),
    ("which database does billing use", False), ("who leads billing now", False),
])
def test_questions_that_look_back(question, back):
    assert parse(question).looks_back() is back


def test_a_fact_that_no_longer_holds_sits_under_what_replaced_it():
    scores = {("fact", 1): 0.02, ("fact", 2): 0.05, ("episode", "e"): 0.03, ("fact", 3): 0.01, ("fact", 4): 0.04}
    # 1 holds now, 2 held before it in the same slot; 3 and 4 are one many-valued slot's values, 4 ended
    timelines = {1: (("s", "p", None), True), 2: (("s", "p", None), False), 3: (("s", "q", 7), True),
                 4: (("s", "q", 8), False)}
    assert ranked(scores, 10, timelines) == [
        (("fact", 1), 0.05), (("fact", 2), 0.05), (("fact", 4), 0.04), (("episode", "e"), 0.03), (("fact", 3), 0.01)]
    assert ranked(scores, 1, timelines) == [(("fact", 1), 0.05)]
    # without timelines the scores alone order the list
    assert [key for key, _ in ranked(scores, 10)] == [("fact", 2), ("fact", 4), ("episode", "e"), ("fact", 1),
                                                    ("fact", 3)]
    discounted = discount_past(scores, timelines)
    assert discounted[("fact", 4)] == pytest.approx(0.04 * PAST_WEIGHT)
    assert discounted[("fact", 1)] == 0.02 and discounted[("episode", "e")] == 0.03


def test_what_happened_to_a_thing_asks_about_its_past(team):
    """Asked what happened with Redis, the fact that ended answers first: not Sentry, which
    shares the Redis fact's episode and still holds."""
    assert answers(team.recall("what happened with Redis"))[0] == ("Redis", "ended")


@pytest.fixture
def moved(memory: Memory):
    """An agent saved the old value as text, then the new one as a structured fact."""
    from memctl.extract import build_extractor

    said = memory.add_memory("Billing's primary database is MySQL.", reference_time="2024-01-10",
                             extractor=build_extractor("rules", clock=memory.clock))
    memory.clock.advance(days=1)
    memory.add_memory("Billing moved to Postgres.", reference_time="2024-06-01", facts=[
        {"subject": "billing", "predicate": "primary database", "object": "Postgres", "valid_at": "2024-06-01"}])
    return said.episode_id


def test_what_holds_now_outranks_the_text_that_stated_the_old_value(memory, moved):
    results = memory.recall("which database does billing use").results
    facts = [r for r in results if r.kind != "summary"]
    assert [(r.object, r.status) for r in facts[:2]] == [("Postgres", "current"), ("MySQL", "superseded")]
    assert moved in facts[1].episodes  # the text is the old fact's evidence, under what holds
    [old] = [r for r in memory.recall("which database does billing use", kind="episode").results
             if r.episode_id == moved]
    assert [(f["fact"], f["valid_at"]) for f in old.superseded_by] == [
        ("billing primary database Postgres", "2024-06-01T00:00:00.000000Z")]
    said = memory.recall("billing MySQL", kind="episode").results
    assert [r.episode_id for r in said][-1] == moved  # below the text of what holds


def test_an_episode_is_only_superseded_from_when_it_was(memory, moved, clock):
    then = memory.recall("billing MySQL", as_of="2024-03-01", kind="episode").results
    assert [(r.episode_id, r.superseded_by) for r in then] == [(moved, None)]
    before_the_fact_was_added = memory.recall("billing MySQL", known_at="2026-01-01T12:00:00Z", kind="episode").results
    assert [r.superseded_by for r in before_the_fact_was_added if r.episode_id == moved] == [None]
    # asked of what held before, the old text is not put below: it is the answer, and still says it was replaced
    back = memory.recall("did billing ever use MySQL", kind="episode").results
    assert back[0].episode_id == moved and back[0].superseded_by


def test_superseded_by_is_in_the_json_only_when_something_replaced_it(cli, memory, moved):
    data = memory.recall("billing MySQL", kind="episode").to_json()
    [old] = [r for r in data["results"] if r["episode_id"] == moved]
    assert old["superseded_by"][0]["fact"] == "billing primary database Postgres"
    assert all("superseded_by" not in r for r in data["results"] if r["episode_id"] != moved)
