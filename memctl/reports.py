"""What the library's changes report: an ingest's counts, an undo's plan, a retry's,
repair's or added memory's effects. Each is a dataclass, filled in while its change runs;
what reads return are the immutable records of ``memctl.results``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field, fields, is_dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypeVar, dataclass_transform

from memctl.results import StoredAssertion, as_json

if TYPE_CHECKING:
    from memctl.model import Episode
    from memctl.sources import Skipped


class Record:
    """Base of every report: attribute or key access, and a JSON form.

    Fields named in ``_OMITTED_WHEN_NONE`` are left out of the JSON when unset: one
    report type then serves the places that show a few more or fewer keys.
    """

    __slots__ = ()  # so that a report made with slots=True has no __dict__ either
    _OMITTED_WHEN_NONE: frozenset[str] = frozenset()

    # One __eq__ and __repr__ for every report, as dataclasses would write them: a
    # dataclass compiles its own of each, which costs every command that loads them.
    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return self._compared() == other._compared()

    def _compared(self) -> tuple:
        return tuple(getattr(self, f.name) for f in fields(self) if f.compare)  # type: ignore[arg-type]

    def __repr__(self) -> str:
        shown = ", ".join(f"{f.name}={getattr(self, f.name)!r}" for f in fields(self) if f.repr)  # type: ignore[arg-type]
        return f"{self.__class__.__qualname__}({shown})"

    def __getitem__(self, key: str) -> Any:
        if key.startswith("_") or not hasattr(self, key):
            raise KeyError(key)
        return getattr(self, key)

    def to_json(self) -> dict[str, Any]:
        return {name: as_json(getattr(self, name)) for name in _field_names(self.__class__)
                if not (name in self._OMITTED_WHEN_NONE and getattr(self, name) is None)}


_FIELD_NAMES: dict[type, tuple[str, ...]] = {}


def _field_names(cls: type) -> tuple[str, ...]:
    """A report class's fields, in order: read once per class, not for each of an undo's 780k changes."""
    names = _FIELD_NAMES.get(cls)
    if names is None:
        assert is_dataclass(cls)
        names = _FIELD_NAMES[cls] = tuple(f.name for f in fields(cls))
    return names


T = TypeVar("T")


@dataclass_transform(field_specifiers=(field,))
def record(cls: type[T]) -> type[T]:
    """A report's class: its fields and __init__ from dataclasses, __eq__ and __repr__ from Record."""
    return dataclass(repr=False, eq=False)(cls)


@dataclass(repr=False, eq=False, slots=True)  # no __dict__: an undo of a whole ingest lists 780k
class FactChange(Record):
    """A current fact that a change removes, re-opens, changes or adds."""

    fact: str
    subject: str | None
    predicate: str
    object: str | None
    valid_at: str | None
    invalid_at: str | None
    compared: bool = False  # re-opened and changed facts: compared with the version before
    invalid_at_before: str | None = None  # ...which ended here (None: it was open)

    def to_json(self) -> dict[str, Any]:
        data = Record.to_json(self)  # not super(): slots=True makes another class than the one super() names
        del data["compared"]
        if not self.compared:
            del data["invalid_at_before"]
        return data


@record
class Effects(Record):
    """What a change does to the current facts of the slots it touches: in a plan made by
    ``memctl.effects``, each kind is read from the plan's scratch database as it is read."""

    removed: Sequence[FactChange] = field(default_factory=list)
    reopened: Sequence[FactChange] = field(default_factory=list)
    changed: Sequence[FactChange] = field(default_factory=list)
    added: Sequence[FactChange] = field(default_factory=list)

    def counts(self) -> dict[str, int]:
        return {name: len(getattr(self, name)) for name in EFFECTS}

    def any(self) -> bool:
        return any(getattr(self, name) for name in EFFECTS)


EFFECTS = ("removed", "reopened", "changed", "added")

UndoKind = Literal["episodes", "repair", "retry", "undo", "resolve", "merge", "split"]


