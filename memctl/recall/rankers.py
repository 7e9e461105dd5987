"""The rankers recall fuses: one small protocol, and the ones that need nothing but the store.

A ranker takes the parsed question and the time window and gives its best items, as
``("fact", id)`` or ``("episode", id)``, best first. It applies the window inside its
own query, before its limit. Each says which kinds it can find, so ``--kind`` runs only
the rankers that matter.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol

from memctl.recall.fusion import Key
from memctl.recall.query import Query
from memctl.results import Fact
from memctl.store import Queryable, search
from memctl.store.search import Window


class Ranker(Protocol):
    name: str
    kinds: frozenset[str]  # "fact", "episode"

    def rank(self, db: Queryable, query: Query, window: Window, limit: int) -> Sequence[Key]: ...


class FactText:
    """BM25 over each fact's sentence and the names of its subject, predicate and object."""

    name = "fact_text"
    kinds = frozenset({"fact"})

    def rank(self, db: Queryable, query: Query, window: Window, limit: int) -> Sequence[Key]:
        return [("fact", fact_id) for fact_id in search.facts_matching(db, query.parts(), window, limit)]


class EpisodeText:
    """BM25 over what was said: the stored (redacted) text of every episode."""

    name = "episode_text"
    kinds = frozenset({"episode"})

    def rank(self, db: Queryable, query: Query, window: Window, limit: int) -> Sequence[Key]:
        return [("episode", episode_id) for episode_id in search.episodes_matching(db, query.parts(), window, limit)]


class EntityGraph:
    """Facts about the entities the question names, then about their one-hop neighbours."""

    name = "entity_graph"
    kinds = frozenset({"fact"})

    def rank(self, db: Queryable, query: Query, window: Window, limit: int) -> Sequence[Key]:
        named = search.entities_named(db, query.name_keys())
        return [("fact", fact_id) for fact_id in search.facts_about(db, named, query.match(), window, limit)]


DEFAULT_RANKERS: tuple[Ranker, ...] = (FactText(), EpisodeText(), EntityGraph())


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
