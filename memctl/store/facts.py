"""Derived facts: recomputing slots from their active assertions.

Facts are never written by hand. After any change to assertions, the touched slots are
resolved again (``memctl.resolve``) and compared with their current fact versions: an
unchanged fact keeps its row; a changed or vanished one is expired (transaction time)
and the new shape inserted. The transaction-time history is therefore append-only.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field

from sqlite_utils import Database

from memctl.store import in_chunks
from memctl.resolve import ResolvedFact, SlotAssertion, resolve_slot, slot_cardinality

Slot = tuple[int, str]  # (subject_id, predicate_key)

FACT_COLUMNS = (
    "id, subject_id, predicate, predicate_key, object_id, fact, cardinality, "
    "valid_at, invalid_at, end_reason, created_at, expired_at"
)


@dataclass
class SlotChanges:
    """Fact rows expired and inserted by one recomputation, for reports and plans."""

    expired: list[dict] = field(default_factory=list)
    inserted: list[dict] = field(default_factory=list)

    def extend(self, other: SlotChanges) -> None:
        self.expired += other.expired
        self.inserted += other.inserted


def _touched_table(db: Database, slots: Iterable[Slot]) -> None:
    # Queries join it with CROSS JOIN, which tells SQLite to loop over these few slots
    # and probe the big tables by index, instead of scanning them.
    db.execute("CREATE TEMP TABLE IF NOT EXISTS touched_slots (subject_id INTEGER, predicate_key TEXT)")
    db.execute("DELETE FROM temp.touched_slots")
    db.conn.executemany("INSERT INTO temp.touched_slots VALUES (?, ?)", list(slots))


def _active_assertions(db: Database) -> dict[Slot, list[tuple[SlotAssertion, str, str]]]:
    """Active assertions of the touched slots, with each one's predicate and fact text."""
    rows = db.execute(
        """
        SELECT a.id, a.episode_id, a.ordinal, e.reference_time, a.object_id, a.valid_at,
               a.invalid_at, a.cardinality, a.subject_id, a.predicate_key, a.predicate, a.fact
        FROM temp.touched_slots t
        CROSS JOIN assertions a ON a.subject_id = t.subject_id AND a.predicate_key = t.predicate_key
        JOIN episodes e ON e.id = a.episode_id
        WHERE a.expired_at IS NULL
        """
    ).fetchall()
    by_slot: dict[Slot, list[tuple[SlotAssertion, str, str]]] = defaultdict(list)
    for row in rows:
        by_slot[(row[8], row[9])].append((SlotAssertion(*row[:8]), row[10], row[11]))
    return by_slot


def _current_facts(db: Database) -> dict[Slot, list[dict]]:
    cursor = db.execute(
        f"""
        SELECT {", ".join("f." + c.strip() for c in FACT_COLUMNS.split(","))}
        FROM temp.touched_slots t
        CROSS JOIN facts f ON f.subject_id = t.subject_id AND f.predicate_key = t.predicate_key
        WHERE f.expired_at IS NULL
        """
    )
    columns = [d[0] for d in cursor.description]
    by_slot: dict[Slot, list[dict]] = defaultdict(list)
    for row in cursor.fetchall():
        fact = dict(zip(columns, row))
        by_slot[(fact["subject_id"], fact["predicate_key"])].append(fact)
    return by_slot


def current_facts(db: Database, slots: Iterable[Slot]) -> list[dict]:
    """The current fact versions of ``slots``."""
    _touched_table(db, slots)
    return [fact for facts in _current_facts(db).values() for fact in facts]


def _shape(fact: dict) -> tuple:
    """What makes two versions the same fact; provenance is kept in sync separately."""
    return (
        fact["object_id"], fact["valid_at"], fact["invalid_at"], fact["end_reason"],
        fact["fact"], fact["predicate"], fact["cardinality"],
    )


def recompute_slots(db: Database, slots: Iterable[Slot], at: str) -> SlotChanges:
    """Bring the current facts of ``slots`` in line with their active assertions."""
    slots = set(slots)
    changes = SlotChanges()
    if not slots:
        return changes
    _touched_table(db, slots)
    assertions = _active_assertions(db)
    current = _current_facts(db)
    provenance = _active_provenance(db)
    names = _entity_names(db, slots, assertions)
    # Ids handed out here (we hold the write lock) let every row go in one executemany.
    next_id = db.execute("SELECT coalesce(max(id), 0) + 1 FROM facts").fetchone()[0]
    provenance_rows: list[tuple] = []
    for slot in slots:
        slot_assertions = assertions.get(slot, [])
        resolved = resolve_slot([a for a, _, _ in slot_assertions])
        detail = {a.id: (a.episode_id, predicate, fact) for a, predicate, fact in slot_assertions}
        cardinality = slot_cardinality([a for a, _, _ in slot_assertions])
        wanted = {_shape(row): (row, fact) for fact in resolved
                  for row in [_fact_row(slot, fact, detail, cardinality)]}
        kept: set[tuple] = set()
        for existing in current.get(slot, []):
            shape = _shape(existing)
            if shape in wanted and shape not in kept:
                kept.add(shape)
                _sync_provenance(db, existing["id"], wanted[shape][1], detail, provenance.get(existing["id"], set()))
            else:
                changes.expired.append({**existing, "expired_at": at})
        for shape, (row, fact) in wanted.items():
            if shape in kept:
                continue
            row = {"id": next_id, **row, "created_at": at, "expired_at": None}
            next_id += 1
            provenance_rows += [(row["id"], a, detail[a][0]) for a in fact.assertion_ids]
            changes.inserted.append(row)
    db.conn.executemany("UPDATE facts SET expired_at = ? WHERE id = ?", [(at, row["id"]) for row in changes.expired])
    if changes.inserted:
        columns = list(changes.inserted[0])
        db.conn.executemany(
            f"INSERT INTO facts ({', '.join(columns)}) VALUES ({', '.join('?' * len(columns))})",
            [[row[c] for c in columns] for row in changes.inserted],
        )
    db.conn.executemany("INSERT INTO fact_provenance (fact_id, assertion_id, episode_id) VALUES (?, ?, ?)",
                        provenance_rows)
    db.conn.executemany(
        "INSERT INTO facts_fts (rowid, fact, subject, predicate, object) VALUES (?, ?, ?, ?, ?)",
        [(row["id"], row["fact"], names[row["subject_id"]], row["predicate"], names[row["object_id"]])
         for row in changes.inserted],
    )
    return changes


