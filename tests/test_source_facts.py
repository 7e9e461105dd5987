"""A structured facts file is checked whole before anything is stored; a big one in two
halves at once, the second in a forked process (``sources.facts.check``). Either way the
same episodes come out, and a bad line is named by its line in the file."""

from __future__ import annotations

import io
import json
import os
import threading
from pathlib import Path

import pytest

from memctl.errors import BadInput, StoreUnavailable
from memctl.memory import Memory
from memctl.sources import IngestOptions, facts
from tests.conftest import FakeClock, current_facts

OPTIONS = IngestOptions(format="facts")


def line(n: int) -> str:
    return json.dumps({"reference_time": f"2024-01-{n % 28 + 1:02d}T10:00:00Z", "source_id": f"s{n}",
                       "facts": [{"subject": f"svc{n % 9}", "predicate": "runs on", "object": f"db{n % 4}"}]})


def facts_file(tmp_path: Path, lines: list[str]) -> Path:
    path = tmp_path / "f.facts.jsonl"
    path.write_text("".join(text + "\n" for text in lines))
    return path


# Every seventh line blank: the numbering counts them, as an editor does.
LINES = [line(n) if n % 7 else "" for n in range(1, 61)]


def checked(path: Path) -> list:
    spool = io.BytesIO()
    count = facts.check(path, OPTIONS, spool)
    spool.seek(0)
    return list(facts.checked(spool, count))


@pytest.fixture
def in_halves(monkeypatch, tmp_path):
    """Every file checked in halves, the second half's process noting its pid in a file."""
    monkeypatch.setattr(facts, "CHECK_IN_HALVES_BYTES", 1)
    monkeypatch.setattr(facts, "forking_helps", lambda: True)
    pids = tmp_path / "pids"
    real = facts._check_second_half

    def noted(*args):
        with open(pids, "a") as handle:
            handle.write(f"{os.getpid()}\n")
        real(*args)

    monkeypatch.setattr(facts, "_check_second_half", noted)
    return pids


def test_a_file_checked_in_halves_gives_what_one_pass_gives(tmp_path, in_halves):
    path = facts_file(tmp_path, LINES)
    with pytest.MonkeyPatch.context() as unpatched:
        unpatched.setattr(facts, "CHECK_IN_HALVES_BYTES", 1 << 40)
        whole = checked(path)
    halves = checked(path)
    assert [int(pid) != os.getpid() for pid in in_halves.read_text().split()] == [True]  # another process did half
    assert halves == whole
    assert [episode.position for episode in halves] == [n for n in range(1, 61) if n % 7]


def test_an_ingest_stores_the_same_memory_either_way(tmp_path, in_halves):
    path = facts_file(tmp_path, LINES)
    halves = Memory.open(tmp_path / "halves.db", FakeClock())
    report = halves.ingest([path], OPTIONS)
    with pytest.MonkeyPatch.context() as unpatched:
        unpatched.setattr(facts, "CHECK_IN_HALVES_BYTES", 1 << 40)
        whole = Memory.open(tmp_path / "whole.db", FakeClock())
        whole.ingest([path], OPTIONS)
    assert in_halves.exists()
    assert report.added == 60 - 60 // 7
    assert current_facts(halves) == current_facts(whole)
    assert [e.id for e in halves.episodes()] == [e.id for e in whole.episodes()]


@pytest.mark.parametrize("bad", ["{not json", json.dumps({"reference_time": "2024-02-30", "facts": []}),
                                 json.dumps({"facts": [{"subject": "a", "predicate": "b"}]})])
def test_a_bad_line_in_the_second_half_is_named_by_its_line_in_the_file(tmp_path, in_halves, bad):
    lines = [*LINES[:50], bad, *LINES[51:]]
    with pytest.raises(BadInput, match=rf"^{facts_file(tmp_path, lines)}:51: "):
        checked(tmp_path / "f.facts.jsonl")
    assert in_halves.exists()


def test_of_bad_lines_in_both_halves_the_first_is_named(tmp_path, in_halves):
    lines = [*LINES[:4], "{not json", *LINES[5:50], "{not json either", *LINES[51:]]
    with pytest.raises(BadInput, match=r":5: "):
        checked(facts_file(tmp_path, lines))


def test_a_worker_that_dies_leaves_its_half_to_the_parent(tmp_path, monkeypatch):
    monkeypatch.setattr(facts, "CHECK_IN_HALVES_BYTES", 1)
    monkeypatch.setattr(facts, "forking_helps", lambda: True)
    monkeypatch.setattr(facts, "_check_second_half", lambda *args: os._exit(3))
    path = facts_file(tmp_path, LINES)
    halves = checked(path)
    monkeypatch.setattr(facts, "CHECK_IN_HALVES_BYTES", 1 << 40)
    assert halves == checked(path)


def test_with_nowhere_for_the_second_half_the_file_is_checked_in_one_pass(tmp_path, in_halves, monkeypatch):
    import tempfile

    path = facts_file(tmp_path, LINES)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "gone"))
    assert [episode.position for episode in checked(path)] == [n for n in range(1, 61) if n % 7]
    assert not in_halves.exists()


def test_a_spool_that_cannot_take_the_second_half_is_one_clear_error(tmp_path, in_halves):
    class Full(io.BytesIO):
        """Takes the first half's records, one at a time, and fails on the second half's, copied in one piece."""

        def write(self, data):
            if len(data) > 1000:
                raise OSError(28, "No space left on device")
            return super().write(data)

    with pytest.raises(StoreUnavailable, match="No space left on device.*TMPDIR"):
        facts.check(facts_file(tmp_path, LINES), OPTIONS, Full())


def test_ctrl_c_while_checking_stops_the_worker_too(tmp_path, in_halves, monkeypatch):
    import multiprocessing

    real = facts._lines
    workers = []

    def interrupted(path, options, *, start=0, stop=None, first_line=1):
        if stop is not None:  # the first half, this process's, while the worker runs
            workers.extend(multiprocessing.active_children())
            raise KeyboardInterrupt
        return real(path, options, start=start, stop=stop, first_line=first_line)

    monkeypatch.setattr(facts, "_lines", interrupted)
    with pytest.raises(KeyboardInterrupt):
        checked(facts_file(tmp_path, LINES))
    assert len(workers) == 1 and multiprocessing.active_children() == []


def test_a_file_of_one_line_is_not_split(tmp_path, in_halves):
    path = facts_file(tmp_path, [line(1)])
    assert [episode.position for episode in checked(path)] == [1]
    assert not in_halves.exists()


def test_no_fork_beside_another_thread():
    release = threading.Event()
    other = threading.Thread(target=release.wait)
    other.start()
    try:
        assert not facts.forking_helps()
    finally:
        release.set()
        other.join()


def test_the_progress_bar_on_a_terminal_leaves_the_check_free_to_fork(tmp_path, monkeypatch):
    """On a terminal, ``memctl ingest`` draws a progress bar; drawn by a thread of its own,
    it would keep ``check`` from forking, so interactive users never got the two halves."""
    from memctl import cli

    seen = {}

    class Watching:
        def ingest(self, paths, options, *, extractor=None, on_file=None):
            on_file(paths[0], 0)
            seen["threads"] = threading.active_count()
            return "report"

    monkeypatch.setattr(cli.sys.stderr, "isatty", lambda: True)
    before = threading.active_count()
    assert cli._ingest_with_progress(Watching(), [facts_file(tmp_path, LINES)], OPTIONS, None) == "report"
    assert seen["threads"] == before
