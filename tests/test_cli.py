"""The public CLI surface (README): what a user types, what they get back."""

from __future__ import annotations

import json
import os
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest

from memctl import BadInput, IngestOptions
from tests.conftest import made_nothing, open_store, stored_text, write_jsonl

FIXTURE = Path(__file__).parent.parent / "fixtures" / "team.facts.jsonl"


def line(reference_time, *facts, **extra):
    return {"reference_time": reference_time, "facts": list(facts), **extra}


def fact(subject, predicate, obj, **extra):
    return {"subject": subject, "predicate": predicate, "object": obj, **extra}


def objects(run):
    assert run.code == 0, run.err
    return [r["object"] for r in run.json()["results"]]


def table_counts(db: Path) -> dict:
    with open_store(db) as conn:
        return {t: conn.execute(f"SELECT count(*) FROM {t}").fetchone()[0]
                for t in ("episodes", "assertions", "facts", "entities", "operations")}


def test_out_of_order_backfill_gives_each_value_its_own_stretch(cli, tmp_path):
    newer = write_jsonl(tmp_path / "newer.jsonl", [line("2025-01-15T10:00:00Z", fact("billing", "primary database", "Postgres"))])
    older = write_jsonl(tmp_path / "older.jsonl", [line("2024-03-01T09:00:00Z", fact("billing", "primary database", "MySQL"))])
    assert cli("ingest", newer).code == 0
    assert cli("ingest", older).code == 0
    ask = lambda as_of: objects(cli("recall", "--kind", "fact", "billing database", "--as-of", as_of, "--json"))  # noqa: E731
    assert ask("2024-02-29T23:59:59Z") == []
    assert ask("2024-03-01T09:00:00Z") == ["MySQL"]
    assert ask("2025-01-15T09:59:59.999999Z") == ["MySQL"]
    assert ask("2025-01-15T10:00:00Z") == ["Postgres"]  # no overlap: MySQL ended exactly here
    assert ask("2026-01-01") == ["Postgres"]
    history = cli("history", "Billing", "--json").json()
    (slot,) = history["slots"]
    assert [(f["object"], f["valid_at"], f["invalid_at"], f["status"]) for f in slot["facts"]] == [
        ("MySQL", "2024-03-01T09:00:00.000000Z", "2025-01-15T10:00:00.000000Z", "superseded"),
        ("Postgres", "2025-01-15T10:00:00.000000Z", None, "current"),
    ]


def test_known_at_answers_what_was_believed_before_a_later_ingest(cli, tmp_path):
    austin = write_jsonl(tmp_path / "a.jsonl", [line("2023-05-01", fact("Alice", "lives in", "Austin"))])
    nyc = write_jsonl(tmp_path / "b.jsonl", [line("2024-02-01", fact("alice", "lives_in", "NYC"))])
    assert cli("ingest", austin).code == 0
    time.sleep(0.01)
    between = datetime.now(UTC).isoformat()
    time.sleep(0.01)
    assert cli("ingest", nyc).code == 0
    # asked with no time: what holds, and under it what it replaced
    now = cli("recall", "--kind", "fact", "where does alice live", "--json").json()["results"]
    assert [(r["object"], r["status"]) for r in now] == [("NYC", "current"), ("Austin", "superseded")]
    assert objects(cli("recall", "--kind", "fact", "where does alice live", "--as-of", "2024-06-01", "--json")) == ["NYC"]
    # before the NYC ingest memctl believed Austin, still true and open-ended
    then = cli("recall", "--kind", "fact", "where does alice live", "--known-at", between, "--as-of", "2024-06-01", "--json").json()
    assert [(r["object"], r["invalid_at"]) for r in then["results"]] == [("Austin", None)]
    assert [r["object"] for r in cli("recall", "--kind", "fact", "alice", "--known-at", between, "--json").json()["results"]] == ["Austin"]
    # superseding in the world set invalid_at, not expired_at: Austin is still true history
    past = cli("recall", "--kind", "fact", "alice live", "--as-of", "2023-12-01", "--json").json()["results"]
    assert [(r["object"], r["invalid_at"], r["expired_at"]) for r in past] == [("Austin", "2024-02-01T00:00:00.000000Z", None)]
    # before anything was ingested, nothing was known
    assert objects(cli("recall", "--kind", "fact", "alice", "--known-at", "2000-01-01", "--json")) == []


