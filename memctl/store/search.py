"""The store's side of recall: each ranker's query, and the results it names, read whole.

Every ranker applies the time window inside its own query, before its limit, so a limit
never cuts away what was true (or said) in the window:

- facts: held at ``known_at`` (or now), and valid at ``as_of`` (``valid_at <= T <
  invalid_at``), or with ``past`` also ended by then, or, with ``since``/``until``, valid
  at some time in that window, or at any time with ``history``;
- episodes: held at ``known_at`` (``episode_spans``; without K, active now), said at or
  before ``as_of`` (reference time), and inside ``since``/``until``.
"""

from __future__ import annotations

import math
import sqlite3
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import NamedTuple, TypeVar, cast

from memctl.results import REPLY_PREFIX, USER_PREFIX, EpisodeHit, Fact, SessionListing
from memctl.store import Queryable, in_chunks, on_postgres, text_search
from memctl.store.episode_index import fact_texts
from memctl.store.reads import facts_where, time_window, with_episodes

T = TypeVar("T")


class Window(NamedTuple):
    """Where on both time axes recall looks."""

    as_of: str  # facts valid then, episodes said by then
    known_at: str | None = None  # what memctl held then; None: now
    since: str | None = None  # episodes said from then on (reference time), facts valid in the window
    until: str | None = None  # ...and before then
    history: bool = False  # facts at any valid time, episodes said at any time
    as_of_given: bool = True  # with since/until, whether facts must also be valid at as_of
    past: bool = False  # facts that ended by as_of too (a question asked with no time: recall's default)
    # Whether episodes must be said since ``since`` too, or only before ``until``: a
    # question about what held then ("what did billing use in February 2024") is
    # answered by what was said before then as well.
    said_since: bool = True


def fact_window(alias: str, window: Window) -> tuple[str, list]:
    valid_at = None if window.history or window.past or ((window.since or window.until) and not window.as_of_given) \
        else window.as_of
    condition, params = time_window(alias, known_at=window.known_at, as_of=valid_at)
    if not window.history and (window.past or valid_at is None):
        condition += f" AND {alias}.valid_at <= ?"  # begun by the asking time: what was true, or is
        params.append(window.as_of)
    if not window.history and window.until is not None:
        condition += f" AND {alias}.valid_at < ?"
        params.append(window.until)
    if not window.history and window.since is not None:
        condition += f" AND ({alias}.invalid_at IS NULL OR {alias}.invalid_at > ?)"
        params.append(window.since)
    return condition, params


def episode_window(alias: str, window: Window) -> tuple[str, list]:
    if window.known_at is None:
        condition, params = f"{alias}.status = 'active'", []
    else:
        condition = (f"EXISTS (SELECT 1 FROM episode_spans s WHERE s.episode_id = {alias}.id AND s.held_from <= ? "
                     f"AND (s.held_until IS NULL OR ? < s.held_until))")
        params = [window.known_at, window.known_at]
    if not window.history:
        condition += f" AND {alias}.reference_time <= ?"
        params.append(window.as_of)
    if window.since is not None and window.said_since:
        condition += f" AND {alias}.reference_time >= ?"
        params.append(window.since)
    if window.until is not None:
        condition += f" AND {alias}.reference_time < ?"
        params.append(window.until)
    return condition, params


# --- rankers -------------------------------------------------------------------------


def facts_matching(db: Queryable, parts: list[str], window: Window, limit: int) -> list[int]:
    """Facts whose text or names match the FTS5 strings, best BM25 first.

    A fact is one short sentence: one word of a longer question in it ("moved", "now")
    is chance, not an answer. With two or more terms, a fact must match two of them.
    That is judged on the ``limit`` best in the window, not before the limit as the
    window is: judging it deeper meant reading thousands of facts for a question whose
    words are common (150 ms at 100k facts), and recall asks each ranker for five times
    the results it shows.
    """
    condition, params = fact_window("f", window)
    # Many fact versions fall outside a window (superseded, ended, expired): start deep.
    found = _best_in_window(db, "facts_fts", parts, limit, lambda ranked, ranked_params: db.execute(
        f"""SELECT f.id FROM ({ranked}) t CROSS JOIN facts f ON f.id = t.rowid
            WHERE {condition} ORDER BY t.rank, f.valid_at DESC, f.id LIMIT ?""", [*ranked_params, *params, limit]),
        first=16, alone=False)
    if len(parts) < 2 or not found:
        return found
    texts: dict[int, str] = {}
    table, key = fact_texts(db)
    for chunk, marks in in_chunks(found):
        texts.update((row[0], " ".join(row[1:])) for row in db.execute(
            f"SELECT {key}, fact, subject, predicate, object FROM {table} WHERE {key} IN ({marks})", chunk))
    matched: dict[int, int] = {}
    for scores in scratch_bm25(texts, parts):
        for fact_id in scores:
            matched[fact_id] = matched.get(fact_id, 0) + 1
    return [fact_id for fact_id in found if matched.get(fact_id, 0) >= 2]


