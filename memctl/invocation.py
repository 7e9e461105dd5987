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


def print_json(data) -> None:
    """``data``: a result record, or a list of them."""
    import json
    from itertools import islice

    if isinstance(data, list):
        data = [item.to_json() for item in data]
    elif not isinstance(data, dict):
        data = data.to_json()
    # Written as it is encoded, a few thousand pieces at a time: an undo of a whole ingest
    # lists its 780k changes, and the text of them at once would double what the process
    # holds, while a write per piece (json.dump) costs three times the encoding.
    pieces = json.JSONEncoder(indent=2, ensure_ascii=False).iterencode(data)
    while part := list(islice(pieces, JSON_PIECES_PER_WRITE)):
        sys.stdout.write("".join(part))
    sys.stdout.write("\n")
