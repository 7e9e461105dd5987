"""Derived facts: recomputing slots from their active assertions.

Facts are never written by hand. After any change to assertions, the touched slots are
resolved again (``memctl.resolve``) and compared with their current fact versions: an
unchanged fact keeps its row; a changed or vanished one is expired (transaction time)
and the new shape inserted. The transaction-time history is therefore append-only.

A change whose assertions are known (``SlotChange``: ingest, undo) is resolved only
over the stretch of time it can reach, not over the whole slot: the stored facts say
what state the timeline is in at any instant (``_state_before``, ``_Timeline``), so
the sweep starts at the last instant before the change whose state is certain, and
stops at the first instant after it where the new state meets the stored one. From
there on both timelines resolve alike. A backfill that restates a hot slot in every
batch therefore costs each batch what it adds, not the slot's whole history.
"""

from __future__ import annotations

from bisect import bisect_right
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from memctl.resolve import ResolvedFact, SlotAssertion, Sweep, resolve_slot, slot_cardinality
from memctl.store import Slot, dialect, in_chunks, summaries, underived
from memctl.store.episode_index import index_facts
from memctl.store.reads import entity_names

if TYPE_CHECKING:
    import sqlite3

    from memctl.store import Database

Value = tuple[int, str, int]  # (subject_id, predicate_key, object_id)

FACT_COLUMNS = (
    "id, subject_id, predicate, predicate_key, object_id, fact, cardinality, "
    "valid_at, invalid_at, end_reason, created_at, expired_at"
)
_FACT_SELECT = ", ".join("f." + c.strip() for c in FACT_COLUMNS.split(","))
_ASSERTION_SELECT = ("a.id, a.episode_id, a.ordinal, a.reference_time, a.object_id, a.valid_at, a.invalid_at, "
                     "a.cardinality")
_INSTANT = "a.instant"  # coalesce(valid_at, invalid_at), as the timeline indexes have it (migration 0011)


@dataclass
class SlotChanges:
    """Fact rows expired and inserted by one recomputation, for reports and plans."""

    expired: list[dict] = field(default_factory=list)
    inserted: list[dict] = field(default_factory=list)


@dataclass
class SlotChange:
    """Assertions added to or taken out of one slot: the instants they sit at, by value,
    and whether any of them said the slot is many-valued."""

    instants: dict[int, set[str]] = field(default_factory=dict)  # object id -> instants
    added_many: bool = False
    removed_many: bool = False

    def merge(self, other: SlotChange) -> None:
        for object_id, instants in other.instants.items():
            self.instants.setdefault(object_id, set()).update(instants)
        self.added_many |= other.added_many
        self.removed_many |= other.removed_many


def note_change(changes: dict[Slot, SlotChange], slot: Slot, instant: str, object_id: int, cardinality: str, *,
                added: bool) -> None:
    """Record one assertion added (or taken out) in ``changes``."""
    change = changes.setdefault(slot, SlotChange())
    change.instants.setdefault(object_id, set()).add(instant)
    if cardinality == "many":
        if added:
            change.added_many = True
        else:
            change.removed_many = True


Part = tuple[int, str, int | None]  # a slot, or (object_id set) one value of a many-valued slot


@dataclass
class _Outcome:
    """One part resolved again: the stored current facts the change could reach (``old``),
    what they are now (``new``), and the active assertions that were resolved (``scope``).

    A part resolved over stretches of time has facts at their edges that go on past what
    was read: each ``claims`` the support of a stored fact (its active assertions whose
    instants lie strictly between two bounds, None: unbounded) that it continues there.
    """

    slot: Slot
    cardinality: str
    old: list[dict]
    new: list[ResolvedFact]
    scope: dict[int, str]  # assertion id -> episode id
    claims: list[tuple[ResolvedFact, int, str | None, str | None]] = field(default_factory=list)
    # The words of a fact whose first assertion was not read (it began before the stretch): by id().
    words: dict[int, tuple[str, str]] = field(default_factory=dict)


def _touched_table(db: Database, parts: Iterable[Part], rows: Iterable[tuple] = ()) -> None:
    """The parts (numbered by position) in a temp table, for queries to join with.

    Queries join it with CROSS JOIN, which tells SQLite to loop over these few parts
    and probe the big tables by index, instead of scanning them. In sorted order the
    probes walk the index forwards: twice as fast as random order over 400k rows.
    ``rows``: each part's ``lo`` and ``hi`` (the stretch of time a query reads), if any.
    """
    db.execute("CREATE TEMP TABLE IF NOT EXISTS touched_parts "
               "(n INTEGER PRIMARY KEY, subject_id INTEGER, predicate_key TEXT, object_id INTEGER, lo TEXT, hi TEXT)")
    db.execute("DELETE FROM temp.touched_parts")
    extra = list(rows) or None
    db.conn.executemany("INSERT INTO temp.touched_parts VALUES (?, ?, ?, ?, ?, ?)",
                        [(n, *part, *(extra[n] if extra else (None, None))) for n, part in enumerate(parts)])


