"""A throwaway PostgreSQL server for the tests that need one (issue 33).

``MEMCTL_TEST_POSTGRES`` names a server to use instead (a libpq URL). Otherwise the
server binaries this machine has (Debian's ``/usr/lib/postgresql/N/bin``, or ``initdb``
on PATH) make a cluster in a temporary folder, served on a Unix socket there and on no
TCP port, as the ``postgres`` user when this runs as root (``initdb`` refuses root), and
stopped and removed at the end of the test session. Outside CI a test may be skipped
when no server can be had, saying why; in CI (``CI`` set) that is a failure.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path


@dataclass
class Server:
    url: str
    folder: Path | None = None  # the cluster this session made, to stop and remove
    bindir: Path | None = None
    user: str | None = None  # who runs the server's binaries (None: this process's user)

    def database_url(self, name: str) -> str:
        """The URL of the database ``name`` on this server."""
        if "///postgres?" in self.url:
            return self.url.replace("///postgres?", f"///{name}?", 1)
        return f"{self.url.rsplit('/', 1)[0]}/{name}"

    def new_database(self, prefix: str = "memctl", template: str | None = None) -> tuple[str, str]:
        """A new database (a copy of ``template``, else empty): its name and URL."""
        import uuid

        import psycopg

        name = f"{prefix}_{uuid.uuid4().hex[:12]}"
        with psycopg.connect(self.url, autocommit=True) as admin:
            admin.execute(f'CREATE DATABASE "{name}"{f" TEMPLATE {template}" if template else ""}'.encode())
        return name, self.database_url(name)

    def drop_database(self, name: str) -> None:
        import psycopg

        with psycopg.connect(self.url, autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'.encode())

    def stop(self) -> None:
        if self.folder is None or self.bindir is None:
            return
        _run(self, [str(self.bindir / "pg_ctl"), "-D", str(self.folder / "data"), "-m", "immediate", "-w", "stop"],
             check=False)
        shutil.rmtree(self.folder, ignore_errors=True)


class NoServer(Exception):
    """Why no PostgreSQL server can be had here."""


def _bindir() -> Path | None:
    found = sorted(Path("/usr/lib/postgresql").glob("*/bin/initdb"), key=lambda p: int(p.parent.parent.name)
                   if p.parent.parent.name.isdigit() else 0)
    if found:
        return found[-1].parent
    initdb = shutil.which("initdb")
    return Path(initdb).parent if initdb else None


def _run(server: Server, command: list[str], *, check: bool = True) -> subprocess.CompletedProcess:
    if server.user is not None:
        command = ["runuser", "-u", server.user, "--", *command]
    # In the cluster's folder: the server's user may not be allowed into this process's
    # (initdb fails on "could not identify current directory").
    return subprocess.run(command, capture_output=True, text=True, check=check, timeout=120, cwd=server.folder)


def start() -> Server:
    """A server to test against (module docstring); NoServer if none can be had."""
    if os.environ.get("MEMCTL_TEST_POSTGRES"):
        return Server(os.environ["MEMCTL_TEST_POSTGRES"])
    bindir = _bindir()
    if bindir is None:
        raise NoServer("no PostgreSQL server binaries (initdb, pg_ctl) here: apt-get install postgresql")
    user = None
    if os.geteuid() == 0:
        if shutil.which("runuser") is None:
            raise NoServer("running as root, and no runuser to start PostgreSQL as another user")
        try:
            import pwd

            pwd.getpwnam("postgres")
        except KeyError:
            raise NoServer("running as root, and no postgres user to start PostgreSQL as") from None
        user = "postgres"
    folder = Path(tempfile.mkdtemp(prefix="memctl-pg-"))
    server = Server("", folder, bindir, user)
    if user is not None:
        shutil.chown(folder, user)
    try:
        _run(server, [str(bindir / "initdb"), "-D", str(folder / "data"), "-A", "trust", "-U", "memctl",
                      "-E", "UTF8", "--locale=C", "--no-sync"])
        _run(server, [str(bindir / "pg_ctl"), "-D", str(folder / "data"), "-l", str(folder / "log"), "-w",
                      "-o", f"-k {folder} -c listen_addresses='' -c fsync=off", "start"])
    except subprocess.CalledProcessError as error:
        server.stop()
        raise NoServer(f"{Path(error.cmd[-1] if user is None else error.cmd[4]).name} failed: "
                       f"{(error.stderr or error.stdout).strip()[-300:]}") from None
    server.url = f"postgresql:///postgres?host={folder}&user=memctl"
    return server
