"""The `memctl` command: arguments in, output and an exit code out.

Typer (``memctl.cli``) defines the command line and parses it. Loading Typer and building
its commands costs a process about 35 ms, several times what a recall's answer costs,
so two invocations whose meaning that one definition fixes are answered before it loads;
anything else goes to Typer:

- the top-level help (bare ``memctl``, ``--help``, ``-h``): the text Typer renders,
  pinned in ``memctl/help.txt``, printed where it is exactly what Typer would print
  (into a pipe, or a terminal at least 80 columns wide; narrower, Typer wraps it to fit);
- ``recall QUESTION --json``, the call a program makes: the library's recall with its
  defaults, which are the command's (``tests/test_startup.py`` holds both answers equal,
  and the pinned help equal to Typer's).

Exit codes: 0 ok, 1 partly failed (the rest was kept), 2 bad usage or input, 130
interrupted. Every error is one line on stderr, whichever way the command went.
"""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from memctl.errors import (
    BadInput,
    FileRefused,
    LLMUnavailable,
    MemctlError,
    NoModel,
    NotFound,
    NothingToExtract,
    StoreUnavailable,
)

if TYPE_CHECKING:
    from memctl.memory import Memory
    from memctl.results import RecallResult

HELP = Path(__file__).with_name("help.txt")
HELP_COLUMNS = 80  # click wraps help to min(terminal width, 80) - 2; help.txt holds it at 80 or wider


class State:
    db_path: Path | None = None  # --db, set before any command runs
    opened: list[Memory] = []  # what the command opened, closed when it is done
    terminated = False  # SIGTERM came: it is answered as Ctrl-C is, with its own exit code


def _terminate(signum: int, frame: object) -> None:
    """SIGTERM (a service manager, `kill`, an agent stopping its MCP server) as Ctrl-C: the
    running operation stops between episodes and is marked interrupted, nothing half done."""
    State.terminated = True
    raise KeyboardInterrupt


def main() -> None:
    args = _db_first(sys.argv[1:])
    signal.signal(signal.SIGTERM, _terminate)
    try:
        try:
            code = _help(args)
            if code is None:
                code = _recall_json(args)
            if code is None:
                from memctl.cli import run

                code = run(args)
        finally:
            _close_opened()
    except MemctlError as error:
        print(f"memctl: error: {message(error)}", file=sys.stderr)
        sys.exit(exit_code(error))
    except KeyboardInterrupt:
        _interrupted()
    except BrokenPipeError:
        # The reader took what it wanted and went (`memctl episodes --json | head -1`): no
        # failure; what is still buffered goes nowhere rather than raise again at exit.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        sys.exit(0)
    except Exception as error:  # the file (sqlite3.Error), or a bug: still one line, never a traceback
        _failed(error)
    if code:
        sys.exit(code)


def _db_first(args: list[str]) -> list[str]:
    """``args`` with every ``--db PATH`` moved before the command, so ``memctl stats --db x``
    means ``memctl --db x stats`` (the option is the group's: one declaration, not one per
    command). After ``--`` nothing moves: those are arguments, whatever they look like."""
    moved: list[str] = []
    rest: list[str] = []
    index = 0
    while index < len(args):
        arg = args[index]
        if arg == "--":
            rest.extend(args[index:])
            break
        if arg == "--db" and index + 1 < len(args):
            moved += args[index:index + 2]
            index += 2
            continue
        if arg.startswith("--db="):
            moved.append(arg)
        else:
            rest.append(arg)
        index += 1
    return moved + rest


def _typer_completes() -> bool:
    """Typer answers shell completion (this variable set) before it parses anything."""
    return "_MEMCTL_COMPLETE" in os.environ


def _help(args: list[str]) -> int | None:
    """The top-level help from help.txt, where it is what Typer would print."""
    if args not in ([], ["--help"], ["-h"]) or _typer_completes():
        return None
    import shutil  # as click measures the terminal

    if shutil.get_terminal_size().columns < HELP_COLUMNS:
        return None
    sys.stdout.write(HELP.read_text(encoding="utf-8"))
    return 0


