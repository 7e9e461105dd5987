"""The gate pass: after every change (ingest, add, retry, undo, repair, resolve), decide
for each entity whose facts changed whether a model rewrites its summary, and do it
(docs/summaries.md).

1. In one write transaction: take in the entities whose facts changed
   (``store.summaries``, marked by every fact write). An entity whose fact set already
   had a summary (an undo brought it back) gets that summary again, with no call
   (``unchanged``); one with no facts left has none. For the others the gate decides
   (``summary.decide``): refresh now, or wait, the offline summary served meanwhile.
2. Outside the lock: one model call per entity to refresh.
3. In a second transaction: each summary written is stored, if its entity's facts are
   still the set it was written from; else the next pass decides again.

A model that is down, or no model, leaves the refresh owed (``summary_gates.owed``):
nothing is lost, and the next pass with a model does it. A backfill therefore makes at
most one call per entity whose facts changed, however many episodes touched it.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from memctl import summary, times
from memctl.errors import LLMUnavailable, NoModel
from memctl.reports import SummaryCounts
from memctl.store import reads
from memctl.store import summaries as store
from memctl.store.connection import Clock, transaction_time, write_transaction

if TYPE_CHECKING:
    from memctl.extract.llm import LLMExtractor
    from memctl.store import Database

EXCERPTS = 3  # of the episodes behind an entity's current facts, the latest this many go with the facts
EXCERPT_CHARS = 1000
SUMMARY_TOKENS = 300  # the reply's cap: 600 characters are about 150 tokens


class Summarizer(Protocol):
    """What writes a summary: a name (stored with it) and one call."""

    @property
    def name(self) -> str: ...

    def write(self, entity: str, facts: str, excerpts: list[tuple[str, str]]) -> str:
        """Prose about ``entity`` from ``facts`` (the offline summary) and ``excerpts``
        ((reference time, text) of its latest episodes). Raises ``LLMUnavailable`` when
        the endpoint cannot be used, ``CallFailed`` when this call failed."""
        ...

    def write_session(self, session: str, turns: list[tuple[str, str]]) -> str:
        """One sentence about a session from its turns ((reference time, text)); raises as ``write``."""
        ...


def gate_pass(db: Database, clock: Clock, summarizer: Summarizer | None,
              sessions: Iterable[str] = ()) -> SummaryCounts:
    """One pass of the gate over the entities whose summary is owed (see the module), and
    over ``sessions`` (those a change added turns to: ``session_pass``)."""
    counts = SummaryCounts(model=summarizer.name if summarizer is not None else None)
    _entity_pass(db, clock, summarizer, counts)
    if summarizer is not None:  # a session's sentence is looked up as it is read: without a model, nothing to do
        session_pass(db, clock, summarizer, list(sessions), counts)
    return counts


def _entity_pass(db: Database, clock: Clock, summarizer: Summarizer | None, counts: SummaryCounts) -> None:
    if not store.anything_to_decide(db, owed_too=summarizer is not None):
        return  # no transaction: a change that touched no fact writes nothing more
    asks: list[tuple[int, str, summary.Reason]] = []
    with write_transaction(db):
        at = transaction_time(db, clock)
        store.take_changes(db, at)
        # Without a model only a summary found again can change anything: the entities
        # that ever had one, among those changed now. With one, every owed refresh is due.
        gates = store.pending(db) if summarizer is not None else store.pending(db, changed_at=at, with_versions=True)
        for gate in gates:
            rows = store.fact_rows(db, gate.subject_id, None)
            if not rows:  # nothing to summarise: the offline summary says so
                store.settled(db, gate.subject_id, None)
                counts.skip("no_facts")
                continue
            facts_hash = summary.facts_hash(rows)
            known = store.written_for(db, gate.subject_id, facts_hash)
            if known is not None:
                store.write(db, gate.subject_id, facts_hash, known.text, known.model, known.reason, at)
                store.settled(db, gate.subject_id, None)
                counts.skip("unchanged")
                continue
            ask, reason = summary.decide(invalidated=gate.invalidated, passes=gate.passes,
                                         last_changed_at=gate.last_changed_at, refreshed_at=gate.refreshed_at, now=at)
            if not ask:
                counts.skip(reason)
            elif summarizer is None:
                store.owe(db, gate.subject_id, "no_model")
                counts.skip("no_model")
            else:
                asks.append((gate.subject_id, facts_hash, reason))
        material = {subject_id: _material(db, subject_id, at) for subject_id, _, _ in asks}
    if not asks:
        return
    assert summarizer is not None
    written, owed = _calls(asks, lambda ask: summarizer.write(*material[ask[0]]), counts, counts.skip)
    with write_transaction(db):
        at = transaction_time(db, clock)
        for (subject_id, facts_hash, reason), text in written:
            if summary.facts_hash(store.fact_rows(db, subject_id, None)) != facts_hash:
                counts.skip("changed_meanwhile")  # its gate row is dirty again: the next pass decides
                continue
            store.write(db, subject_id, facts_hash, text, summarizer.name, reason, at)
            store.settled(db, subject_id, at)
            counts.refresh(reason)
        for (subject_id, _, _), why in owed:
            store.owe(db, subject_id, why)


T = TypeVar("T")


def _calls(asks: list[T], call: Callable[[T], str], counts: SummaryCounts,
           skip: Callable[[str, int], None]) -> tuple[list[tuple[T, str]], list[tuple[T, str]]]:
    """One model call for each of ``asks``, in order: those written (with their text), and
    those owed (with why). A request the endpoint refuses (too long, say) is owed alone
    (``failed``); an endpoint that is down (its retries spent) or unusable, or no model
    named (a key exported for something else, a structured import), owes the rest too."""
    from memctl.extract.llm import CallFailed

    written: list[tuple[T, str]] = []
    owed: list[tuple[T, str]] = []
    for n, ask in enumerate(asks):
        try:
            written.append((ask, call(ask)))
            counts.calls += 1
        except (LLMUnavailable, CallFailed) as error:
            if isinstance(error, CallFailed) and error.refused:
                counts.calls += 1
                owed.append((ask, "failed"))
                skip("failed", 1)
                continue
            why = "no_model" if isinstance(error, NoModel) else "unavailable"
            if why == "unavailable":
                counts.unavailable = str(error)
            owed += [(rest, why) for rest in asks[n:]]
            skip(why, len(asks) - n)
            break
    return written, owed


def session_pass(db: Database, clock: Clock, summarizer: Summarizer, sessions: list[str],
                 counts: SummaryCounts) -> None:
    """One sentence for each of these sessions, written from its turns and kept for that
    set of turns (``store.summaries.turns_hash``): a session whose turns had one already
    costs nothing (``unchanged``); one still being written (a turn said within
    ``summary.BURST_QUIET`` of now) waits for its end (``live``), as a burst does."""
    if not sessions:
        return
    now = times.from_storage(times.to_storage(clock()))
    asks = []
    for session in sessions:
        turns = store.session_turns(db, session)
        if not turns:
            continue
        turns_hash = store.turns_hash(turns)
        if store.session_summary(db, session, turns_hash) is not None:
            counts.skip_session("unchanged")
        elif now - times.from_storage(turns[-1][2]) < summary.BURST_QUIET:
            counts.skip_session("live")
        else:
            asks.append((session, turns_hash, turns))
    written, _ = _calls(asks, lambda ask: summarizer.write_session(ask[0], _session_material(ask[2])), counts,
                        counts.skip_session)  # one owed is asked again when its session changes, or by `memctl summarize`
    if written:
        with write_transaction(db):
            at = transaction_time(db, clock)
            for (session, turns_hash, turns), text in written:
                store.write_session_summary(db, session, turns_hash, text, summarizer.name,
                                            [turn[0] for turn in turns], at)
                counts.sessions_written += 1


def _session_material(turns: list[tuple[str, str, str, str]]) -> list[tuple[str, str]]:
    """The turns a session's sentence is written from: its first SESSION_TURNS and its
    last, each cut to TURN_CHARS."""
    chosen = turns if len(turns) <= 2 * SESSION_TURNS else [*turns[:SESSION_TURNS], *turns[-SESSION_TURNS:]]
    return [(when, text[:TURN_CHARS]) for _, _, when, text in chosen]


SESSION_TURNS = 3
TURN_CHARS = 400


def _material(db: Database, subject_id: int, at: str) -> tuple[str, str, list[tuple[str, str]]]:
    """What the model is given for an entity: its name, its offline summary now, and the
    latest episodes behind its current facts."""
    name = reads.entity_names(db, {subject_id})[subject_id]
    facts = reads.facts_of_subject_at(db, subject_id, at, None, latest=store.SHOWN)
    excerpts = [(when, text[:EXCERPT_CHARS]) for when, text in reads.latest_texts_of_subject(db, subject_id, EXCERPTS)]
    return name, summary.offline_summary(name, facts, at), excerpts


def summarizer_for(extractor: object | None) -> Summarizer | None:
    """The summarizer a change's extractor implies: its endpoint and model when it is the
    LLM extractor and an endpoint is configured, unless MEMCTL_SUMMARIES is ``off``; else none."""
    llm = sys.modules.get("memctl.extract.llm")  # imported if, and only if, an LLM extractor was made
    if llm is None or not isinstance(extractor, llm.LLMExtractor) or os.environ.get("MEMCTL_SUMMARIES") == "off":
        return None
    return ModelSummarizer(extractor) if extractor.has_endpoint else None


class ModelSummarizer:
    """A ``Summarizer`` through the LLM extractor's endpoint and model: one chat call."""

    def __init__(self, extractor: LLMExtractor):
        self.extractor = extractor

    @property
    def name(self) -> str:
        return self.extractor.name

    def write(self, entity: str, facts: str, excerpts: list[tuple[str, str]]) -> str:
        said = "\n".join(f"<episode time=\"{when}\">\n{text}\n</episode>" for when, text in excerpts)
        return self._ask(SYSTEM_PROMPT, f"ENTITY: {entity}\n\nFACTS:\n{facts}\n\nLATEST EPISODES:\n{said}",
                         summary.SUMMARY_CHARS)

    def write_session(self, session: str, turns: list[tuple[str, str]]) -> str:
        said = "\n".join(f"<turn time=\"{when}\">\n{text}\n</turn>" for when, text in turns)
        return self._ask(SESSION_PROMPT, f"SESSION: {session}\n\nTURNS:\n{said}", SESSION_CHARS)

    def _ask(self, system: str, user: str, most: int) -> str:
        """One chat call; its text without a reasoning block, redacted, cut to ``most``."""
        from memctl.extract.llm import CallFailed, call_with_retries, unwrap_text
        from memctl.redact import redact

        client, model = self.extractor.endpoint()
        messages = [{"role": "system", "content": system}, {"role": "user", "content": user}]
        deadline = time.monotonic() + self.extractor.timeout  # --timeout bounds it as it does an extraction

        def create() -> Any:
            return self.extractor.attempt_by(deadline, client, lambda calling: calling.chat.completions
                                             .with_streaming_response.create(model=model, messages=messages,
                                                                             temperature=0, max_tokens=SUMMARY_TOKENS))

        response = call_with_retries(create, self.extractor.retries, client=client, service="LLM", model=model,
                                     model_option="--model/MEMCTL_MODEL")
        if isinstance(response, str):
            raise CallFailed("the endpoint's reply was no chat completion")
        text = " ".join(unwrap_text(response.choices[0].message.content or "").split())
        if not text:
            raise CallFailed("the model's summary was empty")
        # What a model writes is stored and served: a secret it repeats is redacted as any text is.
        return summary.cut(redact(text)[0], most)


SESSION_CHARS = 240  # a session's sentence
SESSION_PROMPT = """You summarise one working session between a person and an AI assistant, for a list of sessions.
Write one sentence of at most 200 characters saying what the session set out to do and what came of it.
Use only the TURNS given. No preamble, no markdown."""
SYSTEM_PROMPT = """You summarise what a memory knows about one entity, for an agent that reads it first.
Write at most 600 characters of plain prose, in two to four sentences: what holds now and since when,
what it replaced, and what ended. Use only the FACTS and the LATEST EPISODES given; keep every date
as given; never guess. No lists, no markdown, no preamble."""
