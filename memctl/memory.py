"""The library API: one ``Memory`` per database file, one method per user-visible action.

A thin facade: each method takes a connection (``Connections``: one writer, a reader
per thread) and hands it, with the clock, to the module that does the work:
``ingest``, ``undo``, ``retry``, ``repair``, ``recall`` and ``store.reads``. The CLI,
the MCP server and tests all call these methods. Each imports its module when called:
a process that only recalls never loads what ingest needs (pydantic, the readers).
"""

from __future__ import annotations

import re
import sqlite3
import sys
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Literal, cast

from memctl import names, times
from memctl.errors import BadInput, NotFound, check_limit
from memctl.results import (
    Backup,
    Conflict,
    Entity,
    EntitySummary,
    EpisodeDetail,
    EpisodeSummary,
    Fact,
    History,
    Operation,
    RecallResult,
    SessionListing,
    SimilarEntities,
    Slot,
    Stats,
)
from memctl.store import reads
from memctl.store.connection import Clock, Connections, system_clock

if TYPE_CHECKING:
    from memctl.extract import Extractor
    from memctl.extract.llm import LLMExtractor
    from memctl.model import Episode
    from memctl.recall.rankers import Ranker
    from memctl.reports import (
        Collected,
        IngestReport,
        MemoryAdded,
        Merged,
        RebuildResult,
        RepairResult,
        RetryResult,
        Settlement,
        Submitted,
        SummaryCounts,
        UndoPlan,
    )
    from memctl.sources import IngestOptions
    from memctl.store import Database
    from memctl.store.api_batches import Batch
    from memctl.summarize import Summarizer


# An episode's extraction state: done; pending (stored while the model was down: `memctl
# retry --failed` extracts it); failed; structured (it came with its facts).
EXTRACTION_STATES = ("done", "pending", "failed", "structured")


def _batch_extractor(extractor: Extractor | None) -> LLMExtractor:
    """The LLM extractor a batch is sent through; any other is bad usage."""
    from memctl.extract.llm import LLMExtractor

    if not isinstance(extractor, LLMExtractor):
        raise BadInput("a batch is sent to an LLM's Batch API: it needs the LLM extractor (--extractor llm, or auto "
                       "with OPENAI_API_KEY set)")
    return extractor


