"""Folders for files that may hold personal data (message bodies, job state, audit records): created 0700.

``mkdir -p`` gives every folder it makes the umask's mode (0755 as usual), readable by every user of the
host, and ``Path.mkdir(parents=True, mode=...)`` applies the mode to the last folder only. Folders that
already exist are left as their owner set them.
"""

from __future__ import annotations

from pathlib import Path

PRIVATE_FOLDER = 0o700
PRIVATE_FILE = 0o600


def make_private_folder(folder: Path) -> None:
    """Create ``folder`` and each missing parent 0700 (raises ``OSError`` as ``mkdir`` does)."""
    missing: list[Path] = []
    while not folder.is_dir():
        missing.append(folder)
        if folder.parent == folder:
            break
        folder = folder.parent
    for each in reversed(missing):
        try:
            each.mkdir(mode=PRIVATE_FOLDER)
        except FileExistsError:  # another process made it meanwhile (or it is a file: said by the next step)
            if not each.is_dir():
                raise
