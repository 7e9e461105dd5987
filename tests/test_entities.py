"""Entity resolution (issue 32): one name for one thing, so that statements about it
supersede each other; merges and splits as undoable operations; never a merge of what
differs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memctl.memory import Memory
from memctl.sources import IngestOptions
from tests.conftest import FakeClock


def statement(subject: str, predicate: str, obj: str, valid_at: str, cardinality: str | None = None) -> dict:
    fact = {"subject": subject, "predicate": predicate, "object": obj, "valid_at": valid_at}
    return {**fact, "cardinality": cardinality} if cardinality else fact


def ingest(memory: Memory, folder: Path, *statements: dict, name: str = "facts.jsonl") -> None:
    path = folder / name
    path.write_text("".join(json.dumps({"reference_time": s["valid_at"], "facts": [s]}) + "\n" for s in statements))
    report = memory.ingest([path], IngestOptions())
    assert not report.partial, report


@pytest.fixture
def memory(tmp_path):
    memory = Memory.open(tmp_path / "m.db", FakeClock("2026-11-21T15:00:00Z"))
    yield memory
    memory.close()


def current(memory: Memory) -> list[tuple[str, str, str]]:
    return sorted((f.subject, f.predicate, f.object) for f in memory.facts())


def every_version(memory: Memory) -> list[tuple]:
    return sorted((f.subject, f.predicate, f.object, f.valid_at, f.invalid_at) for f in memory.facts(history=True))


def one_entity(memory: Memory, *written: str) -> bool:
    """Whether every name of ``written`` is a name of one entity."""
    for entity in memory.entities():
        forms = {n["name"] for n in entity.names}
        if set(written) <= forms:
            return True
    return False


def test_three_names_of_one_database_slot_are_one_slot(memory, tmp_path):
    """The issue's example: three entities and three current facts before; one now, and a
    fourth statement supersedes the value before it."""
    ingest(memory, tmp_path,
           statement("billing", "primary_database", "Postgres", "2024-01-01"),
           statement("Billing service", "primary_database", "PostgreSQL", "2024-03-01"),
           statement("the billing service", "primary database", "postgres", "2024-05-01"))
    assert [(s, o) for s, _, o in current(memory)] == [("billing", "Postgres")]
    ingest(memory, tmp_path, statement("billing", "primary_database", "MySQL", "2024-07-01"), name="later.jsonl")
    assert [(s, o) for s, _, o in current(memory)] == [("billing", "MySQL")]
    [entity] = memory.entities(name="the billing service")
    # The first name stored (in a batch, in sorted order) is the entity's own; the others say how they came.
    assert {n["name"]: n["resolved_by"] for n in entity.names} == {
        "Billing service": None, "billing": "generic_noun", "the billing service": "article"}


@pytest.mark.parametrize(("known", "mention", "same"), [
    ("billing", "the billing", True),  # an article
    ("billing", "Billing's", True),  # a possessive
    ("billing", "billing service", True),  # a generic noun
    ("billing", "the billing app", True),
    ("billing", "billing svc", True),
    ("billing service", "billing", True),  # the other way round
    ("PostgreSQL", "Postgres", True),  # memctl's alias list
    ("k8s", "Kubernetes", True),
    ("JavaScript", "JS", True),
    ("Java", "JavaScript", False),  # what differs stays apart
    ("Dana Smith", "Dana Lee", False),
    ("Dana Smith", "Dana", False),
    ("billing", "billing-v2", False),
    ("billing", "billing database", False),  # a part of billing, not billing
    ("billing", "billing API", False),
    ("billing", "billing team", False),  # the people who run it
    ("C", "C#", False),
    ("C++", "C#", False),
])
def test_each_rule_resolves_what_it_should_and_nothing_else(memory, tmp_path, known, mention, same):
    ingest(memory, tmp_path, statement(known, "owner", "Sam", "2024-01-01"),
           statement(mention, "owner", "Alex", "2024-06-01"))
    assert one_entity(memory, known, mention) is same
    # One slot when one entity: the later owner supersedes the earlier; two open otherwise.
    assert len(current(memory)) == (1 if same else 2)


def test_a_generic_noun_is_not_crossed_where_another_thing_goes_by_the_stem(memory, tmp_path):
    ingest(memory, tmp_path, statement("billing", "owner", "Sam", "2024-01-01"),
           statement("billing-v2", "owner", "Kim", "2024-01-01"))
    ingest(memory, tmp_path, statement("the billing service", "owner", "Alex", "2024-06-01"), name="b.jsonl")
    assert not one_entity(memory, "billing", "the billing service")
    assert not one_entity(memory, "billing-v2", "the billing service")


def test_a_name_once_resolved_resolves_alike_after(memory, tmp_path):
    ingest(memory, tmp_path, statement("billing", "owner", "Sam", "2024-01-01"),
           statement("billing service", "owner", "Alex", "2024-02-01"))
    # billing-v2 makes "billing service" ambiguous for a name new to the store, not for this one
    ingest(memory, tmp_path, statement("billing-v2", "owner", "Kim", "2024-03-01"),
           statement("The billing service", "owner", "Lee", "2024-04-01"), name="b.jsonl")
    assert one_entity(memory, "billing", "billing service", "The billing service")


def test_a_batch_resolves_alike_in_any_order(tmp_path):
    names = ["the billing service", "Billing", "billing svc", "Postgres", "PostgreSQL", "billing-v2"]
    found = []
    for n, order in enumerate([names, list(reversed(names)), names[2:] + names[:2]]):
        memory = Memory.open(tmp_path / f"m{n}.db", FakeClock())
        ingest(memory, tmp_path, *[statement(name, "owner", "Sam", "2024-01-01") for name in order], name=f"{n}.jsonl")
        found.append(sorted(sorted(x["name"] for x in e.names) for e in memory.entities()))
        memory.close()
    assert found[0] == found[1] == found[2]


def test_a_users_alias_file_extends_and_overrides_the_list(memory, tmp_path, monkeypatch):
    aliases = tmp_path / "aliases.txt"
    aliases.write_text("# ours\nBilling: payments, the money machine\nPG: Postgres\n")
    monkeypatch.setenv("MEMCTL_ALIASES", str(aliases))
    ingest(memory, tmp_path, statement("billing", "owner", "Sam", "2024-01-01"),
           statement("Payments", "owner", "Alex", "2024-02-01"),
           statement("PostgreSQL", "version", "15", "2024-01-01"), statement("Postgres", "version", "16", "2024-02-01"),
           statement("PG", "host", "db1", "2024-01-01"))
    assert one_entity(memory, "billing", "Payments")
    # The user's line takes Postgres out of memctl's PostgreSQL group, into PG's.
    assert one_entity(memory, "Postgres", "PG") and not one_entity(memory, "PostgreSQL", "Postgres")


def test_a_bad_alias_file_is_named_with_its_line(cli, tmp_path, monkeypatch):
    aliases = tmp_path / "aliases.txt"
    aliases.write_text("Billing: payments\nPayments: money\n")
    monkeypatch.setenv("MEMCTL_ALIASES", str(aliases))
    path = tmp_path / "f.jsonl"
    path.write_text(json.dumps({"reference_time": "2024-01-01", "facts": [statement("a", "b", "c", "2024-01-01")]}))
    run = cli("ingest", path)
    assert run.code == 2 and run.err.count("\n") == 1 and f"{aliases}:2" in run.err and "payments" in run.err
    aliases.write_text("just words\n")
    run = cli("ingest", path)
    assert run.code == 2 and f"{aliases}:1" in run.err


def test_a_merge_supersedes_across_both_and_its_undo_is_the_exact_inverse(memory, tmp_path):
    ingest(memory, tmp_path, statement("billing", "primary_database", "Postgres", "2024-01-01"),
           statement("payments-core", "primary_database", "MySQL", "2024-06-01"))
    before = (every_version(memory), current(memory))
    plan = memory.merge("billing", "payments-core")
    assert not plan.applied and (every_version(memory), current(memory)) == before  # a preview changes nothing
    done = memory.merge("billing", "payments-core", apply=True)
    assert done.applied and done.assertions == 1
    # One slot now: MySQL (2024-06) supersedes Postgres (2024-01).
    assert [(s, o) for s, _, o in current(memory)] == [("billing", "MySQL")]
    assert ("billing", "primary_database", "Postgres", "2024-01-01T00:00:00.000000Z",
            "2024-06-01T00:00:00.000000Z") in every_version(memory)
    [merged] = memory.entities(name="billing")
    assert merged.merged == ["payments-core"]
    assert {n["name"]: n["resolved_by"] for n in merged.names}["payments-core"] == "merge"
    # Later mentions of the merged name are billing.
    ingest(memory, tmp_path, statement("payments-core", "primary_database", "SQLite", "2024-09-01"), name="later.jsonl")
    assert [(s, o) for s, _, o in current(memory)] == [("billing", "SQLite")]
    undone = memory.undo([done.operation_id], apply=True)
    assert undone.applied
    # The later statement stays where it was resolved; the merge itself is gone.
    assert sorted(current(memory)) == [("billing", "primary_database", "SQLite"),
                                       ("payments-core", "primary_database", "MySQL")]
    memory.undo([memory.operations()[-2].id], apply=True)  # the later ingest
    assert (every_version(memory), current(memory)) == before
    ingest(memory, tmp_path, statement("payments-core", "owner", "Kim", "2024-09-01"), name="after.jsonl")
    assert not one_entity(memory, "billing", "payments-core")


def test_a_merge_refuses_what_cannot_be_merged(cli, tmp_path):
    path = tmp_path / "f.jsonl"
    path.write_text(json.dumps({"reference_time": "2024-01-01", "facts": [statement("billing", "b", "c", "2024-01-01")]}))
    assert cli("ingest", path).code == 0
    unknown = cli("merge", "billing", "nothing-like-it")
    assert unknown.code != 0 and unknown.err.count("\n") == 1 and "no entity named 'nothing-like-it'" in unknown.err
    same = cli("merge", "billing", "the billing service")
    assert same.code == 2 and "one entity already" in same.err


def test_a_split_takes_one_name_out_and_its_undo_puts_it_back(memory, tmp_path):
    ingest(memory, tmp_path, statement("billing", "owner", "Sam", "2024-01-01"),
           statement("billing system", "owner", "Alex", "2024-06-01"))
    before = (every_version(memory), current(memory))
    assert one_entity(memory, "billing", "billing system")
    done = memory.split("billing system", apply=True)
    assert done.applied and done.assertions == 1
    assert not one_entity(memory, "billing", "billing system") and len(current(memory)) == 2
    # Later mentions of the name are its own entity.
    ingest(memory, tmp_path, statement("billing system", "owner", "Kim", "2024-09-01"), name="later.jsonl")
    assert sorted(o for _, _, o in current(memory)) == ["Kim", "Sam"]
    memory.undo([memory.operations()[-1].id], apply=True)
    memory.undo([done.operation_id], apply=True)
    assert (every_version(memory), current(memory)) == before
    ingest(memory, tmp_path, statement("billing system", "owner", "Lee", "2024-09-01"), name="again.jsonl")
    assert one_entity(memory, "billing", "billing system") and [o for _, _, o in current(memory)] == ["Lee"]


def test_a_split_of_an_entitys_own_name_is_refused(cli, tmp_path):
    path = tmp_path / "f.jsonl"
    path.write_text(json.dumps({"reference_time": "2024-01-01", "facts": [statement("billing", "b", "c", "2024-01-01")]}))
    assert cli("ingest", path).code == 0
    run = cli("split", "billing")
    assert run.code == 2 and "nothing to split" in run.err


def test_similar_lists_candidates_with_reasons_and_merges_none(cli, tmp_path):
    path = tmp_path / "f.jsonl"
    rows = [statement("billing", "primary_database", "Postgres", "2024-01-01"),
            statement("billng", "owner", "Sam", "2024-01-01"),
            statement("ledger", "primary_database", "Postgres", "2024-01-01"),
            statement("Java", "owner", "Kim", "2024-01-01"), statement("JavaScript", "owner", "Lee", "2024-01-01")]
    path.write_text("".join(json.dumps({"reference_time": r["valid_at"], "facts": [r]}) + "\n" for r in rows))
    assert cli("ingest", path).code == 0
    before = cli("entities", "--json").json()
    pairs = {(p["first"], p["second"]): p["reasons"] for p in cli("entities", "--similar", "--json").json()}
    assert any("names alike" in r for r in pairs[("billing", "billng")])
    assert any("primary_database" in r for r in pairs[("billing", "ledger")])
    assert ("Java", "JavaScript") not in pairs
    assert cli("entities", "--json").json() == before


def test_similar_pairs_names_that_mean_alike_with_an_embeddings_model(memory, tmp_path, monkeypatch):
    """With an embeddings model, names whose vectors are close are candidates too; a model
    that cannot be reached is an error, not a shorter list said to be whole."""
    from memctl.errors import LLMUnavailable

    vectors = {"auth": [1.0, 0.0, 0.1], "login service": [0.98, 0.05, 0.12], "billing": [0.0, 1.0, 0.0],
               "ledger": [0.1, 0.2, 1.0]}

    class Names:
        """The vectors above; any other name a direction of its own."""

        def embed(self, texts):
            others = sorted(set(texts) - set(vectors))
            return [vectors[text] + [0.0] * len(others) if text in vectors
                    else [0.0, 0.0, 0.0] + [float(text == other) for other in others] for text in texts]

    class Down:
        def embed(self, texts):
            raise LLMUnavailable("the embeddings endpoint cannot be reached")

    ingest(memory, tmp_path, *[statement(name, "owner", f"team {n}", "2024-01-01") for n, name in enumerate(vectors)])
    monkeypatch.setattr("memctl.embeddings.configured_embedder", lambda *args, **kwargs: Names())
    pairs = {(p.first, p.second): p.reasons for p in memory.similar_entities()}
    assert any("names mean alike" in reason for reason in pairs[("auth", "login service")])
    assert not any("names mean alike" in r for pair, reasons in pairs.items() if pair != ("auth", "login service")
                   for r in reasons)
    monkeypatch.setattr("memctl.embeddings.configured_embedder", lambda *args, **kwargs: Down())
    with pytest.raises(LLMUnavailable):
        memory.similar_entities()


def test_the_llm_path_lists_known_entities_and_resolves_a_near_duplicate(memory, tmp_path):
    """The model is shown the entities in view by their names; one that names a known
    thing another way is resolved by the same rules."""
    import httpx2

    from memctl.extract.llm import LLMExtractor, make_client
    from tests.fake_llm import API_KEY, completion

    ingest(memory, tmp_path, statement("billing", "primary_database", "Postgres", "2024-01-01"))
    bodies: list[dict] = []

    def model(request: httpx2.Request) -> httpx2.Response:
        bodies.append(json.loads(request.content))
        item = {"subject": "The Billing Service", "predicate": "primary_database", "object": "MySQL",
                "fact": "The Billing Service moved to MySQL", "cardinality": "one",
                "valid_at": "2024-07-01T10:00:00Z", "valid_at_evidence": "reference", "invalid_at": None,
                "invalid_at_evidence": None, "date_span": None}
        return httpx2.Response(200, json=completion(json.dumps({"entities": [], "assertions": [item]})))

    client = make_client(api_key=API_KEY, base_url="http://llm.test/v1",
                         http_client=httpx2.Client(transport=httpx2.MockTransport(model)))
    memory.add_memory("The billing service moved to MySQL.", reference_time="2024-07-01T10:00:00Z",
                      extractor=LLMExtractor(client, "fake", memory.clock, max_retries=0))
    prompt = bodies[0]["messages"][1]["content"]
    assert "KNOWN ENTITIES: billing" in prompt
    assert [(s, o) for s, _, o in current(memory)] == [("billing", "MySQL")]
