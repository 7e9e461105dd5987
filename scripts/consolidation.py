"""The consolidation benchmark (issue 29): summary calls behind the gate against the
always-refresh policy, no stale summary after any change, and conflicts found where they
were planted and nowhere else. Run by ``scripts/bench.py --consolidation``.

The stream: ENTITIES services, each with a one-valued ``database`` and ``lead`` and a
many-valued ``uses``, told over EPISODES structured episodes six hours apart: values
stated as they begin (plain supersession), restated, tools added. Planted in it:
- a later statement that an earlier database still holds ("X since <its start>", said
  after another value began): ``STILL`` of the services;
- two episodes giving two leads from one stated instant: ``SAME_INSTANT`` others.
The stream is ingested as it happens, a chunk of CHUNK episodes at a time with the clock
at the chunk's last episode, through the model a ``FakeOpenAIServer`` plays (the
scripted model, through the real ``openai`` client).
"""

from __future__ import annotations

import json
import random
import tempfile
from datetime import UTC, datetime, timedelta
from pathlib import Path

from memctl import IngestOptions, Memory
from memctl.store import summaries as store
from memctl.summary import facts_hash

START = datetime(2023, 1, 2, tzinfo=UTC)
STEP = timedelta(hours=6)
DATABASES = ["Postgres", "MySQL", "SQLite", "DynamoDB", "Cassandra", "CockroachDB"]
LEADS = ["Ana", "Ben", "Chloe", "Dev", "Eli", "Fay", "Gus", "Hana"]
TOOLS = ["Kafka", "Redis", "Sentry", "Grafana", "Vault", "Nginx", "Celery", "Airflow"]


class ManualClock:
    """The transaction clock at the stream's pace: a chunk is ingested when its last episode is said."""

    def __init__(self, at: datetime):
        self.at = at

    def __call__(self) -> datetime:
        return self.at


