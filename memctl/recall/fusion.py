"""Reciprocal rank fusion, facts that take in the episodes they came from, and facts that
no longer hold listed under what replaced them.

Pure. Each ranker gives a list, best first; an item's fused score is the sum over the
lists of 1 / (k + rank), with k = 60 as in the original paper and every peer's recipe:
an item near the top of two lists beats one at the top of one.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Mapping, Sequence

K = 60
# What a fact that no longer holds counts of its score: asked in the present, what still
# holds comes first among answers about as good ("what does billing use": Sentry before
# the Redis it dropped), while one that matches clearly better still leads ("does
# billing still use Redis?").
PAST_WEIGHT = 0.75

# What a fact in an open conflict counts of its score (Cortex's 0.8): still found, and
# flagged, but below an answer as good that nothing contradicts.
CONFLICT_WEIGHT = 0.8

Key = tuple[str, int | str]  # ("fact", fact id) or ("episode", episode id)


class Weighted(list):
    """A ranking whose items are not all as sure as their place says: ``strength`` maps
    an item to the share (0 to 1) of its place's credit it earns; 1 for any it omits."""

    def __init__(self, *items: Key):
        super().__init__(items)
        self.strength: dict[Key, float] = {}


def rrf(rankings: Iterable[Sequence[Key]], k: int = K, weights: Sequence[float] | None = None) -> dict[Key, float]:
    """Each item's sum over the lists of weight × strength / (k + rank): every list's
    weight 1 unless given, every item's strength 1 unless its list is ``Weighted``."""
    scores: dict[Key, float] = {}
    for n, ranking in enumerate(rankings):
        weight = 1.0 if weights is None else weights[n]
        strength = ranking.strength if isinstance(ranking, Weighted) else {}
        for rank, key in enumerate(dict.fromkeys(ranking), 1):
            scores[key] = scores.get(key, 0.0) + weight * strength.get(key, 1.0) / (k + rank)
    return scores


# A ranker that finds by meaning (vectors) has its weight scaled by what the words miss:
# MEANING_SLOPE × the share of the question's terms that no single one of the best texts
# by words holds, between MEANING_LEAST and MEANING_MOST. Real logs' questions name what
# they ask for, word for word, and vectors at full weight there cost 3 to 4.5 points of
# recall@10; a person asking "what should I watch tonight" of a note that says "I love
# old black-and-white films" shares no word with it, and there vectors are the answer.
MEANING_SLOPE, MEANING_LEAST, MEANING_MOST = 2.0, 0.2, 1.2


def meaning_worth(covered: float) -> float:
    """The factor on a by-meaning ranker's weight when the best texts by words hold
    ``covered`` (0 to 1) of the question's terms."""
    return min(MEANING_MOST, max(MEANING_LEAST, MEANING_SLOPE * (1 - covered)))


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


Timelines = Mapping[int, tuple[Hashable, bool]]  # fact id -> (its timeline, whether it holds now)


def discount_past(scores: Mapping[Key, float], timelines: Timelines) -> dict[Key, float]:
    """Each fact that no longer holds at PAST_WEIGHT of its score. Done before
    ``reinforce``, so that an episode which supports a fact and the one that replaced it
    ("Dana moved to the platform team; Sam leads billing now") goes to what holds."""
    return {key: score * PAST_WEIGHT if key[0] == "fact" and not timelines.get(int(key[1]), (None, True))[1]
            else score for key, score in scores.items()}


def discount_episodes(scores: Mapping[Key, float], episode_ids: set[str]) -> dict[Key, float]:
    """Each of these episodes at PAST_WEIGHT of its score, as a fact that no longer holds:
    those whose every statement a later value replaced (asked of the present, the value
    that holds comes before the text that stated the old one), and those said before the
    stretch a question names (what was said in it comes first)."""
    return {key: score * PAST_WEIGHT if key[0] == "episode" and str(key[1]) in episode_ids else score
            for key, score in scores.items()}


def discount_conflicted(scores: Mapping[Key, float], fact_ids: Iterable[int]) -> dict[Key, float]:
    """Each of these facts (in an open conflict) at CONFLICT_WEIGHT of its score."""
    conflicted = set(fact_ids)
    return {key: score * CONFLICT_WEIGHT if key[0] == "fact" and int(key[1]) in conflicted else score
            for key, score in scores.items()}


def ranked(scores: Mapping[Key, float], limit: int, timelines: Timelines | None = None) -> list[tuple[Key, float]]:
    """Best first; ties by kind and id, so a run gives the same order every time.

    ``timelines``, for a list that has facts which no longer hold: such a fact goes right
    under the current fact of its timeline, if that was found too, and their place ranks
    by the better of their scores: the question reached that timeline, whose answer is
    what holds now, and what held before is its context ("which database does billing
    use" matches the MySQL it used best, and answers Postgres). Both show the place's
    score. A timeline is a slot, or one value of a many-valued slot (values there do not
    replace each other).
    """
    places = dict(scores)
    under: dict[Key, list[Key]] = {}
    lines: dict[Hashable, list[Key]] = {}
    known = timelines or {}
    for key in scores:
        if key[0] == "fact" and int(key[1]) in known:
            lines.setdefault(known[int(key[1])][0], []).append(key)
    for members in lines.values():
        holds = {key: known[int(key[1])][1] for key in members}
        current = [key for key in members if holds[key]]
        if not current:
            continue
        head = max(current, key=lambda key: scores[key])
        under[head] = sorted((key for key in members if not holds[key]), key=lambda key: -scores[key])
        places[head] = max(scores[key] for key in members)
        for key in under[head]:
            del places[key]
    result: list[tuple[Key, float]] = []
    for key, score in sorted(places.items(), key=lambda item: (-item[1], item[0][0], str(item[0][1]))):
        result += [(key, score)] + [(before, score) for before in under.get(key, ())]
        if len(result) >= limit:
            break
    return result[:limit]


def leading(first: Sequence[Key], best: list[tuple[Key, float]], limit: int) -> list[tuple[Key, float]]:
    """``first`` at the top, in its order, each at the top place's score (the question
    asked for them by name: "what did billing use before Postgres"); then the rest of
    ``best`` as it was."""
    top = best[0][1] if best else 0.0
    chosen = set(first)
    return ([(key, top) for key in first] + [item for item in best if item[0] not in chosen])[:limit]
