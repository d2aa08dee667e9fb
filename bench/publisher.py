"""Confirmed publishing: tqadmin's publisher against pika and aio-pika, each with a window of confirms.

Every contender publishes the same N persistent messages (``--messages``, bodies of ``--size`` bytes: tqadmin
jobs, encoded before the clock starts) to a fresh durable queue through tqadmin's direct exchange, mandatory,
with publisher confirms and at most ``--window`` of them outstanding (tqadmin's default publish window):

- tqadmin: its transport's ``publish`` (``tqadmin publish`` minus reading the file), one asynchronous pika
  connection settling ``multiple`` acks;
- pika: a ``SelectConnection`` (the blocking one waits for each confirm in turn) that keeps the window full
  and settles every tag a ``multiple`` ack covers;
- aio-pika: a confirm-mode channel, one ``publish`` task a message, a semaphore keeping the window.

The clock runs from opening the connection to the last confirm (the queue is declared before it, the close
is after it). A run counts only if every message was confirmed and the queue then holds exactly N messages
(none lost, none twice); otherwise it prints FAILED, its row gets no ratio, and the benchmark exits non-zero.
The contenders run ``--rounds`` times, the order rotated each round; each row gives the median and the
min-max spread, and tqadmin's median over the peer's (target: >= 1x aio-pika). ``--json PATH`` writes the
rows for a summary. Queues are uniquely named and deleted after each run.

    python bench/publisher.py [--messages N] [--size BYTES] [--window W] [--rounds R] [--json PATH]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import time
import uuid
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aio_pika
import aiormq
import pika
from tqadmin_rabbitmq import RabbitMQPlugin
from tqadmin_rabbitmq.naming import TASK_EXCHANGE, dlq_name

from tqadmin.pipeline.job import new_job
from tqadmin.pipeline.publisher import DEFAULT_WINDOW, messages_for
from tqadmin.plugin.base import BrokerConfig
from tqadmin.plugin.models import Message
from tqadmin.plugin.transport import BrokerTransport, Outcome, Outgoing

AMQP = "amqp://guest:guest@127.0.0.1:5672/%2F"
TIMEOUT_S = 60.0
SETTLE_S = 2.0  # how long the queue's count may take to show every confirmed message
JSON_TYPE = "application/json"
TARGET = ("aio-pika (a task a message)", 1.0)  # tqadmin's median / this peer's: the floor

Publish = Callable[[str, Sequence[Outgoing], int], tuple[float, int]]
"""A contender: (queue, messages, window) -> (seconds from connecting to the last confirm, messages
confirmed and routed)."""


@dataclass(slots=True)
class Contender:
    """One publisher and what its runs gave: a rate for each run that passed its checks, else why not."""

    name: str
    config: str  # what it runs with, printed beside its rate
    publish: Publish
    rates: list[float] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)


def transport() -> BrokerTransport:
    return RabbitMQPlugin().transport(BrokerConfig(url=AMQP, timeout_s=TIMEOUT_S))


def tqadmin_publish(queue: str, messages: Sequence[Outgoing], window: int) -> tuple[float, int]:
    """What ``tqadmin publish`` does once the jobs are read and the queue declared: a new transport each run,
    so its connection is opened inside the clock, as the peers' are."""
    with transport() as t:
        started = time.perf_counter()
        result = t.publish(messages, window=window)
        elapsed = time.perf_counter() - started
    return elapsed, sum(1 for o in result.outcomes if o is Outcome.CONFIRMED)


