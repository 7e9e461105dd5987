"""The SQLite store: schema, connections, and the write paths for episodes and facts."""

from __future__ import annotations

from collections.abc import Iterator, Sequence


def in_chunks(values: Sequence, size: int = 500) -> Iterator[tuple[list, str]]:
    """Slices of ``values`` with matching ``?, ?`` placeholders for an ``IN (...)``.

    SQLite caps the number of bound variables per statement, so id lists of any length
    (a whole file's episodes, every entity in a rebuild) go in slices.
    """
    values = list(values)
    for start in range(0, len(values), size):
        chunk = values[start : start + size]
        yield chunk, ", ".join("?" * len(chunk))