@record
class UndoPlan(Record):
    """What an undo removes and puts back; applied, or a preview.

    ``kind`` says what is undone: episodes (with the readings their ingest revised), or one
    repair, retry, undo or resolve operation (``target``).
    """

    kind: UndoKind
    target: str | None = None
    episodes: list[str] = field(default_factory=list)
    revisions_reverted: list[str] = field(default_factory=list)
    already_undone: list[str] = field(default_factory=list)
    changed_since: list[str] = field(default_factory=list)  # episodes left as they are, changed since
    purge: bool = False
    effects: Effects = field(default_factory=Effects)
    applied: bool = False
    operation_id: str | None = None
    # Why a purge's old pages are still in the file (a reader held an older snapshot): they
    # are erased when the last connection to the database closes.
    unerased: str | None = None
    summaries: SummaryCounts | None = None  # what the summary gate did after it
    # Batch API jobs that no episode waited for any more after the undo, cancelled so that
    # they cost nothing more; and why some could not be cancelled yet (the next collect does).
    batches_cancelled: list[str] = field(default_factory=list)
    batches_to_cancel: str | None = None

    def __getitem__(self, key: str) -> Any:
        if key in EFFECTS:
            return getattr(self.effects, key)
        if key == self.kind != "episodes":  # the JSON names the operation undone by its kind
            return self.target
        return super().__getitem__(key)

    def to_json(self) -> dict[str, Any]:
        head: dict[str, Any] = {"episodes": self.episodes}
        if self.kind == "episodes":
            head.update(revisions_reverted=self.revisions_reverted, already_undone=self.already_undone)
        else:
            head.update({self.kind: self.target}, already_undone=self.already_undone, changed_since=self.changed_since)
        unerased = {"unerased": self.unerased} if self.unerased else {}
        summaries = {"summaries": self.summaries.to_json()} if self.summaries is not None else {}
        batches = {name: getattr(self, name) for name in ("batches_cancelled", "batches_to_cancel")
                   if getattr(self, name)}
        return {**head, "purge": self.purge, **self.effects.to_json(), "applied": self.applied,
                "operation_id": self.operation_id, **unerased, **summaries, **batches}


class WithEffects(Record):
    """A result that carries the ``Effects`` of its change: their keys read, and print in
    its JSON, as the result's own (``result["added"]``), as an undo plan's do."""

    effects: Effects

    def __getitem__(self, key: str) -> Any:
        return getattr(self.effects, key) if key in EFFECTS else super().__getitem__(key)

    def flattened(self, data: dict[str, Any], *, last: tuple[str, ...] = ()) -> dict[str, Any]:
        """``data`` (this record's JSON) with the effects' keys in place of ``effects``, then the keys in ``last``."""
        return {**{k: v for k, v in data.items() if k != "effects" and k not in last}, **data["effects"],
                **{k: data[k] for k in last}}


@record
class RetryResult(WithEffects):
    episodes: list[str]  # those whose assertions were swapped
    extractor: str
    assertions: int
    failures: int
    model_calls: int
    cache_hits: int
    guard_changes: int
    effects: Effects = field(default_factory=Effects)
    failed: list[str] = field(default_factory=list)  # extraction failed: left exactly as they were
    first_failure: str | None = None  # why the first of them failed
    dropped: list[str] = field(default_factory=list)  # "episode: assertion: why", wrong also after a retry
    applied: bool = False
    operation_id: str | None = None
    summaries: SummaryCounts | None = None  # what the summary gate did after it
    collected: Collected | None = None  # the Batch API's results taken first, when batches were open
    awaiting_batch: int = 0  # with --failed: episodes left out, their replies come from an open batch
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float | None = None  # what the tokens used cost, when the model's price is known

    _OMITTED_WHEN_NONE = frozenset({"summaries", "collected", "cost_usd"})

    def to_json(self) -> dict[str, Any]:
        return self.flattened(super().to_json(), last=("applied", "operation_id"))