class PikaWindow:
    """pika's asynchronous connection keeping ``window`` confirms outstanding: publish until the window is
    full, and on each ``Basic.Ack`` settle the tags it covers (all up to it when ``multiple``) and refill."""

    def __init__(self, queue: str, messages: Sequence[Message], window: int) -> None:
        self.queue, self.messages, self.window = queue, messages, window
        self.sent = self.acked = self.refused = 0
        self.outstanding: deque[int] = deque()  # delivery tags in publish order
        self.channel: Any = None
        self.done_at: float | None = None
        self.connection: Any = pika.SelectConnection(
            pika.URLParameters(AMQP),
            on_open_callback=lambda c: c.channel(on_open_callback=self._channel_open),
            on_open_error_callback=lambda _c, _e: self._stop(),
            on_close_callback=lambda _c, _e: self.connection.ioloop.stop(),
        )

    def run(self) -> int:
        """Publish everything; the messages confirmed and not returned as unroutable."""
        self.connection.ioloop.call_later(TIMEOUT_S, self._stop)
        self.connection.ioloop.start()
        return self.acked - self.refused

    def _channel_open(self, channel: Any) -> None:
        self.channel = channel
        channel.add_on_close_callback(lambda _ch, _e: self._stop())
        channel.add_on_return_callback(self._returned)
        channel.confirm_delivery(self._confirmed, callback=lambda _frame: self._fill())

    def _fill(self) -> None:
        while self.sent < len(self.messages) and len(self.outstanding) < self.window:
            message = self.messages[self.sent]
            properties = pika.BasicProperties(delivery_mode=2, message_id=message.id, content_type=JSON_TYPE)
            self.channel.basic_publish(TASK_EXCHANGE, self.queue, message.body, properties, mandatory=True)
            self.sent += 1
            self.outstanding.append(self.sent)

    def _confirmed(self, frame: Any) -> None:
        method = frame.method
        tag = int(method.delivery_tag)
        if method.multiple:
            settled = 0
            while self.outstanding and self.outstanding[0] <= tag:
                self.outstanding.popleft()
                settled += 1
        else:
            self.outstanding.remove(tag)
            settled = 1
        if isinstance(method, pika.spec.Basic.Ack):
            self.acked += settled
        else:
            self.refused += settled
        if self.sent == len(self.messages) and not self.outstanding:
            self.done_at = time.perf_counter()
            self._stop()
        else:
            self._fill()

    def _returned(self, _channel: Any, _method: Any, _properties: Any, _body: bytes) -> None:
        self.refused += 1  # unroutable: the broker acks it all the same, so it is taken off the acked

    def _stop(self) -> None:
        if self.connection.is_open:
            self.connection.close()
        elif not self.connection.is_closing:
            self.connection.ioloop.stop()


def pika_publish(queue: str, messages: Sequence[Outgoing], window: int) -> tuple[float, int]:
    started = time.perf_counter()
    run = PikaWindow(queue, [m for _, m in messages], window)
    delivered = run.run()
    return (run.done_at or time.perf_counter()) - started, delivered


async def aio_pika_run(queue: str, messages: Sequence[Message], window: int) -> tuple[float, int]:
    """aio-pika's own way to keep confirms in flight: each ``publish`` awaits its confirm, so a task each,
    started as the semaphore lets one more in."""
    started = time.perf_counter()
    connection = await aio_pika.connect(AMQP)
    try:
        channel = await connection.channel(publisher_confirms=True, on_return_raises=True)
        exchange = await channel.get_exchange(TASK_EXCHANGE, ensure=False)
        room = asyncio.Semaphore(window)
        tasks = []
        for message in messages:
            await room.acquire()
            outgoing = aio_pika.Message(
                message.body,
                delivery_mode=aio_pika.DeliveryMode.PERSISTENT,
                message_id=message.id,
                content_type=JSON_TYPE,
            )
            task = asyncio.create_task(exchange.publish(outgoing, routing_key=queue, mandatory=True))
            task.add_done_callback(lambda _task: room.release())
            tasks.append(task)
        results = await asyncio.gather(*tasks, return_exceptions=True)
        elapsed = time.perf_counter() - started
    finally:
        await connection.close()
    return elapsed, sum(1 for r in results if isinstance(r, aiormq.spec.Basic.Ack))


def aio_pika_publish(queue: str, messages: Sequence[Outgoing], window: int) -> tuple[float, int]:
    return asyncio.run(aio_pika_run(queue, [m for _, m in messages], window))


def contenders(window: int) -> list[Contender]:
    stated = f"window {window}, persistent, mandatory, durable queue"
    return [
        Contender("tqadmin (transport publish)", stated, tqadmin_publish),
        Contender("pika (SelectConnection)", stated, pika_publish),
        Contender("aio-pika (a task a message)", stated, aio_pika_publish),
    ]


class Queues:
    """One blocking connection to read the queues' counts, and to delete each queue after its run."""

    def __init__(self) -> None:
        self.connection = pika.BlockingConnection(pika.URLParameters(AMQP))
        self.channel = self.connection.channel()

    def fresh(self) -> str:
        """A new durable queue, declared as ``tqadmin publish`` declares it (bound to its exchange)."""
        queue = f"bench_publisher_{uuid.uuid4().hex[:8]}"
        with transport() as t:
            t.declare(queue)
        return queue

    def count(self, queue: str, expected: int) -> int:
        """The queue's message count, once it shows ``expected`` or after :data:`SETTLE_S`."""
        deadline = time.monotonic() + SETTLE_S
        while True:
            found = int(self.channel.queue_declare(queue, passive=True).method.message_count)
            if found >= expected or time.monotonic() > deadline:
                return found
            time.sleep(0.05)

    def delete(self, queue: str) -> None:
        self.channel.queue_delete(queue)
        self.channel.queue_delete(dlq_name(queue))

    def close(self) -> None:
        self.connection.close()


