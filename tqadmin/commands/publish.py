"""`tqadmin publish`: publish jobs durably, confirmed and mandatory, and report each one's fate."""

from __future__ import annotations

import argparse
import json
import os
from collections.abc import Mapping
from pathlib import Path

from tqadmin.admin import gate
from tqadmin.commands.arguments import add_force, positive
from tqadmin.commands.context import CommandContext
from tqadmin.errors import ExitCode, PartialFailure, TqadminError, UsageError
from tqadmin.pipeline.publisher import PublishReport, load_jobs, publish_jobs
from tqadmin.plugin.models import ActionReport
from tqadmin.plugin.transport import Outcome
from tqadmin.private_file import open_private, refusal


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--queue", help="work queue (declared; on RabbitMQ through task_exchange with this routing key)"
    )
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--job", metavar="JSON", help="one job as a JSON object")
    source.add_argument("--from-file", type=Path, metavar="FILE", help="JSONL file, one job a line")
    parser.add_argument("--exchange", help="RabbitMQ: publish to this exchange as it is (declares nothing)")
    parser.add_argument("--routing-key", help="RabbitMQ: routing key (default: the queue name)")
    parser.add_argument("--rate", type=positive(float), metavar="R", help="at most R jobs a second")
    parser.add_argument(
        "--report", type=Path, metavar="FILE", help="write the per-job report (JSON; a new file, 0600) here"
    )
    add_force(parser, "the --report FILE")
    # --timeout S is the global option: each broker call, a blocked connection and the wait for confirms.


def run(args: argparse.Namespace, ctx: CommandContext) -> int:
    gate.check_profile(ctx.settings, "publish")
    gate.check_capability(ctx.plugin().capabilities, "publish")
    if args.queue is None and args.routing_key is None:
        raise UsageError("publish needs --queue Q, or --routing-key K (with --exchange E)")
    jobs = load_jobs(args.job, args.from_file)
    if args.report is not None:
        _check_writable(args.report, args.force)
    options = {
        name: value
        for name, value in (("exchange", args.exchange), ("routing_key", args.routing_key))
        if value
    }
    plugin = ctx.plugin()
    try:
        with plugin.transport(ctx.broker_config()) as transport:
            _check_options(options, transport.capabilities.publish_options, plugin.name)
            report = publish_jobs(
                transport, jobs, queue=args.queue or args.routing_key, options=options, rate=args.rate
            )
    except UsageError:
        raise
    except TqadminError as exc:  # nothing was sent (cannot connect, cannot declare): say so per job too
        report = PublishReport(tuple((job.id, Outcome.FAILED) for job in jobs), exc)
    document = report.to_json()
    if args.report is not None:
        try:
            with open_private(args.report, force=args.force) as file:
                file.write(json.dumps(document, indent=1) + "\n")
        except (OSError, UsageError) as exc:
            raise TqadminError(f"the jobs were published but --report {args.report} failed: {exc}") from None
    confirmed = report.count(Outcome.CONFIRMED)
    audited = ActionReport(
        action="publish",
        target=args.queue or args.routing_key,
        matched=len(jobs),
        moved=confirmed,
        failed=len(jobs) - confirmed,
    )
    ctx.audit(audited, None if report.all_confirmed else "failed")
    counts = {k: v for k, v in document.items() if k != "jobs"}
    summary = {"action": "publish", "target": args.queue or args.routing_key, **counts}
    ctx.emit(summary, lambda: f"published {len(jobs)}: " + ", ".join(f"{k} {v}" for k, v in counts.items()))
    if report.all_confirmed:
        return int(ExitCode.OK)
    if report.error is not None:
        raise report.error
    raise PartialFailure(f"{len(jobs) - confirmed} of {len(jobs)} jobs were not confirmed; see the report")


def _check_options(options: Mapping[str, str], understood: frozenset[str], broker: str) -> None:
    """``--exchange`` and ``--routing-key`` address RabbitMQ's topology; elsewhere they are refused."""
    unknown = sorted(set(options) - understood)
    if unknown:
        flags = " and ".join(f"--{name.replace('_', '-')}" for name in unknown)
        raise UsageError(f"{flags}: the {broker} broker has no exchanges; publish with --queue Q")


def _check_writable(path: Path, force: bool) -> None:
    """Refuse an unwritable ``--report`` before anything is sent, not after (the jobs could not be unsent)."""
    refused = refusal(path, force=force)
    if refused is not None:
        raise UsageError(f"--report: {refused}")
    if path.exists():
        writable = path.is_file() and os.access(path, os.W_OK)
    else:
        writable = path.parent.is_dir() and os.access(path.parent, os.W_OK)
    if not writable:
        raise UsageError(f"cannot write --report {path}: check that its directory exists and is writable")
