"""One run of the `memctl` command: the database it names, the memories it opens (closed
when it is done), and how it prints JSON. Shared by ``memctl.entry``, which answers a few
invocations before Typer loads, and ``memctl.cli``, which defines every command; neither
imports the other for it.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from memctl.errors import BadInput, NotFound

if TYPE_CHECKING:
    from memctl.memory import Memory
    from memctl.results import RecallResult


class State:
    db_path: Path | str | None = None  # --db (a path, or a postgresql:// URL), set before any command runs
    opened: list[Memory] = []  # what the command opened, closed when it is done
    terminated = False  # SIGTERM came: it is answered as Ctrl-C is, with its own exit code


def recalled(result: RecallResult, show: Callable[[RecallResult], None]) -> int:
    """A recall's answer shown (``show``: as JSON or a table) after a line on stderr for each
    ranker that could not answer; the exit code, 1 when one could not."""
    for problem in result.unavailable or []:
        print(f"memctl: answered without {problem}", file=sys.stderr)
    show(result)
    return 1 if result.unavailable else 0


def open_memory(*, must_exist: bool = True, embeddings_model: str | None = None) -> Memory:
    from memctl.memory import Memory
    from memctl.store.connection import default_path, located, refuse_url

    where = located(State.db_path or default_path())
    if isinstance(where, str):  # a PostgreSQL database
        memory = Memory.open(where, embeddings_model=embeddings_model)
        State.opened.append(memory)
        if must_exist and not memory.connections.holds_memory():
            raise NotFound(f"no memory at {memory.connections.where} yet; run 'memctl ingest' first (or pass --db)")
        return memory
    # A quoted "~/memory.db" reaches us unexpanded; "" names the current folder.
    path = where
    if path.is_dir():
        raise BadInput(f"{'--db' if State.db_path is not None else 'MEMCTL_DB'} {str(State.db_path or path)!r} "
                       "is a folder; name a database file (e.g. memory.db)")
    refuse_url(path)
    if must_exist and _holds_nothing(path):
        raise NotFound(f"no memory at {path} yet; run 'memctl ingest' first (or pass --db)")
    memory = Memory.open(path, embeddings_model=embeddings_model)
    State.opened.append(memory)
    return memory


def close_opened() -> None:
    """Close what the command opened, when it is done rather than whenever the
    interpreter's exit gets to it: the last connection to a file folds the write-ahead log
    back into it and removes the log, so that the file alone (a copy, a backup) holds
    everything the command committed."""
    while State.opened:
        State.opened.pop().close()


def _holds_nothing(path: Path) -> bool:
    """No file, or an empty one (made by `touch`) with no write-ahead log beside it: a
    command that only reads must not write a schema into it. (A file killed early in its
    first ingest may be empty while its WAL holds what was committed.)"""
    if not path.exists():
        return True
    wal = path.with_name(path.name + "-wal")
    return path.is_file() and path.stat().st_size == 0 and not (wal.exists() and wal.stat().st_size > 0)


# Pieces of encoded JSON joined into one write (a piece is a key, a value or punctuation).
JSON_PIECES_PER_WRITE = 8192
JSON_ITEMS_PER_PAGE = 1000  # items of a streamed sequence encoded at once


def print_json(data) -> None:
    """``data``: a result record, or a list of them, written as ``json.dumps(..., indent=2)``
    would write it, but as it is encoded: an undo of a whole ingest lists its 780k changes,
    which its plan reads from a scratch database (``effects.FactChanges``) rather than
    holds, and neither they nor the text of them are ever held whole here."""
    from itertools import islice

    from memctl.results import STREAMING_JSON

    streaming = STREAMING_JSON.set(True)
    try:
        if isinstance(data, list):
            data = [item.to_json() for item in data]
        elif not isinstance(data, dict):
            data = data.to_json()
        pieces = _encoded(data, "\n")
        while part := list(islice(pieces, JSON_PIECES_PER_WRITE)):
            sys.stdout.write("".join(part))
    finally:
        STREAMING_JSON.reset(streaming)
    sys.stdout.write("\n")


def _encoded(value, newline: str, encoder=None):
    """``value``'s JSON, indented two spaces a level, in pieces: a sequence left as it is
    (``results.STREAMING_JSON``) one item at a time, and the dicts that hold one key by
    key; the rest whole."""
    import json
    from itertools import islice

    from memctl.results import as_json

    encoder = encoder or json.JSONEncoder(indent=2, ensure_ascii=False, default=_listed)
    inner = newline + "  "
    if isinstance(value, dict) and _holds_streamed(value):
        yield "{"
        for position, (key, item) in enumerate(value.items()):
            yield f"{',' if position else ''}{inner}{encoder.encode(str(key))}: "
            yield from _encoded(item, inner, encoder)
        yield newline + "}"
    elif _streamed(value) and len(value):
        # A page of items encoded at once, as the list it is, less its brackets: one call
        # of the encoder per item cost half as much again as the encoding.
        items = iter(value)
        yield "["
        position = 0
        while page := [as_json(item) for item in islice(items, JSON_ITEMS_PER_PAGE)]:
            yield ("," if position else "") + encoder.encode(page)[1:-2].replace("\n", newline)
            position += 1
        yield newline + "]"
    else:
        yield encoder.encode(value).replace("\n", newline)


def _streamed(value) -> bool:
    from collections.abc import Sequence

    return isinstance(value, Sequence) and not isinstance(value, str | bytes | list | tuple)


def _holds_streamed(value: dict) -> bool:
    return any(_streamed(item) or isinstance(item, dict) and _holds_streamed(item) for item in value.values())


def _listed(value) -> list:
    """A sequence left as it is inside a list (streamed only as a dict's value): whole."""
    from memctl.results import as_json

    return [as_json(item) for item in value]
