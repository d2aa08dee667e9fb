"""The claims a worker process holds, written where its supervisor can still read them once it has died.

A dead worker process leaves claims in the store: the jobs waiting in its prefetch window, the runs under way,
the runs whose completion marks were on their way. Left to their leases (30 s by default), each of those jobs,
redelivered by the broker at once, would wait ``HELD`` for that long; a job that kills its process would run
again only every lease. The supervisor knows at once that its child died, so the child writes every claim it
takes into a region of memory it shares with its supervisor (an anonymous ``mmap`` made before the fork) and
wipes it when it gives the claim up; the supervisor hands what is left there to the store
(:func:`recover_claims`): the claims of runs under way end now as if their leases had run out, so each job's
next claim counts the crash at once (how a job that kills its worker ends as ``crash_loop``), and the others
are released, so their redelivered jobs are claimed without waiting. Both only while the claim's token is
current (:meth:`~tqadmin.store.completion.base.CompletionStore.abandon_many`).

The same slots say which runs are under way, which is what a crash is charged to (a job that waited in the
window is no crash: :class:`tqadmin.store.completion.base.Claim`): a run's claim is marked running before its
task runs and back to held when it returns, without a store round trip. The monitor records in the store the
starts of runs still under way after one of its ticks (:mod:`tqadmin.pipeline.monitor`), so a process that
hangs rather than dies charges its long runs too.

A slot is a flag byte (held or running), the claim's fencing token and the job id. The process fills token and
id first and sets the flag last, so a process killed in the middle of writing a slot leaves one that reads as
free: that claim waits out its lease, as every claim did before. A job id too long for a slot, or a claim
while every slot holds a running claim, is not written (:meth:`ClaimRegister.hold` says so: the run's start
then goes to the store); when every slot is taken, the oldest claim that is not running gives its slot up (it
waits out its lease if the process dies). Whatever the supervisor finds in a slot that no process could have
written (an unknown flag, a size out of range, an id that is not UTF-8, a token below 1) is logged and
skipped: nothing in the register can stop the supervisor.
"""

from __future__ import annotations

import logging
import mmap
import struct
import threading
from collections.abc import Callable
from dataclasses import dataclass

from tqadmin.show.masking import mask_text
from tqadmin.store.completion.base import Claim, ClaimState, CompletionStore

log = logging.getLogger("tqadmin.worker")

SLOT_BYTES = 256
_HEAD = struct.Struct("<BqH")  # flag, token, id length
MAX_ID_BYTES = SLOT_BYTES - _HEAD.size
FREE, HELD, RUNNING = 0, 1, 2
MAX_SLOTS = 4096  # 1 MiB of shared memory at most
IDS_SHOWN = 300  # characters of the dead process's job ids a log line shows


@dataclass(frozen=True, slots=True)
class Left:
    """A claim a dead process held: its job, its token, whether its run was under way."""

    job_id: str
    token: int
    running: bool


