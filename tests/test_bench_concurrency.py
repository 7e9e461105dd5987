"""The concurrency benchmark (scripts/concurrency.py, ``bench.py --concurrency``): writer
processes adding and ingesting at once beside a reader lose nothing and meet no error,
and the store's current facts are each writer's last value, on SQLite and on PostgreSQL.
No timings are asserted."""

from __future__ import annotations

from tests.test_bench import run_bench


def test_writers_at_once_lose_nothing_and_meet_no_error_on_either_backend(postgres_server):
    result = run_bench("--concurrency", "--concurrency-writers", "1,3", "--concurrency-adds", "8",
                       "--postgres", postgres_server.url)
    for backend in ("sqlite", "postgresql"):
        assert [row["writers"] for row in result[backend]] == [1, 3]
        for row in result[backend]:
            assert (row["errors"], row["lost_writes"], row["wrong_current_facts"]) == (0, 0, 0), (backend, row)
            assert row["writes"] == row["writers"] * 8 and row["writes_per_s"] > 0 and row["recalls_per_s"] > 0