def test_recall_json_shape_and_status(cli):
    assert cli("ingest", FIXTURE).code == 0
    result = cli("recall", "--kind", "fact", "which database does billing use", "--as-of", "2024-03-01", "--json").json()
    assert set(result) == {"query", "as_of", "known_at", "results", "sessions"}
    assert result["as_of"] == "2024-03-01T00:00:00.000000Z" and result["known_at"] is None
    assert result["sessions"] == []  # facts only: no episode names a session
    top = result["results"][0]
    for key in ("fact_id", "fact", "subject", "predicate", "object", "valid_at", "invalid_at", "created_at",
                "expired_at", "status", "score", "episodes"):
        assert key in top
    assert top["object"] == "MySQL" and top["status"] == "current"
    assert all(e.startswith("ep_") for e in top["episodes"])
    everything = cli("recall", "--kind", "fact", "billing", "--history", "--json", "--limit", "50").json()["results"]
    statuses = {(r["object"], r["status"]) for r in everything}
    assert {("MySQL", "superseded"), ("Redis", "ended"), ("Postgres", "current")} <= statuses
    assert len(cli("recall", "--kind", "fact", "billing", "--history", "--json", "--limit", "2").json()["results"]) == 2


def test_reingest_adds_nothing(cli):
    first = cli("ingest", FIXTURE, "--json").json()
    second = cli("ingest", FIXTURE, "--json").json()
    assert first["added"] == 5 and first["operation_id"]
    assert (second["added"], second["reactivated"], second["already_present"], second["operation_id"]) == (0, 0, 5, None)
    assert len(cli("operations", "--json").json()) == 1


def test_undo_previews_then_applies_and_reopens(cli, db_path, tmp_path):
    assert cli("ingest", FIXTURE).code == 0
    retro = [e for e in cli("episodes", "--json").json() if e["reference_time"].startswith("2024-05-20")][0]
    counts = table_counts(db_path)
    plan = cli("undo", retro["id"][:8], "--json").json()  # a unique prefix is enough
    assert plan["applied"] is False and plan["episodes"] == [retro["id"]]
    assert [r["object"] for r in plan["removed"]] == ["Postgres"]
    assert [(r["object"], r["invalid_at_before"], r["invalid_at"]) for r in plan["reopened"]] == [
        ("MySQL", "2024-04-02T00:00:00.000000Z", None)]
    assert table_counts(db_path) == counts  # the preview wrote nothing
    done = cli("undo", retro["id"], "--apply", "--json").json()
    assert done["applied"] and done["operation_id"].startswith("op_")
    found = objects(cli("recall", "--kind", "fact", "billing primary database", "--json"))
    assert found[0] == "MySQL" and "Postgres" not in found
    assert cli("episodes", "--status", "undone", "--json").json()[0]["id"] == retro["id"]
    # the undone version is history: what was believed before the undo is still there
    kinds = [op["kind"] for op in cli("operations", "--json").json()]
    assert kinds == ["ingest", "undo"]
    again = cli("undo", retro["id"], "--apply")
    assert again.code == 0 and "already undone" in again.out



