"""The runs under way, written where the supervisor can still read them once its worker process has died.

A crash is charged only to a job whose run had started when its worker died (a job that waited in the
prefetch window is no crash: :class:`tqadmin.store.base.Claim`). The store used to hear of every start before
the run, a round trip per group of starts (a quarter of a round trip per job at 8 threads, more than the
claims and completion marks together). Now the worker process writes each run's claim into a page of memory
it shares with its supervisor (an anonymous ``mmap`` made before the fork) before the task runs, and wipes it
when the task returns; when the process dies without saying why, the supervisor records the starts of the
claims left there (``start_many``), so their leases run out *started* and the store counts the crash as
before. The monitor records in the store the starts of runs still under way after one of its ticks
(:mod:`tqadmin.pipeline.monitor`), so a process that hangs rather than dies (SIGSTOP, a lock-up) charges
its long runs too.

A slot is a flag byte, the claim's fencing token and the job id. The process fills token and id first and
sets the flag last; the supervisor reads only flagged slots, so a process killed in the middle of writing a
slot leaves one that reads as not started, which it was not yet. A job id too long for a slot, or a run while
every slot is taken (a run abandoned on timeout keeps its slot until its task returns), is not written:
:meth:`RunLedger.enter` says so and the caller records that start in the store instead.
"""

from __future__ import annotations

import logging
import mmap
import struct
import threading
from collections.abc import Callable

from tqadmin.masking import mask_text
from tqadmin.store.base import Claim, ClaimState, CompletionStore

log = logging.getLogger("tqadmin.worker")

SLOT_BYTES = 256
_HEAD = struct.Struct("<BqH")  # flag, token, id length
MAX_ID_BYTES = SLOT_BYTES - _HEAD.size


class RunLedger:
    """``slots`` slots in memory shared with every process forked after it is made."""

    def __init__(self, slots: int) -> None:
        self._memory = mmap.mmap(-1, slots * SLOT_BYTES)
        self._slots = slots
        self._lock = threading.Lock()
        self._free = list(range(slots))

    def clear(self) -> None:
        """Start empty (a new worker process, before its first run): every slot free and unflagged."""
        with self._lock:
            self._memory[:] = bytes(len(self._memory))
            self._free = list(range(self._slots))

    def enter(self, job_id: str, token: int) -> int | None:
        """Write a run of ``job_id`` under claim ``token`` as started; its slot, or None when it does not fit
        (the caller records the start in the store)."""
        name = job_id.encode("utf-8", "surrogatepass")
        if len(name) > MAX_ID_BYTES:
            return None
        with self._lock:
            if not self._free:
                return None
            slot = self._free.pop()
        at = slot * SLOT_BYTES
        self._memory[at + 1 : at + _HEAD.size + len(name)] = _HEAD.pack(0, token, len(name))[1:] + name
        self._memory[at] = 1  # last: until now the slot reads as not started
        return slot

    def leave(self, slot: int) -> None:
        """The run in ``slot`` is over (its task returned): no crash to charge it with from now on."""
        self._memory[slot * SLOT_BYTES] = 0
        with self._lock:
            self._free.append(slot)

    def left(self) -> list[tuple[str, int]]:
        """The runs under way when the process died (read by the supervisor): ``(job id, token)`` each."""
        found: list[tuple[str, int]] = []
        for slot in range(self._slots):
            at = slot * SLOT_BYTES
            flag, token, size = _HEAD.unpack_from(self._memory, at)
            if flag and size <= MAX_ID_BYTES:
                start = at + _HEAD.size
                found.append((self._memory[start : start + size].decode("utf-8", "surrogatepass"), token))
        return found


def charge_crashes(ledger: RunLedger, open_store: Callable[[], CompletionStore]) -> None:
    """The worker process died: record in the store the starts of the runs it left in ``ledger``, so each
    one's lease runs out started and counts a crash (how a job that kills its worker ends as ``crash_loop``).

    Called by the supervisor, which must live on: when the store cannot be reached those runs are not charged
    (they run again, as a job that waited in the window would) and a warning says so."""
    left = ledger.left()
    if not left:
        return
    claims = [Claim(job_id, ClaimState.CLAIMED, token=token) for job_id, token in left]
    ids = ", ".join(job_id for job_id, _ in left)
    try:
        store = open_store()
        try:
            store.start_many(claims)
        finally:
            store.close()
    except Exception as exc:  # the store away (a TqadminError) or anything else: the supervisor goes on
        log.warning("could not charge a crash to jobs %s: %s", mask_text(ids), mask_text(str(exc)))
        return
    log.warning("the worker process died running jobs %s: each is charged a crash", mask_text(ids))
