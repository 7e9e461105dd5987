"""``scripts/bench.py --extract`` runs (a benchmark that cannot run hides regressions) and,
at a tiny size, its lying model leaves what the issue asks: no invented midnight, every
stated date kept, at most 1.05 calls an episode, none for an unchanged re-run."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[1] / "scripts" / "bench.py"


def test_the_extract_benchmark_runs_and_meets_its_targets_at_a_tiny_size():
    run = subprocess.run([sys.executable, str(BENCH), "--extract", "--extract-episodes", "4", "--extract-latency", "0",
                          "--extract-quality-episodes", "40"], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    result = json.loads(run.stdout)
    assert result["calls_per_episode"] == 1.0 and result["cached_rerun_calls"] == 0
    assert result["seed_model_lies"]["start_share"] > 0.3  # the model did lie
    assert result["quality_calls_per_episode"] <= 1.05
    assert result["stored_dates_at_invented_midnight"] == 0
    kept, stated = map(int, result["stated_dates_kept"].split("/"))
    assert kept == stated > 0
    assert set(result["stated_dates_kept_by_precision"]) == {"day", "month", "quarter", "year"}
    assert result["unchanged_rerun_calls"] == {"retry": 0, "ingest": 0}
    assert result["extraction_failures"] == 0
