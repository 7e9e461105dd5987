"""Recall of what held next to a value the question names: "what did billing use before
Postgres" asks for what Postgres replaced (MySQL), not for whatever matches "billing use"
best (Redis did); "who led billing before Sam" for Dana. The answer leads, nearest first,
with the value it was found by under it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memctl import IngestOptions, Memory
from memctl.recall.query import parse

FIXTURE = Path(__file__).parent.parent / "fixtures" / "team.facts.jsonl"


@pytest.fixture
def team(memory: Memory) -> Memory:
    memory.ingest([FIXTURE], IngestOptions())
    return memory


def first_facts(result, n: int = 2) -> list[tuple[str | None, str | None]]:
    return [(r.subject, r.object) for r in result.results if r.kind == "fact"][:n]


@pytest.mark.parametrize(("question", "expected"), [
    ("what did billing use before Postgres?", [("billing", "MySQL"), ("billing", "Postgres")]),
    ("what did billing use before we moved to Postgres", [("billing", "MySQL"), ("billing", "Postgres")]),
    ("what was billing's database after MySQL", [("billing", "Postgres"), ("billing", "MySQL")]),
    ("who led billing before Sam", [("Dana", "billing team"), ("Sam", "billing team")]),
    ("who ran the billing team after Dana?", [("Sam", "billing team"), ("Dana", "billing team")]),
    ("who led the billing team until Sam took over", [("Dana", "billing team"), ("Sam", "billing team")]),
    ("which database did billing run prior to Postgres", [("billing", "MySQL"), ("billing", "Postgres")]),
    ("who has led billing since Dana left", [("Sam", "billing team"), ("Dana", "billing team")]),
])
def test_what_held_next_to_the_named_value_leads(team, question, expected):
    assert first_facts(team.recall(question)) == expected


def test_asked_at_a_given_time_what_held_before_then_counts(team):
    """A given time keeps recall to the facts valid then, but "before Postgres" asks about
    what held earlier: as of March 2025, MySQL (ended in April 2024) still answers it."""
    assert first_facts(team.recall("what did billing use before Postgres", as_of="2025-03-01")) == [
        ("billing", "MySQL"), ("billing", "Postgres")]
    # before Postgres began there is no Postgres to be next to, and nothing of later leaks in
    early = team.recall("what did billing use before Postgres", as_of="2024-03-01")
    assert early.results and "Postgres" not in [r.object for r in early.results if r.kind == "fact"]


def test_without_such_words_nothing_changes(team):
    assert first_facts(team.recall("which database does billing use")) == [("billing", "Postgres"),
                                                                           ("billing", "MySQL")]
    assert parse("which database does billing use").beside() is None
    assert parse("what happened before lunch").beside() == ("before", ["lunch"])  # no such entity: no effect
    assert [r.kind for r in team.recall("what happened before lunch").results] == \
           [r.kind for r in team.recall("what happened lunch").results]


def test_the_value_is_looked_for_in_the_questions_own_timeline(memory, tmp_path):
    """Many services moved to Postgres: the neighbours in billing's timeline lead, not
    those of another service whose move matched as well; and a service with nothing
    before Postgres gets no other service's earlier database."""
    lines = [{"reference_time": f"2023-0{1 + n % 9}-10T00:00:00Z", "source_id": f"svc{n}",
              "facts": [{"subject": f"service{n}", "predicate": "primary database", "object": "MySQL" if n % 2 else "Oracle"},
                        {"subject": f"service{n}", "predicate": "primary database", "object": "Postgres",
                         "valid_at": f"2024-0{1 + n % 9}-01"}]} for n in range(30)]
    lines.append({"reference_time": "2023-05-01T00:00:00Z", "source_id": "billing",
                  "facts": [{"subject": "billing", "predicate": "primary database", "object": "SQLite"},
                            {"subject": "billing", "predicate": "primary database", "object": "Postgres",
                             "valid_at": "2024-06-01"}]})
    lines.append({"reference_time": "2024-02-01T00:00:00Z", "source_id": "ledger",
                  "facts": [{"subject": "ledger", "predicate": "primary database", "object": "Postgres"}]})
    path = tmp_path / "many.facts.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    memory.ingest([path], IngestOptions(format="facts"))
    assert first_facts(memory.recall("what database did billing use before Postgres")) == [("billing", "SQLite"),
                                                                                          ("billing", "Postgres")]
    # ledger had nothing before Postgres: no other service's earlier database stands in for it.
    assert first_facts(memory.recall("what database did ledger use before Postgres"), 1) == [("ledger", "Postgres")]


def test_what_the_window_hides_is_not_next_to_anything(team):
    """Once the episode that said MySQL is undone there is no neighbour to give (and, asked
    as memctl held it before the undo, there is again): the window is the recall's own."""
    team.clock.advance(seconds=1)
    before_undo = team.clock.now.isoformat()
    team.clock.advance(seconds=1)
    standup = min(team.episodes(), key=lambda e: e.reference_time)  # "Billing runs on MySQL; Dana leads ..."
    assert team.undo([standup.id], apply=True).applied
    result = team.recall("what did billing use before Postgres")
    assert "MySQL" not in [r.object for r in result.results if r.kind == "fact"]
    assert first_facts(result, 1) != [("billing", "MySQL")] and result.results  # still an answer: what matches
    held = team.recall("what did billing use before Postgres", known_at=before_undo)
    assert first_facts(held) == [("billing", "MySQL"), ("billing", "Postgres")]