def episodes_matching(db: Queryable, parts: list[str], window: Window, limit: int) -> list[str]:
    """Episodes whose text matches any of the FTS5 strings, best BM25 first."""
    condition, params = episode_window("e", window)
    return _remembered(("episodes_matching", tuple(parts), window, limit), lambda: _best_in_window(
        db, "episodes_fts", parts, limit, lambda ranked, ranked_params: db.execute(
            f"""SELECT e.id FROM ({ranked}) t CROSS JOIN episodes e ON e.text_id = t.rowid
                WHERE {condition} ORDER BY t.rank, e.reference_time, e.id LIMIT ?""",
            [*ranked_params, *params, limit]), first=4, alone=True))


# Two rankers of one recall ask the turn index the same things (how many turns hold a
# term; the best turns): inside ``one_question`` the answers are kept, per thread, until
# it ends; the store cannot change meanwhile (a recall reads in one transaction).
_remembered_answers = threading.local()


@contextmanager
def one_question() -> Iterator[None]:
    _remembered_answers.kept = {}
    try:
        yield
    finally:
        _remembered_answers.kept = None


def _remembered(question: tuple, answer: Callable[[], T]) -> T:
    kept: dict | None = getattr(_remembered_answers, "kept", None)
    if kept is None:
        return answer()
    if question not in kept:
        kept[question] = answer()
    return kept[question]


# BM25 over sessions: the rarest terms of a question are counted, session by session,
# while their matches in all stay under this many (a term in most turns tells sessions
# apart no better than it tells turns apart); the rarest one always. Each match is a row
# read, so this bounds a recall's cost as RANK_BUDGET does for turns.
SESSION_BUDGET = 4000
# BM25's usual constants, for sessions as for FTS5's texts.
K1, B = 1.2, 0.75


# The SQL of an episode ``e``'s session: its source, and in a source of many conversations
# (an export) the conversation (schema 0014 indexes this expression, spelt alike).
SESSION = "(CASE WHEN e.session IS NULL THEN e.source ELSE e.source || '#' || e.session END)"


class SessionMatch(NamedTuple):
    session: str
    score: float  # BM25 of the session; higher is better
    best: str  # its episode in the window that holds the most of the question's words


def sessions_matching(db: Queryable, parts: list[str], window: Window, limit: int) -> list[SessionMatch]:
    """The sessions (``SESSION``: a session file, a conversation) whose turns match the FTS5
    strings, by BM25 over whole sessions, best first, each with its best episode; none
    when fewer than two match, as one session tells nothing apart (and counting the
    store's sessions for BM25 would cost more than the rest).

    A session's words are its turns' words, each term counted once per turn that holds
    it (a turn is the unit of a session's length too): the turn index answers that per
    term without a second index of whole sessions, which every turn added to a session
    would have to rewrite. Only turns in the window count, so a session found only
    through a turn that was undone (or said after ``as_of``) gives nothing.
    """
    if _one_session(db):  # every turn of the store is of one session (one facts file, say)
        return []
    counts = {part: _count(db, "episodes_fts", part) for part in parts}
    counted: list[str] = []
    total = 0
    for part in sorted((part for part in parts if counts[part]), key=counts.__getitem__):
        if counted and total + counts[part] > SESSION_BUDGET:
            break
        counted.append(part)
        total += counts[part]
    if not counted:
        return []
    condition, params = episode_window("e", window)
    search = text_search.of(db)
    holding: dict[str, dict[str, set[str]]] = {}  # session -> term -> its episodes that hold it
    for part in counted:
        for episode_id, session in db.execute(
                f"""SELECT e.id, {SESSION} FROM ({search.matching("episodes_fts")}) t
                    CROSS JOIN episodes e ON e.text_id = t.rowid WHERE {condition}""", [search.query(part), *params]):
            holding.setdefault(session, {}).setdefault(part, set()).add(episode_id)
    if len(holding) < 2:
        return []
    sizes = _session_sizes(db, list(holding))
    average = sizes.turns / max(sizes.sessions, 1)
    held_by = {part: sum(part in terms for terms in holding.values()) for part in counted}
    idf = {part: math.log(1 + (sizes.sessions - held_by[part] + 0.5) / (held_by[part] + 0.5)) for part in counted}
    hits = []
    for session, terms in holding.items():
        norm = K1 * (1 - B + B * sizes.turns_of.get(session, 1) / average)
        score = sum(idf[part] * len(ids) * (K1 + 1) / (len(ids) + norm) for part, ids in terms.items())
        # Its turn that holds the most of the question (by the terms' weight), then the earliest id.
        weight: dict[str, float] = {}
        for part, ids in terms.items():
            for episode_id in ids:
                weight[episode_id] = weight.get(episode_id, 0.0) + idf[part]
        hits.append(SessionMatch(session, score, min(weight, key=lambda e: (-weight[e], e))))
    hits.sort(key=lambda hit: (-hit.score, hit.session))
    return hits[:limit]


