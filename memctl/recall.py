"""Recall: rank facts for a question, at a point on each time axis.

Valid time (``as_of``): ``valid_at <= T < invalid_at``. Transaction time
(``known_at``): the versions memctl held at K (``created_at <= K < expired_at``);
without it, the versions held now. Both filters run inside the ranking query, so a
limit never cuts away the facts that were true at T.
"""

from __future__ import annotations

import re

from sqlite_utils import Database

from memctl import times
from memctl.errors import BadInput
from memctl.results import RecallResult
from memctl.store import reads

_WORDS = re.compile(r"\w+", re.UNICODE)


def match_expression(query: str) -> str:
    """Any word may match; BM25 weighs the rarer ones. Quoted, so no FTS syntax leaks in."""
    words = _WORDS.findall(query.lower())
    if not words:
        raise BadInput(f"query {query!r} has no words to search for")
    return " OR ".join(f'"{word}"' for word in dict.fromkeys(words))


def recall(db: Database, query: str, *, now: str, as_of: str | None = None, known_at: str | None = None,
           limit: int = 10, history: bool = False) -> RecallResult:
    """Best-matching facts valid at ``as_of`` (every valid time with ``history``).

    "What memctl believed at K" defaults to what it would have answered then: without
    ``as_of``, facts are taken as of ``known_at``, or else ``now``.
    """
    if limit < 1:
        raise BadInput(f"must be at least 1, got {limit}", parameter="limit")
    as_of, known_at = times.instant_argument(as_of, what="as_of"), times.instant_argument(known_at, what="known_at")
    effective_as_of = as_of or known_at or now
    results = reads.search_facts(db, match_expression(query), as_of=effective_as_of, known_at=known_at,
                                 history=history, limit=limit)
    return RecallResult(query=query, as_of=effective_as_of, known_at=known_at, results=results)
