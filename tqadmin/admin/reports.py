"""The sentence that says what an admin action did, the same in the CLI's output and the dashboard's
notification: the figures that apply to the action, a dry run said as such, and every part not done."""

from __future__ import annotations

from tqadmin.plugin.models import ActionReport
from tqadmin.show.broker_text import escaped


def describe_report(report: ActionReport) -> str:
    """``move: a -> b matched 3, moved 3, failed 0``, then a ``not done:`` line per part left undone."""
    parts = [f"{report.action}:"]
    if report.source:
        parts.append(escaped(report.source))
    if report.target:
        parts.append(f"-> {escaped(report.target)}")
    figures = [f"matched {report.matched}"]
    if report.action == "purge":
        figures.append(f"purged {report.purged}")
    elif report.action == "delete":
        figures.append(f"deleted {report.moved}")
    else:
        figures.append(f"moved {report.moved}")
    figures.append(f"failed {report.failed}")
    line = (
        " ".join(parts) + " " + ", ".join(figures) + (" (dry run: nothing changed)" if report.dry_run else "")
    )
    if report.not_done:
        line += "\nnot done:\n  " + "\n  ".join(escaped(item) for item in report.not_done)
    return line
