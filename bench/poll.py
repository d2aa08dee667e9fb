"""What polling costs RabbitMQ: tqadmin's listing versus a plain full ``GET /api/queues``, at 1 Hz.

Creates N queues (default 5,000), then for S seconds each (default 30) measures the broker's CPU (utime +
stime of the beam.smp process, from /proc) while: nothing polls (the idle cost of N queues); tqadmin's
``list_queues`` polls as the TUI does (keeping to its broker budget); tqadmin's listing is fetched on every
poll (no budget: the raw cost of its paged, column-filtered calls); a plain full listing polls. Polls never
overlap: the next starts one second after the last started, or when it finished if it took longer. The
modes take turns in 10-second windows so that load from elsewhere on the machine spreads over all of them.
The queues are deleted at the end, also on Ctrl-C.

    python bench/poll.py [--queues N] [--seconds S]

Target: tqadmin <= 10% of one core above idle. The broker is shared with whatever else runs on the
machine, so read the idle row as the noise floor.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import FrameType

import httpx
import pika
from tqadmin_rabbitmq.admin import RabbitMQAdmin

from tqadmin.plugin.base import BrokerConfig

AMQP_URL = "amqp://guest:guest@127.0.0.1:5672/%2F"
MANAGEMENT_URL = "http://127.0.0.1:15672/"
TICKS = os.sysconf("SC_CLK_TCK")


WINDOW_S = 10.0


@dataclass
class Row:
    name: str
    polls: int = 0
    call_s: float = 0.0
    cpu_s: float = 0.0
    elapsed_s: float = 0.0

    @property
    def mean_call_s(self) -> float:
        return self.call_s / self.polls if self.polls else 0.0

    @property
    def core_fraction(self) -> float:
        return self.cpu_s / self.elapsed_s if self.elapsed_s else 0.0


def beam_pid() -> int:
    pgrep = subprocess.run(["pgrep", "-f", "beam.smp"], capture_output=True, text=True, check=False)
    found = pgrep.stdout.split()
    if not found:
        sys.exit("bench/poll.py: no beam.smp process found: is RabbitMQ running on this machine?")
    return int(found[0])


def cpu_seconds(pid: int) -> float:
    """utime + stime of ``pid``; the command name may hold spaces, so split after its closing ')'."""
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / TICKS


@contextmanager
def queues(count: int, prefix: str) -> Iterator[list[str]]:
    """Declare ``count`` queues on one channel; delete them on the way out, whatever happened."""
    names = [f"{prefix}{i:05d}" for i in range(count)]
    connection = pika.BlockingConnection(pika.URLParameters(AMQP_URL))
    channel = connection.channel()
    declared: list[str] = []
    try:
        for name in names:
            channel.queue_declare(name)
            declared.append(name)
        yield names
    finally:
        # A second Ctrl-C during clean-up would leave queues behind: ignore it while deleting.
        previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
        print(f"deleting {len(declared)} queues...", file=sys.stderr)
        # A new connection: the one that declared them sat idle through the bench, and the broker closes an
        # idle blocking connection once it misses its heartbeats.
        with contextlib.suppress(pika.exceptions.AMQPError):
            connection.close()
        connection = pika.BlockingConnection(pika.URLParameters(AMQP_URL))
        channel = connection.channel()
        for name in declared:
            channel.queue_delete(name)
        connection.close()
        signal.signal(signal.SIGINT, previous)


def measure(
    row: Row, pid: int, seconds: float, poll: Callable[[], object] | None, every_s: float = 1.0
) -> None:
    """Add to ``row`` the broker CPU over ``seconds`` while ``poll`` runs at most once every ``every_s``."""
    start_cpu, start = cpu_seconds(pid), time.monotonic()
    end = start + seconds
    while (now := time.monotonic()) < end:
        if poll is not None:
            poll()
            row.polls += 1
            row.call_s += time.monotonic() - now
        time.sleep(max(0.0, min(now + every_s, end) - time.monotonic()))
    row.elapsed_s += time.monotonic() - start
    row.cpu_s += cpu_seconds(pid) - start_cpu


def wait_until_listed(admin: RabbitMQAdmin, prefix: str, count: int, timeout_s: float = 60) -> None:
    deadline = time.monotonic() + timeout_s
    while sum(q.name.startswith(prefix) for q in admin.list_queues().queues) < count:
        if time.monotonic() > deadline:
            sys.exit("bench/poll.py: the management API did not list every queue within a minute")
        time.sleep(1)


def report(rows: list[Row], queue_count: int) -> str:
    idle = rows[0].core_fraction
    full = rows[-1].core_fraction - idle
    lines = [
        f"RabbitMQ CPU while polling {queue_count} queues at 1 Hz (% of one core; machine shared, see idle)",
        f"{'poller':<28} {'polls':>5} {'mean call':>10} {'CPU %':>7} {'above idle':>11} {'vs full':>8}",
    ]
    for row in rows:
        above = row.core_fraction - idle
        ratio = "" if row is rows[0] or full <= 0 else f"{above / full:.2f}x"
        lines.append(
            f"{row.name:<28} {row.polls:>5} {row.mean_call_s * 1000:>8.0f}ms {row.core_fraction * 100:>6.1f}%"
            f" {above * 100:>10.1f}% {ratio:>8}"
        )
    tq = rows[1].core_fraction - idle
    verdict = "met" if tq <= 0.10 else "NOT met"
    lines.append(f"target: tqadmin <= 10% of a core above idle: {verdict} ({tq * 100:.1f}%)")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queues", type=int, default=5000)
    parser.add_argument("--seconds", type=float, default=30.0)
    args = parser.parse_args()

    def interrupted(signum: int, frame: FrameType | None) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, interrupted)
    pid = beam_pid()
    prefix = f"tq-bench-poll-{uuid.uuid4().hex[:8]}-"
    config = BrokerConfig(AMQP_URL, timeout_s=60, options={"management_url": MANAGEMENT_URL})
    admin = RabbitMQAdmin(config)
    every_poll = RabbitMQAdmin(config, budget=1.0, min_interval_s=0.0)
    full = httpx.Client(auth=("guest", "guest"), timeout=60, headers={"accept-encoding": "identity"})
    modes: list[tuple[Row, Callable[[], object] | None]] = [
        (Row("idle (no polling)"), None),
        (Row("tqadmin list_queues (TUI)"), admin.list_queues),
        (Row("tqadmin, fetch every poll"), every_poll.list_queues),
        (Row("full GET /api/queues"), lambda: full.get(f"{MANAGEMENT_URL}api/queues").raise_for_status()),
    ]
    try:
        started = time.monotonic()
        with queues(args.queues, prefix):
            print(f"declared {args.queues} queues in {time.monotonic() - started:.1f}s", file=sys.stderr)
            wait_until_listed(every_poll, prefix, args.queues)
            windows = max(1, round(args.seconds / WINDOW_S))
            for window in range(windows):
                print(f"window {window + 1}/{windows}: {len(modes)} modes", file=sys.stderr)
                for row, poll in modes:
                    measure(row, pid, args.seconds / windows, poll)
        print(report([row for row, _ in modes], args.queues))
    except KeyboardInterrupt:
        sys.exit("bench/poll.py: interrupted; the queues it created were deleted")
    finally:
        for client in (admin, every_poll, full):
            client.close()


if __name__ == "__main__":
    main()
