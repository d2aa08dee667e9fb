"""Runs are recorded as started in the store before they start, the job threads' records sent together.

A crash is charged only to a job whose run had started when its worker died: the store must hear of the start
before the task runs (a poison job kills the process a moment later). That is a round trip before every run,
so the job threads share them: whichever thread needs one while none is on the wire sends every start waiting
then in one ``start_many``; the threads whose starts went out with it take their answers from it. With ``n``
threads finishing jobs faster than a round trip, a round trip carries up to ``n`` starts.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Generic, TypeVar

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
