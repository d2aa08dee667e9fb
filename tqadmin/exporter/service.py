"""The exporter as one object: a poller thread a profile and the ``/metrics`` endpoint over their readings.

Used by ``tqadmin exporter`` and by ``tqadmin demo``, which serves it beside the dashboard. The port is bound
before anything polls, so a port in use is an error before the first byte is served (exit 2).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from types import TracebackType

from prometheus_client.core import Metric

from tqadmin.exporter.polling import ProfilePoller, Served
from tqadmin.exporter.series import fold, health_families, reading_families
from tqadmin.telemetry import metric_names as names
from tqadmin.telemetry.endpoint import MetricsServer, address

log = logging.getLogger("tqadmin.exporter")

DEFAULT_PORT = 9808
DEFAULT_LISTEN = f"127.0.0.1:{DEFAULT_PORT}"
DEFAULT_INTERVAL_S = 5.0  # RabbitMQ's own statistics refresh: polling faster reads the same figures
DEFAULT_MAX_QUEUES = 2000
STOP_WAIT_S = 5.0  # the most a stop waits: for a history write, a scrape, polls (docs/exporter.md)


class Exporter:
    def __init__(
        self,
        pollers: Sequence[ProfilePoller],
        host: str,
        port: int,
        max_queues: int = DEFAULT_MAX_QUEUES,
        option: str = "--listen",
    ) -> None:
        self.pollers = tuple(pollers)
        self.max_queues = max_queues
        self._server = MetricsServer(host, port, self.health, option, stable=self.polled)
        self.host = host
        self._stop = threading.Event()
        self._threads = [
            threading.Thread(target=p.run, args=(self._stop,), name=f"tq-exporter-{p.profile}", daemon=True)
            for p in self.pollers
        ]
        self._folded_said: dict[str, int] = {}
        self.left_running: tuple[str, ...] = ()  # profiles whose poll was still under way when it stopped
        self._said_lock = threading.Lock()

    @property
    def port(self) -> int:
        return self._server.port

    @property
    def url(self) -> str:
        return f"http://{address(self.host, self.port)}/metrics"

    def health(self) -> list[Metric]:
        """Up, poll age and poll figures as of the scrape. No broker is asked: scrapes cost them nothing."""
        return health_families([poller.reading() for poller in self.pollers], time.time())

    def polled(self) -> tuple[tuple[int, ...], Callable[[], list[Metric]]]:
        """The last readings' version and their families, which the endpoint encodes once per version."""
        readings = [poller.reading() for poller in self.pollers]
        return tuple(r.version for r in readings), lambda: self._families(readings)

    def _families(self, readings: list[Served]) -> list[Metric]:
        folded = fold(readings, self.max_queues)
        self._say_folded({profile: len(f.other_queues) for profile, f in folded.items()})
        return reading_families(readings, folded)

    def _say_folded(self, counts: dict[str, int]) -> None:
        """One line when a profile's queues start to be folded, or their number changes."""
        with self._said_lock:
            for profile, count in counts.items():
                if count != self._folded_said.get(profile, 0):
                    log.warning(
                        "profile %s: %d queues past --max-queues %d are summed into queue=%r",
                        profile,
                        count,
                        self.max_queues,
                        names.OTHER_QUEUES,
                    )
                self._folded_said[profile] = count

    def __enter__(self) -> Exporter:
        self._server.__enter__()
        for thread in self._threads:
            thread.start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        """Stop within :data:`STOP_WAIT_S` whatever the polls are doing. No poll and no history write
        starts after this; a history write under way is waited for (each one is done or not started);
        the endpoint stops; a poll still under way at the end (a listing of 10,000 queues, a broker
        that does not answer) is not waited for: its profile is in :attr:`left_running`, and its thread
        is a daemon. A poll writes nothing but the history, so what it would have read is all it loses."""
        self._stop.set()
        deadline = time.monotonic() + STOP_WAIT_S

        def left() -> float:
            return max(deadline - time.monotonic(), 0.0)

        for poller in self.pollers:
            if not poller.stop_recording(left()):
                log.warning(
                    "profile %s: a history write was still under way when the exporter stopped",
                    poller.profile,
                )
        self._server.stop(left())
        for thread in self._threads:
            thread.join(timeout=left())
        for poller, thread in zip(self.pollers, self._threads, strict=True):
            if not thread.is_alive():
                poller.close()
        self.left_running = tuple(
            poller.profile
            for poller, thread in zip(self.pollers, self._threads, strict=True)
            if thread.is_alive()
        )
