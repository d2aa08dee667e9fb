"""The connection state the banner shows and the app's poller advances."""

from __future__ import annotations

from dataclasses import dataclass, replace

from tqadmin.plugin.models import Alarm
from tqadmin.reading.deadline import PollDeadline


@dataclass(frozen=True, slots=True)
class PollState:
    """``error`` is the last poll's failure (``None`` when it succeeded); data older than that is stale.
    ``note`` is what the last good poll had to add (a fresh machine: where the embedded file will be).
    ``no_answer`` says the poll under way is past its deadline (:mod:`tqadmin.reading.deadline`): what is
    shown is stale already, while the call still hangs."""

    target: str
    last_ok: float | None = None
    error: str | None = None
    failures: int = 0
    retry_in_s: float = 0.0
    alarms: tuple[Alarm, ...] = ()
    read_only: bool = False
    production: bool = False
    note: str | None = None
    no_answer: str | None = None

    @property
    def stale(self) -> bool:
        return self.error is not None or self.no_answer is not None

    def succeeded(self, at: float, alarms: tuple[Alarm, ...], note: str | None = None) -> PollState:
        return replace(
            self, last_ok=at, error=None, failures=0, retry_in_s=0.0, alarms=alarms, note=note, no_answer=None
        )

    def failed(self, error: str, retry_in_s: float) -> PollState:
        return replace(self, error=error, failures=self.failures + 1, retry_in_s=retry_in_s, no_answer=None)

    def overdue(self, deadline: PollDeadline) -> PollState:
        """Marked stale while the poll under way is past its deadline (the dashboard's timer asks)."""
        said = deadline.no_answer()
        return self if said == self.no_answer else replace(self, no_answer=said)
