"""The extraction stage: stored or incoming episodes in, guarded assertions out.

Ingest and retry build their requests here alike. A request carries the episode's
text and time, the episodes just before it in its source as context (the ones this run
has read, else the stored ones), and the predicates the entities in view (named in the
episode or its context) already use, so a model keeps calling one relation by one name.
Every result then goes through the date guard (the LLM extractor's already did, before
its interval check); an assertion whose dates are still no interval is dropped, and the
episode says which.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Protocol

from memctl.errors import LLMUnavailable
from memctl.extract import Extractor, Request, Result, reads_context
from memctl.extract.guard import guard, stated_dates
from memctl.extract.prompt import CONTEXT_EPISODES, shown_context
from memctl.model import Assertion, Episode, InvalidAssertion
from memctl.names import keys_in_text
from memctl.reports import IngestReport
from memctl.store import api_batches, batches
from memctl.store import episodes as store
from memctl.store.entities import entities_in_view

if TYPE_CHECKING:
    from memctl.store import Database

# Episodes handed to an extractor at once (an LLM extractor runs them concurrently).
EXTRACT_CHUNK = 64
PREDICATES_IN_PROMPT = 50
ENTITIES_IN_PROMPT = 30


class Target(Protocol):
    """What an extraction result is written into: an incoming episode, or a stored one retried."""

    assertions: list[Assertion]
    extraction: str
    extraction_error: str | None


class RequestBuilder:
    """Requests with context and predicates, for one run of ingest or retry.

    The context of an episode is the few episodes just before it in its source. An
    ingest reads each source in order, so it keeps the last few it read (``read``);
    a retry picks stored episodes here and there, so it reads them from the store.
    """

    def __init__(self, db: Database | None, *, in_order: bool, with_context: bool = True):
        self.db = db  # None: no store yet (a dry run's estimate), so no predicates or entities in view
        self.in_order = in_order
        self.with_context = with_context  # False: the extractor reads only the text, so no query is made
        self.recent: dict[str, deque[str]] = {}

    def read(self, source: str, text: str) -> None:
        """An episode that came by in this run, in source order, extracted or not."""
        self.recent.setdefault(source, deque(maxlen=CONTEXT_EPISODES)).append(text)

    def request(self, episode_id: str, text: str, reference_time: str, source: str, position: int) -> Request:
        if not self.with_context:
            return Request(episode_id, text, reference_time)
        if self.in_order or self.db is None:
            context = tuple(self.recent.get(source, ()))
            self.read(source, text)
        else:
            context = tuple(store.contents_before(self.db, source, position, CONTEXT_EPISODES))
        if self.db is None:
            return Request(episode_id, text, reference_time, context)
        # The entities in view are those the model is shown: the episode and its context as the prompt has them.
        in_view = keys_in_text("\n".join([text, *shown_context(context)]))
        return Request(episode_id, text, reference_time, context,
                       store.predicates_in_view(self.db, in_view, PREDICATES_IN_PROMPT),
                       entities_in_view(self.db, in_view, ENTITIES_IN_PROMPT))


def run_requests(extractor: Extractor, requests: list[Request], targets: dict[str, Target],
                 report: IngestReport) -> None:
    """Run the requests and write each result into its target, counted, its dates guarded.

    All or nothing: when the model becomes unreachable mid-way (``LLMUnavailable``), no
    target has changed, and every episode of the call stays as it was (pending).
    """
    if requests:
        take_results(extractor, list(extractor.extract(requests)), targets, report)


def take_results(extractor: Extractor, results: list[tuple[Request, Result]], targets: dict[str, Target],
                 report: IngestReport) -> None:
    report.extractor = extractor.name  # an LLM's model may have been looked up meanwhile
    for request, result in results:
        take_result(report, targets[request.episode_id], request, result)


def keep_what_stands(db: Database, targets: dict[str, Target], report: IngestReport) -> None:
    """Targets whose new extraction gave no assertion that stands, for stored episodes that
    have some, failed instead: a model that answers junk (every item wrong, or none) must
    not swap good assertions for none. Retry keeps a failed episode's assertions; an
    ingest keeps a failed longer reading's stored one (``store.episodes.sort_new``)."""
    had = store.active_assertion_counts(db, list(targets))
    for episode_id, target in targets.items():
        if target.extraction == "done" and not target.assertions and had.get(episode_id):
            target.extraction = "failed"
            target.extraction_error = f"the new extraction gave no assertion that stands; the {had[episode_id]} " \
                                      "it had are kept"
            report.extraction_failures += 1
            report.first_failure = report.first_failure or f"{episode_id}: {target.extraction_error}"


