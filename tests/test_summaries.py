"""Entity summaries a model writes, and the novelty gate that decides when (memctl.summarize):
one call per entity whose facts changed, none when they did not, the previous summary back
after an undo with no call, exact at --known-at, erased by a purge, owed when the model is
down. The model is the fake OpenAI-compatible server, through the real openai client."""

from __future__ import annotations

import random
from datetime import UTC, datetime
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memctl import IngestOptions, Memory
from memctl.extract.llm import LLMExtractor, make_client
from memctl.extract.rules import RulesExtractor
from memctl.store import summaries as store
from memctl.summary import facts_hash
from tests.conftest import FakeClock
from tests.fake_llm import API_KEY, FakeOpenAIServer

FIXTURE = Path(__file__).parent.parent / "fixtures" / "team.facts.jsonl"
SUBJECTS = {"billing", "Dana", "Sam"}  # the fixture's subjects


@pytest.fixture
def server():
    with FakeOpenAIServer(datetime.now(UTC)) as running:
        yield running


def model(server: FakeOpenAIServer, clock, name: str = "fake-normal") -> LLMExtractor:
    return LLMExtractor(make_client(api_key=API_KEY, base_url=server.base_url), name, clock, max_retries=0)


@pytest.fixture
def summarized(memory: Memory, server, clock) -> Memory:
    """The fixture ingested with a model that writes summaries."""
    memory.summarizer = None
    report = memory.ingest([FIXTURE], IngestOptions(), extractor=model(server, clock))
    assert report.summaries is not None and report.summaries.calls == server.summary_calls
    return memory


def say(memory: Memory, server, clock, when: str, subject: str, predicate: str, value: str, **extra):
    return memory.add_memory(f"{subject} {predicate} {value}", reference_time=when, extractor=model(server, clock),
                             facts=[{"subject": subject, "predicate": predicate, "object": value, **extra}])


def test_a_backfill_makes_one_call_per_entity_whose_facts_changed(summarized, server):
    report_calls = server.summary_calls
    assert report_calls == len(SUBJECTS)  # 5 episodes, 8 facts: one call for each subject, none per episode
    found = summarized.summary("billing")
    assert found.written_by == "llm:fake-normal" and found.written_at is not None
    assert found.summary.startswith("In short, billing, as of ") and "<think>" not in found.summary
    assert "Postgres" in found.summary and len(found.summary) <= 600
    [request] = [r for r in server.summary_requests if r.startswith("ENTITY: billing")]
    assert "LATEST EPISODES:" in request and "move from MySQL to Postgres" in request  # its latest episodes go too


def test_the_same_facts_again_cost_no_call(summarized, server, clock):
    before = server.summary_calls
    clock.advance(minutes=1)
    again = summarized.ingest([FIXTURE], IngestOptions(), extractor=model(server, clock))
    assert again.added == 0 and server.summary_calls == before
    restated = say(summarized, server, clock, "2025-01-01", "billing", "primary_database", "Postgres")
    assert server.summary_calls == before  # a restatement changes no fact: nothing to decide
    assert restated.summaries is None or restated.summaries.calls == 0


def test_an_ended_fact_refreshes_at_once(summarized, server, clock):
    before = server.summary_calls
    clock.advance(minutes=1)
    moved = say(summarized, server, clock, "2025-06-01", "billing", "primary_database", "CockroachDB")
    assert moved.summaries.refreshed == {"invalidated": 1} and server.summary_calls == before + 1
    assert "CockroachDB" in summarized.summary("billing").summary


def test_a_new_fact_waits_while_the_summary_is_fresh_then_refreshes_when_stale(summarized, server, clock):
    before = server.summary_calls
    clock.advance(minutes=1)
    added = say(summarized, server, clock, "2025-06-01", "billing", "on call", "Priya")
    assert added.summaries.skipped == {"fresh": 1} and server.summary_calls == before
    served = summarized.summary("billing")
    assert served.written_by == "facts" and "on call Priya" in served.summary  # the offline one, exact
    clock.advance(days=8)
    later = summarized.summarize()  # a pass with the model: what is owed and due is done
    assert later.refreshed == {} and later.skipped == {}  # no model given, none set: nothing due is done
    again = say(summarized, server, clock, "2025-06-02", "billing", "pager", "PagerDuty")
    assert again.summaries.refreshed == {"stale": 1} and server.summary_calls == before + 1
    assert "Priya" in summarized.summary("billing").summary


