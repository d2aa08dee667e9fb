"""``tqadmin peek QUEUE``: look at messages without consuming them, and say what the look cost.

Each message is shown as its framework sees it (:mod:`tqadmin.frameworks`): a Celery task by its task id and
name, a Dramatiq message by its message id and actor, tqadmin's own jobs as always.
"""

from __future__ import annotations

import argparse
import json

from tqadmin.commands.arguments import positive
from tqadmin.commands.confirmation import confirm_by_name
from tqadmin.commands.context import CommandContext
from tqadmin.frameworks import JobSummary, iso_utc, summarise
from tqadmin.plugin.capabilities import Operation
from tqadmin.plugin.models import Message, PeekResult
from tqadmin.show.broker_text import escaped

BODY_PREVIEW = 200


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("queue", metavar="QUEUE", help="queue to look at")
    parser.add_argument(
        "-n",
        dest="count",
        type=positive(int),
        default=10,
        metavar="N",
        help="how many messages, oldest first (10)",
    )
    parser.add_argument(
        "--yes",
        action="store_true",
        help="do not ask first where a look can dead-letter messages (a queue whose broker counts each look"
        " toward a delivery limit, such as an SQS redrive policy); without it, a run with no terminal is"
        " refused there (exit 2)",
    )


def run(args: argparse.Namespace, ctx: CommandContext) -> int:
    with ctx.admin() as admin:
        admin.capabilities.require(Operation.PEEK)
        risk = None if args.yes else admin.peek_risk(args.queue)
        if risk is not None:
            confirm_by_name(args.queue, "peek", f"Peeking costs more here: {risk}")
        result = admin.peek(args.queue, args.count)
    document = {
        "queue": result.queue,
        "messages": [message_json(m) for m in result.messages],
        "cost": result.cost,
        "delivery_limit": result.delivery_limit,
    }
    ctx.emit(document, lambda: render(result))
    return 0


def message_json(message: Message) -> dict[str, object]:
    """The message as exported, with its id and the facts its framework records beside it."""
    summary = summarise(message)
    return {
        **message.to_json(),
        "id": summary.id,
        "delivery_count": message.delivery_count,
        **summary.to_json(),
    }


def render(result: PeekResult) -> str:
    lines = [f"{len(result.messages)} message(s) from {result.queue!r}", f"cost: {result.cost}"]
    for number, message in enumerate(result.messages, start=1):
        summary = summarise(message)
        task = f" · {summary.framework} task {summary.task!r}" if summary.recognised else ""
        redelivered = " (redelivered)" if message.redelivered else ""
        lines.append(_text(f"--- {number}. id {summary.id!r}{task}{redelivered}"))
        lines.extend(_text(line) for line in _facts(summary))
        if message.delivery_count is not None:
            lines.append(delivery_note(message.delivery_count, result.delivery_limit))
        if message.headers:
            lines.append("headers: " + _text(message.to_json()["headers"]))
        lines.append("body: " + _preview(message))
    return "\n".join(lines)


def delivery_note(count: int, limit: int | None) -> str:
    """How often the broker has handed the message out, and how close that is to where it drops it."""
    if limit is None:
        return f"delivered {count} time(s)"
    warning = "; WARNING: the next delivery dead-letters it" if count >= limit else ""
    return f"delivered {count} of the {limit} time(s) after which the broker dead-letters it{warning}"


def _facts(summary: JobSummary) -> list[str]:
    facts = [
        f"{label} {value}"
        for label, value in (
            ("args", summary.args),
            ("retries", summary.retries),
            ("sent", iso_utc(summary.sent_at)),
            ("sent to", summary.sent_to),
        )
        if value is not None
    ]
    lines = ["job: " + " · ".join(facts)] if facts and summary.recognised else []
    return [*lines, f"error: {summary.error}"] if summary.error else lines


def _preview(message: Message) -> str:
    doc = message.to_json()
    body = str(doc["body"])
    shown = body[:BODY_PREVIEW] + ("…" if len(body) > BODY_PREVIEW else "")
    prefix = "(base64) " if doc["body_encoding"] == "base64" else ""
    return prefix + _text(shown)


def _text(value: object) -> str:
    """Broker data is data: control characters escaped so a body cannot drive the terminal."""
    return escaped(value if isinstance(value, str) else json.dumps(value, ensure_ascii=False))