class ClaimRegister:
    """``slots`` slots in memory shared with every process forked after it is made."""

    def __init__(self, slots: int) -> None:
        self._memory = mmap.mmap(-1, slots * SLOT_BYTES)
        self._slots = slots
        self._lock = threading.Lock()
        self._free = list(range(slots))
        self._held: dict[tuple[str, int], int] = {}  # (job id, token) -> slot, oldest first

    @classmethod
    def for_window(cls, prefetch: int, concurrency: int) -> ClaimRegister:
        """Room for every claim a worker process holds at once: its prefetch window, and its runs under way
        again (after a lost connection the old runs go on while the new window fills), up to
        :data:`MAX_SLOTS` (past it, the oldest waiting claims give their slots up)."""
        return cls(min(prefetch + 2 * concurrency, MAX_SLOTS))

    def clear(self) -> None:
        """Start empty (a new worker process, before its first claim): every slot free and unflagged."""
        with self._lock:
            self._memory[:] = bytes(len(self._memory))
            self._free = list(range(self._slots))
            self._held.clear()

    # -- the worker process ----------------------------------------------------------------------------------

    def hold(self, job_id: str, token: int) -> bool:
        """Write the claim ``token`` of ``job_id`` as held; ``False`` when it does not fit."""
        name = job_id.encode("utf-8", "surrogatepass")
        if len(name) > MAX_ID_BYTES:
            return False
        with self._lock:
            if (job_id, token) in self._held:
                return True
            slot = self._free.pop() if self._free else self._evict()
            if slot is None:
                return False
            at = slot * SLOT_BYTES
            self._memory[at + 1 : at + _HEAD.size + len(name)] = _HEAD.pack(0, token, len(name))[1:] + name
            self._memory[at] = HELD  # last: until now the slot reads as free
            self._held[job_id, token] = slot
        return True

    def _evict(self) -> int | None:
        """The slot of the oldest claim that is not running, given up for a new one (called locked)."""
        for key, slot in self._held.items():
            if self._memory[slot * SLOT_BYTES] != RUNNING:
                self._memory[slot * SLOT_BYTES] = FREE
                del self._held[key]
                return slot
        return None

    def drop(self, job_id: str, token: int) -> None:
        """The claim is given up (completed, released, superseded): nothing for the supervisor to do."""
        with self._lock:
            slot = self._held.pop((job_id, token), None)
            if slot is not None:
                self._memory[slot * SLOT_BYTES] = FREE
                self._free.append(slot)

    def running(self, job_id: str, token: int, *, now: bool = True) -> bool:
        """Mark the run of the held claim as under way (``now``) or over (its task returned); ``False`` when
        the claim is not in the register (its start must go to the store)."""
        with self._lock:
            slot = self._held.get((job_id, token))
            if slot is None:
                return False
            self._memory[slot * SLOT_BYTES] = RUNNING if now else HELD
            return True

    # -- the supervisor ----------------------------------------------------------------------------------

    def left(self) -> list[Left]:
        """The claims the process held when it died (read by the supervisor); a corrupt slot is skipped."""
        found: list[Left] = []
        for slot in range(self._slots):
            try:
                claim = self._read(slot)
            except ValueError as exc:  # UnicodeDecodeError is one
                log.warning("claim register slot %d is corrupt, skipped: %s", slot, mask_text(str(exc)[:200]))
                continue
            if claim is not None:
                found.append(claim)
        return found

    def _read(self, slot: int) -> Left | None:
        """The claim in ``slot`` (None: free); ``ValueError`` for what no worker process writes."""
        at = slot * SLOT_BYTES
        flag, token, size = _HEAD.unpack_from(self._memory, at)
        if flag == FREE:
            return None
        if flag not in (HELD, RUNNING) or size > MAX_ID_BYTES or token < 1:
            raise ValueError(f"flag {flag}, token {token}, an id of {size} bytes")
        start = at + _HEAD.size
        return Left(
            self._memory[start : start + size].decode("utf-8", "surrogatepass"), token, flag == RUNNING
        )


def recover_claims(register: ClaimRegister, open_store: Callable[[], CompletionStore]) -> None:
    """The worker process died: give up in the store the claims it left in ``register``. The runs under way
    end now, each charged a crash (the job's next claim counts it), and the other claims are released, so
    the jobs the broker redelivers are claimed at once rather than wait out those leases.

    Called by the supervisor, which must live on: when the store cannot be reached the claims are left to
    their leases (the runs are then not charged: they run again, as a job that waited in the window would)
    and a warning says so."""
    left = register.left()
    if not left:
        return
    runs = [Claim(c.job_id, ClaimState.CLAIMED, token=c.token) for c in left if c.running]
    held = [Claim(c.job_id, ClaimState.CLAIMED, token=c.token) for c in left if not c.running]
    running = ", ".join(c.job_id for c in runs)[:IDS_SHOWN]  # clipped before it is masked and logged
    try:
        store = open_store()
        try:
            store.abandon_many(runs, started=True)
            store.abandon_many(held, started=False)
        finally:
            store.close()
    except Exception as exc:  # the store away (a TqadminError) or anything else: the supervisor goes on
        what = f"charge a crash to jobs {running} or " if runs else ""
        log.warning("could not %srelease %d claims: %s", what, len(held), mask_text(str(exc)))
        return
    if runs:
        log.warning("the worker process died running jobs %s: each is charged a crash", mask_text(running))
    if held:
        log.info("released %d claims the dead worker process held", len(held))
