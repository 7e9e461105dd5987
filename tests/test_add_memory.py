"""Memory.add_memory: one episode written live, dated by the caller or by the call, its
facts stored as given or extracted as an ingest's are; bad input stores nothing."""

from __future__ import annotations

import pytest

from memctl import BadInput, Memory, build_extractor
from memctl.errors import LLMUnavailable
from memctl.extract import Request, Result
from tests.conftest import open_store

from .conftest import utc

BILLING_MYSQL = {"subject": "billing", "predicate": "uses database", "object": "MySQL", "valid_at": "2021-03-03"}
BILLING_POSTGRES = {"subject": "billing", "predicate": "uses database", "object": "Postgres", "valid_at": "2024-06-01"}


def nothing_stored(memory: Memory) -> bool:
    stats = memory.stats()
    return stats.episodes == stats.episodes_undone == stats.assertions == stats.operations == 0


def test_a_given_time_is_stored_as_its_instant_and_a_missing_one_is_the_calls(memory, clock):
    offset = memory.add_memory("standup notes", reference_time="2025-01-01T00:30:00+02:00")
    assert (offset.reference_time, offset.reference_time_source) == (utc("2024-12-31T22:30:00Z"), "record")
    assert memory.add_memory("a bare date", reference_time="2025-03-01").reference_time == utc("2025-03-01T00:00:00Z")
    clock.advance(hours=5)
    live = memory.add_memory("said just now")
    assert (live.reference_time, live.reference_time_source) == (utc("2026-01-01T05:00:00Z"), "call")
    stored = {e.id: (e.reference_time, e.reference_time_source, e.format) for e in memory.episodes()}
    assert stored[live.episode_id] == (live.reference_time, "call", "memory")
    assert stored[offset.episode_id] == (utc("2024-12-31T22:30:00Z"), "record", "memory")


@pytest.mark.parametrize("arguments, problem", [
    ({"content": "x", "reference_time": "2025-02-31"}, "reference_time '2025-02-31' is not a valid ISO-8601 date"),
    ({"content": "x", "reference_time": "yesterday"}, "reference_time 'yesterday'"),
    ({"content": "x", "facts": [{"subject": "billing", "object": "MySQL"}]}, "facts[0].predicate: Field required"),
    ({"content": "x", "facts": [{**BILLING_MYSQL, "valid_from": "2020-01-01"}]}, "facts[0].valid_from"),
    ({"content": "x", "facts": [{**BILLING_MYSQL, "valid_at": "2021-02-30"}]}, "facts[0].valid_at '2021-02-30'"),
    ({"content": "x", "facts": "billing uses MySQL"}, "facts"),
    ({"content": "   "}, "content is empty"),
    ({"content": "x", "source": " "}, "source is empty"),
])
def test_bad_input_is_refused_by_name_and_stores_nothing(memory, arguments, problem):
    with pytest.raises(BadInput) as raised:
        memory.add_memory(**arguments, extractor=build_extractor("rules", clock=memory.clock))
    assert problem in str(raised.value)
    assert nothing_stored(memory)


def test_facts_are_stored_as_given_and_supersede_and_undo_reopens(memory):
    first = memory.add_memory("billing runs on MySQL", facts=[BILLING_MYSQL], reference_time="2024-01-01")
    assert first.extraction == "structured" and first.extractor is None
    assert [(a.object, a.valid_at, a.valid_at_evidence) for a in first.assertions] == [
        ("MySQL", utc("2021-03-03"), "explicit")]
    assert [(f.object, f.valid_at, f.invalid_at) for f in first.effects.added] == [("MySQL", utc("2021-03-03"), None)]
    second = memory.add_memory("billing moved to Postgres", facts=[BILLING_POSTGRES], reference_time="2024-06-02")
    assert [f.object for f in second["added"]] == ["Postgres"]
    assert [(f.object, f.invalid_at) for f in second["changed"]] == [("MySQL", utc("2024-06-01"))]
    data = second.to_json()
    assert {"episode_id", "reference_time", "reference_time_source", "assertions", "added", "changed", "removed",
            "reopened", "operation_id"} <= set(data) and "effects" not in data
    plan = memory.undo([second.episode_id], apply=True)
    assert [(f.object, f.invalid_at) for f in plan.effects.reopened] == [("MySQL", None)]
    assert [f.object for f in memory.facts(subject="billing")] == ["MySQL"]


def test_text_goes_through_the_extractor_and_recall_finds_it(memory):
    rules = build_extractor("rules", clock=memory.clock)
    added = memory.add_memory("We picked Stripe for the invoicing webhooks.", reference_time="2025-05-01", extractor=rules)
    assert (added.extraction, added.extractor) == ("done", "rules")
    hits = memory.recall("invoicing webhooks", kind="episode").results
    assert [hit.episode_id for hit in hits] == [added.episode_id]
    assert memory.add_memory("no extractor named: it waits").extraction == "pending"


