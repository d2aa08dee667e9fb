"""Every claimed run is recorded as started before its task runs: in the claim register, else in the store.

A crash is charged only to a job whose run had started when its worker died, so the start must be on record
before the task runs (a poison job kills the process a moment later). Under a supervisor the claim, written in
the :class:`~tqadmin.pipeline.claim_register.ClaimRegister` when it was taken, is marked running there, no
round trip; the supervisor hands what is left there to the store if the process dies. Without a register (a
worker run in-process) or for a claim the register does not hold, the store hears of the start first, and the
job threads share those round trips (:class:`GroupStart`): whichever thread needs one while none is on the
wire sends every start waiting then in one ``start_many``; the threads whose starts went out with it take
their answers from it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Generic, TypeVar

from tqadmin.pipeline.claim_register import ClaimRegister
from tqadmin.pipeline.outcomes import Run
from tqadmin.store.completion.base import Claim

C = TypeVar("C")  # a claim


class _Slot:
    __slots__ = ("answer",)

    def __init__(self) -> None:
        self.answer: bool | BaseException | None = None


class GroupStart(Generic[C]):
    """``start(claim)`` for many threads, through ``send`` (one ``start_many`` per group)."""

    def __init__(self, send: Callable[[Sequence[C]], list[bool]]) -> None:
        self._send = send
        self._changed = threading.Condition(threading.Lock())
        self._waiting: list[tuple[C, _Slot]] = []
        self._on_wire = False

    def start(self, claim: C) -> bool:
        """Whether the store recorded the start (``False``: the claim was superseded); raises what the round
        trip that carried it raised (the store is away: the job is not run)."""
        slot = _Slot()
        with self._changed:
            self._waiting.append((claim, slot))
            while slot.answer is None and self._on_wire:
                self._changed.wait()
            if slot.answer is None:  # nothing on the wire: this thread sends the group, its own start in it
                group, self._waiting = self._waiting, []
                self._on_wire = True
        if slot.answer is None:
            self._send_group(group)
        answer = slot.answer
        if isinstance(answer, BaseException):
            raise answer
        return bool(answer)

    def _send_group(self, group: list[tuple[C, _Slot]]) -> None:
        answers: Sequence[bool | BaseException]
        try:
            answers = self._send([claim for claim, _ in group])
        except Exception as exc:
            answers = [exc] * len(group)
        with self._changed:
            for (_, slot), answer in zip(group, answers, strict=True):
                slot.answer = answer
            self._on_wire = False
            self._changed.notify_all()


class RunStarts:
    """Records the starts of claimed runs in ``register`` when there is one, else through the store ``send``
    (a ``start_many``)."""

    def __init__(self, send: Callable[[Sequence[Claim]], list[bool]], register: ClaimRegister | None) -> None:
        self._group = GroupStart[Claim](send)
        self._register = register

    def begin(self, run: Run) -> bool:
        """Record that ``run`` starts; ``False`` when the store found its claim superseded (do not run it).
        Raises what a store round trip raised."""
        claim = run.claim
        assert claim is not None
        if self._register is not None and self._register.running(claim.job_id, claim.token):
            return True
        run.recorded = True
        return self._group.start(claim)

    def end(self, run: Run) -> None:
        """``run``'s task has returned: no crash to charge it with from now on (its claim may still be held
        until its completion mark lands)."""
        if self._register is not None and run.claim is not None:
            self._register.running(run.claim.job_id, run.claim.token, now=False)
