"""What the library's reads return: typed records, one class per shape.

A read's answer (a fact, a recall, an episode, the journal) is a snapshot: once made it
never changes, so each is a ``NamedTuple``. What a change reports while it runs (an
ingest's counts, an undo's plan) is filled in as it goes: those are the dataclasses of
``memctl.reports``. Keeping the two apart also keeps ``memctl recall`` fast: dataclasses
import ``inspect`` and compile each class's ``__init__``, 15 ms of a 60 ms process.

The CLI prints records as tables or, with ``--json``, as ``to_json()``; the MCP server
returns ``to_json()`` too, so both speak the same keys. Each record also reads by key
(``fact["valid_at"]``), as the plain dicts of memctl 0.1 did, so scripts written against
those keep working.
"""

from __future__ import annotations

from contextvars import ContextVar
from typing import Any, ClassVar, Literal, NamedTuple, Protocol

# How a turn's stored text is laid out: "User: …", a blank line, "Assistant: …"
# (``sources.render`` writes it; a session's listing reads its user part: ``search.what_happened``).
USER_PREFIX, REPLY_PREFIX = "User: ", "Assistant: "


class Answer(Protocol):
    """Anything the library returns: it says itself as JSON."""

    def to_json(self) -> dict[str, Any]: ...


_SCALARS = frozenset({str, int, float, bool})
# Set while ``memctl --json`` writes a result: a long list in it (a plan's changes) is then
# left as it is by to_json(), and written as it is read (``invocation.print_json``).
STREAMING_JSON: ContextVar[bool] = ContextVar("streaming_json", default=False)


def as_json(value: Any) -> Any:
    """``value`` with every record in it (in lists and dicts too) as its JSON."""
    if value is None or value.__class__ in _SCALARS:  # most values: asked first, as it costs least
        return value
    if hasattr(value, "to_json"):
        return value.to_json()
    if isinstance(value, list | tuple):
        return [as_json(item) for item in value]
    if isinstance(value, dict):
        return {key: as_json(item) for key, item in value.items()}
    return value


class ReadRecord:
    """What every read record does besides being a tuple of its fields: say itself as
    JSON, and read a field by name as well as by position.

    Each record is this and a NamedTuple of its fields (``_FactFields``...): a NamedTuple
    takes no other base, a subclass of it can.
    """

    __slots__ = ()
    _OMITTED_WHEN_NONE: ClassVar[frozenset[str]] = frozenset()  # left out of the JSON when None

    def to_json(self: Any) -> dict[str, Any]:
        data = {name: as_json(value) for name, value in zip(self._fields, self, strict=True)
                if not (value is None and name in self._OMITTED_WHEN_NONE)}
        # A recall's mixed list says first what each result is; the field itself comes
        # last, as a NamedTuple puts every field with a default after those without.
        return {"kind": data.pop("kind"), **data} if self._fields[-1] == "kind" and "kind" in data else data

    def __getitem__(self: Any, key: Any) -> Any:
        if not isinstance(key, str):
            return tuple.__getitem__(self, key)
        if key not in self._fields:  # a field, not a tuple's method ("count", "index")
            raise KeyError(key)
        return getattr(self, key)


FactStatus = Literal["current", "ended", "superseded"]


class _FactFields(NamedTuple):
    fact_id: int
    fact: str
    subject: str
    predicate: str
    object: str
    predicate_key: str | None
    valid_at: str | None
    invalid_at: str | None
    end_reason: str | None
    created_at: str
    expired_at: str | None
    cardinality: str
    episodes: list[str] | None = None
    status: FactStatus = "current"
    # Set by recall when the fact is in an open conflict (memctl.conflicts): the other
    # values stated over its time, each with its statement, episode and dates
    conflicts: list[dict[str, Any]] | None = None
    score: float | None = None
    kind: Literal["fact"] | None = None  # set in recall's mixed lists


class Fact(ReadRecord, _FactFields):
    """One version of a derived fact, with names as shown.

    ``episodes`` (the supporting episodes) is given by recall, history and facts,
    ``kind`` and ``score`` by recall; ``predicate_key`` only by ``show``, which lists what
    an episode supports.
    """

    __slots__ = ()
    _OMITTED_WHEN_NONE = frozenset({"kind", "predicate_key", "episodes", "score", "conflicts"})


class _EpisodeHitFields(NamedTuple):
    episode_id: str
    source: str
    position: int
    format: str
    reference_time: str
    snippet: str  # the lines that matched, under their roles, hits marked **like this** (memctl.snippets)
    chars: int  # the whole text's length: `memctl show ID` (MCP get_episode) gives it, as recall's full does
    text: str | None = None  # the whole text, when asked for (full)
    # What it stated that a later value replaced by the asking time: the facts that did
    # (id, sentence, since when), so that an agent does not take an old statement as current
    superseded_by: list[dict[str, Any]] | None = None
    conversation: str | None = None  # in a source of many conversations (an export), its own
    score: float = 0.0
    kind: Literal["episode"] = "episode"