def _sorted_parts(slots: Iterable[Slot], values: Iterable[Value]) -> list[Part]:
    slots = set(slots)
    return sorted([*((s, p, None) for s, p in slots), *(value for value in values if value[:2] not in slots)],
                  key=lambda part: (part[0], part[1], -1 if part[2] is None else part[2]))


def _in_part(alias: str) -> str:
    return (f"{alias}.subject_id = t.subject_id AND {alias}.predicate_key = t.predicate_key "
            f"AND (t.object_id IS NULL OR {alias}.object_id = t.object_id)")


def _fact_rows(cursor) -> list[tuple[int, dict]]:
    columns = [d[0] for d in cursor.description][1:]
    return [(n, dict(zip(columns, row))) for n, *row in cursor]


def fact_shape(fact: Mapping[str, Any] | sqlite3.Row) -> tuple:
    """What makes two versions the same fact; provenance is kept in sync separately."""
    return (
        fact["object_id"], fact["valid_at"], fact["invalid_at"], fact["end_reason"],
        fact["fact"], fact["predicate"], fact["cardinality"],
    )


def recompute_slots(db: Database, slots: Iterable[Slot], at: str, values: Iterable[Value] = (),
                    changed: dict[Slot, SlotChange] | None = None,
                    taken_out_since: dict[Slot, str] | None = None) -> SlotChanges:
    """Bring the current facts of ``slots`` and ``changed`` in line with their active assertions.

    ``slots`` are resolved whole. ``values`` narrows further: (subject_id, predicate_key,
    object_id) of a many-valued slot whose cardinality did not change, where only that
    value's assertions did; values never supersede each other there, so only that
    value's facts can change. ``changed`` slots are resolved over the stretch of time
    their change reaches, unless their cardinality changes with it, or an operation still
    owes the slot facts (``store.underived``). The assertions a change took out expired at
    ``at``, or, for a slot in ``taken_out_since``, from that time on (an operation that
    derives for many batches at once).
    """
    whole = set(slots)
    values = set(values)
    # A slot whose facts a long ingest or undo in progress (or killed) still owes is resolved whole.
    whole |= underived.claim(db, whole | set(changed or {}) | {value[:2] for value in values})
    windows: list[tuple[Part, list[str]]] = []
    changed = {slot: change for slot, change in (changed or {}).items() if slot not in whole}
    stored = stored_cardinalities(db, list(changed))
    for slot, change in changed.items():
        cardinality = stored.get(slot)
        if (cardinality is None or (cardinality == "one" and change.added_many)
                or any(value[:2] == slot for value in values)
                or (cardinality == "many" and change.removed_many and not _says_many(db, slot))):
            whole.add(slot)  # no fact to start from, or every fact changes cardinality
        elif cardinality == "one":
            windows.append(((*slot, None), sorted(set().union(*change.instants.values()))))
        else:
            windows += [((*slot, object_id), sorted(instants)) for object_id, instants in sorted(change.instants.items())]
    outcomes = _resolve_whole(db, _sorted_parts(whole, values)) + _resolve_windows(db, windows, at,
                                                                                     taken_out_since or {})
    return _write(db, outcomes, at)


def stored_cardinalities(db: Database, slots: list[Slot]) -> dict[Slot, str]:
    """The cardinality of each slot's current facts (a slot without any has none)."""
    if not slots:
        return {}
    _touched_table(db, [(*slot, None) for slot in slots])
    return {slots[n]: cardinality for n, cardinality in db.execute(
        "SELECT t.n, (SELECT cardinality FROM facts f WHERE f.subject_id = t.subject_id "
        "AND f.predicate_key = t.predicate_key AND f.expired_at IS NULL LIMIT 1) FROM temp.touched_parts t")
        if cardinality is not None}


# Slots whose facts one statement ends: an undo's batch leaves a few thousand slots empty,
# with 50-80k fact versions among them, and their rows (returned, then made dicts) held at
# once took 100 MB.
ENDED_SLOTS_AT_ONCE = 200