def _one_session(db: Queryable) -> bool:
    """Whether the store's episodes are of one session at most: read off both ends of the
    sessions' index, where reading the matching turns of a big one cost 25 ms."""
    first, last = db.execute(f"""SELECT (SELECT {SESSION} FROM episodes e ORDER BY {SESSION} LIMIT 1),
                                        (SELECT {SESSION} FROM episodes e ORDER BY {SESSION} DESC LIMIT 1)""").fetchone()
    return first == last


def said_before(db: Queryable, episode_ids: list[str], at: str) -> set[str]:
    """Those of the episodes said before ``at``."""
    found: set[str] = set()
    for chunk, marks in in_chunks(episode_ids):
        found.update(row[0] for row in db.execute(
            f"SELECT id FROM episodes WHERE id IN ({marks}) AND reference_time < ?", [*chunk, at]))
    return found


def sessions_of(db: Queryable, episode_ids: list[str]) -> dict[str, str]:
    """The session (``SESSION``) of each episode."""
    found: dict[str, str] = {}
    for chunk, marks in in_chunks(episode_ids):
        found.update(db.execute(f"SELECT e.id, {SESSION} FROM episodes e WHERE e.id IN ({marks})", chunk).fetchall())
    return found


class SessionSizes(NamedTuple):
    state: tuple  # what the store was when they were counted
    sessions: int  # sessions with an active turn
    turns: int  # active turns in all
    turns_of: dict[str, int]  # active turns of each session counted so far


# Counting sessions reads every turn's source (40 ms at 100k turns): counted once for each
# state of a store, per connection. A reader sees another connection's commit in its
# data_version, the writer its own in total_changes; the last text id tells two stores
# apart that a connection's reused id might mix up.
_sizes: dict[int, SessionSizes] = {}
_sizes_lock = threading.Lock()
MAX_SIZES_KEPT = 64


def _session_sizes(db: Queryable, sessions: list[str]) -> SessionSizes:
    """BM25's collection size and session lengths, with the turns of ``sessions`` counted."""
    changes = "pg_current_snapshot()::text, 0" if on_postgres(db) else \
        "(SELECT data_version FROM pragma_data_version), total_changes()"
    state = db.execute(f"SELECT {changes}, (SELECT max(text_id) FROM episodes)").fetchone()
    with _sizes_lock:
        known = _sizes.get(id(db))
    if known is None or known.state != tuple(state):
        sessions_count, turns = db.execute(
            f"SELECT count(DISTINCT {SESSION}), count(*) FROM episodes e WHERE e.status = 'active'").fetchone()
        known = SessionSizes(tuple(state), sessions_count, turns, {})
    missing = [session for session in sessions if session not in known.turns_of]
    for chunk, marks in in_chunks(missing):
        known.turns_of.update(db.execute(f"SELECT {SESSION}, count(*) FROM episodes e WHERE {SESSION} IN ({marks}) "
                                         f"AND e.status = 'active' GROUP BY {SESSION}", chunk).fetchall())
    with _sizes_lock:
        if len(_sizes) >= MAX_SIZES_KEPT and id(db) not in _sizes:  # connections come and go (tests, threads)
            _sizes.clear()
        _sizes[id(db)] = known
    return known


# BM25 scores every text a term matches: above this many matches in all, the most common
# terms count only in pairs (about 0.6 ms a thousand, so a few ms for a question).
RANK_BUDGET = 5000
# Common terms paired with each other: at most this many of them (the pairs grow as n²).
MAX_COMMON_PAIRED = 8


