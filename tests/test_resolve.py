"""Slot resolution as a pure function (architecture §1)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from memctl.resolve import SlotAssertion, resolve_slot, slot_cardinality, start_move_is_inert

OSLO, BERGEN, NYC = 1, 2, 3


def a(id, obj, valid, end=None, card="one", ref="2020", episode="ep_a"):
    return SlotAssertion(id, episode, id, ref, obj, valid, end, card)


def shape(facts):
    return [(f.object_id, f.valid_at, f.invalid_at, f.end_reason, f.assertion_ids) for f in facts]


def test_value_that_comes_back_starts_a_new_fact_and_repeats_merge():
    facts = resolve_slot([a(1, OSLO, "2010"), a(2, BERGEN, "2012"), a(3, OSLO, "2014"), a(4, OSLO, "2011")])
    assert shape(facts) == [
        (OSLO, "2010", "2012", "superseded", [1, 4]),
        (BERGEN, "2012", "2014", "superseded", [2]),
        (OSLO, "2014", None, None, [3]),
    ]


def test_stated_end_wins_over_successor_and_leaves_a_gap_or_overlap():
    gap = resolve_slot([a(1, OSLO, "2010", end="2011"), a(2, BERGEN, "2012")])
    assert shape(gap) == [(OSLO, "2010", "2011", "stated", [1]), (BERGEN, "2012", None, None, [2])]
    overlap = resolve_slot([a(1, OSLO, "2010", end="2013"), a(2, BERGEN, "2012")])
    assert shape(overlap)[0] == (OSLO, "2010", "2013", "stated", [1])


def test_merged_stated_ends_take_the_latest_and_restatement_after_end_is_new():
    facts = resolve_slot([a(1, OSLO, "2010", end="2014"), a(2, OSLO, "2012", end="2016"), a(3, OSLO, "2017")])
    assert shape(facts) == [(OSLO, "2010", "2016", "stated", [1, 2]), (OSLO, "2017", None, None, [3])]


def test_many_values_never_supersede_only_stated_ends_close():
    facts = resolve_slot([
        a(1, OSLO, "2010", card="many"), a(2, BERGEN, "2012", card="many"), a(3, OSLO, None, end="2015", card="many"),
    ])
    assert shape(facts) == [(OSLO, "2010", "2015", "stated", [1, 3]), (BERGEN, "2012", None, None, [2])]


def test_one_many_vote_makes_the_slot_many():
    facts = resolve_slot([a(1, OSLO, "2010"), a(2, BERGEN, "2012", card="many")])
    assert [f.invalid_at for f in facts] == [None, None]


def test_retraction_closes_only_an_open_fact_of_its_value():
    assert shape(resolve_slot([a(1, OSLO, "2010"), a(2, BERGEN, None, end="2011")])) == [(OSLO, "2010", None, None, [1])]
    assert shape(resolve_slot([a(1, OSLO, "2010", end="2012"), a(2, OSLO, None, end="2014")])) == [
        (OSLO, "2010", "2012", "stated", [1])]
    assert resolve_slot([a(1, OSLO, None, end="2014")]) == []


def test_restated_at_the_instant_of_its_retraction_reopens():
    facts = resolve_slot([a(1, OSLO, "2010"), a(2, OSLO, None, end="2014"), a(3, OSLO, "2014")])
    assert shape(facts) == [(OSLO, "2010", "2014", "stated", [1, 2]), (OSLO, "2014", None, None, [3])]


def test_ties_break_by_reference_time_then_episode():
    first = a(1, OSLO, "2010", ref="2020-01", episode="ep_b")
    second = a(2, BERGEN, "2010", ref="2020-02", episode="ep_a")
    assert shape(resolve_slot([second, first])) == [(BERGEN, "2010", None, None, [2])]
    same_ref = [a(1, OSLO, "2010", episode="ep_b"), a(2, BERGEN, "2010", episode="ep_a")]
    open_facts = [f.object_id for f in resolve_slot(same_ref) if f.invalid_at is None]
    assert open_facts == [OSLO]  # ep_a < ep_b, so ep_b's Oslo comes last and holds


ALL_INSTANTS = [f"20{y:02d}" for y in range(10, 20)]
instants = st.sampled_from(ALL_INSTANTS)


@st.composite
def slot_assertions(draw, cardinality):
    items = []
    for i in range(draw(st.integers(0, 12))):
        valid = draw(st.one_of(st.none(), instants)) if cardinality == "many" else draw(instants)
        later = [t for t in ["2010", "2011", "2012", "2013", "2014", "2015", "2016", "2017", "2018", "2019", "2020"]
                 if valid is None or t > valid]
        end = draw(st.sampled_from(later)) if valid is None else draw(st.one_of(st.none(), st.sampled_from(later)))
        items.append(a(i, draw(st.sampled_from([OSLO, BERGEN, NYC])), valid, end, cardinality,
                       ref=draw(instants), episode=draw(st.sampled_from(["ep_a", "ep_b", "ep_c"]))))
    return items


@given(slot_assertions("one"), st.randoms())
def test_cardinality_one_is_order_free_and_without_stated_ends_never_overlaps(assertions, rnd):
    shuffled = assertions[:]
    rnd.shuffle(shuffled)
    facts = resolve_slot(assertions)
    assert shape(facts) == shape(resolve_slot(shuffled))
    # every assertion supports one fact, but a value displaced at the instant it was stated
    supported = [i for f in facts for i in f.assertion_ids]
    assert len(supported) == len(set(supported))
    for x in assertions:
        if x.id not in supported:
            assert any(y.valid_at == x.valid_at and y.object_id != x.object_id and y.sort_key() > x.sort_key()
                       for y in assertions)
    # no fact holds for no time unless its end was stated so
    assert all(f.valid_at != f.invalid_at for f in facts if f.end_reason == "superseded")
    if all(x.invalid_at is None for x in assertions):
        for before, after in zip(facts, facts[1:]):
            assert before.invalid_at == after.valid_at and before.end_reason == "superseded"
            assert before.object_id != after.object_id and before.valid_at < after.valid_at
        assert not facts or facts[-1].invalid_at is None


@given(slot_assertions("many"), st.randoms())
def test_cardinality_many_is_order_free_and_ends_are_only_stated(assertions, rnd):
    shuffled = assertions[:]
    rnd.shuffle(shuffled)
    facts = resolve_slot(assertions)
    assert shape(facts) == shape(resolve_slot(shuffled))
    assert all(f.end_reason in (None, "stated") for f in facts)
    for f in facts:
        assert f.invalid_at is None or f.valid_at < f.invalid_at
    # facts of one value never overlap
    for value in (OSLO, BERGEN, NYC):
        runs = [f for f in facts if f.object_id == value]
        for before, after in zip(runs, runs[1:]):
            assert before.invalid_at is not None and before.invalid_at <= after.valid_at


def same_facts(facts):
    """Equal as the store sees facts: the words come from the first assertion, provenance is a set."""
    return sorted((f.object_id, f.valid_at, f.invalid_at or "", f.end_reason or "", f.assertion_ids[0],
                   tuple(sorted(f.assertion_ids))) for f in facts)


@settings(max_examples=300)
@given(st.sampled_from(["one", "many"]).flatmap(slot_assertions), st.randoms())
def test_a_move_judged_inert_changes_no_fact(assertions, rnd):
    """What lets a repair skip re-resolving a slot must never skip a real change: every
    move of every assertion to every instant (and an end appearing or going) is judged,
    and those judged inert, alone and a few together, are resolved to check."""
    facts = resolve_slot(assertions)
    fact_of = {i: f for f in facts for i in f.assertion_ids}
    cardinality = slot_cardinality(assertions)
    dates = [(start, None) for start in ALL_INSTANTS] + [(start, "2020") for start in ALL_INSTANTS] + [(None, "2015")]
    def shares_an_instant(moved, instants):
        return any(x.valid_at in instants and x.object_id != moved.object_id for x in assertions)

    inert = [
        (index, new) for index, old in enumerate(assertions) for new in dates
        if old.id in fact_of and start_move_is_inert(
            fact_of[old.id].valid_at, fact_of[old.id].invalid_at, fact_of[old.id].end_reason, cardinality,
            (old.valid_at, old.invalid_at), new, shares_an_instant=shares_an_instant(old, {old.valid_at, new[0]}))
    ]
    together = {}
    for index, new in rnd.sample(inert, min(len(inert), 3)):
        together[index] = new
    for moves in [*({index: new} for index, new in inert), together]:
        moved = [x._replace(valid_at=moves[i][0], invalid_at=moves[i][1]) if i in moves else x
                 for i, x in enumerate(assertions)]
        assert same_facts(resolve_slot(moved)) == same_facts(facts), moves


def test_a_start_moving_inside_a_restated_fact_is_inert_and_one_reaching_its_start_is_not():
    restated = [a(1, OSLO, "2010"), a(2, OSLO, "2012"), a(3, OSLO, "2015")]
    (fact,) = resolve_slot(restated)
    inert = lambda before, after: start_move_is_inert(fact.valid_at, fact.invalid_at, fact.end_reason, "one",
                                                      before, after)
    assert inert(("2015", None), ("2011", None))
    assert not inert(("2015", None), ("2010", None))  # ties with the start: the tie-break decides the words
    assert not inert(("2015", None), ("2009", None))
    assert not inert(("2015", None), ("2015", "2016"))  # a stated end can close the fact
    # Bergen said at 2012 before Oslo at that instant holds for no time; moving Oslo away would let it hold.
    assert not start_move_is_inert(fact.valid_at, fact.invalid_at, fact.end_reason, "one", ("2012", None),
                                   ("2011", None), shares_an_instant=True)


def test_values_stated_at_one_instant_leave_the_last_one_and_no_fact_of_no_length():
    said = lambda *values: [a(n, value, "2014", episode="ep_a") for n, value in enumerate(values, start=1)]
    # One episode saying Oslo, then Bergen, then Oslo again, all of the same instant.
    assert shape(resolve_slot(said(OSLO, BERGEN, OSLO))) == [(OSLO, "2014", None, None, [3])]
    assert shape(resolve_slot(said(OSLO, BERGEN, NYC, BERGEN))) == [(BERGEN, "2014", None, None, [4])]
    # A fact from before holds on when the last thing said at the instant is its value.
    before = a(9, OSLO, "2010", ref="2009")
    assert shape(resolve_slot([before, *said(BERGEN, OSLO)])) == [(OSLO, "2010", None, None, [9, 2])]
    assert shape(resolve_slot([before, *said(BERGEN, NYC)])) == [
        (OSLO, "2010", "2014", "superseded", [9]), (NYC, "2014", None, None, [2])]
    # A stated end is said too: that fact is kept, and what it displaced at the instant is not.
    ended = [a(1, OSLO, "2014"), a(2, BERGEN, "2014", end="2016"), a(3, OSLO, "2014")]
    assert shape(resolve_slot(ended)) == [(BERGEN, "2014", "2016", "stated", [2]), (OSLO, "2014", None, None, [3])]


def test_empty_slot_has_no_facts():
    assert resolve_slot([]) == []
