"""A plan's effects, read from its scratch database (``store.changed``) rather than held.

What an operation's batches expired and inserted is sorted into removed, reopened,
changed and added facts exactly as the dicts of versions it replaced sorted them (the
reference below), across batches, page boundaries and a scratch database that spills to
its file; and ``memctl --json`` writes the plan as ``json.dumps(..., indent=2)`` would,
one change at a time.
"""

from __future__ import annotations

import contextlib
import copy
import io
import json
import pickle
import sqlite3
from unittest.mock import patch

from hypothesis import given
from hypothesis import strategies as st

from memctl import effects as effects_module
from memctl import invocation
from memctl.effects import FactChanges, effects
from memctl.invocation import print_json
from memctl.memory import Memory
from memctl.reports import EFFECTS, FactChange, UndoPlan
from memctl.store import changed
from memctl.store.changed import ChangedVersions
from memctl.store.facts import SlotChanges, fact_shape
from tests.conftest import write_jsonl

NAMES = {1: "billing", 2: "Postgres", 3: "café"}
PLACES = [(subject, key, obj, valid_at) for subject in (1, 3) for key in ("uses", "runs_on") for obj in (1, 2, 3)
          for valid_at in ("2024-01-01T00:00:00.000000Z", "2024-02-01T00:00:00.000000Z")]


def entities() -> sqlite3.Connection:
    db = sqlite3.connect(":memory:")
    db.execute("CREATE TABLE entities (id INTEGER PRIMARY KEY, name TEXT)")
    db.executemany("INSERT INTO entities VALUES (?, ?)", NAMES.items())
    return db


def version(draw, id_: int, place: tuple) -> dict:
    subject_id, predicate_key, object_id, valid_at = place
    return {"id": id_, "subject_id": subject_id, "predicate": predicate_key.replace("_", " "),
            "predicate_key": predicate_key, "object_id": object_id,
            "fact": draw(st.sampled_from(["billing uses Postgres", "billing runs on café — ünïcode"])),
            "cardinality": draw(st.sampled_from(["one", "many"])), "valid_at": valid_at,
            "invalid_at": draw(st.sampled_from([None, "2024-03-01T00:00:00.000000Z", "2024-04-01T00:00:00.000000Z"])),
            "end_reason": draw(st.sampled_from([None, "stated", "superseded"]))}


@st.composite
def batches(draw) -> list[SlotChanges]:
    """Recomputations of one operation: each expires some current versions and inserts
    others, one current version per place at a time, as the store keeps them."""
    current = {place: version(draw, id_, place) for id_, place in enumerate(draw(st.sets(st.sampled_from(PLACES))), 1)}
    next_id = len(current) + 1
    made = []
    for _ in range(draw(st.integers(1, 4))):
        batch = SlotChanges()
        for place in draw(st.sets(st.sampled_from(sorted(current)))) if current else ():
            batch.expired.append(current.pop(place))
        for place in draw(st.sets(st.sampled_from(PLACES))):
            if place not in current:
                current[place] = version(draw, next_id, place)
                batch.inserted.append(current[place])
                next_id += 1
        made.append(batch)
    return made


def reference(batches: list[SlotChanges]) -> dict[str, list[FactChange]]:
    """The effects as the dict-based plan of 0.x sorted them: versions held whole."""
    expired: list[dict] = []
    inserted: list[dict] = []
    for later in batches:
        gone = {row["id"] for row in later.expired}
        ours = {row["id"] for row in inserted}
        inserted = [row for row in inserted if row["id"] not in gone] + later.inserted
        expired += [row for row in later.expired if row["id"] not in ours]

    def key(row: dict) -> tuple:
        return row["subject_id"], row["predicate_key"], row["object_id"], row["valid_at"]

    old_by_key, new_by_key = {key(row): row for row in expired}, {key(row): row for row in inserted}
    for k in [k for k, old in old_by_key.items() if k in new_by_key and fact_shape(new_by_key[k]) == fact_shape(old)]:
        del old_by_key[k], new_by_key[k]

    def describe(row: dict, old: dict | None = None) -> FactChange:
        return FactChange(row["fact"], NAMES[row["subject_id"]], row["predicate"], NAMES[row["object_id"]],
                          row["valid_at"], row["invalid_at"], compared=old is not None,
                          invalid_at_before=None if old is None else old["invalid_at"])

    made: dict[str, list[FactChange]] = {kind: [] for kind in EFFECTS}
    for k, old in sorted(old_by_key.items(), key=lambda item: item[0]):
        new = new_by_key.get(k)
        if new is None:
            made["removed"].append(describe(old))
        elif new["invalid_at"] is None and old["invalid_at"] is not None:
            made["reopened"].append(describe(new, old))
        else:
            made["changed"].append(describe(new, old))
    made["added"] = [describe(row) for k, row in sorted(new_by_key.items(), key=lambda item: item[0])
                     if k not in old_by_key]
    return made


