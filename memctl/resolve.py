"""Slot resolution: the facts of one slot as a pure function of its active assertions.

A slot is (subject, predicate). Its assertions are sorted by a total order built only
from their content (time, then reference time, episode id, position in the episode),
so the result does not depend on the order in which episodes were ingested.

- Consecutive assertions of one value merge into one fact, valid from the earliest.
- Cardinality one: a value holds until the next *different* value starts
  (``invalid_at = successor.valid_at``, dovetailed), unless an end was stated. Of the
  values said at one instant, the last holds: the others would hold for no time at all
  and support nothing (A, then B, then A again at one instant is just A).
- Cardinality many: values never supersede each other; only stated ends close them.
- A stated end always wins over a derived one. When assertions merged into one fact
  state different ends, the latest wins: the fact is the union of what they claim.
- An end-only assertion (a retraction: ``invalid_at`` with no ``valid_at``) closes the
  open fact of its value that has no stated end; it starts nothing.
- A slot is many-valued if any of its assertions says so: wrongly ending a true fact
  loses information silently, while wrongly leaving two values open stays visible.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple


class SlotAssertion(NamedTuple):  # a tuple: built for every assertion a recomputation loads
    id: int
    episode_id: str
    ordinal: int
    reference_time: str
    object_id: int
    valid_at: str | None  # None: a retraction
    invalid_at: str | None
    cardinality: str  # "one" | "many"

    @property
    def instant(self) -> str:
        """Where it sits in the timeline: its start, or a retraction's end."""
        return self.valid_at if self.valid_at is not None else self.invalid_at  # type: ignore[return-value]

    def sort_key(self) -> tuple:
        time = self.instant
        # At one instant an end comes before a start, so a value restated at the very
        # moment it was retracted opens a new fact instead of a zero-length one.
        return (time, 0 if self.valid_at is None else 1, self.reference_time, self.episode_id, self.ordinal)


@dataclass
class ResolvedFact:
    object_id: int
    valid_at: str
    invalid_at: str | None = None
    end_reason: str | None = None  # "stated" | "superseded" | None while open
    assertion_ids: list[int] = field(default_factory=list)
    stated_end: str | None = None

    def closes_before(self, instant: str) -> bool:
        return self.stated_end is not None and self.stated_end <= instant


def slot_cardinality(assertions: list[SlotAssertion]) -> str:
    return "many" if any(a.cardinality == "many" for a in assertions) else "one"


def resolve_slot(assertions: list[SlotAssertion], cardinality: str | None = None) -> list[ResolvedFact]:
    """The facts of one slot in timeline order.

    ``cardinality``, when given, is the whole slot's, for a part of a slot's assertions.
    """
    ordered = sorted(assertions, key=SlotAssertion.sort_key)
    if (cardinality or slot_cardinality(ordered)) == "one":
        # The sweep emits in timeline order.
        return _sweep(ordered, supersede=True)
    by_value: dict[int, list[SlotAssertion]] = {}
    for assertion in ordered:
        by_value.setdefault(assertion.object_id, []).append(assertion)
    facts = [fact for group in by_value.values() for fact in _sweep(group, supersede=False)]
    return sorted(facts, key=lambda f: (f.valid_at, f.invalid_at is None, f.invalid_at or "", f.object_id))


def last_said_at_each_instant(ordered: list[SlotAssertion]) -> list[SlotAssertion]:
    """Of a one-valued slot's assertions in timeline order, without the starts that another
    value follows at the same instant: each would hold for no time at all. The last thing
    said at an instant wins (A, B, A at one instant is the last A; it merges with a fact
    of A from before). A start with a stated end stays: its end is said too."""
    kept: list[SlotAssertion] = []
    instant: str | None = None
    later_objects: set[int] = set()
    for assertion in reversed(ordered):
        if assertion.valid_at is None:
            kept.append(assertion)
            continue
        if assertion.valid_at != instant:
            instant, later_objects = assertion.valid_at, set()
        if assertion.invalid_at is not None or not later_objects - {assertion.object_id}:
            kept.append(assertion)
        later_objects.add(assertion.object_id)
    kept.reverse()
    return kept