def take_result(report: IngestReport, target: Target, request: Request, result: Result) -> None:
    report.extraction_calls += result.calls
    report.cache_hits += result.cache_hit
    report.input_tokens += result.input_tokens
    report.output_tokens += result.output_tokens
    if result.error is not None:
        report.extraction_failures += 1
        report.first_failure = report.first_failure or f"{request.episode_id}: {result.error}"
        target.extraction, target.extraction_error = "failed", result.error
        return
    dropped = list(result.dropped)
    if result.guarded:
        target.assertions.extend(result.assertions)
        report.guard_changes += result.guard_changes
    else:
        stated = stated_dates(request.text, request.reference_time) if result.assertions else {}
        for assertion in result.assertions:
            try:
                guarded, changes = guard(assertion, request.text, request.reference_time, stated)
            except InvalidAssertion as error:
                dropped.append(f"{assertion.subject} {assertion.predicate} {assertion.object}: {error}")
                continue
            report.guard_changes += len(changes)
            target.assertions.append(guarded)
    report.dropped += [f"{request.episode_id}: {line}" for line in dropped]
    # Done: what stands is stored. What was dropped is said where the episode is shown.
    target.extraction = "done"
    target.extraction_error = f"{len(dropped)} assertion(s) dropped: {'; '.join(dropped)}" if dropped else None


def extracted(db: Database, episodes: Iterable[Episode], extractor: Extractor,
              report: IngestReport) -> Iterator[Episode]:
    """Incoming episodes with assertions from ``extractor``; stored ones are not extracted again.

    When the model cannot be reached, the rest pass through unextracted and are stored
    as pending, for the next run.
    """
    builder = RequestBuilder(db, in_order=True, with_context=reads_context(extractor))
    # An extractor that can work while this process reads on (the rules, with a helper
    # process) is handed a chunk's requests before the chunk before it is stored, and the
    # next chunk is read meanwhile. Any other runs a chunk's requests before the next is
    # read, so that each request sees the store as the episodes before it left it (the
    # predicates a model is shown).
    submit: Callable[[list[Request]], Callable[[], Iterable[tuple[Request, Result]]]] | None = \
        getattr(extractor, "submit", None)
    waiting: tuple[list[Episode], dict[str, Episode], set[str], Callable[[], Iterable]] | None = None
    for chunk in batches(episodes, EXTRACT_CHUNK):
        if report.llm_unavailable:
            yield from chunk
            continue
        by_id, revised, requests = _requests_of(db, builder, chunk)
        if submit is None:
            try:
                run_requests(extractor, requests, dict(by_id), report)
            except LLMUnavailable as error:
                report.llm_unavailable = str(error)
            else:
                keep_what_stands(db, {episode_id: by_id[episode_id] for episode_id in revised}, report)
            yield from chunk
            continue
        # The chunk before: its results are taken before this one is handed over.
        earlier = _finished(db, extractor, waiting, report) if waiting is not None else []
        waiting = (chunk, by_id, revised, submit(requests))
        yield from earlier
    if waiting is not None:
        yield from _finished(db, extractor, waiting, report)


def _finished(db: Database, extractor: Extractor, waiting: tuple[list[Episode], dict[str, Episode], set[str],
              Callable[[], Iterable]], report: IngestReport) -> list[Episode]:
    """A submitted chunk, its results taken into its episodes."""
    chunk, by_id, revised, results = waiting
    take_results(extractor, list(results()), dict(by_id), report)
    keep_what_stands(db, {episode_id: by_id[episode_id] for episode_id in revised}, report)
    return chunk


def _requests_of(db: Database, builder: RequestBuilder,
                 chunk: list[Episode]) -> tuple[dict[str, Episode], set[str], list[Request]]:
    """(the chunk's episodes by id, the ids of stored ones read again with more text, the
    requests of those to extract). Stored ones are not extracted again."""
    by_id = store.longest_readings(chunk)
    # Pending episodes are not "stored" yet: this run extracts them, as it does revised ones.
    stored = store.active_ids(db, list(by_id), extracted=True)
    revised = store.revised_ids(db, (by_id[episode_id] for episode_id in stored))
    stored -= revised
    stored |= api_batches.awaiting(db, list(by_id))  # their replies come from a batch: no second call
    requests = []
    for episode in by_id.values():
        if episode.format == "facts" or episode.id in stored:
            builder.read(episode.source, episode.content)
        else:
            requests.append(builder.request(episode.id, episode.content, episode.reference_time, episode.source,
                                            episode.position))
    return by_id, revised, requests

