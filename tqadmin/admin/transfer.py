"""Move and replay, written once over :class:`~tqadmin.plugin.base.TransferSession` for every broker.

The safety rule lives here, not in the plugins: a batch is fetched, its copies are published and confirmed,
and only then are its originals acked. Messages that are not moved (not matching the filter, past the limit,
without a target, already done) are never acked: they are held until the session closes and then released,
so they keep their place in the queue as far as the broker allows. Killed at any point, a rerun moves what is
left; the worst case is a duplicate of the last unacked batch, which the job id lets dedup absorb.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

from tqadmin.admin.scan import Deaths, no_deaths
from tqadmin.errors import PartialFailure, TqadminError
from tqadmin.frameworks import summarise
from tqadmin.plugin.base import Delivery, TransferSession, refuse_onto_itself
from tqadmin.plugin.models import (
    HEADER_ORIGINAL_QUEUE,
    HEADER_REPLAYS,
    HEADER_RETRY_COUNT,
    ActionReport,
    Message,
)
from tqadmin.plugin.pacing import Pacer

DEFAULT_WINDOW = 500
PROGRESS_EVERY_S = 1.0

ONTO_ITSELF = "its target is the queue it is in"

Route = Callable[[Message], str | None]
Progress = Callable[[str], None]


def _everything(_message: Message) -> bool:
    return True


def _unchanged(message: Message) -> Message:
    return message


@dataclass(frozen=True, slots=True)
class TransferPlan:
    """What to take from ``source``, where each message goes, and how fast.

    ``route`` names a message's target queue, or ``None`` when it has none (it then stays in the source and
    counts as failed). ``already_done`` receives job ids and returns those completed before (``--skip-done``):
    those stay in the source too.
    """

    action: str
    source: str
    route: Route
    target: str | None = None
    matches: Callable[[Message], bool] = _everything
    rewrite: Callable[[Message], Message] = _unchanged
    limit: int | None = None
    rate: float | None = None
    dry_run: bool = False
    already_done: Callable[[Sequence[str]], set[str]] | None = None
    window: int = DEFAULT_WINDOW
    unrouted_reason: str = "no target queue"

    def __post_init__(self) -> None:
        refuse_onto_itself(self.action, self.source, self.target)


@dataclass(slots=True)
class _Tally:
    matched: int = 0
    moved: int = 0
    failed: int = 0
    skipped: int = 0
    interrupted: bool = False
    reasons: Counter[str] = field(default_factory=Counter)


@dataclass(frozen=True, slots=True)
class TransferOutcome:
    """The report, and the error that stopped the run early if one did (its exit code wins)."""

    report: ActionReport
    error: TqadminError | None = None


def transfer(
    session: TransferSession, plan: TransferPlan, progress: Progress | None = None
) -> TransferOutcome:
    """Run ``plan`` over ``session``; never raises for a broker failure mid-run, it reports it instead."""
    tally = _Tally()
    pacer = Pacer(None if plan.dry_run else plan.rate)
    total = session.count_at_start()
    if progress:
        progress(f"{plan.action}: {total} message(s) in {plan.source} at start")
    last_report = time.monotonic()
    error: TqadminError | None = None
    try:
        while plan.limit is None or tally.matched < plan.limit:
            deliveries = session.fetch(pacer.batch_size(plan.window))
            if not deliveries:
                break
            chosen = _choose(deliveries, plan, tally)
            if not plan.dry_run and chosen:
                _move(session, chosen, plan, tally)
                pacer.took(len(chosen))
            if progress and time.monotonic() - last_report >= PROGRESS_EVERY_S:
                last_report = time.monotonic()
                progress(f"{plan.action}: {tally.moved} moved, {tally.matched} matched of {total}")
    except TqadminError as exc:
        error = exc
    except KeyboardInterrupt:
        # Ctrl-C: what was confirmed is acked, the rest goes back at close; say so instead of vanishing.
        tally.interrupted = True
        error = PartialFailure(
            f"{plan.action} interrupted after {tally.moved} message(s); the others are still in"
            f" {plan.source!r} (the last batch may arrive twice): rerun to continue"
        )
    finally:
        session.close()
    return TransferOutcome(_report(plan, tally), error)


def _choose(deliveries: Sequence[Delivery], plan: TransferPlan, tally: _Tally) -> list[tuple[str, Delivery]]:
    """The deliveries to move now, each with its target; the rest are held (released at close)."""
    matching: list[Delivery] = []
    for delivery in deliveries:
        if plan.limit is not None and tally.matched >= plan.limit:
            break
        if plan.matches(delivery.message):
            tally.matched += 1
            matching.append(delivery)
    if plan.already_done is not None and not plan.dry_run:
        ids = [d.message.id for d in matching if d.message.id is not None]
        done = plan.already_done(ids) if ids else set()
        tally.skipped += sum(1 for d in matching if d.message.id in done)
        matching = [d for d in matching if d.message.id not in done]
    chosen: list[tuple[str, Delivery]] = []
    for delivery in matching:
        target = plan.route(delivery.message)
        if target is None or target == plan.source:
            tally.failed += 1
            tally.reasons[plan.unrouted_reason if target is None else ONTO_ITSELF] += 1
        else:
            chosen.append((target, delivery))
    return chosen


def _move(
    session: TransferSession, chosen: list[tuple[str, Delivery]], plan: TransferPlan, tally: _Tally
) -> None:
    try:
        session.publish_confirmed([(target, plan.rewrite(d.message)) for target, d in chosen])
    except TqadminError:
        tally.failed += len(chosen)
        raise
    session.ack([d for _, d in chosen])
    tally.moved += len(chosen)


def _report(plan: TransferPlan, tally: _Tally) -> ActionReport:
    not_done = tuple(
        f"{count} message(s) left in {plan.source}: {reason}"
        for reason, count in sorted(tally.reasons.items())
    ) + (("interrupted (Ctrl-C) before the end",) if tally.interrupted else ())
    detail = f"skipped {tally.skipped} already done (left in {plan.source})" if tally.skipped else ""
    return ActionReport(
        action=plan.action,
        source=plan.source,
        target=plan.target,
        matched=tally.matched,
        moved=0 if plan.dry_run else tally.moved,
        failed=tally.failed,
        dry_run=plan.dry_run,
        not_done=not_done,
        detail=detail,
    )


def to_queue(target: str) -> Route:
    """Every message goes to ``target``."""
    return lambda _message: target


def original_queue(message: Message, deaths: Deaths = no_deaths) -> str | None:
    """Where a dead-lettered message came from: the header the worker writes, else the queue of the broker's
    latest record of its death (a message dead-lettered by the broker itself carries only that)."""
    value = message.headers.get(HEADER_ORIGINAL_QUEUE) or summarise(message).sent_to  # its framework's queue
    if isinstance(value, bytes):
        value = value.decode("utf-8", "replace")
    if not value:
        latest = next(iter(deaths(message)), None)
        value = latest.queue if latest is not None else None
    return str(value) if value else None


def replay_route(to: str | None, deaths: Deaths = no_deaths) -> Route:
    """``--to`` when given, otherwise the message's original queue."""
    return to_queue(to) if to else lambda message: original_queue(message, deaths)


def count_replay(message: Message) -> Message:
    """The copy sent back by replay: header ``x-tq-replays`` plus one and the worker's retry count dropped
    (a replayed job gets its whole retry budget again); the body and everything else untouched."""
    headers = {k: v for k, v in message.headers.items() if k != HEADER_RETRY_COUNT}
    try:
        replays = int(headers.get(HEADER_REPLAYS, 0))
    except (TypeError, ValueError):
        replays = 0
    headers[HEADER_REPLAYS] = replays + 1
    return replace(message, headers=headers)
