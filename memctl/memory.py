"""The library API: everything the CLI does, callable from Python and tests.

Each public method is one user-visible action. Writes run in ``BEGIN IMMEDIATE``
transactions stamped with one transaction time each; an ingest commits one batch of
whole episodes at a time, so a crash keeps every episode fully in or fully out, and
running the same command again finishes the job.
"""

from __future__ import annotations

import json
import secrets
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path

from sqlite_utils import Database

from memctl import names, repair, times
from memctl import recall as recall_module
from memctl.errors import MemctlError
from memctl.extract import Extractor, Request
from memctl.extract.guard import guard
from memctl.extract.llm import LLMUnavailable
from memctl.ingest import BATCH_EPISODES, IngestReport, batches, read_sources
from memctl.model import Episode
from memctl.sources import IngestOptions
from memctl.store import collector_paused, in_chunks
from memctl.store.connection import Clock, open_database, system_clock, transaction_time, write_transaction
from memctl.store.episodes import (
    Touched,
    expire_episodes,
    grown,
    longest_readings,
    purge_episodes,
    replace_assertions,
    revert_retry,
    revert_revisions,
    revert_undo,
    sort_new,
    store_episodes,
    touched_by,
)
from memctl.store.facts import SlotChanges, current_facts, recompute_slots
from memctl.store.naming import rename_entities

# Episodes handed to an extractor at once (an LLM extractor runs them concurrently),
# and how many earlier episodes of the same source it sees as context.
EXTRACT_CHUNK = 64
CONTEXT_EPISODES = 3
PREDICATES_IN_PROMPT = 50


class _DryRun(Exception):
    """Raised inside a write transaction to roll a preview back."""


def _new_operation_id() -> str:
    return f"op_{secrets.token_hex(6)}"


