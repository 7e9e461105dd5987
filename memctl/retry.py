"""Retry: extract stored episodes again (a new model, a new prompt) and swap their
assertions in one transaction.

The old assertions stay in the history (``--known-at`` still sees them) and the
``retries`` journal keeps the old extraction state, so undoing the retry's operation
brings them back. The model is called outside the write lock: calls are slow, and an
episode undone meanwhile is left as it is.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from memctl.effects import effects
from memctl.errors import NothingToExtract
from memctl.extract import Extractor, reads_context
from memctl.extract.stage import RequestBuilder, keep_what_stands, run_requests
from memctl.model import Assertion
from memctl.reports import IngestReport, RetryResult
from memctl.store import api_batches
from memctl.store import episodes as store
from memctl.store import operations as journal
from memctl.store.connection import Clock, tentative, transaction_time
from memctl.undo import resolve_targets

if TYPE_CHECKING:
    from memctl.store import Database


@dataclass
class Retried:
    """What a retry writes for one stored episode: its new assertions and extraction state."""

    id: str
    reference_time: str
    assertions: list[Assertion] = field(default_factory=list)
    extraction: str = "done"
    extraction_error: str | None = None


def extractable(db: Database, targets: list[str], *,
                failed: bool) -> tuple[list[str], list[store.StoredText], int]:
    """(episodes a retry takes, the active ones' stored texts, how many were left out as
    awaiting a batch): those named, or with ``failed`` every failed or pending one but
    those whose reply an open batch will bring (no model is asked twice). One that came
    with its assertions is refused."""
    ids = store.unextracted_ids(db) if failed else resolve_targets(db, targets)
    awaiting = api_batches.awaiting(db, ids) if failed else set()
    ids = [episode_id for episode_id in ids if episode_id not in awaiting]
    stored = store.stored_texts(db, ids)
    structured = [episode.id for episode in stored if episode.extraction == "structured"]
    if structured:
        raise NothingToExtract(structured[0])
    return ids, stored, len(awaiting)


def retry(db: Database, clock: Clock, targets: list[str], extractor: Extractor, *, failed: bool = False,
          dry_run: bool = False) -> RetryResult:
    """Re-extract episodes (named, or with ``failed`` every failed or pending one); with
    ``dry_run``, show what the swap would change and roll it back."""
    ids, stored, awaiting = extractable(db, targets, failed=failed)
    report = IngestReport(extractor=extractor.name)
    retried = {episode.id: Retried(episode.id, episode.reference_time) for episode in stored}
    builder = RequestBuilder(db, in_order=False, with_context=reads_context(extractor))
    requests = [builder.request(e.id, e.content, e.reference_time, e.source, e.position) for e in stored]
    run_requests(extractor, requests, dict(retried), report)
    keep_what_stands(db, dict(retried), report)
    # An episode whose extraction failed keeps what it has: a model that is down or
    # answers nonsense must not swap good assertions for none.
    failed_ids = [episode.id for episode in retried.values() if episode.extraction == "failed"]
    result = RetryResult(episodes=[], extractor=extractor.name, assertions=0, failures=report.extraction_failures,
                         model_calls=report.extraction_calls, cache_hits=report.cache_hits,
                         guard_changes=report.guard_changes, failed=failed_ids,
                         first_failure=report.first_failure, dropped=report.dropped,
                         awaiting_batch=awaiting, input_tokens=report.input_tokens,
                         output_tokens=report.output_tokens)
    with tentative(db) as decision:
        # Extraction ran outside the lock: skip what another process undid meanwhile.
        still = store.active_ids(db, list(retried))
        episodes = [episode for episode in retried.values() if episode.id in still and episode.id not in failed_ids]
        result.episodes = [episode.id for episode in episodes]
        result.assertions = sum(len(episode.assertions) for episode in episodes)
        if not episodes:
            return result
        at = transaction_time(db, clock)
        with journal.journaled(db, "retry", at, {"episodes": ids, "extractor": extractor.name}) as entry:
            touched = store.replace_assertions(db, episodes, at, entry.id)
            changes = store.recompute(db, at, touched)
            result.effects = effects(db, changes)
            entry.counts = {"episodes": len(episodes), "assertions": result.assertions, "failures": result.failures,
                            "model_calls": result.model_calls, "cache_hits": result.cache_hits,
                            "guard_changes": result.guard_changes, "facts_created": len(changes.inserted),
                            "facts_expired": len(changes.expired)}
            entry.episode_ids = ids
        if not dry_run:  # a dry run's replies are cached: doing it for real costs no further call
            result.applied, result.operation_id = True, entry.id
            decision.keep()
    return result