def _best_in_window(db: Queryable, table: str, parts: list[str], limit: int, in_window, *, first: int,
                    alone: bool) -> list:
    """The best ``limit`` rows of ``table`` for ``parts`` that are in the window.

    BM25 ranks in FTS5 alone first, without the joins the window needs; the best
    candidates are then joined and filtered, more of them each time until ``limit`` are
    in the window or every match was looked at. So the window still comes before the
    limit, and a question matching tens of thousands of texts is not joined row by row.
    """
    match = _selective_match(db, table, parts, alone=alone)
    if match is None:
        return []
    matches = None
    # ``first`` times ``limit`` candidates at first: every further pass ranks every match
    # again, so a table whose rows often fall outside the window starts deeper.
    candidates = first * limit
    search = text_search.of(db)
    while True:
        found = [row[0] for row in in_window(search.ranked(table), [search.query(match), candidates])]
        if len(found) >= limit:
            return found
        if matches is None:  # counted only when the window left too few
            matches = _count(db, table, match)
        if candidates >= matches:
            return found
        candidates *= 8


def _selective_match(db: Queryable, table: str, parts: list[str], *, alone: bool) -> str | None:
    """The FTS5 expression that ranks ``parts``: any of them while they match at most
    RANK_BUDGET texts in all; above that, the most common terms count only in pairs, and
    if the pairs alone still match more, only the rarer terms count.

    A text holding one common word of a longer question ("database" of "which database
    does billing use") is rarely what was asked, and BM25 scoring the tens of thousands
    that do was most of a recall's time at 100k episodes. The texts kept still rank by
    every term of the expression they hold. ``alone``: whether a text holding just one
    term of several may answer (an episode) or not (a fact must hold two): when the
    rarer terms and the pairs match nothing, episodes fall back to every match, and for
    facts there is nothing to find (None).
    """
    everything = " OR ".join(parts)
    if len(parts) < 2:
        return everything
    counts = {part: _count(db, table, part) for part in parts}
    if sum(counts.values()) <= RANK_BUDGET:
        return everything
    rare = sorted(parts, key=counts.__getitem__)
    common: list[str] = []
    while len(rare) > 1 and sum(counts[part] for part in rare) > RANK_BUDGET:
        common.insert(0, rare.pop())
    paired = common[:MAX_COMMON_PAIRED]
    narrowed = " OR ".join(rare + [f"({a} AND {b})" for i, a in enumerate(paired) for b in paired[i + 1:]])
    matches = _count(db, table, narrowed)
    if not matches:
        return everything if alone else None
    if matches > RANK_BUDGET and any(counts[part] for part in rare):
        return " OR ".join(rare)  # the common terms go together too often to tell texts apart
    return narrowed


def _count(db: Queryable, table: str, match: str) -> int:
    search = text_search.of(db)
    return _remembered(("count", table, match), lambda: db.execute(
        search.count(table), [search.query(match)]).fetchone()[0])


def entities_named(db: Queryable, name_keys: list[str]) -> list[int]:
    found: list[int] = []
    for chunk, marks in in_chunks(name_keys):
        found += [row[0] for row in db.execute(f"SELECT id FROM entities WHERE name_key IN ({marks})", chunk)]
    return found


def facts_about(db: Queryable, entity_ids: list[int], match: str, window: Window, limit: int) -> list[int]:
    """Facts about the entities (as subject or object), those naming more of them first,
    then those whose words the question's match (by BM25), then the latest; then facts
    about their one-hop neighbours, the entities at the other end of those facts.

    The entities are few (named in a question, or at the ends of ``limit`` facts), so
    they go in as parameters: a reader's connection may not write, not even a temp table.
    """
    found = _facts_of(db, entity_ids[:MAX_ENTITIES], match, window, limit, as_object=True)
    neighbours = sorted({end for _, subject, obj in found for end in (subject, obj)} - set(entity_ids))
    seen = {fact_id for fact_id, _, _ in found}
    more = [fact_id for fact_id, _, _ in _facts_of(db, neighbours[:MAX_ENTITIES], match, window, limit,
                                                  as_object=False) if fact_id not in seen] if len(found) < limit else []
    return ([fact_id for fact_id, _, _ in found] + more)[:limit]


MAX_ENTITIES = 200


def facts_at_either_end(db: Queryable, fact_ids: list[int], entity_ids: list[int]) -> dict[int, tuple[int, int]]:
    """Those of the facts with one of the entities as subject or object: their (subject
    id, object id)."""
    if not fact_ids or not entity_ids:
        return {}
    fact_marks, entity_marks = ", ".join("?" * len(fact_ids)), ", ".join("?" * len(entity_ids))
    return {row[0]: (row[1], row[2]) for row in db.execute(
        f"SELECT id, subject_id, object_id FROM facts WHERE id IN ({fact_marks}) AND (subject_id IN ({entity_marks}) "
        f"OR object_id IN ({entity_marks}))", [*fact_ids, *entity_ids, *entity_ids])}


