"""The audit log: one JSON line per admin write, appended before the command returns.

Kept as plain JSONL so it can be tailed, grepped and shipped by whatever log pipeline the team runs. The
target is a queue name, never a URL, so no credential can end up here.
"""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from tqadmin.errors import ConfigError
from tqadmin.files.private import PRIVATE_FILE, make_private_folder


def ensure_writable(path: Path) -> None:
    """Fail before a write action is sent when its audit record could not be kept."""
    try:
        make_private_folder(path.parent)
        os.close(os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, PRIVATE_FILE))
    except OSError as exc:
        raise ConfigError(
            f"cannot write the audit log {path}: {exc.strerror}; fix it or set TQADMIN_AUDIT_LOG;"
            " nothing was sent"
        ) from None


def append(
    path: Path,
    *,
    profile: str | None,
    action: str,
    target: str | None,
    count: int,
    outcome: str,
    extra: dict[str, Any] | None = None,
) -> None:
    """Append one record as a single ``O_APPEND`` write, so concurrent tqadmins never interleave lines."""
    record: dict[str, Any] = {
        "time": datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z"),
        "profile": profile or "default",
        "action": action,
        "target": target,
        "count": count,
        "outcome": outcome,
    }
    if extra:
        record.update(extra)
    line = (json.dumps(record, sort_keys=False) + "\n").encode("utf-8")
    make_private_folder(path.parent)
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, PRIVATE_FILE)
    try:
        os.write(fd, line)
    finally:
        os.close(fd)
