"""Entity summaries a model wrote, their versions, and the novelty gate's state per entity
(schema 0015; the gate itself is ``memctl.summarize``).

A summary version is current only while its entity's facts are the set it was written
from. So every change to facts marks its subjects here, in the same transaction
(``mark_changed``, from ``store.facts``), and expires their current summaries: whatever
path changed the facts (an ingest, an undo, a retry, another process deriving what a
killed one owed), no summary outlives its facts.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, NamedTuple

from memctl.results import EntitySummary
from memctl.store import Queryable, in_chunks, json_texts
from memctl.store.reads import facts_of_subject_at, time_window

if TYPE_CHECKING:
    from memctl.store import Database


def mark_changed(db: Database, expired: Iterable[dict], inserted: Iterable[dict], at: str) -> None:
    """Facts of these subjects changed at ``at`` (fact rows expired and inserted): their
    current summaries expire, and the gate is told, with whether a fact of theirs ended,
    was superseded or went (``invalidated``), rather than only began."""
    expired, inserted = list(expired), list(inserted)
    subjects: dict[int, int] = {}
    still_open = {(row["subject_id"], row["predicate_key"], row["object_id"], row["valid_at"])
                  for row in inserted if row["invalid_at"] is None}
    for row in inserted:
        subjects[row["subject_id"]] = max(subjects.get(row["subject_id"], 0), int(row["invalid_at"] is not None))
    for row in expired:
        gone = row["invalid_at"] is None and (row["subject_id"], row["predicate_key"], row["object_id"],
                                              row["valid_at"]) not in still_open
        subjects[row["subject_id"]] = max(subjects.get(row["subject_id"], 0), int(gone))
    if not subjects:
        return
    db.conn.executemany(
        """INSERT INTO summary_gates (subject_id, dirty, invalidated, passes) VALUES (?, 1, ?, 0)
           ON CONFLICT (subject_id) DO UPDATE SET dirty = 1,
           invalidated = CASE WHEN excluded.invalidated > summary_gates.invalidated THEN excluded.invalidated
                              ELSE summary_gates.invalidated END""",
        sorted(subjects.items()))
    expire_current(db, list(subjects), at)


def expire_current(db: Database, subject_ids: list[int], at: str) -> None:
    for chunk, marks in in_chunks(subject_ids):
        db.execute(f"UPDATE summaries SET expired_at = ? WHERE expired_at IS NULL AND subject_id IN ({marks})",
                   [at, *chunk])


def forget(db: Database, subject_ids: list[int]) -> None:
    """A purge: every summary version of these subjects goes (each was written from their
    facts, whose text the purge erases), and the gate owes them a new one."""
    for chunk, marks in in_chunks(subject_ids):
        db.execute(f"DELETE FROM summaries WHERE subject_id IN ({marks})", chunk)
    db.conn.executemany(
        """INSERT INTO summary_gates (subject_id, dirty, invalidated, passes) VALUES (?, 1, 1, 0)
           ON CONFLICT (subject_id) DO UPDATE SET dirty = 1, invalidated = 1""", [(s,) for s in subject_ids])


class Gate(NamedTuple):
    """One entity's gate state (schema 0015, ``summary_gates``)."""

    subject_id: int
    invalidated: bool
    passes: int
    first_changed_at: str | None
    last_changed_at: str | None
    refreshed_at: str | None
    owed: str | None


def anything_to_decide(db: Queryable, *, owed_too: bool) -> bool:
    """Whether a pass has work: with a model (``owed_too``), an entity whose facts changed
    since the last pass or whose refresh is owed; without one, a changed entity in a store
    that holds summaries at all (only one found again could change anything; a store that
    never had a model keeps its changes marked, for the first pass that has one)."""
    if owed_too:
        condition = "EXISTS (SELECT 1 FROM summary_gates WHERE dirty = 1 OR passes > 0)"
    else:
        condition = "EXISTS (SELECT 1 FROM summary_gates WHERE dirty = 1) AND EXISTS (SELECT 1 FROM summaries)"
    return db.execute(f"SELECT {condition}").fetchone()[0]


def take_changes(db: Database, at: str) -> None:
    """A gate pass at ``at`` takes in the entities whose facts changed since the last one."""
    db.execute("""UPDATE summary_gates SET dirty = 0, passes = passes + 1,
                  first_changed_at = coalesce(first_changed_at, ?), last_changed_at = ? WHERE dirty = 1""", [at, at])