class Memory:
    def __init__(self, connections: Connections, clock: Clock = system_clock, *,
                 embeddings_model: str | None = None, summarizer: Summarizer | None = None):
        self.connections = connections
        self.clock = clock
        # What writes entity summaries (memctl.summarize); None: the LLM extractor a change
        # is given, if it is one (MEMCTL_SUMMARIES=off: never), else refreshes are owed.
        self.summarizer = summarizer
        # None: MEMCTL_EMBEDDINGS_MODEL names it, or no vectors are made or searched.
        self.embeddings_model = embeddings_model
        self._vector_ranker: Ranker | Literal[False] | None = None  # built on the first recall

    @classmethod
    def open(cls, path: str | Path, clock: Clock = system_clock, *, embeddings_model: str | None = None,
             summarizer: Summarizer | None = None) -> Memory:
        """Open the database at ``path``, creating and migrating it as needed.

        ``embeddings_model`` (else ``MEMCTL_EMBEDDINGS_MODEL``): the model whose vectors
        ingest makes and recall searches; ``local:wordllama`` or an OpenAI-compatible
        endpoint's model. Without one, neither does anything with vectors. ``summarizer``
        writes entity summaries (``memctl.summarize``); without one, the LLM extractor a
        change is given does, if it is one.
        """
        return cls(Connections(path, clock), clock, embeddings_model=embeddings_model, summarizer=summarizer)

    @property
    def db(self) -> Database:
        """The writer connection, for code in the opening thread (tests, scripts)."""
        return self.connections.writer

    def close(self) -> None:
        self.connections.close()

    def now(self) -> str:
        return times.to_storage(self.clock())

    # --- writing -------------------------------------------------------------------

    def ingest(self, paths: list[Path], options: IngestOptions, *, extractor: Extractor | None = None,
               batch_size: int | None = None, on_file: Callable[[Path, int], None] | None = None,
               batch: bool = False, price_in: float | None = None, price_out: float | None = None) -> IngestReport:
        """Ingest files and directories; episodes without assertions go through ``extractor``.
        ``batch_size``: episodes a transaction, fixed; None, sized by time (``store_in_batches``).

        ``batch``: the episodes are stored pending and their extraction is sent to the
        Batch API through ``extractor`` (an LLM's), to be collected later
        (``collect_batches``); ``price_in``/``price_out`` (US dollars per million tokens)
        price what was sent. Batches still open are collected first, as by any ingest
        with an LLM."""
        from memctl import ingest as ingest_module
        from memctl.errors import LLMUnavailable
        from memctl.store import api_batches

        llm = _batch_extractor(extractor) if batch else None
        collected = self._collect_first(extractor)
        sources: set[str] | None = set() if llm is not None else None
        with self.connections.writing() as db:
            report = ingest_module.ingest(db, self.clock, paths, options, extractor=None if batch else extractor,
                                          batch_size=batch_size, on_file=on_file, sources=sources)
            if llm is not None and sources is not None:
                report.batch = self._submit(db, llm, api_batches.pending_of_sources(db, sorted(sources)), price_in,
                                            price_out, report)
        report.collected = collected
        if report.input_tokens or report.output_tokens:
            from memctl.extract.cost import spent

            report.cost_usd = spent(report.extractor, report.input_tokens, report.output_tokens, price_in, price_out)
        report.summaries = self._gate(None if batch else extractor, report.operation_id)
        try:
            report.embedded = self.embed()
        except LLMUnavailable as error:  # the episodes are stored; the next run makes the vectors
            report.embeddings_unavailable = str(error)
        return report

    def embed(self) -> int:
        """Vectors for every stored text that has none from the embeddings model yet;
        how many were made (0 with no model configured)."""
        from memctl.embeddings import configured_embedder, embed_new

        embedder = configured_embedder(self.embeddings_model)
        if embedder is None:
            return 0
        with self.connections.writing() as db:
            return embed_new(db, embedder)

    def ingest_episodes(self, episodes: Iterable[Episode], *, command: dict | None = None,
                        batch_size: int | None = None, report: IngestReport | None = None) -> IngestReport:
        """Store episodes whose assertions are already made, as one ingest operation; their
        content and assertions are redacted first, as a source's are."""
        from memctl import ingest as ingest_module
        from memctl.redact import redact_episode

        with self.connections.writing() as db:
            report = ingest_module.store_in_batches(db, self.clock, map(redact_episode, episodes), command=command,
                                                    batch_size=batch_size, report=report)
        report.summaries = self._gate(None, report.operation_id)
        return report

    def add_memory(self, content: str, *, reference_time: str | None = None, source: str | None = None,
                   facts: list | None = None, extractor: Extractor | None = None) -> MemoryAdded:
        """One episode written now (an agent's memory): dated ``reference_time``, else the
        time of the call (``reference_time_source`` "call"). ``facts`` (the structured
        format's fact objects) are stored as given; otherwise ``extractor`` extracts the
        text (without one it is stored pending). See ``memctl.add``."""
        from memctl import add
        from memctl.errors import LLMUnavailable

        with self.connections.writing() as db:
            result = add.add_memory(db, self.clock, content, reference_time=reference_time, source=source, facts=facts,
                                    extractor=extractor)
        result.summaries = self._gate(extractor, None if result.already_present else result.operation_id)
        try:
            self.embed()
        except LLMUnavailable as error:  # the memory is stored; the next ingest or `memctl embed` makes the vectors
            result.embeddings_unavailable = str(error)
        return result

    def undo(self, targets: list[str], *, source: Path | None = None, apply: bool = False,
             purge: bool = False) -> UndoPlan:
        """Take episodes back out (``purge``: erase them for good), or put back what a repair,
        a retry or an undo changed. A preview unless ``apply``."""
        from memctl import undo as undo_module
        from memctl.store.connection import checkpoint

        with self._changing(preview=not apply) as db:
            plan = undo_module.undo(db, self.clock, targets, source=source, apply=apply, purge=purge)
        if plan.applied:
            plan.summaries = self._gate(None)
            plan.batches_cancelled, plan.batches_to_cancel = self._cancel_unneeded_batches()
            if purge:  # the pass wrote after the purge emptied the log: empty it again
                with self.connections.writing() as db:
                    if not checkpoint(db) and plan.unerased is None:
                        plan.unerased = undo_module.UNERASED
        return plan

    @contextmanager
    def _changing(self, *, preview: bool) -> Iterator[Database]:
        """The writer, for a change; for a preview of a store that cannot be written (a
        read-only mount), a copy of it: what a change would do can still be shown."""
        from memctl.store.connection import read_only, snapshot

        if preview and not self.connections.in_memory and read_only(self.connections.path):
            with self.connections.reading() as reader, snapshot(cast(sqlite3.Connection, reader),
                                                                self.connections.path) as copy:
                yield copy
        else:
            with self.connections.writing() as db:
                yield db

    def retry(self, targets: list[str], extractor: Extractor, *, failed: bool = False,
              dry_run: bool = False, price_in: float | None = None, price_out: float | None = None) -> RetryResult:
        """Extract episodes again from their stored text and swap their assertions at once.
        Batches still open are collected first (not by a dry run); with ``failed``, an
        episode whose reply an open batch will bring is left out. ``price_in``/``price_out``
        (US dollars per million tokens) price the tokens used (``cost_usd``)."""
        from memctl import retry as retry_module
        from memctl.extract.cost import spent

        collected = None if dry_run else self._collect_first(extractor)
        with self._changing(preview=dry_run) as db:
            result = retry_module.retry(db, self.clock, targets, extractor, failed=failed, dry_run=dry_run)
        result.collected = collected
        result.cost_usd = spent(result.extractor, result.input_tokens, result.output_tokens, price_in, price_out)
        if result.applied:
            result.summaries = self._gate(extractor)
        return result

    # --- the Batch API (memctl.batch) ------------------------------------------------

    def submit_batches(self, targets: list[str], extractor: Extractor, *, failed: bool = False,
                       price_in: float | None = None, price_out: float | None = None) -> Submitted:
        """Send the extraction of stored episodes (named, or with ``failed`` every failed or
        pending one) to the Batch API through ``extractor`` (an LLM's): ``retry --batch``.
        An episode already waiting on an open batch is not sent again."""
        from memctl.retry import extractable

        llm = _batch_extractor(extractor)
        collected = self._collect_first(extractor)
        with self.connections.writing() as db:
            episode_ids, _, awaiting = extractable(db, targets, failed=failed)
            submitted = self._submit(db, llm, episode_ids, price_in, price_out)
            submitted.awaiting += awaiting
        submitted.collected = collected
        return submitted

    def _submit(self, db: Database, llm: LLMExtractor, episode_ids: list[str], price_in: float | None,
                price_out: float | None, report: IngestReport | None = None) -> Submitted:
        from memctl import batch
        from memctl.errors import LLMUnavailable
        from memctl.reports import Submitted

        try:
            submitted = batch.submit(db, self.clock, llm, episode_ids, price_in=price_in, price_out=price_out)
        except LLMUnavailable as error:
            if report is None:
                raise
            report.llm_unavailable = str(error)  # stored, pending: a later run sends or extracts them
            return Submitted()
        finally:
            if report is not None:
                report.extractor = llm.name
        return submitted

    def collect_batches(self, extractor: Extractor, *, live_corrections: bool = False, price_in: float | None = None,
                        price_out: float | None = None) -> Collected:
        """Take the finished batches' replies and extract their episodes (``memctl.batch.collect``);
        a batch still running is left to a later collect. ``extractor`` (an LLM's) gives the
        client; ``live_corrections``: the replies found wrong are sent back live, not in a
        batch; ``price_in``/``price_out`` price the tokens used (else the model's list price)."""
        from memctl import batch

        llm = _batch_extractor(extractor)
        with self.connections.writing() as db:
            collected = batch.collect(db, self.clock, llm, live_corrections=live_corrections,
                                      prices=(price_in, price_out))
        if any(extracted.applied for extracted in collected.extracted):
            self._gate(None)
        return collected

    def batches(self, *, limit: int | None = None) -> list[Batch]:
        """Every batch sent to the Batch API, newest first, its episodes counted by state."""
        from memctl.errors import check_limit
        from memctl.store import api_batches

        check_limit(limit)
        with self.connections.reading() as db:
            return api_batches.listing(db, limit=limit)

    def cancel_batches(self, batch_ids: list[str], extractor: Extractor) -> tuple[list[str], str | None]:
        """(batches cancelled, why others could not be yet): these open batches (every open
        one with none named). Their episodes stay pending, for a live run or another batch."""
        from memctl import batch

        llm = _batch_extractor(extractor)
        with self.connections.writing() as db:
            return batch.cancel(db, self.clock, llm, batch_ids)

    def _cancel_unneeded_batches(self) -> tuple[list[str], str | None]:
        """Open batches no episode waits for any more, cancelled (``memctl.batch.cancel_unneeded``)
        through the endpoint the environment names."""
        from memctl import batch
        from memctl.extract.llm import LLMExtractor
        from memctl.store import api_batches

        with self.connections.writing() as db:
            if not api_batches.open_batches(db):
                return [], None
            return batch.cancel_unneeded(db, self.clock, LLMExtractor(None, None, self.clock))

    def _collect_first(self, extractor: Extractor | None) -> Collected | None:
        """What open batches brought, collected before a change with an LLM; None when
        there is none (or no LLM), so that nothing is asked of the network for nothing."""
        # Not imported to ask: a run with another extractor never loads the LLM's module.
        llm = sys.modules.get("memctl.extract.llm")
        if llm is None or not isinstance(extractor, llm.LLMExtractor):
            return None
        from memctl import batch
        from memctl.errors import LLMUnavailable
        from memctl.extract.llm import CallFailed
        from memctl.reports import Collected
        from memctl.store import api_batches

        with self.connections.writing() as db:
            if not api_batches.anything_to_collect(db):
                return None
            try:
                return batch.collect(db, self.clock, extractor)
            except (LLMUnavailable, CallFailed) as error:
                return Collected(errors=[f"the open batches could not be collected: {error}"])

    def repair_midnight_hallucinations(self, *, apply: bool = False) -> RepairResult:
        """``repair midnight-hallucinations``: a plan, or with ``apply`` one journaled change."""
        from memctl import repair

        with self._changing(preview=not apply) as db:
            result = repair.repair_midnight_hallucinations(db, self.clock, apply=apply)
        if result.applied:
            result.summaries = self._gate(None)
        return result

    def resolve(self, conflict: str, *, keep: str, apply: bool = False) -> Settlement:
        """Settle an open conflict (its id or a unique prefix) by keeping the value named
        ``keep``: the other values' statements are taken out (``memctl.settle``). A preview
        unless ``apply``; ``undo`` of its operation puts them back."""
        from memctl.settle import settle

        with self._changing(preview=not apply) as db:
            result = settle(db, self.clock, conflict, keep, apply=apply)
        if result.applied:
            result.summaries = self._gate(None)
        return result

    def merge(self, into: str, other: str, *, apply: bool = False) -> Merged:
        """Make the entity named ``other`` the entity named ``into`` (``memctl.merging``): its
        statements name ``into`` from now on, and so do later mentions of its names. A
        preview unless ``apply``; ``undo`` of its operation is its exact inverse."""
        from memctl.merging import merge

        with self._changing(preview=not apply) as db:
            result = merge(db, self.clock, into, other, apply=apply)
        if result.applied:
            result.summaries = self._gate(None)
        return result

    def split(self, name: str, *, apply: bool = False) -> Merged:
        """Give ``name``, which resolution put into another entity, an entity of its own
        again (``memctl.merging``). A preview unless ``apply``; ``undo`` reverses it."""
        from memctl.merging import split

        with self._changing(preview=not apply) as db:
            result = split(db, self.clock, name, apply=apply)
        if result.applied:
            result.summaries = self._gate(None)
        return result

    def summarize(self, extractor: Extractor | None = None, *, sessions: bool = False) -> SummaryCounts:
        """One pass of the summary gate (``memctl.summarize``): each entity whose facts
        changed gets its summary found again (an undo), written by the model now, or owed.
        Every change runs one; with ``extractor`` (an LLM extractor), or ``summarizer``,
        owed refreshes that are due are done too. ``sessions``: and every session without
        its sentence yet (``memctl summarize``)."""
        return self._pass(extractor, "all" if sessions else None)

    def _pass(self, extractor: Extractor | None, sessions_of: str | None) -> SummaryCounts:
        """A gate pass; ``sessions_of``: the operation whose sessions get their sentence
        (``"all"``: every session)."""
        from memctl.store import summaries
        from memctl.summarize import gate_pass, summarizer_for

        with self.connections.writing() as db:
            sessions = ([] if sessions_of is None else summaries.all_sessions(db) if sessions_of == "all"
                        else summaries.sessions_of_operation(db, sessions_of))
            return gate_pass(db, self.clock, self.summarizer or summarizer_for(extractor), sessions)

    def _gate(self, extractor: Extractor | None, operation_id: str | None = None) -> SummaryCounts | None:
        """A change's gate pass (with the sessions of ``operation_id``, which added turns);
        what it did, for the change's report, when it did anything (without a model and
        with no summary stored, it has nothing to say)."""
        counts = self._pass(extractor, operation_id)
        return counts if counts.model is not None or counts.any() else None

    def rebuild(self) -> RebuildResult:
        """Recompute every fact from the assertions; on a healthy store this changes nothing."""
        from memctl import repair

        with self.connections.writing() as db:
            result = repair.rebuild(db, self.clock)
        self._gate(None)
        return result

    # --- reading -------------------------------------------------------------------

    def recall(self, query: str, *, as_of: str | None = None, known_at: str | None = None, since: str | None = None,
               until: str | None = None, limit: int = 10, history: bool = False, kind: str = "all",
               full: bool = False) -> RecallResult:
        """Facts and episodes matching ``query``, best first: facts true at ``as_of`` (default:
        now), episodes said by then and within ``since``/``until``, as known at ``known_at``.
        ``kind``: all, fact or episode. Episodes come as snippets; ``full``: with their whole text."""
        from memctl import recall as recall_module

        with self.connections.reading() as db:
            return recall_module.recall(db, query, now=self.now(), as_of=as_of, known_at=known_at, since=since,
                                        until=until, limit=limit, history=history, kind=kind, full=full,
                                        rankers=self._rankers())

    def _rankers(self) -> tuple[Ranker, ...]:
        """The default rankers, and vectors when an embeddings model is configured."""
        from memctl.embeddings import embeddings_model_named
        from memctl.recall.rankers import DEFAULT_RANKERS

        if self._vector_ranker is None and embeddings_model_named(self.embeddings_model) is None:
            self._vector_ranker = False  # and nothing of the embeddings path is imported
        if self._vector_ranker is None:
            from memctl.embeddings import configured_embedder
            from memctl.extract.llm import Retries
            from memctl.recall.vectors import VectorRanker

            # A question waits less for the endpoint than an ingest: one retry, 15 s a call.
            embedder = configured_embedder(self.embeddings_model, retries=Retries(max_retries=1), timeout=15)
            self._vector_ranker = VectorRanker(embedder) if embedder is not None else False
        return DEFAULT_RANKERS if self._vector_ranker is False else (*DEFAULT_RANKERS, self._vector_ranker)

    def facts(self, *, subject: str | None = None, predicate: str | None = None, as_of: str | None = None,
              known_at: str | None = None, history: bool = False, limit: int | None = None) -> list[Fact]:
        """Facts without a question: true at ``as_of`` (default: now; every valid time with
        ``history``) as known at ``known_at``, of one subject or predicate if named."""
        from memctl import recall as recall_module

        with self.connections.reading() as db:
            return recall_module.facts(db, now=self.now(), subject=subject, predicate=predicate, as_of=as_of,
                                       known_at=known_at, history=history, limit=limit)

    def episodes(self, *, source: str | Path | None = None, status: str | None = None, since: str | None = None,
                 until: str | None = None, format: str | None = None, limit: int | None = None,
                 extraction: str | None = None, text: str | None = None,
                 latest_first: bool = False) -> list[EpisodeSummary]:
        """Episodes in time order (``latest_first``: the latest first): of ``source`` (a file
        ``Path``, or a source as stored, such as ``memctl://add_memory``), of a ``status``
        (active or undone), a ``format`` and an ``extraction`` state (done, pending, failed,
        structured), said in [``since``, ``until``), holding every word of ``text``."""
        with self.connections.reading() as db:
            return reads.episodes(db, limit=limit, latest_first=latest_first,
                                  **self._episode_filter(source, status, format, since, until, limit, extraction, text))

    def sessions(self, *, since: str | None = None, until: str | None = None,
                 limit: int | None = None) -> list[SessionListing]:
        """The sessions (a session file, a conversation of an export) that said something in
        [``since``, ``until``), the latest first, each with its title, span and episodes."""
        from memctl.store import search

        check_limit(limit)
        with self.connections.reading() as db:
            # Said at any time in [since, until) (history: no asking time), as held now.
            window = search.Window(as_of="", since=times.instant_argument(since, what="since"),
                                   until=times.instant_argument(until, what="until"), history=True)
            return search.sessions_listed(db, window, limit)

    def episode_count(self, *, source: str | Path | None = None, status: str | None = None, since: str | None = None,
                      until: str | None = None, format: str | None = None, extraction: str | None = None,
                      text: str | None = None) -> int:
        """How many episodes ``episodes`` lists with the same filters and no limit."""
        with self.connections.reading() as db:
            return reads.episode_count(db, **self._episode_filter(source, status, format, since, until, None,
                                                                  extraction, text))

    @staticmethod
    def _episode_filter(source: str | Path | None, status: str | None, format: str | None, since: str | None,
                        until: str | None, limit: int | None, extraction: str | None = None,
                        text: str | None = None) -> dict:
        if status not in (None, "active", "undone"):
            raise BadInput(f"must be active or undone, got {status!r}", parameter="status")
        if extraction not in (None, *EXTRACTION_STATES):
            raise BadInput(f"must be one of {', '.join(EXTRACTION_STATES)}, got {extraction!r}", parameter="extraction")
        words = None
        if text is not None:  # every word, each as the index reads it (nothing reaches FTS5's syntax)
            found = re.findall(r"\w+", text)
            if not found:
                raise BadInput(f"has no words to search for: {text!r}", parameter="text")
            words = " AND ".join(f'"{word}"' for word in found)
        if format is not None:
            # Only with a format: the readers (pydantic, jsonlines) cost listing episodes 110 ms.
            from memctl.sources import FORMATS, MEMORY_FORMAT

            if format not in (*FORMATS, MEMORY_FORMAT):
                raise BadInput(f"must be one of {', '.join((*FORMATS, MEMORY_FORMAT))}; got {format!r}",
                               parameter="format")
        check_limit(limit)
        return {"source": str(source.resolve()) if isinstance(source, Path) else source, "status": status,
                "format": format, "extraction": extraction, "words": words,
                **{name: times.instant_argument(value, what=name)
                                     for name, value in (("since", since), ("until", until))}}

    def source_named(self, tail: str) -> str:
        """The one stored source whose path ends with ``tail`` (as listings show a file:
        its folder and name), or NotFound / Ambiguous."""
        from memctl.errors import Ambiguous

        with self.connections.reading() as db:
            found = reads.sources_ending(db, tail.strip("/"))
        if not found:
            raise NotFound(f"no episodes come from a source named {tail!r}")
        if len(found) > 1:
            raise Ambiguous(f"{tail!r} names {len(found)} sources ({', '.join(found[:3])}…); give more of its path")
        return found[0]

    def show(self, target: str) -> EpisodeDetail:
        """One episode (by id or unique prefix) with its assertions and the facts it supports."""
        from memctl.undo import episode_id

        with self.connections.reading() as db:
            return reads.episode(db, episode_id(db, target), self.now())

    def history(self, entity: str, *, limit: int | None = None) -> History:
        """Every slot of an entity, each with its facts over time (``limit``: its latest that many)."""
        check_limit(limit)
        with self.connections.reading() as db:
            found = reads.entity_named(db, names.entity_key(entity))
            if found is None:
                raise NotFound(f"no entity named {entity!r}")
            slots: dict[str, Slot] = {}
            for fact, predicate_key in reads.facts_of_subject(db, found[0], self.now()):
                slot = slots.setdefault(predicate_key, Slot(fact.predicate, fact.cardinality, []))
                slot.facts.append(fact)
        if limit is not None:
            slots = {key: slot._replace(facts=slot.facts[-limit:]) for key, slot in slots.items()}
        return History(entity=found[1], slots=list(slots.values()))

    def summary(self, entity: str, *, as_of: str | None = None, known_at: str | None = None) -> EntitySummary:
        """What holds about ``entity`` at ``as_of`` (default: ``known_at``, else now), as
        memctl held it at ``known_at``: ``memctl.summary``."""
        from memctl.store.summaries import summary_of

        known = times.instant_argument(known_at, what="known_at")
        at = times.instant_argument(as_of, what="as_of") or known or self.now()
        with self.connections.reading() as db:
            found = reads.entity_named(db, names.entity_key(entity))
            if found is None:
                raise NotFound(f"no entity named {entity!r}")
            return summary_of(db, found[0], found[1], at, known)

    def conflicts(self, *, as_of: str | None = None, known_at: str | None = None,
                  closed: bool = False) -> list[Conflict]:
        """The open conflicts at ``as_of`` (default: ``known_at``, else now), as memctl held
        them at ``known_at``, the latest first; with ``closed``, those a later statement
        closed too (``memctl.conflicts``)."""
        from memctl import conflicts

        known = times.instant_argument(known_at, what="known_at")
        at = times.instant_argument(as_of, what="as_of") or known or self.now()
        with self.connections.reading() as db:
            return conflicts.listed(db, as_of=at, known_at=known, closed=closed)

    def entities(self, *, name: str | None = None, limit: int | None = None) -> list[Entity]:
        """Entities and the names each goes by, the most mentioned first; or the one ``name``
        resolves to (``memctl.entities``)."""
        from memctl import entities

        if limit is not None:
            check_limit(limit)
        with self.connections.reading() as db:
            return entities.listed(db, name=name, limit=limit)

    def similar_entities(self, *, limit: int | None = None) -> list[SimilarEntities]:
        """Pairs of entities that may be one thing under two names, the likeliest first, with
        why: candidates for ``merge``; memctl merges none itself. With an embeddings model
        configured, names whose vectors are close are paired too."""
        from memctl import entities
        from memctl.embeddings import configured_embedder

        if limit is not None:
            check_limit(limit)
        embedder = configured_embedder(self.embeddings_model)
        with self.connections.reading() as db:
            return entities.similar(db, limit=limit, embedder=embedder)

    def path(self) -> Path | str:
        """The database file (``:memory:`` for a memory that has none), or its server's URL
        without a password."""
        if self.connections.url is not None:
            return self.connections.where
        return self.connections.path.resolve() if not self.connections.in_memory else self.connections.path

    def backup(self, target: str | Path) -> Backup:
        """A consistent copy of the memory as committed now, in a new file ``target``: read
        as one snapshot (SQLite's backup), so writers go on meanwhile and the copy needs no
        log beside it."""
        import sqlite3

        path = Path(target).expanduser()
        if path.exists():
            raise BadInput(f"{path} exists already; name a new file")
        if not path.parent.is_dir():
            raise NotFound(f"{path.parent}: no such folder")
        if self.connections.url is not None:  # a server's memory, into a SQLite file (one transaction's snapshot)
            from memctl.copying import copy as copy_store

            copy_store(self.connections.url, str(path), times.to_storage(self.clock()))
            return Backup(path=str(path.resolve()), bytes=path.stat().st_size)
        with self.connections.reading() as db:
            source = db if isinstance(db, sqlite3.Connection) else db.conn  # type: ignore[attr-defined]
            copy = sqlite3.connect(path)
            try:
                source.backup(copy)
                copy.execute("PRAGMA journal_mode = DELETE")  # one self-contained file
            finally:
                copy.close()
        return Backup(path=str(path.resolve()), bytes=path.stat().st_size)

    def export(self) -> Iterator[dict]:
        """Every active episode and its statements as lines of the structured format, in
        time order: ``memctl ingest`` of them into an empty memory gives the same facts."""
        with self.connections.reading() as db:
            yield from reads.exported(db)

    def stats(self) -> Stats:
        with self.connections.reading() as db:
            return reads.stats(db, self.now())

    def operations(self, *, limit: int | None = None) -> list[Operation]:
        """The journal in time order; with ``limit``, its last ``limit`` operations."""
        from memctl.store import operations as journal  # socket and the write helpers: not for a recall

        check_limit(limit)
        with self.connections.reading() as db:
            return journal.operations(db, limit=limit)
