"""The audit record of an admin action: one shape for every action and both faces, publish included.

``time``, ``profile``, ``action``, ``target`` (the queue written, or the source when there is none),
``count``, ``outcome`` (docs/interface.md), then ``source``, ``dry_run``, ``failed`` and ``via`` (``cli``
or ``tui``), so a reader of the log never has to know which face wrote a line.
"""

from __future__ import annotations

from typing import Literal

from tqadmin.config import Settings
from tqadmin.files import audit
from tqadmin.plugin.models import ActionReport

Face = Literal["cli", "tui"]


def outcome_of(report: ActionReport) -> str:
    """``dry_run``, ``ok`` when everything was done, otherwise ``partial``."""
    if report.dry_run:
        return "dry_run"
    return "ok" if report.complete else "partial"


def record_action(
    settings: Settings, report: ActionReport, via: Face, outcome: str | None = None
) -> str | None:
    """Append the record; ``outcome`` overrides :func:`outcome_of` (``error`` when a run stopped, ``failed``
    when a publish was not confirmed). The action happened whatever becomes of its record, so a log that
    cannot be appended to is not an error: the warning to show is returned instead (``None`` when written).
    """
    try:
        audit.append(
            settings.audit_log,
            profile=settings.profile,
            action=report.action,
            target=report.target or report.source,
            count=report.count,
            outcome=outcome or outcome_of(report),
            extra={"source": report.source, "dry_run": report.dry_run, "failed": report.failed, "via": via},
        )
    except OSError as exc:
        return f"cannot append to the audit log {settings.audit_log}: {exc.strerror}"
    return None
