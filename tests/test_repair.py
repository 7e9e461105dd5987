"""repair midnight-hallucinations (architecture §4) on damaged data migrated from another system."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta

from tests.conftest import open_store, write_jsonl

EXTRACTED = "2025-06-10T14:22:05Z"  # the day the other system ran its LLM over everything
TODAY_MIDNIGHT = "2025-06-10T00:00:00Z"


def iso(at: datetime) -> str:
    return at.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def legacy_dataset(path) -> dict:
    """264 historical episodes, 1,384 assertions, damaged like the 1,384-edge report the design brief cites."""
    rng = random.Random(1384)
    references = [datetime(2023, 1, 1, tzinfo=UTC) + timedelta(minutes=rng.randrange(700 * 24 * 60),
                                                                       seconds=rng.randrange(1, 59))
                  for _ in range(264)]
    kinds = (["invented_start"] * 771 + ["invented_end"] * 100 + ["microsecond_end"] * 60
             + ["genuine_end"] * 205 + ["open"] * 239 + ["midnight_own_day"] * 6 + ["retraction"] * 3)
    assert len(kinds) == 1384
    rng.shuffle(kinds)
    lines = [{"reference_time": iso(ref), "source_id": f"legacy-{n}", "extracted_at": EXTRACTED,
              "content": f"Conversation {n} about services.", "facts": []} for n, ref in enumerate(references)]
    for i, kind in enumerate(kinds):
        line = lines[i % 264]
        ref = references[i % 264]
        genuine = ref - timedelta(days=rng.randrange(1, 400), seconds=rng.randrange(86400))
        fact = {"subject": f"service{i % 97}", "predicate": f"uses{i % 7}", "object": f"tool{i}", "cardinality": "many"}
        if kind == "invented_start":
            fact["valid_at"] = TODAY_MIDNIGHT
        elif kind == "retraction":
            fact.update(retracted=True, invalid_at=iso(genuine))
        elif kind == "midnight_own_day":
            fact["valid_at"] = ref.strftime("%Y-%m-%dT00:00:00Z")
        else:
            fact["valid_at"] = iso(genuine)
            if kind == "invented_end":
                fact["invalid_at"] = TODAY_MIDNIGHT
            elif kind == "microsecond_end":
                fact["invalid_at"] = f"2025-06-10T09:13:44.{rng.randrange(1, 999999):06d}Z"
            elif kind == "genuine_end":
                fact["invalid_at"] = iso(genuine + timedelta(days=rng.randrange(1, 30)))
        line["facts"].append(fact)
    write_jsonl(path, lines)
    return {kind: kinds.count(kind) for kind in set(kinds)}


def dump(db) -> list[tuple]:
    with open_store(db) as conn:
        return conn.execute("SELECT * FROM assertions ORDER BY id").fetchall()


def test_repair_fixes_exactly_the_signature_and_undo_restores_the_bytes(cli, db_path, tmp_path):
    counts = legacy_dataset(tmp_path / "legacy.jsonl")
    assert cli("ingest", tmp_path / "legacy.jsonl").code == 0
    before = dump(db_path)

    preview = cli("repair", "midnight-hallucinations", "--json")
    assert preview.code == 0, preview.err
    planned = preview.json()
    assert (planned["valid_at_fixed"], planned["invalid_at_cleared"], planned["applied"]) == (
        counts["invented_start"], counts["invented_end"], False)
    assert planned["skipped"]["invalid_at with microseconds on the extraction day"] == counts["microsecond_end"]
    assert dump(db_path) == before  # the dry run changed nothing

    done = cli("repair", "midnight-hallucinations", "--apply", "--json").json()
    assert done["applied"] and done["operation_id"].startswith("op_")
    after = dump(db_path)
    with open_store(db_path) as conn:
        # Stored columns only: "instant" is made of valid_at and invalid_at.
        columns = [column[0] for column in conn.execute("SELECT * FROM assertions LIMIT 0").description
                   if column[0] != "instant"]
        references = dict(conn.execute("SELECT id, reference_time FROM episodes").fetchall())
        episode_of = dict(conn.execute("SELECT id, episode_id FROM assertions").fetchall())
    changed = {"valid_at": 0, "invalid_at": 0}
    for old, new in zip(before, after):
        old_row, new_row = dict(zip(columns, old)), dict(zip(columns, new))
        differing = {c for c in columns if old_row[c] != new_row[c]}
        if not differing:
            continue
        if "valid_at" in differing:
            assert old_row["valid_at"] == "2025-06-10T00:00:00.000000Z"
            assert new_row["valid_at"] == references[episode_of[new_row["id"]]]
            assert (new_row["valid_at_evidence"], new_row["valid_at_precision"]) == ("repair", "instant")
            changed["valid_at"] += 1
        if "invalid_at" in differing:
            assert old_row["invalid_at"] == "2025-06-10T00:00:00.000000Z" and new_row["invalid_at"] is None
            changed["invalid_at"] += 1
        assert differing <= {"valid_at", "valid_at_evidence", "valid_at_precision",
                             "invalid_at", "invalid_at_evidence", "invalid_at_precision"}
    assert changed == {"valid_at": counts["invented_start"], "invalid_at": counts["invented_end"]}
    assert cli("rebuild", "--json").json()["facts_created"] == 0

    again = cli("repair", "midnight-hallucinations", "--json").json()
    assert (again["valid_at_fixed"], again["invalid_at_cleared"]) == (0, 0)

    undone = cli("undo", done["operation_id"], "--apply", "--json")
    assert undone.code == 0, undone.err
    assert dump(db_path) == before  # every repaired date back, byte for byte
    assert cli("rebuild", "--json").json()["facts_created"] == 0
    kinds = [op["kind"] for op in cli("operations", "--json").json()]
    assert kinds == ["ingest", "repair", "undo"]
    twice = cli("undo", done["operation_id"], "--apply")
    assert twice.code == 0 and "already undone" in twice.out


def test_a_date_the_text_states_is_never_repaired(cli, db_path, tmp_path):
    write_jsonl(tmp_path / "f.jsonl", [{
        "reference_time": "2024-02-01T10:00:00Z", "extracted_at": EXTRACTED,
        "content": "The cutover to Postgres is planned for 10 June 2025.",
        "facts": [{"subject": "billing", "predicate": "uses", "object": "Postgres", "valid_at": TODAY_MIDNIGHT}],
    }])
    assert cli("ingest", tmp_path / "f.jsonl").code == 0
    result = cli("repair", "midnight-hallucinations", "--apply", "--json").json()
    assert (result["valid_at_fixed"], result["applied"]) == (0, False)
    assert result["skipped"] == {"a day the episode's text states": 1}


def test_a_retraction_with_an_invented_end_keeps_a_date(cli, db_path, tmp_path):
    write_jsonl(tmp_path / "f.jsonl", [
        {"reference_time": "2024-01-05T10:00:00Z", "extracted_at": EXTRACTED,
         "facts": [{"subject": "billing", "predicate": "uses", "object": "Redis", "cardinality": "many"}]},
        {"reference_time": "2024-03-01T10:00:00Z", "extracted_at": EXTRACTED, "content": "We dropped Redis.",
         "facts": [{"subject": "billing", "predicate": "uses", "object": "Redis", "retracted": True,
                    "invalid_at": TODAY_MIDNIGHT}]},
    ])
    assert cli("ingest", tmp_path / "f.jsonl").code == 0
    done = cli("repair", "midnight-hallucinations", "--apply", "--json").json()
    assert done["invalid_at_cleared"] == 1
    with open_store(db_path) as conn:
        assert conn.execute("SELECT valid_at, invalid_at, invalid_at_evidence FROM assertions WHERE valid_at IS NULL"
                            ).fetchall() == [(None, "2024-03-01T10:00:00.000000Z", "repair")]
    history = [r for r in cli("recall", "billing redis", "--history", "--json").json()["results"] if r["kind"] == "fact"]
    assert [(r["valid_at"], r["invalid_at"]) for r in history] == [
        ("2024-01-05T10:00:00.000000Z", "2024-03-01T10:00:00.000000Z")]
    assert cli("undo", done["operation_id"], "--apply").code == 0


def test_purging_a_repaired_episode_takes_its_journal_and_the_repair_still_undoes_the_rest(cli, db_path, tmp_path):
    legacy = tmp_path / "legacy.jsonl"
    legacy_dataset(legacy)
    assert cli("ingest", legacy, "--format", "facts").code == 0
    repair_id = cli("repair", "midnight-hallucinations", "--apply", "--json").json()["operation_id"]
    first = cli("episodes", "--json").json()[0]["id"]
    purged = cli("undo", first, "--purge", "--apply", "--json")
    assert purged.code == 0 and purged.json()["applied"]
    with open_store(db_path) as conn:
        assert conn.execute("SELECT count(*) FROM repairs r LEFT JOIN assertions a ON a.id = r.assertion_id "
                            "WHERE a.id IS NULL").fetchone()[0] == 0
    undone = cli("undo", repair_id, "--apply", "--json")
    assert undone.code == 0 and undone.json()["applied"]
    assert cli("repair", "midnight-hallucinations", "--json").json()["valid_at_fixed"] > 700  # the damage is back
    assert cli("rebuild", "--json").json()["facts_created"] == 0


def test_undoing_a_repair_after_its_episode_was_undone_gives_no_name_back_to_it(cli, tmp_path):
    """The repaired date goes back into the history, and the name stays with the active mentions."""
    extracted = "2025-06-10T15:00:00Z"
    legacy = write_jsonl(tmp_path / "legacy.jsonl", [
        {"reference_time": "2025-06-10T14:00:00Z", "source_id": "a", "extracted_at": extracted,
         "facts": [{"subject": "SVC", "predicate": "uses", "object": "Kafka", "valid_at": "2025-06-10T00:00:00Z"}]},
        {"reference_time": "2025-06-10T08:00:00Z", "source_id": "b", "extracted_at": extracted,
         "facts": [{"subject": "svc", "predicate": "uses", "object": "Kafka", "valid_at": "2025-06-10T08:00:00Z"}]},
    ])
    assert cli("ingest", legacy, "--format", "facts").code == 0
    assert cli("history", "svc", "--json").json()["entity"] == "SVC"  # the invented midnight came first
    repair_id = cli("repair", "midnight-hallucinations", "--apply", "--json").json()["operation_id"]
    assert cli("history", "svc", "--json").json()["entity"] == "svc"
    first = [e["id"] for e in cli("episodes", "--json").json() if e["reference_time"].startswith("2025-06-10T14")]
    assert cli("undo", *first, "--apply").code == 0
    assert cli("undo", repair_id, "--apply").code == 0
    assert cli("history", "svc", "--json").json()["entity"] == "svc"
    assert cli("rebuild", "--json").json()["facts_created"] == 0


def test_the_plan_reads_assertions_only_through_its_partial_indexes(tmp_path):
    """The dry run over a million assertions stays fast only while every query of the plan
    matches a partial index word for word; a reworded query would scan the table."""
    from memctl import repair
    from memctl.store.connection import open_database

    db = open_database(tmp_path / "m.db")
    statements: list[str] = []
    db.conn.set_trace_callback(statements.append)
    repair.plan(db)
    db.conn.set_trace_callback(None)
    steps = [step for sql in statements if sql.lstrip().upper().startswith("SELECT")
             for *_, step in db.execute("EXPLAIN QUERY PLAN " + sql).fetchall()]
    reads = [step for step in steps if step.startswith(("SCAN a ", "SCAN assertions", "SEARCH a ", "SEARCH assertions"))]
    # Per date column: the suspects by the exact signature, and two near-miss counts.
    assert sorted(step.split("INDEX ")[1] for step in reads) == sorted(
        f"assertions_{name}" for column in ("valid", "invalid")
        for name in (f"midnight_{column}", f"{column}_on_extraction_day", f"{column}_midnight")), steps
