"""The exporter served beside the demo, so the run can be scraped as production would be
(``tqadmin exporter``, docs/exporter.md): on 127.0.0.1:9808, or a free port when another exporter has it."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

from tqadmin.config import Settings
from tqadmin.errors import UsageError
from tqadmin.exporter.polling import ProfilePoller
from tqadmin.exporter.service import DEFAULT_INTERVAL_S, DEFAULT_PORT, Exporter

HOST = "127.0.0.1"


@contextmanager
def serve_metrics(settings: Settings, cron_namespace: str, progress: Callable[[str], None]) -> Iterator[str]:
    """Serve the demo's profile while the block runs; yields the URL, said once through ``progress``."""
    poller = ProfilePoller(settings, DEFAULT_INTERVAL_S, cron_namespace=cron_namespace)
    try:
        exporter = Exporter([poller], HOST, DEFAULT_PORT, option="a free port")
    except UsageError:  # an exporter of the user's own runs there: any free port will do
        exporter = Exporter([poller], HOST, 0)
    with exporter:
        progress(f"Prometheus metrics of this run at {exporter.url} (what tqadmin exporter serves)")
        yield exporter.url
