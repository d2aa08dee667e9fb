"""Read an SQLite file without writing anything beside it or in it: the one way every reader of a tqadmin
file opens it (:meth:`tqadmin.files.sqlite.SQLiteFile.read` on a reader's file).

Why each step:

- **``mode=ro``**: the connection cannot write the file, so no schema is created, no journal mode is set and
  no write lock is ever taken; a file the user may read but not write is read.
- **one connection per read**, closed after it: nothing of a reader stays open between two polls, so a reader
  never keeps the last writer from tidying up (a WAL connection holds the file's SHARED lock while open), and
  each read sees the schema as it is now.
- **missing tables read as empty**: each read attaches an in-memory schema holding an empty stand-in of every
  table the caller reads that the file lacks (a file nothing created them in yet, or one holding another
  application's tables). An unqualified name finds the file's own table first, the stand-in otherwise.
- **SQLite's SHARED lock, held by us around the read**: an open-file-description lock (``F_OFD_SETLK``) on the
  bytes SQLite's own SHARED lock uses, taken as SQLite takes it (through the PENDING byte, so a writer on its
  way to an exclusive lock goes first). It is what keeps a WAL file's last writer from deleting its ``-wal``
  and ``-shm`` while we read (that writer must lock the file exclusively first): without it, a reader that
  found them could end up creating them anew. It must be an OFD lock: closing any descriptor of a file drops
  every POSIX lock the process holds on it, so a POSIX lock of ours would vanish when SQLite closes a
  connection, and closing a descriptor of ours would drop SQLite's (https://sqlite.org/howtocorrupt.html,
  2.2). For the same reason the descriptor is opened once per file and process, and never closed.
- **a WAL file with no ``-wal``** is one whose every committed page is in the database file (its last writer
  checkpointed and deleted the WAL, under an exclusive lock). A ``mode=ro`` connection would create ``-wal``
  and ``-shm`` beside it, or fail where the folder is not writable
  (https://sqlite.org/wal.html#readonly). So while we hold the SHARED lock and the ``-wal`` is still absent,
  the file is read as it is (``immutable=1``, which opens nothing beside it). A writer that starts meanwhile
  writes its own ``-wal`` and cannot delete it while we hold the lock; the database file changes only if it
  checkpoints during the read (a thousand pages by default), which the file's size and times show: that read
  is refused as changed, never returned torn.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import random
import re
import sqlite3
import struct
import threading
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import quote

# The bytes of SQLite's unix locks (os_unix.c, os.h): a reader locks SHARED_SIZE bytes from SHARED_FIRST,
# after a read lock on PENDING_BYTE, which a writer taking its exclusive lock holds for writing.
PENDING_BYTE = 0x40000000
SHARED_FIRST = PENDING_BYTE + 2
SHARED_SIZE = 510
WAL_HEADER = (18, b"\x02\x02")  # offset and value of the file format's write and read versions in WAL mode
STAND_INS = "tq_absent"
_TABLE = re.compile(r"\s*CREATE TABLE IF NOT EXISTS (\w+)")
_BUSY_PAUSE_S = (0.001, 0.02)


class ChangedWhileRead(Exception):
    """A writer checkpointed into the file during an ``immutable`` read: what was read may be torn."""


@dataclass
class _Descriptor:
    """The process's one descriptor of a database file, and how many of its threads are reading it."""

    fd: int
    readers: int = 0
    guard: threading.Lock = field(default_factory=threading.Lock)


_descriptors: dict[tuple[int, int], _Descriptor] = {}  # (device, inode) -> its descriptor
_descriptors_lock = threading.Lock()


def _forget_descriptors() -> None:
    """A forked child shares its parent's open file descriptions, and with them the parent's OFD locks: it
    opens descriptors of its own (closing the inherited ones drops no lock: the child holds none yet)."""
    global _descriptors_lock  # noqa: PLW0603 - replaced, not shared, in the child
    _descriptors_lock = threading.Lock()
    for descriptor in _descriptors.values():
        with contextlib.suppress(OSError):
            os.close(descriptor.fd)
    _descriptors.clear()


os.register_at_fork(after_in_child=_forget_descriptors)


