"""How soon work moves again after a broker restart and after jobs kill their worker process (issue 28).

Two waits the holders of claims used to impose, each timed on this checkout and, with ``--compare-with PATH``,
on another one (before) in the same rounds, in turn:

- restart: 2,000 jobs through 4 ``tqadmin worker``s (4 job threads, prefetch 16, the default 30 s lease) on a
  RabbitMQ node of the bench's own (tests/support/rabbitmq_node.py, classic queues). Most jobs take 20 ms; 8
  among the last hundred run until the bench lets them end. Chaos: one worker process is SIGKILLed every 2 s
  (its supervisor starts another) until half the jobs are done; a second after the long jobs are all running,
  the broker application stops and starts again (``rabbitmqctl stop_app``, 3 s, ``start_app``: 10 to 15 s down
  on a busy machine), and the long runs end a second after the broker is back: their copies, redelivered,
  come while the runs go on. Timed from the broker's return (its AMQP port accepting again) to the last
  effect committed (about that second: the floor) and to the work queue and its delay queues empty (every
  copy settled; the node's management API, its statistics every 250 ms): the difference is how long the
  copies waited after their runs.
- poison: 100 jobs, 5 of which kill their process (``os._exit``), through 2 workers with ``--prefetch 10
  --crash-limit 3`` (4 job threads, the default 30 s lease) on the machine's RabbitMQ and Redis: seconds from
  the workers' start until the five are dead-lettered ``crash_loop``.

Speed figures, not checks of behaviour (tests/e2e/test_worker_holders.py tests the mechanisms); still, a run
whose outcome is wrong (a job's effect missing, a job dead-lettered that should not be) says so and the bench
exits 1.

    python bench/recovery.py [--scenarios restart,poison] [--rounds N] [--compare-with PATH]
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))  # bench/ is not a package (the RabbitMQ node is tests.support's)

import httpx  # noqa: E402
import pika  # noqa: E402
import redis  # noqa: E402
from drain import AMQP, CHECKOUT, STORE_URL, checkout_env  # noqa: E402
from tqadmin_rabbitmq import RabbitMQPlugin  # noqa: E402

from tests.support.rabbitmq_node import RabbitMQNode  # noqa: E402
from tqadmin.plugin.base import BrokerConfig  # noqa: E402
from tqadmin.plugin.models import Message  # noqa: E402

MAIN_API = "http://127.0.0.1:15672/api"
AUTH = ("guest", "guest")
DEADLINE_S = 400.0

RESTART_JOBS = 2000
LONG_AT = range(RESTART_JOBS - 80, RESTART_JOBS, 10)
RELEASE_AFTER_S = 1.0
WORK_S = 0.02
KILL_EVERY_S = 2.0
DOWN_S = 3.0
RESTART_WORKER = ("--concurrency", "4", "--prefetch", "16")

POISON_JOBS = 100
POISON_AT = (10, 30, 50, 70, 90)
POISON_WORKER = ("--prefetch", "10", "--crash-limit", "3")


class Failed(Exception):
    """The run went wrong (a job's effect missing, a job dead-lettered that should not be)."""


class Run:
    """One scenario's run on one checkout: its queue, its store prefix, its workers and their logs."""

    def __init__(self, tree: Path, broker: str, folder: Path) -> None:
        self.tree = tree
        self.broker = broker
        self.queue = f"bench_recovery_{uuid.uuid4().hex[:8]}"
        self.key = f"bench-recovery:{self.queue}"
        self.prefix = f"bench-recovery-{uuid.uuid4().hex[:8]}"
        self.folder = folder
        self.redis = redis.Redis.from_url(STORE_URL, decode_responses=True)
        self.workers: list[subprocess.Popen[bytes]] = []

    def publish(self, jobs: list[dict[str, Any]]) -> None:
        with RabbitMQPlugin().transport(BrokerConfig(url=self.broker, timeout_s=60)) as transport:
            transport.declare(self.queue)
            result = transport.publish(
                [(self.queue, Message(json.dumps({**j, "key": self.key}).encode(), id=j["id"])) for j in jobs]
            )
        if not result.all_confirmed:
            raise Failed(f"the publish was not confirmed: {result}")

    def start(self, *options: str) -> None:
        command = [sys.executable, "-P", "-m", "tqadmin.cli", "-v", "--broker", self.broker]
        command += ["--store", f"{STORE_URL}?prefix={self.prefix}", "worker", "--queue", self.queue]
        command += ["--tasks", "recovery_tasks", *options]
        with (self.folder / f"worker-{len(self.workers)}.log").open("ab") as log:
            self.workers.append(
                subprocess.Popen(
                    command,
                    env={**os.environ, **checkout_env(self.tree)},
                    stdout=log,
                    stderr=log,
                    start_new_session=True,
                )
            )

    def kill_a_child(self, turn: int) -> bool:
        """SIGKILL the worker process (not its supervisor) of worker ``turn``; ``False`` if it has none."""
        worker = self.workers[turn % len(self.workers)]
        try:
            children = Path(f"/proc/{worker.pid}/task/{worker.pid}/children").read_text().split()
            os.kill(int(children[0]), signal.SIGKILL)
        except (OSError, IndexError, ValueError):
            return False
        return True

    def done(self) -> dict[str, float]:
        return {k: float(v) for k, v in self.redis.hgetall(f"{self.key}:done").items()}

    def runs(self) -> dict[str, int]:
        return {k: int(v) for k, v in self.redis.hgetall(f"{self.key}:runs").items()}

    def stop(self) -> None:
        for worker in self.workers:
            if worker.poll() is None:
                os.killpg(worker.pid, signal.SIGTERM)
        for worker in self.workers:
            try:
                worker.wait(20)
            except subprocess.TimeoutExpired:
                os.killpg(worker.pid, signal.SIGKILL)
                worker.wait()
        keys = [*self.redis.scan_iter(f"{self.key}:*"), *self.redis.scan_iter(f"*{self.prefix}*")]
        if keys:
            self.redis.delete(*keys)

    def log_tail(self) -> str:
        return "\n".join(p.read_text(errors="replace")[-1500:] for p in sorted(self.folder.glob("worker-*")))


def wait_until(condition: Callable[[], bool], what: str, run: Run, poll_s: float = 0.1) -> float:
    """Poll until ``condition`` holds; the ``time.time()`` at which it was seen to."""
    deadline = time.monotonic() + DEADLINE_S
    while not condition():
        if time.monotonic() > deadline:
            raise Failed(f"no {what} within {DEADLINE_S:g} s\n{run.log_tail()}")
        time.sleep(poll_s)
    return time.time()


def family_messages(api: str, queue: str) -> int | None:
    """Messages (ready and unacked) in ``queue`` and its delay queues, from the management API; None while
    a queue has no statistics yet."""
    listed = httpx.get(f"{api}/queues/%2F?columns=name,messages", auth=AUTH, timeout=10).json()
    counts = [
        q.get("messages") for q in listed if q["name"] == queue or q["name"].startswith(f"{queue}.retry")
    ]
    return None if any(c is None for c in counts) else sum(counts)


def restart(tree: Path, folder: Path) -> dict[str, float]:
    node = RabbitMQNode(management=True)
    run = Run(tree, node.url(), folder)
    try:
        jobs = [
            {"task_type": "work", "id": f"r{i}", "work_s": WORK_S, "until_released": i in LONG_AT}
            for i in range(RESTART_JOBS)
        ]
        run.publish(jobs)
        for _ in range(4):
            run.start(*RESTART_WORKER)
        kills, next_kill = 0, time.monotonic() + KILL_EVERY_S
        while len(run.done()) < RESTART_JOBS / 2:
            if time.monotonic() >= next_kill:
                kills += run.kill_a_child(kills)
                next_kill += KILL_EVERY_S
            time.sleep(0.05)
        long_ids = {f"r{i}" for i in LONG_AT}
        wait_until(lambda: long_ids <= set(run.runs()), "start of every long run", run, poll_s=0.05)
        time.sleep(1.0)
        node.stop_app()
        time.sleep(DOWN_S)
        back = time.time() - (time.monotonic() - node.start_app())
        time.sleep(max(0.0, back + RELEASE_AFTER_S - time.time()))
        run.redis.set(f"{run.key}:released", 1)
        wait_until(lambda: len(run.done()) == RESTART_JOBS, "effect of every job", run)
        drained = wait_until(
            lambda: family_messages(node.management_url(), run.queue) == 0, "empty queue", run
        )
        runs = run.runs()
        if set(run.done()) != {j["id"] for j in jobs}:
            raise Failed("a job's effect is missing")
        with pika.BlockingConnection(pika.URLParameters(node.url())) as connection:
            dead = connection.channel().queue_declare(f"{run.queue}.dlq", passive=True).method.message_count
        if dead:
            raise Failed(f"{dead} jobs dead-lettered")
        last = sorted(run.done().items(), key=lambda item: item[1])[-3:]
        print("  the last effects:", [(job_id, round(at - back, 1), runs[job_id]) for job_id, at in last])
        return {
            "last effect (s)": max(run.done().values()) - back,
            "queue empty (s)": drained - back,
            "kills": kills,
            "runs": sum(runs.values()),
        }
    finally:
        run.stop()
        node.close()


def poison(tree: Path, folder: Path) -> dict[str, float]:
    run = Run(tree, AMQP, folder)
    dlq = f"{run.queue}.dlq"
    try:
        poisoned = {f"p{i}" for i in POISON_AT}
        run.publish(
            [
                {"task_type": "poison" if f"p{i}" in poisoned else "work", "id": f"p{i}", "work_s": 0.05}
                for i in range(POISON_JOBS)
            ]
        )
        started = time.time()
        for _ in range(2):
            run.start(*POISON_WORKER)
        with pika.BlockingConnection(pika.URLParameters(AMQP)) as connection:
            channel = connection.channel()

            def dead_letters() -> int:
                return int(channel.queue_declare(dlq, passive=True).method.message_count)

            quarantined = wait_until(lambda: dead_letters() >= len(poisoned), "quarantine of the five", run)
            wait_until(
                lambda: len(run.done()) == POISON_JOBS - len(poisoned), "effect of every valid job", run
            )
            letters = []
            while (got := channel.basic_get(dlq, auto_ack=True))[0] is not None:
                letters.append((json.loads(got[2])["id"], (got[1].headers or {}).get("x-tq-reason")))
        if sorted(letters) != sorted((i, "crash_loop") for i in poisoned):
            raise Failed(f"dead letters {letters}, not the five poison jobs as crash_loop")
        runs = run.runs()
        return {
            "quarantined (s)": quarantined - started,
            "poison runs": sum(runs[i] for i in poisoned),
            "valid runs": sum(n for i, n in runs.items() if i not in poisoned),
        }
    finally:
        run.stop()
        delete_queues(run.queue)


def delete_queues(prefix: str) -> None:
    names = [
        q["name"] for q in httpx.get(f"{MAIN_API}/queues/%2F?columns=name", auth=AUTH, timeout=10).json()
    ]
    with pika.BlockingConnection(pika.URLParameters(AMQP)) as connection:
        channel = connection.channel()
        for name in names:
            if name.startswith(prefix):
                channel.queue_delete(name)


SCENARIOS: dict[str, Callable[[Path, Path], dict[str, float]]] = {"restart": restart, "poison": poison}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scenarios", default="restart,poison", help="restart, poison or both (the default)")
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument(
        "--compare-with", type=Path, metavar="PATH", help="a checkout to time beside this one"
    )
    parser.add_argument(
        "--logs", type=Path, metavar="DIR", help="keep the workers' logs here, a folder a run"
    )
    args = parser.parse_args()
    trees = [("after", CHECKOUT)]
    if args.compare_with is not None:
        trees.insert(0, ("before", args.compare_with.resolve()))
    results: dict[tuple[str, str], list[dict[str, float]]] = {}
    failed = False
    for round_no in range(args.rounds):
        for scenario in args.scenarios.split(","):
            for label, tree in trees if round_no % 2 == 0 else trees[::-1]:
                with tempfile.TemporaryDirectory(prefix="tq-recovery-") as temporary:
                    folder = Path(temporary)
                    if args.logs is not None:
                        folder = args.logs / f"{scenario}-{label}-{round_no + 1}"
                        folder.mkdir(parents=True, exist_ok=True)
                    try:
                        outcome = SCENARIOS[scenario](tree, folder)
                    except Failed as exc:
                        print(f"{scenario} [{label}] round {round_no + 1}: FAILED: {exc}", flush=True)
                        failed = True
                        continue
                print(f"{scenario} [{label}] round {round_no + 1}: {outcome}", flush=True)
                results.setdefault((scenario, label), []).append(outcome)
    print("\nmedians over the rounds:")
    for (scenario, label), outcomes in results.items():
        medians = {k: round(statistics.median(o[k] for o in outcomes), 1) for k in outcomes[0]}
        print(f"  {scenario:8} {label:7} {medians}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