class Sweep:
    """One pass over the assertions of a slot (or, in a many-valued slot, of one value) in
    timeline order, fed whole instants at a time.

    It may start from the fact a stored resolution had open at some instant
    (``open_fact``): what comes after depends only on that fact's value and stated end
    (``state``), so a recomputation resolves just the stretch of time its change can reach
    (``store.facts``).
    """

    def __init__(self, *, supersede: bool, open_fact: ResolvedFact | None = None):
        self.supersede = supersede  # cardinality one: a new value closes the open one
        self.open_fact = open_fact
        self.facts: list[ResolvedFact] = []  # closed, in timeline order

    def state(self) -> tuple[int, str | None] | None:
        """All that decides how later assertions resolve: the open value and its stated end."""
        return None if self.open_fact is None else (self.open_fact.object_id, self.open_fact.stated_end)

    def feed(self, ordered: list[SlotAssertion]) -> None:
        """Assertions in timeline order, every one of each instant they reach."""
        for assertion in last_said_at_each_instant(ordered) if self.supersede else ordered:
            self._take(assertion)

    def finish(self) -> list[ResolvedFact]:
        """Every fact, the open one included, in timeline order."""
        self._close(None)
        self.open_fact = None
        return self.facts

    def _close(self, successor_valid_at: str | None) -> None:
        fact = self.open_fact
        if fact is None:
            return
        if fact.stated_end is not None:
            fact.invalid_at, fact.end_reason = fact.stated_end, "stated"
        elif successor_valid_at is not None:
            fact.invalid_at, fact.end_reason = successor_valid_at, "superseded"
        self.facts.append(fact)

    def _take(self, assertion: SlotAssertion) -> None:
        fact = self.open_fact
        if assertion.valid_at is None:  # a retraction; the sort puts it after its fact's start
            if fact is not None and fact.object_id == assertion.object_id and fact.stated_end is None:
                fact.stated_end = assertion.invalid_at
                fact.assertion_ids.append(assertion.id)
            return
        if fact is not None and fact.object_id == assertion.object_id and not fact.closes_before(assertion.valid_at):
            fact.assertion_ids.append(assertion.id)
            if assertion.invalid_at is not None:
                fact.stated_end = max(fact.stated_end or "", assertion.invalid_at)
            return
        self._close(assertion.valid_at if self.supersede else None)
        self.open_fact = ResolvedFact(
            object_id=assertion.object_id,
            valid_at=assertion.valid_at,
            assertion_ids=[assertion.id],
            stated_end=assertion.invalid_at,
        )


def _sweep(ordered: list[SlotAssertion], *, supersede: bool) -> list[ResolvedFact]:
    sweep = Sweep(supersede=supersede)
    sweep.feed(ordered)
    return sweep.finish()


def start_move_is_inert(fact_valid_at: str, fact_invalid_at: str | None, end_reason: str | None,
                        cardinality: str, before: tuple[str | None, str | None],
                        after: tuple[str | None, str | None], *, shares_an_instant: bool = False) -> bool:
    """Whether moving one assertion's dates from ``before`` to ``after`` (each
    ``(valid_at, invalid_at)``) leaves every fact of its slot as it was, given the fact it
    supports now. Such moves may be combined, each judged against the facts before any.

    It is, when the assertion states no end and its start moves strictly inside that
    fact's span, without reaching its start: there, in timeline order, it can only be
    merged into that fact again, and it does not decide whether anything else merges,
    since only stated ends do. Not for a one-valued slot whose fact ended by a stated
    end: another value may then start inside the span, and moving past it would split
    the fact. A repair that fixes a restated fact's date is usually this move, and then
    a million assertions need not be resolved again to find nothing changed.

    ``shares_an_instant``: in a one-valued slot, another value starts at the instant the
    assertion leaves or reaches. The last value said at an instant wins there, so the move
    can change which that is (``last_said_at_each_instant``): never inert.
    """
    (old_start, old_end), (new_start, new_end) = before, after
    if old_start is None or new_start is None or old_end is not None or new_end is not None:
        return False
    if cardinality == "one" and shares_an_instant:
        return False
    low, high = sorted((old_start, new_start))
    return (
        fact_valid_at < low
        and (fact_invalid_at is None or high < fact_invalid_at)
        and (cardinality == "many" or end_reason != "stated")
    )
