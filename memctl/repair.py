"""``repair midnight-hallucinations``: the "today @ 00:00" signature of DESIGN §4, and
nothing looser.

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
from dataclasses import dataclass, field

from sqlite_utils import Database

from memctl.extract.dates import MIDNIGHT
from memctl.extract.guard import stated_days
from memctl.resolve import start_move_is_inert
from memctl.store import in_chunks
from memctl.store.episodes import Touched
from memctl.store.naming import MovedMention, rank_head, rank_tail, rename_after_moves


def _signature(column: str) -> str:
    """The SQL form of ``memctl.extract.dates.is_extraction_day_midnight``, which defines the
    signature, on current assertions.

    Matches the partial index of that column (schema 0003) word for word, so it is used.

    The query names that index too (INDEXED BY): the broader midnight index of 0007 also
    fits, and without statistics SQLite may pick it; INDEXED BY fails loudly instead of
    scanning if the two ever stop matching."""
    return (f"a.expired_at IS NULL AND substr(a.{column}, 11) = '{MIDNIGHT}' "
            f"AND substr(a.{column}, 1, 10) = substr(a.extracted_at, 1, 10)")


@dataclass
class Fix:
    assertion_id: int
    column: str  # valid_at | invalid_at
    old: str
    new: str | None
    fact: str
    reference_time: str


@dataclass
class RepairPlan:
    fixes: list[Fix] = field(default_factory=list)
    skipped: Counter = field(default_factory=Counter)

    def counts(self) -> dict:
        return {
            "valid_at_fixed": sum(f.column == "valid_at" for f in self.fixes),
            "invalid_at_cleared": sum(f.column == "invalid_at" for f in self.fixes),
            "skipped": dict(sorted(self.skipped.items())),
        }


def plan(db: Database) -> RepairPlan:
    result = RepairPlan()
    stated: dict[str, set[str]] = {}  # by episode: an episode's suspects share its text
    for column in ("valid_at", "invalid_at"):
        # Streamed: the episode text is needed only for the suspects, one row at a time.
        for assertion_id, value, fact, episode_id, reference_time, content, end, extracted_at, start in db.execute(
            f"""SELECT a.id, a.{column}, a.fact, e.id, e.reference_time, e.content, a.invalid_at, a.extracted_at,
                       a.valid_at
                FROM assertions a INDEXED BY assertions_midnight_{column.removesuffix("_at")}
                JOIN episodes e ON e.id = a.episode_id WHERE {_signature(column)}"""
        ):
            end_stays = end is not None and not (end.endswith(MIDNIGHT) and end[:10] == extracted_at[:10])
            if episode_id not in stated:
                stated[episode_id] = stated_days(content, reference_time)
            if column == "valid_at" and value == reference_time:
                result.skipped["midnight that is the episode's own time"] += 1
            elif value[:10] in stated[episode_id]:
                result.skipped["a day the episode's text states"] += 1
            elif column == "valid_at" and end_stays and end <= reference_time:
                result.skipped["the repaired start would not be before its stated end"] += 1
            else:
                # A retraction has no start: clearing its end would leave no date at all,
                # so like the guard it ends at the episode's own time instead.
                keeps_a_date = column == "valid_at" or start is None
                result.fixes.append(Fix(assertion_id, column, value, reference_time if keeps_a_date else None,
                                        fact, reference_time))
        # Each WHERE holds a partial index's condition (schema 0007) word for word.
        result.skipped[f"{column} with microseconds on the extraction day"] += db.execute(
            f"""SELECT count(*) FROM assertions
                WHERE expired_at IS NULL AND substr({column}, 1, 10) = substr(extracted_at, 1, 10)
                  AND substr({column}, 11) != '{MIDNIGHT}'""").fetchone()[0]
        result.skipped[f"{column} midnight on another day"] += db.execute(
            f"""SELECT count(*) FROM assertions
                WHERE expired_at IS NULL AND substr({column}, 11) = '{MIDNIGHT}'
                  AND substr({column}, 1, 10) != substr(extracted_at, 1, 10)""").fetchone()[0]
    result.skipped = Counter({reason: n for reason, n in result.skipped.items() if n})
    return result


Dated = tuple[str | None, str | None, str | None]  # a date column's (value, evidence, precision)


def apply(db: Database, repair_plan: RepairPlan, operation_id: str) -> Touched:
    """Write the fixes and their journal; returns the slots to recompute."""
    changes: dict[int, dict[str, Dated]] = defaultdict(dict)
    for fix in repair_plan.fixes:
        changes[fix.assertion_id][fix.column] = (fix.new, *(("repair", "instant") if fix.new else (None, None)))
    return _set_dates(db, changes, journal=operation_id)


def restore(db: Database, operation_id: str) -> Touched:
    """Put back every date the repair ``operation_id`` changed, exactly as it was."""
    changes: dict[int, dict[str, Dated]] = defaultdict(dict)
    for assertion_id, column, *old in db.execute(
        "SELECT assertion_id, column_name, old_value, old_evidence, old_precision FROM repairs WHERE operation_id = ?",
        [operation_id],
    ):
        changes[assertion_id][column] = tuple(old)
    return _set_dates(db, changes, journal=None)


def _set_dates(db: Database, changes: dict[int, dict[str, Dated]], journal: str | None) -> Touched:
    """Change the dates of assertions (journaled under the operation ``journal``); entity
    names and facts follow the active ones.

    Returns the slots whose facts the change can alter: a slot is left out only when
    every move in it is inert (``start_move_is_inert``) against its facts before.
    """
    assertion_ids = sorted(changes)
    stored, fact_of = _stored_dates(db, assertion_ids), _current_fact_of(db, assertion_ids)
    for column in ("valid_at", "invalid_at"):
        changed = [(assertion_id, change[column]) for assertion_id, change in changes.items() if column in change]
        if journal:
            db.conn.executemany(
                "INSERT INTO repairs (operation_id, assertion_id, column_name, old_value, old_evidence, old_precision, "
                "new_value) VALUES (?, ?, ?, ?, ?, ?, ?)",
                [(journal, assertion_id, column, *getattr(stored[assertion_id], column), new[0])
                 for assertion_id, new in changed],
            )
        db.conn.executemany(
            f"UPDATE assertions SET {column} = ?, {column}_evidence = ?, {column}_precision = ? WHERE id = ?",
            [(*new, assertion_id) for assertion_id, new in changed],
        )
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
        elif not start_move_is_inert(*fact, old, new):
            if fact[3] == "many":  # values of a many-valued slot do not interact
                touched.values.add((*row.slot, row.names[1][0]))
            else:
                touched.slots.add(row.slot)
    rename_after_moves(db, moves)
    return touched


@dataclass(slots=True)
class _Stored:
    slot: tuple[int, str]
    valid_at: Dated
    invalid_at: Dated
    names: tuple[tuple[int, str], tuple[int, str]]  # (entity id, form) of subject and object
    reference_time: str
    episode_id: str
    ordinal: int
    active: bool


def _stored_dates(db: Database, assertion_ids: list[int]) -> dict[int, _Stored]:
    found = {}
    for chunk, marks in in_chunks(assertion_ids):
        for row in db.execute(
            f"""SELECT id, subject_id, predicate_key, valid_at, valid_at_evidence, valid_at_precision, invalid_at,
                       invalid_at_evidence, invalid_at_precision, subject, object_id, object, reference_time,
                       episode_id, ordinal, expired_at IS NULL
                FROM assertions WHERE id IN ({marks})""", chunk
        ):
            found[row[0]] = _Stored((row[1], row[2]), row[3:6], row[6:9], ((row[1], row[9]), (row[10], row[11])),
                                    *row[12:])
    return found


def _current_fact_of(db: Database, assertion_ids: list[int]) -> dict[int, tuple]:
    """(valid_at, invalid_at, end_reason, cardinality) of the one current fact each assertion supports."""
    found: dict[int, list[tuple]] = defaultdict(list)
    for chunk, marks in in_chunks(assertion_ids):
        for assertion_id, *fact in db.execute(
            f"""SELECT p.assertion_id, f.valid_at, f.invalid_at, f.end_reason, f.cardinality
                FROM fact_provenance p JOIN facts f ON f.id = p.fact_id AND f.expired_at IS NULL
                WHERE p.assertion_id IN ({marks})""", chunk
        ):
            found[assertion_id].append(tuple(fact))
    # More than one would mean the facts are out of step; then nothing is skipped.
    return {assertion_id: facts[0] for assertion_id, facts in found.items() if len(facts) == 1}