class EpisodeHit(ReadRecord, _EpisodeHitFields):
    """An episode recall found: what was said, where and when, as a snippet of its text
    (the whole of it with ``full``)."""

    __slots__ = ()
    _OMITTED_WHEN_NONE = frozenset({"text", "superseded_by", "conversation"})


class _SessionHitFields(NamedTuple):
    session: str  # its key: the source, or "source#conversation" in an export
    source: str
    conversation: str | None
    title: str  # its first request
    first_at: str  # its span, as said by the asking time
    last_at: str
    episodes: int  # its turns in all, as said by the asking time
    participants: list[str]
    turns: list[EpisodeHit]  # the turns of it that were found, best first
    summary: str | None = None  # a model's sentence about it, when one was written for its turns
    score: float = 0.0
    kind: Literal["session"] = "session"


class SessionHit(ReadRecord, _SessionHitFields):
    """A conversation recall found in more than one of its turns: it comes as one result,
    with those turns (each a snippet), its title, span and size, rather than as turns
    apart (``recall._in_sessions``)."""

    __slots__ = ()
    _OMITTED_WHEN_NONE = frozenset({"summary", "conversation"})


class _RecallResultFields(NamedTuple):
    query: str
    as_of: str
    known_at: str | None
    results: list[Fact | EpisodeHit | EntitySummary | SessionHit]
    unavailable: list[str] | None = None  # rankers that could not answer (an embeddings endpoint down)
    since: str | None = None  # the window's start: given, or read from the question
    until: str | None = None  # ...and its end
    time_words: str | None = None  # the question's words the window was read from ("in mid 2023")
    # True: the question asked what happened in the window, and these are its changes and
    # sessions, latest first, not matches of its words
    what_happened: bool | None = None


class RecallResult(ReadRecord, _RecallResultFields):
    """What recall found. As JSON, each episode names its session (its ``source``, and in
    an export its ``conversation``) by its place in ``sessions``: ten turns of one long session repeated its path ten times, a
    fifth of what an agent read per recall. Its ``format`` and ``position`` are left to
    `memctl show`, and its ``score`` to the library: the order says the rank."""

    __slots__ = ()
    _OMITTED_WHEN_NONE = frozenset({"unavailable", "since", "until", "time_words", "what_happened"})

    def to_json(self) -> dict[str, Any]:
        data = super().to_json()
        sessions: dict[tuple[str, str | None], int] = {}

        def compact(turn: dict[str, Any]) -> tuple[str, str | None]:
            # The session's format, the turn's place in it and the fusion score are for
            # the library and the table; an agent reads the order (and `memctl show`).
            for field in ("kind", "format", "position", "score"):
                turn.pop(field, None)
            return turn.pop("source"), turn.pop("conversation", None)

        for n, item in enumerate(data["results"]):
            if item["kind"] == "episode":
                episode_id = item.pop("episode_id")
                session = sessions.setdefault(compact(item), len(sessions))
                data["results"][n] = {"kind": "episode", "episode_id": episode_id, "session": session, **item}
            elif item["kind"] == "session":
                for turn in item["turns"]:
                    compact(turn)
                del item["kind"], item["score"], item["session"]
                session = sessions.setdefault((item.pop("source"), item.pop("conversation", None)), len(sessions))
                data["results"][n] = {"kind": "session", "session": session, **item}
        data["sessions"] = [{"source": source, **({"conversation": conversation} if conversation else {})}
                            for source, conversation in sessions]
        return data


class _SessionListingFields(NamedTuple):
    session: str  # its key: the source, and in a source of many conversations (an export) "source#conversation"
    source: str
    conversation: str | None  # in an export, the conversation's id (else its place in the file)
    format: str
    title: str  # its first substantive request (a greeting says nothing of it), its first line cut short
    first_at: str  # when its first and last turns held now were said
    last_at: str
    episodes: int
    participants: list[str]  # who speaks in it: the user and the tool that answered (by its format)
    # One sentence a model wrote about the whole session (memctl.summarize), while it holds
    # the turns it was written from; None until one is
    summary: str | None = None
    summary_by: str | None = None


class SessionListing(ReadRecord, _SessionListingFields):
    """One session (a session file, a conversation of an export) as ``memctl sessions`` lists it."""

    __slots__ = ()
    _OMITTED_WHEN_NONE = frozenset({"summary_by"})


class _EntitySummaryFields(NamedTuple):
    entity: str
    as_of: str
    known_at: str | None
    summary: str  # what holds, since when, what it replaced, what ended
    fact_ids: list[int]  # the facts it was built from
    # "facts": built from them as asked, with no model (memctl.summary); else the model
    # that wrote it from the same facts (memctl.summarize), at written_at
    written_by: str = "facts"
    written_at: str | None = None
    score: float | None = None  # set in recall's lists
    kind: Literal["summary"] | None = None  # set in recall's lists


class EntitySummary(ReadRecord, _EntitySummaryFields):
    """What holds about an entity, in a few lines: ``memctl summary``, and the first of
    recall's results about an entity a question names."""

    __slots__ = ()
    _OMITTED_WHEN_NONE = frozenset({"written_at", "score", "kind"})