def _fact_row(slot: Slot, fact: ResolvedFact, detail: dict, cardinality: str) -> dict:
    _, predicate, text = detail[fact.assertion_ids[0]]
    return {
        "subject_id": slot[0], "predicate": predicate, "predicate_key": slot[1],
        "object_id": fact.object_id, "fact": text, "cardinality": cardinality,
        "valid_at": fact.valid_at, "invalid_at": fact.invalid_at, "end_reason": fact.end_reason,
    }


def _active_provenance(db: Database) -> dict[int, set[int]]:
    """Active assertion ids behind each current fact of the touched slots."""
    by_fact: dict[int, set[int]] = defaultdict(set)
    for fact_id, assertion_id in db.execute(
        """
        SELECT p.fact_id, p.assertion_id
        FROM temp.touched_slots t
        CROSS JOIN facts f ON f.subject_id = t.subject_id AND f.predicate_key = t.predicate_key AND f.expired_at IS NULL
        CROSS JOIN fact_provenance p ON p.fact_id = f.id
        CROSS JOIN assertions a ON a.id = p.assertion_id AND a.expired_at IS NULL
        """
    ).fetchall():
        by_fact[fact_id].add(assertion_id)
    return by_fact


def _sync_provenance(db: Database, fact_id: int, fact: ResolvedFact, detail: dict, active: set[int]) -> None:
    """A kept version's provenance: add new assertions; drop active ones now elsewhere.

    Rows of expired assertions stay, so ``--known-at`` still sees who supported it then.
    """
    wanted = set(fact.assertion_ids)
    if wanted - active:
        db.conn.executemany(
            "INSERT OR IGNORE INTO fact_provenance (fact_id, assertion_id, episode_id) VALUES (?, ?, ?)",
            [(fact_id, a, detail[a][0]) for a in sorted(wanted - active)],
        )
    if active - wanted:
        db.conn.executemany(
            "DELETE FROM fact_provenance WHERE fact_id = ? AND assertion_id = ?",
            [(fact_id, a) for a in sorted(active - wanted)],
        )


def _entity_names(db: Database, slots: set[Slot], assertions: dict) -> dict[int, str]:
    ids = {subject for subject, _ in slots} | {a.object_id for group in assertions.values() for a, _, _ in group}
    found: dict[int, str] = {}
    for chunk, marks in in_chunks(sorted(ids)):
        found.update(db.execute(f"SELECT id, name FROM entities WHERE id IN ({marks})", chunk).fetchall())
    return found


# The order of mentions that decides a name, as one fixed-width string, so SQL and
# Python compare it alike: time, end before start, reference time, episode, ordinal,
# subject before object.
_RANK_SQL = "printf('%s%d%s%s%09d%d', t, kind, r, episode_id, ordinal, side)"


def mention_rank(assertion_time: str, is_start: bool, reference_time: str, episode_id: str,
                 ordinal: int, side: int) -> str:
    return f"{assertion_time}{int(is_start)}{reference_time}{episode_id}{ordinal:09d}{side}"


def name_from_new_mentions(db: Database, mentions: dict[int, tuple[str, str]]) -> None:
    """Adding assertions can only move a name earlier: compare with the stored rank."""
    db.conn.executemany(
        "UPDATE entities SET name = ?, name_rank = ? WHERE id = ? AND (name_rank IS NULL OR name_rank > ?)",
        [(form, rank, entity_id, rank) for entity_id, (rank, form) in mentions.items()],
    )


def rename_entities(db: Database, entity_ids: Iterable[int]) -> None:
    """Each entity shows the name its earliest active assertion wrote (valid-time order).

    "First given" by world time rather than by ingest order, so ingesting in another
    order, or undoing the episode that introduced a spelling, shows the same name.
    An entity no active assertion mentions keeps its last name for the history.
    """
    for entity_id in set(entity_ids):
        first = db.execute(
            f"""
            SELECT form, {_RANK_SQL} AS rank FROM (
                SELECT a.subject AS form, coalesce(a.valid_at, a.invalid_at) AS t,
                       a.valid_at IS NOT NULL AS kind, e.reference_time AS r, a.episode_id, a.ordinal, 0 AS side
                FROM assertions a JOIN episodes e ON e.id = a.episode_id
                WHERE a.subject_id = :id AND a.expired_at IS NULL
                UNION ALL
                SELECT a.object, coalesce(a.valid_at, a.invalid_at), a.valid_at IS NOT NULL,
                       e.reference_time, a.episode_id, a.ordinal, 1
                FROM assertions a JOIN episodes e ON e.id = a.episode_id
                WHERE a.object_id = :id AND a.expired_at IS NULL
            ) ORDER BY rank LIMIT 1
            """,
            {"id": entity_id},
        ).fetchone()
        if first is None:
            db.execute("UPDATE entities SET name_rank = NULL WHERE id = ?", [entity_id])
        else:
            db.execute("UPDATE entities SET name = ?, name_rank = ? WHERE id = ?", [*first, entity_id])
