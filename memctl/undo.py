"""Undo: take episodes back out, or put back what a repair, a retry or an undo changed.

Undoing episodes is the exact inverse of ingesting them: their assertions expire, the
slots they touched are recomputed, and facts they had ended come back open. The
expired versions stay in the transaction-time history, so ``--known-at`` still answers
what was believed before; a purge erases the episodes and every copy of their text.

Every undo is first done and then, for a preview, rolled back (``tentative``), so a
plan is exactly what applying it does.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, cast

from memctl import repair
from memctl.errors import Ambiguous, BadInput, NotFound, NotUndoable
from memctl.results import Effects, FactChange, UndoKind, UndoPlan
from memctl.store import Queryable, reads
from memctl.store import operations as journal
from memctl.store.connection import Clock, checkpoint, tentative, transaction_time
from memctl.store.episodes import (
    Touched,
    expire_episodes,
    purge_episodes,
    recompute,
    revert_retry,
    revert_revisions,
    revert_undo,
    touched_by,
)
from memctl.store.facts import current_facts, entity_names

if TYPE_CHECKING:
    from sqlite_utils import Database

UNDOABLE_OPERATIONS = ("repair", "retry", "undo")


def _one(db: Queryable, target: str, tables: tuple[str, ...], what: str) -> str:
    """The one id in ``tables`` that ``target`` is, or starts."""
    found = [found for table in tables for found in reads.ids_with_prefix(db, table, target)]
    if not found:
        raise NotFound(f"no {what} matches {target!r}")
    if len(found) > 1:
        raise Ambiguous(f"{target!r} is ambiguous: {', '.join(found[:5])}…; give more characters")
    return found[0]


def episode_id(db: Queryable, target: str) -> str:
    """The episode an id or unique prefix names."""
    return _one(db, target, ("episodes",), "episode")


def resolve_targets(db: Database, targets: list[str], source: Path | None = None) -> list[str]:
    """Episode ids for episode ids, ingest operation ids or unique prefixes, and a source file."""
    episode_ids: dict[str, None] = {}
    for target in targets:
        found = _one(db, target, ("episodes", "operations"), "episode or operation")
        if found.startswith("ep_"):
            episode_ids[found] = None
            continue
        kind = journal.kind_of(db, found)
        if kind != "ingest":
            raise BadInput(f"{found} is a {kind} operation; undo takes episodes, ingest operations, "
                           "or a repair, retry or undo operation on its own")
        ids = reads.episode_ids_of_operation(db, found)
        if not ids:
            raise NotFound(f"{found} has no episodes left: they were purged or ingested again by a later operation")
        episode_ids.update(dict.fromkeys(ids))
    if source is not None:
        resolved = str(source.resolve())
        ids = reads.episode_ids_of_source(db, resolved)
        if not ids:
            raise NotFound(f"no episodes come from {resolved}")
        episode_ids.update(dict.fromkeys(ids))
    if not episode_ids:
        raise BadInput("name at least one episode or operation to undo, or a source file")
    return list(episode_ids)


def _operation(db: Database, target: str) -> tuple[str, str] | None:
    """(id, kind) of the operation ``target`` names, if it names exactly one."""
    found = reads.ids_with_prefix(db, "operations", target)
    if len(found) != 1:
        return None
    kind = journal.kind_of(db, found[0])
    return None if kind is None else (found[0], kind)


def undo(db: Database, clock: Clock, targets: list[str], *, source: Path | None = None, apply: bool = False,
         purge: bool = False) -> UndoPlan:
    """Remove episodes (and with ``purge`` their content, for good), or put back what a
    repair, a retry or an undo changed. A preview unless ``apply``."""
    if len(targets) == 1 and source is None and not purge:
        operation = _operation(db, targets[0])
        if operation is not None and operation[1] in UNDOABLE_OPERATIONS:
            return _undo_operation(db, clock, operation[0], cast(UndoKind, operation[1]), apply=apply)
    episode_ids = resolve_targets(db, targets, source)
    plan = UndoPlan(kind="episodes", purge=purge)
    with tentative(db) as decision:
        statuses = reads.episode_statuses(db, episode_ids)
        at = transaction_time(db, clock)
        touched = Touched()
        # The ingest operations named: undoing one also gives back the readings it
        # replaced (its revised episodes); a purge erases those with the rest.
        operations = [] if purge else [_operation(db, target) for target in targets]
        for operation_id, _ in [op for op in operations if op is not None and op[1] == "ingest"]:
            more, episodes = revert_revisions(db, operation_id, at)
            touched.update(more)
            plan.revisions_reverted += episodes
        reverted = set(plan.revisions_reverted)
        plan.episodes = episode_ids if purge else [e for e in episode_ids
                                                   if statuses[e] == "active" and e not in reverted]
        chosen = set(plan.episodes)
        plan.already_undone = [e for e in episode_ids if e not in chosen and e not in reverted]
        slots = touched_by(db, plan.episodes, active_only=not purge).slots | touched.slots
        before = current_facts(db, slots)
        touched.update(purge_episodes(db, plan.episodes) if purge else expire_episodes(db, plan.episodes, at))
        recompute(db, at, touched)
        plan.effects = effects(db, before, current_facts(db, slots))
        if apply and (plan.episodes or plan.revisions_reverted):
            command = {"targets": targets, "source": str(source) if source else None, "purge": purge}
            with journal.journaled(db, "undo", at, command) as entry:
                entry.counts = {"episodes": len(plan.episodes), **plan.effects.counts()}
                entry.episode_ids = plan.episodes
            plan.applied, plan.operation_id = True, entry.id
            decision.keep()
    if plan.applied and purge and not checkpoint(db):
        plan.unerased = ("another connection is reading an older snapshot of the database, so the file's "
                         "write-ahead log still holds the purged pages; they are erased when the last connection "
                         "to it closes")
    return plan


def _undo_operation(db: Database, clock: Clock, operation_id: str, kind: UndoKind, *, apply: bool) -> UndoPlan:
    """Put back what a repair, a retry or an undo of episodes changed; a plan unless ``apply``."""
    plan = UndoPlan(kind=kind, target=operation_id)
    with tentative(db) as decision:
        done = journal.journaled_row(db, operation_id)
        if kind == "undo" and "purge" not in done.command:
            raise NotUndoable(f"{operation_id} put back what another operation did; to reverse it, "
                              "run that operation again")
        if kind == "undo" and done.command["purge"]:
            raise NotUndoable(f"{operation_id} was a purge: the content is gone; ingest the files again")
        if done.status == "undone":
            plan.already_undone = [operation_id]
            return plan
        at = transaction_time(db, clock)
        if kind == "repair":
            touched = repair.restore(db, operation_id)
        elif kind == "retry":
            touched, plan.episodes, plan.changed_since = revert_retry(db, operation_id, done.at, at)
        else:
            touched, plan.episodes, plan.changed_since = revert_undo(db, done.episode_ids, done.at, at)
        before = current_facts(db, touched.slots, touched.values)
        recompute(db, at, touched)
        plan.effects = effects(db, before, current_facts(db, touched.slots, touched.values))
        if apply and (kind == "repair" or plan.episodes):
            with journal.journaled(db, "undo", at, {"targets": [operation_id]}) as entry:
                entry.counts = {"episodes": len(plan.episodes), **plan.effects.counts()}
                entry.episode_ids = plan.episodes
            journal.mark_undone(db, operation_id)
            plan.applied, plan.operation_id = True, entry.id
            decision.keep()
    return plan


def effects(db: Database, before: list[dict], after: list[dict]) -> Effects:
    """Sort the change in a set of slots' current facts into what a user reads in a plan.

    removed: a fact that no longer exists; reopened: a fact whose end is lifted
    (Austin comes back when NYC is undone); changed: same fact, another interval or
    text; added: a fact that appears (a value split by the removed one, rejoined).
    """
    def key(row: dict) -> tuple:
        return (row["subject_id"], row["predicate_key"], row["object_id"], row["valid_at"])

    kept_ids = {row["id"] for row in before} & {row["id"] for row in after}
    old_by_key = {key(row): row for row in before if row["id"] not in kept_ids}
    new_by_key = {key(row): row for row in after if row["id"] not in kept_ids}
    names = entity_names(db, {id_ for row in [*old_by_key.values(), *new_by_key.values()]
                              for id_ in (row["subject_id"], row["object_id"])})

    def describe(row: dict, old: dict | None = None) -> FactChange:
        return FactChange(fact=row["fact"], subject=names.get(row["subject_id"]), predicate=row["predicate"],
                          object=names.get(row["object_id"]), valid_at=row["valid_at"], invalid_at=row["invalid_at"],
                          compared=old is not None, invalid_at_before=None if old is None else old["invalid_at"])

    result = Effects()
    for k, old in old_by_key.items():
        new = new_by_key.get(k)
        if new is None:
            result.removed.append(describe(old))
        elif new["invalid_at"] is None and old["invalid_at"] is not None:
            result.reopened.append(describe(new, old))
        else:
            result.changed.append(describe(new, old))
    result.added = [describe(row) for k, row in new_by_key.items() if k not in old_by_key]
    return result