def _recall_json(args: list[str]) -> int | None:
    """``[--db PATH] recall QUESTION --json`` (the flag before or after the question)
    answered as Typer would: the question is taken as given, every other option at its
    default. A question that starts with "-" is left to Typer, which may read it as an
    option; so is every other shape of arguments."""
    db, rest = None, args
    if rest[:1] == ["--db"] and len(rest) > 1:
        db, rest = rest[1], rest[2:]
    elif rest[:1] and rest[0].startswith("--db="):
        db, rest = rest[0].removeprefix("--db="), rest[1:]
    if len(rest) != 3 or rest[0] != "recall" or "--json" not in rest[1:] or _typer_completes():
        return None
    question = rest[2] if rest[1] == "--json" else rest[1]
    if question.startswith("-"):
        return None
    State.db_path = None if db is None else Path(db)
    return recalled(_memory().recall(question), _print_json)


def recalled(result: RecallResult, show: Callable[[RecallResult], None]) -> int:
    """A recall's answer shown (``show``: as JSON or a table) after a line on stderr for each
    ranker that could not answer; the exit code, 1 when one could not."""
    for problem in result.unavailable or []:
        print(f"memctl: answered without {problem}", file=sys.stderr)
    show(result)
    return 1 if result.unavailable else 0


def _memory(*, must_exist: bool = True, embeddings_model: str | None = None) -> Memory:
    from memctl.memory import Memory
    from memctl.store.connection import default_path

    # A quoted "~/memory.db" reaches us unexpanded; "" names the current folder.
    path = Path(State.db_path or default_path()).expanduser()
    if path.is_dir():
        raise BadInput(f"{'--db' if State.db_path is not None else 'MEMCTL_DB'} {str(State.db_path or path)!r} "
                       "is a folder; name a database file (e.g. memory.db)")
    if must_exist and _holds_nothing(path):
        raise NotFound(f"no memory at {path} yet; run 'memctl ingest' first (or pass --db)")
    memory = Memory.open(path, embeddings_model=embeddings_model)
    State.opened.append(memory)
    return memory


def _close_opened() -> None:
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


def _print_json(data) -> None:
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


# Exit codes by error class, most specific first: 1 when the rest of the work was kept
# (a refused file, a model that could not be reached), 2 for bad usage or input.
EXIT_CODES: tuple[tuple[type[MemctlError], int], ...] = ((FileRefused, 1), (NoModel, 2), (LLMUnavailable, 1),
                                                          (StoreUnavailable, 1), (MemctlError, 2))


def exit_code(error: MemctlError) -> int:
    return next(code for kind, code in EXIT_CODES if isinstance(error, kind))


def message(error: MemctlError) -> str:
    """The error in the command line's words: an argument at fault is named by its flag."""
    if isinstance(error, NothingToExtract):
        return str(NothingToExtract(error.episode_id, how="--format facts"))
    if isinstance(error, BadInput) and error.parameter:
        return f"--{error.parameter.replace('_', '-')} {error.problem}"
    return str(error)


def _interrupted() -> None:
    print(f"memctl: {'terminated' if State.terminated else 'interrupted'}: what was written before is kept, each "
          "episode and change whole or not at all; run the same command again to finish (it adds only what is "
          "missing)", file=sys.stderr)
    sys.exit(143 if State.terminated else 130)


def _failed(error: Exception) -> None:
    """What SQLite reported about the file (locked past the timeout, a full disk, read-only...)
    in the user's words, or a bug in one line; MEMCTL_DEBUG=1 shows the traceback."""
    import sqlite3

    explained = None
    if isinstance(error, sqlite3.Error):
        from memctl.store.connection import default_path, explain

        explained = explain(error, State.db_path or default_path())
    if os.environ.get("MEMCTL_DEBUG"):
        raise error
    if explained is not None:
        print(f"memctl: error: {explained}", file=sys.stderr)
        sys.exit(exit_code(explained))
    print(f"memctl: internal error: {type(error).__name__}: {error} (MEMCTL_DEBUG=1 shows the traceback)",
          file=sys.stderr)
    sys.exit(1)