def facts_beside(db: Queryable, fact_id: int, entity_ids: list[int], direction: str, window: Window,
                 limit: int) -> list[int]:
    """The facts next to this one in its timeline on the ``direction`` side ("before":
    begun earlier, latest first; "after": begun later, earliest first), up to ``limit``.
    Where one of the entities is its value (the object), the timeline is the subject's
    other values of the predicate ("billing used MySQL before Postgres"); where one is
    its holder (the subject), the predicate's other holders of the value ("Dana led
    billing before Sam"). Only what the window lets recall see."""
    condition, params = fact_window("n", window)
    later, order = (">", "ASC") if direction == "after" else ("<", "DESC")
    marks = ", ".join("?" * len(entity_ids))
    found: list[tuple[str, int]] = []
    for same, other in (("subject_id", "object_id"), ("object_id", "subject_id")):
        found += db.execute(
            f"""SELECT n.valid_at, n.id FROM facts a JOIN facts n ON n.{same} = a.{same}
                AND n.predicate_key = a.predicate_key AND n.{other} != a.{other}
                WHERE a.id = ? AND a.{other} IN ({marks}) AND n.valid_at {later} a.valid_at AND {condition}
                ORDER BY n.valid_at {order}, n.id LIMIT ?""", [fact_id, *entity_ids, *params, limit]).fetchall()
    return [fact_id for _, fact_id in sorted(found, reverse=direction != "after")[:limit]]


def _facts_of(db: Queryable, entity_ids: list[int], match: str, window: Window, limit: int, *,
              as_object: bool) -> list[tuple[int, int, int]]:
    """(fact id, subject id, object id) of facts whose subject (or object) is one of the entities."""
    if not entity_ids:
        return []
    condition, params = fact_window("f", window)
    marks = ", ".join("?" * len(entity_ids))
    about = f"(f.subject_id IN ({marks}) OR f.object_id IN ({marks}))" if as_object else f"f.subject_id IN ({marks})"
    rows = db.execute(
        f"""SELECT f.id, f.subject_id, f.object_id, CASE WHEN f.subject_id IN ({marks}) THEN 1 ELSE 0 END
                   + CASE WHEN f.object_id IN ({marks}) THEN 1 ELSE 0 END,
                   f.fact || ' ' || f.predicate
            FROM facts f WHERE {about} AND {condition}
            ORDER BY 4 DESC, f.valid_at DESC, f.id LIMIT ?""",
        [*entity_ids, *entity_ids, *entity_ids, *(entity_ids if as_object else []), *params, 4 * limit]).fetchall()
    (scores,) = scratch_bm25({row[0]: row[4] for row in rows}, [match])
    # Stable: the latest first among facts that name as many entities and match as well.
    rows.sort(key=lambda row: (-row[3], row[0] not in scores, scores.get(row[0], 0.0)))
    return [(row[0], row[1], row[2]) for row in rows[:limit]]


_scratch = threading.local()


def scratch_bm25(texts: dict[int, str], matches: list[str]) -> list[dict[int, float]]:
    """For each FTS5 expression, the BM25 (lower is better) of the few ``texts`` it finds,
    by id, in a scratch FTS5 table of this thread with the index's tokenizer: the words
    match exactly as in the index. Asking the index itself about a few hundred given
    rows costs more: FTS5 evaluates an OR of common words once per row (250 ms for a
    thousand)."""
    if not texts:
        return [{} for _ in matches]
    conn = getattr(_scratch, "conn", None)
    if conn is None:
        conn = _scratch.conn = sqlite3.connect(":memory:")
        conn.execute("CREATE VIRTUAL TABLE texts USING fts5(text, tokenize = 'porter unicode61 remove_diacritics 2')")
    conn.execute("DELETE FROM texts")
    conn.executemany("INSERT INTO texts (rowid, text) VALUES (?, ?)", texts.items())
    return [dict(conn.execute("SELECT rowid, bm25(texts) FROM texts WHERE texts MATCH ?", [match]).fetchall())
            for match in matches]


# A turn whose user part is shorter than this says little of what its session was about
# ("hi", "thanks", "go on"): a session is listed by a later one where it has one.
SLIGHT_TURN_CHARS = 24
_SLIGHT_TURN = ("(substr(e.content, 1, ?) = ? AND (length(e.content) < ? "
                "OR instr(e.content, ?) BETWEEN 1 AND ?))")
