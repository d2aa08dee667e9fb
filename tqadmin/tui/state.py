"""The connection state the banner shows and the app's poller advances."""

from __future__ import annotations

from dataclasses import dataclass, replace

from tqadmin.plugin.models import Alarm


@dataclass(frozen=True, slots=True)
class PollState:
    """``error`` is the last poll's failure (``None`` when it succeeded); data older than that is stale."""

    target: str
    last_ok: float | None = None
    error: str | None = None
    failures: int = 0
    retry_in_s: float = 0.0
    alarms: tuple[Alarm, ...] = ()
    read_only: bool = False
    production: bool = False

    @property
    def stale(self) -> bool:
        return self.error is not None

    def succeeded(self, at: float, alarms: tuple[Alarm, ...]) -> PollState:
        return replace(self, last_ok=at, error=None, failures=0, retry_in_s=0.0, alarms=alarms)

    def failed(self, error: str, retry_in_s: float) -> PollState:
        return replace(self, error=error, failures=self.failures + 1, retry_in_s=retry_in_s)