def test_an_unreachable_model_leaves_the_memory_pending_and_says_so(memory):
    class Down:
        name = "llm:down"

        def extract(self, requests: list[Request]):
            raise LLMUnavailable("cannot reach the LLM endpoint (Connection refused)")
            yield Request("", "", ""), Result()  # a generator, as an extractor is

    added = memory.add_memory("Billing moved to Postgres.", extractor=Down())
    assert added.extraction == "pending" and "cannot reach" in (added.llm_unavailable or "")
    assert "llm_unavailable" in added.to_json()
    assert [e.id for e in memory.episodes(status="active")] == [added.episode_id]


def test_each_call_is_an_episode_at_its_sources_next_position_and_secrets_are_redacted(memory):
    once, again = memory.add_memory("same words"), memory.add_memory("same words")
    other = memory.add_memory("same words", source="notes://project-x")
    assert (once.position, again.position, other.position) == (1, 2, 1)
    assert len({once.episode_id, again.episode_id, other.episode_id}) == 3
    assert [e.id for e in memory.episodes(source="notes://project-x")] == [other.episode_id]
    secret = memory.add_memory("the staging password=hunter22 works")
    assert secret.redactions == 1 and "hunter22" not in memory.show(secret.episode_id).content


def test_episodes_by_time_window_and_the_last_operations(memory):
    early = memory.add_memory("early", reference_time="2024-01-01")
    late = memory.add_memory("late", reference_time="2025-01-01")
    assert [e.id for e in memory.episodes(since="2024-06-01")] == [late.episode_id]
    assert [e.id for e in memory.episodes(until="2024-06-01T00:00:00+00:00")] == [early.episode_id]
    assert [op.id for op in memory.operations(limit=1)] == [late.operation_id]
    assert [op.id for op in memory.operations()] == [early.operation_id, late.operation_id]
    with pytest.raises(BadInput, match="limit must be between 1 and 1,000,000"):
        memory.operations(limit=0)
    with pytest.raises(BadInput, match="status must be active or undone"):
        memory.episodes(status="gone")


class Recording:
    """An extractor that finds nothing and keeps the requests it was given."""

    name = "test:recording"

    def __init__(self, reads_context: bool):
        self.reads_context = reads_context
        self.requests: list[Request] = []

    def extract(self, requests):
        for request in requests:
            self.requests.append(request)
            yield request, Result()


def test_a_model_sees_the_sources_earlier_memories_and_the_rules_no_context_at_all(memory):
    memory.add_memory("Billing runs on MySQL.", facts=[BILLING_MYSQL], source="notes://billing")
    model, rules = Recording(reads_context=True), Recording(reads_context=False)
    memory.add_memory("We are moving it to Postgres.", source="notes://billing", extractor=model)
    memory.add_memory("Postgres it is.", source="notes://billing", extractor=rules)
    [asked] = model.requests
    assert asked.context == ("Billing runs on MySQL.",) and asked.predicates == ("uses database",)
    [read] = rules.requests  # its queries would cost a live memory more than the extraction
    assert (read.text, read.context, read.predicates) == ("Postgres it is.", (), ())


def test_a_memory_filed_at_its_source_while_this_one_was_extracted_makes_this_one_the_next(tmp_path, clock):
    """Two agents' servers on one file: the other files a memory at the same source
    between this call's look at the next free position and its write."""
    path = tmp_path / "shared.db"
    mine, theirs = Memory.open(path, clock), Memory.open(path, clock)
    rules = build_extractor("rules", clock=clock)

    class Meanwhile:
        """The rules, while another process files a memory and a model's reply is cached."""

        name = "rules"

        def extract(self, requests):
            theirs.add_memory("Payments moved to Stripe.", reference_time="2025-05-01")
            with open_store(path) as cache:  # as the LLM extractor keeps a reply it paid for
                cache.execute("INSERT INTO llm_cache (key, response, created_at, episode_id) VALUES (?, ?, ?, ?)",
                              ["k", "reply", "2026-01-01T00:00:00.000000Z", requests[0].episode_id])
            yield from rules.extract(requests)

    added = mine.add_memory("We use Postgres for billing.", reference_time="2025-05-02",
                            extractor=Meanwhile())
    assert added.position == 2 and added.assertions
    assert sorted(e.position for e in mine.episodes()) == [1, 2]
    assert mine.show(added.episode_id).position == 2
    with open_store(path) as db:
        assert db.execute("SELECT episode_id FROM llm_cache").fetchall() == [(added.episode_id,)]
    mine.undo([added.episode_id], apply=True, purge=True)
    with open_store(path) as db:  # purged with its episode: nothing of its text is left
        assert db.execute("SELECT count(*) FROM llm_cache").fetchone() == (0,)
    mine.close()
    theirs.close()