def test_a_burst_of_changes_is_summarised_once_when_it_ends(summarized, server, clock):
    before = server.summary_calls
    reasons = []
    for n, value in enumerate(["Ana", "Ben", "Cy", "Dee"]):
        clock.advance(seconds=30)
        reasons.append(say(summarized, server, clock, f"2025-06-0{n + 1}", "billing", f"reviewer {n}", value)
                       .summaries.skipped)
    assert reasons == [{"fresh": 1}, {"fresh": 1}, {"burst": 1}, {"burst": 1}]
    assert server.summary_calls == before
    clock.advance(minutes=11)  # quiet: the burst is over
    done = summarized.summarize(model(server, clock))
    assert done.refreshed == {"burst": 1} and done.calls == 1 and server.summary_calls == before + 1
    assert "Dee" in summarized.summary("billing").summary


def test_undo_brings_the_previous_summary_back_with_no_call(summarized, server, clock):
    first = summarized.summary("billing")
    clock.advance(minutes=1)
    between = summarized.now()
    clock.advance(minutes=1)
    moved = say(summarized, server, clock, "2025-06-01", "billing", "primary_database", "CockroachDB")
    clock.advance(minutes=1)
    after_move = summarized.now()
    second = summarized.summary("billing")
    assert second.summary != first.summary
    calls = server.summary_calls
    clock.advance(minutes=1)
    plan = summarized.undo([moved.episode_id], apply=True)
    assert plan.summaries.skipped == {"unchanged": 1} and server.summary_calls == calls
    back = summarized.summary("billing")
    assert (back.summary, back.written_by) == (first.summary, "llm:fake-normal")
    assert summarized.summary("billing", known_at=between).summary == first.summary  # both axes exact
    assert summarized.summary("billing", known_at=after_move).summary == second.summary


def test_a_past_as_of_is_answered_from_the_facts_not_from_prose_about_now(summarized):
    assert summarized.summary("billing").written_by == "llm:fake-normal"
    past = summarized.summary("billing", as_of="2023-03-01")
    assert past.written_by == "facts" and "Postgres" not in past.summary


def test_with_the_model_down_the_refresh_is_owed_and_nothing_is_lost(summarized, server, clock):
    clock.advance(minutes=1)
    down = summarized.add_memory("billing moved to Spanner", reference_time="2025-07-01",
                                 extractor=model(server, clock, "fake-down"),
                                 facts=[{"subject": "billing", "predicate": "primary_database", "object": "Spanner"}])
    assert down.summaries.skipped == {"unavailable": 1} and "503" in down.summaries.unavailable
    served = summarized.summary("billing")
    assert served.written_by == "facts" and "Spanner (since 2025-07-01)" in served.summary
    clock.advance(minutes=1)
    done = summarized.summarize(model(server, clock))
    assert done.refreshed == {"invalidated": 1} and "Spanner" in summarized.summary("billing").summary


def test_an_ingest_whose_summaries_are_owed_says_so(memory, server, clock, tmp_path):
    report = memory.ingest([FIXTURE], IngestOptions(), extractor=model(server, clock, "fake-down"))
    assert report.summaries.skipped == {"unavailable": len(SUBJECTS)} and report.partial
    assert memory.summary("billing").written_by == "facts"


def test_a_secret_the_model_repeats_is_not_stored(memory, server, clock):
    server.summary_extra = "The deploy key is sk-proj-Tq8vN3kLm29XbZr7WcY4pQe1HsJd6FgA0uVo5, keep it safe."
    memory.ingest([FIXTURE], IngestOptions(), extractor=model(server, clock))
    text = memory.summary("billing").summary
    assert "Tq8vN3kLm29XbZr7WcY4pQe1HsJd6FgA0uVo5" not in text and "[REDACTED:openai_key]" in text


def test_a_purge_erases_every_summary_written_from_the_text(server, clock, tmp_path):
    path = tmp_path / "memory.db"
    memory = Memory.open(path, clock)
    server.summary_extra = "zebraquartzword"
    memory.ingest([FIXTURE], IngestOptions(), extractor=model(server, clock))
    episodes = [e.id for e in memory.episodes()]
    clock.advance(minutes=1)
    memory.undo(episodes, apply=True, purge=True)
    assert store.current_summaries(memory.db) == []
    assert memory.db.execute("SELECT count(*) FROM summaries").fetchone()[0] == 0
    memory.close()
    for name in ("memory.db", "memory.db-wal"):
        if (tmp_path / name).exists():
            assert b"zebraquartzword" not in (tmp_path / name).read_bytes()


