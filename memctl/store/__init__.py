"""The SQLite store: schema, connections, and the write paths for episodes and facts."""

from __future__ import annotations

import gc
from collections.abc import Iterator, Sequence
from contextlib import contextmanager


def in_chunks(values: Sequence, size: int = 500) -> Iterator[tuple[list, str]]:
    """Slices of ``values`` with matching ``?, ?`` placeholders for an ``IN (...)``.

    SQLite caps the number of bound variables per statement, so id lists of any length
    (a whole file's episodes, every entity in a rebuild) go in slices.
    """
    values = list(values)
    for start in range(0, len(values), size):
        chunk = values[start : start + size]
        yield chunk, ", ".join("?" * len(chunk))


@contextmanager
def collector_paused() -> Iterator[None]:
    """Bulk work builds hundreds of thousands of tuples (a repair loads a million
    assertions); the cyclic garbage collector would walk the growing heap again and
    again meanwhile (2 of 5 seconds of a recomputation), and rows of strings and
    numbers form no cycles. Reference counting still frees everything as usual."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
