"""Opening the database file and writing to it safely from several processes."""

from __future__ import annotations

import os
import re
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from memctl import times
from memctl.errors import BadInput, MemctlError, StoreUnavailable
from memctl.store import Queryable, collector_paused, database_file, on_postgres
from memctl.store.turns import begin_immediate

if TYPE_CHECKING:
    from sqlite_utils import Database as SQLiteDatabase

    from memctl.store import Database

BUSY_TIMEOUT_MS = 60_000
# Recomputing a slot re-reads its assertions and facts, and recall ranks over big
# indexes: the default 2 MB page cache cannot hold them, so reads would fall through.
CACHE_KIB = 65536
# The writer's is twice that: a backfill's inserts land all over the assertions' eleven
# indexes, and at a million assertions their pages no longer fit in 64 MB (a 1M ingest
# 144.5 s with it, 131.5 s with this, peak RSS 196 → 277 MB). A reader keeps the smaller
# one: a server has one per thread.
WRITER_CACHE_KIB = 131072
# An undo of episodes keeps the readers' size: it reads the pages of what it takes out
# about once, so twice the cache bought it little (the 334k-episode undo of the 1M store
# took 120 s with 128 MB and 128 s with 64) and cost it all (peak RSS 348 MB against 272).
UNDO_CACHE_KIB = CACHE_KIB
# How many migrations memctl.store.schema has (tests/test_schema.py pins it): a reader
# that finds them all applied needs neither the writer nor sqlite-utils.
SCHEMA_MIGRATIONS = 18

Clock = Callable[[], datetime]


def system_clock() -> datetime:
    return datetime.now(UTC)


def default_path() -> Path | str:
    """``MEMCTL_DB`` if set (``~`` expanded: an MCP client's JSON config passes it as
    written; a ``postgresql://`` URL as given), else the per-user data directory."""
    if os.environ.get("MEMCTL_DB"):
        return located(os.environ["MEMCTL_DB"])
    from platformdirs import user_data_dir

    return Path(user_data_dir("memctl")) / "memory.db"


_SERVER_URL = re.compile(r"(?i)^postgres(?:ql)?://")


def is_server_url(where: object) -> bool:
    """Whether ``where`` names a PostgreSQL database (``postgresql://…``) rather than a file."""
    return isinstance(where, str) and _SERVER_URL.match(where) is not None


def located(where: str | Path) -> Path | str:
    """Where a memory is, as given by a user: a ``postgresql://`` URL as it is (a Path would
    fold its "//"), else a file's path, ``~`` expanded."""
    return where if is_server_url(where) else Path(where).expanduser()


def _connect(path: Path | str, *, uri: bool = False) -> sqlite3.Connection:
    # isolation_level=None: transactions are begun explicitly below, never implicitly.
    # check_same_thread=False: ``Connections`` decides which thread uses which connection.
    conn = sqlite3.connect(str(path), isolation_level=None, timeout=BUSY_TIMEOUT_MS / 1000, check_same_thread=False,
                           uri=uri)
    conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
    return conn


def connect_to_read(path: Path, *, foreign: bool = False) -> sqlite3.Connection:
    """A connection that reads the existing file ``path`` and never writes to it, also
    where it cannot be written.

    Where the folder can be written, an ordinary connection: SQLite makes the -wal and
    -shm files a reader of a WAL database needs, and takes them away again when the last
    connection closes (a read-only file keeps them, as SQLite leaves them). ``foreign``,
    a file not known to be memctl's yet: a read-only connection, which never checkpoints
    another program's log into its file. In a folder that cannot be written (a read-only
    mount, another user's), SQLite opens a WAL file only if a -shm file is there already,
    which a running writer would have made. When there is none, and no -wal file either,
    no writer has the file open, and it is read as it is (``immutable``: no lock, no -shm;
    a writer that starts meanwhile writes to a log of its own until it checkpoints). A
    -wal file without its -shm holds commits only a writer can recover: that stays an
    error, which ``explain`` words.
    """
    uri = path.resolve().as_uri()
    conn = _connect(f"{uri}?mode=ro" if foreign else uri, uri=True)
    try:
        conn.execute("SELECT count(*) FROM sqlite_master").fetchone()  # SQLite opens the file on first use
        return conn
    except sqlite3.OperationalError as error:
        conn.close()
        logs = [path.with_name(path.name + suffix) for suffix in ("-wal", "-shm")]
        if "unable to open" not in str(error) or any(log.exists() for log in logs):
            raise
    return _connect(f"{uri}?mode=ro&immutable=1", uri=True)


