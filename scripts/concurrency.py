"""Many writers on one store at once (issue 33's concurrency figures): ``scripts/bench.py
--concurrency [--concurrency-writers 1,2,4,8] [--concurrency-adds 60]``.

For each writer count N, N processes write at the same time to one fresh store while one
more process recalls in a loop: half of the writers add memories one by one, as agents
over MCP do (``Memory.add_memory`` with a fact each), the other half ingest a facts file
of their own, as a backfill does (one writer: it adds). Measured per N: writes done per
second over the wall time, errors (any exception a writer or the reader met), lost writes
(episodes a writer was told were stored and the store does not hold, and facts missing
from what the stored statements make), and the reader's recalls per second meanwhile.

Each writer count runs on a new SQLite file, and with ``--postgres`` on a new PostgreSQL
database too, so that the two backends' rows stand side by side (docs/postgres.md).
"""

from __future__ import annotations

import json
import multiprocessing
import tempfile
import time
from pathlib import Path

from memctl import IngestOptions, Memory

EPOCH_DAY = "2024-01-{day:02d}"


def _statement(writer: int, n: int) -> dict:
    """Writer ``writer``'s ``n``-th statement: a value of its own slot, one per day."""
    return {"subject": f"service{writer}", "predicate": "version", "object": f"v{writer}.{n}",
            "valid_at": f"2024-{1 + n // 28:02d}-{1 + n % 28:02d}", "cardinality": "one"}


def _adder(path: str, writer: int, adds: int, start: float, out) -> None:
    while time.time() < start:
        time.sleep(0.001)
    memory = Memory.open(path)
    stored, errors = [], []
    for n in range(adds):
        fact = _statement(writer, n)
        try:
            added = memory.add_memory(f"service{writer} is now at version {fact['object']}",
                                      reference_time=fact["valid_at"], facts=[fact])
            stored.append(added.episode_id)
        except Exception as error:  # a lock error is exactly what this measures
            errors.append(f"{type(error).__name__}: {error}")
    memory.close()
    out.put({"writer": writer, "stored": stored, "errors": errors, "done": time.time()})


def _ingester(path: str, writer: int, adds: int, start: float, out, folder: str) -> None:
    facts = Path(folder) / f"writer{writer}.facts.jsonl"
    facts.write_text("".join(json.dumps({"reference_time": s["valid_at"], "facts": [s]}) + "\n"
                             for s in (_statement(writer, n) for n in range(adds))))
    while time.time() < start:
        time.sleep(0.001)
    memory = Memory.open(path)
    stored, errors = [], []
    try:
        report = memory.ingest([facts], IngestOptions())
        stored = [e.id for e in memory.episodes(source=facts)] if not report.partial else []
        if report.partial:
            errors.append(f"partial: {report.to_json()}")
    except Exception as error:
        errors.append(f"{type(error).__name__}: {error}")
    memory.close()
    out.put({"writer": writer, "stored": stored, "errors": errors, "done": time.time()})


def _reader(path: str, start: float, stop, out) -> None:
    while time.time() < start:
        time.sleep(0.001)
    memory = Memory.open(path)
    recalls, errors = 0, []
    while not stop.is_set():
        try:
            memory.recall("which version is service0 at")
            recalls += 1
        except Exception as error:
            errors.append(f"{type(error).__name__}: {error}")
    memory.close()
    out.put({"reader": True, "recalls": recalls, "errors": errors, "done": time.time()})


def run(writers: int, adds: int, folder: Path, path: str | Path) -> dict:
    """One store (a file's path or a database's URL), ``writers`` writers and a reader at
    once; what came of it."""
    Memory.open(path).close()  # the schema in place before anyone races to make it
    context = multiprocessing.get_context("spawn")
    out, stop = context.Queue(), context.Event()
    start = time.time() + 2.0  # every process started and imported before the first write
    processes = []
    for writer in range(writers):
        if writers > 1 and writer % 2:
            target, args = _ingester, (str(path), writer, adds, start, out, str(folder))
        else:
            target, args = _adder, (str(path), writer, adds, start, out)
        processes.append(context.Process(target=target, args=args))
    reader = context.Process(target=_reader, args=(str(path), start, stop, out))
    for process in [*processes, reader]:
        process.start()
    results = [out.get(timeout=600) for _ in processes]
    stop.set()
    read = out.get(timeout=60)
    for process in [*processes, reader]:
        process.join(timeout=60)
    wall = max(r["done"] for r in results) - start
    memory = Memory.open(path)
    held = {e.id for e in memory.episodes()}
    told = [episode for r in results for episode in r["stored"]]
    current = {f.subject: f.object for f in memory.facts()}
    memory.close()
    expected = {f"service{w}": f"v{w}.{adds - 1}" for w in range(writers)}
    return {
        "writers": writers, "writes": writers * adds, "seconds": round(wall, 3),
        "writes_per_s": round(writers * adds / wall, 1),
        "errors": sum(len(r["errors"]) for r in results) + len(read["errors"]),
        "first_error": next((e for r in [*results, read] for e in r["errors"]), None),
        "lost_writes": len([e for e in told if e not in held]) + (writers * adds - len(told)),
        "wrong_current_facts": sum(current.get(subject) != value for subject, value in expected.items()),
        "recalls_per_s": round(read["recalls"] / max(read["done"] - start, 1e-9), 1),
    }


def concurrency_benchmark(writer_counts: list[int], adds: int, postgres: str | None = None) -> dict:
    """Rows per writer count on SQLite, and on PostgreSQL with ``postgres`` (a server's
    URL, or "auto": scripts/postgres_databases.py)."""
    result: dict = {"adds_per_writer": adds}
    with tempfile.TemporaryDirectory(prefix="memctl-concurrency-") as tmp:
        result["sqlite"] = [run(writers, adds, Path(tmp), Path(tmp) / f"w{writers}.db") for writers in writer_counts]
        if postgres is not None:
            from postgres_databases import postgres_databases

            with postgres_databases(postgres) as new_database:
                result["postgresql"] = [run(writers, adds, Path(tmp), new_database(f"w{writers}"))
                                        for writers in writer_counts]
    return result


def table(result: dict) -> str:
    lines = [f"{'backend':>10} {'writers':>8} {'writes':>7} {'seconds':>8} {'writes/s':>9} {'errors':>7} {'lost':>5} "
             f"{'wrong':>6} {'recalls/s':>10}"]
    for backend in ("sqlite", "postgresql"):
        for row in result.get(backend, []):
            lines.append(f"{backend:>10} {row['writers']:>8} {row['writes']:>7} {row['seconds']:>8} "
                         f"{row['writes_per_s']:>9} "
                         f"{row['errors']:>7} {row['lost_writes']:>5} {row['wrong_current_facts']:>6} "
                         f"{row['recalls_per_s']:>10}")
    return "\n".join(lines)