def end_if_left_empty(db: Database, slots: list[Slot], at: str, on_ended: Callable[[SlotChanges], object]) -> None:
    """Of these slots, those that have facts and whose every active assertion is of an
    episode an undo in progress takes out (``temp.taken_out``: ``Owed.taking_out``):
    their facts end at ``at``, as they would once the undo is done. ``on_ended`` is told
    what ended, ``ENDED_SLOTS_AT_ONCE`` slots at a time.

    An undo of a whole ingest leaves nearly every slot it touches empty; resolving each
    anew every time a batch takes the latest of its assertions off made most of the cost
    of undoing 334k episodes (facts reopened and ended again, round after round)."""
    if not slots:
        return
    _touched_table(db, [(*slot, None) for slot in slots])
    left_empty = db.execute(
        "SELECT t.subject_id, t.predicate_key FROM temp.touched_parts t "
        "WHERE EXISTS (SELECT 1 FROM facts f WHERE f.subject_id = t.subject_id AND f.predicate_key = t.predicate_key "
        "AND f.expired_at IS NULL) AND NOT EXISTS (SELECT 1 FROM assertions a WHERE a.subject_id = t.subject_id "
        "AND a.predicate_key = t.predicate_key AND a.expired_at IS NULL "
        "AND a.episode_id NOT IN (SELECT episode_id FROM temp.taken_out)) ORDER BY t.n").fetchall()
    db.execute("CREATE TEMP TABLE IF NOT EXISTS left_empty (subject_id INTEGER, predicate_key TEXT, "
               "PRIMARY KEY (subject_id, predicate_key)) WITHOUT ROWID")
    columns = [c.strip() for c in FACT_COLUMNS.split(",")]
    for start in range(0, len(left_empty), ENDED_SLOTS_AT_ONCE):
        db.execute("DELETE FROM temp.left_empty")
        db.conn.executemany("INSERT INTO temp.left_empty VALUES (?, ?)", left_empty[start:start + ENDED_SLOTS_AT_ONCE])
        ended = db.execute(
            f"UPDATE facts SET expired_at = ? WHERE id IN (SELECT f.id FROM temp.left_empty e CROSS JOIN facts f "
            f"ON f.subject_id = e.subject_id AND f.predicate_key = e.predicate_key AND f.expired_at IS NULL) "
            f"RETURNING {FACT_COLUMNS}", [at]).fetchall()
        # In the facts' order: RETURNING gives the rows in no order of its own.
        changes = SlotChanges(expired=[dict(zip(columns, row)) for row in sorted(ended)])
        summaries.mark_changed(db, changes.expired, (), at)
        on_ended(changes)


def _says_many(db: Database, slot: Slot) -> bool:
    return db.execute("SELECT 1 FROM assertions a WHERE subject_id = ? AND predicate_key = ? "
                      "AND expired_at IS NULL AND cardinality = 'many' LIMIT 1", slot).fetchone() is not None


def _resolve_whole(db: Database, parts: list[Part]) -> list[_Outcome]:
    """Whole slots (and single values): every active assertion resolved again.

    Only what resolution needs is read: a repair re-resolves up to a million assertions,
    and each column read is an object built per row. Texts are read later, for facts only.
    """
    if not parts:
        return []
    _touched_table(db, parts)
    by_part: dict[int, list[SlotAssertion]] = defaultdict(list)
    for row in db.execute(f"SELECT {_ASSERTION_SELECT}, t.n FROM temp.touched_parts t "
                          f"CROSS JOIN assertions a ON {_in_part('a')} WHERE a.expired_at IS NULL"):
        by_part[row[8]].append(SlotAssertion(*row[:8]))
    current: dict[int, list[dict]] = defaultdict(list)
    for n, row in _fact_rows(db.execute(f"SELECT t.n, {_FACT_SELECT} FROM temp.touched_parts t "
                                        f"CROSS JOIN facts f ON {_in_part('f')} WHERE f.expired_at IS NULL")):
        current[n].append(row)
    outcomes = []
    for n, part in enumerate(parts):
        assertions = by_part.get(n, [])
        cardinality = slot_cardinality(assertions) if part[2] is None else "many"
        outcomes.append(_Outcome((part[0], part[1]), cardinality, current.get(n, []),
                                 resolve_slot(assertions, cardinality), {a.id: a.episode_id for a in assertions}))
    return outcomes


# Stored facts read back from a changed instant to find one where the state is certain:
# first two, then more.
_LOOK_BACK = (2, 8)
# Assertions read at a time past a change while the new timeline has not met the stored
# one: first a few, for every stretch at once, then more and more for each left.
_READ_AHEAD = (8, 64, 512)


# (stored fact id, instant, inclusive) -> the end it had stated by then
StatedAt = Callable[[int, str, bool], "str | None"]


def _state_before(rows_latest_first: list[dict], instant: str, complete: bool,
                  stated_at: StatedAt) -> tuple[str, dict | None, str | None] | None:
    """An instant at or before ``instant`` at which the state of the stored timeline is
    certain, the fact open there (None: none was) and the end it had stated by then,
    from the stored facts that start before ``instant``, latest first (``complete``: all
    of them). None if none is certain.

    The open fact is the one that started last, if only one did at that instant. Its
    stated end is the stored one when that lies before the instant (an end is never
    stated before where it is stated in the timeline), else asked of ``stated_at``.
    """
    boundary, i = instant, 0
    while i < len(rows_latest_first):
        start = rows_latest_first[i]["valid_at"]
        j = i
        while j < len(rows_latest_first) and rows_latest_first[j]["valid_at"] == start:
            j += 1
        if j == len(rows_latest_first) and not complete:
            return None  # more may start at that instant
        row = rows_latest_first[i]
        if j == i + 1:
            if row["end_reason"] != "stated":
                return boundary, row, None
            if row["invalid_at"] < boundary:
                return boundary, row, row["invalid_at"]
            return boundary, row, stated_at(row["id"], boundary, False)
        boundary, i = start, j
    return (boundary, None, None) if complete else None