def test_memctl_summarize_does_what_is_owed(cli, db_path, monkeypatch, clock):
    from tests.fake_llm import point_at

    with FakeOpenAIServer(datetime.now(UTC)) as running:
        point_at(monkeypatch, running)
        assert cli("ingest", FIXTURE, "--extractor", "rules", "--json").code == 0  # no model: refreshes owed
        assert running.summary_calls == 0
        done = cli("summarize", "--model", "fake-normal", "--json")
        assert done.code == 0, done.err
        assert done.json()["refreshed"] == {"new": len(SUBJECTS)} and running.summary_calls == len(SUBJECTS)
        shown = cli("summary", "billing", "--json").json()
        assert shown["written_by"] == "llm:fake-normal"
        assert cli("summarize", "--model", "fake-normal", "--json").json()["calls"] == 0


@pytest.mark.parametrize(("state", "expected"), [
    ({"invalidated": False, "passes": 1, "refreshed_at": None}, (True, "new")),
    ({"invalidated": True, "passes": 1, "refreshed_at": None}, (True, "new")),  # no summary yet: new first
    ({"invalidated": True, "passes": 5, "refreshed_at": "2025-01-01T11:59:00.000000Z"}, (True, "invalidated")),
    ({"invalidated": False, "passes": 1, "refreshed_at": "2024-12-24T12:00:00.000000Z"}, (True, "stale")),
    ({"invalidated": False, "passes": 4, "refreshed_at": "2024-12-24T12:00:00.000000Z"}, (True, "stale")),
    ({"invalidated": False, "passes": 1, "refreshed_at": "2025-01-01T11:00:00.000000Z"}, (False, "fresh")),
    ({"invalidated": False, "passes": 3, "refreshed_at": "2025-01-01T11:00:00.000000Z"}, (False, "burst")),
    ({"invalidated": False, "passes": 3, "refreshed_at": "2025-01-01T11:00:00.000000Z",
      "last_changed_at": "2025-01-01T11:49:00.000000Z"}, (True, "burst")),  # quiet for 11 minutes: it ended
    ({"invalidated": False, "passes": 20, "refreshed_at": "2025-01-01T11:00:00.000000Z"}, (True, "burst")),  # cap
])
def test_the_gate_decides_each_reason_alone_and_together(state, expected):
    from memctl.summary import decide

    now = "2025-01-01T12:00:00.000000Z"
    assert decide(**{"last_changed_at": now, **state}, now=now) == expected


# --- the invariant, over random changes -------------------------------------------------------


class Counting:
    """A summarizer in the process, for the property test: the invariant is the store's."""

    name = "counting"

    def __init__(self):
        self.calls = 0

    def write(self, entity: str, facts: str, excerpts: list) -> str:
        self.calls += 1
        return f"{entity}: {facts}"[:600]

    def write_session(self, session: str, turns: list) -> str:
        self.calls += 1
        return f"{session}: {len(turns)} turns"


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.sampled_from(["add", "add", "add", "said", "undo", "revert", "purge", "retry", "repair",
                                           "rebuild", "gate"]),
                          st.integers(0, 10_000)), min_size=3, max_size=14))
def test_every_current_summary_is_of_its_entitys_current_facts(steps):
    clock = FakeClock()
    memory = Memory.open(":memory:", clock, summarizer=Counting())
    rules = RulesExtractor(clock)
    undone: list[str] = []
    try:
        for op, seed in steps:
            pick = random.Random(seed)
            clock.advance(minutes=pick.choice([1, 5, 20]))
            episodes = [e.id for e in memory.episodes(status="active")]
            if op == "add" or not episodes:
                memory.add_memory("x", reference_time=f"2024-0{pick.randint(1, 9)}-01", facts=[
                    {"subject": pick.choice(["billing", "search"]), "predicate": pick.choice(["db", "lead"]),
                     "object": pick.choice(["A", "B", "C"])}])
            elif op == "said":  # text the rules extract, so that a retry has something to do
                memory.add_memory(f"Billing uses {pick.choice(['Kafka', 'Redis'])}.", extractor=rules,
                                  reference_time=f"2024-0{pick.randint(1, 9)}-02")
            elif op == "retry":
                texts = [e.id for e in memory.episodes(status="active") if memory.show(e.id).extraction == "done"]
                if texts:
                    memory.retry([pick.choice(texts)], rules)
            elif op == "repair":
                memory.repair_midnight_hallucinations(apply=True)
            elif op == "undo":
                undone.append(memory.undo([pick.choice(episodes)], apply=True).operation_id)
            elif op == "revert" and undone:
                memory.undo([undone.pop()], apply=True)
            elif op == "purge":
                memory.undo([pick.choice(episodes)], apply=True, purge=True)
                undone.clear()  # an undo of a purged episode has nothing to put back
            elif op == "rebuild":
                memory.rebuild()
            else:
                memory.summarize()
            for subject_id, stored_hash in store.current_summaries(memory.db):
                assert stored_hash == facts_hash(store.fact_rows(memory.db, subject_id, None)), (op, steps)
    finally:
        memory.close()
