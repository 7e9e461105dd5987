"""What a `memctl` process does before it answers (issue 15): a command that only reads
opens the file for reading only, and works where it cannot write; a command that writes
loads sqlite-utils without numpy and without plugins."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from contextlib import contextmanager
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memctl.memory import Memory
from memctl.sources import IngestOptions

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "team.facts.jsonl"
REPO = Path(__file__).resolve().parents[1]


def memctl(*args, env: dict | None = None) -> subprocess.CompletedProcess:
    """A whole `memctl` process, as a user runs it."""
    return subprocess.run([sys.executable, "-m", "memctl", *map(str, args)], capture_output=True, text=True,
                          cwd=REPO, env={**os.environ, **(env or {})}, timeout=120)


def stored(tmp_path: Path) -> Path:
    folder = tmp_path / "memory"
    folder.mkdir()
    path = folder / "m.db"
    memory = Memory.open(path)
    memory.ingest([FIXTURE], IngestOptions())
    memory.close()
    return path


def state_of(folder: Path) -> dict[str, str]:
    """Every file of the folder with a hash of its bytes."""
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.iterdir())}


@contextmanager
def read_only(folder: Path):
    """``folder`` made so that no file in it can be made, changed or deleted, also by root
    (whom permission bits do not stop): chmod, and chattr +i where permissions are not enough."""
    folder.chmod(0o555)
    immutable = False
    try:
        probe = folder / ".probe"
        try:
            probe.touch()
        except PermissionError:
            pass
        else:
            probe.unlink()
            chattr = shutil.which("chattr")
            if chattr is None or subprocess.run([chattr, "+i", str(folder)], capture_output=True).returncode:
                pytest.skip("no way to make a folder read-only for this user (root without chattr +i)")
            immutable = True
        yield
    finally:
        if immutable:
            subprocess.run([shutil.which("chattr") or "chattr", "-i", str(folder)], check=True)
        folder.chmod(0o755)


def test_reading_commands_write_nothing_and_leave_no_file_behind(tmp_path):
    path = stored(tmp_path)
    before = state_of(path.parent)
    for args in (("recall", "billing database", "--json"), ("stats", "--json"), ("episodes", "--json"),
                 ("facts", "--json"), ("operations", "--json"), ("history", "billing", "--json")):
        run = memctl("--db", path, *args)
        assert run.returncode == 0, (args, run.stderr)
        assert state_of(path.parent) == before, args


def test_reading_commands_work_in_a_folder_that_cannot_be_written(tmp_path):
    path = stored(tmp_path)
    before = state_of(path.parent)
    with read_only(path.parent):
        recalled = memctl("--db", path, "recall", "which database does billing use", "--json")
        assert recalled.returncode == 0, recalled.stderr
        assert "Postgres" in recalled.stdout
        stats = memctl("--db", path, "stats", "--json")
        assert stats.returncode == 0 and '"episodes": 5' in stats.stdout, stats.stderr
        # A command that writes says so in one line, and nothing is lost.
        refused = memctl("--db", path, "ingest", FIXTURE)
        assert refused.returncode == 2 and refused.stderr.count("\n") == 1 and "is read-only" in refused.stderr
        assert state_of(path.parent) == before


def test_previews_work_on_a_store_that_cannot_be_written(tmp_path):
    """A read-only mount: what an undo or a repair would do is shown (worked out on a copy
    in the temporary folder); doing it is refused in one line, and the file is unchanged."""
    path = stored(tmp_path)
    episode = json.loads(memctl("--db", path, "episodes", "--json").stdout)[0]["id"]
    before = state_of(path.parent)
    with read_only(path.parent):
        preview = memctl("--db", path, "undo", episode, "--json")
        assert preview.returncode == 0, preview.stderr
        plan = json.loads(preview.stdout)
        assert plan["episodes"] == [episode] and not plan["applied"] and plan["removed"]
        repair = memctl("--db", path, "repair", "midnight-hallucinations", "--json")
        assert repair.returncode == 0, repair.stderr
        refused = memctl("--db", path, "undo", episode, "--apply")
        assert refused.returncode == 2 and refused.stderr.count("\n") == 1 and "is read-only" in refused.stderr
        assert state_of(path.parent) == before


def test_commits_left_in_a_log_are_never_read_past(tmp_path):
    """A writer killed in a read-only folder leaves its -wal file: read as it is, the file
    would answer without those commits. Where the folder can be written, they are read."""
    import sqlite3

    path = stored(tmp_path)
    before = path.read_bytes()
    writer = sqlite3.connect(path)
    writer.execute("PRAGMA wal_autocheckpoint = 0")
    writer.execute("UPDATE episodes SET status = 'undone' WHERE rowid = (SELECT min(rowid) FROM episodes)")
    writer.commit()
    log = (path.parent / "m.db-wal").read_bytes()
    writer.close()  # checkpoints: put the file back as it was, beside the log of the commit
    path.write_bytes(before)
    (path.parent / "m.db-wal").write_bytes(log)
    with read_only(path.parent):
        refused = memctl("--db", path, "stats", "--json")
    assert refused.returncode == 2 and refused.stderr.count("\n") == 1 and "is read-only" in refused.stderr
    recovered = memctl("--db", path, "stats", "--json")
    assert recovered.returncode == 0 and '"episodes_undone": 1' in recovered.stdout, recovered.stderr


def test_a_writing_command_loads_sqlite_utils_without_numpy_or_plugins(tmp_path):
    pytest.importorskip("numpy")
    probe = """