@dataclass
class _Window:
    """A stretch of one part's timeline to resolve again: from ``boundary``, where the
    stored timeline had ``head_row`` open, through the changed instant ``last``."""

    boundary: str
    head_row: dict | None
    head_stated: str | None  # the end the head had stated by the boundary
    last: str
    read: list[SlotAssertion] = field(default_factory=list)  # active assertions in it
    stored: list[dict] = field(default_factory=list)  # current facts that start in it
    # Read beforehand: the whole instants of the next few assertions past it (None: read
    # them when needed), whether more follow, and the facts that start there.
    ahead: list[SlotAssertion] | None = None
    ahead_more: bool = False
    ahead_stored: list[dict] = field(default_factory=list)


class _Timeline:
    """The stored facts of a stretch, in start order, to ask what state the stored
    timeline is in once everything up to an instant is resolved."""

    def __init__(self) -> None:
        self.rows: list[dict] = []
        self.starts: list[str] = []
        self.ids: set[int] = set()

    def add(self, rows: Iterable[dict]) -> None:
        for row in rows:  # each later than the ones before
            if row["id"] not in self.ids:
                self.ids.add(row["id"])
                self.rows.append(row)
                self.starts.append(row["valid_at"])

    def state_after(self, instant: str, stated_at: StatedAt) -> tuple[bool, dict | None, str | None]:
        """(certain, the fact open then, the end it had stated by then)."""
        k = bisect_right(self.starts, instant)
        if k == 0:
            return True, None, None
        row = self.rows[k - 1]
        if k > 1 and self.starts[k - 2] == row["valid_at"]:
            return False, None, None
        if row["end_reason"] != "stated":
            return True, row, None
        if row["invalid_at"] <= instant:
            return True, row, row["invalid_at"]
        return True, row, stated_at(row["id"], instant, True)

    def up_to(self, instant: str) -> list[dict]:
        return self.rows[:bisect_right(self.starts, instant)]


