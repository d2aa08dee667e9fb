"""`tqadmin publish`: publish jobs durably, confirmed and mandatory, and report each one's fate.

Its addressing flags beyond ``--queue`` are the publish options the installed plugins declare
(``TransportCapabilities.publish_options``: RabbitMQ's ``--exchange`` and ``--routing-key``), so the command
knows no broker's topology; one a broker does not declare is refused by :func:`tqadmin.plugin.publish_options`
before anything is sent (exit 2).
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

from tqadmin.admin import gate
from tqadmin.commands.arguments import add_force, positive
from tqadmin.commands.context import CommandContext
from tqadmin.errors import ExitCode, PartialFailure, TqadminError, UsageError
from tqadmin.files.private_file import open_private, refusal
from tqadmin.pipeline.publisher import PublishReport, load_jobs, publish_jobs
from tqadmin.plugin.capabilities import PublishOption
from tqadmin.plugin.models import ActionReport
from tqadmin.plugin.registry import installed_publish_options
from tqadmin.plugin.transport import Outcome, publish_options


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--queue", help="work queue (declared first, with what the broker needs for it)")
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--job", metavar="JSON", help="one job as a JSON object")
    source.add_argument("--from-file", type=Path, metavar="FILE", help="JSONL file, one job a line")
    for option in installed_publish_options():  # --exchange and the like, declared by the broker plugins
        parser.add_argument(option.flag, dest=_dest(option), metavar=option.name.upper(), help=option.help)
    parser.add_argument("--rate", type=positive(float), metavar="R", help="at most R jobs a second")
    parser.add_argument(
        "--report", type=Path, metavar="FILE", help="write the per-job report (JSON; a new file, 0600) here"
    )
    add_force(parser, "the --report FILE")
    # --timeout S is the global option: each broker call, a blocked connection and the wait for confirms.


def run(args: argparse.Namespace, ctx: CommandContext) -> int:
    gate.check_profile(ctx.settings, "publish")
    gate.check_capability(ctx.plugin().capabilities, "publish")
    target, options = _address(args)
    jobs = load_jobs(args.job, args.from_file)
    if args.report is not None:
        _check_writable(args.report, args.force)
    plugin = ctx.plugin()
    try:
        with plugin.transport(ctx.broker_config()) as transport:
            publish_options(options, transport.capabilities, f"the {plugin.name} broker")
            report = publish_jobs(transport, jobs, queue=target, options=options, rate=args.rate)
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
        target=target,
        matched=len(jobs),
        moved=confirmed,
        failed=len(jobs) - confirmed,
    )
    ctx.audit(audited, None if report.all_confirmed else "failed")
    counts = {k: v for k, v in document.items() if k != "jobs"}
    summary = {"action": "publish", "target": target, **counts}
    ctx.emit(summary, lambda: f"published {len(jobs)}: " + ", ".join(f"{k} {v}" for k, v in counts.items()))
    if report.all_confirmed:
        return int(ExitCode.OK)
    if report.error is not None:
        raise report.error
    raise PartialFailure(f"{len(jobs) - confirmed} of {len(jobs)} jobs were not confirmed; see the report")


def _address(args: argparse.Namespace) -> tuple[str, dict[str, str]]:
    """Where the jobs go (what the report and the audit name) and the publish options given: ``--queue``,
    or a publish option that addresses by itself (RabbitMQ's ``--routing-key``)."""
    declared = installed_publish_options()
    options = {o.name: value for o in declared if (value := getattr(args, _dest(o), None))}
    addressing = [o for o in declared if o.addresses]
    target = args.queue or next((options[o.name] for o in addressing if o.name in options), None)
    if target is None:
        raise UsageError(
            "publish needs --queue Q" + "".join(f", or {o.flag} {o.name.upper()}" for o in addressing)
        )
    return target, options


def _dest(option: PublishOption) -> str:
    return f"publish_option_{option.name}"


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