def test_an_undo_is_undone_by_its_operation_and_a_purge_is_not(cli, db_path, tmp_path):
    """A mistaken `undo --source` is reversible without the files; a purge cannot be."""
    one = write_jsonl(tmp_path / "one.jsonl", [line("2024-01-01", fact("svc", "uses", "Kafka", cardinality="many")),
                                               line("2024-03-01", fact("svc", "uses", "Redis", cardinality="many"))])
    assert cli("ingest", one).code == 0
    before = cli("recall", "--kind", "fact", "svc uses", "--json").json()["results"]
    undo_id = cli("undo", "--source", one, "--apply", "--json").json()["operation_id"]
    one.unlink()  # the file is gone: only the store can bring the episodes back
    counts = table_counts(db_path)
    preview = cli("undo", undo_id, "--json").json()
    assert not preview["applied"] and len(preview["episodes"]) == 2
    assert sorted(r["object"] for r in preview["added"]) == ["Kafka", "Redis"]
    assert table_counts(db_path) == counts
    shown = cli("undo", undo_id, "--apply")
    assert shown.code == 0 and f"Undid the undo {undo_id}" in shown.out
    after = cli("recall", "--kind", "fact", "svc uses", "--json").json()["results"]
    assert [(r["fact"], r["valid_at"], r["invalid_at"]) for r in after] == [
        (r["fact"], r["valid_at"], r["invalid_at"]) for r in before]
    assert [(op["kind"], op["status"]) for op in cli("operations", "--json").json()] == [
        ("ingest", "done"), ("undo", "undone"), ("undo", "done")]
    assert cli("episodes", "--status", "undone", "--json").json() == []

    episode = cli("episodes", "--json").json()[0]["id"]
    purge_id = cli("undo", episode, "--purge", "--apply", "--json").json()["operation_id"]
    refused = cli("undo", purge_id, "--apply")
    assert refused.code == 2 and "purge" in refused.err and len(refused.err.strip().splitlines()) == 1
    refused = cli("undo", cli("operations", "--json").json()[2]["id"], "--apply")
    assert refused.code == 2 and "run that operation again" in refused.err

def test_undo_by_operation_and_by_source(cli, tmp_path):
    one = write_jsonl(tmp_path / "one.jsonl", [line("2024-01-01", fact("svc", "uses", "Kafka", cardinality="many"))])
    two = write_jsonl(tmp_path / "two.jsonl", [line("2024-02-01", fact("svc", "uses", "Redis", cardinality="many"))])
    op = cli("ingest", one, "--json").json()["operation_id"]
    assert cli("ingest", two).code == 0
    assert sorted(objects(cli("recall", "--kind", "fact", "svc uses", "--json"))) == ["Kafka", "Redis"]
    assert cli("undo", op, "--yes").code == 0
    assert objects(cli("recall", "--kind", "fact", "svc uses", "--json")) == ["Redis"]
    assert cli("undo", "--source", two, "--apply").code == 0
    assert objects(cli("recall", "--kind", "fact", "svc uses", "--json")) == []
    assert cli("stats", "--json").json()["episodes"] == 0


def test_purge_erases_content_everywhere(cli, db_path, tmp_path):
    secret = "zebracornflakes"  # a codename: no redaction rule takes it, only the purge can
    leaked = write_jsonl(tmp_path / "leak.jsonl", [
        line("2024-01-01", fact("deploy bot", "uses token", secret), content=f"the key is {secret}"),
        line("2024-01-02", fact("deploy bot", "runs on", "Kubernetes")),
    ])
    assert cli("ingest", leaked).code == 0
    episode = cli("episodes", "--json").json()[0]["id"]
    assert cli("undo", episode, "--purge", "--apply").code == 0
    assert secret not in stored_text(db_path)
    assert objects(cli("recall", "--kind", "fact", "deploy bot runs", "--json")) == ["Kubernetes"]


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ('{"reference_time": "2024-01-01", "facts": []}\nnot json\n', "b.jsonl:2"),
        ('{"reference_time": "2024-02-31", "facts": []}\n', "day is out of range"),
        ('{"reference_time": "2024-01-01", "facts": [{"subject": "a", "predicate": "b", "object": "c", "valid_from": "2020"}]}\n', "valid_from"),
        ('{"reference_time": "2024-01-01", "facts": [{"subject": "a", "predicate": "b", "object": "c", "valid_at": "2024-05-01", "invalid_at": "2024-04-01"}]}\n', "not after valid_at"),
        ('{"reference_time": "2024-01-01", "facts": [{"subject": "a", "predicate": "b", "object": 3}]}\n', "facts[0].object"),
        ('{"reference_time": "2024-01-01", "facts": [{"subject": "!!", "predicate": "b", "object": "c"}]}\n', "not a usable name"),
        ('{"facts": [{"subject": "a", "predicate": "b", "object": "c"}]}\n', "--reference-time"),
        ('[1, 2]\n', "b.jsonl:1"),
    ],
)
def test_bad_input_is_one_line_exit_2_and_writes_nothing(cli, db_path, tmp_path, content, message):
    good = write_jsonl(tmp_path / "a.jsonl", [line("2024-01-01", fact("x", "uses", "y"))])
    assert cli("ingest", good).code == 0
    counts = table_counts(db_path)
    bad = tmp_path / "b.jsonl"
    bad.write_text(content)
    another = write_jsonl(tmp_path / "c.jsonl", [line("2024-03-01", fact("z", "uses", "w"))])
    alone = cli("ingest", bad, "--format", "facts")  # named alone: bad input, nothing stored
    assert alone.code == 2, alone.err
    assert len(alone.err.strip().splitlines()) == 1 and message in alone.err and "Traceback" not in alone.err
    assert table_counts(db_path) == counts
    # Beside another (issue 31): the bad one is refused whole, the good one stored whole, exit 1
    run = cli("ingest", another, bad, "--format", "facts")
    assert run.code == 1 and len(run.err.strip().splitlines()) == 1 and message in run.err and "b.jsonl" in run.err
    assert [e["source"] for e in cli("episodes", "--json").json()] == [str(good), str(another)]