def _resolve_windows(db: Database, windows: list[tuple[Part, list[str]]], at: str,
                     taken_out_since: dict[Slot, str]) -> list[_Outcome]:
    """Parts whose changed instants are known, each resolved over the stretches of time
    those reach (``at``: the change's transaction time; ``taken_out_since``: see
    ``recompute_slots``)."""
    if not windows:
        return []

    def stated_at(n: int) -> StatedAt:
        since = taken_out_since.get(windows[n][0][:2], at)

        def stated(fact_id: int, instant: str, inclusive: bool) -> str | None:
            """The end a stored fact had stated once the assertions behind it before (or up
            to) ``instant`` were resolved: the latest ``invalid_at`` among them, as they were
            before this change (those it took out, from ``since`` on, still count)."""
            return db.execute(
                f"SELECT max(a.invalid_at) FROM fact_provenance p JOIN assertions a ON a.id = p.assertion_id "
                f"WHERE p.fact_id = ? AND (a.expired_at IS NULL OR a.expired_at >= ?) "
                f"AND a.instant {'<=' if inclusive else '<'} ?", [fact_id, since, instant]).fetchone()[0]
        return stated

    # 1. Where a sweep can start for each changed instant: the stored facts before it,
    # the last two (most often the last is open there, certainly), else a few more.
    probes = [(n, instant) for n, (_, instants) in enumerate(windows) for instant in instants]
    stretches: dict[int, list[_Window]] = defaultdict(list)
    undecided = list(range(len(probes)))
    for look_back in _LOOK_BACK:
        _touched_table(db, [windows[probes[k][0]][0] for k in undecided],
                       rows=[(probes[k][1], None) for k in undecided])
        earlier: dict[int, list[dict]] = defaultdict(list)
        for value_parts in (False, True):
            for j, row in _fact_rows(db.execute(_EARLIER_FACTS[dialect(db), value_parts], [look_back])):
                earlier[undecided[j]].append(row)
        still = []
        for k in undecided:
            rows = sorted(earlier.get(k, []), key=lambda row: row["valid_at"], reverse=True)
            start = _state_before(rows, probes[k][1], len(rows) < look_back, stated_at(probes[k][0]))
            if start is None:
                still.append(k)
            else:
                stretches[probes[k][0]].append(_Window(*start, probes[k][1]))
        undecided = still
        if not undecided:
            break
    whole = {probes[k][0] for k in undecided}
    # Stretches that overlap are one.
    merged: list[tuple[int, _Window]] = []
    for n in sorted(set(stretches) - whole):
        for window in sorted(stretches[n], key=lambda w: (w.boundary, w.last)):
            if merged and merged[-1][0] == n and window.boundary <= merged[-1][1].last:
                merged[-1][1].last = max(merged[-1][1].last, window.last)
            else:
                merged.append((n, window))
    # 2. The assertions and stored facts of every stretch.
    _touched_table(db, [windows[n][0] for n, _ in merged], rows=[(w.boundary, w.last) for _, w in merged])
    for value_parts in (False, True):
        for row in db.execute(_WINDOW_ASSERTIONS[value_parts]):
            merged[row[8]][1].read.append(SlotAssertion(*row[:8]))
        for k, row in _fact_rows(db.execute(_WINDOW_FACTS[value_parts])):
            merged[k][1].stored.append(row)
    # 3. A few assertions past each, and the facts that start among them: most sweeps meet
    # the stored timeline within them.
    ahead: dict[int, list[tuple]] = defaultdict(list)
    for value_parts in (False, True):
        for row in db.execute(_AHEAD_ASSERTIONS[dialect(db), value_parts], [_READ_AHEAD[0] + 1]):
            ahead[row[8]].append(row[:8])
    for k, (_, window) in enumerate(merged):
        window.ahead, window.ahead_more = _whole_instants(ahead.get(k, []), _READ_AHEAD[0])
    _touched_table(db, [windows[n][0] for n, _ in merged],
                   rows=[(w.last, w.last if w.ahead is None else w.ahead[-1].instant if w.ahead_more else "\uffff")
                         for _, w in merged])
    for value_parts in (False, True):
        for k, row in _fact_rows(db.execute(_AHEAD_FACTS[value_parts])):
            merged[k][1].ahead_stored.append(row)
    by_part: dict[int, list[_Window]] = defaultdict(list)
    for n, window in merged:
        window.ahead_stored.sort(key=lambda row: row["valid_at"])
        window.read.sort(key=SlotAssertion.sort_key)
        window.stored.sort(key=lambda row: row["valid_at"])
        by_part[n].append(window)
    outcomes = [outcome for n, part_windows in by_part.items()
                for outcome in _sweep_part(db, windows[n][0], part_windows, stated_at(n))]
    return outcomes + _resolve_whole(db, [windows[n][0] for n in sorted(whole)])


def _part_filter(value_parts: bool, alias: str) -> str:
    return (f"{alias}.subject_id = t.subject_id AND {alias}.predicate_key = t.predicate_key"
            + (f" AND {alias}.object_id = t.object_id" if value_parts else "")
            + f" AND {alias}.expired_at IS NULL")


# Each comes in two forms, for slots and for single values, so SQLite probes the
# timeline index that fits (migration 0011).
# PostgreSQL cannot turn the correlated ``IN (... LIMIT ?)`` into a probe per part, and
# would test every fact against it: there each part's nearest rows are a LATERAL join.
_EARLIER_FACTS = {("sqlite", value_parts): f"""
    SELECT t.n, {_FACT_SELECT} FROM temp.touched_parts t CROSS JOIN facts f
    WHERE t.object_id IS {'NOT ' if value_parts else ''}NULL AND f.id IN (
        SELECT g.id FROM facts g WHERE {_part_filter(value_parts, 'g')} AND g.valid_at < t.lo
        ORDER BY g.valid_at DESC LIMIT ?)""" for value_parts in (False, True)} | {("postgresql", value_parts): f"""
    SELECT t.n, {_FACT_SELECT} FROM temp.touched_parts t CROSS JOIN LATERAL (
        SELECT g.* FROM facts g WHERE {_part_filter(value_parts, 'g')} AND g.valid_at < t.lo
        ORDER BY g.valid_at DESC LIMIT ?) f
    WHERE t.object_id IS {'NOT ' if value_parts else ''}NULL""" for value_parts in (False, True)}
_WINDOW_ASSERTIONS = {value_parts: f"""
    SELECT {_ASSERTION_SELECT}, t.n FROM temp.touched_parts t
    CROSS JOIN assertions a
    WHERE t.object_id IS {'NOT ' if value_parts else ''}NULL AND {_part_filter(value_parts, 'a')}
      AND {_INSTANT} >= t.lo AND {_INSTANT} <= t.hi""" for value_parts in (False, True)}
