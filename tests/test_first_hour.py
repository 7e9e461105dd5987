"""A newcomer's first hour (issue 30): the defects a new user met, each held by a test."""

from __future__ import annotations

from pathlib import Path

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "team.facts.jsonl"


def test_a_limit_past_64_bits_is_one_clear_line(cli):
    assert cli("ingest", FIXTURE).code == 0
    for command in (["recall", "billing"], ["episodes"], ["facts"], ["operations"], ["sessions"]):
        run = cli(*command, "--limit", str(2**70))
        assert run.code == 2 and run.err.strip() == f"memctl: error: --limit must be between 1 and 1,000,000, got {2**70}"
    assert cli("recall", "billing", "--limit", "1000000").code == 0


def test_memctl_db_with_a_tilde_is_the_home_folder(raw_cli, monkeypatch, tmp_path):
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("MEMCTL_DB", "~/mem/memory.db")  # as an MCP client's JSON config passes it
    monkeypatch.chdir(tmp_path)
    (tmp_path / "mem").mkdir()
    assert raw_cli("ingest", FIXTURE).code == 0
    assert (tmp_path / "mem" / "memory.db").is_file() and not (tmp_path / "~").exists()
    assert raw_cli("--db", "~/mem/memory.db", "stats").code == 0  # quoted on a command line: the same


def test_an_empty_db_is_bad_input_not_an_internal_error(raw_cli):
    run = raw_cli("--db", "", "stats")
    assert run.code == 2 and "is a folder; name a database file" in run.err and "internal error" not in run.err


def test_a_missing_path_leaves_no_database_behind(cli, db_path, tmp_path):
    run = cli("ingest", FIXTURE, tmp_path / "missing")
    assert run.code == 2 and "missing: no such file or directory" in run.err
    assert not db_path.exists()
