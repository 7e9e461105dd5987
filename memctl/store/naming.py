"""Entity display names: each entity shows the spelling of its earliest active mention.

"Earliest" is by world time rather than by ingest order, so ingesting in another order,
or undoing the episode that introduced a spelling, shows the same name. The rank of the
mention that gave the name is stored with it (``entities.name_rank``), so most changes
compare a few new ranks with it instead of reading every mention again.
"""

from __future__ import annotations

from collections.abc import Iterable

from sqlite_utils import Database

from memctl.store import in_chunks

# The order of mentions that decides a name, as one fixed-width string, so SQL and
# Python compare it alike: time, end before start, reference time, episode, ordinal,
# subject before object.
_RANK_SQL = "printf('%s%d%s%s%09d%d', t, kind, r, episode_id, ordinal, side)"


def mention_rank(assertion_time: str, is_start: bool, reference_time: str, episode_id: str,
                 ordinal: int, side: int) -> str:
    return f"{assertion_time}{int(is_start)}{reference_time}{episode_id}{ordinal:09d}{side}"


def _mentions_sql(subject_where: str, object_where: str) -> str:
    """(assertion id, side, entity id, form, rank) of the mentions the conditions select."""
    return f"""
        SELECT id, side, entity_id, form, {_RANK_SQL} AS rank FROM (
            SELECT a.id, 0 AS side, a.subject_id AS entity_id, a.subject AS form,
                   coalesce(a.valid_at, a.invalid_at) AS t, a.valid_at IS NOT NULL AS kind,
                   a.reference_time AS r, a.episode_id, a.ordinal
            FROM assertions a WHERE {subject_where}
            UNION ALL
            SELECT a.id, 1, a.object_id, a.object, coalesce(a.valid_at, a.invalid_at), a.valid_at IS NOT NULL,
                   a.reference_time, a.episode_id, a.ordinal
            FROM assertions a WHERE {object_where}
        )"""


def name_from_new_mentions(db: Database, mentions: dict[int, tuple[str, str]]) -> None:
    """Adding mentions can only move a name earlier: compare with the stored rank.

    ``mentions``: entity id → (rank, form) of its earliest new mention.
    """
    db.conn.executemany(
        "UPDATE entities SET name = ?, name_rank = ? WHERE id = ? AND (name_rank IS NULL OR name_rank > ?)",
        [(form, rank, entity_id, rank) for entity_id, (rank, form) in mentions.items()],
    )


def rename_entities(db: Database, entity_ids: Iterable[int]) -> None:
    """Look each entity's name up again among all its active mentions.

    An entity no active assertion mentions keeps its last name for the history.
    """
    query = _mentions_sql("a.subject_id = :id AND a.expired_at IS NULL", "a.object_id = :id AND a.expired_at IS NULL")
    for entity_id in set(entity_ids):
        first = db.execute(f"SELECT form, rank FROM ({query}) ORDER BY rank LIMIT 1", {"id": entity_id}).fetchone()
        if first is None:
            db.execute("UPDATE entities SET name_rank = NULL WHERE id = ?", [entity_id])
        else:
            db.execute("UPDATE entities SET name = ?, name_rank = ? WHERE id = ?", [*first, entity_id])


def rename_after_moves(db: Database, before: dict[tuple[int, int], tuple[int, str, str]],
                       after: dict[tuple[int, int], tuple[int, str, str]]) -> None:
    """Names after some active mentions changed their dates (``mention_ranks`` around it).

    A mention that moved earlier can only take the name, as a new one would. Only an
    entity whose name-giving mention moved later needs all its mentions read again.
    """
    entities = sorted({entity for entity, _, _ in before.values()})
    name_rank: dict[int, str] = {}
    for chunk, marks in in_chunks(entities):
        name_rank.update(db.execute(f"SELECT id, name_rank FROM entities WHERE id IN ({marks})", chunk).fetchall())
    lost_name = {entity for key, (entity, rank, _) in before.items()
                 if rank == name_rank.get(entity) and after[key][1] > rank}
    earliest: dict[int, tuple[str, str]] = {}
    for entity, rank, form in after.values():
        if entity not in lost_name and (entity not in earliest or rank < earliest[entity][0]):
            earliest[entity] = (rank, form)
    name_from_new_mentions(db, earliest)
    rename_entities(db, lost_name)