_AHEAD_ASSERTIONS = {("sqlite", value_parts): f"""
    SELECT {_ASSERTION_SELECT}, t.n FROM temp.touched_parts t CROSS JOIN assertions a
    WHERE t.object_id IS {'NOT ' if value_parts else ''}NULL AND a.id IN (
        SELECT b.id FROM assertions b WHERE {_part_filter(value_parts, 'b')} AND b.instant > t.hi
        ORDER BY b.instant LIMIT ?)""" for value_parts in (False, True)} | {("postgresql", value_parts): f"""
    SELECT {_ASSERTION_SELECT}, t.n FROM temp.touched_parts t CROSS JOIN LATERAL (
        SELECT b.* FROM assertions b WHERE {_part_filter(value_parts, 'b')} AND b.instant > t.hi
        ORDER BY b.instant LIMIT ?) a
    WHERE t.object_id IS {'NOT ' if value_parts else ''}NULL""" for value_parts in (False, True)}
_AHEAD_FACTS = {value_parts: f"""
    SELECT t.n, {_FACT_SELECT} FROM temp.touched_parts t CROSS JOIN facts f
    WHERE t.object_id IS {'NOT ' if value_parts else ''}NULL AND {_part_filter(value_parts, 'f')}
      AND f.valid_at > t.lo AND f.valid_at <= t.hi""" for value_parts in (False, True)}
_WINDOW_FACTS = {value_parts: f"""
    SELECT t.n, {_FACT_SELECT} FROM temp.touched_parts t CROSS JOIN facts f
    WHERE t.object_id IS {'NOT ' if value_parts else ''}NULL AND {_part_filter(value_parts, 'f')}
      AND f.valid_at >= t.lo AND f.valid_at <= t.hi""" for value_parts in (False, True)}


def _sweep_part(db: Database, part: Part, windows: list[_Window], stated_at: StatedAt) -> list[_Outcome]:
    """Resolve one part over its stretches, in timeline order.

    Each sweep starts at a stretch's boundary from the fact the stored timeline had open
    there, and goes on past the stretch until the new state meets the stored one; from
    there both resolve alike. When the fact open at that point is the one open where the
    next stretch begins, the sweep goes on with it there (so one stored fact is never
    resolved twice); otherwise its facts are settled and the next stretch starts afresh.
    """
    subject_id, predicate_key, object_id = part
    slot = (subject_id, predicate_key)
    cardinality = "one" if object_id is None else "many"
    outcomes = []
    i = 0
    while i < len(windows):
        window = windows[i]
        i += 1
        head = None
        outcome = _Outcome(slot, cardinality, [], [], {})
        timeline = _Timeline()
        if window.head_row is not None:
            head = ResolvedFact(object_id=window.head_row["object_id"], valid_at=window.head_row["valid_at"],
                                stated_end=window.head_stated)
            timeline.add([window.head_row])
            outcome.claims.append((head, window.head_row["id"], None, window.boundary))
            outcome.words[id(head)] = (window.head_row["predicate"], window.head_row["fact"])
        sweep = Sweep(supersede=object_id is None, open_fact=head)
        prefetched: _Window | None = window  # whose reading ahead is at hand
        reads = 0
        timeline.add(window.stored)
        sweep.feed(window.read)
        outcome.scope.update((a.id, a.episode_id) for a in window.read)
        reached = must_reach = window.last
        at_end = False

        while True:
            done, open_row = _met(timeline, sweep, reached, must_reach, stated_at)
            if done:
                following = windows[i] if i < len(windows) else None
                if (open_row is not None and following is not None and following.head_row is not None
                        and following.head_row["id"] == open_row["id"]):
                    # The same fact is open where the next stretch begins: go on with it there.
                    assert sweep.open_fact is not None  # the states are equal
                    outcome.claims.append((sweep.open_fact, open_row["id"], reached, following.boundary))
                    sweep.open_fact.stated_end = following.head_stated
                    timeline.add(following.stored)
                    sweep.feed(following.read)
                    outcome.scope.update((a.id, a.episode_id) for a in following.read)
                    reached = must_reach = following.last
                    prefetched = following
                    i += 1
                    continue
                # Met: from here on both timelines resolve alike, so the open fact ends as the stored one does.
                tail = sweep.open_fact
                if tail is not None:
                    assert open_row is not None
                    tail.invalid_at, tail.end_reason = open_row["invalid_at"], open_row["end_reason"]
                    sweep.facts.append(tail)
                    outcome.claims.append((tail, open_row["id"], reached, None))
                outcome.old, outcome.new = timeline.up_to(reached), sweep.facts
                break
            if at_end:  # read to the end of the timeline: nothing continues past it, and no stretch is left
                outcome.old, outcome.new = timeline.rows, sweep.finish()
                i = len(windows)
                break
            # Not met yet: read on, whole instants at a time, checking after each.
            if prefetched is not None and prefetched.ahead is not None and prefetched.last == reached:
                batch, more = prefetched.ahead, prefetched.ahead_more
                timeline.add(prefetched.ahead_stored)
            else:
                reads += 1
                batch, more = _read_ahead(db, part, reached, _READ_AHEAD[min(reads, len(_READ_AHEAD) - 1)])
                condition, arguments = _one_part("f", part)
                timeline.add(row for _, row in _fact_rows(db.execute(
                    f"SELECT 0, {_FACT_SELECT} FROM facts f WHERE {condition} AND f.valid_at > ? "
                    f"{'AND f.valid_at <= ? ' if more else ''}ORDER BY f.valid_at",
                    [*arguments, reached, *([batch[-1].instant] if more else [])])))
            prefetched = None
            at_end = not more
            for instant, group in _by_instant(batch):
                sweep.feed(group)
                outcome.scope.update((a.id, a.episode_id) for a in group)
                reached = instant
                # A stretch this reading has reached is resolved by it.
                while i < len(windows) and windows[i].boundary <= reached:
                    must_reach = max(must_reach, windows[i].last)
                    i += 1
                if _met(timeline, sweep, reached, must_reach, stated_at)[0]:
                    at_end = False  # what was read past here is not needed
                    break
        outcomes.append(outcome)
    return outcomes


