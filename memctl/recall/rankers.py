"""The rankers recall fuses: one small protocol, and the ones that need nothing but the store.

A ranker takes the parsed question and the time window and gives its best items, as
``("fact", id)`` or ``("episode", id)``, best first. It applies the window inside its
own query, before its limit. Each says which kinds it can find, so ``--kind`` runs only
the rankers that matter.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from memctl.recall.fusion import Key
from memctl.recall.query import Query
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


class AskedKind:
    """Facts of the kind a question asks for ("which database does billing use": facts
    that say "database") that match the rest of it too. BM25 alone weighs "database" as
    any other word: "Billing reports errors to Sentry", which matches "billing use", would
    answer as well as the database billing moved to."""

    name = "asked_kind"
    kinds = frozenset({"fact"})

    def rank(self, db: Queryable, query: Query, window: Window, limit: int) -> Sequence[Key]:
        match = query.kind_match()
        if match is None:
            return []
        return [("fact", fact_id) for fact_id in search.facts_matching(db, [match], window, limit)]


DEFAULT_RANKERS: tuple[Ranker, ...] = (FactText(), EpisodeText(), EntityGraph(), AskedKind())