def pending(db: Queryable, *, changed_at: str | None = None, with_versions: bool = False) -> list[Gate]:
    """The entities whose summary is not the one for their facts yet, in id order; only
    those whose facts changed at ``changed_at``, and (``with_versions``) those that ever
    had a summary, when asked."""
    conditions = ["passes > 0"]
    params: list = []
    if changed_at is not None:
        conditions.append("last_changed_at = ?")
        params.append(changed_at)
    if with_versions:
        conditions.append("EXISTS (SELECT 1 FROM summaries s WHERE s.subject_id = summary_gates.subject_id)")
    return [Gate(row[0], bool(row[1]), *row[2:]) for row in db.execute(
        f"""SELECT subject_id, invalidated, passes, first_changed_at, last_changed_at, refreshed_at, owed
            FROM summary_gates WHERE {' AND '.join(conditions)} ORDER BY subject_id""", params).fetchall()]


def settled(db: Database, subject_id: int, refreshed_at: str | None) -> None:
    """The entity's summary is the one for its facts (written at ``refreshed_at``, or found
    again: None keeps the time of its last call)."""
    db.execute("""UPDATE summary_gates SET invalidated = 0, passes = 0, first_changed_at = NULL,
                  last_changed_at = NULL, owed = NULL, refreshed_at = coalesce(?, refreshed_at)
                  WHERE subject_id = ?""", [refreshed_at, subject_id])


def owe(db: Database, subject_id: int, reason: str) -> None:
    db.execute("UPDATE summary_gates SET owed = ? WHERE subject_id = ?", [reason, subject_id])


def fact_rows(db: Queryable, subject_id: int, known_at: str | None) -> list[tuple]:
    """The entity's fact versions held at ``known_at``, every valid time, as the hash reads
    them: (predicate key, value, valid_at, invalid_at, end_reason), in that order."""
    held, params = time_window("f", known_at=known_at)
    return db.execute(f"""SELECT f.predicate_key, f.object_id, f.valid_at, f.invalid_at, f.end_reason FROM facts f
                          WHERE f.subject_id = ? AND {held} ORDER BY 1, 2, 3, 4""", [subject_id, *params]).fetchall()


class Stored(NamedTuple):
    text: str
    model: str
    reason: str
    facts_hash: str
    created_at: str


def held(db: Queryable, subject_id: int, known_at: str | None) -> Stored | None:
    """The summary version memctl held at ``known_at`` (None: now)."""
    window, params = time_window("s", known_at=known_at)
    row = db.execute(f"""SELECT s.text, s.model, s.reason, s.facts_hash, s.created_at FROM summaries s
                         WHERE s.subject_id = ? AND {window} ORDER BY s.created_at DESC LIMIT 1""",
                     [subject_id, *params]).fetchone()
    return None if row is None else Stored(*row)


def written_for(db: Queryable, subject_id: int, facts_hash: str) -> Stored | None:
    """The latest summary ever written for this fact set, current or not."""
    row = db.execute("""SELECT text, model, reason, facts_hash, created_at FROM summaries
                        WHERE subject_id = ? AND facts_hash = ? ORDER BY created_at DESC LIMIT 1""",
                     [subject_id, facts_hash]).fetchone()
    return None if row is None else Stored(*row)


def write(db: Database, subject_id: int, facts_hash: str, text: str, model: str, reason: str, at: str) -> None:
    """A new current version of the entity's summary, from ``at`` on."""
    expire_current(db, [subject_id], at)
    db.execute("""INSERT INTO summaries (subject_id, facts_hash, text, model, reason, created_at)
                  VALUES (?, ?, ?, ?, ?, ?)""", [subject_id, facts_hash, text, model, reason, at])


def summary_of(db: Queryable, subject_id: int, name: str, as_of: str, known_at: str | None) -> EntitySummary:
    """What holds about the entity at ``as_of``, as held at ``known_at``: the model's
    summary held then, when one was and its facts say nothing of a time after ``as_of``
    (it was written from all of them); else the offline summary, exact at any time."""
    from memctl.summary import offline_summary

    facts = facts_of_subject_at(db, subject_id, as_of, known_at, latest=SHOWN)
    summary = EntitySummary(entity=name, as_of=as_of, known_at=known_at, summary=offline_summary(name, facts, as_of),
                            fact_ids=[fact.fact_id for fact in facts])
    stored = held(db, subject_id, known_at)
    if stored is not None and not _after(db, subject_id, as_of, known_at):
        summary = summary._replace(summary=stored.text, written_by=stored.model, written_at=stored.created_at)
    return summary


