"""What a `memctl` process does before it answers (issue 15): a command that only reads
opens the file for reading only, and works where it cannot write; a command that writes
loads sqlite-utils without numpy and without plugins."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from contextlib import contextmanager
from pathlib import Path

import pytest

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
        assert refused.returncode == 2 and refused.stderr.count("\n") == 1 and "cannot open" in refused.stderr
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
    assert refused.returncode == 2 and refused.stderr.count("\n") == 1 and "cannot open" in refused.stderr
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