@record
class SummaryCounts(Record):
    """What a gate pass did with the summaries of the entities whose facts changed
    (``memctl.summarize``): refreshed and skipped, by reason, and the model calls made."""

    model: str | None = None  # the model that writes them; None: no model, refreshes are owed
    refreshed: dict[str, int] = field(default_factory=dict)  # new | invalidated | burst | stale
    # unchanged (its fact set had a summary: found again) | fresh | burst (waiting) | no_model |
    # unavailable | failed (owed) | no_facts | changed_meanwhile
    skipped: dict[str, int] = field(default_factory=dict)
    calls: int = 0
    unavailable: str | None = None  # why the model could not be reached: its refreshes are owed
    sessions_written: int = 0  # session sentences written
    sessions_skipped: dict[str, int] = field(default_factory=dict)  # unchanged | live | no_model | unavailable | failed

    _OMITTED_WHEN_NONE = frozenset({"unavailable"})

    def refresh(self, reason: str) -> None:
        self.refreshed[reason] = self.refreshed.get(reason, 0) + 1

    def skip(self, reason: str, n: int = 1) -> None:
        self.skipped[reason] = self.skipped.get(reason, 0) + n

    def skip_session(self, reason: str, n: int = 1) -> None:
        self.sessions_skipped[reason] = self.sessions_skipped.get(reason, 0) + n

    def any(self) -> bool:
        return bool(self.refreshed or self.skipped or self.sessions_written or self.sessions_skipped)


@dataclass(repr=False, eq=False, kw_only=True)
class PlannedChange(WithEffects):
    """A change made in one transaction and journaled as one operation, previewed unless
    ``applied`` (resolve, merge, split): what it does to the current facts, its operation,
    and what the summary gate did after it."""

    effects: Effects = field(default_factory=Effects)
    applied: bool = False
    operation_id: str | None = None
    summaries: SummaryCounts | None = None

    _OMITTED_WHEN_NONE = frozenset({"summaries"})

    def to_json(self) -> dict[str, Any]:
        return self.flattened(super().to_json(), last=("applied", "operation_id"))


@record
class Settlement(PlannedChange):
    """What ``memctl resolve`` does to a conflict: the value kept, the statements of the
    others taken out (``dropped``: each with its value, episode and sentence), and what
    that does to the current facts."""

    conflict_id: str
    keep: str
    dropped: list[dict[str, Any]] = field(default_factory=list)


@record
class Copied(Record):
    """What ``memctl copy`` moved: the rows of each table, from one store into another."""

    source: str
    target: str
    rows: dict[str, int] = field(default_factory=dict)


@record
class Merged(PlannedChange):
    """What ``memctl merge`` or ``memctl split`` does (``memctl.merging``): the entity kept
    (``into``), the one merged into it or the name split off it (``merged``), how many
    statements now name another entity, and what that does to the current facts."""

    kind: str  # merge | split
    into: str
    merged: str
    assertions: int = 0


@record
class MemoryAdded(WithEffects):
    """One episode ``add_memory`` wrote: where and when it was filed, what was extracted
    from it, and what that did to the current facts (``effects``, as an undo plan says it).

    ``reference_time_source`` is ``call`` when no time was given: the episode was
    written live and takes the time of the call. ``extraction`` is ``structured`` when
    the facts came with it, else done, failed, or ``pending`` when the model could not
    be reached (``llm_unavailable`` says why; ``memctl retry --failed`` extracts it later).
    ``extraction_error`` says why it failed, or for a done one which assertions were
    dropped as wrong (``dropped`` lists them).
    """

    _OMITTED_WHEN_NONE = frozenset({"extraction_error", "llm_unavailable", "embeddings_unavailable", "summaries"})

    episode_id: str
    source: str
    position: int
    reference_time: str
    reference_time_source: str
    extraction: str
    extractor: str | None
    already_present: bool  # the same text at the same place was stored before: nothing changed
    assertions: list[StoredAssertion] = field(default_factory=list)
    effects: Effects = field(default_factory=Effects)
    guard_changes: int = 0  # invented dates the date guard replaced or dropped
    redactions: int = 0  # secrets replaced before it was stored (content, source, facts)
    redacted: dict[str, int] = field(default_factory=dict)  # the same, by kind
    operation_id: str | None = None
    extraction_error: str | None = None
    dropped: list[str] = field(default_factory=list)  # "assertion: why", wrong also after a retry
    llm_unavailable: str | None = None  # why the model could not be used: the episode waits as pending
    embeddings_unavailable: str | None = None  # why no vectors were made; `memctl embed` makes them later
    summaries: SummaryCounts | None = None  # what the summary gate did after it

    def to_json(self) -> dict[str, Any]:
        return self.flattened(super().to_json())