def test_a_facts_file_is_stored_as_it_was_checked_even_if_it_grows_meanwhile(memory, tmp_path):
    """What ingest stores of a facts file is what it checked whole: a line written to the
    file after the check (a writer still appending) is neither stored unchecked nor allowed
    to refuse the file halfway through; the next ingest reads it."""
    source = write_jsonl(tmp_path / "growing.jsonl",
                         [line(f"2024-01-{day:02d}", fact(f"svc{day}", "uses", "Postgres")) for day in range(1, 6)])

    def append(path: Path, _episodes_so_far: int) -> None:
        with path.open("a") as handle:
            handle.write('{"reference_time": "2024-02-30", "facts": []}\n')

    report = memory.ingest([source], IngestOptions(format="facts"), on_file=append)
    assert report.added == 5
    assert memory.stats().episodes == 5
    with pytest.raises(BadInput, match="growing.jsonl:6"):
        memory.ingest([source], IngestOptions(format="facts"))
    assert memory.stats().episodes == 5


def test_a_facts_file_that_cannot_be_set_aside_is_one_line_and_stores_nothing(cli, db_path, tmp_path, monkeypatch):
    """Its checked episodes wait in a temporary file: with nowhere to write one, the
    command says where to make room, and stores nothing of the file."""
    import tempfile

    from memctl import ingest as ingest_module

    assert cli("ingest", write_jsonl(tmp_path / "a.jsonl", [line("2024-01-01", fact("x", "uses", "y"))])).code == 0
    counts = table_counts(db_path)
    monkeypatch.setattr(ingest_module, "SPOOL_IN_MEMORY_BYTES", 1)  # to the disk at once
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "gone"))
    run = cli("ingest", write_jsonl(tmp_path / "b.jsonl", [line("2024-03-01", fact("z", "uses", "w"))]))
    assert run.code == 1 and len(run.err.strip().splitlines()) == 1 and "TMPDIR" in run.err, run.err
    assert "Traceback" not in run.err and "internal error" not in run.err
    assert table_counts(db_path) == counts


