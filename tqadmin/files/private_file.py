"""Files tqadmin writes that hold message bodies or job ids: exports (the CLI's and the dashboard's), purge
backups, publish reports. Each is created new and private, never written through a symbolic link, and never
written over an existing file unless the operator said so (``--force``; the dashboard asks).

Bodies may hold personal data or secrets, so the file is created 0600 like the audit log. ``--force`` removes
the old file and creates a new one rather than truncating it, which would keep the old file's mode (0644 for
anyone to read) and write through its other hard links. A symbolic link is refused even with ``--force``:
planted in a shared directory, it would send the bodies wherever it points. A device or a FIFO
(``/dev/full``, a pipe from ``mkfifo``) is written as it is: it keeps nothing, so there is nothing to protect.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import TextIO

from tqadmin.errors import UsageError

MODE = 0o600


class FileExists(UsageError):
    """The file is there and replacing it was not asked for: the dashboard asks, the CLI says ``--force``."""


def refusal(path: Path, *, force: bool = False) -> UsageError | None:
    """Why ``path`` may not be written, or ``None``: checked before anything is sent or fetched."""
    try:
        info = path.lstat()
    except FileNotFoundError:
        return None
    except OSError as exc:
        return UsageError(f"cannot write {path}: {exc.strerror}")
    if stat.S_ISLNK(info.st_mode):
        return UsageError(
            f"{path} is a symbolic link: tqadmin writes message data through none; name the file itself"
        )
    if stat.S_ISREG(info.st_mode) and not force:
        return FileExists(
            f"{path} exists: nothing was written; pass --force to replace it, or pick another file"
        )
    if stat.S_ISDIR(info.st_mode):
        return UsageError(f"{path} is a directory; name a file")
    return None


def open_private(path: Path, *, force: bool = False) -> TextIO:
    """``path`` opened for writing text, created 0600 (or a device or FIFO as it is); a
    :class:`UsageError` naming the file otherwise."""
    refused = refusal(path, force=force)
    if refused is not None:
        raise refused
    try:
        flags = os.O_WRONLY | os.O_NOFOLLOW
        if _is_special(path):
            return open(os.open(path, flags), "w", encoding="utf-8")
        if force:
            path.unlink(missing_ok=True)
        # O_EXCL: a file or link that appeared since the check is not written through.
        return open(os.open(path, flags | os.O_CREAT | os.O_EXCL, MODE), "w", encoding="utf-8")
    except FileExistsError:
        raise FileExists(
            f"{path} appeared while tqadmin was about to write it; nothing was written"
        ) from None
    except OSError as exc:
        raise cannot_write(path, exc) from None


def cannot_write(path: Path, exc: OSError) -> UsageError:
    """A full disk or a bad path: one line naming the file (exit 2)."""
    return UsageError(f"cannot write {path}: {exc.strerror}; check the directory, free space and permissions")


def _is_special(path: Path) -> bool:
    try:
        mode = path.lstat().st_mode
    except FileNotFoundError:
        return False
    return stat.S_ISCHR(mode) or stat.S_ISFIFO(mode) or stat.S_ISBLK(mode)
