"""Moving 20,000 persistent messages A -> B four ways, in one run, on the local RabbitMQ.

1. ``tqadmin move A B --filter ...`` matching everything: the client path (windowed confirms, batched acks).
2. ``tqadmin replay A --to B --server-side``, no filter: delegated to a dynamic shovel (opt-in for replay).
3. A dynamic shovel (ack-mode on-confirm) created directly through the management API: the broker's own speed.
4. A plain pika loop: basic_get, publish with a confirm, ack; one message at a time.

(2) and (3) take about a second each, so one run of each is mostly noise on a shared machine: they run
``--rounds`` times, alternating which goes first (neither always follows the heavy client-path run), and
the table shows the median of each. Targets: (1) >= 2.5x (4); (2) >= 0.8x (3). (1) and (2) run
``tqadmin.cli.main`` in this process, so the interpreter's start-up (about 0.4 s here) is not counted, as it
is not for (3) and (4).
Run: ``.venv/bin/python bench/move.py [--messages N] [--rounds R]``. Queues are uniquely named and
deleted afterwards.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import statistics
import sys
import time
import uuid
from collections.abc import Callable
from urllib.parse import quote

import httpx
import pika

from tqadmin.cli import main as tqadmin_main

AMQP_URL = "amqp://guest:guest@127.0.0.1:5672/%2F"
Run = tuple[str, Callable[[str, str], None]]
API = "http://127.0.0.1:15672/"


def depth(channel: pika.adapters.blocking_connection.BlockingChannel, queue: str) -> int:
    return int(channel.queue_declare(queue, passive=True).method.message_count)


def fill(channel: pika.adapters.blocking_connection.BlockingChannel, queue: str, count: int) -> None:
    props = pika.BasicProperties(delivery_mode=2, content_type="application/json")
    for i in range(count):
        body = json.dumps({"task_type": "bench", "id": f"job-{i}", "payload": "x" * 200}).encode()
        channel.basic_publish("", queue, body, props)
    while depth(channel, queue) < count:
        time.sleep(0.05)


def tqadmin(*argv: str, path: str) -> None:
    """The command as a user runs it, in this process: interpreter start-up is not the move's cost. ``path``
    (``client-side`` or ``server-side``) is checked against the report, so a run that silently took the
    other path is not measured under the wrong label."""
    with contextlib.redirect_stdout(io.StringIO()) as out, contextlib.redirect_stderr(io.StringIO()) as err:
        code = tqadmin_main([*argv, "--json"])
    if code != 0:
        raise SystemExit(f"tqadmin {' '.join(argv)} failed: {err.getvalue().strip()}")
    detail = str(json.loads(out.getvalue()).get("detail", ""))
    if not detail.startswith(path):
        raise SystemExit(f"tqadmin {' '.join(argv)} did not take the {path} path: {detail}")


def direct_shovel(source: str, target: str, count: int) -> None:
    name = f"bench-shovel-{uuid.uuid4().hex[:8]}"
    path = f"api/parameters/shovel/%2F/{quote(name, safe='')}"
    value = {
        "src-protocol": "amqp091",
        "src-uri": "amqp:///%2F",
        "src-queue": source,
        "dest-protocol": "amqp091",
        "dest-uri": "amqp:///%2F",
        "dest-queue": target,
        "ack-mode": "on-confirm",
        "src-delete-after": count,
    }
    with httpx.Client(base_url=API, auth=("guest", "guest")) as api:
        api.put(path, json={"value": value}).raise_for_status()
        while api.get(path).status_code == 200:
            time.sleep(0.05)


def confirm_each(source: str, target: str) -> None:
    connection = pika.BlockingConnection(pika.URLParameters(AMQP_URL))
    channel = connection.channel()
    channel.confirm_delivery()
    while True:
        method, props, body = channel.basic_get(source, auto_ack=False)
        if method is None:
            break
        channel.basic_publish("", target, body, props, mandatory=True)
        channel.basic_ack(method.delivery_tag)
    connection.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=20_000)
    parser.add_argument("--rounds", type=int, default=3, help="runs of each shovel variant (median shown)")
    options = parser.parse_args()
    n = options.messages
    tag = uuid.uuid4().hex[:8]
    a, b = f"bench-move-{tag}-a", f"bench-move-{tag}-b"
    connection = pika.BlockingConnection(pika.URLParameters(AMQP_URL))
    channel = connection.channel()
    for q in (a, b):
        channel.queue_declare(q, durable=True)
    client_run: Run = (
        "tqadmin move --filter (client path)",
        lambda s, t: tqadmin("move", s, t, "--filter", "task_type=bench", path="client-side"),
    )
    via_shovel_run: Run = (
        # replay's shovel path is opt-in (a shovel cannot add to x-tq-replays): without --server-side
        # this would measure the client path.
        "tqadmin replay --to, no filter (shovel path)",
        lambda s, t: tqadmin("replay", s, "--to", t, "--server-side", path="server-side"),
    )
    shovel_run: Run = ("RabbitMQ dynamic shovel, on-confirm (direct)", lambda s, t: direct_shovel(s, t, n))
    pika_run: Run = ("pika get/publish+confirm/ack, one at a time", confirm_each)
    pairs = [
        (via_shovel_run, shovel_run) if i % 2 == 0 else (shovel_run, via_shovel_run)
        for i in range(options.rounds)
    ]
    runs = [client_run, *(run for pair in pairs for run in pair), pika_run]
    times: dict[str, list[float]] = {}
    try:
        fill(channel, a, n)
        source, target = a, b
        for label, run in runs:
            started = time.perf_counter()
            run(source, target)
            elapsed = time.perf_counter() - started
            moved = depth(channel, target)
            if moved != n or depth(channel, source) != 0:
                raise SystemExit(f"{label}: expected {n} in {target} and 0 left, got {moved}")
            times.setdefault(label, []).append(elapsed)
            print(f"  {label}: {elapsed:.2f} s", file=sys.stderr)
            source, target = target, source
    finally:
        for q in (a, b):
            channel.queue_delete(q)
        connection.close()
    results = {label: n / statistics.median(elapsed) for label, elapsed in times.items()}
    labels = [label for label, _ in (client_run, via_shovel_run, shovel_run, pika_run)]
    client, via_shovel, shovel, pika_loop = (results[label] for label in labels)
    width = max(len(label) for label in labels)
    print(f"\nMoving {n:,} persistent messages A -> B (shared 2-core machine: expect noise)\n")
    print(f"{'method':<{width}}  {'msgs/s':>8}  runs")
    for label in labels:
        print(f"{label:<{width}}  {results[label]:>8.0f}  {len(times[label])}")
    print()
    print(f"client path / pika confirm-each : {client / pika_loop:5.2f}x  (target >= 2.5x)")
    print(f"shovel path / direct shovel     : {via_shovel / shovel:5.2f}x  (target >= 0.8x)")


if __name__ == "__main__":
    main()