def stand_in(statement: str) -> tuple[str, str] | None:
    """``(table, statement creating an empty one in the stand-ins)`` for a ``CREATE TABLE IF NOT EXISTS``
    statement, ``None`` for any other (an index: a stand-in is empty, nothing to index)."""
    found = _TABLE.match(statement)
    if found is None:
        return None
    name = found.group(1)
    return name, f"CREATE TABLE {STAND_INS}.{name}{statement[found.end() :]}"


@contextlib.contextmanager
def read_only(path: Path, stand_ins: Mapping[str, str], timeout_s: float) -> Iterator[sqlite3.Connection]:
    """One read transaction on the file at ``path`` that writes nothing in it or beside it; ``stand_ins``
    maps each table the caller reads to the statement creating its empty stand-in (:func:`stand_in`)."""
    deadline = time.monotonic() + timeout_s
    with _shared(path, deadline) as fd:
        before = _identity(os.fstat(fd))
        settled = os.pread(fd, 2, WAL_HEADER[0]) == WAL_HEADER[1] and not os.path.lexists(f"{path}-wal")
        uri = f"file:{quote(str(path))}?mode=ro" + ("&immutable=1" if settled else "")
        db = sqlite3.connect(uri, timeout=timeout_s, isolation_level=None, uri=True, check_same_thread=False)
        try:
            db.execute(f"ATTACH DATABASE ':memory:' AS {STAND_INS}")
            db.execute("BEGIN")
            tables = db.execute("SELECT name FROM main.sqlite_master WHERE type = 'table'")
            present = {row[0] for row in tables}
            for table, create in stand_ins.items():
                if table not in present:
                    db.execute(create)
            yield db
            db.execute("COMMIT")
        finally:
            db.close()
        if settled and _identity(os.fstat(fd)) != before:
            raise ChangedWhileRead(f"{path} was checkpointed by a writer that started during the read")


def _identity(stat: os.stat_result) -> tuple[int, int, int]:
    return stat.st_size, stat.st_mtime_ns, stat.st_ctime_ns


@contextlib.contextmanager
def _shared(path: Path, deadline: float) -> Iterator[int]:
    """SQLite's SHARED lock on ``path`` held by this process (as long as any of its threads reads), yielding
    the descriptor it is held on."""
    descriptor = _descriptor(path)
    with descriptor.guard:
        if descriptor.readers == 0:
            _lock_shared(descriptor.fd, deadline)
        descriptor.readers += 1
    try:
        yield descriptor.fd
    finally:
        with descriptor.guard:
            descriptor.readers -= 1
            if descriptor.readers == 0:
                _lock(descriptor.fd, fcntl.F_UNLCK, SHARED_FIRST, SHARED_SIZE)


def _descriptor(path: Path) -> _Descriptor:
    """This process's descriptor of the file now at ``path``, opened on first use and never closed."""
    stat = os.stat(path)
    with _descriptors_lock:
        known = _descriptors.get((stat.st_dev, stat.st_ino))
        if known is not None:
            return known
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
        opened = os.fstat(fd)  # the file may have been replaced since the stat: the one opened counts
        return _descriptors.setdefault((opened.st_dev, opened.st_ino), _Descriptor(fd))


def _lock_shared(fd: int, deadline: float) -> None:
    """As SQLite takes SHARED: a read lock on the PENDING byte (refused while a writer takes its exclusive
    lock), the shared range, then the PENDING byte let go; retried until ``deadline`` as a busy timeout."""
    while True:
        try:
            _lock(fd, fcntl.F_RDLCK, PENDING_BYTE, 1)
            try:
                _lock(fd, fcntl.F_RDLCK, SHARED_FIRST, SHARED_SIZE)
            finally:
                _lock(fd, fcntl.F_UNLCK, PENDING_BYTE, 1)
            return
        except (BlockingIOError, PermissionError):  # EAGAIN or EACCES: a writer holds the file
            if time.monotonic() >= deadline:
                raise sqlite3.OperationalError("database is locked") from None
            time.sleep(random.uniform(*_BUSY_PAUSE_S))


def _lock(fd: int, kind: int, start: int, length: int) -> None:
    """``fcntl(F_OFD_SETLK)`` with Linux's ``struct flock`` (type, whence, start, length, pid = 0)."""
    fcntl.fcntl(fd, fcntl.F_OFD_SETLK, struct.pack("hhqqi4x", kind, os.SEEK_SET, start, length, 0))
