"""Keyboard actions as requests to the same admin engine and audit log the CLI uses.

The TUI decides *whether* an action may run (read-only profile, broker capability) and asks for
confirmation; moving messages safely is the engine's job (:mod:`tqadmin.admin`), never reimplemented here.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass

from tqadmin import audit
from tqadmin.config import Settings
from tqadmin.errors import TqadminError
from tqadmin.plugin.base import BrokerAdmin
from tqadmin.plugin.capabilities import Capabilities, Operation
from tqadmin.plugin.models import ActionReport

WRITES = frozenset({"replay", "move", "purge"})
Progress = Callable[[int, int | None], None]


class Cancelled(TqadminError):
    """The user pressed cancel; messages not yet confirmed stay in the source queue."""


@dataclass(frozen=True, slots=True)
class ActionRequest:
    """What the user asked for; ``target`` is the destination queue or, for export, the file."""

    action: str
    source: str
    target: str | None = None
    filter: str | None = None

    def describe(self) -> str:
        where = f" → {self.target}" if self.target else ""
        picked = f" where {self.filter}" if self.filter else ""
        return f"{self.action} {self.source}{where}{picked}"

    @property
    def needs_target(self) -> bool:
        return self.action in {"move", "export"}


def refusal(request: ActionRequest, settings: Settings, capabilities: Capabilities) -> str | None:
    """Why this action cannot run here, or ``None`` when it can; checked before anything is sent."""
    if request.action in WRITES and settings.read_only:
        profile = f"profile {settings.profile!r}" if settings.profile else "this session"
        return f"{request.action} is disabled: {profile} is read-only"
    operation = Operation(request.action)
    if not capabilities.supports(operation):
        return f"{request.action} is disabled: {capabilities.why_not(operation)}"
    return None


def plan(admin: BrokerAdmin, request: ActionRequest) -> ActionReport:
    """The dry run: how many messages the action would touch, with nothing changed."""
    from tqadmin.admin import engine

    return engine.run(admin, request.action, request.source, request.target, request.filter, dry_run=True)


def execute(
    admin: BrokerAdmin, request: ActionRequest, progress: Progress, cancel: threading.Event
) -> ActionReport:
    """Run the action for real; ``progress`` gets (done, total) and ``cancel`` stops it between batches."""
    from tqadmin.admin import engine

    def report_progress(done: int, total: int | None) -> None:
        if cancel.is_set():
            raise Cancelled(
                f"{request.action} cancelled after {done} messages; the rest stay where they were"
            )
        progress(done, total)

    return engine.run(
        admin, request.action, request.source, request.target, request.filter, progress=report_progress
    )


def record(settings: Settings, report: ActionReport) -> None:
    """Audit one action exactly as the CLI does (same record shape, same file)."""
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
    return text
