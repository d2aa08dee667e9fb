"""What every command gets: resolved settings, output mode, and helpers to connect and to audit."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Unpack

from tqadmin.admin.records import record_action
from tqadmin.admin.reports import describe_report
from tqadmin.config import Settings
from tqadmin.errors import ExitCode, NoDatabase
from tqadmin.plugin.base import BrokerAdmin, BrokerConfig, BrokerPlugin
from tqadmin.plugin.models import ActionReport
from tqadmin.plugin.registry import plugin_for_url
from tqadmin.reading.reader import ProfileReader, ReaderOptions
from tqadmin.reading.reading import Part, ProfileReading
from tqadmin.show.finite import finite_json


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

    def read(
        self, parts: Iterable[Part], needed: Part | None = None, **options: Unpack[ReaderOptions]
    ) -> ProfileReading:
        """One reading of ``parts`` of the profile (:mod:`tqadmin.reading`), its connections closed after.
        When the ``needed`` part could not be read its error is raised (the command's exit code); on a fresh
        machine the note saying where the embedded file will be goes to stderr."""
        reader = ProfileReader(self.settings, **options)
        try:
            reading = reader.read(parts)
        finally:
            reader.close()
        if needed is not None:
            reading.raise_for(needed)
        if reading.note is not None:
            self.progress(reading.note)
        return reading

    def emit(self, document: dict[str, Any], human: Callable[[], str]) -> None:
        """Print ``document`` as JSON with ``--json``, otherwise the human rendering. The JSON is always
        valid: a number that is not finite (read from another framework's registry) is ``null``."""
        if self.json_output:
            print(json.dumps(finite_json(document), default=str, allow_nan=False))
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
        self.audit(report)
        self.emit(report.to_json(), lambda: describe_report(report))
        return int(ExitCode.OK if report.complete else ExitCode.PARTIAL)

    def audit(self, report: ActionReport, outcome: str | None = None) -> None:
        """Append the audit record; one that cannot be kept is a warning, since the action happened."""
        warning = record_action(self.settings, report, "cli", outcome)
        if warning is not None:
            self.progress(f"tqadmin: warning: {warning}")
