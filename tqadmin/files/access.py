"""What a user of an SQLite file does with it, which decides how :mod:`tqadmin.files.sqlite` opens it.

Apart from the file's plumbing so that naming it loads no database driver: the store's factory takes it, and a
task module that imports tqadmin must not load ``sqlite3``.
"""

from __future__ import annotations

from enum import Enum


class Access(Enum):
    READ = "read"
    """Reads only: ``mode=ro`` through :mod:`tqadmin.files.sqlite_readonly`; nothing in the file or beside it
    changes, a file that does not exist is :class:`~tqadmin.errors.NoDatabase`."""
    WRITE = "write"
    """Writes a file that exists (``mode=rw``), creating its tables when they are missing."""
    CREATE = "create"
    """Writes, and creates the file (0600) and its folders (0700) when they do not exist yet."""
