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
from pathlib import Path

from memctl.errors import (
    BadInput,
    FileRefused,
    LLMUnavailable,
    MemctlError,
    NoModel,
    NothingToExtract,
    StoreUnavailable,
)
from memctl.invocation import State, close_opened, open_memory, print_json, recalled

HELP = Path(__file__).with_name("help.txt")
HELP_COLUMNS = 80  # click wraps help to min(terminal width, 80) - 2; help.txt holds it at 80 or wider


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
            close_opened()
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
    from memctl.store.connection import located

    State.db_path = None if db is None else located(db)
    return recalled(open_memory().recall(question), print_json)


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
    elif type(error).__module__.startswith("psycopg"):  # the server's (psycopg is imported only for one)
        from memctl.store.connection import default_path
        from memctl.store.postgres.connection import explain as explain_server

        explained = explain_server(error, str(State.db_path or default_path()))  # type: ignore[arg-type]
    if os.environ.get("MEMCTL_DEBUG"):
        raise error
    if explained is not None:
        print(f"memctl: error: {explained}", file=sys.stderr)
        sys.exit(exit_code(explained))
    print(f"memctl: internal error: {type(error).__name__}: {error} (MEMCTL_DEBUG=1 shows the traceback)",
          file=sys.stderr)
    sys.exit(1)
