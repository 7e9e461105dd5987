"""``memctl entities``: the entities, the names each goes by, and candidates for a merge.

Resolution (``memctl.aliases``, ``memctl.store.entities``) is conservative: a name it is
not sure of becomes an entity of its own. What it left apart that may be one thing is
listed here for the user to merge (``memctl.merging``), with the reasons: names alike
(close spellings, one name inside the other) and the same value in the same one-valued
slot ("primary_database: Postgres"). memctl merges none of them itself.
"""

from __future__ import annotations

from difflib import SequenceMatcher
from typing import TYPE_CHECKING

from memctl import names
from memctl.errors import MissingExtra
from memctl.results import Entity, SimilarEntities
from memctl.store import Queryable
from memctl.store import entities as store

if TYPE_CHECKING:
    from memctl.embeddings import Embedder

# Names at least this alike (difflib's ratio of their keys) are a candidate pair.
ALIKE = 0.84
# A name key of one word in another of several is a candidate only where that word says
# something: "billing" in "billing v2" does; "the" or "api" would pair everything.
SHORTEST_INSIDE = 4


def listed(db: Queryable, *, name: str | None = None, limit: int | None = None) -> list[Entity]:
    """Every entity a held statement names (or the one ``name`` resolves to), the most
    mentioned first, with its names as written and how each came to it."""
    only = {store.named(db, name)} if name is not None else None
    written = store.written_names(db, only)
    # A merge re-keys the statements it moves; one put back since (an undone resolve) may
    # still name the merged entity, and is counted with the entity it is now.
    into = store.merged_into(db, set(written))
    by_entity: dict[int, dict[str, int]] = {}
    for entity_id, forms in written.items():
        held = by_entity.setdefault(into.get(entity_id, entity_id), {})
        for form, count in forms.items():
            held[form] = held.get(form, 0) + count
    if only is not None:
        by_entity = {entity_id: forms for entity_id, forms in by_entity.items() if entity_id in only}
    order = sorted(by_entity, key=lambda e: (-sum(by_entity[e].values()), e))[:limit]
    sources = store.merged_sources(db, set(order))
    rows = store.entity_rows(db, set(order) | {source for found in sources.values() for source in found})
    facts = store.current_fact_counts(db, set(order))
    merged_keys = {rows[source][1] for found in sources.values() for source in found}
    keys = {form: names.entity_key(form) for forms in by_entity.values() for form in forms}
    rules = store.resolution_rules(db, set(keys.values()))
    result = []
    for entity_id in order:
        own = rows[entity_id][1]
        counted = sorted(by_entity[entity_id].items(), key=lambda item: (-item[1], item[0]))
        result.append(Entity(entity=rows[entity_id][0], facts=facts.get(entity_id, 0),
                             merged=sorted(rows[source][0] for source in sources.get(entity_id, [])),
                             names=[{"name": form, "mentions": count,
                                     "resolved_by": _how(keys[form], own, merged_keys, rules)}
                                    for form, count in counted]))
    return result


def _how(key: str, own_key: str, merged_keys: set[str], rules: dict[str, str]) -> str | None:
    """How a name (its key) came to an entity whose own key is ``own_key``: the rule that
    resolved it, or "merge"; None for the entity's own name."""
    if key == own_key:
        return None
    return "merge" if key in merged_keys or key not in rules else rules[key]


