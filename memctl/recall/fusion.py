"""Reciprocal rank fusion, and facts that take in the episodes they came from.

Pure. Each ranker gives a list, best first; an item's fused score is the sum over the
lists of 1 / (k + rank), with k = 60 as in the original paper and every peer's recipe:
an item near the top of two lists beats one at the top of one.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

K = 60

Key = tuple[str, int | str]  # ("fact", fact id) or ("episode", episode id)


def rrf(rankings: Iterable[Sequence[Key]], k: int = K) -> dict[Key, float]:
    scores: dict[Key, float] = {}
    for ranking in rankings:
        for rank, key in enumerate(dict.fromkeys(ranking), 1):
            scores[key] = scores.get(key, 0.0) + 1.0 / (k + rank)
    return scores


def reinforce(scores: Mapping[Key, float], support: Mapping[int, Sequence[str]]) -> dict[Key, float]:
    """A fact found beside the episodes that support it takes their scores in, and they
    leave the list: the answer and its evidence fill one place of the top, not two, and
    rank above either alone. ``support``: fact id → its supporting episode ids.

    An episode supporting several found facts counts once, for the best of them.
    """
    result = dict(scores)
    facts = sorted((key for key in scores if key[0] == "fact"), key=lambda key: -scores[key])
    for fact in facts:
        for episode_id in support.get(int(fact[1]), ()):
            episode = ("episode", episode_id)
            if episode in result:
                result[fact] += result.pop(episode)
    return result


def ranked(scores: Mapping[Key, float], limit: int) -> list[tuple[Key, float]]:
    """Best first; ties by kind and id, so a run gives the same order every time."""
    return sorted(scores.items(), key=lambda item: (-item[1], item[0][0], str(item[0][1])))[:limit]