# The facts a summary is built from: of the slots that changed last, this many, and of each
# the latest this many (the value now, the values it replaced that are shown, what ended).
# More would be cut at SUMMARY_CHARS anyway.
SHOWN = (12, 6)


def _after(db: Queryable, subject_id: int, as_of: str, known_at: str | None) -> bool:
    """Whether any fact of the entity held at ``known_at`` begins or ends after ``as_of``."""
    held_then, params = time_window("f", known_at=known_at)
    return db.execute(f"""SELECT 1 FROM facts f WHERE f.subject_id = ? AND {held_then}
                          AND (f.valid_at > ? OR f.invalid_at > ?) LIMIT 1""",
                      [subject_id, *params, as_of, as_of]).fetchone() is not None


def current_summaries(db: Queryable) -> list[tuple[int, str]]:
    """(entity, facts hash) of every current summary: what the invariant tests compare."""
    return db.execute("SELECT subject_id, facts_hash FROM summaries WHERE expired_at IS NULL ORDER BY 1").fetchall()


# --- sessions ------------------------------------------------------------------------------


def session_turns(db: Queryable, session: str) -> list[tuple[str, str, str, str]]:
    """(episode id, content hash, reference time, text) of a session's active turns, in order."""
    from memctl.store.search import SESSION

    return db.execute(f"""SELECT e.id, e.content_hash, e.reference_time, e.content FROM episodes e
                          WHERE {SESSION} = ? AND e.status = 'active' ORDER BY e.reference_time, e.position""",
                      [session]).fetchall()


def turns_hash(turns: Iterable[tuple]) -> str:
    """The set of turns a session summary is written from: each turn's id and content hash."""
    import hashlib

    return hashlib.sha256("\n".join(sorted(f"{turn[0]}:{turn[1]}" for turn in turns)).encode()).hexdigest()[:32]


def session_summary(db: Queryable, session: str, episodes_hash: str) -> tuple[str, str] | None:
    """(text, model) of the summary written for the session holding these turns, if one was."""
    row = db.execute("SELECT text, model FROM session_summaries WHERE session = ? AND episodes_hash = ?",
                     [session, episodes_hash]).fetchone()
    return None if row is None else (row[0], row[1])


def write_session_summary(db: Database, session: str, episodes_hash: str, text: str, model: str,
                          episode_ids: list[str], at: str) -> None:
    import json

    db.execute("""INSERT INTO session_summaries (session, episodes_hash, text, model, episode_ids, created_at)
                  VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (session, episodes_hash) DO UPDATE SET text = excluded.text,
                  model = excluded.model, episode_ids = excluded.episode_ids, created_at = excluded.created_at""",
               [session, episodes_hash, text, model, json.dumps(episode_ids), at])


def sessions_of_operation(db: Queryable, operation_id: str) -> list[str]:
    """The conversations an ingest's (or an added memory's) episodes are part of."""
    from memctl.store.search import IN_CONVERSATIONS, SESSION

    return [row[0] for row in db.execute(f"""SELECT DISTINCT {SESSION} FROM episodes e
                                             WHERE e.operation_id = ? AND {IN_CONVERSATIONS}""", [operation_id])]


def all_sessions(db: Queryable) -> list[str]:
    """Every conversation memctl holds."""
    from memctl.store.search import IN_CONVERSATIONS, SESSION

    return [row[0] for row in db.execute(f"""SELECT DISTINCT {SESSION} FROM episodes e
                                             WHERE e.status = 'active' AND {IN_CONVERSATIONS}""")]


def forget_sessions(db: Database) -> None:
    """A purge (``temp.purged_episodes``): the session summaries written from any purged turn go."""
    db.execute(f"""DELETE FROM session_summaries WHERE EXISTS (
                      SELECT 1 FROM {json_texts(db, "session_summaries.episode_ids")}
                      WHERE value IN (SELECT id FROM temp.purged_episodes))""")