def similar(db: Queryable, *, limit: int | None = None, embedder: Embedder | None = None) -> list[SimilarEntities]:
    """Pairs of entities that may be one thing, the likeliest first (module docstring);
    with ``embedder``, also those whose names' vectors are close (``names_meaning_alike``)."""
    written = store.written_names(db)
    into = store.merged_into(db, set(written))
    kept = sorted({into.get(e, e) for e in written})
    rows = store.entity_rows(db, set(kept))
    reasons: dict[tuple[int, int], list[str]] = {}
    scores: dict[tuple[int, int], float] = {}
    groups = {entity_id: rows[entity_id][2] or rows[entity_id][1] for entity_id in kept}
    by_word: dict[str, list[int]] = {}
    for entity_id in kept:
        for word in set(groups[entity_id].split(" ")):
            by_word.setdefault(word, []).append(entity_id)
    by_start: dict[str, list[int]] = {}
    for entity_id in kept:
        by_start.setdefault(groups[entity_id][:3], []).append(entity_id)
    for bucket in [*by_word.values(), *by_start.values()]:
        if len(bucket) > 200:  # a word many names share tells nothing, and pairing them all is quadratic
            continue
        for i, first in enumerate(bucket):
            for second in bucket[i + 1:]:
                pair = (min(first, second), max(first, second))
                if pair in scores:
                    continue
                a, b = groups[pair[0]], groups[pair[1]]
                ratio = SequenceMatcher(None, a, b).ratio()
                inside = _inside(a, b)
                if ratio >= ALIKE:
                    reasons[pair], scores[pair] = [f"names alike ({ratio:.2f})"], ratio
                elif inside:
                    reasons[pair], scores[pair] = [f"{inside!r} is inside the other name"], 0.5
                else:
                    scores[pair] = 0.0
    shared = store.shared_values(db)
    shown = store.entity_rows(db, {value for values in shared.values() for _, value in values})
    for pair, values in shared.items():
        pair = (into.get(pair[0], pair[0]), into.get(pair[1], pair[1]))
        if pair[0] == pair[1]:
            continue
        pair = (min(pair), max(pair))
        said = ", ".join(f"{predicate} {shown.get(value, (str(value),))[0]}" for predicate, value in values[:3])
        reasons.setdefault(pair, []).append(f"same value in a one-valued slot: {said}")
        scores[pair] = scores.get(pair, 0.0) + 0.3 * len(values)
    if embedder is not None:
        mentions = {entity_id: sum(written.get(entity_id, {}).values()) for entity_id in kept}
        most = sorted(kept, key=lambda e: (-mentions[e], e))[:EMBEDDED_NAMES]
        for pair, cosine in names_meaning_alike(embedder, [(e, rows[e][0]) for e in most]).items():
            reasons.setdefault(pair, []).append(f"names mean alike (cosine {cosine:.2f})")
            scores[pair] = scores.get(pair, 0.0) + 0.5 * cosine
    rows = store.entity_rows(db, {e for pair in reasons for e in pair})
    found = [SimilarEntities(first=rows[a][0], second=rows[b][0], reasons=reasons[(a, b)], score=round(scores[(a, b)], 3))
             for a, b in reasons]
    found.sort(key=lambda pair: (-pair.score, names.entity_key(pair.first), names.entity_key(pair.second)))
    return found[:limit]


# Names of at most this many entities (the most mentioned) are embedded for --similar: each
# run embeds them anew, and an endpoint charges by the call.
EMBEDDED_NAMES = 5000
# Cosine similarity of two names' vectors from which they are a candidate pair.
MEANING_ALIKE = 0.9


def names_meaning_alike(embedder: Embedder, named: list[tuple[int, str]]) -> dict[tuple[int, int], float]:
    """Pairs (lower id first) of these (entity id, name) whose names' vectors are at least
    MEANING_ALIKE alike, with that cosine; compared a block of rows at a time, so that
    5,000 names never make a 5,000 × 5,000 matrix."""
    try:
        import numpy as np
    except ModuleNotFoundError:
        raise MissingExtra("comparing entity names by their vectors", "embeddings") from None

    if len(named) < 2:
        return {}
    vectors = np.asarray(embedder.embed([name for _, name in named]), dtype=np.float32)
    vectors /= np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
    found: dict[tuple[int, int], float] = {}
    for start in range(0, len(named), 512):
        block = vectors[start:start + 512] @ vectors.T
        for i, j in zip(*np.nonzero(block >= MEANING_ALIKE)):
            row = start + int(i)
            if row < int(j):
                a, b = named[row][0], named[int(j)][0]
                found[(min(a, b), max(a, b))] = float(block[i, j])
    return found


def _inside(a: str, b: str) -> str | None:
    """The shorter key, when its words are the start or the end of the other's."""
    short, long = sorted((a, b), key=len)
    words, longer = short.split(" "), long.split(" ")
    if len(short) < SHORTEST_INSIDE or len(words) >= len(longer):
        return None
    return short if longer[:len(words)] == words or longer[-len(words):] == words else None
