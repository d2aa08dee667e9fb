"""Dashboard cost: time to first paint, per-refresh cost, and memory over time.

    python bench/tui.py                 # 1,000 and 10,000 queues; 0.5 minute of 1 Hz refresh for RSS
    python bench/tui.py --minutes 10    # the full memory run

First paint is measured through the real RabbitMQ plugin against the fake management API (HTTP, JSON,
paging) and through the seeded memory broker. Per-refresh cost is the UI-thread work of one poll (fold into
the board, re-sort, repaint) with this app's virtual table, against the alternative measured in the same
run: refilling Textual's DataTable with the same rows. Nothing here is a test assertion.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from textual.widgets import DataTable
from tqadmin_rabbitmq.admin import RabbitMQAdmin

from tests.support.management_api import FakeManagementAPI
from tests.tui.seeding import SeededAdmin
from tqadmin.config import Settings
from tqadmin.plugin.base import BrokerAdmin, BrokerConfig
from tqadmin.tui.app import TqadminApp
from tqadmin.tui.widgets.queue_table import COLUMNS, QueueTable

SIZE = (160, 50)
AMQP_URL = "amqp://guest:guest@127.0.0.1:5672/%2F"


def rss_mib() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def make_app(admin: BrokerAdmin, refresh_s: float = 3600.0) -> TqadminApp:
    settings = Settings(broker_url=AMQP_URL, audit_log=Path("/dev/null"))
    return TqadminApp(settings=settings, admin_factory=lambda _s: admin, refresh_s=refresh_s)


async def first_paint(admin: BrokerAdmin, count: int) -> float:
    """Seconds from starting the app to the table holding every queue, rendered."""
    app = make_app(admin)
    start = time.perf_counter()
    async with app.run_test(size=SIZE) as pilot:
        while app.screen.query_one(QueueTable).row_count < count:
            await pilot.pause(0.01)
        await pilot.pause()
        return time.perf_counter() - start


async def refresh_cost(count: int, rounds: int = 5) -> tuple[float, float]:
    """Median UI-thread seconds of one poll: this app's virtual table vs. refilling a Textual DataTable
    (the alternative), both fed the same changing listing."""
    fake = SeededAdmin(extra=count - 4)
    app = make_app(fake)
    async with app.run_test(size=SIZE) as pilot:
        table = app.screen.query_one(QueueTable)
        while table.row_count < len(fake.messages):
            await pilot.pause(0.01)
        grid: DataTable[str] = DataTable()
        await app.screen.mount(grid, before=table)
        grid.add_columns(*(c.label for c in COLUMNS))
        virtual, datatable = [], []
        for _ in range(rounds):
            fake.step()
            listing = fake.list_queues()
            start = time.perf_counter()
            app.board.apply(listing)
            table.sync(app.board, app.settings.thresholds)
            await pilot.pause()
            virtual.append(time.perf_counter() - start)
            start = time.perf_counter()
            grid.clear()
            grid.add_rows([c.fmt(q) for c in COLUMNS] for q in listing.queues)
            await pilot.pause()
            datatable.append(time.perf_counter() - start)
        return statistics.median(virtual), statistics.median(datatable)


async def memory(minutes: float, count: int) -> tuple[float, float, float, int]:
    """RSS after the first minute's worth of polls and at the end of ``minutes`` of 1 Hz refresh."""
    fake = SeededAdmin(extra=count - 4)

    original = fake.list_queues

    def drifting() -> Any:
        fake.step()
        return original()

    fake.list_queues = drifting  # type: ignore[method-assign]
    app = make_app(fake, refresh_s=1.0)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause(min(10.0, minutes * 60 / 3))
        gc.collect()
        early = rss_mib()
        await pilot.pause(max(0.0, minutes * 60 - min(10.0, minutes * 60 / 3)))
        gc.collect()
        late = rss_mib()
        polls = fake.calls.count("list_queues")
    return early, late, late - early, polls


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--minutes", type=float, default=0.5, help="length of the 1 Hz memory run")
    parser.add_argument("--sizes", type=int, nargs="+", default=[1_000, 10_000])
    parser.add_argument("--memory-queues", type=int, default=1_000, help="queues during the memory run")
    args = parser.parse_args()

    print(
        f"{'queues':>7} | {'first paint (mgmt API)':>22} | {'first paint (memory)':>24} | "
        f"{'refresh: virtual table':>22} | {'refresh: DataTable':>18} | {'DataTable/virtual':>17}"
    )
    print("-" * 118)
    for count in args.sizes:
        with FakeManagementAPI() as api:
            api.seed(count, prefix="bench-", ready=5, publish_rate=1.5)
            admin = RabbitMQAdmin(BrokerConfig(AMQP_URL, 30.0, {"management_url": api.url}))
            paint_http = asyncio.run(first_paint(admin, count))
        paint_fake = asyncio.run(first_paint(SeededAdmin(extra=count - 4), count + 4))
        virtual, datatable = asyncio.run(refresh_cost(count))
        print(
            f"{count:>7,} | {paint_http:>20.2f} s | {paint_fake:>22.2f} s | {virtual * 1000:>19.1f} ms | "
            f"{datatable * 1000:>15.1f} ms | {datatable / virtual:>16.1f}x"
        )
    early, late, growth, polls = asyncio.run(memory(args.minutes, args.memory_queues))
    print()
    print(
        f"memory, {args.memory_queues:,} queues, {args.minutes:g} min of 1 Hz refresh ({polls} polls): "
        f"RSS {early:.1f} MiB early -> {late:.1f} MiB at the end ({growth:+.1f} MiB)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
