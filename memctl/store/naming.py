"""Entity display names: each entity shows the spelling of its earliest active mention.

"Earliest" is by world time rather than by ingest order, so ingesting in another order,
or undoing the episode that introduced a spelling, shows the same name. The rank of the
mention that gave the name is stored with it (``entities.name_rank``), so most changes
compare a few new ranks with it instead of reading every mention again.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, NamedTuple

from memctl.store import dialect, in_chunks

if TYPE_CHECKING:
    from memctl.store import Database

# The order of mentions that decides a name, as one fixed-width string, so SQL and
# Python compare it alike: time, end before start (the head), then reference time,
# episode, ordinal, subject before object (the tail).
_RANK_SQL = {"sqlite": "printf('%s%d%s%s%09d%d', t, kind, r, episode_id, ordinal, side)",
             "postgresql": "t || kind::int || r || episode_id || lpad(ordinal::text, 9, '0') || side"}


def rank_head(valid_at: str | None, invalid_at: str | None) -> str:
    """The part of a mention's rank its dates decide: always 28 characters."""
    return f"{valid_at or invalid_at}{int(valid_at is not None)}"


def rank_tail(reference_time: str, episode_id: str, ordinal: int, side: int) -> str:
    return f"{reference_time}{episode_id}{ordinal:09d}{side}"


def mention_rank(valid_at: str | None, invalid_at: str | None, reference_time: str, episode_id: str,
                 ordinal: int, side: int) -> str:
    return rank_head(valid_at, invalid_at) + rank_tail(reference_time, episode_id, ordinal, side)


class MovedMention(NamedTuple):
    """An active mention whose dates changed: rank heads before and after, same tail."""

    entity_id: int
    form: str
    before: str
    after: str
    tail: str


def name_from_new_mentions(db: Database, mentions: dict[int, tuple[str, str]]) -> None:
    """Adding mentions can only move a name earlier: compare with the stored rank.

    ``mentions``: entity id → (rank, form) of its earliest new mention.
    """
    db.conn.executemany(
        "UPDATE entities SET name = ?, name_rank = ? WHERE id = ? AND (name_rank IS NULL OR name_rank > ?)",
        [(form, rank, entity_id, rank) for entity_id, (rank, form) in mentions.items()],
    )


def gave_name(db: Database, ranks: dict[int, set[str]]) -> set[int]:
    """Of entities and ranks of some of their mentions, those whose name one of these gave:
    only they need their name looked up again when these go."""
    found: set[int] = set()
    for chunk, marks in in_chunks(sorted(ranks)):
        found.update(entity_id for entity_id, name_rank in db.execute(
            f"SELECT id, name_rank FROM entities WHERE id IN ({marks})", chunk) if name_rank in ranks[entity_id])
    return found


def rename_entities(db: Database, entity_ids: Iterable[int]) -> None:
    """Look each entity's name up again among all its active mentions.

    An entity no active assertion mentions keeps its last name for the history.
    """
    for entity_id in set(entity_ids):
        first = db.execute(
            f"""
            SELECT form, {_RANK_SQL[dialect(db)]} AS rank FROM (
                SELECT a.subject AS form, coalesce(a.valid_at, a.invalid_at) AS t, a.valid_at IS NOT NULL AS kind,
                       a.reference_time AS r, a.episode_id, a.ordinal, 0 AS side
                FROM assertions a WHERE a.subject_id = :id AND a.expired_at IS NULL
                UNION ALL
                SELECT a.object, coalesce(a.valid_at, a.invalid_at), a.valid_at IS NOT NULL, a.reference_time,
                       a.episode_id, a.ordinal, 1
                FROM assertions a WHERE a.object_id = :id AND a.expired_at IS NULL
            ) ORDER BY rank LIMIT 1
            """,
            {"id": entity_id},
        ).fetchone()
        if first is None:
            db.execute("UPDATE entities SET name_rank = NULL WHERE id = ?", [entity_id])
        else:
            db.execute("UPDATE entities SET name = ?, name_rank = ? WHERE id = ?", [*first, entity_id])


def rename_after_moves(db: Database, moves: list[MovedMention]) -> None:
    """Names after some active mentions changed their dates.

    A mention that moved earlier can only take the name, as a new one would. Only an
    entity whose name-giving mention moved later needs all its mentions read again.
    Heads are compared first (they are a fixed-width prefix of the rank): a repair moves
    a hundred thousand mentions, and few of them come near the name.
    """
    name_rank: dict[int, str | None] = {}
    for chunk, marks in in_chunks(sorted({move.entity_id for move in moves})):
        name_rank.update(db.execute(f"SELECT id, name_rank FROM entities WHERE id IN ({marks})", chunk).fetchall())
    lost_name = set()
    for move in moves:
        stored = name_rank[move.entity_id]
        if stored is not None and stored == move.before + move.tail and move.after + move.tail > stored:
            lost_name.add(move.entity_id)
    earliest: dict[int, tuple[str, str]] = {}
    for move in moves:
        stored = name_rank[move.entity_id]
        if move.entity_id in lost_name or (stored is not None and move.after > stored[:len(move.after)]):
            continue
        rank = move.after + move.tail
        if move.entity_id not in earliest or rank < earliest[move.entity_id][0]:
            earliest[move.entity_id] = (rank, move.form)
    name_from_new_mentions(db, earliest)
    rename_entities(db, lost_name)
