"""New PostgreSQL databases for the benchmarks that compare the backends (issue 33):
``--postgres URL`` names a server memctl's user may create databases on; ``--postgres
auto`` starts a throwaway one as the tests do (tests/postgres_server.py: this machine's
PostgreSQL binaries, a Unix socket in a temporary folder), stopped at the end."""

from __future__ import annotations

import sys
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def postgres_databases(server_url: str) -> Iterator[Callable[[str], str]]:
    """A function that makes a new, empty database on the server and gives its URL; every
    database made is dropped at the end."""
    import psycopg

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    server = None
    if server_url == "auto":
        from tests.postgres_server import start

        server = start()
        server_url = server.url
    made: list[str] = []

    def new_database(label: str) -> str:
        name = f"bench_{label}_{uuid.uuid4().hex[:8]}"
        with psycopg.connect(server_url, autocommit=True) as admin:
            admin.execute(f'CREATE DATABASE "{name}"'.encode())
        made.append(name)
        if "///postgres?" in server_url:
            return server_url.replace("///postgres?", f"///{name}?", 1)
        return f"{server_url.rsplit('/', 1)[0]}/{name}"

    try:
        yield new_database
    finally:
        with psycopg.connect(server_url, autocommit=True) as admin:
            for name in made:
                admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'.encode())
        if server is not None:
            server.stop()
