"""A question that asks what happened in a stretch of time ("what changed in 2024", "what did
we work on last week") lists that stretch: the facts that began or ended in it and the
sessions that spoke in it, latest first."""

from __future__ import annotations

from pathlib import Path

import pytest

from memctl import IngestOptions, Memory
from memctl.recall.query import parse
from tests.conftest import write_jsonl

FIXTURE = Path(__file__).parent.parent / "fixtures" / "team.facts.jsonl"


@pytest.fixture
def team(memory: Memory) -> Memory:
    memory.ingest([FIXTURE], IngestOptions())
    return memory


def shown(result) -> list[tuple[str, str]]:
    return [("fact", f"{r.object} {r.status}") if r.kind == "fact" else ("said", r.snippet[:25]) for r in result.results]


def test_what_changed_in_a_year_is_its_changes_latest_first(team):
    result = team.recall("what changed in 2024?")
    assert result.what_happened and (result.since, result.until) == ("2024-01-01T00:00:00.000000Z",
                                                                      "2025-01-01T00:00:00.000000Z")
    # Redis ended in September, the file's turns of 2024 last spoke then too (shown by its first of 2024),
    # Postgres replaced MySQL in April
    assert shown(result) == [("fact", "Redis ended"), ("said", "Retro: billing finished t"),
                             ("fact", "MySQL superseded"), ("fact", "Postgres current")]
    assert [r.score for r in result.results] == sorted((r.score for r in result.results), reverse=True)
    assert result.to_json()["what_happened"] is True
    assert "what_happened" not in team.recall("which database does billing use").to_json()


def test_an_open_window_and_a_question_of_nothing_but_time(team):
    since = team.recall("since June 2024")
    assert since.what_happened and shown(since) == [("fact", "Redis ended"), ("said", "We dropped Redis from bil")]
    assert team.recall("anything new since June 2024?", kind="fact").results[0].object == "Redis"


def test_a_window_given_as_options_lists_what_happened_too(team):
    given = team.recall("what changed", since="2024-06-01")
    assert given.what_happened and given.time_words is None and shown(given)[0] == ("fact", "Redis ended")
    assert sorted(shown(team.recall("what happened?", until="2023-03-01", kind="fact"))) == [
        ("fact", "MySQL superseded"), ("fact", "billing team ended")]  # both began on 14 February 2023
    # with no window at all, the words are searched for
    assert not team.recall("what changed").what_happened


def test_a_question_about_a_thing_in_a_window_still_searches(team):
    result = team.recall("what happened to Redis in 2024")
    assert not result.what_happened and result.results[0].object == "Redis"
    assert not team.recall("who leads billing since 2024").what_happened


def test_what_happened_keeps_to_the_kind_and_to_what_was_known(team):
    assert {r.kind for r in team.recall("what happened in 2023", kind="episode").results} == {"episode"}
    assert team.recall("what happened in 2023", known_at="2000-01-01").results == []


def test_each_session_is_listed_once_by_its_first_turn_in_the_window(memory, tmp_path):
    def session(name: str, *turns: tuple[str, str]) -> Path:
        return write_jsonl(tmp_path / f"{name}.jsonl", [{"role": "user", "content": text, "timestamp": at}
                                                        for at, text in turns])

    memory.ingest([
        session("a", ("2025-03-03T09:00:00Z", "set up the staging cluster"), ("2025-03-04T09:00:00Z", "add alerts")),
        session("b", ("2025-03-05T10:00:00Z", "write the release notes"), ("2025-04-02T10:00:00Z", "ship it")),
        session("c", ("2025-02-01T10:00:00Z", "a February chat")),
    ], IngestOptions())
    result = memory.recall("what did we work on in March 2025")
    assert result.what_happened
    # b spoke last in March (its April turn is outside), then a; c spoke in February
    assert [r.snippet for r in result.results] == ["User: write the release notes", "User: set up the staging cluster"]


def test_the_command_line_says_it_lists_what_happened(cli):
    assert cli("ingest", FIXTURE).code == 0
    run = cli("recall", "what changed in 2024")
    assert run.code == 0 and "what happened from 2024-01-01 00:00:00Z to 2025-01-01 00:00:00Z" in run.err  # a pipe: rows only


@pytest.mark.parametrize(("question", "asks"), [
    ("what changed", True), ("what did we work on", True), ("anything new?", True), ("what did we do", True),
    ("what happened to Redis", False), ("who leads billing", False), ('"what changed"', False),
])
def test_questions_that_ask_what_happened(question, asks):
    assert parse(question, timed=True).asks_what_happened() is asks


def test_a_session_is_listed_by_a_turn_that_asks_for_something_not_by_a_greeting(memory, tmp_path):
    def session(name: str, *turns: tuple[str, str]) -> Path:
        return write_jsonl(tmp_path / f"{name}.jsonl", [{"role": "user", "content": text, "timestamp": at}
                                                        for at, text in turns])

    memory.ingest([
        session("a", ("2025-03-03T09:00:00Z", "hi"), ("2025-03-03T09:01:00Z", "move the billing jobs to the new queue"),
                ("2025-03-03T09:05:00Z", "add a retry to the consumer")),
        session("b", ("2025-03-04T10:00:00Z", "hello there"), ("2025-03-04T10:01:00Z", "thanks!")),
    ], IngestOptions())
    result = memory.recall("what happened in March 2025")
    # a greeting says nothing of the session; one made of nothing else is listed by its first turn
    assert [r.snippet for r in result.results] == ["User: hello there", "User: move the billing jobs to the new queue"]
