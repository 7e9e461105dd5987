"""What a change did to the current facts, as a plan says it: undo, retry, repair,
resolve, merge, split and add all report their effects this way."""

from __future__ import annotations

from typing import TYPE_CHECKING

from memctl.reports import Effects, FactChange
from memctl.store.facts import FactVersion, OperationChanges, SlotChanges
from memctl.store.reads import entity_names

if TYPE_CHECKING:
    from memctl.store import Database


def effects(db: Database, changes: SlotChanges | OperationChanges) -> Effects:
    """Sort what a change did to current facts (the versions it expired and inserted)
    into what a user reads in a plan.

    removed: a fact that no longer exists; reopened: a fact whose end is lifted
    (Austin comes back when NYC is undone); changed: same fact, another interval or
    text; added: a fact that appears (a value split by the removed one, rejoined). A
    version expired and put back the same by a later batch of one operation is no change.
    """
    if isinstance(changes, SlotChanges):
        changes = OperationChanges().absorb(changes)

    def key(version: FactVersion) -> tuple:
        return (version.subject_id, version.predicate_key, version.object_id, version.valid_at)

    old_by_key = {key(version): version for version in changes.expired}
    new_by_key = {key(version): version for version in changes.inserted}
    for k in [k for k, old in old_by_key.items() if k in new_by_key and new_by_key[k].same_fact(old)]:
        del old_by_key[k], new_by_key[k]
    names = entity_names(db, {id_ for version in [*old_by_key.values(), *new_by_key.values()]
                              for id_ in (version.subject_id, version.object_id)})

    def describe(version: FactVersion, old: FactVersion | None = None) -> FactChange:
        return FactChange(fact=version.fact, subject=names.get(version.subject_id), predicate=version.predicate,
                          object=names.get(version.object_id), valid_at=version.valid_at,
                          invalid_at=version.invalid_at, compared=old is not None,
                          invalid_at_before=None if old is None else old.invalid_at)

    result = Effects()
    # By slot, value and time: the order the versions were read in is the engine's own.
    for k, old in sorted(old_by_key.items(), key=lambda item: item[0]):
        new = new_by_key.get(k)
        if new is None:
            result.removed.append(describe(old))
        elif new.invalid_at is None and old.invalid_at is not None:
            result.reopened.append(describe(new, old))
        else:
            result.changed.append(describe(new, old))
    result.added = [describe(row) for k, row in sorted(new_by_key.items(), key=lambda item: item[0])
                    if k not in old_by_key]
    return result
