"""The predicates a model is shown are those the entities in view already use (issue 12).

In view: the entities named in the episode and in the context the model is shown. Not
the most used predicates of the whole store, and never by a scan of every assertion.
"""

from __future__ import annotations

import pytest

from memctl.extract.stage import PREDICATES_IN_PROMPT, RequestBuilder
from memctl.names import keys_in_text
from memctl.sources import IngestOptions
from memctl.store.episodes import predicates_in_view
from tests.conftest import write_jsonl


def facts(*triples: tuple[str, str, str], reference_time: str = "2024-01-01") -> dict:
    return {"reference_time": reference_time, "facts": [
        {"subject": s, "predicate": p, "object": o, "cardinality": "many"} for s, p, o in triples]}


def store(memory, tmp_path, name: str, *records: dict) -> None:
    memory.ingest([write_jsonl(tmp_path / f"{name}.facts.jsonl", list(records))], IngestOptions(format="facts"))


def test_only_the_entities_in_view_bring_their_predicates(memory, tmp_path):
    # A popular predicate among people the episode never names must not crowd out billing's.
    people = [(f"person{n}", "knows", f"person{n + 1}") for n in range(2 * PREDICATES_IN_PROMPT)]
    store(memory, tmp_path, "people", facts(*people))
    store(memory, tmp_path, "services", facts(("billing", "primary database", "Postgres"), ("billing", "uses", "Redis"),
                                              ("svc", "depends_on", "Kafka"), ("invoices", "runs_on", "Postgres")))
    db = memory.db

    def shown(text: str) -> set[str]:
        return set(predicates_in_view(db, keys_in_text(text), PREDICATES_IN_PROMPT))

    assert shown("Should billing move off Redis?") == {"primary database", "uses"}
    # as the object of others' assertions too: Postgres is what billing and invoices are related to
    assert shown("Postgres 16 is out.") == {"primary database", "runs_on"}
    assert shown("Nothing stored is named here.") == set()
    # a name of several words, matched as names are (case, punctuation)
    store(memory, tmp_path, "city", facts(("Dana", "lives_in", "New York City")))
    assert shown("The office in new-york city is closing.") == {"lives_in"}


def test_the_context_the_model_is_shown_is_in_view(memory, tmp_path):
    store(memory, tmp_path, "services", facts(("svc", "depends_on", "Kafka"), ("billing", "uses", "Redis")))
    builder = RequestBuilder(memory.db, in_order=True)
    builder.read("chat.jsonl", "svc went down this morning.")
    request = builder.request("ep_1", "It is back up; billing was fine.", "2024-02-01T00:00:00.000000Z",
                              "chat.jsonl", 2)
    assert request.context == ("svc went down this morning.",)
    assert set(request.predicates) == {"depends_on", "uses"}


def test_an_undone_assertions_predicate_is_not_shown(memory, tmp_path):
    store(memory, tmp_path, "a", facts(("billing", "uses", "Redis")))
    store(memory, tmp_path, "b", facts(("billing", "replaced_by", "invoices"), reference_time="2024-02-01"))
    db = memory.db
    assert set(predicates_in_view(db, keys_in_text("billing"), 50)) == {"uses", "replaced_by"}
    undone = memory.undo([], source=tmp_path / "b.facts.jsonl", apply=True)
    assert undone.applied
    assert predicates_in_view(db, keys_in_text("billing"), 50) == ("uses",)


@pytest.mark.sqlite_only
def test_the_lookup_reads_by_index_never_a_scan_of_assertions_or_entities(memory, tmp_path):
    store(memory, tmp_path, "services", facts(("billing", "uses", "Redis"), ("svc", "depends_on", "Redis")))
    db = memory.db
    statements: list[str] = []
    db.conn.set_trace_callback(statements.append)
    try:
        assert predicates_in_view(db, keys_in_text("billing and Redis"), 50)
    finally:
        db.conn.set_trace_callback(None)
    assert statements
    for statement in statements:
        # the trace has the values bound in, so each statement plans as it ran
        plan = [row[3] for row in db.conn.execute(f"EXPLAIN QUERY PLAN {statement}")]
        scans = [step for step in plan if step.startswith("SCAN") and ("assertions" in step or "entities" in step)]
        assert plan and not scans, (statement, plan)

