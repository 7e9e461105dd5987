"""Writers taking turns (memctl/store/turns.py): a writer that waits for the lock raises
its hand, and a long operation lets the lock go between two transactions only while a
hand is up. The processes that take turns for real are in test_crash_and_concurrency.py
(a purge and an ingest); here, the mechanism, in one process with two connections."""

from __future__ import annotations

import fcntl
import os
import threading
import time
from pathlib import Path

import pytest

from memctl.store import turns
from memctl.store.connection import open_database, write_transaction


@pytest.fixture
def two_writers(tmp_path: Path):
    first, second = open_database(tmp_path / "m.db"), open_database(tmp_path / "m.db")
    yield first, second
    first.conn.close()
    second.conn.close()


def test_a_writer_waiting_for_the_lock_has_its_hand_up_until_it_has_the_lock(two_writers):
    holder, waiter = two_writers
    hand = turns.hand_file(holder)
    assert hand is not None and not turns.hands_up(hand)
    got_in = threading.Event()

    def wait_and_write() -> None:
        with write_transaction(waiter):
            got_in.set()

    with write_transaction(holder):
        thread = threading.Thread(target=wait_and_write)
        thread.start()
        deadline = time.monotonic() + 10
        while not turns.hands_up(hand):
            assert time.monotonic() < deadline, "the waiting writer never raised its hand"
            time.sleep(0.001)
        assert not got_in.is_set()
    thread.join(timeout=10)
    assert got_in.is_set() and not turns.hands_up(hand)


def test_a_long_operation_alone_does_not_pause(two_writers, monkeypatch):
    db, _ = two_writers
    slept: list[float] = []
    monkeypatch.setattr(turns.time, "sleep", slept.append)
    turns.let_others_in(db, began=time.monotonic() - 3600)  # an hour in, and nobody waits
    assert slept == []


def test_a_long_operation_lets_the_lock_go_until_the_hands_are_down(two_writers):
    db, _ = two_writers
    hand = turns.hand_file(db)
    assert hand is not None
    handle = os.open(hand, os.O_RDWR | os.O_CREAT)
    fcntl.flock(handle, fcntl.LOCK_SH)  # as a waiting writer in another process would
    lowered = threading.Event()

    def lower_soon() -> None:
        time.sleep(0.05)
        lowered.set()
        os.close(handle)

    thread = threading.Thread(target=lower_soon)
    thread.start()
    turns.let_others_in(db, began=time.monotonic())
    assert lowered.is_set()  # it went on only once the hand was down
    thread.join()


def test_a_hand_that_stays_up_holds_a_long_operation_back_only_so_long(two_writers, monkeypatch):
    db, _ = two_writers
    hand = turns.hand_file(db)
    assert hand is not None
    handle = os.open(hand, os.O_RDWR | os.O_CREAT)
    fcntl.flock(handle, fcntl.LOCK_SH)  # a stopped process that was waiting
    clock = iter(range(1000))  # each look at the time a second later
    monkeypatch.setattr(turns.time, "monotonic", lambda: float(next(clock)))
    monkeypatch.setattr(turns.time, "sleep", lambda seconds: None)
    try:
        turns.let_others_in(db, began=0.0)
    finally:
        os.close(handle)
    assert next(clock) <= 3  # gave up at the first look past LET_IN_AT_MOST_S


def test_where_no_hand_can_be_raised_a_long_operation_pauses_once_it_has_run_a_while(two_writers, monkeypatch):
    db, _ = two_writers
    monkeypatch.setattr(turns, "fcntl", None)
    slept: list[float] = []
    monkeypatch.setattr(turns.time, "sleep", slept.append)
    assert turns.hand_file(db) is None
    turns.let_others_in(db, began=time.monotonic())  # just begun
    turns.let_others_in(db, began=time.monotonic() - turns.PAUSE_AFTER_S - 1)
    assert slept == [turns.BETWEEN_BATCHES_S]
    with write_transaction(db):  # and a writer still waits, unseen
        pass
