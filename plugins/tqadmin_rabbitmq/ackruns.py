"""Which acks of one channel can go out as a single ``basic.ack`` with ``multiple=True``.

A multiple ack of tag ``N`` acks every delivery of the channel up to ``N`` that the broker still counts as
unacked, so it is only safe while none of those is a job still running, waiting for the confirm of its
retry or dead-letter copy, or about to be given back: acking one of them would lose it. What is safe is
read from the deliveries not settled yet, kept in delivery order (which is tag order): every ack asked for
below the lowest of them is covered by one multiple ack of the highest such tag; the acks above it go out
one by one. A delivery settled by another frame (a nack that requeues it, the ack that follows a copy's
confirm) is no longer unacked on the broker, so it leaves the record and a later multiple ack may reach
past it without touching it.

Tags count from 1 on every channel, so a consumer keeps one of these per channel and starts a fresh one
with each. Used on the consumer's I/O thread only: no lock.
"""

from __future__ import annotations

from collections.abc import Iterable


class AckRuns:
    """The deliveries of one channel not settled yet, and how the acks asked for go out."""

    __slots__ = ("_open",)

    def __init__(self) -> None:
        # Insertion order is delivery order, so the first key is the lowest tag not settled (a dict, not a
        # set, for that order; the values mean nothing).
        self._open: dict[int, None] = {}

    def __len__(self) -> int:
        return len(self._open)

    def delivered(self, tag: int) -> None:
        """The broker delivered ``tag`` (tags arrive in increasing order on a channel)."""
        self._open[tag] = None

    def settled(self, tag: int) -> None:
        """``tag`` was settled by a frame of its own (a nack, or an ack sent on its own)."""
        self._open.pop(tag, None)

    def acked(self, tags: Iterable[int]) -> tuple[int | None, list[int]]:
        """The acks of ``tags`` as frames to send: the tag of one multiple ack (``None`` when there is none)
        and the tags to ack one by one; all of them count as settled from now on.

        A tag this record does not hold (never delivered on this channel, or settled already) is acked on
        its own, as it would have been without batching: a multiple ack must not be built on it.
        """
        known: list[int] = []
        alone: list[int] = []
        for tag in tags:
            if tag in self._open:
                del self._open[tag]
                known.append(tag)
            else:
                alone.append(tag)
        lowest_open = next(iter(self._open), None)
        if lowest_open is None:
            covered, above = known, []
        else:
            covered = [t for t in known if t < lowest_open]
            above = [t for t in known if t > lowest_open]
        if len(covered) < 2:  # one frame either way: keep it a plain ack
            return None, alone + known
        return max(covered), alone + above