class Memory:
    def __init__(self, db: Database, clock: Clock = system_clock):
        self.db = db
        self.clock = clock

    @classmethod
    def open(cls, path: str | Path, clock: Clock = system_clock, *, must_exist: bool = False) -> Memory:
        if must_exist and not Path(path).exists():
            raise MemctlError(f"no memory at {path} yet; run 'memctl ingest' first (or pass --db)")
        return cls(open_database(path), clock)

    def close(self) -> None:
        self.db.conn.close()

    def now(self) -> str:
        return times.to_storage(self.clock())

    # --- writing -------------------------------------------------------------------

    def _apply(self, at: str, touched: Touched) -> SlotChanges:
        rename_entities(self.db, touched.entities)
        return recompute_slots(self.db, touched.slots, at, touched.values)

    def _record_operation(self, operation_id: str, kind: str, at: str, command: dict, status: str) -> None:
        self.db.execute(
            "INSERT INTO operations (id, kind, at, status, command) VALUES (?, ?, ?, ?, ?)",
            [operation_id, kind, at, status, json.dumps(command, sort_keys=True)],
        )

    def ingest(self, paths: list[Path], options: IngestOptions, *, extractor: Extractor | None = None,
               batch_size: int = BATCH_EPISODES, on_file: Callable[[Path, int], None] | None = None) -> IngestReport:
        """Ingest files and directories; see ``read_sources`` for what is skipped or refused.

        Episodes that come without assertions (session logs, notes) go through
        ``extractor`` and the date guard; without one they are stored as they are.
        """
        report = IngestReport(extractor=extractor.name if extractor else None)
        command = {"paths": [str(p) for p in paths], **asdict(options), "extractor": report.extractor}
        episodes = read_sources(paths, options, report, on_file)
        if extractor is not None:
            episodes = self._extracted(episodes, extractor, report)
        return self.ingest_episodes(episodes, command=command, batch_size=batch_size, report=report)

    def _extracted(self, episodes: Iterable[Episode], extractor: Extractor, report: IngestReport) -> Iterator[Episode]:
        """Episodes with assertions from ``extractor``, dates guarded; stored ones are not extracted again."""
        recent: dict[str, deque[str]] = {}  # the last few episodes of each source, as context
        for chunk in batches(episodes, EXTRACT_CHUNK):
            if report.llm_unavailable:  # the rest is stored as pending, for the next run
                yield from chunk
                continue
            stored = set()  # pending episodes are not "stored" yet: this run extracts them, as grown ones
            for ids, marks in in_chunks([e.id for e in chunk]):
                stored.update(row[0] for row in self.db.execute(
                    f"SELECT id FROM episodes WHERE status = 'active' AND extraction != 'pending' AND id IN ({marks})",
                    ids).fetchall())
            stored -= grown(self.db, (e for e in chunk if e.id in stored))
            # The predicates in use, so a model keeps calling one relation by one name.
            predicates = tuple(row[0] for row in self.db.execute(
                "SELECT min(predicate) FROM assertions WHERE expired_at IS NULL GROUP BY predicate_key "
                "ORDER BY count(*) DESC LIMIT ?", [PREDICATES_IN_PROMPT]).fetchall())
            requests, by_id = [], {}
            for episode in longest_readings(chunk).values():
                if episode.format == "facts" or episode.id in stored:
                    continue
                context = recent.setdefault(episode.source, deque(maxlen=CONTEXT_EPISODES))
                requests.append(Request(episode.id, episode.content, episode.reference_time, tuple(context),
                                        predicates))
                context.append(episode.content)
                by_id[episode.id] = episode
            try:
                results = list(extractor.extract(requests))
            except LLMUnavailable as error:
                report.llm_unavailable = str(error)
                results = []
            for request, result in results:
                _take_result(report, by_id[request.episode_id], request, result)
            yield from chunk


    def ingest_episodes(
        self, episodes: Iterable[Episode], *, command: dict | None = None, batch_size: int = BATCH_EPISODES,
        report: IngestReport | None = None,
    ) -> IngestReport:
        report = report or IngestReport()
        operation_id = _new_operation_id()
        recorded = False
        try:
            for batch in batches(episodes, batch_size):
                for episode in batch:
                    report.count(episode)
                with write_transaction(self.db):
                    at = transaction_time(self.db, self.clock)
                    added = sort_new(self.db, batch)
                    report.already_present += len(added.already_present)
                    report.extracted_pending += len(added.extracted)
                    if not added.to_store:
                        continue
                    if not recorded:
                        self._record_operation(operation_id, "ingest", at, command or {}, "running")
                        recorded = True
                    store_episodes(self.db, added, at, operation_id)
                    changes = self._apply(at, added.touched)
                    report.added += len(added.added)
                    report.reactivated += len(added.reactivated)
                    report.revised += len(added.revised)
                    report.assertions += added.assertions
                    report.facts_created += len(changes.inserted)
                    report.facts_expired += len(changes.expired)
                    self._set_counts(operation_id, report)
        except BaseException:
            # Committed batches stay (each holds whole episodes); say the rest never came.
            if recorded:
                self._finish(operation_id, "interrupted")
            raise
        if recorded:
            report.operation_id = operation_id
            self._finish(operation_id, "done")
        return report

    def _finish(self, operation_id: str, status: str) -> None:
        with write_transaction(self.db):
            self.db.execute(
                "UPDATE operations SET status = ?, finished_at = ? WHERE id = ?",
                [status, transaction_time(self.db, self.clock), operation_id],
            )

    def _set_counts(self, operation_id: str, report: IngestReport) -> None:
        counts = {k: getattr(report, k)
                  for k in ("added", "reactivated", "revised", "assertions", "facts_created", "facts_expired")}
        self.db.execute("UPDATE operations SET counts = ? WHERE id = ?", [json.dumps(counts), operation_id])

    # --- undo ----------------------------------------------------------------------

    def _lookup(self, table: str, prefix: str) -> list[str]:
        return [row[0] for row in self.db.execute(
            f"SELECT id FROM {table} WHERE id >= ? AND id < ? ORDER BY id LIMIT 6", [prefix, prefix + "\U0010ffff"]
        ).fetchall()]

    def resolve_targets(self, targets: list[str], source: Path | None = None) -> list[str]:
        """Episode ids for episode ids, operation ids or unique prefixes, and --source."""
        episode_ids: dict[str, None] = {}
        for target in targets:
            found = self._lookup("episodes", target) + self._lookup("operations", target)
            if not found:
                raise MemctlError(f"no episode or operation matches {target!r}; 'memctl episodes' lists them")
            if len(found) > 1:
                raise MemctlError(f"{target!r} is ambiguous: {', '.join(found[:5])}…; give more characters")
            if found[0].startswith("ep_"):
                episode_ids[found[0]] = None
                continue
            kind = self.db.execute("SELECT kind FROM operations WHERE id = ?", found).fetchone()[0]
            if kind != "ingest":
                raise MemctlError(f"{found[0]} is a {kind} operation; undo takes episodes, ingest operations, "
                                  "or a repair, retry or undo operation on its own")
            rows = self.db.execute("SELECT id FROM episodes WHERE operation_id = ? ORDER BY id", found).fetchall()
            if not rows:
                raise MemctlError(f"{found[0]} has no episodes left: they were purged or ingested again by a later operation")
            episode_ids.update((row[0], None) for row in rows)
        if source is not None:
            resolved = str(source.resolve())
            rows = self.db.execute("SELECT id FROM episodes WHERE source = ? ORDER BY position", [resolved]).fetchall()
            if not rows:
                raise MemctlError(f"no episodes come from {resolved}")
            episode_ids.update((row[0], None) for row in rows)
        if not episode_ids:
            raise MemctlError("name at least one episode or operation to undo, or --source PATH")
        return list(episode_ids)

    def _ingest_operations(self, targets: list[str]) -> list[str]:
        """The ingest operations among ``targets`` (ids or unique prefixes)."""
        found = [self._lookup("operations", target) for target in targets]
        return [ids[0] for ids in found if len(ids) == 1 and self.db.execute(
            "SELECT kind FROM operations WHERE id = ?", ids).fetchone()[0] == "ingest"]

    def undo(self, targets: list[str], *, source: Path | None = None, apply: bool = False, purge: bool = False) -> dict:
        """Remove episodes (and with ``purge`` their content, for good), or put back what a
        repair, a retry or an undo changed. A preview unless ``apply``."""
        if len(targets) == 1 and source is None and not purge:
            found = self._lookup("operations", targets[0])
            kind = self.db.execute("SELECT kind FROM operations WHERE id = ?", found).fetchone()[0] if len(found) == 1 else None
            if kind in ("repair", "retry", "undo"):
                return self._undo_operation(found[0], kind, apply=apply)
        episode_ids = self.resolve_targets(targets, source)
        plan: dict = {}
        try:
            with write_transaction(self.db):
                statuses = {}
                for chunk, marks in in_chunks(episode_ids):
                    statuses.update(self.db.execute(f"SELECT id, status FROM episodes WHERE id IN ({marks})", chunk).fetchall())
                at = transaction_time(self.db, self.clock)
                # An ingest that revised episodes (read them again, grown) gives back the
                # readings it replaced; a purge erases them with the rest.
                touched, reverted = Touched(), []
                for operation_id in [] if purge else self._ingest_operations(targets):
                    more, episodes = revert_revisions(self.db, operation_id, at)
                    touched.update(more)
                    reverted += episodes
                chosen = episode_ids if purge else [e for e in episode_ids
                                                    if statuses[e] == "active" and e not in reverted]
                slots = touched_by(self.db, chosen, active_only=not purge).slots | touched.slots
                before = current_facts(self.db, slots)
                touched.update(purge_episodes(self.db, chosen) if purge else expire_episodes(self.db, chosen, at))
                self._apply(at, touched)
                plan = {
                    "episodes": chosen,
                    "revisions_reverted": reverted,
                    "already_undone": [e for e in episode_ids if e not in chosen and e not in reverted],
                    "purge": purge,
                    **_classify(self.db, before, current_facts(self.db, slots)),
                    "applied": False,
                    "operation_id": None,
                }
                if not apply or not (chosen or reverted):
                    raise _DryRun
                operation_id = _new_operation_id()
                self._record_operation(operation_id, "undo", at, {"targets": targets, "source": str(source) if source else None, "purge": purge}, "done")
                counts = {k: len(plan[k]) for k in ("removed", "reopened", "changed", "added")}
                self.db.execute(
                    "UPDATE operations SET finished_at = ?, counts = ?, episode_ids = ? WHERE id = ?",
                    [at, json.dumps({"episodes": len(chosen), **counts}), json.dumps(chosen), operation_id],
                )
                plan.update(applied=True, operation_id=operation_id)
        except _DryRun:
            pass
        return plan

    def retry(self, targets: list[str], extractor: Extractor, *, failed: bool = False, dry_run: bool = False) -> dict:
        """Re-extract episodes from their stored content; swap their assertions in one
        transaction. With ``dry_run``, show what the swap would change and roll it back."""
        if failed:
            ids = [row[0] for row in self.db.execute(
                "SELECT id FROM episodes WHERE status = 'active' AND extraction IN ('failed', 'pending') "
                "ORDER BY reference_time, id").fetchall()]
        else:
            ids = self.resolve_targets(targets)
        rows = []
        for chunk, marks in in_chunks(ids):
            rows += self.db.execute(
                f"SELECT id, content, reference_time, source, position, extraction FROM episodes "
                f"WHERE status = 'active' AND id IN ({marks}) ORDER BY reference_time, id", chunk).fetchall()
        structured = [row[0] for row in rows if row[5] == "structured"]
        if structured:
            raise MemctlError(f"{structured[0]} came with its assertions (--format facts): nothing to re-extract; "
                              "correct the file, undo the episode and ingest it again")
        report = IngestReport(extractor=extractor.name)
        retried = {row[0]: _Retried(row[0], row[2]) for row in rows}
        requests = [Request(row[0], row[1], row[2], self._context(row[3], row[4])) for row in rows]
        for request, result in extractor.extract(requests):  # outside the write lock: model calls are slow
            _take_result(report, retried[request.episode_id], request, result)
        episodes = list(retried.values())
        operation_id = None
        effects: dict[str, list[dict]] = {"removed": [], "reopened": [], "changed": [], "added": []}
        try:
            with write_transaction(self.db):
                # Extraction ran outside the lock: skip what another process undid meanwhile.
                still = set()
                for chunk, marks in in_chunks([e.id for e in episodes]):
                    still.update(row[0] for row in self.db.execute(
                        f"SELECT id FROM episodes WHERE status = 'active' AND id IN ({marks})", chunk).fetchall())
                episodes = [e for e in episodes if e.id in still]
                if episodes:
                    at = transaction_time(self.db, self.clock)
                    operation_id = _new_operation_id()
                    self._record_operation(operation_id, "retry", at, {"episodes": ids, "extractor": extractor.name}, "done")
                    touched = replace_assertions(self.db, episodes, at, operation_id)
                    before = current_facts(self.db, touched.slots)
                    changes = self._apply(at, touched)
                    effects = _classify(self.db, before, current_facts(self.db, touched.slots))
                    if dry_run:  # the replies are cached: doing it for real costs no further call
                        raise _DryRun
                    counts = {"episodes": len(episodes), "assertions": sum(len(e.assertions) for e in episodes),
                              "failures": report.extraction_failures, "model_calls": report.extraction_calls,
                              "cache_hits": report.cache_hits, "guard_changes": report.guard_changes,
                              "facts_created": len(changes.inserted), "facts_expired": len(changes.expired)}
                    self.db.execute("UPDATE operations SET finished_at = ?, counts = ?, episode_ids = ? WHERE id = ?",
                                    [at, json.dumps(counts), json.dumps(ids), operation_id])
        except _DryRun:
            operation_id = None
        return {"episodes": [e.id for e in episodes], "extractor": extractor.name,
                "assertions": sum(len(e.assertions) for e in episodes), "failures": report.extraction_failures,
                "model_calls": report.extraction_calls, "cache_hits": report.cache_hits,
                "guard_changes": report.guard_changes, **effects, "applied": operation_id is not None,
                "operation_id": operation_id}

    def _context(self, source: str, position: int) -> tuple[str, ...]:
        """The episodes just before this one in its source, oldest first, as ingest gave them."""
        rows = self.db.execute(
            "SELECT content FROM episodes WHERE source = ? AND position < ? AND status = 'active' "
            "ORDER BY position DESC LIMIT ?", [source, position, CONTEXT_EPISODES]).fetchall()
        return tuple(row[0] for row in reversed(rows))

    def repair_midnights(self, *, apply: bool = False) -> dict:
        """DESIGN §4 ``repair midnight-hallucinations``: a plan, or with ``apply`` one journaled change."""
        if not apply:  # a preview reads; it need not keep other writers waiting
            with collector_paused():
                repair_plan = repair.plan(self.db)
            return {**repair_plan.counts(), "applied": False, "operation_id": None,
                    "sample": [vars(fix) for fix in repair_plan.fixes[:20]]}
        with write_transaction(self.db):
            repair_plan = repair.plan(self.db)
            result = {**repair_plan.counts(), "applied": False, "operation_id": None,
                      "sample": [vars(fix) for fix in repair_plan.fixes[:20]]}
            if not repair_plan.fixes:
                return result
            at = transaction_time(self.db, self.clock)
            operation_id = _new_operation_id()
            self._record_operation(operation_id, "repair", at, {"repair": "midnight-hallucinations"}, "done")
            changes = self._apply(at, repair.apply(self.db, repair_plan, operation_id))
            counts = {**repair_plan.counts(), "facts_created": len(changes.inserted), "facts_expired": len(changes.expired)}
            self.db.execute("UPDATE operations SET finished_at = ?, counts = ? WHERE id = ?",
                            [at, json.dumps(counts), operation_id])
        return {**result, "applied": True, "operation_id": operation_id}

    def _undo_operation(self, operation_id: str, kind: str, *, apply: bool) -> dict:
        """Put back what a repair, a retry or an undo of episodes changed; a plan unless ``apply``."""
        plan: dict = {}
        try:
            with write_transaction(self.db):
                status, operation_at, command, episode_ids = self.db.execute(
                    "SELECT status, at, command, episode_ids FROM operations WHERE id = ?", [operation_id]).fetchone()
                command = json.loads(command or "{}")
                if kind == "undo" and "purge" not in command:
                    raise MemctlError(f"{operation_id} put back what another operation did; to reverse it, "
                                      "run that operation again")
                if kind == "undo" and command["purge"]:
                    raise MemctlError(f"{operation_id} was a purge: the content is gone; ingest the files again")
                plan = {"episodes": [], kind: operation_id, "already_undone": [], "changed_since": [],
                        "purge": False, "removed": [], "reopened": [], "changed": [], "added": [],
                        "applied": False, "operation_id": None}
                if status == "undone":
                    plan["already_undone"] = [operation_id]
                    return plan
                at = transaction_time(self.db, self.clock)
                if kind == "repair":
                    touched = repair.restore(self.db, operation_id)
                elif kind == "retry":
                    touched, plan["episodes"], plan["changed_since"] = revert_retry(
                        self.db, operation_id, operation_at, at)
                else:
                    touched, plan["episodes"], plan["changed_since"] = revert_undo(
                        self.db, json.loads(episode_ids or "[]"), operation_at, at)
                before = current_facts(self.db, touched.slots, touched.values)
                self._apply(at, touched)
                plan.update(_classify(self.db, before, current_facts(self.db, touched.slots, touched.values)))
                if not apply or (kind != "repair" and not plan["episodes"]):
                    raise _DryRun
                undo_id = _new_operation_id()
                self._record_operation(undo_id, "undo", at, {"targets": [operation_id]}, "done")
                counts = {k: len(plan[k]) for k in ("episodes", "removed", "reopened", "changed", "added")}
                self.db.execute("UPDATE operations SET finished_at = ?, counts = ?, episode_ids = ? WHERE id = ?",
                                [at, json.dumps(counts), json.dumps(plan["episodes"]), undo_id])
                self.db.execute("UPDATE operations SET status = 'undone' WHERE id = ?", [operation_id])
                plan.update(applied=True, operation_id=undo_id)
        except _DryRun:
            pass
        return plan

    def rebuild(self) -> dict:
        """Recompute every fact from the assertions; on a healthy store this changes nothing."""
        with write_transaction(self.db):
            at = transaction_time(self.db, self.clock)
            touched = Touched(
                slots=set(self.db.execute(
                    "SELECT subject_id, predicate_key FROM assertions UNION SELECT subject_id, predicate_key FROM facts WHERE expired_at IS NULL"
                ).fetchall()),
                entities={row[0] for row in self.db.execute("SELECT id FROM entities").fetchall()},
            )
            changes = self._apply(at, touched)
            counts = {"slots": len(touched.slots), "facts_created": len(changes.inserted), "facts_expired": len(changes.expired)}
            operation_id = None
            if changes.inserted or changes.expired:
                operation_id = _new_operation_id()
                self._record_operation(operation_id, "rebuild", at, {}, "done")
                self.db.execute("UPDATE operations SET finished_at = ?, counts = ? WHERE id = ?",
                                [at, json.dumps(counts), operation_id])
        return {**counts, "operation_id": operation_id}

    # --- reading -------------------------------------------------------------------

    def recall(self, query: str, *, as_of: str | None = None, known_at: str | None = None,
               limit: int = 10, history: bool = False) -> dict:
        # "What memctl believed at K" defaults to what it would have answered then.
        effective_as_of = as_of or known_at or self.now()
        results = recall_module.recall(self.db, query, as_of=effective_as_of, known_at=known_at,
                                       limit=limit, history=history)
        return {"query": query, "as_of": effective_as_of, "known_at": known_at, "results": results}

    def episodes(self, *, source: Path | None = None, status: str | None = None, limit: int | None = None) -> list[dict]:
        where, params = ["1"], []
        if source is not None:
            where.append("source = ?")
            params.append(str(source.resolve()))
        if status is not None:
            where.append("status = ?")
            params.append(status)
        cursor = self.db.execute(
            f"""SELECT id, source, position, format, reference_time, reference_time_source, status
                FROM episodes WHERE {' AND '.join(where)} ORDER BY reference_time, id
                {'LIMIT ?' if limit else ''}""",
            params + ([limit] if limit else []),
        )
        columns = [d[0] for d in cursor.description]
        return [dict(zip(columns, row)) for row in cursor.fetchall()]

    def episode(self, target: str) -> dict:
        found = self._lookup("episodes", target)
        if len(found) != 1:
            raise MemctlError(
                f"no episode matches {target!r}" if not found else f"{target!r} is ambiguous: {', '.join(found[:5])}"
            )
        episode = self.db.table("episodes").get(found[0])
        cursor = self.db.execute(
            """SELECT id, subject, predicate, object, fact, valid_at, valid_at_evidence, valid_at_precision,
                      invalid_at, invalid_at_evidence, invalid_at_precision, cardinality, extractor, extracted_at,
                      created_at, expired_at
               FROM assertions WHERE episode_id = ? ORDER BY created_at, ordinal""",
            [episode["id"]],
        )
        columns = [d[0] for d in cursor.description]
        episode["assertions"] = [dict(zip(columns, row)) for row in cursor.fetchall()]
        facts = recall_module.fact_rows(
            self.db,
            "f.expired_at IS NULL AND f.id IN (SELECT p.fact_id FROM fact_provenance p JOIN assertions a "
            "ON a.id = p.assertion_id WHERE a.episode_id = ? AND a.expired_at IS NULL)",
            [episode["id"]],
            order="f.valid_at, f.id",
        )
        now = self.now()
        for fact in facts:
            fact["status"] = recall_module.status(fact, now)
        episode["facts"] = facts
        return episode

    def history(self, entity: str) -> dict:
        row = self.db.execute("SELECT id, name FROM entities WHERE name_key = ?", [names.entity_key(entity)]).fetchone()
        if row is None:
            raise MemctlError(f"no entity named {entity!r}; try 'memctl recall {entity}'")
        facts = recall_module.fact_rows(
            self.db, "f.expired_at IS NULL AND f.subject_id = ?", [row[0]], order="f.predicate_key, f.valid_at, f.id"
        )
        recall_module.attach_episodes(self.db, facts, None)
        now = self.now()
        slots: dict[str, dict] = {}
        for fact in facts:
            fact["status"] = recall_module.status(fact, now)
            slot = slots.setdefault(fact.pop("predicate_key"), {
                "predicate": fact["predicate"], "cardinality": fact["cardinality"], "facts": []})
            slot["facts"].append(fact)
        return {"entity": row[1], "slots": list(slots.values())}

    def stats(self) -> dict:
        one = lambda sql, *p: self.db.execute(sql, p).fetchone()[0]  # noqa: E731
        now = self.now()
        low, high = self.db.execute(
            "SELECT min(reference_time), max(reference_time) FROM episodes WHERE status = 'active'"
        ).fetchone()
        return {
            "episodes": one("SELECT count(*) FROM episodes WHERE status = 'active'"),
            "episodes_undone": one("SELECT count(*) FROM episodes WHERE status = 'undone'"),
            "assertions": one("SELECT count(*) FROM assertions WHERE expired_at IS NULL"),
            "entities": one(
                "SELECT count(*) FROM entities WHERE id IN (SELECT subject_id FROM assertions WHERE expired_at IS NULL"
                " UNION SELECT object_id FROM assertions WHERE expired_at IS NULL)"
            ),
            "facts_valid_now": one(
                "SELECT count(*) FROM facts WHERE expired_at IS NULL AND valid_at <= ? AND (invalid_at IS NULL OR ? < invalid_at)",
                now, now,
            ),
            "facts_current_versions": one("SELECT count(*) FROM facts WHERE expired_at IS NULL"),
            "fact_versions": one("SELECT count(*) FROM facts"),
            "operations": one("SELECT count(*) FROM operations"),
            "reference_time_range": [low, high],
        }

    def operations(self) -> list[dict]:
        rows = self.db.execute(
            "SELECT id, kind, at, finished_at, status, command, counts FROM operations ORDER BY at, id"
        ).fetchall()
        return [
            {"id": r[0], "kind": r[1], "at": r[2], "finished_at": r[3], "status": r[4],
             "command": json.loads(r[5] or "{}"), "counts": json.loads(r[6] or "{}")}
            for r in rows
        ]


