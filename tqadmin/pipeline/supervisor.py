"""Run the worker in a child process and start a new one when it dies, as Celery's and Dramatiq's
process pools do: a task that calls ``os._exit`` or is killed by the OOM killer takes down its process, not
the worker the operator started.

The child says how it meant to exit through a pipe before it exits; a child that dies without saying so
crashed, and one that exits with :class:`Restart` (exit 1 after a fault of its broker plugin: a background
thread of its consumer died, see :mod:`tqadmin.plugin.kit.background`) asks for a fresh process; both are
restarted with exponential backoff and jitter (:class:`tqadmin.plugin.kit.retrying.Retrying`, so a job that
kills every worker does not make them restart in lock step), and every restart is counted: in the log, and in
the heartbeat of the next child (:func:`restarts`). A transient fault heals in the new process; a repeated one
goes on being restarted, one warning with its count each time. The jobs it held are redelivered by the
broker; the supervisor gives up at once the claims the dead child held (its claim register), so they are
claimed again without waiting out their leases, and the completion store counts the crash against the jobs it
was running, which is how a poison job ends as ``crash_loop``. A second pipe lets the child notice its
supervisor died (SIGKILL) and exit rather than live on as an orphan.
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import signal
import threading
import time
from collections.abc import Callable
from types import FrameType

from tqadmin.connect.backoff import Backoff
from tqadmin.pipeline.watchdog import Watchdog
from tqadmin.plugin.kit.retrying import Retrying
from tqadmin.show.masking import mask_text

log = logging.getLogger("tqadmin.worker")

STABLE_S = 10.0  # a child that lived this long resets the restart backoff
RESTART_BASE_S = 0.1
RESTART_CAP_S = 5.0
ORPHAN_EXIT = 70

WATCH_EVERY_S = 0.25  # how often the watchdog looks at the child's pulse

_restarts = [0]  # how many times this supervisor started a new child: a forked child reads its copy
_watchdog_restarts = [0]  # of those, how many followed a kill by the watchdog


class Restart(int):
    """The exit code of a child that wants a fresh process in its place (``Restart(1)``)."""


def restarts() -> int:
    """In a child: how many children this supervisor started before it (its heartbeat carries the count)."""
    return _restarts[0]


def watchdog_restarts() -> int:
    """In a child: how many of the restarts before it followed a kill by the watchdog."""
    return _watchdog_restarts[0]


def supervise(
    target: Callable[[], int],
    *,
    on_death: Callable[[], None] | None = None,
    watchdog: Watchdog | None = None,
) -> int:
    """Run ``target`` in a forked child until it returns; restart it whenever it dies instead, or returns
    a :class:`Restart`. ``on_death()`` runs each time a child died without saying so, before anything else
    (the worker gives up the claims it left in its :class:`~tqadmin.pipeline.claim_register.ClaimRegister`,
    charging a crash to its runs under way); whatever it raises is logged, never the end of the supervisor.

    SIGTERM and SIGINT are passed on to the child, whose worker stops gracefully; the child's exit code is
    returned. With a ``watchdog``, a child whose intake loop stops turning is killed and restarted as one that
    died (:mod:`tqadmin.pipeline.watchdog`).
    """
    fork = multiprocessing.get_context("fork")
    # A plain flag, not an Event: the handler must take no lock, or a second signal arriving while the first
    # handler holds it deadlocks the process.
    stopping: list[bool] = []
    child: list[multiprocessing.process.BaseProcess] = []

    def forward(signum: int, _frame: FrameType | None) -> None:
        stopping.append(True)
        if child and child[0].pid is not None:
            os.kill(child[0].pid, signum)

    previous = {s: signal.signal(s, forward) for s in (signal.SIGTERM, signal.SIGINT)}
    retrying = Retrying(Backoff(RESTART_BASE_S, RESTART_CAP_S))
    _restarts[0] = _watchdog_restarts[0] = 0
    try:
        while True:
            status_r, status_w = os.pipe()
            life_r, life_w = os.pipe()
            process = fork.Process(target=_child, args=(target, status_w, life_r, life_w), name="tq-worker")
            child[:] = [process]
            started = time.monotonic()
            if watchdog is not None:
                watchdog.pulse.clear()
            process.start()
            os.close(status_w)
            os.close(life_r)
            killed = _join(process, watchdog)
            said = os.read(status_r, 2)
            os.close(status_r)
            os.close(life_w)
            if not said and on_death is not None:
                _survive(on_death)
            if said[:1] and said[1:] != b"\x01":
                return said[0]
            if stopping:
                return said[0] if said else 1
            if time.monotonic() - started > STABLE_S:
                retrying.succeeded()
            delay = retrying.failed()
            _restarts[0] += 1
            _watchdog_restarts[0] += killed
            log.warning(
                "worker process %s %s (exit %s); restart %d in %.2f s",
                process.pid,
                "stopped after a fault" if said else "killed by the watchdog" if killed else "died",
                process.exitcode,
                _restarts[0],
                delay,
            )
            if _sleep_unless(stopping, delay):
                return 1
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


def _join(process: multiprocessing.process.BaseProcess, watchdog: Watchdog | None) -> bool:
    """Wait for the child to end; with a ``watchdog``, SIGKILL it once its intake loop is overdue (then
    ``True``, after a warning that says how long it was quiet)."""
    if watchdog is None:
        process.join()
        return False
    while True:
        process.join(WATCH_EVERY_S)
        if process.exitcode is not None or process.pid is None:
            return False
        quiet = watchdog.overdue()
        if quiet is not None:
            log.warning(
                "worker process %s: its intake loop has not turned for %.1f s (--watchdog %g); killing it",
                process.pid,
                quiet,
                watchdog.limit_s,
            )
            os.kill(process.pid, signal.SIGKILL)
            process.join()
            return True


def _survive(on_death: Callable[[], None]) -> None:
    """``on_death()``, which must not end the supervisor: whatever it raises (a bug, a corrupt claim register)
    is logged, and the next child is started all the same."""
    try:
        on_death()
    except Exception as exc:
        log.warning(
            "after a worker process died: %s (the next one is started)",
            mask_text(f"{type(exc).__name__}: {exc}"),
        )


def _sleep_unless(stopping: list[bool], seconds: float) -> bool:
    """Sleep up to ``seconds``, waking early once ``stopping`` holds a value; says whether it does."""
    deadline = time.monotonic() + seconds
    while not stopping and time.monotonic() < deadline:
        time.sleep(min(0.05, max(0.0, deadline - time.monotonic())))
    return bool(stopping)


def _child(target: Callable[[], int], status_w: int, life_r: int, life_w: int) -> None:
    os.close(life_w)
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, signal.SIG_DFL)
    threading.Thread(target=_exit_when_orphaned, args=(life_r,), daemon=True).start()
    code = 1
    try:
        code = target()
    finally:
        os.write(status_w, bytes([code & 0xFF, isinstance(code, Restart)]))
    os._exit(code)  # do not wait for job threads stuck in a timed-out run


def _exit_when_orphaned(life_r: int) -> None:
    os.read(life_r, 1)  # returns (empty) only when every write end is closed: the supervisor is gone
    os._exit(ORPHAN_EXIT)
