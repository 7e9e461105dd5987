"""What a change did to the current facts, as a plan says it: undo, retry, repair,
resolve, merge, split and add all report their effects this way."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from itertools import islice
from typing import TYPE_CHECKING, Any, overload

from memctl.reports import EFFECTS, Effects, FactChange
from memctl.results import STREAMING_JSON
from memctl.store.changed import ChangedVersions
from memctl.store.facts import SlotChanges, fact_shape
from memctl.store.reads import entity_names

if TYPE_CHECKING:
    from sqlite3 import Row

    from memctl.store import Database

PAIRS_PER_LOOKUP = 5000  # places described at once: one lookup of their entities' names
CHANGES_PER_READ = 5000  # changes read back from the scratch database at once


def effects(db: Database, changes: SlotChanges | ChangedVersions) -> Effects:
    """Sort what a change did to current facts (the versions it expired and inserted)
    into what a user reads in a plan.

    removed: a fact that no longer exists; reopened: a fact whose end is lifted
    (Austin comes back when NYC is undone); changed: same fact, another interval or
    text; added: a fact that appears (a value split by the removed one, rejoined). A
    version expired and put back the same by a later batch of one operation is no change.
    Each kind is in the order of the facts' places: slot, value, then start.
    """
    if isinstance(changes, SlotChanges):
        changes = ChangedVersions(on_disk=False).absorb(changes)
    pairs = changes.pairs()
    while chunk := [(before, now) for before, now in islice(pairs, PAIRS_PER_LOOKUP)
                    if before is None or now is None or fact_shape(before) != fact_shape(now)]:
        names = entity_names(db, {version[id_] for pair in chunk for version in pair if version is not None
                                  for id_ in ("subject_id", "object_id")})
        described: dict[str, list[tuple]] = {kind: [] for kind in EFFECTS}
        for before, now in chunk:
            if before is None:
                assert now is not None  # a place has a version before, now or both
                described["added"].append(_described(now, names))
            elif now is None:
                described["removed"].append(_described(before, names))
            else:
                reopened = now["invalid_at"] is None and before["invalid_at"] is not None
                described["reopened" if reopened else "changed"].append(_described(now, names, before))
        for kind, rows in described.items():
            changes.describe(kind, rows)
    return Effects(**{kind: FactChanges(changes, kind) for kind in EFFECTS})


def _described(version: Row, names: dict[int, str], before: Row | None = None) -> tuple:
    """A change's columns (``changed.CHANGE_COLUMNS``): the version now, compared with the one before if any."""
    return (version["fact"], names.get(version["subject_id"]), version["predicate"], names.get(version["object_id"]),
            version["valid_at"], version["invalid_at"], before is not None,
            None if before is None else before["invalid_at"])


class FactChanges(Sequence[FactChange]):
    """One kind of a plan's effects, read from its scratch database a page at a time, so
    that a plan of 780k changes is not held whole. A list to whoever reads it; its JSON
    is a list, written one change at a time by ``memctl --json``."""

    def __init__(self, versions: ChangedVersions, kind: str) -> None:
        self._versions, self._kind, self._len = versions, kind, versions.count(kind)

    def __len__(self) -> int:
        return self._len

    @overload
    def __getitem__(self, index: int) -> FactChange: ...

    @overload
    def __getitem__(self, index: slice) -> list[FactChange]: ...

    def __getitem__(self, index: int | slice) -> FactChange | list[FactChange]:
        if isinstance(index, slice):
            start, stop, step = index.indices(self._len)
            if step != 1:
                return list(self)[index]
            return [_change(row) for row in self._versions.changes(self._kind, start, max(start, stop))]
        position = index + self._len if index < 0 else index
        if not 0 <= position < self._len:
            raise IndexError(index)
        return self[position:position + 1][0]

    def __iter__(self) -> Iterator[FactChange]:
        for start in range(0, self._len, CHANGES_PER_READ):
            yield from self[start:start + CHANGES_PER_READ]

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Sequence) or isinstance(other, str):
            return NotImplemented
        return len(self) == len(other) and all(mine == theirs for mine, theirs in zip(self, other, strict=True))

    __hash__ = None  # type: ignore[assignment]  # compared by content, as a list is

    def __repr__(self) -> str:
        return repr(list(self))

    def __reduce__(self) -> tuple:
        """A copy or a pickle of it is the list it reads as: its scratch database is not shared."""
        return list, (list(self),)

    def to_json(self) -> Any:
        """The changes' JSON: a list; while ``STREAMING_JSON`` is set, this sequence itself,
        for the writer to encode one change at a time."""
        return self if STREAMING_JSON.get() else [change.to_json() for change in self]


def _change(row: tuple) -> FactChange:
    fact, subject, predicate, object_, valid_at, invalid_at, compared, invalid_at_before = row
    return FactChange(fact, subject, predicate, object_, valid_at, invalid_at, compared=bool(compared),
                      invalid_at_before=invalid_at_before)