_SLIGHT_TURN_PARAMS = [len(USER_PREFIX), USER_PREFIX, len(USER_PREFIX) + SLIGHT_TURN_CHARS, "\n\n" + REPLY_PREFIX,
                       len(USER_PREFIX) + SLIGHT_TURN_CHARS]


def what_happened(db: Queryable, window: Window, kinds: set[str], limit: int) -> list[tuple[str, str, int | str]]:
    """What changed and what was said in ``since``/``until``, latest first, as memctl held
    it at ``known_at``: (time, kind, id) of up to ``limit`` of them.

    - facts that began or ended in the window, at the latest of those instants in it;
    - each session (a source, or a conversation of an export) that said something in the window, once, by its first
      episode there that asks for something (usually what it was asked to do; a greeting
      such as "hi" says nothing of it), at its last one there.
    """
    found: list[tuple[str, str, int | str]] = []
    if "fact" in kinds:
        held, params = time_window("f", known_at=window.known_at)
        # Nothing after the asking time: "what changed this year", asked as of May, ends in May.
        bounds = [bound for bound in (window.since, window.until) if bound is not None] + [window.as_of]

        def inside(column: str) -> str:
            return " AND ".join([f"{column} >= ?"] * (window.since is not None)
                                + [f"{column} < ?"] * (window.until is not None) + [f"{column} <= ?"])

        found += [(at, "fact", fact_id) for fact_id, at in db.execute(
            f"""SELECT f.id, CASE WHEN {inside('f.invalid_at')} THEN f.invalid_at ELSE f.valid_at END AS at
                FROM facts f WHERE {held} AND ({inside('f.valid_at')} OR {inside('f.invalid_at')})
                ORDER BY at DESC, f.id LIMIT ?""", [*bounds, *params, *bounds, *bounds, limit])]
    if "episode" in kinds:
        condition, params = episode_window("e", window)
        found += [(latest, "episode", episode_id) for episode_id, latest in db.execute(
            f"""SELECT id, latest FROM (
                    SELECT e.id, max(e.reference_time) OVER (PARTITION BY {SESSION}) AS latest,
                           row_number() OVER (PARTITION BY {SESSION} ORDER BY {_SLIGHT_TURN}, e.reference_time,
                                                                             e.position) AS n
                    FROM episodes e WHERE {condition})
                WHERE n = 1 ORDER BY latest DESC, id LIMIT ?""", [*_SLIGHT_TURN_PARAMS, *params, limit])]
    return sorted(found, key=lambda item: (item[0], item[1]), reverse=True)[:limit]


TITLE_CHARS = 100


def sessions_listed(db: Queryable, window: Window, limit: int | None, keys: list[str] | None = None
                    ) -> list[SessionListing]:
    """The sessions (of ``keys``, when given) that said something in the window, the
    latest first: each with its span, its episodes there, and as its title the first line
    of its first turn there that asks for something (``_SLIGHT_TURN``: not a greeting).
    Its sentence (a model's) is given when the window holds all of its turns held now: it
    was written from those."""
    if keys is not None and not keys:
        return []
    condition, params = episode_window("e", window)
    if keys is not None:
        condition += f" AND {SESSION} IN ({', '.join('?' * len(keys))})"
        params += keys
    rows = db.execute(
        f"""SELECT session, source, conversation, format, first_at, last_at, n, id FROM (
                SELECT {SESSION} AS session, e.source, e.session AS conversation, e.format, e.id,
                       min(e.reference_time) OVER whole AS first_at, max(e.reference_time) OVER whole AS last_at,
                       count(*) OVER whole AS n,
                       row_number() OVER (PARTITION BY {SESSION} ORDER BY {_SLIGHT_TURN}, e.reference_time,
                                                                        e.position) AS place
                FROM episodes e WHERE {condition}
                WINDOW whole AS (PARTITION BY {SESSION}))
            WHERE place = 1 ORDER BY last_at DESC, session {"LIMIT ?" if limit else ""}""",
        [*_SLIGHT_TURN_PARAMS, *params, *([limit] if limit else [])]).fetchall()
    titles: dict[str, str] = {}
    for chunk, marks in in_chunks([row[7] for row in rows]):
        titles.update((episode_id, title_of(content)) for episode_id, content in db.execute(
            f"SELECT id, content FROM episodes WHERE id IN ({marks})", chunk))
    from memctl.store.summaries import session_summary, session_turns, turns_hash

    listed = []
    for session, source, conversation, format, first_at, last_at, count, title_id in rows:
        turns = session_turns(db, session) if format in CONVERSATIONS else []
        written = session_summary(db, session, turns_hash(turns)) if turns and len(turns) == count else None
        listed.append(SessionListing(
            session=session, source=source, conversation=conversation, format=format, title=titles.get(title_id, ""),
            first_at=first_at, last_at=last_at, episodes=count, participants=list(PARTICIPANTS.get(format, ("user",))),
            summary=written[0] if written else None, summary_by=written[1] if written else None))
    return listed


