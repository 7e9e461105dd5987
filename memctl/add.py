"""add_memory: one episode written now, by an agent or a script, instead of read from a file.

An agent's memory arrives one statement at a time, as it works. Each call stores one
episode in one write transaction, journaled as an ingest operation, so ``undo`` takes it
back by episode or by operation like anything ingested.

- **When.** ``reference_time`` if given: ISO-8601, an offset honoured, a bare date
  midnight UTC, anything else refused with nothing stored. Without one the memory is
  being written as it happens: the episode takes the clock at the call and says so
  (``reference_time_source = "call"``), the one case where memctl's own clock dates an
  episode (architecture §2).
- **Where.** ``source`` (default ``memctl://add_memory``) at its next free position.
  An episode's id hashes source, position and content, so each call is an episode of its
  own even when it repeats an earlier text: saying a thing again, later, is evidence too.
- **What.** ``facts``, the structured format's fact objects, are stored as given with
  nothing inferred (``memctl.sources.facts.read_facts``). Otherwise the text goes through
  the extractor and the date guard as an ingest's would, with the source's earlier
  memories as context; a model that cannot be reached leaves the episode ``pending``.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from memctl import times
from memctl.effects import effects
from memctl.errors import BadInput, LLMUnavailable
from memctl.extract import Extractor, reads_context
from memctl.extract.stage import RequestBuilder, run_requests
from memctl.ingest import COUNTED, count_facts, tally
from memctl.model import Episode, content_hash
from memctl.redact import redact_into
from memctl.reports import IngestReport, MemoryAdded
from memctl.sources import MEMORY_FORMAT, cut
from memctl.store import cache, reads
from memctl.store import operations as journal
from memctl.store.connection import Clock, transaction_time, write_transaction
from memctl.store.episodes import recompute, sort_new, store_episodes

if TYPE_CHECKING:
    from memctl.store import Database

DEFAULT_SOURCE = "memctl://add_memory"


def add_memory(db: Database, clock: Clock, content: str, *, reference_time: str | None = None,
               source: str | None = None, facts: list | None = None,
               extractor: Extractor | None = None) -> MemoryAdded:
    """Store ``content`` as one episode; see the module's docstring. Without ``facts`` and
    without an ``extractor``, the episode is stored pending, as an ingest without one does."""
    episode = _episode(db, clock, content, reference_time, source, facts)
    report = IngestReport(extractor=extractor.name if extractor is not None and facts is None else None)
    if extractor is not None and facts is None:
        builder = RequestBuilder(db, in_order=False, with_context=reads_context(extractor))
        request = builder.request(episode.id, episode.content, episode.reference_time, episode.source, episode.position)
        try:
            run_requests(extractor, [request], {episode.id: episode}, report)
        except LLMUnavailable as error:  # stored all the same; `memctl retry --failed` extracts it later
            report.llm_unavailable = str(error)
    dropped = [line.removeprefix(f"{episode.id}: ") for line in report.dropped]
    command = {"add_memory": {"source": episode.source, "reference_time": reference_time}, "extractor": report.extractor}
    with write_transaction(db):
        # The position was read before the lock, so that a model's reply is not waited
        # for holding it; another process may have filed a memory there since (two
        # agents' servers on one file). This one takes the next free position, as it
        # would have had it come second: its id, which hashes the position, with it.
        position = reads.next_position(db, episode.source)
        if position != episode.position:
            moved = replace(episode, position=position)
            cache.refile(db, episode.id, moved.id)
            episode = moved
        result = MemoryAdded(episode_id=episode.id, source=episode.source, position=episode.position,
                             reference_time=episode.reference_time, reference_time_source=episode.reference_time_source,
                             extraction=episode.extraction, extraction_error=episode.extraction_error,
                             extractor=report.extractor, already_present=False, guard_changes=report.guard_changes,
                             redactions=episode.redactions, redacted=episode.redacted,
                             llm_unavailable=report.llm_unavailable, dropped=dropped)
        at = transaction_time(db, clock)
        added = sort_new(db, [episode])
        result.already_present = not added.to_store
        if added.to_store:
            with journal.journaled(db, "ingest", at, command) as entry:
                store_episodes(db, added, at, entry.id)
                changes = recompute(db, at, added.touched)
                tally(report, added)
                count_facts(report, changes)
                result.effects = effects(db, changes)
                entry.counts = {name: getattr(report, name) for name in COUNTED}
            result.operation_id = entry.id
        stored = reads.episode(db, episode.id, at)
    result.assertions = [assertion for assertion in stored.assertions if assertion.expired_at is None]
    return result


def _episode(db: Database, clock: Clock, content: str, reference_time: str | None, source: str | None,
             facts: list | None) -> Episode:
    """The episode to store, every argument checked first: bad input stores nothing."""
    if not isinstance(content, str) or not content.strip():
        raise BadInput("is empty; say what to remember", parameter="content")
    if source is not None and not source.strip():
        raise BadInput("is empty; leave it out for the default, or name where the memory comes from", parameter="source")
    when = times.instant_argument(reference_time, what="reference_time") or times.to_storage(clock())
    try:
        times.plausible(when, reference_time)  # a memory dated 9999-12-31 is a mistake, not a plan
    except times.BadInstant as error:
        raise BadInput(str(error), parameter="reference_time") from None
    said = "call" if reference_time is None else "record"
    redacted: dict[str, int] = {}
    assertions = None
    if facts is not None:
        from memctl.sources.facts import read_facts

        assertions = read_facts(facts, when, redacted)
    # The source is an agent's free text too, and is stored with the episode.
    source = redact_into(source.strip(), redacted) if source is not None else DEFAULT_SOURCE
    # Redacted before the cut: a cut through a secret would leave a part no rule knows.
    text, cut_chars = cut(redact_into(content.strip(), redacted))
    return Episode(source=source, position=reads.next_position(db, source), format=MEMORY_FORMAT, content=text,
                   content_hash=content_hash(text), reference_time=when, reference_time_source=said,
                   assertions=assertions or [], redacted=redacted, cut_chars=cut_chars,
                   extraction="structured" if facts is not None else "pending")