@record
class DateFix(Record):
    """One date a repair changes."""

    assertion_id: int
    column: str  # valid_at | invalid_at
    old: str
    new: str | None
    fact: str
    reference_time: str


@record
class RepairResult(Record):
    valid_at_fixed: int
    invalid_at_cleared: int
    skipped: dict[str, int]
    applied: bool = False
    operation_id: str | None = None
    sample: list[DateFix] = field(default_factory=list)  # the first changes, for a person to check
    summaries: SummaryCounts | None = None  # what the summary gate did after it

    _OMITTED_WHEN_NONE = frozenset({"summaries"})


@record
class RebuildResult(Record):
    slots: int
    facts_created: int
    facts_expired: int
    operation_id: str | None = None


@record
class IngestReport(Record):
    """What an ingest read, skipped, stored and extracted."""

    files: int = 0
    formats: dict[str, int] = field(default_factory=dict)  # files read, by format
    unrecognised: list[str] = field(default_factory=list)  # files that are no log memctl reads
    empty: list[str] = field(default_factory=list)  # files with nothing in them (a session that never started)
    episodes: int = 0
    added: int = 0
    reactivated: int = 0
    revised: int = 0  # stored before, read again with more content (a session still being written)
    already_present: int = 0
    assertions: int = 0
    facts_created: int = 0
    facts_expired: int = 0
    skipped: dict[str, int] = field(default_factory=dict)  # records that gave no episode, by reason
    malformed: list[str] = field(default_factory=list)  # "file:line: reason", bad input skipped
    refused: list[str] = field(default_factory=list)  # files (or their turns) left out whole, and why
    notices: list[str] = field(default_factory=list)  # "file: what was done", nothing lost (a file read as Latin-1)
    redactions: int = 0  # secrets replaced before anything was stored
    redacted: dict[str, int] = field(default_factory=dict)  # the same, by kind (password, openai_key, jwt...)
    left_out: dict[str, int] = field(default_factory=dict)  # tool calls, thinking, images... counted
    cut: int = 0  # episodes whose text was cut to memctl.sources.MAX_EPISODE_CHARS
    aider_zone: str | None = None  # the zone Aider's naive local times were read in
    extractor: str | None = None  # what extracted assertions from episode text
    extraction_calls: int = 0  # model calls, retries included
    cache_hits: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    extraction_failures: int = 0
    first_failure: str | None = None  # why the first failed extraction failed
    # Of the failures, longer readings of stored episodes: the stored reading and its
    # assertions stay, and the next ingest extracts the new one again.
    kept_readings: int = 0
    still_failed: list[str] = field(default_factory=list)  # already stored, their extraction failed before
    guard_changes: int = 0  # invented dates the date guard replaced or dropped
    dropped: list[str] = field(default_factory=list)  # "episode: assertion: why", wrong also after a retry
    extracted_pending: int = 0  # episodes stored earlier as pending, extracted by this run
    llm_unavailable: str | None = None  # why the LLM could not be used; the rest wait as pending
    embedded: int = 0  # texts given vectors by the embeddings model
    embeddings_unavailable: str | None = None  # why no vectors were made; the next run makes them
    operation_id: str | None = None
    time_range: list[str | None] = field(default_factory=lambda: [None, None])
    summaries: SummaryCounts | None = None  # what the summary gate did after it (memctl.summarize)
    batch: Submitted | None = None  # with --batch: the extraction sent to the Batch API
    collected: Collected | None = None  # the Batch API's results taken first, when batches were open
    cost_usd: float | None = None  # what the tokens used cost, when the model's price is known

    @property
    def partial(self) -> bool:
        """Something was refused, unreadable or not extracted, and the rest was kept: exit code 1."""
        return bool(self.refused or self.malformed or self.llm_unavailable or self.embeddings_unavailable
                    or self.extraction_failures or self.still_failed
                    or (self.summaries is not None and self.summaries.unavailable)
                    or (self.batch is not None and self.batch.unsent)
                    or (self.collected is not None and self.collected.errors))

    def to_json(self) -> dict[str, Any]:
        return {**Record.to_json(self), "partial": self.partial}

    def count(self, episode: Episode) -> None:
        self.episodes += 1
        self.redactions += episode.redactions
        for kind, number in episode.redacted.items():
            self.redacted[kind] = self.redacted.get(kind, 0) + number
        for kind, number in episode.left_out.items():
            self.left_out[kind] = self.left_out.get(kind, 0) + number
        self.cut += bool(episode.cut_chars)
        low, high = self.time_range
        self.time_range = [min(low or episode.reference_time, episode.reference_time),
                           max(high or episode.reference_time, episode.reference_time)]

    def skip(self, path: Path, item: Skipped) -> None:
        """A record that gave no episode; bad input among them is listed for the user
        whole, and counted by its kind (one count for a thousand bad lines of one file)."""
        kind = _kind_of(item.reason) if item.malformed else item.reason
        self.skipped[kind] = self.skipped.get(kind, 0) + 1
        if item.malformed:
            self.malformed.append(f"{path}:{item.position}: {item.reason}")


