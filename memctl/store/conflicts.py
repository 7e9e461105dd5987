"""What conflict finding reads (``memctl.conflicts``): the statements of one-valued slots
where two values from two episodes could meet, as held at ``known_at``."""

from __future__ import annotations

from collections.abc import Iterable

from memctl.store import Queryable, Slot, in_chunks
from memctl.store.reads import time_window


def rival_slots(db: Queryable, known_at: str | None) -> list[Slot]:
    """The one-valued slots with statements of two values from two episodes: the only ones
    that can hold a conflict. One pass over the assertions."""
    held, params = time_window("a", known_at=known_at)
    return [(row[0], row[1]) for row in db.execute(
        f"""SELECT a.subject_id, a.predicate_key FROM assertions a WHERE {held}
            GROUP BY a.subject_id, a.predicate_key
            HAVING count(DISTINCT a.object_id) > 1 AND count(DISTINCT a.episode_id) > 1
                   AND min(a.cardinality) = 'one' AND max(a.cardinality) = 'one'""", params).fetchall()]


def statements(db: Queryable, slots: Iterable[Slot], known_at: str | None) -> dict[Slot, list[tuple]]:
    """Each one-valued slot's statements as held at ``known_at``, each the fields of a
    ``memctl.conflicts.Statement``; a slot any assertion says is many-valued has none (its
    values do not exclude each other)."""
    held, params = time_window("a", known_at=known_at)
    found: dict[Slot, list[tuple]] = {}
    many: set[Slot] = set()
    for chunk, _ in in_chunks(sorted(set(slots)), 250):
        pairs = ", ".join("(?, ?)" for _ in chunk)
        for (subject_id, predicate_key, cardinality, *rest) in db.execute(
            f"""SELECT a.subject_id, a.predicate_key, a.cardinality, a.id, a.episode_id, a.ordinal, a.object_id,
                       a.valid_at, a.invalid_at, a.reference_time
                FROM assertions a WHERE (a.subject_id, a.predicate_key) IN (VALUES {pairs}) AND {held}
                ORDER BY a.id""",
                [value for slot in chunk for value in slot] + params).fetchall():
            slot = (subject_id, predicate_key)
            if cardinality == "many":
                many.add(slot)
            found.setdefault(slot, []).append(tuple(rest))
    return {slot: found_ for slot, found_ in found.items() if slot not in many}


def contested_facts(db: Queryable, fact_ids: Iterable[int],
                    known_at: str | None) -> dict[int, tuple[Slot, int, str, str | None]]:
    """Of these facts, the one-valued ones whose slot has a statement of another value
    from another episode, the only ones a conflict can hold: fact id → (slot, value,
    valid_at, invalid_at). Indexed: a recall asks it of the facts it found."""
    held, params = time_window("a", known_at=known_at)
    found = {}
    for chunk, marks in in_chunks(list(fact_ids)):
        for fact_id, subject_id, predicate_key, object_id, valid_at, invalid_at in db.execute(
            f"""SELECT f.id, f.subject_id, f.predicate_key, f.object_id, f.valid_at, f.invalid_at FROM facts f
                WHERE f.id IN ({marks}) AND f.cardinality = 'one'
                AND EXISTS (SELECT 1 FROM assertions a WHERE a.subject_id = f.subject_id
                            AND a.predicate_key = f.predicate_key AND a.object_id != f.object_id AND {held})""",
                [*chunk, *params]).fetchall():
            found[fact_id] = ((subject_id, predicate_key), object_id, valid_at, invalid_at)
    return found


def sentences(db: Queryable, assertion_ids: Iterable[int]) -> dict[int, str]:
    """Each assertion's sentence, as its extractor wrote it."""
    found = {}
    for chunk, marks in in_chunks(list(assertion_ids)):
        found.update(db.execute(f"SELECT id, fact FROM assertions WHERE id IN ({marks})", chunk).fetchall())
    return found


def slot_names(db: Queryable, slots: Iterable[Slot]) -> dict[Slot, str]:
    """Each slot's predicate as last said."""
    found = {}
    for slot in set(slots):
        row = db.execute("""SELECT predicate FROM assertions WHERE subject_id = ? AND predicate_key = ?
                            ORDER BY reference_time DESC, id DESC LIMIT 1""", list(slot)).fetchone()
        found[slot] = row[0] if row else slot[1]
    return found


def values_held(db: Queryable, slots: Iterable[Slot], as_of: str, known_at: str | None) -> dict[Slot, int]:
    """The value each one-valued slot holds at ``as_of``, as held at ``known_at``."""
    held, params = time_window("f", known_at=known_at, as_of=as_of)
    found = {}
    for slot in set(slots):
        row = db.execute(f"""SELECT f.object_id FROM facts f WHERE f.subject_id = ? AND f.predicate_key = ?
                             AND {held} ORDER BY f.valid_at DESC LIMIT 1""", [*slot, *params]).fetchone()
        if row is not None:
            found[slot] = row[0]
    return found
