"""Writing episodes and their assertions, and taking them back out.

Every function here runs inside the caller's write transaction and returns what it
touched, so the caller recomputes each touched slot once per transaction.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from memctl import names
from memctl.model import Assertion, Episode
from memctl.store import given_values, in_chunks, on_postgres, summaries
from memctl.store.embeddings import forget_vectors
from memctl.store.entities import entity_ids
from memctl.store.episode_index import (
    fact_texts,
    forget_texts,
    hold,
    index_texts,
    next_text_ids,
    optimize,
    release,
    unindex_texts,
)
from memctl.store.facts import Slot, SlotChange, SlotChanges, Value, note_change, recompute_slots
from memctl.store.naming import gave_name, mention_rank, name_from_new_mentions, rename_entities

if TYPE_CHECKING:
    from memctl.store import Database


@dataclass
class Touched:
    """What a change touched: the slots to recompute whole (and single values, see
    ``recompute_slots``), the slots whose changed assertions are known (``changed``:
    recomputed over the stretch of time those reach), and the entities whose names to
    look up again."""

    slots: set[Slot] = field(default_factory=set)
    entities: set[int] = field(default_factory=set)
    values: set[Value] = field(default_factory=set)
    changed: dict[Slot, SlotChange] = field(default_factory=dict)
    # Entity id -> (rank, form) of its earliest mention added: it takes the name if earlier.
    new_mentions: dict[int, tuple[str, str]] = field(default_factory=dict)

    def update(self, other: Touched) -> None:
        self.slots |= other.slots
        self.entities |= other.entities
        self.values |= other.values
        for entity_id, mention in other.new_mentions.items():
            if entity_id not in self.new_mentions or mention < self.new_mentions[entity_id]:
                self.new_mentions[entity_id] = mention
        for slot, change in other.changed.items():
            if slot in self.changed:
                self.changed[slot].merge(change)
            else:
                self.changed[slot] = change

    def all_slots(self) -> set[Slot]:
        return self.slots | set(self.changed)


def recompute(db: Database, at: str, touched: Touched) -> SlotChanges:
    """Bring names and facts in line with the assertions after a change touched them."""
    rename(db, touched)
    return recompute_slots(db, touched.slots, at, touched.values, touched.changed)


def rename(db: Database, touched: Touched) -> None:
    """Bring the names of the entities a change touched in line with their mentions."""
    name_from_new_mentions(db, touched.new_mentions)
    rename_entities(db, touched.entities)


def all_entities(db: Database) -> set[int]:
    return {row[0] for row in db.execute("SELECT id FROM entities").fetchall()}


@dataclass
class Added:
    added: list[str] = field(default_factory=list)
    reactivated: list[str] = field(default_factory=list)
    already_present: list[str] = field(default_factory=list)
    extracted: list[str] = field(default_factory=list)  # stored as pending before, extracted now
    revised: list[str] = field(default_factory=list)  # stored before, read again with more content
    # Read again with more content, but the new reading's extraction failed: the stored
    # reading and its assertions stay (among already_present); the next ingest tries again.
    kept: list[str] = field(default_factory=list)
    still_failed: list[str] = field(default_factory=list)  # already present, their extraction failed
    to_store: list[Episode] = field(default_factory=list)
    assertions: int = 0
    touched: Touched = field(default_factory=Touched)


def longest_readings(episodes: Iterable[Episode]) -> dict[str, Episode]:
    """One episode per id: of a turn read twice (a resumed session read with its
    original, or before and after its reply grew), the longer reading."""
    by_id: dict[str, Episode] = {}
    for episode in episodes:
        if episode.id not in by_id or len(episode.content) > len(by_id[episode.id].content):
            by_id[episode.id] = episode
    return by_id


def revised_ids(db: Database, episodes: Iterable[Episode]) -> set[str]:
    """Ids of active stored episodes of which these are a longer reading: the same turn
    read again after its reply grew (its session was still being written at the last
    ingest). Only growth counts: a shorter or different copy of a turn (in a resumed
    session's file) is not a new reading, so two files cannot take turns replacing it."""
    by_id = longest_readings(episodes)
    differing = []
    for chunk, marks in in_chunks(list(by_id)):
        differing += [episode_id for episode_id, content_hash in db.execute(
            f"SELECT id, content_hash FROM episodes WHERE status = 'active' AND id IN ({marks})", chunk)
            if content_hash != by_id[episode_id].content_hash]
    found = set()
    for chunk, marks in in_chunks(differing):
        for episode_id, content in db.execute(f"SELECT id, content FROM episodes WHERE id IN ({marks})", chunk):
            new = by_id[episode_id].content
            if len(new) > len(content) and new.startswith(content):
                found.add(episode_id)
    return found


def sort_new(db: Database, episodes: list[Episode]) -> Added:
    """Which episodes are new, which were undone and come back, which grew, which are already in."""
    result = Added()
    unique = longest_readings(episodes)
    status: dict[str, tuple[str, str]] = {}
    for chunk, marks in in_chunks(list(unique)):
        status.update((row[0], row[1:]) for row in db.execute(
            f"SELECT id, status, extraction FROM episodes WHERE id IN ({marks})", chunk).fetchall())
    revised = revised_ids(db, unique.values())
    for episode_id, episode in unique.items():
        stored_status, extraction = status.get(episode_id, (None, None))
        if episode_id in revised and episode.extraction == "failed" and extraction in ("done", "structured"):
            result.already_present.append(episode_id)
            result.kept.append(episode_id)
        elif episode_id in revised:
            result.to_store.append(episode)
            result.revised.append(episode_id)
        elif stored_status == "active" and extraction == "pending" and episode.extraction != "pending":
            result.to_store.append(episode)  # an LLM was unreachable last time; its assertions arrive now
            result.extracted.append(episode_id)
        elif stored_status == "active":
            result.already_present.append(episode_id)
            if extraction == "failed":
                result.still_failed.append(episode_id)
        else:
            result.to_store.append(episode)
            (result.reactivated if episode_id in status else result.added).append(episode_id)
    # The same episode twice in one batch (a resumed session read with its original)
    # is stored once; the repeats are already present, as they would be a batch later.
    seen: set[str] = set()
    for episode in episodes:
        if episode.id in seen:
            result.already_present.append(episode.id)
        seen.add(episode.id)
    return result


def store_episodes(db: Database, result: Added, at: str, operation_id: str) -> None:
    """Write ``result.to_store`` and their assertions, filling in what they touched.

    A revised episode's old reading goes to the ``revisions`` journal and its assertions
    expire; the new reading's assertions take their place.
    """
    to_store = result.to_store
    result.touched.update(touched_by(db, result.revised, active_only=True, added=False))
    # Their text may change below: its tokens go while the indexed text is still there.
    unindex_texts(db, result.reactivated + result.revised + result.extracted)
    for chunk, marks in in_chunks(result.revised):
        db.execute(f"""INSERT INTO revisions (episode_id, revised_at, operation_id, old_content, old_content_hash,
                                              old_extraction, old_extraction_error, old_operation_id, old_created_at)
                       SELECT id, ?, ?, content, content_hash, extraction, extraction_error, operation_id, created_at
                       FROM episodes WHERE id IN ({marks})""", [at, operation_id, *chunk])
        db.execute(f"UPDATE assertions SET expired_at = ? WHERE expired_at IS NULL AND episode_id IN ({marks})",
                   [at, *chunk])
    first = next_text_ids(db)
    db.conn.executemany(
        """
        INSERT INTO episodes (id, source, position, source_id, format, content, content_hash,
                              reference_time, reference_time_source, status, created_at, operation_id,
                              extraction, extraction_error, text_id, session)
        VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, 'active', ?, ?, ?, ?, ?, ?)
        ON CONFLICT(id) DO UPDATE SET status = 'active', created_at = excluded.created_at,
                                      operation_id = excluded.operation_id, extraction = excluded.extraction,
                                      extraction_error = excluded.extraction_error, content = excluded.content,
                                      content_hash = excluded.content_hash, text_id = excluded.text_id
        """,
        [
            (e.id, e.source, e.position, e.source_id, e.format, e.content, e.content_hash,
             e.reference_time, e.reference_time_source, at, operation_id, e.extraction, e.extraction_error, first + n,
             e.session)
            for n, e in enumerate(to_store)
        ],
    )
    result.assertions, changed = insert_assertions(db, to_store, at)
    result.touched.update(Touched(changed=changed))
    index_texts(db, [(first + n, e.content) for n, e in enumerate(to_store)])
    hold(db, result.added + result.reactivated, at)


class Extracted(Protocol):
    """An episode with the assertions to store for it: one read now, or a stored one retried."""

    @property
    def id(self) -> str: ...

    reference_time: str
    assertions: list[Assertion]
    extraction: str
    extraction_error: str | None


def insert_assertions(db: Database, to_store: Sequence[Extracted], at: str) -> tuple[int, dict[Slot, SlotChange]]:
    """The episodes' assertions as new rows; how many, and what they change in which slots."""
    changed: dict[Slot, SlotChange] = {}
    forms = {form for e in to_store for a in e.assertions for form in (a.subject, a.object)}
    ids_by_form = entity_ids(db, forms, at)
    rows = []
    first_mentions: dict[int, tuple[str, str]] = {}  # entity id -> (rank, form) of its earliest new mention
    for episode in to_store:
        for ordinal, a in enumerate(episode.assertions):
            subject_id, object_id = ids_by_form[a.subject], ids_by_form[a.object]
            predicate_key = names.predicate_key(a.predicate)
            for side, (entity_id, form) in enumerate([(subject_id, a.subject), (object_id, a.object)]):
                rank = mention_rank(a.valid_at, a.invalid_at, episode.reference_time, episode.id, ordinal, side)
                if entity_id not in first_mentions or rank < first_mentions[entity_id][0]:
                    first_mentions[entity_id] = (rank, form)
            rows.append((
                episode.id, ordinal, a.subject, subject_id, a.predicate, predicate_key, a.object, object_id,
                a.fact, a.valid_at, a.valid_at_evidence, a.valid_at_precision, a.invalid_at,
                a.invalid_at_evidence, a.invalid_at_precision, a.date_span, a.cardinality, a.extractor,
                a.extracted_at or at, at, episode.reference_time,
            ))
            note_change(changed, (subject_id, predicate_key), a.valid_at or a.invalid_at or "", object_id,
                        a.cardinality, added=True)
    name_from_new_mentions(db, first_mentions)
    db.conn.executemany(
        """
        INSERT INTO assertions (episode_id, ordinal, subject, subject_id, predicate, predicate_key, object,
            object_id, fact, valid_at, valid_at_evidence, valid_at_precision, invalid_at, invalid_at_evidence,
            invalid_at_precision, date_span, cardinality, extractor, extracted_at, created_at, reference_time)
        VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
        """,
        rows,
    )
    return len(rows), changed


def replace_assertions(db: Database, episodes: Sequence[Extracted], at: str, operation_id: str) -> Touched:
    """Retry: each episode's active assertions expire at ``at`` and its new ones take their
    place. The old ones stay in the history, so ``--known-at`` still sees them, and
    ``revert_retry`` can bring them back; the old extraction state is journaled for it."""
    ids = [e.id for e in episodes]
    touched = touched_by(db, ids, active_only=True, added=False)
    for chunk, marks in in_chunks(ids):
        db.execute(f"""INSERT INTO retries (operation_id, episode_id, old_extraction, old_extraction_error)
                       SELECT ?, id, extraction, extraction_error FROM episodes WHERE id IN ({marks})""",
                   [operation_id, *chunk])
    for chunk, marks in in_chunks(ids):
        db.execute(f"UPDATE assertions SET expired_at = ? WHERE expired_at IS NULL AND episode_id IN ({marks})",
                   [at, *chunk])
    _, changed = insert_assertions(db, episodes, at)
    touched.update(Touched(changed=changed))
    db.conn.executemany("UPDATE episodes SET extraction = ?, extraction_error = ? WHERE id = ?",
                        [(e.extraction, e.extraction_error, e.id) for e in episodes])
    return touched


def revert_retry(db: Database, operation_id: str, retried_at: str, at: str) -> tuple[Touched, list[str], list[str]]:
    """Undo the retry ``operation_id`` (its transaction time ``retried_at``): each episode's
    assertions from the retry expire at ``at``, the ones it replaced come back, and so
    does the extraction state the ``retries`` journal kept.

    An episode changed since (retried again, undone, ingested anew) is left as it is.
    Returns what was touched, the episodes reverted and those left.
    """
    journal = db.execute("SELECT episode_id, old_extraction, old_extraction_error FROM retries "
                         "WHERE operation_id = ? ORDER BY episode_id", [operation_id]).fetchall()
    reverted: list[str] = []
    left: list[str] = []
    for episode_id, _, _ in journal:
        changed_since = db.execute(
            """SELECT NOT EXISTS (SELECT 1 FROM episodes WHERE id = :e AND status = 'active')
                      OR EXISTS (SELECT 1 FROM assertions WHERE episode_id = :e AND expired_at IS NULL
                                 AND created_at != :t)
                      OR EXISTS (SELECT 1 FROM assertions WHERE episode_id = :e AND created_at = :t
                                 AND expired_at IS NOT NULL)""",
            {"e": episode_id, "t": retried_at}).fetchone()[0]
        (left if changed_since else reverted).append(episode_id)
    touched = _reactivate(db, reverted, retried_at, at)
    db.conn.executemany("UPDATE episodes SET extraction = ?, extraction_error = ? WHERE id = ?",
                        [(extraction, error, episode_id) for episode_id, extraction, error in journal
                         if episode_id in set(reverted)])
    return touched, reverted, left


def revert_undo(db: Database, episode_ids: list[str], undone_at: str, at: str) -> tuple[Touched, list[str], list[str]]:
    """Undo an undo (made at ``undone_at``) of ``episode_ids``: they are active again, with
    the assertions it expired, as new rows from ``at`` on.

    An episode changed since (ingested again, purged) is left as it is. Returns what was
    touched, the episodes reactivated and those left.
    """
    back: list[str] = []
    left: list[str] = []
    for episode_id in episode_ids:
        changed_since = db.execute(
            """SELECT NOT EXISTS (SELECT 1 FROM episodes WHERE id = :e AND status = 'undone')
                      OR EXISTS (SELECT 1 FROM assertions WHERE episode_id = :e AND created_at > :t)""",
            {"e": episode_id, "t": undone_at}).fetchone()[0]
        (left if changed_since else back).append(episode_id)
    # An undo commits in batches, each at its own instant: the end of an episode's last
    # span says when its batch took it out, and so which of its assertions that expired.
    batch_of: dict[str, list[str]] = defaultdict(list)
    for chunk, marks in in_chunks(back):
        for episode_id, released_at in db.execute(
                f"SELECT episode_id, max(held_until) FROM episode_spans WHERE episode_id IN ({marks}) "
                "GROUP BY episode_id", chunk):
            batch_of[released_at].append(episode_id)
    touched = Touched()
    for released_at, ids in batch_of.items():
        touched.update(_reactivate(db, ids, released_at, at))
    for chunk, marks in in_chunks(back):
        db.execute(f"UPDATE episodes SET status = 'active' WHERE id IN ({marks})", chunk)
    hold(db, back, at)
    return touched, back, left


def revert_revisions(db: Database, operation_id: str, at: str) -> tuple[Touched, list[str]]:
    """Undoing the ingest ``operation_id``: each episode it revised (and nothing revised
    since) gets its reading from before back, with that reading's assertions.

    Returns what was touched and the episodes reverted.
    """
    rows = db.execute(
        """SELECT r.episode_id, r.revised_at, r.old_content, r.old_content_hash, r.old_extraction,
                  r.old_extraction_error, r.old_operation_id, r.old_created_at
           FROM revisions r JOIN episodes e ON e.id = r.episode_id
           WHERE r.operation_id = :op AND e.operation_id = :op AND e.status = 'active'
             AND r.revised_at = (SELECT min(revised_at) FROM revisions
                                 WHERE episode_id = r.episode_id AND operation_id = :op)
           ORDER BY r.episode_id""", {"op": operation_id}).fetchall()
    touched = Touched()
    for episode_id, revised_at, *old in rows:
        touched.update(_reactivate(db, [episode_id], revised_at, at))
        unindex_texts(db, [episode_id])
        text_id = next_text_ids(db)
        db.execute("""UPDATE episodes SET content = ?, content_hash = ?, extraction = ?, extraction_error = ?,
                                          operation_id = ?, created_at = ?, text_id = ? WHERE id = ?""",
                   [*old, text_id, episode_id])
        index_texts(db, [(text_id, old[0])])
    return touched, [row[0] for row in rows]


# What a copy of an assertion brought back takes from it: all but its id and transaction times.
_COPIED = ("episode_id, ordinal, subject, subject_id, predicate, predicate_key, object, object_id, fact, valid_at, "
           "valid_at_evidence, valid_at_precision, invalid_at, invalid_at_evidence, invalid_at_precision, "
           "date_span, cardinality, extractor, extracted_at, reference_time")


def _reactivate(db: Database, episode_ids: list[str], expired_at: str, at: str) -> Touched:
    """The episodes' assertions that expired at ``expired_at`` replace their active ones,
    as new rows from ``at`` on: the history keeps what was believed in between."""
    touched = touched_by(db, episode_ids, active_only=True, added=False)
    for chunk, marks in in_chunks(episode_ids):
        db.execute(f"UPDATE assertions SET expired_at = ? WHERE expired_at IS NULL AND episode_id IN ({marks})",
                   [at, *chunk])
        db.execute(f"""INSERT INTO assertions ({_COPIED}, created_at)
                       SELECT {_COPIED}, ? FROM assertions
                       WHERE expired_at = ? AND episode_id IN ({marks}) ORDER BY id""", [at, expired_at, *chunk])
    touched.update(touched_by(db, episode_ids, active_only=True, added=True))
    return touched


def touched_by(db: Database, episode_ids: Sequence[str | int], *, active_only: bool, added: bool | None = None,
               column: str = "episode_id") -> Touched:
    """What the episodes' assertions touch (with ``column="id"``, what the assertions of
    these ids touch). ``added``: they are being added (True) or
    taken out (False), so their slots are recomputed over the stretch of time they
    reach; None: their slots are recomputed whole.

    Names: a mention added takes the name only if it ranks first; one taken out (or
    whose slot is recomputed whole) makes its entity look its name up again only if it
    gave the name. A hot entity has hundreds of thousands of mentions to look through.
    """
    touched = Touched()
    condition = "AND expired_at IS NULL" if active_only else ""
    given: dict[int, set[str]] = defaultdict(set)  # entity id -> ranks of the mentions going
    for chunk, marks in in_chunks(episode_ids):
        for (subject_id, predicate_key, object_id, instant, cardinality, valid_at, invalid_at, reference_time,
             episode_id, ordinal, subject, object_) in db.execute(
            f"""SELECT subject_id, predicate_key, object_id, coalesce(valid_at, invalid_at), cardinality, valid_at,
                       invalid_at, reference_time, episode_id, ordinal, subject, object
                FROM assertions WHERE {column} IN ({marks}) {condition}""",
            chunk,
        ).fetchall():
            if added is None:
                touched.slots.add((subject_id, predicate_key))
            else:
                note_change(touched.changed, (subject_id, predicate_key), instant, object_id, cardinality, added=added)
            for side, (entity_id, form) in enumerate([(subject_id, subject), (object_id, object_)]):
                rank = mention_rank(valid_at, invalid_at, reference_time, episode_id, ordinal, side)
                if added:
                    if entity_id not in touched.new_mentions or rank < touched.new_mentions[entity_id][0]:
                        touched.new_mentions[entity_id] = (rank, form)
                else:
                    given[entity_id].add(rank)
    touched.entities = gave_name(db, given)
    return touched


def latest_first(db: Database, episode_ids: list[str]) -> tuple[list[str], dict[str, str]]:
    """The stored episodes among ``episode_ids``, latest reference time first (then id),
    and the status of those that are not active ("purged": not stored any more). Sorted
    by the database, from a temporary table: a whole ingest's 333k episodes, read and
    sorted here, took 90 MB."""
    db.execute("CREATE TEMP TABLE IF NOT EXISTS ordering_episodes (id TEXT PRIMARY KEY) WITHOUT ROWID")
    db.execute("DELETE FROM temp.ordering_episodes")
    db.conn.executemany("INSERT OR IGNORE INTO temp.ordering_episodes VALUES (?)", ((e,) for e in episode_ids))
    ordered: list[str] = []
    inactive: dict[str, str] = {}
    # CROSS JOIN: from the few named to their rows; else SQLite walks every episode in the
    # order asked for, to spare a sort (23 ms for one episode of 33k).
    for episode_id, status in db.execute("SELECT e.id, e.status FROM temp.ordering_episodes o CROSS JOIN episodes e "
                                         "ON e.id = o.id ORDER BY e.reference_time DESC, e.id DESC"):
        ordered.append(episode_id)
        if status != "active":
            inactive[episode_id] = status
    db.execute("DELETE FROM temp.ordering_episodes")
    if len(ordered) < len(episode_ids):  # purged by another process since they were named
        inactive.update(dict.fromkeys(set(episode_ids).difference(ordered), "purged"))
    return ordered, inactive


def expire_episodes(db: Database, episode_ids: list[str], at: str) -> Touched:
    """Undo: the episodes' assertions stop being believed at ``at``; history keeps them."""
    touched = touched_by(db, episode_ids, active_only=True, added=False)
    for chunk, marks in in_chunks(episode_ids):
        db.execute(f"UPDATE assertions SET expired_at = ? WHERE expired_at IS NULL AND episode_id IN ({marks})",
                   [at, *chunk])
        db.execute(f"UPDATE episodes SET status = 'undone' WHERE id IN ({marks})", chunk)
    release(db, episode_ids, at)
    return touched


def expire_assertions(db: Database, assertion_ids: list[int], at: str) -> Touched:
    """A conflict settled (``memctl resolve``): these active assertions stop being
    believed at ``at``; their episodes stay, and history keeps them."""
    touched = touched_by(db, assertion_ids, active_only=True, added=False, column="id")
    for chunk, marks in in_chunks(assertion_ids):
        db.execute(f"UPDATE assertions SET expired_at = ? WHERE expired_at IS NULL AND id IN ({marks})", [at, *chunk])
    return touched


def restore_assertions(db: Database, assertion_ids: list[int], expired_at: str,
                       at: str) -> tuple[Touched, list[int], list[int]]:
    """Undo of a settlement: the assertions it expired at ``expired_at`` are believed
    again, as new rows from ``at`` on. One whose episode changed since (undone, retried,
    ingested anew: it has assertions made after ``expired_at``) is left as it is.
    Returns what was touched, the assertions restored and those left."""
    restored: list[int] = []
    left: list[int] = []
    for chunk, marks in in_chunks(assertion_ids):
        for assertion_id, unchanged in db.execute(
            f"""SELECT a.id, a.expired_at = ? AND e.status = 'active'
                       AND NOT EXISTS (SELECT 1 FROM assertions n WHERE n.episode_id = a.episode_id
                                       AND n.created_at > ?)
                FROM assertions a JOIN episodes e ON e.id = a.episode_id WHERE a.id IN ({marks}) ORDER BY a.id""",
            [expired_at, expired_at, *chunk]).fetchall():
            (restored if unchanged else left).append(assertion_id)
    new_ids: list[int] = []
    for chunk, marks in in_chunks(restored):
        new_ids += [row[0] for row in db.execute(
            f"INSERT INTO assertions ({_COPIED}, created_at) SELECT {_COPIED}, ? FROM assertions "
            f"WHERE id IN ({marks}) ORDER BY id RETURNING id", [at, *chunk]).fetchall()]
    return touched_by(db, new_ids, active_only=True, added=True, column="id"), restored, left


def rekey_assertions(db: Database, entities_of: dict[int, tuple[int, int]], at: str) -> tuple[list[int], Touched]:
    """Merge and split (``memctl.merging``): a copy of each of these assertions, believed from
    ``at`` on, naming the (subject id, object id) given for it; the names stay as written.
    Returns the copies' ids, in the order of the ids copied, and what they touch."""
    new_ids: list[int] = []
    for assertion_id in sorted(entities_of):
        subject_id, object_id = entities_of[assertion_id]
        columns = _COPIED.replace("subject_id", "?").replace("object_id", "?")
        new_ids.append(db.execute(
            f"INSERT INTO assertions ({_COPIED}, created_at) SELECT {columns}, ? FROM assertions WHERE id = ? RETURNING id",
            [subject_id, object_id, at, assertion_id]).fetchone()[0])
    return new_ids, touched_by(db, new_ids, active_only=True, added=True, column="id")


def purge_episodes(db: Database, episode_ids: list[str], at: str) -> SlotChanges:
    """Erase episodes for good: their content, their assertions, every fact version that
    any of those assertions supported (current or past), and the vectors of those texts,
    so no copy of the text survives. Entities nothing mentions any more go too.

    The episodes are undone first, which brings the facts in line with the assertions
    that remain (what is returned: the versions expired and inserted). A current fact
    that one of the erased assertions had also supported then carries on as a new row
    with the rest of its support, so its history does not name what is erased.

    The freed pages are zeroed (secure_delete) and both text indexes merged into one
    segment, so no page or older index segment keeps a copy of the text.
    """
    mentioned = mentioned_entities(db, episode_ids)
    touched = expire_episodes(db, episode_ids, at)
    changes = recompute(db, at, touched)
    with secure_delete(db):
        forget_texts(db, episode_ids)
        forget_vectors(db, episode_ids)
        db.execute("CREATE TEMP TABLE IF NOT EXISTS purged_episodes (id TEXT PRIMARY KEY)")
        db.execute("CREATE TEMP TABLE IF NOT EXISTS doomed_facts (id INTEGER PRIMARY KEY, copy INTEGER)")
        db.execute("DELETE FROM temp.purged_episodes")
        db.execute("DELETE FROM temp.doomed_facts")
        db.conn.executemany("INSERT INTO temp.purged_episodes VALUES (?)", [(e,) for e in episode_ids])
        db.execute("""INSERT OR IGNORE INTO temp.doomed_facts (id)
                      SELECT p.fact_id FROM temp.purged_episodes e CROSS JOIN assertions a ON a.episode_id = e.id
                      CROSS JOIN fact_provenance p ON p.assertion_id = a.id""")
        _carry_on(db, at)
        # A summary was written from its entity's facts: those of the purged text's subjects go.
        summaries.forget(db, [row[0] for row in db.execute(
            "SELECT DISTINCT a.subject_id FROM temp.purged_episodes e CROSS JOIN assertions a ON a.episode_id = e.id")])
        summaries.forget_sessions(db)
        table, key = fact_texts(db)
        db.execute(f"DELETE FROM {table} WHERE {key} IN (SELECT id FROM temp.doomed_facts)")
        db.execute("DELETE FROM fact_provenance WHERE fact_id IN (SELECT id FROM temp.doomed_facts)")
        db.execute("DELETE FROM facts WHERE id IN (SELECT id FROM temp.doomed_facts)")
        # The journals hold the episodes' old dates, states and readings, the cache what
        # a model made of their text: they go with them.
        purged = "SELECT id FROM temp.purged_episodes"
        db.execute("DELETE FROM repairs WHERE assertion_id IN (SELECT a.id FROM temp.purged_episodes e "
                   "CROSS JOIN assertions a ON a.episode_id = e.id)")
        for table in ("retries", "revisions", "llm_cache", "api_batch_requests", "assertions"):
            db.execute(f"DELETE FROM {table} WHERE episode_id IN ({purged})")
        db.execute(f"DELETE FROM episodes WHERE id IN ({purged})")
        optimize(db)
        orphans = [
            entity_id
            for entity_id in sorted(mentioned)
            if not any(
                db.execute(f"SELECT 1 FROM {table} WHERE {column} = ? LIMIT 1", [entity_id]).fetchone()
                for table in ("assertions", "facts")
                for column in ("subject_id", "object_id")
            )
        ]
        db.conn.executemany("DELETE FROM entities WHERE id = ?", [(i,) for i in orphans])
        db.conn.executemany("DELETE FROM summary_gates WHERE subject_id = ?", [(i,) for i in orphans])
    return changes


def mentioned_entities(db: Database, episode_ids: list[str]) -> set[int]:
    """Every entity the episodes' assertions (active or not) name."""
    found: set[int] = set()
    for chunk, marks in in_chunks(episode_ids):
        for subject_id, object_id in db.execute(
                f"SELECT subject_id, object_id FROM assertions WHERE episode_id IN ({marks})", chunk):
            found.update((subject_id, object_id))
    return found


def _carry_on(db: Database, at: str) -> None:
    """The current facts among ``temp.doomed_facts`` as new rows from ``at`` on, with the
    support that is not being erased; the doomed rows go after."""
    first = db.execute("SELECT coalesce(max(id), 0) + 1 FROM facts").fetchone()[0]
    db.execute("""UPDATE temp.doomed_facts SET copy = ? + (SELECT count(*) FROM temp.doomed_facts d
                                                          JOIN facts f ON f.id = d.id
                                                          WHERE f.expired_at IS NULL AND d.id < doomed_facts.id)
                  WHERE id IN (SELECT id FROM facts WHERE id IN (SELECT id FROM temp.doomed_facts)
                               AND expired_at IS NULL)""", [first])
    columns = "subject_id, predicate, predicate_key, object_id, fact, cardinality, valid_at, invalid_at, end_reason"
    db.execute(f"""INSERT INTO facts (id, {columns}, created_at)
                   SELECT d.copy, {columns}, ? FROM temp.doomed_facts d JOIN facts f ON f.id = d.id
                   WHERE d.copy IS NOT NULL""", [at])
    db.execute("""INSERT INTO fact_provenance (fact_id, assertion_id, episode_id)
                  SELECT d.copy, p.assertion_id, p.episode_id FROM temp.doomed_facts d
                  JOIN fact_provenance p ON p.fact_id = d.id
                  WHERE d.copy IS NOT NULL AND p.episode_id NOT IN (SELECT id FROM temp.purged_episodes)""")
    table, key = fact_texts(db)
    db.execute(f"""INSERT INTO {table} ({key}, fact, subject, predicate, object)
                  SELECT f.id, f.fact, s.name, f.predicate, o.name FROM temp.doomed_facts d JOIN facts f ON f.id = d.copy
                  JOIN entities s ON s.id = f.subject_id JOIN entities o ON o.id = f.object_id""")


@contextmanager
def secure_delete(db: Database) -> Iterator[None]:
    """Deleted content is overwritten with zeros while the block runs, not just unlinked
    (SQLite; PostgreSQL cannot promise as much: docs/postgres.md)."""
    if on_postgres(db):
        yield
        return
    was = db.execute("PRAGMA secure_delete").fetchone()[0]
    db.execute("PRAGMA secure_delete = ON")
    try:
        yield
    finally:
        db.execute(f"PRAGMA secure_delete = {int(was)}")


# --- what extraction reads -------------------------------------------------------------


# Of an entity that is the object of many assertions ("Postgres"), the predicates of its
# latest mentions as object are enough to show how it is related to: reading them all
# would cost a row per mention, and no index holds them by predicate.
OBJECT_MENTIONS_READ = 200


def predicates_in_view(db: Database, name_keys: Iterable[str], limit: int) -> tuple[str, ...]:
    """The predicates active assertions use with the entities these matching keys name,
    as written in one of them, those shared by the most of these entities first: the
    relations a model should keep calling by the same name (architecture §3).

    Indexed throughout, whatever the store's size: entities by key; a subject's
    predicates by a skip scan of ``assertions_slot`` (one seek per distinct predicate,
    not a row per assertion); an object's from its latest mentions only.
    """
    keys = json.dumps(sorted(set(name_keys)))
    entity_ids = [row[0] for row in db.execute(
        f"SELECT id FROM entities WHERE name_key IN (SELECT value FROM {given_values(db)} g)", [keys]).fetchall()]
    if not entity_ids:
        return ()
    users: dict[str, set[int]] = {}  # predicate as shown → entities in view that use it
    shown: dict[str, str] = {}  # predicate key → the form shown
    rows = db.execute(
        f"""WITH RECURSIVE used(subject_id, predicate_key) AS (
               SELECT e.value, (SELECT min(predicate_key) FROM assertions WHERE subject_id = e.value)
               FROM {given_values(db, "integer")} e
               UNION ALL
               SELECT u.subject_id, (SELECT min(a.predicate_key) FROM assertions a
                                     WHERE a.subject_id = u.subject_id AND a.predicate_key > u.predicate_key)
               FROM used u WHERE u.predicate_key IS NOT NULL)
           SELECT u.subject_id, u.predicate_key,
                  (SELECT a.predicate FROM assertions a WHERE a.subject_id = u.subject_id
                   AND a.predicate_key = u.predicate_key AND a.expired_at IS NULL LIMIT 1)
           FROM used u WHERE u.predicate_key IS NOT NULL""", [json.dumps(entity_ids)]).fetchall()
    for entity_id in entity_ids:
        rows += [(entity_id, key, predicate) for key, predicate in db.execute(
            "SELECT predicate_key, predicate FROM assertions WHERE object_id = ? AND expired_at IS NULL "
            "ORDER BY id DESC LIMIT ?", [entity_id, OBJECT_MENTIONS_READ]).fetchall()]
    for entity_id, key, predicate in rows:
        if predicate is not None:  # None: only undone or replaced assertions use it
            users.setdefault(key, set()).add(entity_id)
            shown.setdefault(key, predicate)
    ranked = sorted(users, key=lambda key: (-len(users[key]), key))[:limit]
    return tuple(shown[key] for key in ranked)


def contents_before(db: Database, source: str, position: int, limit: int) -> list[str]:
    """The active episodes just before ``position`` in their source, oldest first."""
    rows = db.execute(
        "SELECT content FROM episodes WHERE source = ? AND position < ? AND status = 'active' "
        "ORDER BY position DESC LIMIT ?", [source, position, limit]).fetchall()
    return [row[0] for row in reversed(rows)]


@dataclass
class StoredText:
    """What re-extracting a stored episode starts from."""

    id: str
    content: str
    reference_time: str
    source: str
    position: int
    extraction: str


def unextracted_ids(db: Database) -> list[str]:
    """Active episodes whose extraction failed or is still pending, in time order."""
    return [row[0] for row in db.execute(
        "SELECT id FROM episodes WHERE status = 'active' AND extraction IN ('failed', 'pending') "
        "ORDER BY reference_time, id").fetchall()]


def stored_texts(db: Database, episode_ids: list[str]) -> list[StoredText]:
    """The active ones among these episodes, in time order."""
    rows = []
    for chunk, marks in in_chunks(episode_ids):
        rows += db.execute(
            f"SELECT id, content, reference_time, source, position, extraction FROM episodes "
            f"WHERE status = 'active' AND id IN ({marks})", chunk).fetchall()
    return [StoredText(*row) for row in sorted(rows, key=lambda row: (row[2], row[0]))]


def active_assertion_counts(db: Database, episode_ids: list[str]) -> dict[str, int]:
    """How many active assertions each of these episodes has (those with none are left out)."""
    found: dict[str, int] = {}
    for chunk, marks in in_chunks(episode_ids):
        found.update(db.execute(f"""SELECT episode_id, count(*) FROM assertions WHERE expired_at IS NULL
                                    AND episode_id IN ({marks}) GROUP BY episode_id""", chunk).fetchall())
    return found


def active_ids(db: Database, episode_ids: list[str], *, extracted: bool = False) -> set[str]:
    """The active episodes among these; with ``extracted``, only those whose extraction
    is not pending (done, failed or structured), which an ingest does not extract again."""
    condition = "AND extraction != 'pending'" if extracted else ""
    found: set[str] = set()
    for chunk, marks in in_chunks(episode_ids):
        found.update(row[0] for row in db.execute(
            f"SELECT id FROM episodes WHERE status = 'active' {condition} AND id IN ({marks})", chunk).fetchall())
    return found
