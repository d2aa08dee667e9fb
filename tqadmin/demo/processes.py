"""Worker processes that never outlive the demo.

Each worker runs in its own process group, so stopping it also stops anything it started (a job runner, a
shell), and on Linux it is told by the kernel to stop (SIGTERM) when the thread that started it dies, so even
a ``kill -9`` of the demo leaves no orphan consuming from the queues. A worker that exits on its own is
started again a few times, which the dashboard shows as a dead worker and a new one.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

PR_SET_PDEATHSIG = 1
_prctl: Any = ctypes.CDLL(None, use_errno=True).prctl if sys.platform.startswith("linux") else None


def _die_with_parent() -> None:
    """Runs in the child between fork and exec: ask for SIGTERM when the parent goes away."""
    if _prctl is not None:
        _prctl(PR_SET_PDEATHSIG, signal.SIGTERM)


def spawn(command: Sequence[str], env: Mapping[str, str], log: IO[bytes]) -> subprocess.Popen[bytes]:
    """Start one worker in a new process group, its output appended to ``log``."""
    return subprocess.Popen(
        list(command),
        env=dict(env),
        stdin=subprocess.DEVNULL,
        stdout=log,
        stderr=subprocess.STDOUT,
        process_group=0,
        preexec_fn=_die_with_parent,  # noqa: PLW1509 - only prctl, no locks or imports after fork
    )


@dataclass(slots=True)
class Child:
    """One supervised worker: its command, its log, the current process and how often it was restarted."""

    name: str
    command: Sequence[str]
    log_path: Path
    process: subprocess.Popen[bytes] | None = None
    restarts: int = 0
    exits: list[int] = field(default_factory=list)

    def last_log_line(self) -> str:
        try:
            lines = self.log_path.read_text(errors="replace").strip().splitlines()
        except OSError:
            return ""
        return lines[-1][:300] if lines else ""


class Supervisor:
    """Starts the workers, restarts those that exit, and stops them all: SIGTERM, a grace period, SIGKILL."""

    def __init__(
        self,
        commands: Mapping[str, Sequence[str]],
        env: Mapping[str, str],
        log_dir: Path,
        *,
        max_restarts: int = 3,
        spawner: Callable[[Sequence[str], Mapping[str, str], IO[bytes]], subprocess.Popen[bytes]] = spawn,
    ) -> None:
        self._env = env
        self._spawn = spawner
        self._max_restarts = max_restarts
        self.children = [Child(name, cmd, log_dir / f"{name}.log") for name, cmd in commands.items()]
        self.notes: list[str] = []
        self._stopping = False

    def start(self) -> None:
        for child in self.children:
            self._start(child)

    def _start(self, child: Child) -> None:
        with child.log_path.open("ab") as log:
            child.process = self._spawn(child.command, self._env, log)

    def check(self) -> None:
        """Notice workers that exited, note why (their last log line) and restart them within the limit."""
        if self._stopping:
            return
        for child in self.children:
            process = child.process
            if process is None or process.poll() is None:
                continue
            child.exits.append(process.returncode)
            _kill_group(process.pid, signal.SIGKILL)
            child.process = None
            note = f"{child.name} exited with code {process.returncode}"
            last = child.last_log_line()
            self.notes.append(f"{note}: {last}" if last else note)
            if child.restarts < self._max_restarts:
                child.restarts += 1
                self._start(child)

    def alive(self) -> int:
        return sum(1 for c in self.children if c.process is not None and c.process.poll() is None)

    def gave_up(self) -> bool:
        """True when every worker exited and used up its restarts: the demo cannot go on."""
        return all(c.process is None for c in self.children)

    def pids(self) -> list[int]:
        return [c.process.pid for c in self.children if c.process is not None]

    def stop(self, grace_s: float = 10.0) -> None:
        """SIGTERM every worker's group (they finish their jobs), SIGKILL whatever is left after the grace."""
        self._stopping = True
        running = [c for c in self.children if c.process is not None]
        for child in running:
            assert child.process is not None
            _kill_group(child.process.pid, signal.SIGTERM)
        deadline = time.monotonic() + grace_s
        for child in running:
            assert child.process is not None
            try:
                child.process.wait(timeout=max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                self.notes.append(f"{child.name} did not stop within {grace_s:g} s of SIGTERM: killed")
        for child in running:
            assert child.process is not None
            _kill_group(child.process.pid, signal.SIGKILL)
            child.process.wait()
            child.process = None


def _kill_group(pgid: int, sig: signal.Signals) -> None:
    """Signal a worker's whole process group; a group that is already gone is fine."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)