def conversations_of(db: Queryable, episode_ids: list[str]) -> dict[str, str]:
    """Of these episodes, those of a conversation (``CONVERSATIONS``): episode id → its session."""
    found: dict[str, str] = {}
    for chunk, marks in in_chunks(episode_ids):
        found.update(db.execute(f"SELECT e.id, {SESSION} FROM episodes e WHERE e.id IN ({marks}) AND {IN_CONVERSATIONS}",
                                chunk).fetchall())
    return found


# Who takes part in a session of each format: the person, and the tool that answered.
PARTICIPANTS = {"claude-code": ("user", "Claude Code"), "codex": ("user", "Codex"), "chatgpt": ("user", "ChatGPT"),
                "claude-ai": ("user", "Claude"), "gemini": ("user", "Gemini CLI"), "aider": ("user", "Aider"),
                "jsonl": ("user", "assistant"), "text": ("author",), "markdown": ("author",),
                "facts": ("source",), "memory": ("agent",)}
# The formats whose sessions are conversations: a person and a tool taking turns. Only
# those get a sentence (memctl.summarize) and come whole in recall; the episodes of a facts
# file, a notes file or the memories an agent added do not make one story.
CONVERSATIONS = tuple(format_ for format_, who in PARTICIPANTS.items() if len(who) == 2)
IN_CONVERSATIONS = "e.format IN (" + ", ".join(f"'{format_}'" for format_ in CONVERSATIONS) + ")"


def title_of(content: str) -> str:
    """The first line of a turn's user part (or of its text), cut at TITLE_CHARS."""
    said = content.removeprefix(USER_PREFIX).split("\n\n" + REPLY_PREFIX, 1)[0].strip()
    line = said.splitlines()[0].strip() if said else ""
    return line if len(line) <= TITLE_CHARS else line[:TITLE_CHARS - 1].rstrip() + "…"


# --- reading what the rankers found ------------------------------------------------------


def words_covered(db: Queryable, parts: list[str], episode_ids: list[str]) -> float:
    """The largest share of ``parts`` (the question's FTS5 strings) that one of the
    episodes holds, as the index's tokenizer reads them; 0 with no episode."""
    if not parts or not episode_ids:
        return 0.0
    texts: dict[int, str] = {}
    for chunk, marks in in_chunks(episode_ids):
        texts.update(db.execute(f"SELECT text_id, content FROM episodes WHERE id IN ({marks})", chunk).fetchall())
    held = scratch_bm25(texts, parts)
    return max(sum(text_id in found for found in held) for text_id in texts) / len(parts)


def facts_by_id(db: Queryable, fact_ids: list[int], window: Window) -> dict[int, Fact]:
    """The facts, with names, status at ``as_of`` and supporting episodes as held at ``known_at``."""
    found: list[Fact] = []
    for chunk, marks in in_chunks(fact_ids):
        found += [fact for fact, _ in facts_where(db, f"f.id IN ({marks})", chunk, order="f.id",
                                                  status_at=window.as_of)]
    return {fact.fact_id: fact for fact in with_episodes(db, found, window.known_at)}


