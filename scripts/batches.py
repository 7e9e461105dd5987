"""A backfill through the Batch API (issue 34's figures): ``scripts/bench.py --batches
[--batch-episodes 10000]``.

The same generated sessions are ingested twice against the local fake server
(tests/fake_llm.py), with the same scripted replies: live (one chat call per episode)
and with ``--batch`` (files and batches, then ``batches collect``). Measured:

- the HTTP requests each path made (the batch path: uploads, batch creations, polls,
  downloads), and the seconds each took;
- whether the two stores hold the same facts;
- the dry run's estimate of the input tokens against the tokens of what the batch really
  sent, counted with OpenAI's o200k_base tokenizer (tiktoken) when it can be loaded, as
  the fake counts them. tiktoken fetches its vocabulary on first use; on a machine
  without a network, point TIKTOKEN_CACHE_DIR at a folder that holds it (docs/batches.md).
  Without it the count is the fake's own four characters a token, which says only that
  the estimate covers what is sent, and the result says so.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.fake_llm import API_KEY, FakeOpenAIServer  # noqa: E402

# Many subjects, so that most slots keep their facts apart and the stores have much to compare.
SUBJECTS = [f"{name}{n}" for name in ("Billing", "Search", "Alice", "Bob", "Ledger", "Gateway") for n in range(60)]
OBJECTS = ["Postgres", "Redis", "Kafka", "Rust", "Python", "Oslo", "Berlin", "Engineer", "Manager", "Terraform"]
VERBS = ["uses", "lives in", "works as"]
MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
          "November", "December"]
FILLER = [
    "Let me look at the failing test first and see what the stack trace says.",
    "The migration script ran, but the index on the orders table took longer than expected.",
    "Can you check whether the retry logic backs off when the upstream returns a 429?",
    "I refactored the handler so that it streams the response instead of buffering it.",
    "We agreed to keep the old endpoint until every client has moved to the new one.",
    "Here is the diff:\n```python\ndef handle(request):\n    body = json.loads(request.body)\n    return ok(body)\n```",
    "The deploy went out at noon; error rates are flat and latency is a little lower.",
    "Run `pytest -q tests/test_api.py -k retry` and paste what it prints.",
]


def sessions(rng: random.Random, episodes: int, per_session: int = 100) -> list[list[dict]]:
    """Chat sessions of user turns (each one episode): a fact sentence among work talk."""
    made = []
    for start in range(0, episodes, per_session):
        lines = []
        for n in range(min(per_session, episodes - start)):
            when = datetime(2023, 1, 1, tzinfo=UTC).timestamp() + (start + n) * 3600
            stamp = datetime.fromtimestamp(when, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
            fact = f"{rng.choice(SUBJECTS)} {rng.choice(VERBS)} {rng.choice(OBJECTS)}"
            if rng.random() < 0.6:
                fact += f" since {rng.randint(1, 28)} {rng.choice(MONTHS)} {rng.randint(2015, 2022)}"
            text = " ".join(rng.sample(FILLER, rng.randint(1, 4)) + [fact + "."])
            lines += [{"role": "user", "content": text, "timestamp": stamp},
                      {"role": "assistant", "content": "Noted.", "timestamp": stamp}]
        made.append(lines)
    return made


def o200k_counter():
    """(a counter of a request's input tokens as OpenAI counts them, its name), or None."""
    try:
        import tiktoken

        encoding = tiktoken.get_encoding("o200k_base")
    except Exception:  # not installed, or its vocabulary cannot be fetched here
        return None

    def count(body: dict) -> int:
        tokens = 3 + sum(4 + len(encoding.encode(m["content"])) for m in body["messages"])
        if body.get("response_format"):
            tokens += len(encoding.encode(json.dumps(body["response_format"])))
        return tokens

    return count, "tiktoken o200k_base"


def memctl(db: Path, *args: str, env: dict) -> tuple[float, dict | list | None, str]:
    """(seconds, the JSON it printed, or None for JSON lines, its stdout)."""
    began = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "memctl", "--db", str(db), *args], capture_output=True, text=True,
                          env=env, cwd=ROOT)
    took = time.perf_counter() - began
    if done.returncode not in (0, 1):
        raise RuntimeError(f"memctl {' '.join(args)} exited {done.returncode}: {done.stderr[-2000:]}")
    out = done.stdout.strip()
    return took, (None if "--dry-run" in args else json.loads(out)), done.stdout


def environment(server: FakeOpenAIServer) -> dict:
    """The environment of memctl run against the fake server, its model named."""
    env = {**os.environ, "OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": API_KEY,
           "MEMCTL_MODEL": "fake-normal", "PYTHONPATH": str(ROOT)}
    env.pop("MEMCTL_DB", None)
    return env


def tokens_sent(server: FakeOpenAIServer) -> int:
    """The input tokens of every request the batches sent, as the server counts them."""
    return sum(server.count_tokens(json.loads(line)["body"]) for f in server.batch_api.files.values()
               if f["purpose"] == "batch" for line in f["content"].splitlines())