def measure(contender: Contender, queues: Queues, jobs: Sequence[Any], window: int) -> str:
    """One run of ``contender``, checked; a line saying what it did."""
    n = len(jobs)
    queue = queues.fresh()
    try:
        messages = messages_for(jobs, queue)
        elapsed, delivered = contender.publish(queue, messages, window)
        held = queues.count(queue, n)
    finally:
        queues.delete(queue)
    checked = f"{delivered:,} of {n:,} confirmed, queue holds {held:,}"
    if delivered != n or held != n:
        contender.failures.append(checked)
        return f"FAILED: {contender.name}: {checked}"
    contender.rates.append(n / elapsed)
    return f"{contender.name}: {n / elapsed:,.0f} msg/s ({checked})"


def in_turn(found: list[Contender], round_no: int) -> list[Contender]:
    shift = round_no % len(found)
    return found[shift:] + found[:shift]


def rows(found: list[Contender]) -> list[dict[str, Any]]:
    """Each contender's median, spread and tqadmin's median over it; no figure for one that failed (and no
    ratio anywhere if tqadmin did)."""
    tq = found[0]
    ours = None if tq.failures else statistics.median(tq.rates)
    out = []
    for c in found:
        median = None if c.failures else statistics.median(c.rates)
        out.append(
            {
                "name": c.name,
                "config": c.config,
                "median": median,
                "min": None if c.failures else min(c.rates),
                "max": None if c.failures else max(c.rates),
                "ratio": None if ours is None or median is None else ours / median,
                "failed": c.failures,
            }
        )
    return out


def print_table(table: list[dict[str, Any]], args: argparse.Namespace) -> None:
    print(
        f"\n{args.messages:,} messages of {args.size} bytes each, window {args.window} confirms; median of"
        f" {args.rounds} rounds in rotated order on a shared machine (figures are noisy); clock: connecting"
        " to the last confirm; every run checked: all confirmed, the queue holding exactly N\n"
    )
    width = max(len(r["name"]) for r in table)
    config = max(len(r["config"]) for r in table)
    print(f"  {'':<{width}}  {'':<{config}}  {'msg/s':>9}  {'(min-max)':>19}  tqadmin / it")
    for r in table:
        if r["failed"]:
            print(f"  {r['name']:<{width}}  {r['config']:<{config}}  FAILED ({'; '.join(r['failed'])})")
            continue
        spread = f"({r['min']:,.0f}-{r['max']:,.0f})"
        ratio = "" if r["ratio"] is None else f"{r['ratio']:.2f}x"
        print(f"  {r['name']:<{width}}  {r['config']:<{config}}  {r['median']:>9,.0f}  {spread:>19}  {ratio}")
    peer, target = TARGET
    ratio = next(r["ratio"] for r in table if r["name"] == peer)
    verdict = "no ratio: a run FAILED" if ratio is None else "met" if ratio >= target else "MISSED"
    shown = "" if ratio is None else f"{ratio:.2f}x "
    print(f"\n  tqadmin / {peer}: {shown}(target >= {target:g}x: {verdict})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=20000, help="messages each contender publishes")
    parser.add_argument("--size", type=int, default=256, help="bytes of each body (a tqadmin job, padded)")
    parser.add_argument("--window", type=int, default=DEFAULT_WINDOW, help="confirms outstanding at most")
    parser.add_argument("--rounds", type=int, default=3, help="runs of each contender, in rotated order")
    parser.add_argument("--json", type=Path, metavar="PATH", help="write the rows here as JSON")
    args = parser.parse_args()
    bare = len(new_job("noop", {"payload": ""}).encode())
    jobs = [new_job("noop", {"payload": "x" * max(0, args.size - bare)}) for _ in range(args.messages)]
    found = contenders(args.window)
    queues = Queues()
    try:
        for round_no in range(args.rounds):
            for contender in in_turn(found, round_no):
                line = measure(contender, queues, jobs, args.window)
                print(f"  round {round_no + 1}: {line}", file=sys.stderr)
    finally:
        queues.close()
    table = rows(found)
    print_table(table, args)
    if args.json is not None:
        peer, target = TARGET
        document = {
            "benchmark": "publisher",
            "unit": "msg/s",
            "messages": args.messages,
            "size": args.size,
            "window": args.window,
            "rounds": args.rounds,
            "rows": table,
            "target": {"peer": peer, "ratio": target},
        }
        args.json.write_text(json.dumps(document, indent=2) + "\n")
    failed = [c.name for c in found if c.failures]
    if failed:
        sys.exit(f"\nFAILED: {', '.join(failed)}: a run left messages unconfirmed or the queue not holding N")


if __name__ == "__main__":
    main()
