"""The life of an operation committed in many write transactions: an ingest, an undo.

Each batch commits in a write transaction of its own and leaves the store consistent.
Between two of them a writer that waits goes first (``store.turns.let_others_in``). The
operation is one row of the journal, "running" from the batch that first changes
something, and the facts its batches change are owed (``store.underived.Owed``) and
derived every so often and at the end. If it stops, killed or interrupted, the journal
says so and the facts owed so far are derived; what was committed stays. A preview runs
the same batches in the caller's one transaction (rolled back), owing as the change would,
so that it costs what the change does, and lets nobody in: nobody could come.

Ingest and undo each say what a batch does and how the operation ends; this module holds
what they share, once.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext
from typing import TYPE_CHECKING

from memctl.store import operations as journal
from memctl.store import underived
from memctl.store.connection import Clock, transaction_time, write_transaction
from memctl.store.turns import let_others_in

if TYPE_CHECKING:
    from memctl.store import Database
    from memctl.store.facts import SlotChanges

# The operation id a preview's owed facts are kept under: it is never journaled.
PREVIEWED = "preview"


class LongOperation:
    """One operation's batches, journal row and owed facts (module docstring).

    ``derived`` is told each derivation's changes (the operation's counts, its plan).
    """

    def __init__(self, db: Database, clock: Clock, derived: Callable[[SlotChanges], object], *,
                 preview: bool = False):
        self.db = db
        self.clock = clock
        self.derived = derived
        self.preview = preview
        self.entry: journal.Entry | None = None
        self.owed: underived.Owed | None = None
        self.began: float | None = None  # when its first batch began (time.monotonic)

    @contextmanager
    def batch(self) -> Iterator[str]:
        """One batch's write transaction (a preview's: the caller's), its transaction time
        yielded; after the first batch, a writer that waits goes first."""
        if self.began is None:
            self.began = time.monotonic()
        elif self.entry is not None:  # it has written: someone may be waiting for it
            let_others_in(self.db, self.began)
        with nullcontext() if self.preview else write_transaction(self.db):
            yield transaction_time(self.db, self.clock)

    def start(self, kind: str, at: str, command: dict, *, owes: bool = True) -> journal.Entry | None:
        """In the batch that first changes something: the journal's row, running (none for a
        preview), and, with ``owes``, the facts owed from then on."""
        if not self.preview:
            self.entry = journal.record(self.db, kind, at, command, "running")
        if owes:
            self.owed = underived.Owed(self.entry.id if self.entry is not None else PREVIEWED, tentative=self.preview)
        return self.entry

    def derive_if_due(self) -> None:
        """Between batches: the facts owed, derived if enough have waited long enough."""
        if self.owed is not None:
            self.owed.derive_if_due(self.db, self.clock, self.derived)

    @contextmanager
    def running(self) -> Iterator[LongOperation]:
        """Around the batches: at the end every fact owed is derived; if the operation stops
        before, the journal says it was interrupted and what it owes is derived if it can be."""
        try:
            yield self
            if self.owed is not None:
                self.owed.derive(self.db, self.clock, self.derived)
        except BaseException:
            # Committed batches stay (each holds whole episodes); say the rest never came.
            if self.entry is not None:
                journal.finish_apart(self.db, self.clock, self.entry.id, "interrupted")
                if self.owed is not None:
                    self.owed.derive_if_it_can(self.db, self.clock, self.derived)
            raise
