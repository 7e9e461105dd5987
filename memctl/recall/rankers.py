"""The rankers recall fuses: one small protocol, and the ones that need nothing but the store.

A ranker takes the parsed question and the time window and gives its best items, as
``("fact", id)`` or ``("episode", id)``, best first. It applies the window inside its
own query, before its limit. Each says which kinds it can find, so ``--kind`` runs only
the rankers that matter.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol

from memctl.recall.fusion import Key, Weighted
from memctl.recall.query import Query
from memctl.results import Fact
from memctl.store import Queryable, search
from memctl.store.search import Window


class Ranker(Protocol):
    name: str
    kinds: frozenset[str]  # "fact", "episode"
    weight: float  # what its list counts in fusion (``fusion.rrf``)
    by_meaning: bool  # finds by meaning, not words: its weight follows what the words miss (``fusion.meaning_worth``)

    def rank(self, db: Queryable, query: Query, window: Window, limit: int) -> Sequence[Key]: ...


class FactText:
    """BM25 over each fact's sentence and the names of its subject, predicate and object."""

    name = "fact_text"
    kinds = frozenset({"fact"})
    weight = 1.0
    by_meaning = False

    def rank(self, db: Queryable, query: Query, window: Window, limit: int) -> Sequence[Key]:
        return [("fact", fact_id) for fact_id in search.facts_matching(db, query.parts(), window, limit)]


class EpisodeText:
    """BM25 over what was said: the stored (redacted) text of every episode."""

    name = "episode_text"
    kinds = frozenset({"episode"})
    weight = 1.0
    by_meaning = False

    def rank(self, db: Queryable, query: Query, window: Window, limit: int) -> Sequence[Key]:
        return [("episode", episode_id) for episode_id in search.episodes_matching(db, query.parts(), window, limit)]


class SessionText:
    """BM25 over whole sessions (a session file, a conversation), each found session
    offering its best turn for the question (by BM25 over turns, or the one that holds
    the most of it): a question answered by a session as a whole, where no single turn
    holds enough of its words, is found as a plain BM25 over sessions finds it.

    Each turn comes with its session's strength (``Weighted``): its BM25 over the best
    session's, cubed. In RRF every list's second item counts as much as the others'
    second, but a session scoring half the best one's is rarely the answer: at full
    credit, the best turns of the other sessions of a long history pushed the turns that
    answered a question about one session out of the top ten (real logs' recall@10 0.97
    to 0.70); cubed, they stay, and a history of short sessions still gains. At half a
    turn ranker's weight: at full weight, sessions that talk about a thing at length
    outranked the one turn that stated it (the generated set's recall@10 0.85 → 0.82,
    MRR 0.86 → 0.77); at half, 0.85 and 0.81 (docs/recall.md).
    """

    name = "session_text"
    kinds = frozenset({"episode"})
    weight = 0.5
    by_meaning = False
    STRENGTH_POWER = 3

    def rank(self, db: Queryable, query: Query, window: Window, limit: int) -> Sequence[Key]:
        parts = query.parts()
        found = search.sessions_matching(db, parts, window, limit)
        if not found:  # fewer than two sessions tell nothing apart: the turn ranker's best is theirs
            return []
        # Each session's best turn by BM25, of the best turns of all; else the one that holds the most.
        turns = search.episodes_matching(db, parts, window, limit)
        session_of = search.sessions_of(db, turns)
        best_turns = {session_of[turn]: turn for turn in reversed(turns)}
        ranking = Weighted()
        for hit in found:
            key = ("episode", best_turns.get(hit.session, hit.best))
            ranking.append(key)
            ranking.strength[key] = (hit.score / found[0].score) ** self.STRENGTH_POWER
        return ranking


class EntityGraph:
    """Facts about the entities the question names, then about their one-hop neighbours."""

    name = "entity_graph"
    kinds = frozenset({"fact"})
    weight = 1.0
    by_meaning = False

    def rank(self, db: Queryable, query: Query, window: Window, limit: int) -> Sequence[Key]:
        named = search.entities_named(db, query.name_keys())
        return [("fact", fact_id) for fact_id in search.facts_about(db, named, query.match(), window, limit)]


DEFAULT_RANKERS: tuple[Ranker, ...] = (FactText(), EpisodeText(), SessionText(), EntityGraph())


def of_the_kind_asked(query: Query, facts: Mapping[int, Fact]) -> list[Key]:
    """Of the facts the rankers found, those of the kind the question asks for ("which
    database does billing use": facts that say "database") that match the rest of it too,
    best BM25 first: one more list for fusion. BM25 alone weighs "database" as any other
    word, and "Billing reports errors to Sentry", which matches "billing use", answered
    as well as the database billing moved to. It reorders what was found rather than
    searching the index again: a question's kind is a common word ("database" is in a
    tenth of the facts), and ranking all of them cost a recall 2 ms at 100k facts."""
    match = query.kind_match()
    if match is None or not facts:
        return []
    (scores,) = search.scratch_bm25(
        {fact_id: f"{fact.fact} {fact.subject} {fact.predicate} {fact.object}" for fact_id, fact in facts.items()},
        [match])
    return [("fact", fact_id) for fact_id in sorted(scores, key=lambda fact_id: (scores[fact_id], fact_id))]
