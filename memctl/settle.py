"""``memctl resolve CONFLICT --keep VALUE``: settle a conflict (``memctl.conflicts``) by
taking out the statements of the values not kept.

Their assertions expire (their episodes stay: what was said is still said, and found),
the slot is recomputed, and the operation is journaled with the assertions it took out,
so that ``memctl undo`` of it puts them back as it found them. A preview is the change
done and rolled back (``tentative``), as every plan is.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from memctl import conflicts, names
from memctl.effects import effects
from memctl.errors import Ambiguous, BadInput, NotFound
from memctl.reports import Settlement
from memctl.store import conflicts as store
from memctl.store import operations as journal
from memctl.store.connection import Clock, tentative, transaction_time
from memctl.store.episodes import expire_assertions, recompute

if TYPE_CHECKING:
    from memctl.store import Database


def settle(db: Database, clock: Clock, target: str, keep: str, *, apply: bool = False) -> Settlement:
    """Keep ``keep`` (a value's name) in the open conflict ``target`` (its id or a unique
    prefix) and take the other values' statements out; a preview unless ``apply``."""
    with tentative(db) as decision:
        at = transaction_time(db, clock)
        group = _open_group(db, target, at)
        values = _names_of(db, group)
        kept = [object_id for object_id, name in values.items() if names.entity_key(name) == names.entity_key(keep)]
        if not kept:
            raise BadInput(f"must be one of the values of {group.id} ({', '.join(values.values())}), got {keep!r}",
                           parameter="keep")
        dropped = [statement for statement in group.statements if statement.object_id != kept[0]]
        sentences = store.sentences(db, [statement.assertion_id for statement in dropped])
        result = Settlement(conflict_id=group.id, keep=values[kept[0]], dropped=[
            {"value": values[s.object_id], "episode_id": s.episode_id, "fact": sentences[s.assertion_id],
             "valid_at": s.valid_at, "said_at": s.reference_time} for s in dropped])
        touched = expire_assertions(db, [statement.assertion_id for statement in dropped], at)
        result.effects = effects(db, recompute(db, at, touched))
        if apply:
            command = {"conflict": group.id, "keep_id": kept[0],
                       "assertions": [statement.assertion_id for statement in dropped]}
            with journal.journaled(db, "resolve", at, command) as entry:
                entry.counts = {"assertions": len(dropped), **result.effects.counts()}
            result.applied, result.operation_id = True, entry.id
            decision.keep()
    return result


def _open_group(db: Database, target: str, at: str) -> conflicts.Group:
    """The open conflict group whose id is or starts with ``target``, at ``at``."""
    if not target.strip():  # "" starts every id: it names none
        raise BadInput("name the conflict by its id (or a prefix of it), not an empty string")
    if not target.startswith("cf_") and not "cf_".startswith(target):
        target = f"cf_{target}"
    found = [group for groups in conflicts.groups_of_slots(db, store.rival_slots(db, None), as_of=at,
                                                           known_at=None).values()
             for group in groups if group.closed_by is None and group.id.startswith(target)]
    if not found:
        raise NotFound(f"no open conflict matches {target!r}; `memctl conflicts` lists them")
    if len(found) > 1:
        raise Ambiguous(f"{target!r} is ambiguous: {', '.join(g.id for g in found[:5])}; give more characters")
    return found[0]


def _names_of(db: Database, group: conflicts.Group) -> dict[int, str]:
    """The group's values, by entity id, with their names as shown."""
    from memctl.store.reads import entity_names

    found = entity_names(db, set(group.values()))
    return {object_id: found[object_id] for object_id in group.values()}
