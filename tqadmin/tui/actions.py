"""Keyboard actions as calls into the same admin engine and audit log the CLI uses.

The TUI decides *whether* an action may run (read-only profile, broker capability), asks for confirmation
and shows progress; moving messages safely is :mod:`tqadmin.admin`'s job and is not reimplemented here.
Progress and cancel come from watching the engine's :class:`TransferSession`: every ack (or, for export,
every fetch) is counted, and a cancelled run sees an empty fetch, which the engine treats as the end of the
queue, so it stops between batches with everything unconfirmed still in the source.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from tqadmin import audit
from tqadmin.admin.filters import parse_filter
from tqadmin.admin.scan import Deaths, export
from tqadmin.admin.transfer import TransferPlan, count_replay, replay_route, to_queue, transfer
from tqadmin.config import Settings
from tqadmin.errors import TqadminError, UsageError
from tqadmin.plugin.base import BrokerAdmin, Delivery, TransferSession
from tqadmin.plugin.capabilities import Capabilities, Operation
from tqadmin.plugin.models import ActionReport, Message

WRITES = frozenset({"replay", "move", "purge"})
WHOLE_QUEUE = frozenset({"purge", "export"})
NO_ORIGIN = "no x-tq-original-queue header and no target queue given"
Progress = Callable[[int, int | None], None]


@dataclass(frozen=True, slots=True)
class ActionRequest:
    """What the user asked for; ``target`` is the destination queue or, for export, the file, which
    replaces an existing file only with ``force`` (the dialog asks first)."""

    action: str
    source: str
    target: str | None = None
    filter: str | None = None
    force: bool = False

    @property
    def needs_target(self) -> bool:
        return self.action in {"move", "export"}


def refusal(
    request: ActionRequest, settings: Settings, capabilities: Capabilities, queue_read_only: str | None = None
) -> str | None:
    """Why this action cannot run here, or ``None`` when it can; checked before anything is sent.
    ``queue_read_only`` is the broker's reason the source queue may be shown but not written
    (:attr:`QueueStats.read_only`: a queue another framework owns)."""
    if request.action in WRITES and settings.read_only:
        profile = f"profile {settings.profile!r}" if settings.profile else "this session"
        return f"{request.action} is disabled: {profile} is read-only"
    if request.action in WRITES and queue_read_only:
        return f"{request.action} is disabled for {request.source}: it is {queue_read_only}"
    if request.filter and request.action in WHOLE_QUEUE:
        return f"{request.action} applies to a whole queue, not a group: Tab back to the queue list first"
    operation = Operation(request.action)
    if not capabilities.supports(operation):
        return f"{request.action} is disabled: {capabilities.why_not(operation)}"
    return None


class WatchedSession(TransferSession):
    """Counts progress through a session and ends it early on cancel; everything else is delegated."""

    def __init__(self, inner: TransferSession, progress: Progress, cancel: threading.Event, *, acks: bool):
        self.inner = inner
        self.progress = progress
        self.cancel = cancel
        self.count_acks = acks
        self.done = 0
        self.total: int | None = None
        self.cancelled = False

    def count_at_start(self) -> int:
        self.total = self.inner.count_at_start()
        self.progress(0, self.total)
        return self.total

    def fetch(self, limit: int) -> Sequence[Delivery]:
        if self.cancel.is_set():
            self.cancelled = True
            return ()
        batch = self.inner.fetch(limit)
        if not self.count_acks:
            self._advance(len(batch))
        return batch

    def publish_confirmed(self, items: Sequence[tuple[str, Message]]) -> None:
        self.inner.publish_confirmed(items)

    def ack(self, deliveries: Sequence[Delivery]) -> None:
        self.inner.ack(deliveries)
        if self.count_acks:
            self._advance(len(deliveries))

    def release(self, deliveries: Sequence[Delivery]) -> None:
        self.inner.release(deliveries)

    def close(self) -> None:
        self.inner.close()

    def _advance(self, n: int) -> None:
        self.done += n
        self.progress(self.done, self.total)


def _transfer_plan(request: ActionRequest, dry_run: bool, deaths: Deaths) -> TransferPlan:
    matches = parse_filter(request.filter)
    if request.action == "replay":
        return TransferPlan(
            action="replay",
            source=request.source,
            target=request.target,
            route=replay_route(request.target, deaths),
            matches=matches,
            rewrite=count_replay,
            dry_run=dry_run,
            unrouted_reason=NO_ORIGIN,
        )
    if request.target is None:
        raise UsageError(f"{request.action} needs a target queue")
    return TransferPlan(
        action="move",
        source=request.source,
        target=request.target,
        route=to_queue(request.target),
        matches=matches,
        dry_run=dry_run,
    )


def plan(admin: BrokerAdmin, request: ActionRequest) -> ActionReport:
    """The dry run: how many messages the action would touch, with nothing changed."""
    if request.action in {"replay", "move"}:
        outcome = transfer(
            admin.open_transfer(request.source), _transfer_plan(request, dry_run=True, deaths=admin.deaths)
        )
        if outcome.error is not None:
            raise outcome.error
        return outcome.report
    with admin.open_transfer(request.source) as session:
        count = session.count_at_start()
    return ActionReport(request.action, request.source, request.target, matched=count, dry_run=True)


def execute(
    admin: BrokerAdmin, request: ActionRequest, progress: Progress, cancel: threading.Event
) -> ActionReport:
    """Run the action for real; raises the error that stopped it, after its partial report is audited."""
    if request.action == "purge":
        purged = admin.purge(request.source)
        progress(purged, purged)
        return ActionReport("purge", request.source, request.source, matched=purged, purged=purged)
    watched = WatchedSession(
        admin.open_transfer(request.source), progress, cancel, acks=request.action != "export"
    )
    if request.action == "export":
        path = Path(request.target or f"{request.source}.jsonl")
        report = export(watched, request.source, path, force=request.force)
        return _cancelled(report, watched, request) if watched.cancelled else report
    outcome = transfer(watched, _transfer_plan(request, dry_run=False, deaths=admin.deaths))
    report = _cancelled(outcome.report, watched, request) if watched.cancelled else outcome.report
    if outcome.error is not None:
        raise PartialAction(report, outcome.error)
    return report


class PartialAction(TqadminError):
    """The engine stopped on an error after doing part of the work; ``report`` says how much."""

    def __init__(self, report: ActionReport, error: TqadminError) -> None:
        super().__init__(f"{error} (after {summary(report)})")
        self.report = report


def _cancelled(report: ActionReport, watched: WatchedSession, request: ActionRequest) -> ActionReport:
    note = f"cancelled after {watched.done} of {watched.total}; the rest stay in {request.source}"
    return replace(report, not_done=(*report.not_done, note))


def record(settings: Settings, report: ActionReport, outcome: str | None = None) -> None:
    """Audit one action with the CLI's record shape, in the same file."""
    if outcome is None:
        outcome = "dry_run" if report.dry_run else ("ok" if report.complete else "partial")
    audit.append(
        settings.audit_log,
        profile=settings.profile,
        action=report.action,
        target=report.target or report.source,
        count=report.count,
        outcome=outcome,
        extra={"source": report.source, "dry_run": report.dry_run, "failed": report.failed, "via": "tui"},
    )


def summary(report: ActionReport) -> str:
    verb = {"purge": "purged", "export": "exported"}.get(report.action, "moved")
    done = report.purged if report.action == "purge" else report.moved
    text = f"{report.action} {report.source}: {verb} {done} of {report.matched}"
    if report.failed:
        text += f", {report.failed} failed"
    for note in report.not_done:
        text += f"; {note}"
    return text