def stored(db: Path) -> dict[str, list[tuple]]:
    """What the two paths must agree on: every episode's assertions, and every version of
    every fact on the valid-time axis (transaction times differ by when each ran)."""
    import sqlite3

    with sqlite3.connect(db) as conn:
        return {
            "assertions": sorted(conn.execute(
                "SELECT episode_id, ordinal, subject, predicate, object, fact, valid_at, valid_at_evidence, "
                "valid_at_precision, invalid_at, invalid_at_evidence, cardinality, extractor, expired_at IS NULL "
                "FROM assertions")),
            "fact_versions": sorted(conn.execute(
                "SELECT subject, predicate, object, fact, valid_at, invalid_at, end_reason, expired_at IS NULL "
                "FROM facts_named")),
        }


def batch_benchmark(episodes: int = 10_000, seed: int = 0) -> dict:
    rng = random.Random(seed)
    tmp = Path(tempfile.mkdtemp(prefix="memctl-batches-"))
    folder = tmp / "logs"
    folder.mkdir()
    for number, lines in enumerate(sessions(rng, episodes)):
        (folder / f"session{number:04d}.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    counter = o200k_counter()
    with FakeOpenAIServer(datetime.now(UTC), count_tokens=counter[0] if counter else None) as server:
        env = environment(server)
        live_db, batch_db = tmp / "live.db", tmp / "batch.db"

        _, _, dry_out = memctl(batch_db, "ingest", str(folder), "--batch", "--dry-run", "--json", env=env)
        estimate = json.loads(dry_out.splitlines()[-1])["estimate"]

        live_s, live, _ = memctl(live_db, "ingest", str(folder), "--extractor", "llm", "--concurrency", "8",
                                 "--json", env=env)
        live_calls = server.calls
        assert isinstance(live, dict)

        submit_s, submitted, _ = memctl(batch_db, "ingest", str(folder), "--batch", "--json", env=env)
        assert isinstance(submitted, dict) and submitted["batch"]
        server.batch_api.finish_on_poll = 1  # done when first asked
        collect_s, collected, _ = memctl(batch_db, "batches", "collect", "--json", env=env)
        assert isinstance(collected, dict)
        sent = tokens_sent(server)
        live_store, batch_store = stored(live_db), stored(batch_db)
        requests = dict(server.batch_api.requests)
    return {
        "episodes": episodes,
        "live": {"http_requests": live_calls, "seconds": round(live_s, 1),
                 "assertions": len(live_store["assertions"]), "fact_versions": len(live_store["fact_versions"]),
                 "extraction_calls": live["extraction_calls"]},
        "batch": {"http_requests": sum(requests.values()), "by_route": requests,
                  "batches": len(submitted["batch"]["batches"]), "submit_seconds": round(submit_s, 1),
                  "collect_seconds": round(collect_s, 1), "assertions": len(batch_store["assertions"]),
                  "fact_versions": len(batch_store["fact_versions"]),
                  "answered": collected["answered"], "unanswered": collected["unanswered"]},
        "identical": live_store == batch_store,
        "estimate": {"input_tokens": estimate["input_tokens"], "counted": sent,
                     "counted_by": counter[1] if counter else "the fake's 4 characters a token (tiktoken unavailable)",
                     "error": round(abs(estimate["input_tokens"] - sent) / sent, 4)},
    }


def real_estimate(realdata: Path) -> dict | None:
    """The dry run's estimate against what a batch of the real logs sends, counted alike."""
    if not realdata.is_dir():
        return None
    counter = o200k_counter()
    tmp = Path(tempfile.mkdtemp(prefix="memctl-batches-real-"))
    with FakeOpenAIServer(datetime.now(UTC), count_tokens=counter[0] if counter else None) as server:
        env = environment(server)
        _, _, dry_out = memctl(tmp / "m.db", "ingest", str(realdata), "--from-mtime", "--batch", "--dry-run",
                               "--json", env=env)
        estimate = json.loads(dry_out.splitlines()[-1])["estimate"]
        memctl(tmp / "m.db", "ingest", str(realdata), "--from-mtime", "--batch", "--json", env=env)
        sent = tokens_sent(server)
    return {"calls": estimate["calls"], "input_tokens": estimate["input_tokens"], "counted": sent,
            "counted_by": counter[1] if counter else "the fake's 4 characters a token (tiktoken unavailable)",
            "error": round(abs(estimate["input_tokens"] - sent) / sent, 4)}


def table(result: dict) -> str:
    live, batch, estimate = result["live"], result["batch"], result["estimate"]
    return "\n".join([
        f"| {result['episodes']:,} episodes | HTTP requests | seconds | assertions | fact versions |",
        "|---|---|---|---|---|",
        f"| live calls | {live['http_requests']:,} | {live['seconds']} | {live['assertions']:,} | "
        f"{live['fact_versions']:,} |",
        f"| Batch API | {batch['http_requests']} ({', '.join(f'{k} {v}' for k, v in batch['by_route'].items())}) "
        f"| {batch['submit_seconds']} + {batch['collect_seconds']} | {batch['assertions']:,} | "
        f"{batch['fact_versions']:,} |",
        "",
        f"assertions and fact versions identical: {result['identical']}; dry run's input tokens "
        f"{estimate['input_tokens']:,} against {estimate['counted']:,} counted by {estimate['counted_by']}: "
        f"{estimate['error']:.1%} off",
        *([f"real logs ({real['calls']} calls): estimated {real['input_tokens']:,} against {real['counted']:,} "
           f"counted: {real['error']:.1%} off"] if (real := result.get("real_logs")) else []),
    ])
