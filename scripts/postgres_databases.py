"""New PostgreSQL databases for the benchmarks that compare the backends (issue 33):
``--postgres URL`` names a server memctl's user may create databases on; ``--postgres
auto`` starts a throwaway one as the tests do (tests/postgres_server.py: this machine's
PostgreSQL binaries, a Unix socket in a temporary folder), stopped at the end."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def postgres_databases(server_url: str) -> Iterator[Callable[[str], str]]:
    """A function that makes a new, empty database on the server and gives its URL; every
    database made is dropped at the end."""
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from tests.postgres_server import Server, start

    started = server_url == "auto"
    server = start() if started else Server(server_url)
    made: list[str] = []

    def new_database(label: str) -> str:
        name, url = server.new_database(prefix=f"bench_{label}")
        made.append(name)
        return url

    try:
        yield new_database
    finally:
        for name in made:
            server.drop_database(name)
        if started:
            server.stop()