SQLITE_HEADER = b"SQLite format 3\x00"
# A scheme and a slash: what a URL keeps of itself once made a Path ("postgresql:/host/db").
# Two letters at least, so that a Windows drive ("C:/") is a path.
_URL = re.compile(r"([A-Za-z][A-Za-z0-9+.\-]+):/")


def refuse_url(path: Path) -> None:
    """BadInput for a URL of another kind given as the database, or a PostgreSQL one that
    lost its "//" on the way (a Path made of it): as a path, it would become a SQLite file
    in a folder named after the scheme."""
    if (url := _URL.match(str(path))) is not None:
        shown = str(path) if str(path).startswith(f"{url[1]}://") else str(path).replace(":/", "://", 1)
        if url[1].lower() in ("postgresql", "postgres"):
            raise BadInput(f"{shown}: a PostgreSQL URL reached memctl as a file's path; give it as "
                           "postgresql://user@host/database")
        raise BadInput(f"{shown} is a URL; give the path of a memctl database file or a postgresql:// URL")


def check_file(path: Path) -> None:
    """Refuse, before anything opens it (let alone writes to it), a path that is no memctl
    database: a directory, a device or pipe, a file of another kind, or another program's
    SQLite database, or a URL (``refuse_url``). A missing or empty file is a new memory.
    Raises BadInput."""
    refuse_url(path)
    if str(path) == ":memory:" or not path.exists():
        return
    if path.is_dir():
        raise BadInput(f"{path} is a directory, not a memctl database file")
    if not path.is_file():
        raise BadInput(f"{path} is not a regular file (a device, a pipe or a socket), not a memctl database")
    try:
        with open(path, "rb") as handle:
            head = handle.read(len(SQLITE_HEADER))
    except OSError as error:
        raise BadInput(f"cannot read {path}: {error.strerror}") from None
    if not head:
        return
    if head != SQLITE_HEADER:
        raise BadInput(f"{path} is not a SQLite database, so not a memctl memory")
    try:
        conn = connect_to_read(path, foreign=True)
    except sqlite3.DatabaseError as error:
        raise explain(error, path) or BadInput(f"{path} cannot be read as a SQLite database: {error}") from None
    try:
        tables = [row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        ours = "_sqlite_migrations" in tables and conn.execute(
            "SELECT 1 FROM _sqlite_migrations WHERE migration_set = 'memctl' LIMIT 1").fetchone() is not None
    except sqlite3.DatabaseError as error:
        raise BadInput(f"{path} cannot be read as a SQLite database: {error}") from None
    finally:
        conn.close()
    if tables and not ours:
        shown = ", ".join(sorted(tables)[:3]) + (", …" if len(tables) > 3 else "")
        raise BadInput(f"{path} is another program's SQLite database (tables {shown}); memctl keeps its memory in a "
                       "file of its own")


def explain(error: sqlite3.Error, path: str | Path) -> MemctlError | None:
    """What SQLite's error means for a user, as the error memctl raises for it; None for
    one that is a bug rather than something the user can act on."""
    text = str(error).lower()
    if "locked" in text or "busy" in text:
        return StoreUnavailable(f"{path} stayed locked by another process for over {BUSY_TIMEOUT_MS // 1000} s; "
                                "nothing this command had not committed was written: run it again")
    if "disk is full" in text or "database or disk is full" in text:
        return StoreUnavailable(f"the disk holding {path} is full; what was committed before is kept")
    if "readonly" in text or "read-only" in text or ("unable to open" in text and read_only(Path(path))):
        return BadInput(f"{path} is read-only (or its folder is: SQLite writes its -wal and -shm files beside "
                        "it): memctl cannot change it")
    if "unable to open" in text:
        return BadInput(f"cannot open {path}: check that its folder exists and can be written")
    if "not a database" in text or "malformed" in text:
        return BadInput(f"{path} is not a readable SQLite database: {error}")
    return None


class _Without:
    """A finder that tells one thread, while it imports a module, that ``names`` are not
    installed; other threads import them as usual."""

    def __init__(self, names: frozenset[str]):
        self.names = names
        self.thread = threading.get_ident()

    def find_spec(self, name: str, path: object = None, target: object = None) -> None:
        if name in self.names and threading.get_ident() == self.thread:
            raise ModuleNotFoundError(f"{name} is left out of sqlite_utils", name=name)
        return None


def _database_class() -> type[SQLiteDatabase]:
    """sqlite-utils' ``Database``, imported without numpy and pandas.

    Its module imports both whenever they are installed, to map their scalar types to
    column types. memctl never stores one (a vector is stored as bytes:
    ``store.embeddings``), and numpy alone (installed with memctl[embeddings]) cost each
    command that writes 45 ms more; so while sqlite-utils loads, they are not found from
    this thread. One already loaded is used as it is.
    """
    import sys

    if "sqlite_utils.db" not in sys.modules:
        finder = _Without(frozenset({"numpy", "pandas"}) - sys.modules.keys())
        sys.meta_path.insert(0, finder)
        try:
            import sqlite_utils.db  # noqa: F401
        finally:
            sys.meta_path.remove(finder)
    from sqlite_utils import Database

    return Database


def open_database(path: str | Path, clock: Clock = system_clock) -> Database:
    """Open (creating if needed) and migrate; WAL and a busy timeout let processes share it.
    A ``postgresql://`` URL opens that server's database (``memctl.store.postgres``).

    The first writer after a killed ingest or undo marks it interrupted and derives the
    facts it still owed (``store.underived``), at ``clock``'s time.
    """
    if is_server_url(path):
        from memctl.store.postgres.connection import open_database as open_on_server

        return open_on_server(str(path), clock)
    sqlite_database = _database_class()  # first: the schema's module imports sqlite-utils too

    from memctl.store import operations, underived
    from memctl.store.schema import migrations

    path = Path(path)
    if str(path) != ":memory:":
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as error:
            raise BadInput(f"cannot create {path}: {error.strerror} ({error.filename})") from None
    conn = _connect(path)
    # No sqlite-utils plugins: the connection is memctl's own, whatever plugins the
    # environment has for other uses, and finding them reads every installed package's
    # entry points (20 ms).
    db = sqlite_database(conn, execute_plugins=False)
    _switch_to_wal(conn)
    conn.execute("PRAGMA synchronous = NORMAL")
    conn.execute(f"PRAGMA cache_size = -{WRITER_CACHE_KIB}")
    conn.execute("PRAGMA temp_store = MEMORY")
    conn.execute("PRAGMA foreign_keys = ON")
    with write_transaction(db):
        if migrations.pending(db):  # re-checked under the write lock: another process may have just migrated
            migrations.apply(db)
        operations.mark_abandoned(db)
        underived.derive_left_over(db, lambda: transaction_time(db, clock))
    return db


def _switch_to_wal(conn: sqlite3.Connection) -> None:
    """Turn on WAL, waiting out another process that is doing the same.

    Changing the journal mode needs an exclusive lock, and SQLite answers BUSY at once
    rather than calling the busy handler, so two first opens of a new file would fail.
    Whatever mode SQLite settles on is kept: an in-memory database stays "memory", and
    a file system without WAL support keeps its rollback journal (slower to share, no
    less safe).
    """
    deadline = time.monotonic() + BUSY_TIMEOUT_MS / 1000
    while True:
        try:
            conn.execute("PRAGMA journal_mode = wal")
            return
        except sqlite3.OperationalError as error:
            if "locked" not in str(error) or time.monotonic() > deadline:
                raise
            time.sleep(0.01)


@contextmanager
def write_transaction(db: Database) -> Iterator[Database]:
    """BEGIN IMMEDIATE: take the write lock up front.

    A deferred transaction that reads and then writes cannot wait for another writer
    in WAL mode (SQLite returns SQLITE_BUSY at once), so two ingests would fail
    instead of taking turns.
    """
    with collector_paused():
        if on_postgres(db):
            from memctl.store.postgres.connection import begin

            begin(db)
        else:
            begin_immediate(db)  # waiting, with a hand raised (store.turns)
        try:
            yield db
        except BaseException:
            db.conn.execute("ROLLBACK")
            raise
        db.conn.execute("COMMIT")


# How long a checkpoint waits for readers of an older snapshot. It holds the write lock
# while it waits, so every other writer waits too: with the busy timeout a reader that
# kept a transaction open made a writer beside a purge fail at 60 s.
CHECKPOINT_WAIT_MS = 2_000


def checkpoint(db: Database) -> bool:
    """Copy the write-ahead log into the database file and empty it: after a purge, the
    log's older frames still hold the pages as they were before it. False when a reader
    (another process) still held an older snapshot after CHECKPOINT_WAIT_MS, and the log
    could not be emptied (the last connection to close empties it). On PostgreSQL: VACUUM
    (``memctl.store.postgres.connection.vacuum``)."""
    if on_postgres(db):
        from memctl.store.postgres.connection import vacuum

        return vacuum(db)
    db.execute(f"PRAGMA busy_timeout = {CHECKPOINT_WAIT_MS}")
    try:
        busy, _, _ = db.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
    finally:
        db.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
    return not busy


@contextmanager
def cache_of(db: Database, kib: int) -> Iterator[None]:
    """The writer's page cache at ``kib`` while the block runs, then the writer's own again
    (SQLite; PostgreSQL's cache is the server's)."""
    if on_postgres(db):
        yield
        return
    db.execute(f"PRAGMA cache_size = -{kib}")
    try:
        yield
    finally:
        db.execute(f"PRAGMA cache_size = -{WRITER_CACHE_KIB}")


def data_version(db: Database) -> int | str:
    """A number that changes whenever another connection commits to the file: what was
    read before a write transaction is still current inside it while this is unchanged."""
    if on_postgres(db):
        from memctl.store.postgres.connection import data_version as server_version

        return server_version(db)
    return db.conn.execute("PRAGMA data_version").fetchone()[0]


def read_only(path: Path) -> bool:
    """Whether the existing file ``path`` cannot be changed: it, or the folder where SQLite
    keeps its -wal and -shm files, cannot be written (a read-only mount, a file mode)."""
    return path.exists() and not (os.access(path, os.W_OK) and os.access(path.parent, os.W_OK))


@contextmanager
def snapshot(db: Database | sqlite3.Connection, path: Path | None = None) -> Iterator[Database]:
    """A copy of the database as committed now, opened for writing, deleted after.

    Copying reads one consistent snapshot and takes no write lock (WAL), so a long preview
    can be done for real on the copy while other writers go on with the original. The
    copy sits beside the file (same disk), in a folder of its own; beside a read-only one
    it cannot, and goes in the temporary folder. ``path``: the file a plain connection reads.
    """
    import tempfile

    conn = db if isinstance(db, sqlite3.Connection) else db.conn
    path = path or database_file(cast("Database", db))
    assert path is not None, "an in-memory database has no file to copy"
    with tempfile.TemporaryDirectory(dir=None if read_only(path) else path.parent, prefix=".memctl-preview-") as folder:
        target = sqlite3.connect(Path(folder) / path.name)
        try:
            conn.backup(target)
        finally:
            target.close()
        copy = open_database(Path(folder) / path.name)
        try:
            yield copy
        finally:
            copy.conn.close()


class _RolledBack(Exception):
    """Ends a tentative transaction that was not kept."""


class Tentative:
    """Handed out by ``tentative``: call ``keep()`` once the work is to stay."""

    def __init__(self) -> None:
        self.kept = False

    def keep(self) -> None:
        self.kept = True


@contextmanager
def tentative(db: Database) -> Iterator[Tentative]:
    """A write transaction that is rolled back unless ``keep()`` was called in it.

    Previews work this way (undo, retry --dry-run): they do the real change, read what
    it did, and roll it back, so a plan can never disagree with what applying it does.
    """
    decision = Tentative()
    try:
        with write_transaction(db):
            yield decision
            if not decision.kept:
                raise _RolledBack
    except _RolledBack:
        pass


class Connections:
    """One writer connection, and a read connection per thread (as Datasette does).

    The library opens a database in one thread; a server answers calls on worker
    threads. Writes from any thread go through the one writer, one at a time (an RLock:
    a write may read), opened on the first write. Reads, from any thread, get a plain
    ``sqlite3`` connection of their own, which WAL lets run beside a write and which
    sees what was committed: so a command that only reads opens no writer and imports no
    sqlite-utils. An in-memory database has only the writer: every thread reads through
    it, under the lock.
    """

    def __init__(self, path: str | Path, clock: Clock = system_clock):
        # A PostgreSQL database (``url``) has a writer connection and a reader per thread
        # as a file has; MVCC lets its readers run beside the writers of every process.
        self.url = str(path) if is_server_url(path) else None
        self.path = Path(path)
        self.clock = clock  # the time of what opening the writer does (``open_database``)
        self._schema_checked = False
        if self.url is None:
            check_file(self.path)
        self._writer: Database | None = None
        self._lock = threading.RLock()
        self._local = threading.local()
        self._readers: list[Any] = []  # sqlite3 connections, or PostgresDatabase ones
        self._readers_lock = threading.Lock()  # not the writer's lock: a reader never waits for a write
        if self.in_memory:
            self._writer = open_database(self.path, self.clock)
        elif self.url is not None:
            # The server is reached on opening, as a file is checked: a bad URL or a server
            # that is down is refused before any work. This connection becomes this
            # thread's reader.
            from memctl.store.postgres.connection import connect

            self._local.unchecked = connect(self.url)
            self._readers.append(self._local.unchecked)

    @property
    def where(self) -> str:
        """The memory as a user names it: the file's path, or the URL without a password."""
        if self.url is None:
            return str(self.path)
        from memctl.store.postgres.connection import shown

        return shown(self.url)

    @property
    def in_memory(self) -> bool:
        return str(self.path) == ":memory:"

    @property
    def writer(self) -> Database:
        """The one writer, opened (and the schema migrated) on first use."""
        with self._lock:
            if self._writer is None:
                self._writer = open_database(self.url or self.path, self.clock)
            return self._writer

    @contextmanager
    def writing(self) -> Iterator[Database]:
        """The writer, for one use case: its write transactions and the reads between."""
        with self._lock:
            yield self.writer

    @contextmanager
    def reading(self) -> Iterator[Queryable]:
        """A connection to read from in this thread."""
        if self.in_memory:
            with self._lock:
                yield self.writer
            return
        reader = getattr(self._local, "conn", None)
        if reader is None and self.url is not None:
            reader = self._server_reader(getattr(self._local, "unchecked", None))
        if reader is None:
            reader = connect_to_read(self.path) if self.path.exists() else None
            if reader is None or not _schema_is_current(reader):
                if reader is not None:
                    reader.close()
                self.writer  # noqa: B018  (opening it migrates the file, or creates it)
                reader = connect_to_read(self.path)
            reader.execute("PRAGMA query_only = ON")
            reader.execute(f"PRAGMA cache_size = -{CACHE_KIB}")
            with self._readers_lock:
                self._readers.append(reader)
            self._local.conn = reader
        yield reader

    def _server_reader(self, opened: Any) -> Queryable:
        from memctl.store.postgres.connection import connect, schema_is_current

        reader = opened or connect(self.url)  # type: ignore[arg-type]
        if not self._schema_checked and not schema_is_current(reader):
            self.writer  # noqa: B018  (opening it migrates the database)
        self._schema_checked = True
        reader.execute("SET default_transaction_read_only = on")
        if opened is None:
            with self._readers_lock:
                self._readers.append(reader)
        self._local.conn = reader
        return reader

    def holds_memory(self) -> bool:
        """Whether the server's database holds a memory (its schema), asked without
        making one: a command that only reads must not."""
        from memctl.store.postgres.connection import holds_memory

        return holds_memory(getattr(self._local, "conn", None) or self._local.unchecked)

    def close(self) -> None:
        with self._lock, self._readers_lock:
            for conn in self._readers:
                conn.close()
            self._readers.clear()
            if self._writer is not None:
                self._writer.conn.close()


def _schema_is_current(conn: sqlite3.Connection) -> bool:
    """Whether the file has every migration applied (by this memctl or a newer one)."""
    try:
        applied = conn.execute("SELECT count(*) FROM _sqlite_migrations WHERE migration_set = 'memctl'").fetchone()[0]
    except sqlite3.OperationalError:  # no such table: a new or foreign file
        return False
    return applied >= SCHEMA_MIGRATIONS


def transaction_time(db: Database, clock: Clock) -> str:
    """The next transaction time: the clock, but always after the last one handed out.

    Call inside a write transaction, so concurrent processes cannot hand out the same
    instant.
    """
    now = times.to_storage(clock())
    row = db.conn.execute("SELECT last_at FROM clock WHERE id = 1").fetchone()
    if row is not None and now <= row[0]:
        now = times.after(row[0])
    db.conn.execute(
        "INSERT INTO clock (id, last_at) VALUES (1, ?) ON CONFLICT(id) DO UPDATE SET last_at = excluded.last_at",
        [now],
    )
    return now
