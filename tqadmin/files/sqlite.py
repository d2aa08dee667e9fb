"""One SQLite file that many processes on one host write at once: the plumbing the embedded broker and the
SQLite state store share (they keep separate tables in the same file, each on connections of its own).

Why each setting:

- **WAL journal**: readers never block the writer and the writer never blocks readers, so a long read (a TUI
  poll, an export) does not stall the workers.
- **BEGIN IMMEDIATE**: a write transaction takes the write lock when it starts. A deferred one that reads
  first and writes later can find another writer got there in between (``SQLITE_BUSY_SNAPSHOT``), which no
  busy timeout can wait out; an immediate one simply waits its turn.
- **a busy timeout** (``--timeout``), and ``BEGIN`` retried until the same deadline: writers queue for the
  lock, and "database is locked" surfaces only past the timeout, as a :class:`ConnectTimeout` saying so.
- **synchronous=NORMAL**: in WAL mode a commit survives any process crash (a ``kill -9`` mid-transaction
  leaves the last committed state); a power loss or kernel crash may lose the last commits, never the file.
- **one connection per thread and process**: a connection is never shared by two threads, nor used again in
  a forked child (the child opens its own).
- **one writer at a time per process**: threads of one process (a worker's job threads, its consumer, its
  store) queue for the file's write lock on an in-process lock first. SQLite's busy handler waits by
  sleeping and polling, milliseconds at a time; a mutex hands the lock over at once. Processes still queue
  on SQLite's own lock.
- **no network filesystem**: WAL needs memory shared between the processes (the ``-shm`` file) and working
  POSIX locks, which NFS, SMB and FUSE mounts do not give; such a path is refused.
- **private, and created by writers only**: the file holds message bodies and job state, so a writer creates
  it 0600 in folders it creates 0700 (SQLite gives the ``-wal`` and ``-shm`` files the database's mode). A
  reader never creates it, nor its folder: a path that does not exist is :class:`NoDatabase`, so a typo is
  said instead of looking like an empty broker (and leaving a stray file behind).
- **readers write nothing**: a file opened for reading (:attr:`Access.READ`) is read by
  :mod:`tqadmin.files.sqlite_readonly` (``mode=ro``, one connection per read, missing tables read as empty):
  no schema, no journal mode, no lock but the shared one every reader takes, and no file created beside it.
  Only writers set the settings above and create their tables.
"""

from __future__ import annotations

import contextlib
import os
import random
import re
import sqlite3
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from urllib.parse import quote

from tqadmin.errors import (
    BadResponse,
    BrokerError,
    ConfigError,
    ConnectTimeout,
    NoDatabase,
    NotAuthorized,
    ReadOnly,
    Unreachable,
)
from tqadmin.files.access import Access
from tqadmin.files.private import PRIVATE_FILE, make_private_folder
from tqadmin.files.sqlite_readonly import ChangedWhileRead, read_only, stand_in
from tqadmin.show.masking import mask_url

MOUNTS = Path("/proc/mounts")
# Filesystem types (as /proc/mounts names them) whose locks or shared memory SQLite's WAL cannot rely on.
NETWORK_FILESYSTEMS = frozenset(
    {"nfs", "nfs4", "cifs", "smb3", "smbfs", "ncpfs", "afs", "9p", "ceph", "glusterfs", "lustre", "gpfs"}
)
NETWORK_FUSE = ("fuse.sshfs", "fuse.glusterfs", "fuse.ceph", "fuse.s3fs", "fuse.rclone", "fuse.davfs")
_BUSY_PAUSE_S = (0.001, 0.02)
_writers: dict[str, threading.RLock] = {}  # real path of a database file -> its in-process writer lock
_writers_lock = threading.Lock()


def writer_lock(key: str) -> threading.RLock:
    """The lock every writer of the file at real path ``key`` in this process takes around its transaction
    (re-entrant, so that a transaction opened inside another on the same thread fails on SQLite's timeout
    instead of hanging)."""
    with _writers_lock:
        return _writers.setdefault(key, threading.RLock())


def _fresh_writer_locks() -> None:
    """A forked child starts with locks of its own: one its parent's thread held at the fork stays held."""
    global _writers_lock  # noqa: PLW0603 - replaced, not shared, in the child
    _writers_lock = threading.Lock()
    _writers.clear()


os.register_at_fork(after_in_child=_fresh_writer_locks)