def superseded_statements(db: Queryable, episode_ids: list[str], window: Window) -> dict[str, tuple[list[int], bool]]:
    """Of the episodes that support facts, those whose statements a later value replaced
    by ``as_of``, as memctl held it at ``known_at``: episode id → (the facts that
    replaced them, in time order; whether every fact it supports was replaced). Read
    through each episode's assertions, which are indexed by episode (the provenance is
    not: 15 ms a recall at 100k facts)."""
    held, params = time_window("f", known_at=window.known_at)
    next_held, next_params = time_window("n", known_at=window.known_at)
    found: dict[str, tuple[list[int], bool]] = {}
    for chunk, marks in in_chunks(episode_ids):
        rows = db.execute(
            f"""SELECT p.episode_id, f.id, f.invalid_at <= ? AND f.end_reason = 'superseded',
                       (SELECT n.id FROM facts n WHERE n.subject_id = f.subject_id AND n.predicate_key = f.predicate_key
                               AND n.valid_at = f.invalid_at AND n.object_id != f.object_id AND {next_held}
                        ORDER BY n.id LIMIT 1)
                FROM assertions a CROSS JOIN fact_provenance p ON p.assertion_id = a.id
                CROSS JOIN facts f ON f.id = p.fact_id
                WHERE a.episode_id IN ({marks}) AND f.valid_at <= ? AND {held}
                ORDER BY p.episode_id, f.invalid_at, f.id""",
            [window.as_of, *next_params, *chunk, window.as_of, *params]).fetchall()
        supported: dict[str, list[tuple[bool, int | None]]] = {}
        for episode_id, _, replaced, by in rows:
            supported.setdefault(episode_id, []).append((bool(replaced) and by is not None, by))
        for episode_id, facts in supported.items():
            replacing = list(dict.fromkeys(by for replaced, by in facts if replaced and by is not None))
            if replacing:
                found[episode_id] = (replacing, all(replaced for replaced, _ in facts))
    return found


def fact_timelines(db: Queryable, fact_ids: list[int]) -> dict[int, tuple]:
    """The timeline of each fact: its slot, or for a many-valued slot the slot and its value
    (whose facts do not replace the slot's other values')."""
    found: dict[int, tuple] = {}
    for chunk, marks in in_chunks(fact_ids):
        for fact_id, subject_id, predicate_key, object_id, cardinality in db.execute(
                f"SELECT id, subject_id, predicate_key, object_id, cardinality FROM facts WHERE id IN ({marks})", chunk):
            found[fact_id] = (subject_id, predicate_key, object_id if cardinality == "many" else None)
    return found


def episodes_by_id(db: Queryable, episode_ids: list[str], match: str | None, *, full: bool = False) -> dict[str, EpisodeHit]:
    """The episodes, each with a snippet of the lines holding the words ``match`` found in
    it (``memctl.snippets``), or of its opening when they are not in its text (or no
    ``match``), longer for the first few (``episode_ids`` best first); with ``full``, its
    whole text too."""
    from memctl.snippets import HIT_END, HIT_START, room_at, snippet

    texts: dict[str, str] = {}
    found: dict[str, EpisodeHit] = {}
    for chunk, marks in in_chunks(episode_ids):
        for r in db.execute(f"SELECT id, source, position, format, reference_time, content, session FROM episodes "
                            f"WHERE id IN ({marks})", chunk):
            texts[r[0]] = r[5]
            found[r[0]] = EpisodeHit(episode_id=r[0], source=r[1], position=r[2], format=r[3], reference_time=r[4],
                                     snippet="", chars=len(r[5]), text=r[5] if full else None, conversation=r[6])
    marked: dict[str, str] = {}
    search = text_search.of(db)
    for chunk, _ in in_chunks(list(found) if match is not None else []):
        marked.update(db.execute(*search.highlighted(HIT_START, HIT_END, cast(str, match), chunk)).fetchall())
    for episode_id, text in texts.items():
        if HIT_START in text or HIT_END in text:  # a text that holds the marks itself: its opening, unmarked
            marked[episode_id] = text.replace(HIT_START, "").replace(HIT_END, "")
    rank = {episode_id: n for n, episode_id in enumerate(dict.fromkeys(episode_ids))}
    return {episode_id: hit._replace(snippet=snippet(marked.get(episode_id, texts[episode_id]),
                                                     room_at(rank[episode_id])))
            for episode_id, hit in found.items()}


def facts_listed(db: Queryable, window: Window, *, subject_key: str | None, predicate_key: str | None,
                 limit: int | None) -> list[Fact]:
    """Facts in the window, of one subject and one predicate if given, by subject, slot and time."""
    condition, params = fact_window("f", window)
    if subject_key is not None:
        condition += " AND f.subject_id = (SELECT id FROM entities WHERE name_key = ?)"
        params.append(subject_key)
    if predicate_key is not None:
        condition += " AND f.predicate_key = ?"
        params.append(predicate_key)
    ids = [row[0] for row in db.execute(
        f"""SELECT f.id FROM facts f JOIN entities s ON s.id = f.subject_id WHERE {condition}
            ORDER BY s.name_key, f.predicate_key, f.valid_at, f.id {"LIMIT ?" if limit else ""}""",
        params + ([limit] if limit else [])).fetchall()]
    found = facts_by_id(db, ids, window)
    return [found[fact_id] for fact_id in ids]