def _met(timeline: _Timeline, sweep: Sweep, reached: str, must_reach: str,
         stated_at: StatedAt) -> tuple[bool, dict | None]:
    """Whether, once everything up to ``reached`` is resolved, the new timeline is in the
    stored one's state (so the rest resolves alike), and the stored fact open then."""
    if reached < must_reach:
        return False, None
    certain, open_row, stated = timeline.state_after(reached, stated_at)
    old = None if open_row is None else (open_row["object_id"], stated)
    return certain and sweep.state() == old, open_row


def _one_part(alias: str, part: Part) -> tuple[str, list]:
    """The condition for one part's active rows in ``alias``, and its arguments."""
    condition = f"{alias}.subject_id = ? AND {alias}.predicate_key = ? AND {alias}.expired_at IS NULL"
    if part[2] is None:
        return condition, [part[0], part[1]]
    return condition + f" AND {alias}.object_id = ?", [*part]


def _read_ahead(db: Database, part: Part, after: str, limit: int) -> tuple[list[SlotAssertion], bool]:
    """The part's active assertions of the next instants after ``after``, in timeline
    order: whole instants, about ``limit`` of them; and whether more follow."""
    condition, arguments = _one_part("a", part)
    rows = db.execute(f"SELECT {_ASSERTION_SELECT} FROM assertions a WHERE {condition} "
                      f"AND {_INSTANT} > ? ORDER BY {_INSTANT} LIMIT ?", [*arguments, after, limit + 1]).fetchall()
    batch, more = _whole_instants(rows, limit)
    if batch is not None:
        return batch, more
    # One instant holds more than the limit: read it all.
    return sorted((SlotAssertion(*row) for row in db.execute(
        f"SELECT {_ASSERTION_SELECT} FROM assertions a WHERE {condition} AND {_INSTANT} = ?",
        [*arguments, rows[0][5] or rows[0][6]])), key=SlotAssertion.sort_key), True


def _whole_instants(rows: list[tuple], limit: int) -> tuple[list[SlotAssertion] | None, bool]:
    """Up to ``limit + 1`` assertion rows read in timeline order, as whole instants in
    timeline order, and whether more follow; None when the first instant may go on."""
    batch = sorted((SlotAssertion(*row) for row in rows), key=SlotAssertion.sort_key)
    if len(rows) <= limit:
        return batch, False
    # The last instant read may go on past the limit: stop before it.
    whole = [a for a in batch if a.instant < batch[-1].instant]
    return (whole or None), True


def _by_instant(ordered: list[SlotAssertion]) -> Iterable[tuple[str, list[SlotAssertion]]]:
    group: list[SlotAssertion] = []
    for assertion in ordered:
        if group and assertion.instant != group[0].instant:
            yield group[0].instant, group
            group = []
        group.append(assertion)
    if group:
        yield group[0].instant, group


def _texts(db: Database, assertion_ids: Iterable[int]) -> dict[int, tuple[str, str]]:
    """(predicate, fact) of each assertion: a fact shows its first assertion's words."""
    found: dict[int, tuple[str, str]] = {}
    for chunk, marks in in_chunks(sorted(set(assertion_ids))):
        found.update((row[0], row[1:]) for row in db.execute(
            f"SELECT id, predicate, fact FROM assertions WHERE id IN ({marks})", chunk))
    return found


def _stored_provenance(db: Database, assertion_ids: Iterable[int]) -> dict[int, set[int]]:
    """The facts each of these assertions is recorded as supporting: fact id -> assertion ids."""
    by_fact: dict[int, set[int]] = defaultdict(set)
    for chunk, marks in in_chunks(sorted(assertion_ids)):
        for fact_id, assertion_id in db.execute(
                f"SELECT fact_id, assertion_id FROM fact_provenance WHERE assertion_id IN ({marks})", chunk):
            by_fact[fact_id].add(assertion_id)
    return by_fact