def path_of(url: str) -> Path:
    """The file of ``sqlite:///relative.db`` or ``sqlite:////absolute.db`` (any query string left off)."""
    path = url.partition(":///")[2].partition("?")[0]
    if not path or path == ":memory:":
        raise ConfigError(
            f"{mask_url(url)}: SQLite needs a file, sqlite:///PATH, that every process of the host shares"
        )
    return Path(path).expanduser()


def network_filesystem(path: Path, mounts: str | None = None) -> tuple[str, str] | None:
    """The ``(type, mount point)`` of the network filesystem holding ``path``, or ``None`` on a local disk.

    ``mounts`` is the text of ``/proc/mounts`` (read when not given; where there is none, nothing is found).
    """
    if mounts is None:
        try:
            mounts = MOUNTS.read_text(errors="replace")
        except OSError:
            return None
    where = os.path.realpath(path.parent)
    best: tuple[str, str] | None = None
    for line in mounts.splitlines():
        fields = line.split()
        if len(fields) < 3:
            continue
        point = fields[1].replace("\\040", " ").replace("\\011", "\t").replace("\\134", "\\")
        inside = where == point or where.startswith(point.rstrip("/") + "/")
        if inside and (best is None or len(point) >= len(best[1])):
            best = (fields[2], point)
    if best is None:
        return None
    kind = best[0]
    networked = kind in NETWORK_FILESYSTEMS or kind.startswith(NETWORK_FUSE) or kind.startswith("nfs")
    return best if networked else None


def is_busy(exc: sqlite3.OperationalError) -> bool:
    text = str(exc)
    return "locked" in text or "busy" in text


_OBJECT = re.compile(r"\s*CREATE (?:TABLE|INDEX) IF NOT EXISTS (\w+)")


