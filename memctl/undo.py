"""Undo: take episodes back out, or put back what a repair, a retry, an undo or a resolve changed.

Undoing episodes is the exact inverse of ingesting them: their assertions expire, the
slots they touched are recomputed, and facts they had ended come back open. The
expired versions stay in the transaction-time history, so ``--known-at`` still answers
what was believed before; a purge erases the episodes and every copy of their text.

Every undo is first done and then, for a preview, rolled back (``tentative``), so a
plan is exactly what applying it does.
"""

from __future__ import annotations

import time
from contextlib import nullcontext
from pathlib import Path
from typing import TYPE_CHECKING, cast

from memctl import repair
from memctl.effects import effects
from memctl.errors import Ambiguous, BadInput, NotFound, NotUndoable
from memctl.long_operation import LongOperation
from memctl.reports import UndoKind, UndoPlan
from memctl.store import Queryable, next_batch_size, reads, underived
from memctl.store import operations as journal
from memctl.store.changed import ChangedVersions
from memctl.store.connection import (
    UNDO_CACHE_KIB,
    Clock,
    cache_of,
    checkpoint,
    data_version,
    database_file,
    snapshot,
    tentative,
    transaction_time,
    write_transaction,
)
from memctl.store.episodes import (
    Touched,
    expire_episodes,
    latest_first,
    purge_episodes,
    recompute,
    rename,
    restore_assertions,
    revert_retry,
    revert_revisions,
    revert_undo,
)

if TYPE_CHECKING:
    from memctl.store import Database

UNDOABLE_OPERATIONS = ("repair", "retry", "undo", "resolve", "merge", "split")


def _one(db: Queryable, target: str, tables: tuple[str, ...], what: str) -> str:
    """The one id in ``tables`` that ``target`` is, or starts."""
    if not target.strip():  # "" starts every id: it names none
        raise BadInput(f"name the {what} by its id (or a prefix of it), not an empty string")
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
                           "or a repair, retry, undo, resolve, merge or split operation on its own")
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


# Episodes per write transaction: each batch holds the write lock about UNDO_BATCH_SECONDS,
# and a writer waiting for it gets it between two (store.turns), so a long undo never keeps
# another writer waiting for long. What a batch costs depends
# on the store (2,000 episodes took 5 s at 1M assertions, 0.6 s at 100k), so the first is
# small and each next one is sized from how long the last took, growing at most twofold;
# bigger batches cost less per episode (fewer commits, hot slots resolved once per batch).
UNDO_FIRST_BATCH = 250
UNDO_MAX_BATCH = 20000
UNDO_BATCH_SECONDS = 1.5
# A preview of more episodes than this runs on a copy of the file rather than holding the
# write lock while it is done and rolled back; a smaller one is not worth copying the file.
PREVIEW_ON_A_COPY = 2000


def undo(db: Database, clock: Clock, targets: list[str], *, source: Path | None = None, apply: bool = False,
         purge: bool = False) -> UndoPlan:
    """Remove episodes (and with ``purge`` their content, for good), or put back what a
    repair, a retry or an undo changed. A preview unless ``apply``."""
    if len(targets) == 1 and source is None and not purge:
        operation = _operation(db, targets[0])
        if operation is not None and operation[1] in UNDOABLE_OPERATIONS:
            return _undo_operation(db, clock, operation[0], cast(UndoKind, operation[1]), apply=apply)
    plan = UndoPlan(kind="episodes", purge=purge)
    with cache_of(db, UNDO_CACHE_KIB):
        episode_ids = resolve_targets(db, targets, source)
        if not apply:
            # Done, read and rolled back, in one transaction; a long one on a copy of the file,
            # so that other writers need not wait for the preview (the copy takes no lock).
            on_a_copy = len(episode_ids) > PREVIEW_ON_A_COPY and database_file(db) is not None
            with snapshot(db) if on_a_copy else nullcontext(db) as previewed, tentative(previewed), \
                    cache_of(previewed, UNDO_CACHE_KIB):
                _undo_episodes(previewed, clock, plan, targets, episode_ids, None)
            return plan
        command = {"targets": targets, "source": str(source) if source else None, "purge": purge}
        _undo_episodes(db, clock, plan, targets, episode_ids, command)
    if plan.applied and purge and not checkpoint(db):
        plan.unerased = UNERASED
    return plan


UNERASED = ("another connection is reading an older snapshot of the database, so the file's write-ahead log "
            "still holds the purged pages; they are erased when the last connection to it closes")