@dataclass
class _Retried:
    """What a retry writes for one stored episode: its new assertions and extraction state."""

    id: str
    reference_time: str
    assertions: list = field(default_factory=list)
    extraction: str = "done"
    extraction_error: str | None = None


def _take_result(report: IngestReport, episode: Episode | _Retried, request: Request, result) -> None:
    """An extractor's answer for one episode: counted, and its assertions' dates guarded."""
    report.extraction_calls += result.calls
    report.cache_hits += result.cache_hit
    report.input_tokens += result.input_tokens
    report.output_tokens += result.output_tokens
    if result.error is not None:
        report.extraction_failures += 1
        episode.extraction, episode.extraction_error = "failed", result.error
        return
    episode.extraction, episode.extraction_error = "done", None
    for assertion in result.assertions:
        guarded, changes = guard(assertion, request.text, request.reference_time)
        report.guard_changes += len(changes)
        episode.assertions.append(guarded)


def _classify(db: Database, before: list[dict], after: list[dict]) -> dict[str, list[dict]]:
    """Sort the change in a set of slots' current facts into what a user reads in a plan.

    removed: a fact that no longer exists; reopened: a fact whose end is lifted
    (Austin comes back when NYC is undone); changed: same fact, another interval or
    text; added: a fact that appears (a value split by the removed one, rejoined).
    """
    def key(row: dict) -> tuple:
        return (row["subject_id"], row["predicate_key"], row["object_id"], row["valid_at"])

    def describe(row: dict, old: dict | None = None) -> dict:
        names_by_id = dict(db.execute(
            "SELECT id, name FROM entities WHERE id IN (?, ?)", [row["subject_id"], row["object_id"]]
        ).fetchall())
        out = {"fact": row["fact"], "subject": names_by_id.get(row["subject_id"]), "predicate": row["predicate"],
               "object": names_by_id.get(row["object_id"]), "valid_at": row["valid_at"], "invalid_at": row["invalid_at"]}
        if old is not None:
            out["invalid_at_before"] = old["invalid_at"]
        return out

    kept_ids = {row["id"] for row in before} & {row["id"] for row in after}
    old_by_key = {key(row): row for row in before if row["id"] not in kept_ids}
    new_by_key = {key(row): row for row in after if row["id"] not in kept_ids}
    result: dict[str, list[dict]] = {"removed": [], "reopened": [], "changed": [], "added": []}
    for k, old in old_by_key.items():
        new = new_by_key.get(k)
        if new is None:
            result["removed"].append(describe(old))
        elif new["invalid_at"] is None and old["invalid_at"] is not None:
            result["reopened"].append(describe(new, old))
        else:
            result["changed"].append(describe(new, old))
    result["added"] = [describe(row) for k, row in new_by_key.items() if k not in old_by_key]
    return result
