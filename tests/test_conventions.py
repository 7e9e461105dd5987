"""What a first hour at the command line expects (issue 14, items 14-19): --version, -h,
--db anywhere, bare memctl, output that greps whole, episodes paged and filtered, readable
values, exit codes that agree."""

from __future__ import annotations

import json
import sys
from importlib.metadata import version
from pathlib import Path

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "team.facts.jsonl"


def test_bare_memctl_prints_help_and_exits_0(raw_cli):
    bare = raw_cli()
    assert bare.code == 0 and "Usage: memctl" in bare.out and "ingest" in bare.out and bare.err == ""
    group = raw_cli("repair")
    assert group.code == 0 and "midnight-hallucinations" in group.out


def test_version_and_short_help(raw_cli):
    shown = raw_cli("--version")
    assert shown.code == 0 and shown.out.strip() == f"memctl {version('memctl-memory')}"
    short = raw_cli("-h")
    assert short.code == 0 and "Usage: memctl" in short.out
    command = raw_cli("recall", "-h")
    assert command.code == 0 and "--as-of" in command.out


def test_db_is_taken_after_the_command_too(raw_cli, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    db = tmp_path / "after.db"
    assert raw_cli("ingest", FIXTURE, "--db", db).code == 0
    stats = raw_cli("stats", f"--db={db}", "--json")
    assert stats.code == 0 and stats.json()["episodes"] == 5
    # After "--" an argument that looks like the option is text, not a database.
    added = raw_cli("--db", db, "add", "--json", "--reference-time", "2024-01-01", "--", "--db")
    assert added.code == 0 and added.json()["reference_time"].startswith("2024-01-01")
    assert sorted(p.name for p in tmp_path.iterdir() if not p.name.startswith("after.db")) == []


def test_piped_tables_keep_ids_and_paths_whole_one_record_a_line(cli, tmp_path):
    deep = tmp_path / ("a-long-project-folder-name-" * 4) / "session-with-a-long-name.jsonl"
    deep.parent.mkdir(parents=True)
    deep.write_text(FIXTURE.read_text())
    assert cli("ingest", deep, "--format", "facts").code == 0
    episodes = cli("episodes", "--json").json()
    table = cli("episodes")
    lines = table.out.splitlines()
    assert lines[0].split("\t") == ["episode", "said", "title", "source:position", "status"]
    for episode in episodes:
        (row,) = [line for line in lines if episode["id"] in line]
        cells = row.split("\t")
        # The source shows its folder and file; the time says it is UTC.
        assert cells[0] == episode["id"] and cells[3] == f"{deep.parent.name}/{deep.name}:{episode['position']}"
        assert cells[1].endswith("Z")


def test_episodes_pages_by_default_and_filters(cli, tmp_path):
    notes = tmp_path / "notes"
    notes.mkdir()
    for day in range(1, 61):
        (notes / f"n{day:02d}.md").write_text(f"note {day}")
    assert cli("ingest", notes, "--from-mtime").code == 0
    table = cli("episodes")
    rows = [line for line in table.out.splitlines() if line.startswith("ep_")]
    assert len(rows) == 50 and "… 10 more" in table.err and "more" not in table.out  # a pipe gets rows only
    assert len(cli("episodes", "--json").json()) == 60  # programs get everything unless they ask for less
    assert len(cli("episodes", "--json", "--limit", "7").json()) == 7
    assert cli("ingest", FIXTURE).code == 0
    facts_only = cli("episodes", "--format", "facts", "--json").json()
    assert len(facts_only) == 5 and {e["format"] for e in facts_only} == {"facts"}
    early = cli("episodes", "--format", "facts", "--until", "2023-07-01", "--json").json()
    assert [e["reference_time"][:10] for e in early] == ["2023-02-14", "2023-06-01"]
    empty = cli("episodes", "--since", "2030-01-01")
    assert empty.code == 0 and "no episodes match" in empty.err


def test_a_source_deleted_since_its_ingest_still_lists(cli, tmp_path):
    copy = tmp_path / "gone.facts.jsonl"
    copy.write_text(FIXTURE.read_text())
    assert cli("ingest", copy, "--format", "facts").code == 0
    copy.unlink()
    listed = cli("episodes", "--source", copy, "--json")
    assert listed.code == 0 and len(listed.json()) == 5


def test_history_of_an_unknown_name_is_an_empty_answer(cli):
    assert cli("ingest", FIXTURE).code == 0
    run = cli("history", "nobody", "--json")
    assert run.code == 0 and run.json()["slots"] == [] and "no entity named 'nobody'" in run.err


def test_stats_and_retry_print_readable_values(cli):
    assert cli("ingest", FIXTURE).code == 0
    stats = cli("stats").out
    assert "2023-02-14 09:12:00Z → 2024-09-12 13:05:00Z" in stats and "[" not in stats and "'" not in stats
    retry = cli("retry", "--failed", "--dry-run", "--extractor", "rules").out
    assert "False" not in retry and "True" not in retry and "[" not in retry and "None" not in retry


def test_purge_preview_says_the_content_goes_for_good(cli):
    assert cli("ingest", FIXTURE).code == 0
    episode = cli("episodes", "--json").json()[0]["id"]
    preview = cli("undo", episode, "--purge")
    assert preview.code == 0 and "for good" in preview.out and "cannot be undone" in preview.out
    assert cli("show", episode).code == 0  # a preview erased nothing


def test_show_prints_the_facts_and_no_control_bytes_to_a_terminal(cli, monkeypatch, tmp_path):
    note = tmp_path / "pasted.md"
    note.write_text("build log \x1b]0;pwned\x07\x1b[2J cleared; billing uses Postgres\n")
    assert cli("ingest", note, "--reference-time", "2024-05-01").code == 0
    assert cli("ingest", FIXTURE).code == 0
    episodes = cli("episodes", "--json").json()
    pasted = next(e["id"] for e in episodes if e["format"] == "markdown")
    monkeypatch.setattr(sys.stdout, "isatty", lambda: True, raising=False)
    shown = cli("show", pasted)
    # Rich styles the terminal itself; what was stored reaches it only as visible text.
    assert "\x1b]0;pwned" not in shown.out and "\x1b[2J" not in shown.out and "\x07" not in shown.out
    assert "\\x1b]0;pwned" in shown.out
    structured = next(e["id"] for e in episodes if e["format"] == "facts")
    assert "Facts it supports" in cli("show", structured).out
    raw = cli("show", pasted, "--json").json()
    assert "\x1b[2J" in raw["content"]  # --json gives the text as stored


def test_the_no_llm_notice_is_not_printed_into_the_progress_bar(tmp_path):
    """On a terminal the notice comes after the bar has started (the first episode that
    needs extracting says it): it must land on a line of its own above the bar."""
    import os
    import pty
    import subprocess

    folder = tmp_path / "logs"
    folder.mkdir()
    for day in range(1, 30):
        write_chat(folder / f"s{day:02d}.jsonl", day)
    leader, follower = pty.openpty()
    env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY", "OPENAI_BASE_URL")}
    proc = subprocess.Popen([sys.executable, "-m", "memctl", "--db", str(tmp_path / "m.db"), "ingest", str(folder)],
                            stdin=follower, stdout=follower, stderr=follower, env={**env, "COLUMNS": "100"})
    os.close(follower)
    output = b""
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # the child closed its side
            break
        if not chunk:
            break
        output += chunk
    assert proc.wait(timeout=120) == 0
    text = output.decode(errors="replace")
    assert "files," in text  # the bar ran
    before = text[:text.index("memctl: no LLM configured")]
    # What precedes the notice is the end of a line or the bar's erase-line, never bar text.
    assert before.endswith(("\n", "\x1b[2K")), repr(before[-80:])


def write_chat(path: Path, day: int) -> None:
    import json

    path.write_text("\n".join(json.dumps(r) for r in [
        {"role": "user", "content": f"we moved billing to Postgres on day {day}", "timestamp": f"2024-03-{day:02d}T10:00:00Z"},
        {"role": "assistant", "content": "noted", "timestamp": f"2024-03-{day:02d}T10:00:05Z"}]) + "\n")


def test_terminal_tables_show_stored_brackets_as_written(cli, monkeypatch, tmp_path):
    """A stored value is never read as rich markup: "[bold]" or a redaction mark shows as written."""
    facts = tmp_path / "f.jsonl"
    facts.write_text(json.dumps({"reference_time": "2024-01-01T00:00:00Z", "content": "ci notes", "facts": [
        {"subject": "ci", "predicate": "runs on", "object": "[b]CI[/b]"}]}) + "\n")
    assert cli("ingest", facts, "--format", "facts").code == 0
    monkeypatch.setattr(sys.stdout, "isatty", lambda: True, raising=False)
    shown = cli("facts", "--subject", "ci")
    assert shown.code == 0 and "[b]CI[/b]" in shown.out
