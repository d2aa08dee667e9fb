"""The real CLI as a new user runs it: a temporary HOME, nothing configured (no ``TQADMIN_*``, no ``XDG_*``),
so the embedded SQLite broker and store, and the audit log, sit at their defaults under that HOME."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path


def environment(home: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TQADMIN_", "XDG_"))}
    env.update({"HOME": str(home), **extra})
    return env


def tqadmin(home: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tqadmin.cli", *args],
        env=environment(home, **env),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