def written(plan) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        print_json(plan)
    return out.getvalue()


@given(batches(), st.booleans())
def test_effects_across_batches_are_the_dict_plans_and_print_as_json_dumps_would(made, on_disk):
    # Small pages and lookups, and a cache of a few pages, so that every boundary is crossed.
    with patch.object(effects_module, "PAIRS_PER_LOOKUP", 3), patch.object(effects_module, "CHANGES_PER_READ", 2), \
            patch.object(changed, "SCRATCH_CACHE_KIB", 8), patch.object(invocation, "JSON_ITEMS_PER_PAGE", 2):
        versions = ChangedVersions(on_disk=on_disk)
        for batch in made:
            versions.absorb(batch)
        plan = UndoPlan(kind="episodes", episodes=["ep_1"], effects=effects(entities(), versions))
        expected = reference(made)
        for kind in EFFECTS:
            got = getattr(plan.effects, kind)
            assert list(got) == expected[kind] and len(got) == len(expected[kind]) and got == expected[kind]
            assert got[-1:] == expected[kind][-1:] and got[1::2] == expected[kind][1::2]
            if expected[kind]:
                assert got[-1] == expected[kind][-1] and got[0] == expected[kind][0]
        assert written(plan) == json.dumps(plan.to_json(), indent=2, ensure_ascii=False) + "\n"
        assert json.loads(written([plan, plan])) == [plan.to_json(), plan.to_json()]


def test_one_recomputation_is_sorted_as_a_whole_operation_is():
    expired = [{"id": 1, "subject_id": 1, "predicate": "uses", "predicate_key": "uses", "object_id": 2,
                "fact": "billing uses Postgres", "cardinality": "one", "valid_at": "2024-01-01T00:00:00.000000Z",
                "invalid_at": "2024-03-01T00:00:00.000000Z", "end_reason": "superseded"}]
    reopened = {**expired[0], "id": 2, "invalid_at": None, "end_reason": None}
    found = effects(entities(), SlotChanges(expired=expired, inserted=[reopened]))
    assert found.counts() == {"removed": 0, "reopened": 1, "changed": 0, "added": 0}
    assert found.reopened[0] == FactChange("billing uses Postgres", "billing", "uses", "Postgres",
                                           "2024-01-01T00:00:00.000000Z", None, compared=True,
                                           invalid_at_before="2024-03-01T00:00:00.000000Z")
    assert isinstance(found.reopened, FactChanges) and not found.removed and found.removed == []
    # A copy or a pickle holds the changes, not the scratch database they are read from.
    for copied in (copy.deepcopy(found), pickle.loads(pickle.dumps(found))):
        assert copied == found and type(copied.reopened) is list and copied.reopened == list(found.reopened)


def test_an_undo_of_thousands_of_facts_prints_them_all_as_the_library_plans_them(cli, db_path, tmp_path):
    """Past the pages a plan is read in: the CLI's JSON lists every change the library's plan holds."""
    facts = write_jsonl(tmp_path / "facts.jsonl", [
        {"reference_time": f"2024-01-{1 + n % 28:02d}",
         "facts": [{"subject": f"service {n}", "predicate": "uses", "object": f"db {n % 7}"}]} for n in range(6000)])
    ingested = cli("ingest", facts, "--json")
    assert ingested.code == 0, ingested.err
    operation = ingested.json()["operation_id"]
    memory = Memory.open(db_path)
    try:
        expected = memory.undo([operation]).to_json()
    finally:
        memory.close()
    assert len(expected["removed"]) == 6000 > effects_module.CHANGES_PER_READ
    done = cli("undo", operation, "--apply", "--json")
    assert done.code == 0, done.err
    assert {kind: done.json()[kind] for kind in EFFECTS} == {kind: expected[kind] for kind in EFFECTS}
