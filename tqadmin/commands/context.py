"""What every command gets: resolved settings, output mode, and helpers to connect and to audit."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from tqadmin import audit
from tqadmin.config import Settings
from tqadmin.errors import ExitCode, NoDatabase
from tqadmin.plugin.base import BrokerAdmin, BrokerConfig, BrokerPlugin
from tqadmin.plugin.models import ActionReport
from tqadmin.plugin.registry import plugin_for_url
from tqadmin.tables import printable


@dataclass(slots=True)
class CommandContext:
    settings: Settings
    json_output: bool = False

    def broker_config(self) -> BrokerConfig:
        return self.settings.broker_config()

    def plugin(self) -> BrokerPlugin:
        return plugin_for_url(self.settings.broker_url)

    def admin(self) -> BrokerAdmin:
        """Connect the admin face of the configured broker."""
        return self.plugin().admin(self.broker_config())

    def emit(self, document: dict[str, Any], human: Callable[[], str]) -> None:
        """Print ``document`` as JSON with ``--json``, otherwise the human rendering."""
        if self.json_output:
            print(json.dumps(document, default=str))
        else:
            text = human()
            if text:
                print(text)

    def progress(self, text: str) -> None:
        """Progress goes to stderr so that stdout stays one parseable document."""
        print(text, file=sys.stderr, flush=True)

    def unless_fresh(self, missing: NoDatabase) -> None:
        """Carry on with empty results on a fresh machine (the embedded default not created yet), saying
        where the file will be on stderr; re-raise for a file the user named (exit 3, naming it)."""
        note = self.settings.not_created_yet(missing)
        if note is None:
            raise missing
        self.progress(note)

    def finish(self, report: ActionReport) -> int:
        """Audit, print and pick the exit code of an admin action."""
        outcome = "dry_run" if report.dry_run else ("ok" if report.complete else "partial")
        try:
            audit.append(
                self.settings.audit_log,
                profile=self.settings.profile,
                action=report.action,
                target=report.target or report.source,
                count=report.count,
                outcome=outcome,
                extra={"source": report.source, "dry_run": report.dry_run, "failed": report.failed},
            )
        except OSError as exc:  # the action happened: still say what it did
            self.progress(
                f"tqadmin: warning: cannot append to the audit log {self.settings.audit_log}: {exc.strerror}"
            )
        self.emit(report.to_json(), lambda: describe_report(report))
        return int(ExitCode.OK if report.complete else ExitCode.PARTIAL)


def describe_report(report: ActionReport) -> str:
    parts = [f"{report.action}:"]
    if report.source:
        parts.append(printable(report.source))
    if report.target:
        parts.append(f"-> {printable(report.target)}")
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
        line += "\nnot done:\n  " + "\n  ".join(printable(item) for item in report.not_done)
    return line
