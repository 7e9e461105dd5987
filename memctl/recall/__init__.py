"""Recall: what was said and what was extracted, fused into one list, at any point in time.

The question is parsed once (``query``); each ranker (``rankers``: BM25 over facts, BM25
over episode text, the entity graph, and vectors when configured) gives its best items
inside the time window; reciprocal rank fusion (``fusion``) merges them, and a fact
found beside the episodes it came from takes them in. Time: facts by valid time
(``--as-of``), episodes by when they were said, both by what memctl held (``--known-at``).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from typing import Literal

from memctl import times
from memctl.errors import BadInput, LLMUnavailable, check_limit
from memctl.recall import fusion
from memctl.recall.query import Query, parse
from memctl.recall.rankers import DEFAULT_RANKERS, Ranker, of_the_kind_asked
from memctl.recall.when import named_window
from memctl.results import EntitySummary, EpisodeHit, Fact, RecallResult, SessionHit
from memctl.store import Queryable, search
from memctl.store.search import Window

Kind = Literal["all", "fact", "episode"]
KINDS = ("all", "fact", "episode")
_WORD = re.compile(r"\w")
# Each ranker offers this many candidates (at least) for fusion to choose from.
DEPTH = 50
# "Before Postgres": the best found facts holding the value tried for a neighbour in their
# timeline, and how many of those lead (the nearest; further back is context).
BESIDE_TRIED = 3
BESIDE_SHOWN = 2


def recall(db: Queryable, query: str, *, now: str, as_of: str | None = None, known_at: str | None = None,
           since: str | None = None, until: str | None = None, limit: int = 10, history: bool = False,
           kind: str = "all", full: bool = False, rankers: Sequence[Ranker] = DEFAULT_RANKERS) -> RecallResult:
    """The best facts and episodes for ``query``.

    Facts valid at ``as_of`` (every valid time with ``history``; any time in
    ``since``/``until`` when those are given and ``as_of`` is not; with none of these, also
    those that ended by then, each under the fact that holds in its place if that was
    found: ``fusion.ranked``), episodes said by then
    (and in ``since``/``until``), both as memctl held them at ``known_at``. "What memctl
    believed at K" defaults to what it would have answered then: without ``as_of``, the
    time is ``known_at``, or else ``now``: the asking time. Times take any ISO-8601 form.
    Without ``since`` or ``until``, a time the question names ("in June 2024", "two weeks
    ago") is its ``since``/``until``, read from the asking time (``recall.when``).
    Episodes come as snippets of the lines that matched (``memctl.snippets``), with their
    whole text too when ``full``.
    """
    check_limit(limit)
    if kind not in KINDS:
        raise BadInput(f"must be all, fact or episode, got {kind!r}", parameter="kind")
    given = {name: times.instant_argument(value, what=name)
             for name, value in (("as_of", as_of), ("known_at", known_at), ("since", since), ("until", until))}
    if given["since"] and given["until"] and given["since"] >= given["until"]:
        raise BadInput(f"must be before until ({given['until']}), got {given['since']}", parameter="since")
    # The asking time: every time phrase of the question is read from it, and nothing
    # said or begun after it is found.
    effective_as_of = given["as_of"] or given["known_at"] or now
    named = None
    if not (given["since"] or given["until"]):
        # A question that names a time ("in mid 2023", "two weeks ago") asks about it.
        named = named_window(query, times.from_storage(effective_as_of))
        if named is not None:
            given["since"], given["until"] = named.since, named.until
    timed = any(given[name] for name in ("as_of", "since", "until"))
    # Asked with no time, facts that held before and ended are found too, under what
    # replaced them ("who led billing before Sam", "does billing still use Redis?").
    # A window the question names asks for facts that held at some time in it, not at
    # the asking time ("what did billing use last spring", asked as of June).
    # The words a window was read from are the window's: "since 2026" searches for neither word.
    asked = query if named is None else query.replace(named.words, " ", 1)
    parsed = parse(asked if _WORD.search(asked) else query, timed=timed)
    # A stretch the question names bounds what was said in it when the question asks what
    # happened then ("what did I do in May"); asked what held then ("what did billing use
    # in February 2024"), what was said before it answers too, after what was said in it.
    said_since = named is None or parsed.asks_what_happened()
    window = Window(as_of=effective_as_of, known_at=given["known_at"], since=given["since"], until=given["until"],
                    history=history, as_of_given=given["as_of"] is not None and named is None, past=not timed,
                    said_since=said_since)
    wanted = {"fact", "episode"} if kind == "all" else {kind}
    time_words = named.words if named is not None else None
    if (given["since"] or given["until"]) and parsed.asks_what_happened():
        return _what_happened(db, query, window, wanted, limit, time_words, full)
    if not parsed.terms and not parsed.phrases:  # "the and of": every text would match
        raise BadInput(f"query {query.strip()!r} has only stop words, which match any text; "
                       f"quote it to search it as a phrase: '\"{query.strip()}\"'")
    depth = max(DEPTH, 3 * limit)
    rankings: list[Sequence[fusion.Key]] = []
    weights: list[float] = []
    by_meaning: list[bool] = []
    unavailable: list[str] = []
    with search.one_question():  # the rankers share what they ask the turn index
        for ranker in rankers:
            if not ranker.kinds & wanted:
                continue
            try:
                ranking = ranker.rank(db, parsed, window, depth)
            except LLMUnavailable as error:  # an embeddings endpoint that is down: the others still answer
                unavailable.append(f"{ranker.name}: {error}")
                continue
            if any(key[0] not in wanted for key in ranking):
                kept = fusion.Weighted(*(key for key in ranking if key[0] in wanted))
                kept.strength = getattr(ranking, "strength", {})
                ranking = kept
            rankings.append(ranking)
            weights.append(ranker.weight)
            by_meaning.append(ranker.by_meaning)
    if any(by_meaning):
        # What finding by meaning is worth to this question: little where its words are
        # found together in the best texts, much where they are not (docs/recall.md).
        words = fusion.rrf([r for r, meaning in zip(rankings, by_meaning) if not meaning])
        by_words = [str(key[1]) for key, _ in fusion.ranked(words, 3 * len(rankings)) if key[0] == "episode"][:3]
        worth = fusion.meaning_worth(search.words_covered(db, parsed.parts(), by_words))
        weights = [weight * worth if meaning else weight for weight, meaning in zip(weights, by_meaning)]
    scores = fusion.rrf(rankings, weights=weights)
    fact_ids = [int(key[1]) for key in scores if key[0] == "fact"]
    facts = search.facts_by_id(db, fact_ids, window)
    if kinds := of_the_kind_asked(parsed, facts):
        scores = fusion.rrf([*rankings, kinds], weights=[*weights, 1.0])
    # "What did billing use before Postgres": what held next to a value the question names
    # leads, nearest first, then the value it was found by.
    beside = _beside(db, parsed, scores, window) if "fact" in wanted else []
    if beside:
        facts.update(search.facts_by_id(db, [fact_id for fact_id in beside if fact_id not in facts], window))
    timelines = None
    if window.past or window.history:
        timelines = {fact_id: (line, facts[fact_id].status == "current")
                     for fact_id, line in search.fact_timelines(db, list(facts)).items()}
        if not parsed.looks_back():
            scores = fusion.discount_past(scores, timelines)
    # What an episode said that a later value replaced: the agent is told, and, asked of
    # what holds, what holds outranks the text that stated the old value.
    replaced = search.superseded_statements(db, [str(key[1]) for key in scores if key[0] == "episode"], window)
    if not parsed.looks_back() and not window.history:
        scores = fusion.discount_episodes(scores, {episode_id for episode_id, (_, whole) in replaced.items() if whole})
    if not window.said_since and window.since is not None:
        scores = fusion.discount_episodes(scores, search.said_before(
            db, [str(key[1]) for key in scores if key[0] == "episode"], window.since))
    # Facts that another statement contradicts: still found, lower, and said to be disputed.
    # Only those that can reach the list are looked at: a discount never raises a fact, and
    # reading the statements of every found fact's slot cost a fifth of a recall.
    reachable = [int(key[1]) for key, _ in fusion.ranked(scores, 2 * limit) if key[0] == "fact"]
    conflicted = _conflicts(db, reachable, window)
    scores = fusion.discount_conflicted(scores, conflicted)
    if kind == "all":
        scores = fusion.reinforce(scores, {fact_id: fact.episodes or [] for fact_id, fact in facts.items()})
    best = fusion.ranked(scores, limit, timelines)
    if beside:
        best = fusion.leading([("fact", fact_id) for fact_id in beside], best, limit)
    units = _in_sessions(db, best)
    turns = [turn for key, _, found in units for turn in (found or ([str(key[1])] if key[0] == "episode" else []))]
    episodes = search.episodes_by_id(db, turns, parsed.match(), full=full)
    replacing = search.facts_by_id(db, sorted({fact_id for turn in turns if turn in replaced
                                               for fact_id in replaced[turn][0]}), window)
    replacements = {episode_id: [{"fact_id": fact_id, "fact": replacing[fact_id].fact, "valid_at": replacing[fact_id].valid_at}
                                 for fact_id in by if fact_id in replacing] for episode_id, (by, _) in replaced.items()}

    def said(episode_id: str, score: float) -> EpisodeHit:
        hit = episodes[episode_id]._replace(score=round(score, 6))
        return hit._replace(superseded_by=replacements[episode_id]) if episode_id in replaced else hit

    sessions = search.sessions_listed(db, Window(as_of=window.as_of, known_at=window.known_at), None,
                                      keys=[str(key[1]) for key, _, found in units if found]) if turns else []
    described = {session.session: session for session in sessions}
    results: list[Fact | EpisodeHit | EntitySummary | SessionHit] = []
    for (item_kind, item_id), score, found in units:
        if item_kind == "fact":  # a mixed list says what each result is
            results.append(facts[int(item_id)]._replace(kind="fact", score=round(score, 6),
                                                        conflicts=conflicted.get(int(item_id))))
        elif item_kind == "episode":
            results.append(said(str(item_id), score))
        else:
            about = described[str(item_id)]
            results.append(SessionHit(
                session=about.session, source=about.source, conversation=about.conversation, title=about.title,
                first_at=about.first_at, last_at=about.last_at, episodes=about.episodes,
                participants=about.participants, turns=[said(turn, score) for turn in found], summary=about.summary,
                score=round(score, 6)))
    if kind == "all":
        results = _summary_first(db, parsed, results, window)
    return RecallResult(query=query, as_of=effective_as_of, known_at=given["known_at"], results=results,
                        unavailable=unavailable or None, since=given["since"], until=given["until"],
                        time_words=time_words)


def _in_sessions(db: Queryable, best: list[tuple[fusion.Key, float]]) -> list[tuple[fusion.Key, float, list[str]]]:
    """``best`` as results, each (key, score, turns): the turns of one conversation (a
    session of a conversational format, ``search.CONVERSATIONS``), when two or more are
    among them, are one result, ``("session", its key)``, at the place of the best, with
    them in their order; the rest as they were (turns: []). The same turns in the same
    order, each counted in the limit: grouped, so that each conversation is told once."""
    conversation = search.conversations_of(db, [str(key[1]) for key, _ in best if key[0] == "episode"])
    grouped = Counter(conversation.values())
    units: list[tuple[fusion.Key, float, list[str]]] = []
    place: dict[str, int] = {}
    for key, score in best:
        session = conversation.get(str(key[1])) if key[0] == "episode" else None
        if session is None or grouped[session] < 2:
            units.append((key, score, []))
        elif session in place:
            units[place[session]][2].append(str(key[1]))
        else:
            place[session] = len(units)
            units.append((("session", session), score, [str(key[1])]))
    return units


def _summary_first(db: Queryable, parsed: Query, results: list, window: Window) -> list:
    """The results with, right above the first fact about an entity the question names, that
    entity's summary (``"kind": "summary"``): what holds about it, since when and what it
    replaced, which the facts below it detail. One summary at most, and only where such a
    fact was found: a question that names an entity in passing asks about something else."""
    from memctl.names import entity_key

    keys = set(parsed.name_keys())
    for n, item in enumerate(results):
        if item.kind == "fact" and entity_key(item.subject) in keys:
            from memctl.store.reads import entity_named
            from memctl.store.summaries import summary_of

            found = entity_named(db, entity_key(item.subject))
            if found is None:
                return results
            summary = summary_of(db, found[0], found[1], window.as_of, window.known_at)
            return [*results[:n], summary._replace(kind="summary", score=item.score), *results[n:]]
    return results


def _conflicts(db: Queryable, fact_ids: list[int], window: Window) -> dict[int, list[dict]]:
    """The found facts in an open conflict, each with the other values' statements
    (``memctl.conflicts``); read only where a fact's slot has another value at all."""
    from memctl.store.conflicts import contested_facts

    contested = contested_facts(db, fact_ids, window.known_at)
    if not contested:
        return {}
    from memctl import conflicts

    return conflicts.of_facts(db, contested, as_of=window.as_of, known_at=window.known_at)


def _beside(db: Queryable, parsed: Query, scores: dict[fusion.Key, float], window: Window) -> list[int]:
    """What held next to a value the question asks about (``Query.beside``), nearest
    first, then the fact it was found by: in the timeline of the best found fact that
    holds the value and has a neighbour there; of those whose other end the question names
    too, if there are any ("which database did billing have before DynamoDB": billing's
    timeline, though analytics' move to DynamoDB matched as well). None if it names no
    such value."""
    asked = parsed.beside()
    if asked is None:
        return []
    direction, name_keys = asked
    found = [int(key[1]) for key in sorted(scores, key=lambda key: -scores[key]) if key[0] == "fact"]
    named = search.entities_named(db, name_keys)
    holding = search.facts_at_either_end(db, found, named)
    also_named = set(search.entities_named(db, parsed.name_keys())) - set(named)
    anchors = [fact_id for fact_id in found if fact_id in holding]
    # Another subject's timeline answers nothing about the one named: none then.
    anchors = [fact_id for fact_id in anchors if not also_named.isdisjoint(holding[fact_id])] or anchors
    # What held before the value is asked for even at a given time ("as of March 2025, what
    # did billing use before Postgres"): facts that ended by then count, as when no time is given.
    around = window._replace(past=not window.history)
    for fact_id in anchors[:BESIDE_TRIED]:
        if next_to := search.facts_beside(db, fact_id, named, direction, around, BESIDE_SHOWN):
            return [*next_to, fact_id]
    return []


def _what_happened(db: Queryable, query: str, window: Window, wanted: set[str], limit: int,
                   time_words: str | None, full: bool) -> RecallResult:
    """A question such as "what changed last month": the window's changes and sessions,
    latest first (``search.what_happened``), scored as one ranking by time."""
    found = search.what_happened(db, window, wanted, limit)
    facts = search.facts_by_id(db, [int(item_id) for _, item_kind, item_id in found if item_kind == "fact"], window)
    episodes = search.episodes_by_id(db, [str(item_id) for _, item_kind, item_id in found if item_kind == "episode"],
                                     None, full=full)
    results: list[Fact | EpisodeHit | EntitySummary | SessionHit] = []
    for rank, (_, item_kind, item_id) in enumerate(found, 1):
        score = round(1.0 / (fusion.K + rank), 6)
        results.append(facts[int(item_id)]._replace(kind="fact", score=score) if item_kind == "fact"
                       else episodes[str(item_id)]._replace(score=score))
    return RecallResult(query=query, as_of=window.as_of, known_at=window.known_at, results=results,
                        since=window.since, until=window.until, time_words=time_words, what_happened=True)


def facts(db: Queryable, *, now: str, subject: str | None = None, predicate: str | None = None,
          as_of: str | None = None, known_at: str | None = None, history: bool = False,
          limit: int | None = None) -> list[Fact]:
    """Facts without a question, by subject and time: what ``memctl facts`` lists."""
    from memctl.names import entity_key, predicate_key

    check_limit(limit)
    known = times.instant_argument(known_at, what="known_at")
    window = Window(as_of=times.instant_argument(as_of, what="as_of") or known or now, known_at=known,
                    history=history)
    return search.facts_listed(db, window, subject_key=entity_key(subject) if subject else None,
                               predicate_key=predicate_key(predicate) if predicate else None, limit=limit)