import sys
from pathlib import Path
from memctl.memory import Memory
from memctl.sources import IngestOptions
memory = Memory.open(sys.argv[1])
memory.ingest([Path(sys.argv[2])], IngestOptions())
print("numpy" in sys.modules, memory.stats().episodes)
import numpy  # still there for whoever needs it
print(numpy.float32(1.5) + 1)

from sqlite_utils import hookimpl
from sqlite_utils.plugins import pm
from memctl.store.connection import open_database

class Plugin:
    @hookimpl
    def prepare_connection(self, conn):
        print("plugin ran", file=sys.stderr)

pm.register(Plugin(), name="probe")
open_database(Path(sys.argv[1]).with_name("other.db"))
"""
    done = subprocess.run([sys.executable, "-c", probe, str(tmp_path / "m.db"), str(FIXTURE)], capture_output=True,
                          text=True, check=True)
    assert done.stdout.split() == ["False", "5", "2.5"] and "plugin ran" not in done.stderr


def test_an_ingest_without_a_model_loads_no_llm_extractor(tmp_path):
    """Without an endpoint configured, nothing is extracted by a model: an ingest loads
    neither the LLM extractor nor openai (80 ms of its start-up)."""
    probe = """
import sys
from memctl.cli import run
code = run(["--db", sys.argv[1], "ingest", sys.argv[2], "--json"])
print(code, *sorted(m for m in ("memctl.extract.llm", "openai") if m in sys.modules))
"""
    env = {name: value for name, value in os.environ.items() if not name.startswith("OPENAI_")}
    done = subprocess.run([sys.executable, "-c", probe, str(tmp_path / "m.db"), str(FIXTURE)], capture_output=True,
                          text=True, check=True, env=env)
    assert done.stdout.splitlines()[-1].split() == ["0"]


# --- answered before Typer loads ------------------------------------------------------------

def typer_help(capsys, monkeypatch, columns: int) -> str:
    from memctl.cli import run

    monkeypatch.setenv("COLUMNS", str(columns))
    capsys.readouterr()
    assert run(["--help"]) == 0
    return capsys.readouterr().out


def test_the_pinned_help_is_what_typer_prints(capsys, monkeypatch):
    from memctl.entry import HELP, HELP_COLUMNS

    for columns in (HELP_COLUMNS, 200):
        assert typer_help(capsys, monkeypatch, columns) == HELP.read_text(encoding="utf-8"), (
            "memctl/help.txt is not the help Typer prints: regenerate it with\n"
            "  COLUMNS=80 python -c 'from memctl.cli import run; run([\"--help\"])' > memctl/help.txt")


def test_the_help_comes_from_the_pin_where_it_is_exact_and_from_typer_elsewhere(raw_cli, capsys, monkeypatch):
    import memctl.cli
    from memctl.entry import HELP

    narrow = typer_help(capsys, monkeypatch, 60)
    assert narrow != HELP.read_text(encoding="utf-8")  # Typer wraps to the terminal below 80 columns
    for args in ([], ["--help"], ["-h"]):
        monkeypatch.setenv("COLUMNS", "60")
        run = raw_cli(*args)
        assert (run.code, run.out, run.err) == (0, narrow, ""), args
        monkeypatch.setenv("COLUMNS", "100")
        with monkeypatch.context() as patched:
            patched.setattr(memctl.cli, "run", lambda args: pytest.fail("Typer was asked for the pinned help"))
            run = raw_cli(*args)
        assert (run.code, run.out, run.err) == (0, HELP.read_text(encoding="utf-8"), ""), args


def modules_after(*argv: str, env: dict | None = None) -> set[str]:
    """The modules a whole `memctl ARGV` process loaded beyond what Python itself starts with."""
    show = "print(repr(sorted(sys.modules)), file=sys.stderr)"
    probe = (f"import sys\nfrom memctl.entry import main\nsys.argv = ['memctl', *sys.argv[1:]]\n"
             f"try:\n    main()\nexcept SystemExit:\n    pass\n{show}")
    runs = [subprocess.run([sys.executable, "-c", code, *argv], capture_output=True, text=True, cwd=REPO,
                           env={**os.environ, **(env or {})}, timeout=60) for code in (probe, f"import sys\n{show}")]
    loaded, baseline = (set(eval(run.stderr.strip().splitlines()[-1])) for run in runs)  # noqa: S307  (our own repr)
    return loaded - baseline


def test_the_help_loads_nothing_but_the_entry_point_and_the_standard_library():
    extra = modules_after("--help", env={"COLUMNS": "100"})
    assert {name for name in extra if name.startswith("memctl")} == {"memctl", "memctl.entry", "memctl.errors",
                                                                     "memctl.invocation"}
    assert {name.partition(".")[0] for name in extra} - sys.stdlib_module_names == {"memctl"}


def test_a_recall_loads_only_what_answers_it(tmp_path):
    """No writer (sqlite-utils, the schema's migrations, the journal that marks abandoned
    operations), nothing of ingest or extraction; and for --json, no Typer or rich, nor
    dataclasses (with the inspect module they import) or the reports of changes."""
    path = stored(tmp_path)
    question = "which database does billing use"
    unneeded = {"pydantic", "sqlite_utils", "openai", "jsonlines", "dateutil", "numpy", "memctl.ingest",
                "memctl.sources", "memctl.redact", "memctl.extract.llm", "memctl.store.operations", "memctl.store.schema"}
    assert unneeded & modules_after("--db", str(path), "recall", question) == set()
    answered_before_typer = modules_after("--db", str(path), "recall", question, "--json")
    assert (unneeded | {"typer", "click", "rich", "memctl.cli", "dataclasses", "inspect", "decimal",
                        "memctl.reports"}) & answered_before_typer == set()
    # The date vocabulary (4 ms) only for a question that may name a time (recall.when);
    # a number in a name is no year.
    assert "memctl.extract.dates" not in modules_after("--db", str(path), "recall", "what does service238 use",
                                                       "--json")
    assert "memctl.extract.dates" in modules_after("--db", str(path), "recall", "billing in March 2024", "--json")


TEXT = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), max_size=24)
# Also what looks like an option: Typer reads those as options, so they must reach it.
QUESTIONS = st.one_of(TEXT, TEXT.map(lambda text: "-" + text), st.sampled_from(["-", "--", "-h", "--json", "--db"]))
# Where the question, --json and --db go; D is the database, Q the question. The last
# shapes are not recall --json alone: Typer must get them, and see their options.
SHAPES = [["recall", "Q", "--json"], ["recall", "--json", "Q"], ["--db", "D", "recall", "Q", "--json"],
          ["recall", "Q", "--json", "--db", "D"], ["--db=D", "recall", "--json", "Q"], ["recall", "--db", "D", "Q", "--json"],
          ["recall", "Q"], ["recall", "Q", "--json", "--limit", "3"], ["recall", "--json", "--", "Q"],
          ["--db", "D", "--db", "D", "recall", "Q", "--json"], ["recall", "Q", "--json", "--json"]]


def test_recall_json_before_typer_is_the_call_typer_makes(raw_cli, monkeypatch, tmp_path):
    """The same arguments, answered before Typer loads and by Typer itself: the same call
    of the library (the command's defaults are the library's), the same output and exit code."""
    import inspect

    import memctl.entry
    from memctl.results import RecallResult

    path = stored(tmp_path)
    calls: list[tuple] = []
    signature = inspect.signature(Memory.recall)

    def recall(self, *args, **kwargs):
        call = signature.bind(self, *args, **kwargs)
        call.apply_defaults()
        calls.append((self.connections.path, self.embeddings_model,
                       {name: value for name, value in call.arguments.items() if name != "self"}))
        return RecallResult(query=call.arguments["query"], as_of="2024-01-01T00:00:00.000000Z", known_at=None,
                            results=[], unavailable=unavailable)

    monkeypatch.setattr(Memory, "recall", recall)
    monkeypatch.setenv("MEMCTL_DB", str(path))

    @settings(max_examples=60, deadline=None)
    @given(QUESTIONS, st.sampled_from(SHAPES), st.sampled_from([None, ["vectors: the endpoint is down"]]))
    def check(question, shape, down):
        nonlocal unavailable
        unavailable = down
        args = [question if part == "Q" else part.replace("D", str(path)) if "D" in part else part for part in shape]
        answers = []
        for before_typer in (True, False):
            calls.clear()
            with monkeypatch.context() as patched:
                if not before_typer:
                    patched.setattr(memctl.entry, "_recall_json", lambda args: None)
                run = raw_cli(*args)
            answers.append((run.code, run.out, run.err, list(calls)))
        assert answers[0] == answers[1], args

    unavailable = None
    check()