def test_reference_time_fallbacks(cli, db_path, tmp_path):
    undated = write_jsonl(tmp_path / "u.jsonl", [{"facts": [fact("team", "uses", "Linear", cardinality="many")]}])
    mtime = datetime(2023, 7, 4, 12, 0, tzinfo=UTC).timestamp()
    os.utime(undated, (mtime, mtime))
    preview = cli("ingest", undated, "--dry-run", "--json", "--reference-time", "2022-01-01T00:00:00+01:00")
    assert preview.code == 0
    row = [__import__("json").loads(x) for x in preview.out.splitlines()][0]
    assert (row["reference_time"], row["reference_time_source"]) == ("2021-12-31T23:00:00.000000Z", "user")
    assert made_nothing(db_path)  # the dry run wrote nothing, not even an empty database
    assert cli("ingest", undated, "--from-mtime").code == 0
    (episode,) = cli("episodes", "--json").json()
    assert (episode["reference_time"], episode["reference_time_source"]) == ("2023-07-04T12:00:00.000000Z", "mtime")
    refused = cli("ingest", undated, "--reference-time", "someday")
    assert refused.code == 2 and "--reference-time" in refused.err


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["undo", "ep_nope"], "no episode or operation matches"),
        (["undo"], "name at least one"),
        (["show", "ep_nope"], "no episode matches"),
        (["recall", "!!!"], "no words"),
        (["episodes", "--source", "/nope/gone.jsonl"], "no such file"),
        (["episodes", "--format", "pdf"], "--format"),
        (["episodes", "--limit", "-1"], "--limit"),
        (["recall", "billing", "--limit", "0"], "--limit"),
        (["episodes", "--status", "gone"], "--status"),
        (["ingest", "does-not-exist.jsonl"], "no such file"),
        (["frobnicate"], "No such command"),
    ],
)
def test_usage_errors_are_one_line_exit_2(cli, args, message):
    assert cli("ingest", FIXTURE).code == 0
    run = cli(*args)
    assert run.code == 2, (run.code, run.err)
    assert len(run.err.strip().splitlines()) == 1 and message in run.err


def test_ambiguous_prefix_is_refused(cli):
    assert cli("ingest", FIXTURE).code == 0
    run = cli("undo", "ep_")
    assert run.code == 2 and "ambiguous" in run.err


def test_read_commands_do_not_create_a_database(cli, tmp_path):
    missing = tmp_path / "nothing-here.db"
    run = cli("recall", "anything", db=missing)
    assert run.code == 2 and "memctl ingest" in run.err and not missing.exists()


def test_show_episodes_stats_rebuild_json(cli):
    assert cli("ingest", FIXTURE).code == 0
    listed = cli("episodes", "--json").json()
    assert [set(e) for e in listed][0] == {"id", "source", "position", "format", "reference_time",
                                          "reference_time_source", "status", "extraction", "title"}
    assert [e["reference_time"] for e in listed] == sorted(e["reference_time"] for e in listed)
    shown = cli("show", listed[0]["id"], "--json").json()
    assert shown["content"].startswith("Billing runs on MySQL") and len(shown["assertions"]) == 2
    assert {f["object"] for f in shown["facts"]} == {"MySQL", "billing team"}
    stats = cli("stats", "--json").json()
    assert (stats["episodes"], stats["assertions"]) == (5, 8)
    assert cli("rebuild", "--json").json()["facts_created"] == 0
    for command in (["stats"], ["episodes"], ["operations"], ["history", "billing"], ["show", listed[0]["id"]],
                    ["recall", "billing"], ["rebuild"]):
        run = cli(*command)
        assert run.code == 0 and run.out.strip(), command


def test_help_has_an_example_for_every_command(cli):
    for command in ("ingest", "recall", "undo", "episodes", "show", "history", "stats", "rebuild", "operations"):
        run = cli(command, "--help")
        assert run.code == 0 and "Example: memctl" in run.out, command


def test_undo_of_a_large_file_by_source(cli, tmp_path):
    """More episodes than SQLite binds in one statement (999 on older builds)."""
    big = write_jsonl(tmp_path / "big.jsonl", [
        line(f"2024-01-01T00:{i // 60 % 60:02d}:{i % 60:02d}Z", fact(f"svc{i % 50}", "uses", f"lib{i}", cardinality="many"))
        for i in range(1200)
    ])
    assert cli("ingest", big).code == 0
    # one word: a fact of a two-word question must match both ("svc1 uses" would find svc1's 24)
    assert len(cli("recall", "--kind", "fact", "uses", "--history", "--limit", "5000", "--json").json()["results"]) == 1200
    undone = cli("undo", "--source", big, "--apply", "--json")
    done = undone.json()
    assert len(done["episodes"]) == 1200 and len(done["removed"]) == 1200
    # written in many parts (invocation.JSON_PIECES_PER_WRITE), it is still json.dumps' text
    assert undone.out == json.dumps(done, indent=2, ensure_ascii=False) + "\n"
    assert cli("stats", "--json").json()["assertions"] == 0