class SQLiteFile:
    """Connections to one database file, one per thread, and its write and read transactions.

    ``what`` names the file's user in messages ("state store", "SQLite broker"); ``access``: whether this
    user writes, and may create the file (and its folders) when it does not exist yet; ``schema``: the
    ``CREATE ... IF NOT EXISTS`` statements of the user's tables and indexes, which a writer runs when any is
    missing and a reader reads as empty tables where the file lacks them.
    """

    def __init__(
        self,
        path: Path,
        *,
        url: str,
        what: str,
        access: Access,
        schema: Sequence[str] = (),
        timeout_s: float = 10.0,
    ) -> None:
        self.path = path
        self.url = url
        self.what = what
        self.access = access
        self.timeout_s = timeout_s
        self._local = threading.local()
        self._connections: list[tuple[int, sqlite3.Connection]] = []  # (pid that opened it, connection)
        self._lock = threading.Lock()
        self._check_place()
        if access is Access.CREATE:
            self._create()
        elif not path.is_file():
            raise NoDatabase(path, what)
        self._key = os.path.realpath(path)
        # mode=rw: never create the file, even should it vanish while open (a new one would be empty)
        self._uri = f"file:{quote(str(path))}?mode=rw"
        self._stand_ins = dict(made for made in map(stand_in, schema) if made is not None)
        if access is not Access.READ:
            self._create_missing(schema)

    @property
    def where(self) -> str:
        return f"{self.what} {mask_url(self.url)}"

    def _check_place(self) -> None:
        remote = network_filesystem(self.path)
        if remote is not None:
            kind, point = remote
            raise ConfigError(
                f"{self.where}: {self.path} is on a network filesystem ({kind} at {point}); SQLite's WAL"
                " needs a local disk shared by processes of one host: put the file on a local path"
            )

    def _create(self) -> None:
        """The file, 0600, and its missing folders, 0700, unless they exist."""
        try:
            make_private_folder(self.path.parent)
        except OSError as exc:
            raise Unreachable(f"cannot create the directory of the {self.where}: {exc.strerror}") from None
        try:
            os.close(os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, PRIVATE_FILE))
        except FileExistsError:
            pass
        except OSError as exc:
            raise Unreachable(f"cannot create the {self.where}: {exc.strerror}") from None

    def _create_missing(self, schema: Sequence[str]) -> None:
        """Run ``schema`` in one write transaction when any table or index it names is missing (a look
        first, so that opening a file that has them all takes no write lock)."""
        wanted = {found.group(1) for found in map(_OBJECT.match, schema) if found is not None}
        with self.read() as db:
            present = {row[0] for row in db.execute("SELECT name FROM sqlite_master")}
        if wanted <= present:
            return
        with self.write() as db:
            for statement in schema:
                db.execute(statement)

    def _writer_only(self) -> None:
        """A reader's file has no writing connection: reaching for one is a bug, refused before anything."""
        if self.access is Access.READ:
            raise ReadOnly(f"writing the {self.what}")

    def connection(self) -> sqlite3.Connection:
        """This thread's writing connection (a forked child never reuses its parent's)."""
        self._writer_only()
        connection: sqlite3.Connection | None = getattr(self._local, "connection", None)
        if connection is None or getattr(self._local, "pid", None) != os.getpid():
            with self.translated():
                connection = sqlite3.connect(
                    self._uri, timeout=self.timeout_s, isolation_level=None, check_same_thread=False, uri=True
                )
                connection.execute("PRAGMA journal_mode=WAL")
                connection.execute("PRAGMA synchronous=NORMAL")
            self._local.connection = connection
            self._local.pid = os.getpid()
            with self._lock:
                self._connections.append((os.getpid(), connection))
        return connection

    @contextlib.contextmanager
    def translated(self) -> Iterator[None]:
        """sqlite3's exceptions as tqadmin's, each naming the file and what to check."""
        try:
            yield
        except sqlite3.OperationalError as exc:
            text = str(exc)
            if is_busy(exc):
                raise ConnectTimeout(
                    f"{self.where} stayed locked past the timeout of {self.timeout_s:g} s ({text}): another"
                    " process held a transaction that long"
                ) from None
            if ("readonly" in text or "permission" in text) and self.access is Access.READ:
                raise NotAuthorized(
                    f"{self.where} could not be read ({text}); check the permissions of the file, of its"
                    " -wal and -shm files and of its folder"
                ) from None
            if "readonly" in text or "permission" in text:
                raise NotAuthorized(f"{self.where} is not writable ({text}); check its permissions") from None
            if "disk" in text or "full" in text:
                raise BrokerError(f"{self.where} could not write ({text}); check the disk") from None
            raise Unreachable(
                f"cannot use the {self.where} ({text}); check the path and its permissions"
            ) from None
        except sqlite3.DatabaseError as exc:
            raise BadResponse(f"{self.where} is not a usable database ({exc})") from None
        except ChangedWhileRead as exc:
            raise Unreachable(f"{self.where}: {exc}; read again") from None
        except FileNotFoundError:
            raise NoDatabase(self.path, self.what) from None
        except PermissionError as exc:
            raise NotAuthorized(
                f"{self.where} is not readable ({exc.strerror}); check its permissions"
            ) from None
        except OSError as exc:
            raise Unreachable(f"cannot use the {self.where} ({exc.strerror})") from None

    @contextlib.contextmanager
    def write(self) -> Iterator[sqlite3.Connection]:
        """One write transaction holding the write lock from its start; rolled back on any exception,
        a failed ``COMMIT`` included (SQLite leaves the transaction open then, holding the file's lock)."""
        self._writer_only()
        with self.translated(), writer_lock(self._key):
            connection = self.connection()
            self._begin(connection)
            try:
                yield connection
                connection.execute("COMMIT")
            except BaseException:
                if connection.in_transaction:
                    with contextlib.suppress(sqlite3.Error):
                        connection.execute("ROLLBACK")
                raise

    @contextlib.contextmanager
    def read(self) -> Iterator[sqlite3.Connection]:
        """One read transaction: its queries see one snapshot, and no writer waits for it (WAL). A reader's
        is :func:`tqadmin.files.sqlite_readonly.read_only`'s, which writes nothing."""
        if self.access is Access.READ:
            with self.translated(), read_only(self.path, self._stand_ins, self.timeout_s) as db:
                yield db
            return
        with self.translated():
            connection = self.connection()
            connection.execute("BEGIN")
            try:
                yield connection
            finally:
                with contextlib.suppress(sqlite3.Error):
                    connection.execute("COMMIT")

    def _begin(self, connection: sqlite3.Connection) -> None:
        """``BEGIN IMMEDIATE``, waiting for the lock until the timeout even where SQLite answers busy
        without calling its busy handler (a WAL file being recovered or reset by another process)."""
        deadline = time.monotonic() + self.timeout_s
        while True:
            try:
                connection.execute("BEGIN IMMEDIATE")
                return
            except sqlite3.OperationalError as exc:
                if not is_busy(exc) or time.monotonic() >= deadline:
                    raise
                time.sleep(random.uniform(*_BUSY_PAUSE_S))

    def close(self) -> None:
        """Close this process's connections (those a parent left to a forked child stay the parent's)."""
        pid = os.getpid()
        with self._lock:
            mine = [c for opener, c in self._connections if opener == pid]
            self._connections = []
        for connection in mine:
            with contextlib.suppress(sqlite3.Error):
                connection.close()
        self._local = threading.local()
