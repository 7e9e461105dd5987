"""``memctl merge A B`` and ``memctl split NAME``: the user says which names are one thing.

A merge makes B's statements statements about A: each active assertion that mentions B
expires and a copy naming A takes its place (the copy keeps the name as written), the
slots they touch are recomputed (so a value of B's that A's later value follows is
superseded as it should be), and B is remembered as merged into A, so that a later
ingest's "B" is A. A split takes one name that resolution put into an entity out of
it again: the assertions that wrote that name get an entity of their own, which later
mentions of the name find by its key.

Both are journaled operations, previewed unless applied (the change done and rolled
back, as every plan is), and ``memctl undo`` of one is its exact inverse: the copies
expire, the assertions they replaced are believed again, and a merge is forgotten (an
undone split's entity is merged back, so that the name resolves as it did before).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from memctl import names
from memctl.effects import effects
from memctl.errors import BadInput
from memctl.reports import Merged
from memctl.store import entities
from memctl.store import operations as journal
from memctl.store.connection import Clock, tentative, transaction_time
from memctl.store.episodes import Touched, expire_assertions, recompute, rekey_assertions, restore_assertions

if TYPE_CHECKING:
    from memctl.store import Database


def merge(db: Database, clock: Clock, into: str, other: str, *, apply: bool = False) -> Merged:
    """Make the entity named ``other`` the entity named ``into``; a preview unless ``apply``."""
    with tentative(db) as decision:
        at = transaction_time(db, clock)
        target, source = entities.named(db, into), entities.named(db, other)
        if target == source:
            raise BadInput(f"{into!r} and {other!r} are one entity already")
        result = Merged(kind="merge", into=entities.name_of(db, target), merged=entities.name_of(db, source))
        mentions = entities.mentions(db, source)
        touched = expire_assertions(db, list(mentions), at)
        copies, added = rekey_assertions(db, {assertion_id: (target if subject_id == source else subject_id,
                                                             target if object_id == source else object_id)
                                              for assertion_id, (subject_id, object_id) in mentions.items()}, at)
        touched.update(added)
        result.assertions = len(mentions)
        result.effects = effects(db, recompute(db, at, touched))
        if apply:
            command = {"into": target, "from": source, "assertions": sorted(mentions), "copies": copies}
            with journal.journaled(db, "merge", at, command) as entry:
                entities.record_merge(db, entry.id, source, target, at)
                entry.counts = {"assertions": len(mentions), **result.effects.counts()}
            result.applied, result.operation_id = True, entry.id
            decision.keep()
    return result


def split(db: Database, clock: Clock, name: str, *, apply: bool = False) -> Merged:
    """Give the name ``name`` an entity of its own again, taking the assertions that wrote
    it out of the entity resolution put them in; a preview unless ``apply``."""
    key = names.entity_key(name)
    with tentative(db) as decision:
        at = transaction_time(db, clock)
        holder = entities.named(db, name)
        own, merges = entities.own_entity(db, key)
        if own == holder and not merges:
            raise BadInput(f"{name!r} is the name of its entity, not resolved into another: nothing to split "
                           "(`memctl entities --similar` lists names memctl found alike)")
        created = own is None
        if own is None:
            own = entities.create(db, name, key, at)
        else:
            entities.end_merges(db, at, from_id=own)  # the merges that made it ``holder``

        def moved(entity_id: int, form: str) -> int:
            return own if entity_id == holder and names.entity_key(form) == key else entity_id

        mentions = {assertion_id: (moved(*subject), moved(*object_))
                    for assertion_id, (subject, object_) in entities.mentions_as_written(db, holder).items()}
        mentions = {assertion_id: sides for assertion_id, sides in mentions.items() if own in sides}
        result = Merged(kind="split", into=entities.name_of(db, holder), merged=name, assertions=len(mentions))
        touched = expire_assertions(db, list(mentions), at)
        copies, added = rekey_assertions(db, mentions, at)
        touched.update(added)
        result.effects = effects(db, recompute(db, at, touched))
        if apply:
            command = {"name": name, "entity": own, "from": holder, "created": created, "merges_ended": merges,
                       "assertions": sorted(mentions), "copies": copies}
            with journal.journaled(db, "split", at, command) as entry:
                entry.counts = {"assertions": len(mentions), **result.effects.counts()}
            result.applied, result.operation_id = True, entry.id
            decision.keep()
    return result


def revert(db: Database, operation_id: str, kind: str, done: journal.Journaled, at: str) -> tuple[Touched, list[int]]:
    """Undo of a merge or a split (``memctl.undo``): its copies expire, the assertions they
    replaced are believed again, and what resolves names goes back as it was. Returns
    what was touched and the assertions restored."""
    command = done.command
    touched = expire_assertions(db, entities.still_active(db, command["copies"]), at)
    more, restored, _ = restore_assertions(db, command["assertions"], done.at, at)
    touched.update(more)
    if kind == "merge":
        entities.end_merges(db, at, operation_id=operation_id)
    elif command["merges_ended"]:  # the merges the split ended hold again
        entities.resume_merges(db, command["entity"], command["merges_ended"], done.at)
    else:  # the split name's entity is merged back: the name resolves as it did before
        entities.record_merge(db, operation_id, command["entity"], command["from"], at)
    return touched, restored