def _kind_of(reason: str) -> str:
    """What a malformed record's reason says before its particulars: ``bad JSON: line is
    not valid utf-8: 'utf-8' codec can't decode byte 0x82 …`` is ``bad JSON``, and
    ``unknown role 'bot'`` is ``unknown role``."""
    head = reason.split(": ", 1)[0]
    return " ".join(re.sub(r"'[^']*'|\"[^\"]*\"|\([^)]*\)|\[[^\]]*\]", " ", head).split()) or "malformed"


@record
class Submitted(Record):
    """What a submission to the Batch API sent (``memctl.batch.submit``)."""

    batches: list[str] = field(default_factory=list)  # memctl's ids of the batches made
    requests: int = 0  # one per distinct text and time
    episodes: int = 0  # episodes whose requests went out
    cached: int = 0  # episodes whose reply was cached already: extracted at once from the cache, no call
    awaiting: int = 0  # episodes already waiting on an open batch: not sent again
    estimate: Any = None  # memctl.extract.cost.Estimate of the requests sent, at the batch rate
    unsent: str | None = None  # why a batch recorded is not created yet: the next collect sends it
    collected: Collected | None = None  # what the submission collected first, when batches were open
    extracted: RetryResult | None = None  # the cached episodes, extracted with no call

    _OMITTED_WHEN_NONE = frozenset({"collected", "extracted"})


@record
class Collected(Record):
    """What a collect of the Batch API's results did (``memctl.batch.collect``)."""

    polled: int = 0  # open batches asked about
    finished: list[str] = field(default_factory=list)  # batches whose results were taken now
    open: list[str] = field(default_factory=list)  # batches still running
    answered: int = 0  # episodes whose replies are now cached
    corrections_sent: int = 0  # episodes whose replies went back in a correction batch
    corrected_live: int = 0  # ... or were corrected by a live call
    failed: int = 0  # episodes whose request was refused, or whose reply could not be read twice
    first_failure: str | None = None  # "episode: why" of the first of them
    unanswered: int = 0  # episodes a batch did not answer: pending, for 'retry --failed --batch'
    cancelled: list[str] = field(default_factory=list)  # batches cancelled: no episode needed them any more
    submitted: list[str] = field(default_factory=list)  # batches sent now (resumed, or of corrections)
    input_tokens: int = 0  # what the finished batches and live corrections used
    output_tokens: int = 0
    cost_usd: float | None = None  # at the batch rate, when the models' prices are known
    errors: list[str] = field(default_factory=list)  # "batch: why" of a batch the API failed or lost
    extracted: list[RetryResult] = field(default_factory=list)  # the answered episodes, from the cache, per model
