"""A second process for the rules extractor's work, forked once and fed through a pipe.

The rules read every sentence of a log in Python, about half of a log ingest, and an
episode's reading depends on its text alone. On a machine with two cores or more, an
ingest hands the helper each chunk whole and reads the next chunk's file lines
meanwhile (``send``); elsewhere (a retry) a large chunk is split in two by characters,
the helper reading the first half while this process reads the second (``map``).
Results come back in order, the same as if one process had read them all.

What may go wrong is kept to this process. A helper that dies, or meets what the
rules raise for no request (a bug), sends nothing; its half is then read here, and no
helper is used for the rest of the run. The helper is forked before it has any work,
and it touches nothing of its parent's but the pipe. It ends with ``os._exit``, so the
parent's buffers and connections, copied by the fork, are never flushed or closed twice.
"""

from __future__ import annotations

import os
import time
import weakref
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import multiprocessing.connection

Given = tuple[str, str, str]  # text, reference time, extraction time
Outcome = Any  # a list of Assertion, or the message of a request that has none

# A chunk with fewer characters is read here: the pipe and the pickling would cost more
# than the second core saves (a memory added, a short session).
SHARE_FROM_CHARS = 100_000
# What ``send`` gives the helper of a chunk, by characters: this process also reads the
# next chunk's file lines and stores the last one meanwhile, so the helper takes most.
FIRST_SHARE, LEAST_SHARE, MOST_SHARE, SHARE_STEP = 0.75, 0.5, 1.0, 0.05
WAITED_SECONDS = 0.005  # a wait for the helper longer than this: it was given too much


class Helper:
    def __init__(self, process: Any, pipe: multiprocessing.connection.Connection):
        self.process = process
        self.pipe = pipe
        self.alive = True
        self.share = FIRST_SHARE  # of a chunk's characters that ``send`` gives the helper
        weakref.finalize(self, _stop, process, pipe)

    @classmethod
    def start_if_worth_it(cls, given: list[Given]) -> Helper | None:
        """A helper for chunks like ``given``, or None: too small to share, one core, or
        threads that a fork would copy mid-step (a lock one holds stays held)."""
        if sum(len(item[0]) for item in given) < SHARE_FROM_CHARS:
            return None
        from memctl.forking import forking_helps

        if not forking_helps():
            return None
        import multiprocessing

        mine, theirs = multiprocessing.Pipe()
        process = multiprocessing.get_context("fork").Process(target=_serve, args=(theirs,), daemon=True)
        process.start()
        theirs.close()
        return cls(process, mine)

    def send(self, given: list[Given]) -> Callable[[], list[Outcome]]:
        """Have the helper read most of a chunk while this process reads the rest and goes
        on; the callable waits for the outcomes. The helper's share follows how long this
        process waited for the last one: more when the helper was done first, less when it
        was not. One chunk at a time: take its outcomes before sending the next (so that
        neither process ever waits to send while the other does)."""
        receive = self._shared(given, self.share)

        def adapted() -> list[Outcome]:
            began = time.monotonic()
            outcomes = receive()
            waited = time.monotonic() - began > WAITED_SECONDS
            self.share = min(MOST_SHARE, max(LEAST_SHARE, self.share + (-SHARE_STEP if waited else SHARE_STEP)))
            return outcomes

        return adapted

    def map(self, given: list[Given]) -> list[Outcome]:
        """Each request's outcome, in order: half of them by characters read by the helper,
        the other half here meanwhile."""
        return self._shared(given, 0.5)()

    def _shared(self, given: list[Given], share: float) -> Callable[[], list[Outcome]]:
        """The first ``share`` of the requests' characters sent to the helper, the rest read
        here; the callable waits for the helper's. A helper that is gone has its part read
        here, and is not asked again."""
        from memctl.extract.rules import read_one

        split = _at_share(given, share)
        if self.alive:
            try:
                self.pipe.send(given[:split])
            except OSError:
                self.alive = False
        if not self.alive:
            outcomes = [read_one(item) for item in given]
            return lambda: outcomes
        mine = [read_one(item) for item in given[split:]]

        def receive() -> list[Outcome]:
            try:
                theirs = self.pipe.recv()
            except (EOFError, OSError):
                self.alive = False
                theirs = [read_one(item) for item in given[:split]]
            return theirs + mine

        return receive


def _at_share(given: list[Given], share: float) -> int:
    """Where the part after the first ``share`` of the characters begins."""
    total = sum(len(item[0]) for item in given)
    seen = 0
    for index, item in enumerate(given):
        if seen >= total * share:
            return index
        seen += len(item[0])
    return len(given)


def _serve(pipe: multiprocessing.connection.Connection) -> None:
    """The helper: read each chunk it is sent, send back the outcomes, until it is sent
    None or its parent is gone."""
    from memctl.extract.rules import read_one

    try:
        while (given := pipe.recv()) is not None:
            pipe.send([read_one(item) for item in given])
    except BaseException:  # noqa: BLE001 (the parent reads the half itself; Ctrl-C is the parent's to handle)
        pass
    os._exit(0)


def _stop(process: Any, pipe: multiprocessing.connection.Connection) -> None:
    try:
        pipe.send(None)
    except OSError:
        pass
    pipe.close()
    process.join(timeout=5)
    if process.is_alive():
        process.kill()
