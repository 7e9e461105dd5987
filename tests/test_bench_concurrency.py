"""The concurrency benchmark (scripts/concurrency.py, ``bench.py --concurrency``): writer
processes adding and ingesting at once beside a reader lose nothing and meet no error,
and the store's current facts are each writer's last value. No timings are asserted."""

from __future__ import annotations

from tests.test_bench import run_bench


def test_writers_at_once_lose_nothing_and_meet_no_error():
    result = run_bench("--concurrency", "--concurrency-writers", "1,3", "--concurrency-adds", "8")
    assert [row["writers"] for row in result["rows"]] == [1, 3]
    for row in result["rows"]:
        assert (row["errors"], row["lost_writes"], row["wrong_current_facts"]) == (0, 0, 0), row
        assert row["writes"] == row["writers"] * 8 and row["writes_per_s"] > 0 and row["recalls_per_s"] > 0
