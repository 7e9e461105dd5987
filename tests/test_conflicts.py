"""Conflicts: statements about a one-valued slot that cannot all be true (memctl.conflicts),
flagged in recall, listed by `memctl conflicts`, settled by `memctl resolve`, undoable."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memctl import Memory
from memctl.conflicts import Statement, groups_of_slot
from memctl.errors import BadInput, NotFound
from memctl.recall import fusion


def say(memory: Memory, said_at: str, value: str | None, valid_at: str | None = None, *, ended: str | None = None,
        subject: str = "billing", predicate: str = "primary database", many: bool = False) -> str:
    """One episode said at ``said_at`` stating ``value`` from ``valid_at`` (default: then),
    and with ``ended`` that the value named there ended at ``valid_at``."""
    facts = []
    if value is not None:
        facts.append({"subject": subject, "predicate": predicate, "object": value, "valid_at": valid_at or said_at,
                      **({"cardinality": "many"} if many else {})})
    if ended is not None:
        facts.append({"subject": subject, "predicate": predicate, "object": ended, "retracted": True,
                      "invalid_at": valid_at or said_at})
    return memory.add_memory(f"{subject} {predicate} {value} (said {said_at})", reference_time=said_at,
                             facts=facts).episode_id


def values(conflict) -> list[str]:
    return sorted(value["value"] for value in conflict["values"])


def test_a_later_statement_that_an_earlier_value_still_holds_is_a_conflict(memory):
    # The (b): recorded in May, MySQL since 2023; recorded in June, Postgres since
    # 2022 and still. The timeline holds MySQL from 2023; June's statement says otherwise.
    mysql = say(memory, "2024-05-01", "MySQL", "2023-01-01")
    postgres = say(memory, "2024-06-01", "Postgres", "2022-01-01")
    [conflict] = memory.conflicts()
    assert (conflict.subject, conflict.predicate, conflict.status, conflict.holds) == (
        "billing", "primary database", "open", "MySQL")
    assert values(conflict) == ["MySQL", "Postgres"]
    assert {s["episode_id"] for value in conflict.values for s in value["statements"]} == {mysql, postgres}
    assert (conflict.since[:10], conflict.until[:10]) == ("2023-01-01", "2024-05-01")


def test_two_values_from_one_instant_are_a_conflict(memory):
    say(memory, "2024-05-01", "MySQL", "2024-03-01")
    say(memory, "2024-05-02", "Postgres", "2024-03-01")
    [conflict] = memory.conflicts()
    assert values(conflict) == ["MySQL", "Postgres"] and conflict.holds == "Postgres"


@pytest.mark.parametrize("story", [
    # plain supersession: each said when it began
    [("2024-01-01", "MySQL", None), ("2024-03-01", "Postgres", None)],
    # a change learnt late, said by a statement that the old value ended
    [("2024-05-01", "MySQL", "2022-01-01"), ("2024-06-01", "Postgres", "2023-01-01", "MySQL")],
    # a plan said before the value it starts, and the value holding until then
    [("2024-01-01", "Postgres", "2024-04-01"), ("2024-02-01", "MySQL", None)],
    # one episode's own statements never conflict with each other
    [("2024-01-01", "MySQL", None)],
])
def test_what_is_not_a_conflict(memory, story):
    for said_at, value, valid_at, *ended in story:
        say(memory, said_at, value, valid_at, ended=ended[0] if ended else None)
    assert memory.conflicts(closed=True) == []


def test_a_many_valued_slot_has_no_conflicts(memory):
    say(memory, "2024-05-01", "Redis", "2023-01-01", predicate="uses", many=True)
    say(memory, "2024-06-01", "Kafka", "2022-01-01", predicate="uses", many=True)
    assert memory.conflicts() == []


def test_a_later_statement_closes_it_from_its_time(memory):
    say(memory, "2024-05-01", "MySQL", "2023-01-01")
    say(memory, "2024-06-01", "Postgres", "2022-01-01")
    closer = say(memory, "2025-01-10", "SQLite")
    assert memory.conflicts() == []
    [closed] = memory.conflicts(closed=True)
    assert closed.status == "closed" and closed.closed_by["episode_id"] == closer
    assert closed.closed_by["value"] == "SQLite"
    [still] = memory.conflicts(as_of="2024-12-01")  # before SQLite's time it was open
    assert still.status == "open" and still.holds == "MySQL"


def test_exact_on_both_time_axes(memory, clock):
    say(memory, "2024-05-01", "MySQL", "2023-01-01")
    clock.advance(minutes=1)
    between = memory.now()
    clock.advance(minutes=1)
    say(memory, "2024-06-01", "Postgres", "2022-01-01")
    assert memory.conflicts(known_at=between) == []  # memctl had heard one side only
    assert memory.conflicts(as_of="2024-05-15") == []  # June's statement was not said yet
    assert len(memory.conflicts(as_of="2024-06-15")) == 1


def test_recall_flags_both_sides_and_ranks_them_lower(memory):
    say(memory, "2024-05-01", "MySQL", "2023-01-01")
    say(memory, "2024-06-01", "Postgres", "2022-01-01")
    found = memory.recall("billing primary database", kind="fact").results
    by_value = {fact.object: fact for fact in found}
    assert by_value["MySQL"].conflicts[0]["value"] == "Postgres"
    assert by_value["Postgres"].conflicts[0]["value"] == "MySQL"
    assert by_value["MySQL"].conflicts[0]["conflict_id"] == memory.conflicts()[0].conflict_id
    assert "conflicts" in by_value["MySQL"].to_json()


def test_a_conflicted_fact_ranks_below_an_equal_one_nothing_contradicts():
    scores = {("fact", 1): 0.05, ("fact", 2): 0.05, ("episode", "ep_1"): 0.05}
    discounted = fusion.discount_conflicted(scores, [1])
    assert discounted[("fact", 1)] == pytest.approx(0.05 * fusion.CONFLICT_WEIGHT)
    assert discounted[("fact", 2)] == discounted[("episode", "ep_1")] == 0.05
    assert [key for key, _ in fusion.ranked(discounted, 3)][-1] == ("fact", 1)


def test_resolve_previews_then_keeps_one_value_and_undo_puts_it_back(memory):
    say(memory, "2024-05-01", "MySQL", "2023-01-01")
    say(memory, "2024-06-01", "Postgres", "2022-01-01")
    [conflict] = memory.conflicts()
    before = memory.facts(history=True)
    plan = memory.resolve(conflict.conflict_id[:6], keep="postgres")
    assert not plan.applied and [row["value"] for row in plan.dropped] == ["MySQL"]
    assert [change.object for change in plan.effects.removed] == ["MySQL"]
    assert memory.facts(history=True) == before and memory.conflicts() == [conflict]  # a preview changes nothing
    done = memory.resolve(conflict.conflict_id, keep="Postgres", apply=True)
    assert done.applied and memory.conflicts() == []
    assert [(f.object, f.valid_at[:10], f.invalid_at) for f in memory.facts()] == [("Postgres", "2022-01-01", None)]
    assert memory.recall("billing primary database", kind="fact").results[0].conflicts is None
    assert [op.kind for op in memory.operations()][-1] == "resolve"
    undone = memory.undo([done.operation_id], apply=True)
    assert undone.applied and undone.kind == "resolve"
    assert [(f.object, f.valid_at, f.invalid_at) for f in memory.facts(history=True)] == [
        (f.object, f.valid_at, f.invalid_at) for f in before]
    assert memory.conflicts() == [conflict]  # the same group, by the same id


def test_undoing_a_resolve_leaves_a_statement_whose_episode_changed_since(memory):
    mysql = say(memory, "2024-05-01", "MySQL", "2023-01-01")
    say(memory, "2024-06-01", "Postgres", "2022-01-01")
    done = memory.resolve(memory.conflicts()[0].conflict_id, keep="Postgres", apply=True)
    memory.undo([mysql], apply=True)
    plan = memory.undo([done.operation_id], apply=True)
    assert (plan.episodes, plan.changed_since, plan.applied) == ([], [mysql], False)
    assert [f.object for f in memory.facts()] == ["Postgres"]


def test_resolve_refuses_what_it_cannot_do(memory):
    say(memory, "2024-05-01", "MySQL", "2023-01-01")
    say(memory, "2024-06-01", "Postgres", "2022-01-01")
    conflict = memory.conflicts()[0].conflict_id
    with pytest.raises(BadInput, match="MySQL, Postgres|Postgres, MySQL"):
        memory.resolve(conflict, keep="Redis")
    with pytest.raises(NotFound):
        memory.resolve("cf_000000000000", keep="MySQL")
    assert len(memory.conflicts()) == 1


def test_the_cli_lists_and_resolves(cli, db_path, clock):
    memory = Memory.open(db_path, clock)
    say(memory, "2024-05-01", "MySQL", "2023-01-01")
    say(memory, "2024-06-01", "Postgres", "2022-01-01")
    memory.close()
    listed = cli("conflicts", "--json")
    assert listed.code == 0 and values(listed.json()[0]) == ["MySQL", "Postgres"]
    conflict = listed.json()[0]["conflict_id"]
    table = cli("conflicts")
    assert conflict in table.out and "MySQL" in table.out
    bad = cli("resolve", conflict, "--keep", "Oracle")
    assert bad.code == 2 and "Oracle" in bad.err and bad.err.count("\n") == 1
    assert cli("resolve", "cf_nothing", "--keep", "MySQL").code != 0
    done = cli("resolve", conflict, "--keep", "MySQL", "--apply", "--json")
    assert done.code == 0 and done.json()["applied"] and done.json()["dropped"][0]["value"] == "Postgres"
    assert cli("conflicts", "--json").json() == []
    assert cli("undo", done.json()["operation_id"], "--apply").code == 0
    assert cli("conflicts", "--json").json()[0]["conflict_id"] == conflict


# --- the rule itself, on generated statements ------------------------------------------

DAYS = [f"2024-{month:02d}-01T00:00:00.000000Z" for month in range(1, 13)]


@st.composite
def slot_statements(draw) -> list[Statement]:
    statements = []
    for n in range(draw(st.integers(1, 8))):
        said = draw(st.sampled_from(DAYS))
        start = draw(st.sampled_from(DAYS))
        ended = draw(st.sampled_from([None, *DAYS]))
        if ended is not None and ended <= start:
            ended = None
        statements.append(Statement(n + 1, f"ep_{draw(st.integers(0, 4))}", n, draw(st.integers(1, 3)), start, ended,
                                    said))
    return statements


def pairs_in_conflict(statements: list[Statement]) -> set[frozenset[int]]:
    """Every two statements in conflict, by the rule as docs/conflicts.md states it."""
    ends = {(s.episode_id, s.object_id) for s in statements if s.invalid_at is not None}
    found = set()
    for a in statements:
        for b in statements:
            if a.assertion_id >= b.assertion_id or a.object_id == b.object_id or a.episode_id == b.episode_id:
                continue
            if (b.episode_id, a.object_id) in ends or (a.episode_id, b.object_id) in ends:
                continue
            (a_start, a_end, a_in), (b_start, b_end, b_in) = a.claim(), b.claim()
            start, end = max(a_start, b_start), min(a_end, b_end)
            if start < end or (start == end and (a_in or a_end != end) and (b_in or b_end != end)):
                found.add(frozenset((a.assertion_id, b.assertion_id)))
    return found


@settings(max_examples=300, deadline=None)
@given(slot_statements(), st.randoms(use_true_random=False))
def test_groups_are_the_connected_conflicting_pairs_in_any_order(statements, shuffle: random.Random):
    groups = groups_of_slot(7, "db", statements)
    pairs = pairs_in_conflict(statements)
    member = {s.assertion_id: group.id for group in groups for s in group.statements}
    assert all(len({member.get(i) for i in pair}) == 1 and next(iter(pair)) in member for pair in pairs)
    in_a_pair = {i for pair in pairs for i in pair}
    assert set(member) == in_a_pair  # nobody is in a group without a conflict of its own
    reordered = list(statements)
    shuffle.shuffle(reordered)
    assert {g.id: g.statements for g in groups_of_slot(7, "db", reordered)} == {g.id: g.statements for g in groups}