class _ConflictFields(NamedTuple):
    conflict_id: str  # what `memctl resolve` takes
    subject: str
    predicate: str
    since: str  # the valid time over which its statements' claims meet
    until: str
    status: Literal["open", "closed"]  # closed: a later statement settled it (closed_by)
    holds: str | None  # the value the slot holds at the asking time: what recall answers
    # Each value with the statements that give it: episode, sentence, dates, when said
    values: list[dict[str, Any]]
    closed_by: dict[str, Any] | None = None


class Conflict(ReadRecord, _ConflictFields):
    """Statements about a one-valued slot that cannot all be true (``memctl.conflicts``)."""

    __slots__ = ()
    _OMITTED_WHEN_NONE = frozenset({"closed_by"})


class _SlotFields(NamedTuple):
    predicate: str
    cardinality: str
    facts: list[Fact]


class Slot(ReadRecord, _SlotFields):
    """One (subject, predicate) of an entity and its facts over time."""

    __slots__ = ()


class _HistoryFields(NamedTuple):
    entity: str
    slots: list[Slot]


class History(ReadRecord, _HistoryFields):
    __slots__ = ()


class _EpisodeSummaryFields(NamedTuple):
    id: str
    source: str
    position: int
    format: str
    reference_time: str
    reference_time_source: str
    status: str
    extraction: str  # done | pending (the model was down) | failed | structured (came with its facts)
    title: str  # the first line of what the user said (or of its text), cut short


class EpisodeSummary(ReadRecord, _EpisodeSummaryFields):
    __slots__ = ()


class _StoredAssertionFields(NamedTuple):
    id: int
    subject: str
    predicate: str
    object: str
    fact: str
    valid_at: str | None
    valid_at_evidence: str | None
    valid_at_precision: str | None
    invalid_at: str | None
    invalid_at_evidence: str | None
    invalid_at_precision: str | None
    cardinality: str
    extractor: str
    extracted_at: str
    created_at: str
    expired_at: str | None


class StoredAssertion(ReadRecord, _StoredAssertionFields):
    """One assertion as stored, active or not (``expired_at`` says since when not)."""

    __slots__ = ()


class _EpisodeDetailFields(NamedTuple):
    id: str
    source: str
    position: int
    source_id: str | None
    format: str
    content: str
    content_hash: str
    reference_time: str
    reference_time_source: str
    status: str
    created_at: str
    operation_id: str | None
    extraction: str
    extraction_error: str | None  # why extraction failed, or (done) which assertions it dropped as wrong
    assertions: list[StoredAssertion]
    facts: list[Fact]


class EpisodeDetail(ReadRecord, _EpisodeDetailFields):
    """One episode whole: its stored row, its assertions and the current facts it supports."""

    __slots__ = ()


class _StatsFields(NamedTuple):
    episodes: int
    episodes_undone: int
    # Active episodes whose text waits for a model: pending (it was down) or failed;
    # `memctl episodes --extraction pending` lists them, `memctl retry --failed` extracts them
    episodes_awaiting_extraction: int
    assertions: int
    entities: int
    facts_valid_now: int
    facts_current_versions: int
    fact_versions: int
    # Slots whose facts a long ingest or undo has yet to derive from what it committed (0
    # once it is done; store/underived.py).
    slots_awaiting_facts: int
    operations: int
    reference_time_range: list[str | None]


class Stats(ReadRecord, _StatsFields):
    __slots__ = ()


class _BackupFields(NamedTuple):
    path: str
    bytes: int


class Backup(ReadRecord, _BackupFields):
    """A copy of the memory, as ``memctl backup`` made it."""

    __slots__ = ()


class _OperationFields(NamedTuple):
    id: str
    kind: str
    at: str
    finished_at: str | None
    status: str
    command: dict[str, Any]
    counts: dict[str, Any]


class Operation(ReadRecord, _OperationFields):
    """One row of the operation journal: an ingest, undo, retry, repair or rebuild."""

    __slots__ = ()


class _EntityFields(NamedTuple):
    entity: str  # as shown: its earliest name
    # Each name its statements wrote it as: {"name", "mentions", "resolved_by"}; resolved_by
    # says how a name that is not the entity's own came to it (article, possessive,
    # generic_noun, alias, merge), None for its own
    names: list[dict[str, Any]]
    facts: int  # current facts about it
    merged: list[str]  # entities merged into it (memctl merge)


class Entity(ReadRecord, _EntityFields):
    """One entity with the names it goes by (``memctl entities``)."""

    __slots__ = ()


class _SimilarFields(NamedTuple):
    first: str
    second: str
    reasons: list[str]  # names alike, one inside the other, the same value in a slot
    score: float


class SimilarEntities(ReadRecord, _SimilarFields):
    """Two entities that may be one thing under two names (``memctl entities --similar``):
    a candidate for ``memctl merge``, never merged by memctl itself."""

    __slots__ = ()
