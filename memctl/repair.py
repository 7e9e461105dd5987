"""Fixing what is stored: ``repair midnight-hallucinations`` and ``rebuild``.

``repair midnight-hallucinations`` fixes the "today @ 00:00" signature, and nothing looser:

- ``valid_at`` at clean midnight (every fraction digit zero) on the UTC day the assertion
  was extracted, and not the episode's reference time → the episode's reference time
  (evidence ``repair``).
- ``invalid_at`` at clean midnight on the day it was extracted → null (for a retraction,
  which has no start, the episode's time: a retraction must keep a date).
- Never touched, and counted as skipped with the reason: microsecond times on that day
  (a supersession chain), midnights on any other day, and dates the episode's text
  states (the same check as the date guard's).

Suspects come from one query on partial indexes that hold exactly the signature; every
change is journaled in ``repairs`` so that undoing the repair restores the old bytes.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from memctl.extract.dates import is_extraction_day_midnight
from memctl.extract.guard import Stated, stated_dates
from memctl.reports import DateFix, RebuildResult, RepairResult
from memctl.resolve import start_move_is_inert
from memctl.store import collector_paused
from memctl.store import repairs as store
from memctl.store.connection import Clock, transaction_time, write_transaction
from memctl.store.episodes import Touched, all_entities, recompute
from memctl.store.facts import all_slots
from memctl.store.naming import MovedMention, rank_head, rank_tail, rename_after_moves
from memctl.store.operations import journaled
from memctl.store.repairs import Dated

if TYPE_CHECKING:
    from memctl.store import Database

SAMPLE = 20  # changes shown in a plan, for a person to check


@dataclass
class RepairPlan:
    fixes: list[DateFix] = field(default_factory=list)
    skipped: Counter = field(default_factory=Counter)

    def counts(self) -> dict:
        return {
            "valid_at_fixed": sum(f.column == "valid_at" for f in self.fixes),
            "invalid_at_cleared": sum(f.column == "invalid_at" for f in self.fixes),
            "skipped": dict(sorted(self.skipped.items())),
        }

    def result(self, operation_id: str | None = None) -> RepairResult:
        return RepairResult(**self.counts(), applied=operation_id is not None, operation_id=operation_id,
                            sample=self.fixes[:SAMPLE])


def plan(db: Database) -> RepairPlan:
    result = RepairPlan()
    stated: dict[str, Mapping[str, Stated]] = {}  # by episode: an episode's suspects share its text
    for column in ("valid_at", "invalid_at"):
        for suspect in store.suspects(db, column):
            value, reference_time, end = suspect.value, suspect.reference_time, suspect.invalid_at
            end_stays = end is not None and not is_extraction_day_midnight(end, suspect.extracted_at)
            if suspect.episode_id not in stated:
                stated[suspect.episode_id] = stated_dates(suspect.content, reference_time)
            if column == "valid_at" and value == reference_time:
                result.skipped["midnight that is the episode's own time"] += 1
            elif value[:10] in stated[suspect.episode_id]:
                result.skipped["a day the episode's text states"] += 1
            elif column == "valid_at" and end_stays and end is not None and end <= reference_time:
                result.skipped["the repaired start would not be before its stated end"] += 1
            else:
                # A retraction has no start: clearing its end would leave no date at all,
                # so like the guard it ends at the episode's own time instead.
                keeps_a_date = column == "valid_at" or suspect.valid_at is None
                result.fixes.append(DateFix(suspect.assertion_id, column, value,
                                            reference_time if keeps_a_date else None, suspect.fact, reference_time))
        microseconds, other_day = store.near_misses(db, column)
        result.skipped[f"{column} with microseconds on the extraction day"] += microseconds
        result.skipped[f"{column} midnight on another day"] += other_day
    result.skipped = Counter({reason: n for reason, n in result.skipped.items() if n})
    return result


def repair_midnight_hallucinations(db: Database, clock: Clock, *, apply: bool) -> RepairResult:
    """A plan, or with ``apply`` one journaled change that ``undo`` reverses."""
    if not apply:  # a preview reads; it need not keep other writers waiting
        with collector_paused():
            return plan(db).result()
    with write_transaction(db):
        repair_plan = plan(db)
        if not repair_plan.fixes:
            return repair_plan.result()
        at = transaction_time(db, clock)
        with journaled(db, "repair", at, {"repair": "midnight-hallucinations"}) as operation:
            changes = recompute(db, at, _apply(db, repair_plan, operation.id))
            operation.counts = {**repair_plan.counts(), "facts_created": len(changes.inserted),
                                "facts_expired": len(changes.expired)}
    return repair_plan.result(operation.id)


def _apply(db: Database, repair_plan: RepairPlan, operation_id: str) -> Touched:
    """Write the fixes and their journal; returns the slots to recompute."""
    changes: dict[int, dict[str, Dated]] = defaultdict(dict)
    for fix in repair_plan.fixes:
        changes[fix.assertion_id][fix.column] = (fix.new, *(("repair", "instant") if fix.new else (None, None)))
    return _set_dates(db, changes, journal=operation_id)


def restore(db: Database, operation_id: str) -> Touched:
    """Put back every date the repair ``operation_id`` changed, exactly as it was."""
    changes: dict[int, dict[str, Dated]] = defaultdict(dict)
    for assertion_id, column, old in store.journaled_dates(db, operation_id):
        changes[assertion_id][column] = old
    return _set_dates(db, changes, journal=None)


def _set_dates(db: Database, changes: dict[int, dict[str, Dated]], journal: str | None) -> Touched:
    """Change the dates of assertions (journaled under the operation ``journal``); entity
    names and facts follow the active ones.

    Returns the slots whose facts the change can alter: a slot is left out only when
    every move in it is inert (``start_move_is_inert``) against its facts before.
    """
    assertion_ids = sorted(changes)
    stored, fact_of = store.stored_dates(db, assertion_ids), store.current_fact_of(db, assertion_ids)
    moved_starts = [(assertion_id, row.slot, row.names[1][0], instant) for assertion_id, row in stored.items()
                    for instant in {row.valid_at[0], changes[assertion_id].get("valid_at", row.valid_at)[0]}
                    if instant is not None]
    sharing = store.sharing_an_instant(db, moved_starts)
    for column in ("valid_at", "invalid_at"):
        store.set_dates(db, column, [(assertion_id, change[column]) for assertion_id, change in changes.items()
                                     if column in change], stored, journal)
    moves: list[MovedMention] = []
    touched = Touched()
    for assertion_id, row in stored.items():
        if not row.active:  # put back in the history only (undone or retried since the repair)
            continue
        change = changes[assertion_id]
        old = (row.valid_at[0], row.invalid_at[0])
        new = (change.get("valid_at", row.valid_at)[0], change.get("invalid_at", row.invalid_at)[0])
        head_before, head_after = rank_head(*old), rank_head(*new)
        moves += [MovedMention(entity_id, form, head_before, head_after,
                               rank_tail(row.reference_time, row.episode_id, row.ordinal, side))
                  for side, (entity_id, form) in enumerate(row.names)]
        fact = fact_of.get(assertion_id)
        if fact is None:
            touched.slots.add(row.slot)
        elif not start_move_is_inert(*fact, old, new, shares_an_instant=assertion_id in sharing):
            if fact.cardinality == "many":  # values of a many-valued slot do not interact
                touched.values.add((*row.slot, row.names[1][0]))
            else:
                touched.slots.add(row.slot)
    rename_after_moves(db, moves)
    return touched




def rebuild(db: Database, clock: Clock) -> RebuildResult:
    """Recompute every fact from the assertions; on a healthy store this changes nothing,
    and then no operation is recorded."""
    with write_transaction(db):
        at = transaction_time(db, clock)
        touched = Touched(slots=all_slots(db), entities=all_entities(db))
        changes = recompute(db, at, touched)
        result = RebuildResult(slots=len(touched.slots), facts_created=len(changes.inserted),
                               facts_expired=len(changes.expired))
        if changes.inserted or changes.expired:
            with journaled(db, "rebuild", at, {}) as operation:
                operation.counts = {"slots": result.slots, "facts_created": result.facts_created,
                                    "facts_expired": result.facts_expired}
            result.operation_id = operation.id
    return result
