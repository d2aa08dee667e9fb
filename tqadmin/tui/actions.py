"""Keyboard actions as calls into the action service the CLI uses (:mod:`tqadmin.admin`).

The service decides whether an action may run (:mod:`tqadmin.admin.gate`: read-only profile, audit log,
broker capability, queues another framework owns), which path a move or a replay takes (the broker's own
move or redrive where the CLI takes it: :mod:`tqadmin.admin.paths`), writes the report sentence and the
audit record. This module only turns the dialog's input into the service's request, and watches the client
path's :class:`TransferSession` for progress and cancel: every ack (or, for export, every fetch) is counted,
and a cancelled run sees an empty fetch, which the engine treats as the end of the queue, so it stops
between batches with everything unconfirmed still in the source.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from tqadmin.admin import gate
from tqadmin.admin.paths import run_transfer
from tqadmin.admin.plans import TRANSFERS, TransferRequest
from tqadmin.admin.purge import purge
from tqadmin.admin.reports import describe_report
from tqadmin.admin.scan import export
from tqadmin.config import Settings
from tqadmin.errors import QueueReadOnly, ReadOnly, TqadminError
from tqadmin.plugin.base import BrokerAdmin, Delivery, TransferSession
from tqadmin.plugin.capabilities import Capabilities
from tqadmin.plugin.models import ActionReport, Message

WHOLE_QUEUE = frozenset({"purge", "export"})
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

    def transfer(self, *, dry_run: bool) -> TransferRequest:
        """The service's request for a move or a replay; the service chooses the path, as for the CLI."""
        return TransferRequest(self.action, self.source, self.target, self.filter, dry_run=dry_run)


def refusal(
    request: ActionRequest, settings: Settings, capabilities: Capabilities, queue_read_only: str | None = None
) -> str | None:
    """Why this action cannot run here, or ``None`` when it can; checked before anything is sent.
    ``queue_read_only`` is the broker's reason the source queue may be shown but not written
    (:attr:`QueueStats.read_only`: a queue another framework owns)."""
    try:
        gate.check_before(settings, capabilities, request.action, [(request.source, queue_read_only)])
    except ReadOnly:
        profile = f"profile {settings.profile!r}" if settings.profile else "this session"
        return f"{request.action} is disabled: {profile} is read-only"
    except QueueReadOnly as refused:
        return f"{request.action} is disabled for {refused.queue}: it is {refused.reason}"
    except TqadminError as refused:  # the audit log, or an operation the broker lacks
        return f"{request.action} is disabled: {refused}"
    if request.filter and request.action in WHOLE_QUEUE:
        return f"{request.action} applies to a whole queue, not a group: Tab back to the queue list first"
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


def _unsaid(_line: str) -> None:
    """The service's progress lines: the dialog shows a bar instead."""


def plan(admin: BrokerAdmin, request: ActionRequest) -> ActionReport:
    """The dry run: how many messages the action would touch, with nothing changed."""
    if request.action in TRANSFERS:
        outcome = run_transfer(admin, request.transfer(dry_run=True), _unsaid)
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
        report = purge(admin, request.source)
        progress(report.purged, report.purged)
        return report
    sessions: list[WatchedSession] = []

    def watched(session: TransferSession) -> TransferSession:
        sessions.append(WatchedSession(session, progress, cancel, acks=request.action != "export"))
        return sessions[-1]

    if request.action == "export":
        path = Path(request.target or f"{request.source}.jsonl")
        report = export(
            watched(admin.open_transfer(request.source)), request.source, path, force=request.force
        )
        return _cancelled(report, sessions[0], request) if sessions[0].cancelled else report
    outcome = run_transfer(admin, request.transfer(dry_run=False), _unsaid, watch=watched)
    report = outcome.report
    if not sessions:  # the broker moved them itself: no batches to count
        progress(report.moved, report.matched)
    elif sessions[0].cancelled:
        report = _cancelled(report, sessions[0], request)
    if outcome.error is not None:
        raise PartialAction(report, outcome.error)
    return report


class PartialAction(TqadminError):
    """The engine stopped on an error after doing part of the work; ``report`` says how much."""

    def __init__(self, report: ActionReport, error: TqadminError) -> None:
        super().__init__(f"{error} (after {describe_report(report)})")
        self.report = report


def _cancelled(report: ActionReport, watched: WatchedSession, request: ActionRequest) -> ActionReport:
    note = f"cancelled after {watched.done} of {watched.total}; the rest stay in {request.source}"
    return replace(report, not_done=(*report.not_done, note))
