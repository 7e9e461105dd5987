"""The store's side of ``repair midnight-hallucinations``: finding suspects by index,
changing assertion dates, and the ``repairs`` journal that lets an undo restore them.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, NamedTuple

from memctl.store import in_chunks
from memctl.times import MIDNIGHT

if TYPE_CHECKING:
    from memctl.store import Database

Dated = tuple[str | None, str | None, str | None]  # a date column's (value, evidence, precision)


def _signature(column: str) -> str:
    """The SQL form of ``memctl.extract.dates.is_extraction_day_midnight``, which defines the
    signature, on current assertions.

    Matches the partial index of that column (schema 0003) word for word, so it is used.

    The query names that index too (INDEXED BY): the broader midnight index of 0007 also
    fits, and without statistics SQLite may pick it; INDEXED BY fails loudly instead of
    scanning if the two ever stop matching."""
    return (f"a.expired_at IS NULL AND substr(a.{column}, 11) = '{MIDNIGHT}' "
            f"AND substr(a.{column}, 1, 10) = substr(a.extracted_at, 1, 10)")


@dataclass(slots=True)
class Suspect:
    """An active assertion whose ``column`` has the signature, with what deciding needs."""

    assertion_id: int
    value: str
    fact: str
    episode_id: str
    reference_time: str
    content: str
    valid_at: str | None
    invalid_at: str | None
    extracted_at: str


def suspects(db: Database, column: str) -> Iterator[Suspect]:
    """Streamed: the episode text is needed only for the suspects, one row at a time."""
    for row in db.execute(
        f"""SELECT a.id, a.{column}, a.fact, e.id, e.reference_time, e.content, a.valid_at, a.invalid_at,
                   a.extracted_at
            FROM assertions a INDEXED BY assertions_midnight_{column.removesuffix("_at")}
            JOIN episodes e ON e.id = a.episode_id WHERE {_signature(column)}"""
    ):
        yield Suspect(*row)


def near_misses(db: Database, column: str) -> tuple[int, int]:
    """(dates with microseconds on the extraction day, midnights on another day): counted
    for the report, never touched. Each WHERE holds a partial index's condition (schema
    0007) word for word."""
    # INDEXED BY: the timeline indexes (0011) hold every active assertion, and the planner,
    # which cannot tell how few rows these hold, may pick one and count them all.
    name = column.removesuffix("_at")
    microseconds = db.execute(
        f"""SELECT count(*) FROM assertions INDEXED BY assertions_{name}_on_extraction_day
            WHERE expired_at IS NULL AND substr({column}, 1, 10) = substr(extracted_at, 1, 10)
              AND substr({column}, 11) != '{MIDNIGHT}'""").fetchone()[0]
    other_day = db.execute(
        f"""SELECT count(*) FROM assertions INDEXED BY assertions_{name}_midnight
            WHERE expired_at IS NULL AND substr({column}, 11) = '{MIDNIGHT}'
              AND substr({column}, 1, 10) != substr(extracted_at, 1, 10)""").fetchone()[0]
    return microseconds, other_day


@dataclass(slots=True)
class StoredDates:
    """An assertion's dates and what names and slots follow from it."""

    slot: tuple[int, str]
    valid_at: Dated
    invalid_at: Dated
    names: tuple[tuple[int, str], tuple[int, str]]  # (entity id, form) of subject and object
    reference_time: str
    episode_id: str
    ordinal: int
    active: bool


def stored_dates(db: Database, assertion_ids: list[int]) -> dict[int, StoredDates]:
    found = {}
    for chunk, marks in in_chunks(assertion_ids):
        for row in db.execute(
            f"""SELECT id, subject_id, predicate_key, valid_at, valid_at_evidence, valid_at_precision, invalid_at,
                       invalid_at_evidence, invalid_at_precision, subject, object_id, object, reference_time,
                       episode_id, ordinal, expired_at IS NULL
                FROM assertions WHERE id IN ({marks})""", chunk
        ):
            found[row[0]] = StoredDates((row[1], row[2]), row[3:6], row[6:9], ((row[1], row[9]), (row[10], row[11])),
                                        *row[12:])
    return found


class SupportedFact(NamedTuple):
    valid_at: str
    invalid_at: str | None
    end_reason: str | None
    cardinality: str


def current_fact_of(db: Database, assertion_ids: list[int]) -> dict[int, SupportedFact]:
    """The one current fact each assertion supports."""
    found: dict[int, list[SupportedFact]] = defaultdict(list)
    for chunk, marks in in_chunks(assertion_ids):
        for assertion_id, *fact in db.execute(
            f"""SELECT p.assertion_id, f.valid_at, f.invalid_at, f.end_reason, f.cardinality
                FROM fact_provenance p JOIN facts f ON f.id = p.fact_id AND f.expired_at IS NULL
                WHERE p.assertion_id IN ({marks})""", chunk
        ):
            found[assertion_id].append(SupportedFact(*fact))
    # More than one would mean the facts are out of step; then nothing is skipped.
    return {assertion_id: facts[0] for assertion_id, facts in found.items() if len(facts) == 1}


def sharing_an_instant(db: Database, starts: list[tuple[int, tuple[int, str], int, str]]) -> set[int]:
    """Of (assertion id, slot, object id, instant), the assertions at whose instant another
    value of their slot starts (before any date here moves)."""
    found: set[int] = set()
    for start in range(0, len(starts), 500):
        chunk = starts[start:start + 500]
        values = ", ".join(["(?, ?, ?, ?, ?)"] * len(chunk))
        found.update(row[0] for row in db.execute(
            f"""WITH moved (assertion_id, subject_id, predicate_key, object_id, instant) AS (VALUES {values})
                SELECT m.assertion_id FROM moved m WHERE EXISTS (
                    SELECT 1 FROM assertions a WHERE a.subject_id = m.subject_id
                    AND a.predicate_key = m.predicate_key AND a.expired_at IS NULL
                    AND coalesce(a.valid_at, a.invalid_at) = m.instant AND a.valid_at IS NOT NULL
                    AND a.object_id != m.object_id)""",
            [value for assertion_id, slot, object_id, instant in chunk
             for value in (assertion_id, *slot, object_id, instant)]))
    return found


def set_dates(db: Database, column: str, changed: list[tuple[int, Dated]], stored: dict[int, StoredDates],
              journal: str | None) -> None:
    """Write new (value, evidence, precision) of ``column``; journal the old under ``journal``."""
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


def journaled_dates(db: Database, operation_id: str) -> Iterator[tuple[int, str, Dated]]:
    """(assertion id, column, old dates) of every change the repair ``operation_id`` made."""
    for assertion_id, column, *old in db.execute(
        "SELECT assertion_id, column_name, old_value, old_evidence, old_precision FROM repairs WHERE operation_id = ?",
        [operation_id],
    ):
        yield assertion_id, column, (old[0], old[1], old[2])
