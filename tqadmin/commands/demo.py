"""`tqadmin demo`: the whole pipeline on the configured brokers with failures injected, on screen or headless.

Everything heavy (pika, redis, Textual) is imported only once the command runs, and the brokers are checked
before any process starts, so a missing RabbitMQ or Redis is one line saying what to start (exit 3).
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from pathlib import Path

from tqadmin.commands.arguments import fraction, positive
from tqadmin.commands.context import CommandContext
from tqadmin.config import Settings, plugin_environment
from tqadmin.demo.chaos import Chaos
from tqadmin.demo.cron import cron_commands, write_schedule
from tqadmin.demo.cron import namespace as cron_namespace
from tqadmin.demo.layout import plan
from tqadmin.demo.orchestrator import (
    Demo,
    Wiring,
    WorkerOptions,
    default_log_dir,
    stop_on_signals,
    worker_commands,
    worker_env,
)
from tqadmin.demo.processes import Supervisor
from tqadmin.demo.summary import Summary
from tqadmin.demo.traffic import Traffic
from tqadmin.errors import ExitCode, UsageError

HEADLESS_DURATION_S = 30.0
REPORT_EVERY_S = 5.0
PREFIX = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--no-ui", action="store_true", help="run headless and print a summary at the end")
    parser.add_argument(
        "--duration",
        type=positive(float),
        metavar="S",
        help=f"seconds to run (default {HEADLESS_DURATION_S:.0f} with --no-ui, else until you quit the UI)",
    )
    parser.add_argument(
        "--workers", type=positive(int), default=4, metavar="N", help="worker processes (default 4)"
    )
    parser.add_argument("--rate", type=positive(float), default=10.0, metavar="R", help="jobs a second (10)")
    parser.add_argument(
        "--failure-rate",
        type=fraction,
        default=0.1,
        metavar="F",
        help="injected failures, 0 to 1 (default 0.1): transient at F, fatal at F/5, timeouts at F/10",
    )
    parser.add_argument(
        "--queue-prefix",
        type=_prefix,
        default="demo",
        metavar="P",
        help="queue names start with P and the broker's separator (default demo: demo.images, demo.emails,"
        " ...; demo-images on SQS)",
    )
    parser.add_argument(
        "--seed", type=int, default=7, metavar="N", help="seed of the injected failures and the traffic (7)"
    )
    parser.add_argument(
        "--concurrency", type=positive(int), default=4, metavar="N", help="jobs each worker runs at once (4)"
    )
    parser.add_argument(
        "--job-timeout", type=positive(float), default=2.0, metavar="S", help="the workers' --job-timeout (2)"
    )
    parser.add_argument(
        "--drain",
        type=float,
        default=15.0,
        metavar="S",
        help="at the end, seconds to let the workers finish what is queued (default 15)",
    )


def run(args: argparse.Namespace, ctx: CommandContext) -> int:
    settings = ctx.settings
    settings.require_writable("demo")
    app_class = None if args.no_ui else _dashboard()
    plugin = ctx.plugin()
    layout = plan(args.queue_prefix, args.workers, plugin.dlq_name, plugin.name_separator)
    chaos = Chaos(failure_rate=args.failure_rate, seed=args.seed, slow_s=args.job_timeout + 1.0)

    from tqadmin.demo.wiring import connect

    wiring = connect(settings, plugin, layout)
    log_dir = default_log_dir(args.queue_prefix)
    urls = {
        "TQADMIN_BROKER_URL": settings.broker_url,
        "TQADMIN_STORE_URL": settings.store_url,
        **plugin_environment(settings),
    }
    options = WorkerOptions(concurrency=args.concurrency, job_timeout_s=args.job_timeout)
    env = worker_env(os.environ, urls, chaos)
    supervisor = Supervisor(worker_commands(layout, options), env, log_dir)
    cron = Supervisor(cron_commands(layout, write_schedule(layout, log_dir)), env, log_dir)
    demo = Demo(
        layout,
        wiring,
        supervisor,
        Traffic(layout, wiring.sink_factory, args.rate, args.seed),
        failure_rate=args.failure_rate,
        drain_s=args.drain,
        settle_s=options.backoff_cap_s + 0.5,
        log_dir=log_dir,
        progress=lambda text: ctx.progress(f"demo: {text}"),
        cron=cron,
    )
    from tqadmin.exporter.beside import serve_metrics

    with serve_metrics(settings, cron_namespace(layout), lambda text: ctx.progress(f"demo: {text}")) as url:
        if app_class is None:
            summary = _headless(args, ctx, demo, log_dir)
        else:
            summary = _on_the_dashboard(args, settings, demo, wiring, app_class)
    ctx.emit(
        {**summary.to_json(), "metrics_url": url},
        lambda: f"{summary.render()}\nPrometheus metrics were served at {url} (docs/exporter.md)",
    )
    return int(ExitCode.OK)


def _headless(args: argparse.Namespace, ctx: CommandContext, demo: Demo, log_dir: Path) -> Summary:
    duration = args.duration or HEADLESS_DURATION_S
    layout, cron = demo.layout, demo.cron
    ctx.progress(
        f"demo: {len(layout.worker_queues)} worker(s) on {', '.join(layout.queues)}, a cron of"
        f" {len(cron.children) if cron else 0} instances, "
        f"{args.rate:g} jobs/s for {duration:g} s (Ctrl-C stops early); worker logs in {log_dir}"
    )
    with stop_on_signals(demo):
        try:
            demo.start()
            demo.wait(duration, report_every_s=REPORT_EVERY_S)
        finally:
            summary = demo.finish()
    return summary


def _on_the_dashboard(
    args: argparse.Namespace, settings: Settings, demo: Demo, wiring: Wiring, app_class: type
) -> Summary:
    from tqadmin.demo.dashboard import run_with_dashboard
    from tqadmin.demo.focus import focused_factory
    from tqadmin.reading.connect import connect_admin

    telemetry = wiring.dashboard_telemetry() if wiring.dashboard_telemetry else None
    admin_factory = focused_factory(connect_admin, demo.layout)
    with stop_on_signals(demo):
        return run_with_dashboard(
            demo,
            lambda: app_class(
                settings=settings,
                telemetry=telemetry,
                admin_factory=admin_factory,
                cron_namespace=cron_namespace(demo.layout),
                pauses=True,
            ),
            args.duration,
        )


def _dashboard() -> type:
    """The TUI's app class, checked before anything starts so a missing TUI or terminal costs nothing."""
    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        raise UsageError("the dashboard needs a terminal; run `tqadmin demo --no-ui` for the headless demo")
    try:
        from tqadmin.tui import TqadminApp
    except ImportError as exc:
        raise UsageError(
            f"the dashboard cannot be opened ({exc}); run `tqadmin demo --no-ui` for the headless demo"
        ) from None
    return TqadminApp


def _prefix(text: str) -> str:
    if not PREFIX.match(text):
        raise argparse.ArgumentTypeError("letters, digits, '-' and '_' only (it starts every queue name)")
    return text
