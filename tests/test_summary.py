"""`memctl summary ENTITY`: what holds about an entity at a time, since when, what it
replaced and what ended, built from its facts with no model (memctl.summary)."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memctl import IngestOptions, Memory
from memctl.errors import NotFound
from memctl.results import Fact
from memctl.summary import SUMMARY_CHARS, offline_summary

FIXTURE = Path(__file__).parent.parent / "fixtures" / "team.facts.jsonl"


@pytest.fixture
def team(memory: Memory) -> Memory:
    memory.ingest([FIXTURE], IngestOptions())
    return memory


@pytest.mark.parametrize(("as_of", "expected"), [
    ("2024-03-01", "billing, as of 2024-03-01: primary database MySQL (since 2023-02-14). "
                   "uses Redis (since 2023-06-01), Sentry (since 2023-06-01)."),
    ("2025-01-01", "billing, as of 2025-01-01: primary_database Postgres (since 2024-04-02); before: MySQL. "
                   "uses Sentry (since 2023-06-01). No longer: uses Redis (until 2024-09-12)."),
    ("2022-01-01", "billing, as of 2022-01-01: nothing known yet."),
])
def test_what_holds_since_when_what_it_replaced_and_what_ended(team, as_of, expected):
    found = team.summary("Billing", as_of=as_of)
    assert (found.entity, found.summary) == ("billing", expected)
    assert len(found.fact_ids) == len(set(found.fact_ids)) and (found.fact_ids or as_of == "2022-01-01")


def test_a_slot_whose_value_ended_says_so(team):
    assert team.summary("Dana", as_of="2025-01-01").summary == (
        "Dana, as of 2025-01-01: No longer: leads billing team (until 2023-10-01).")


def test_exact_on_both_time_axes_and_after_an_undo(team, clock):
    clock.advance(minutes=1)
    before = team.now()
    assert team.summary("billing", known_at="2020-01-01").summary.endswith("nothing known yet.")
    moved = [e.id for e in team.episodes() if "Postgres" in team.show(e.id).content]
    clock.advance(hours=1)
    team.undo(moved, apply=True)
    now = team.summary("billing", as_of="2025-01-01").summary
    assert "Postgres" not in now and "primary database MySQL (since 2023-02-14)" in now
    assert "Postgres (since 2024-04-02)" in team.summary("billing", as_of="2025-01-01", known_at=before).summary


def test_an_unknown_entity_is_not_found(team):
    with pytest.raises(NotFound):
        team.summary("nobody at all")


FACT = st.builds(
    lambda n, predicate, value, many: Fact(fact_id=n, fact="", subject="x", predicate=predicate, object=value,
                                           predicate_key=predicate, valid_at=f"2024-01-{n % 28 + 1:02d}T00:00:00.000000Z",
                                           invalid_at=None, end_reason=None, created_at="", expired_at=None,
                                           cardinality="many" if many else "one"),
    st.integers(0, 10_000), st.text("abcdefgh ", min_size=1, max_size=30), st.text("xyz0123456789 ", min_size=1,
                                                                                   max_size=60), st.booleans())


@settings(max_examples=50)
@given(st.lists(FACT, max_size=80))
def test_never_longer_than_its_limit(facts):
    text = offline_summary("an entity", facts, "2025-01-01T00:00:00.000000Z")
    assert len(text) <= SUMMARY_CHARS + 2 and text.startswith("an entity, as of 2025-01-01:")


def test_the_command_and_its_json(cli):
    assert cli("ingest", FIXTURE).code == 0
    shown = cli("summary", "billing", "--as-of", "2024-03-01")
    assert shown.code == 0 and "primary database MySQL (since 2023-02-14)" in shown.out
    data = cli("summary", "billing", "--json").json()
    assert data["entity"] == "billing" and "Postgres" in data["summary"] and data["fact_ids"]
    unknown = cli("summary", "nobody", "--json")
    assert unknown.code == 0 and unknown.json()["fact_ids"] == [] and "no entity named 'nobody'" in unknown.err
    assert cli("summary", "billing", "--as-of", "soon").code == 2