def _support_between(db: Database, fact_id: int, after: str | None, before: str | None) -> list[tuple[int, str]]:
    """(assertion id, episode id) of the active assertions behind a stored fact whose
    instants lie strictly between ``after`` and ``before`` (None: unbounded)."""
    return db.execute(
        f"SELECT p.assertion_id, p.episode_id FROM fact_provenance p JOIN assertions a ON a.id = p.assertion_id "
        f"WHERE p.fact_id = ? AND a.expired_at IS NULL AND {_INSTANT} > ? AND {_INSTANT} < ?",
        [fact_id, after or "", before or "\uffff"]).fetchall()


def _write(db: Database, outcomes: list[_Outcome], at: str) -> SlotChanges:
    """Expire what changed, insert what is new, and keep provenance in step."""
    changes = SlotChanges()
    texts = _texts(db, (fact.assertion_ids[0] for outcome in outcomes for fact in outcome.new
                        if id(fact) not in outcome.words))
    provenance = _stored_provenance(db, (a for outcome in outcomes for a in outcome.scope))
    # Ids handed out here (we hold the write lock) let every row go in one executemany.
    next_id = db.execute("SELECT coalesce(max(id), 0) + 1 FROM facts").fetchone()[0]
    provenance_added: list[tuple] = []
    provenance_removed: list[tuple] = []
    for outcome in outcomes:
        wanted = {}
        for fact in outcome.new:
            words = outcome.words.get(id(fact)) or texts[fact.assertion_ids[0]]
            row = _fact_row(outcome.slot, fact, words, outcome.cardinality)
            wanted[fact_shape(row)] = (row, fact)
        kept: set[tuple] = set()
        for existing in outcome.old:
            shape = fact_shape(existing)
            if shape in wanted and shape not in kept:
                kept.add(shape)
                # Rows of expired assertions stay, so --known-at still sees who supported it then.
                stored = provenance.get(existing["id"], set())
                wanted_ids = set(wanted[shape][1].assertion_ids)
                provenance_added += [(existing["id"], a, outcome.scope[a]) for a in sorted(wanted_ids - stored)]
                provenance_removed += [(existing["id"], a) for a in sorted(stored - wanted_ids) if a in outcome.scope]
            else:
                changes.expired.append({**existing, "expired_at": at})
        for shape, (row, fact) in wanted.items():
            if shape in kept:
                continue
            row = {"id": next_id, **row, "created_at": at, "expired_at": None}
            next_id += 1
            provenance_added += [(row["id"], a, outcome.scope[a]) for a in fact.assertion_ids]
            # The edges of a stretch resolved again carry on assertions that were not read.
            for claimant, stored_id, after, before in outcome.claims:
                if claimant is fact:
                    provenance_added += [(row["id"], *found) for found in _support_between(db, stored_id, after, before)]
            changes.inserted.append(row)
    db.conn.executemany("UPDATE facts SET expired_at = ? WHERE id = ?", [(at, row["id"]) for row in changes.expired])
    if changes.inserted:
        columns = list(changes.inserted[0])
        db.conn.executemany(
            f"INSERT INTO facts ({', '.join(columns)}) VALUES ({', '.join('?' * len(columns))})",
            [[row[c] for c in columns] for row in changes.inserted],
        )
    db.conn.executemany("DELETE FROM fact_provenance WHERE fact_id = ? AND assertion_id = ?", provenance_removed)
    db.conn.executemany("INSERT OR IGNORE INTO fact_provenance (fact_id, assertion_id, episode_id) VALUES (?, ?, ?)",
                        provenance_added)
    names = entity_names(db, {id_ for row in changes.inserted for id_ in (row["subject_id"], row["object_id"])})
    index_facts(db, [(row["id"], row["fact"], names[row["subject_id"]], row["predicate"], names[row["object_id"]])
                     for row in changes.inserted])
    summaries.mark_changed(db, changes.expired, changes.inserted, at)
    return changes


def _fact_row(slot: Slot, fact: ResolvedFact, words: tuple[str, str], cardinality: str) -> dict:
    predicate, text = words
    return {
        "subject_id": slot[0], "predicate": predicate, "predicate_key": slot[1],
        "object_id": fact.object_id, "fact": text, "cardinality": cardinality,
        "valid_at": fact.valid_at, "invalid_at": fact.invalid_at, "end_reason": fact.end_reason,
    }


def all_slots(db: Database) -> set[Slot]:
    """Every slot with an assertion or a current fact: what a rebuild recomputes."""
    return set(db.execute("SELECT subject_id, predicate_key FROM assertions "
                          "UNION SELECT subject_id, predicate_key FROM facts WHERE expired_at IS NULL").fetchall())