def _undo_episodes(db: Database, clock: Clock, plan: UndoPlan, targets: list[str], episode_ids: list[str],
                   command: dict | None) -> None:
    """Take the episodes out in batches (``UNDO_FIRST_BATCH``, then sized by time), each in
    a write transaction of its own (``command``: the operation to journal) or all in the
    caller's (None: a preview).

    Every batch leaves the store consistent, and the whole is one operation in the
    journal: running until its last batch, else interrupted. Undoing it puts back the
    episodes its batches took out, and its effects are what all of them did together.
    """
    # On disk past its cache, but never a purge's: its facts may hold what it erases.
    changes = ChangedVersions(on_disk=not plan.purge)
    operation = LongOperation(db, clock, changes.absorb, preview=command is None)
    # Read before the write lock: a whole ingest's 333k episodes take seconds to look up,
    # which the first batch would hold the lock for. Read again under the lock only if
    # another connection committed in between.
    seen = data_version(db)
    found = latest_first(db, episode_ids)
    with operation.running():
        with operation.batch() as at:
            if data_version(db) != seen:
                found = latest_first(db, episode_ids)
            touched = Touched()
            # The ingest operations named: undoing one also gives back the readings it
            # replaced (its revised episodes); a purge erases those with the rest.
            operations = [] if plan.purge else [_operation(db, target) for target in targets]
            for operation_id, _ in [op for op in operations if op is not None and op[1] == "ingest"]:
                more, episodes = revert_revisions(db, operation_id, at)
                touched.update(more)
                plan.revisions_reverted += episodes
            ordered = _chosen(plan, episode_ids, *found)
            # A purge erases fact versions: it needs them exact at once. A preview owes as the
            # undo it shows would: it then costs what that does.
            if command is None or plan.episodes or plan.revisions_reverted:
                entry = operation.start("undo", at, command or {}, owes=not plan.purge)
                if entry is not None:
                    entry.episode_ids = []
                if operation.owed is not None:
                    operation.owed.taking_out(db, plan.episodes)
            size, began = UNDO_FIRST_BATCH, time.monotonic()
            _undo_batch(db, at, ordered[:size], touched, plan.purge, operation.entry, changes)
        start = size
        while start < len(ordered):
            size = next_batch_size(size, time.monotonic() - began, UNDO_BATCH_SECONDS, least=100, most=UNDO_MAX_BATCH)
            with operation.batch() as at:
                began = time.monotonic()
                _undo_batch(db, at, ordered[start:start + size], Touched(), plan.purge, operation.entry, changes,
                            operation.owed)
            start += size
            operation.derive_if_due()
    plan.effects = effects(db, changes)
    entry = operation.entry
    if entry is not None:
        with write_transaction(db):
            entry.counts = {"episodes": len(plan.episodes), **plan.effects.counts()}
            entry.episode_ids = plan.episodes  # all of them, in the order the plan names them
            journal.save_counts(db, entry)
            journal.finish(db, entry.id, "done", transaction_time(db, clock))
        plan.applied, plan.operation_id = True, entry.id


def _chosen(plan: UndoPlan, episode_ids: list[str], ordered: list[str], inactive: dict[str, str]) -> list[str]:
    """The plan's episodes (those still active, all of them for a purge) and those already
    undone; the episodes to take out, latest first: each batch then takes the ends of
    timelines off, where a slot's facts end rather than split and rejoin, and the next
    batch finds less to redo."""
    if plan.purge:
        plan.episodes = episode_ids
        return ordered
    reverted = set(plan.revisions_reverted)
    left_out = reverted | inactive.keys()
    plan.episodes = [e for e in episode_ids if e not in left_out]
    plan.already_undone = [e for e in episode_ids if e in inactive and e not in reverted]
    return [e for e in ordered if e not in left_out]


def _undo_batch(db: Database, at: str, episode_ids: list[str], touched: Touched, purge: bool,
                entry: journal.Entry | None, changes: ChangedVersions, owed: underived.Owed | None = None) -> None:
    """One batch of an undo: its episodes out, the facts recomputed (or, with ``owed``,
    owed) and what that did kept in ``changes``, and the journal's list of episodes
    taken out brought up to date."""
    if purge:
        changes.absorb(purge_episodes(db, episode_ids, at))
    else:
        touched.update(expire_episodes(db, episode_ids, at))
        if owed is None:
            changes.absorb(recompute(db, at, touched))
        else:
            rename(db, touched)
            owed.add(db, touched, at, changes.absorb)
    if entry is not None:
        assert entry.episode_ids is not None
        entry.episode_ids += episode_ids
        entry.counts = {"episodes": len(entry.episode_ids)}
        journal.save_counts(db, entry)


def _undo_operation(db: Database, clock: Clock, operation_id: str, kind: UndoKind, *, apply: bool) -> UndoPlan:
    """Put back what a repair, a retry, an undo of episodes or a resolve changed; a plan unless ``apply``."""
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
        elif kind == "resolve":  # its statements back; the plan names their episodes
            touched, restored, left = restore_assertions(db, done.command["assertions"], done.at, at)
            plan.episodes = reads.episodes_of_assertions(db, restored)
            plan.changed_since = reads.episodes_of_assertions(db, left)
        elif kind in ("merge", "split"):
            from memctl import merging

            touched, restored = merging.revert(db, operation_id, kind, done, at)
            plan.episodes = reads.episodes_of_assertions(db, restored)
        else:
            touched, plan.episodes, plan.changed_since = revert_undo(db, done.episode_ids, done.at, at)
        plan.effects = effects(db, recompute(db, at, touched))
        # (a resolve's, merge's or split's episodes: those it gives statements back; a merge of an
        # entity no statement named any more is undone all the same, as what resolves names changes)
        if apply and (kind in ("repair", "merge", "split") or plan.episodes):
            with journal.journaled(db, "undo", at, {"targets": [operation_id]}) as entry:
                entry.counts = {"episodes": len(plan.episodes), **plan.effects.counts()}
                entry.episode_ids = plan.episodes
            journal.mark_undone(db, operation_id)
            plan.applied, plan.operation_id = True, entry.id
            decision.keep()
    return plan