def stream(rng: random.Random, entities: int, episodes: int, still: int, same_instant: int
           ) -> tuple[list[dict], set[tuple[str, str]]]:
    """The episodes (facts-format lines, in time order) and the planted slots."""
    names = [f"svc-{n:03d}" for n in range(entities)]
    current: dict[tuple[str, str], tuple[str, datetime]] = {}  # slot -> (value, since)
    previous: dict[tuple[str, str], tuple[str, datetime]] = {}
    lines: list[dict] = []
    plants = rng.sample(names, still + same_instant)
    still_at = {name: rng.randrange(episodes // 3, episodes) for name in plants[:still]}
    same_at = {name: rng.randrange(episodes // 3, episodes - 10) for name in plants[still:]}
    planted: set[tuple[str, str]] = set()
    for n in range(episodes):
        said = START + n * STEP
        name = rng.choice(names)
        facts = []
        for predicate, pool in (("database", DATABASES), ("lead", LEADS)):
            slot = (name, predicate)
            roll = rng.random()
            if slot not in current or roll < 0.25:  # a new value, from now
                value = rng.choice([v for v in pool if slot not in current or v != current[slot][0]])
                if slot in current:
                    previous[slot] = current[slot]
                current[slot] = (value, said)
                facts.append({"subject": name, "predicate": predicate, "object": value})
            elif roll < 0.5:  # restated
                facts.append({"subject": name, "predicate": predicate, "object": current[slot][0]})
        if rng.random() < 0.3:
            facts.append({"subject": name, "predicate": "uses", "object": rng.choice(TOOLS), "cardinality": "many"})
        lines.append({"reference_time": said.isoformat(), "source_id": f"e{n}", "facts": facts or [
            {"subject": name, "predicate": "uses", "object": rng.choice(TOOLS), "cardinality": "many"}]})
        # The plants, said by other episodes (of their own time) about a service chosen for them.
        for planted_name, at in still_at.items():
            slot = (planted_name, "database")
            if at == n and slot in previous:  # the old database "still", since its own start
                old, since = previous[slot]
                lines.append({"reference_time": (said + STEP / 3).isoformat(), "source_id": f"still-{planted_name}",
                              "facts": [{"subject": planted_name, "predicate": "database", "object": old,
                                         "valid_at": since.isoformat()}]})
                planted.add(slot)
        for planted_name, at in same_at.items():
            if at == n:
                day = (said - timedelta(days=3)).replace(hour=0, minute=0, second=0, microsecond=0)
                first, second = rng.sample(LEADS, 2)
                for k, value in enumerate((first, second)):
                    lines.append({"reference_time": (said + STEP / 4 * (k + 1)).isoformat(),
                                  "source_id": f"same-{planted_name}-{k}",
                                  "facts": [{"subject": planted_name, "predicate": "lead", "object": value,
                                             "valid_at": day.isoformat()}]})
                planted.add((planted_name, "lead"))
    return lines, planted


def current_hashes(memory: Memory) -> dict[int, str]:
    """Each subject's facts as the summary hash reads them."""
    subjects = [row[0] for row in memory.db.execute("SELECT DISTINCT subject_id FROM facts")]
    return {s: facts_hash(store.fact_rows(memory.db, s, None)) for s in subjects}


def stale(memory: Memory) -> int:
    """Current summaries not of their entity's current facts: the invariant says none."""
    return sum(stored != facts_hash(store.fact_rows(memory.db, subject_id, None))
               for subject_id, stored in store.current_summaries(memory.db))


def consolidation_benchmark(seed: int = 0, entities: int = 120, episodes: int = 2400, chunk: int = 100,
                            still: int = 20, same_instant: int = 10, steps: int = 40) -> dict:
    from memctl.extract.llm import LLMExtractor, make_client
    from tests.fake_llm import API_KEY, FakeOpenAIServer

    rng = random.Random(seed)
    lines, planted = stream(rng, entities, episodes, still, same_instant)
    clock = ManualClock(START)
    with tempfile.TemporaryDirectory(prefix="memctl-consolidation-") as tmp, \
            FakeOpenAIServer(datetime.now(UTC)) as server:
        memory = Memory.open(Path(tmp) / "memory.db", clock)
        model = LLMExtractor(make_client(api_key=API_KEY, base_url=server.base_url), "fake-normal", clock,
                             max_retries=0)
        changed_bound = 0  # entities whose facts changed, summed over the ingests
        always = 0  # one call per entity per episode that touched it
        reasons: dict[str, int] = {}
        hashes: dict[int, str] = {}
        stale_after_ingest = 0
        for start in range(0, len(lines), chunk):
            part = lines[start:start + chunk]
            path = Path(tmp) / f"chunk-{start:05d}.jsonl"
            path.write_text("".join(json.dumps(line) + "\n" for line in part))
            clock.at = datetime.fromisoformat(part[-1]["reference_time"])
            report = memory.ingest([path], IngestOptions(), extractor=model)
            for reason, n in (report.summaries.refreshed if report.summaries else {}).items():
                reasons[reason] = reasons.get(reason, 0) + n
            now = current_hashes(memory)
            changed_bound += sum(hashes.get(subject) != value for subject, value in now.items())
            changed_bound += sum(subject not in now for subject in hashes)
            hashes = now
            always += sum(len({fact["subject"] for fact in line["facts"]}) for line in part)
            stale_after_ingest += stale(memory)
        calls = server.summary_calls

        conflicts = memory.conflicts(closed=True)
        found = {(c.subject, c.predicate) for c in conflicts}
        missed = sorted(planted - found)
        spurious = sorted(found - planted)

        # Random changes after it, each followed by the invariant's check.
        stale_after_steps = 0
        ops: dict[str, int] = {}
        undos: list[str] = []
        for _ in range(steps):
            clock.at += timedelta(minutes=rng.choice([1, 20, 60 * 24 * 8]))
            active = [e.id for e in memory.episodes(status="active")]
            op = rng.choice(["undo", "undo", "revert", "purge", "add", "repair", "rebuild"])
            if op == "undo":
                undos.append(memory.undo([rng.choice(active)], apply=True).operation_id)
            elif op == "revert" and undos:
                memory.undo([undos.pop()], apply=True)
            elif op == "purge":
                memory.undo([rng.choice(active)], apply=True, purge=True)
                undos.clear()
            elif op == "add":
                name = f"svc-{rng.randrange(entities):03d}"
                memory.add_memory(f"{name} database", reference_time=clock.at.isoformat(), extractor=model, facts=[
                    {"subject": name, "predicate": "database", "object": rng.choice(DATABASES)}])
            elif op == "repair":
                memory.repair_midnight_hallucinations(apply=True)
            else:
                memory.rebuild()
            ops[op] = ops.get(op, 0) + 1
            stale_after_steps += stale(memory)
        memory.close()
    return {
        "episodes": len(lines), "entities": entities, "ingests": -(-len(lines) // chunk),
        "summary_calls": calls, "always_refresh_calls": always, "entities_changed_per_ingest_summed": changed_bound,
        "calls_within_bound": calls <= changed_bound, "refreshed_by_reason": reasons,
        "stale_after_each_ingest": stale_after_ingest, "steps": ops, "stale_after_each_step": stale_after_steps,
        "conflicts_planted": len(planted), "conflicts_found": len(planted & found),
        "conflicts_missed": missed, "conflicts_spurious": spurious,
    }
