"""``tqadmin peek QUEUE``: look at messages without consuming them, and say what the look cost."""

from __future__ import annotations

import argparse
import json

from tqadmin.commands.arguments import positive
from tqadmin.commands.context import CommandContext, printable
from tqadmin.plugin.capabilities import Operation
from tqadmin.plugin.models import Message, PeekResult

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


def run(args: argparse.Namespace, ctx: CommandContext) -> int:
    with ctx.admin() as admin:
        admin.capabilities.require(Operation.PEEK)
        result = admin.peek(args.queue, args.count)
    document = {
        "queue": result.queue,
        "messages": [m.to_json() for m in result.messages],
        "cost": result.cost,
    }
    ctx.emit(document, lambda: render(result))
    return 0


def render(result: PeekResult) -> str:
    lines = [f"{len(result.messages)} message(s) from {result.queue!r}", f"cost: {result.cost}"]
    for number, message in enumerate(result.messages, start=1):
        lines.append(f"--- {number}. id {message.id!r}{' (redelivered)' if message.redelivered else ''}")
        if message.headers:
            lines.append("headers: " + _text(message.to_json()["headers"]))
        lines.append("body: " + _preview(message))
    return "\n".join(lines)


def _preview(message: Message) -> str:
    doc = message.to_json()
    body = str(doc["body"])
    shown = body[:BODY_PREVIEW] + ("…" if len(body) > BODY_PREVIEW else "")
    prefix = "(base64) " if doc["body_encoding"] == "base64" else ""
    return prefix + _text(shown)


def _text(value: object) -> str:
    """Broker data is data: control characters escaped so a body cannot drive the terminal."""
    return printable(value if isinstance(value, str) else json.dumps(value, ensure_ascii=False))
