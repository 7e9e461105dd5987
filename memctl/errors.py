"""The errors the library raises: one class per thing that can go wrong for a user.

Each message is the whole explanation, fit for one line. The library knows nothing of
exit codes or command-line flags: ``memctl.cli`` maps each class to its exit code, and
adds the flag a user of the command line would reach for.
"""

from __future__ import annotations


class MemctlError(Exception):
    """Anything memctl refuses to do, with the reason as the message."""


class BadInput(MemctlError):
    """Input that is not what it claims to be: a date, a query, a structured file.

    When one argument is at fault, ``parameter`` names it (as the library spells it:
    ``limit``) and ``problem`` says what is wrong with it, so that the command line can
    name its own flag (``--limit``) instead.
    """

    def __init__(self, message: str, *, parameter: str | None = None):
        self.parameter = parameter
        self.problem = message
        super().__init__(f"{parameter} {message}" if parameter else message)


class NothingToExtract(BadInput):
    """A retry of an episode that came with its assertions (a structured facts import)."""

    def __init__(self, episode_id: str, *, how: str = "a structured facts file"):
        self.episode_id = episode_id
        super().__init__(f"{episode_id} came with its assertions ({how}): nothing to re-extract; "
                         "correct the file, undo the episode and ingest it again")


class NotFound(MemctlError):
    """Nothing matches what was named (an episode, an operation, an entity, a file)."""


class Ambiguous(MemctlError):
    """A prefix names more than one thing."""


class NotUndoable(MemctlError):
    """The operation named cannot be reversed (a purge, or an undo of an undo)."""


class FileRefused(MemctlError):
    """One input file cannot be read as it claims to be; the others go on."""


# The most results a list may be asked for: a number past SQLite's 64 bits failed inside a
# query ("internal error"); a million is more than any store here lists.
MAX_LIMIT = 1_000_000


def check_limit(limit: int | None) -> None:
    """``limit`` (None: no limit) between 1 and MAX_LIMIT, or BadInput."""
    if limit is not None and not 1 <= limit <= MAX_LIMIT:
        raise BadInput(f"must be between 1 and {MAX_LIMIT:,}, got {limit}", parameter="limit")


class MissingExtra(MemctlError):
    """A part of memctl that needs an optional package was asked for without it."""

    def __init__(self, what: str, extra: str):
        self.extra = extra
        super().__init__(f"{what} needs memctl's {extra} extra: {install_command(extra)}")


def install_command(extra: str) -> str:
    """The command that adds ``extra`` to this memctl: from the checkout it was installed
    from (an editable install), else from the package index, under the distribution's name."""
    import json
    from importlib.metadata import distributions
    from urllib.parse import unquote, urlparse

    from memctl import DISTRIBUTION

    # Run from the checkout, its own build metadata (an .egg-info, with no install record)
    # is found first: the record is the installed one's.
    records = [found.read_text("direct_url.json") for found in distributions(name=DISTRIBUTION)]
    try:
        installed = json.loads(next((record for record in records if record), "{}"))
    except ValueError:
        installed = {}
    where = urlparse(installed.get("url", ""))
    if installed.get("dir_info", {}).get("editable") and where.scheme == "file":
        return f"pip install -e '{unquote(where.path)}[{extra}]'"
    return f"pip install '{DISTRIBUTION}[{extra}]'"


class LLMUnavailable(MemctlError):
    """The model endpoint cannot be used at all (unreachable, key rejected, no such model).

    The episodes that needed it are kept pending for the next run.
    """

    def __init__(self, message: str):
        super().__init__(" ".join(message.split()))


class NoModel(LLMUnavailable):
    """Extraction needs a model and none is named: no ``--model``/``MEMCTL_MODEL``, and the
    endpoint does not list exactly one. Bad usage, though an ingest keeps its episodes
    pending as for any endpoint it cannot use."""


class StoreUnavailable(MemctlError):
    """The database file could not take a write just now: another process held its lock
    past the busy timeout, or the disk is full. What was committed before is kept."""