def test_an_undo_on_a_terminal_shows_the_first_rows_of_each_effect_and_a_pipe_every_row(cli, tmp_path, monkeypatch):
    from memctl.cli import EFFECTS_ON_A_TERMINAL

    facts = EFFECTS_ON_A_TERMINAL + 7
    many = write_jsonl(tmp_path / "many.jsonl", [
        line(f"2024-01-01T00:00:{i:02d}Z", fact(f"svc{i}", "uses", f"lib{i}")) for i in range(facts)])
    assert cli("ingest", many).code == 0
    piped = cli("undo", "--source", many)
    assert piped.out.count("\nremoved\t") == facts and "more" not in piped.out
    monkeypatch.setattr(sys.stdout, "isatty", lambda: True)
    shown = cli("undo", "--source", many)
    assert shown.code == 0 and shown.out.count("│ removed") == EFFECTS_ON_A_TERMINAL + 1
    assert "… 7 more" in shown.out  # the rest of the line folds in a narrow column


@pytest.mark.sqlite_only
def test_after_a_command_the_file_alone_holds_what_it_committed(cli, db_path, tmp_path):
    """The command closes what it opened: the write-ahead log is folded back and removed,
    so a copy of the file (a backup) is the whole memory."""
    import shutil

    assert cli("ingest", FIXTURE).code == 0
    assert not db_path.with_name(db_path.name + "-wal").exists()
    copy = tmp_path / "backup.db"
    shutil.copy(db_path, copy)
    assert cli("stats", "--json", db=copy).json()["episodes"] == cli("stats", "--json").json()["episodes"] > 0


def test_empty_and_blank_files_hold_no_episodes(cli, tmp_path):
    folder = tmp_path / "logs"
    folder.mkdir()
    (folder / "empty.jsonl").write_text("")
    (folder / "blank.jsonl").write_text("\n  \n")
    write_jsonl(folder / "real.jsonl", [line("2024-01-01", fact("svc", "uses", "Kafka"))])
    report = cli("ingest", folder, "--json").json()
    assert (report["files"], report["episodes"], report["added"]) == (3, 1, 1)


def test_unknown_format_is_refused_with_the_choices(cli, tmp_path):
    tmp_path = tmp_path / "logs"
    tmp_path.mkdir()
    table = tmp_path / "numbers.csv"
    table.write_text("a,b\n1,2\n")
    run = cli("ingest", table)
    assert run.code == 2 and "claude-code" in run.err and "facts" in run.err
    run = cli("ingest", table, "--format", "csv")
    assert run.code == 2 and "unknown format" in run.err
    # beside a real log, an unreadable file is reported, not fatal
    write_jsonl(tmp_path / "real.jsonl", [line("2024-01-01", fact("svc", "uses", "Kafka"))])
    (tmp_path / "started.jsonl").touch()  # a session that never got a line, and its empty .meta.json
    (tmp_path / "started.meta.json").touch()
    report = cli("ingest", tmp_path, "--json").json()
    assert report["added"] == 1 and report["unrecognised"] == [str(table.resolve())]
    assert report["empty"] == [str((tmp_path / name).resolve()) for name in ("started.jsonl", "started.meta.json")]
    alone = cli("ingest", tmp_path / "started.jsonl", "--json")
    assert alone.code == 0 and alone.json()["episodes"] == 0 and len(alone.json()["empty"]) == 1


def test_undo_of_an_undo_leaves_an_episode_purged_since(cli, tmp_path):
    both = write_jsonl(tmp_path / "both.jsonl", [line("2024-01-01", fact("svc", "uses", "Kafka", cardinality="many")),
                                                 line("2024-03-01", fact("svc", "uses", "Redis", cardinality="many"))])
    assert cli("ingest", both).code == 0
    undo_id = cli("undo", "--source", both, "--apply", "--json").json()["operation_id"]
    kafka, redis = [e["id"] for e in cli("episodes", "--json").json()]
    assert cli("undo", kafka, "--purge", "--apply").code == 0
    plan = cli("undo", undo_id, "--apply", "--json").json()
    assert plan["applied"] and plan["episodes"] == [redis] and plan["changed_since"] == [kafka]
    assert objects(cli("recall", "--kind", "fact", "svc uses", "--json")) == ["Redis"]
