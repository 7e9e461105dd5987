"""Recall: rank facts for a question, at a point on each time axis.

Valid time (``as_of``): ``valid_at <= T < invalid_at``. Transaction time
(``known_at``): the versions memctl held at K (``created_at <= K < expired_at``);
without it, the versions held now. Both filters run inside the ranking query, so a
limit never cuts away the facts that were true at T.
"""

from __future__ import annotations

import re

from sqlite_utils import Database

from memctl.errors import BadInput
from memctl.store import in_chunks

_WORDS = re.compile(r"\w+", re.UNICODE)


def match_expression(query: str) -> str:
    """Any word may match; BM25 weighs the rarer ones. Quoted, so no FTS syntax leaks in."""
    words = _WORDS.findall(query.lower())
    if not words:
        raise BadInput(f"query {query!r} has no words to search for")
    return " OR ".join(f'"{word}"' for word in dict.fromkeys(words))


def version_filter(alias: str, known_at: str | None) -> tuple[str, list]:
    if known_at is None:
        return f"{alias}.expired_at IS NULL", []
    return f"{alias}.created_at <= ? AND ({alias}.expired_at IS NULL OR ? < {alias}.expired_at)", [known_at, known_at]


def status(fact: dict, as_of: str) -> str:
    if fact["invalid_at"] is None or as_of < fact["invalid_at"]:
        return "current"
    return "superseded" if fact["end_reason"] == "superseded" else "ended"


def fact_rows(db: Database, where: str, params: list, *, order: str, limit: int | None = None,
              rank: str | None = None) -> list[dict]:
    """Facts with subject and object names; ``where`` may refer to ``f`` and ``facts_fts``."""
    join_fts = "JOIN facts_fts ON facts_fts.rowid = f.id" if "facts_fts" in where else ""
    cursor = db.execute(
        f"""
        SELECT f.id AS fact_id, f.fact, s.name AS subject, f.predicate, o.name AS object, f.predicate_key,
               f.valid_at, f.invalid_at, f.end_reason, f.created_at, f.expired_at, f.cardinality
               {f", {rank} AS rank" if rank else ""}
        FROM facts f {join_fts}
        JOIN entities s ON s.id = f.subject_id
        JOIN entities o ON o.id = f.object_id
        WHERE {where}
        ORDER BY {order}
        {"LIMIT ?" if limit is not None else ""}
        """,
        params + ([limit] if limit is not None else []),
    )
    columns = [d[0] for d in cursor.description]
    return [dict(zip(columns, row)) for row in cursor.fetchall()]


def attach_episodes(db: Database, facts: list[dict], known_at: str | None) -> None:
    """Each fact's supporting episodes, as they stood at ``known_at`` (or now)."""
    if not facts:
        return
    condition, params = version_filter("a", known_at)
    rows = []
    for chunk, marks in in_chunks([f["fact_id"] for f in facts]):
        rows += db.execute(
            f"""
            SELECT p.fact_id, p.episode_id FROM fact_provenance p JOIN assertions a ON a.id = p.assertion_id
            WHERE p.fact_id IN ({marks}) AND {condition}
            ORDER BY p.fact_id, a.valid_at, p.episode_id
            """,
            chunk + params,
        ).fetchall()
    by_fact: dict[int, list[str]] = {}
    for fact_id, episode_id in rows:
        episodes = by_fact.setdefault(fact_id, [])
        if episode_id not in episodes:
            episodes.append(episode_id)
    for fact in facts:
        fact["episodes"] = by_fact.get(fact["fact_id"], [])


def recall(
    db: Database, query: str, *, as_of: str, known_at: str | None, limit: int, history: bool = False
) -> list[dict]:
    """Best-matching facts valid at ``as_of`` (every valid time with ``history``)."""
    if limit < 1:
        raise BadInput(f"--limit must be at least 1, got {limit}")
    version, params = version_filter("f", known_at)
    where = f"facts_fts MATCH ? AND {version}"
    params = [match_expression(query), *params]
    if not history:
        where += " AND f.valid_at <= ? AND (f.invalid_at IS NULL OR ? < f.invalid_at)"
        params += [as_of, as_of]
    results = fact_rows(db, where, params, order="rank, f.valid_at, f.id", limit=limit, rank="bm25(facts_fts)")
    attach_episodes(db, results, known_at)
    for fact in results:
        del fact["predicate_key"]
        fact["status"] = status(fact, as_of)
        # bm25() is lower-is-better; users and fusion expect higher-is-better.
        fact["score"] = round(-fact.pop("rank"), 6)
    return results
