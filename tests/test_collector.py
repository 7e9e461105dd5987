"""Bulk work pauses the cyclic garbage collector, and what it leaves alive is not walked
again when the collector resumes (store.collector_paused)."""

from __future__ import annotations

import gc

import pytest

from memctl.store import collector_paused


class Row:  # a container the collector tracks
    pass


def _young(objects: list) -> bool:
    ids = {id(o) for o in objects}
    return any(id(o) in ids for o in gc.get_objects(generation=0) + gc.get_objects(generation=1))


@pytest.fixture
def collector_on():
    was = gc.isenabled()
    gc.enable()
    yield
    if not was:
        gc.disable()


def test_what_bulk_work_leaves_alive_is_old_when_the_collector_resumes(collector_on):
    with collector_paused():
        assert not gc.isenabled()
        kept = [Row() for _ in range(1000)]
        assert _young(kept)
    assert gc.isenabled()
    # The next collection of the young generations does not go through them.
    assert not _young(kept)
    assert gc.get_freeze_count() == 0


def test_objects_the_process_froze_stay_frozen(collector_on):
    frozen = [Row() for _ in range(10)]
    gc.freeze()
    try:
        count = gc.get_freeze_count()
        with collector_paused():
            made = [Row() for _ in range(10)]
        assert gc.get_freeze_count() == count and gc.isenabled() and made
    finally:
        gc.unfreeze()
    assert frozen


def test_a_collector_the_caller_had_off_stays_off():
    was = gc.isenabled()
    gc.disable()
    try:
        with collector_paused():
            pass
        assert not gc.isenabled()
    finally:
        if was:
            gc.enable()
