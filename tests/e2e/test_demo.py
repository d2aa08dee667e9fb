"""`tqadmin demo --no-ui` against the real RabbitMQ and Redis: one short run, checked from every side.

The run uses its own queue prefix and store prefix, so parallel suites never see each other's messages, and
everything it created (queues, retry and dead-letter queues, store keys, ledger entries) is deleted after.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pika
import pytest
import redis
from tqadmin_rabbitmq import RabbitMQPlugin

from tests.support.rabbit_queues import api
from tqadmin.plugin.base import BrokerConfig
from tqadmin.plugin.models import HEADER_REASON
from tqadmin.store import open_store

AMQP_URL = "amqp://guest:guest@127.0.0.1:5672/%2F"
MANAGEMENT_URL = "http://127.0.0.1:15672/"
REDIS_URL = "redis://127.0.0.1:6379/0"

pytestmark = [pytest.mark.rabbitmq, pytest.mark.redis, pytest.mark.xdist_group("demo")]


@dataclass
class DemoRun:
    prefix: str
    returncode: int
    summary: dict[str, Any]
    stderr: str
    admin: Any


def demo_env(home: Path, store_prefix: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TQADMIN_")}
    env.update(
        HOME=str(home),
        XDG_STATE_HOME=str(home / "state"),
        TQADMIN_AUDIT_LOG=str(home / "audit.jsonl"),
        TQADMIN_BROKER_URL=AMQP_URL,
        TQADMIN_STORE_URL=f"{REDIS_URL}?prefix={store_prefix}",
    )
    return env


def owned_queues(prefix: str) -> list[str]:
    """This run's queues, found by the management API's own name filter (other suites may hold thousands)."""
    response = httpx.get(
        MANAGEMENT_URL + "api/queues/%2F",
        params={"page": 1, "page_size": 500, "name": f"^{prefix}\\.", "use_regex": "true", "columns": "name"},
        auth=("guest", "guest"),
        timeout=60,  # a deadline on a loaded broker
    )
    response.raise_for_status()
    return [item["name"] for item in response.json()["items"]]


def clean_up(admin: Any, prefix: str) -> None:
    connection = pika.BlockingConnection(pika.URLParameters(AMQP_URL))
    channel = connection.channel()
    for name in owned_queues(prefix):
        channel.queue_delete(name)
    connection.close()
    store = open_store(f"{REDIS_URL}?prefix={prefix}")
    store.delete_prefix()  # type: ignore[attr-defined]
    store.close()
    client = redis.Redis.from_url(REDIS_URL)
    ledger = list(client.scan_iter(match=f"{prefix}:charge:*", count=1000))
    ledger += client.scan_iter(match=f"*tqcron:demo-{prefix}*", count=1000)  # the demo cron's namespace
    if ledger:
        client.delete(*ledger)
    client.close()


def published_to(prefix: str) -> int:
    """Messages published to the queues named ``prefix...``, as the management API counts them (it lags)."""
    listed = api("queues/%2F?columns=name,message_stats.publish")
    return sum(q.get("message_stats", {}).get("publish", 0) for q in listed if q["name"].startswith(prefix))


def worker_pids(prefix: str) -> list[int]:
    """Processes whose command line names this run's queues: the demo's workers, if any survived."""
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if f"{prefix}." in cmdline and "worker" in cmdline:
            pids.append(int(entry.name))
    return pids


@pytest.fixture(scope="module")
def demo_run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DemoRun]:
    prefix = f"t{uuid.uuid4().hex[:10]}"
    admin = RabbitMQPlugin().admin(BrokerConfig(url=AMQP_URL))
    home = tmp_path_factory.mktemp("demo-home")
    command = [sys.executable, "-m", "tqadmin.cli", "demo", "--no-ui", "--json", "--queue-prefix", prefix]
    command += ["--duration", "8", "--rate", "15", "--workers", "4", "--failure-rate", "0.2"]
    command += ["--job-timeout", "1", "--drain", "40"]
    try:
        done = subprocess.run(
            command, env=demo_env(home, prefix), capture_output=True, text=True, timeout=120, check=False
        )
        summary = json.loads(done.stdout) if done.stdout.strip() else {}
        yield DemoRun(prefix, done.returncode, summary, done.stderr, admin)
    finally:
        clean_up(admin, prefix)
        admin.close()


def test_a_headless_demo_exits_0_with_one_json_summary(demo_run: DemoRun) -> None:
    assert demo_run.returncode == 0, demo_run.stderr
    summary = demo_run.summary
    assert summary["published"] > 50
    assert summary["done"] > 0 and summary["retried"] > 0 and summary["dead_lettered"] > 0
    assert summary["run"]["p50"] is not None and summary["wait"]["p99"] is not None
    assert set(summary["task_types"]) >= {"resize_image", "send_email", "generate_report", "charge_card"}


def test_every_message_is_done_dead_lettered_deduplicated_or_still_queued(
    demo_run: DemoRun,
) -> None:
    s = demo_run.summary
    assert s["balanced"], s
    incoming = s["published"] + s["scheduled"]
    assert incoming == s["done"] + s["dead_lettered"] + s["deduplicated"] + s["left_in_queues"]
    assert s["left_in_queues"] == 0, s["notes"]
    assert s["in_dead_letter_queues"] == s["dead_lettered"]
    assert s["deduplicated"] >= 1


def test_malformed_messages_land_in_the_dead_letter_queues_with_reason_malformed(demo_run: DemoRun) -> None:
    published = demo_run.summary["malformed_published"]
    reasons: Counter[str] = Counter()
    bodies = []
    for dlq in (q for q in owned_queues(demo_run.prefix) if q.endswith(".dlq")):
        for message in demo_run.admin.peek(dlq, 500).messages:
            reasons[message.headers[HEADER_REASON]] += 1
            bodies.append(message.body)
    malformed = published.get("invalid_json", 0) + published.get("invalid_utf8", 0)
    malformed += published.get("missing_task_type", 0)
    assert malformed >= 3
    assert reasons["malformed"] == malformed
    assert reasons["unknown_task"] == published.get("unknown_task", 0)
    assert sum(published.values()) < 4 or published["unknown_task"] >= 1  # the fourth malformed kind
    assert any(b"\xff\xfe\xfd" in body for body in bodies), "the invalid UTF-8 body is kept byte for byte"
    assert demo_run.summary["dead_letter_reasons"] == dict(reasons)


def test_each_card_is_charged_exactly_once(demo_run: DemoRun) -> None:
    client = redis.Redis.from_url(REDIS_URL)
    entries = [client.hgetall(k) for k in client.scan_iter(match=f"{demo_run.prefix}:charge:*", count=1000)]
    client.close()
    assert entries
    assert {int(e[b"times"]) for e in entries} == {1}
    assert len(entries) == demo_run.summary["task_types"]["charge_card"]["done"]


def test_no_worker_outlives_the_demo(demo_run: DemoRun) -> None:
    assert worker_pids(demo_run.prefix) == []


def test_sigterm_stops_the_demo_in_order_with_a_summary_and_no_orphans(tmp_path: Path) -> None:
    prefix = f"t{uuid.uuid4().hex[:10]}"
    admin = RabbitMQPlugin().admin(BrokerConfig(url=AMQP_URL))
    command = [sys.executable, "-m", "tqadmin.cli", "demo", "--no-ui", "--json", "--queue-prefix", prefix]
    command += ["--duration", "60", "--workers", "2", "--drain", "20"]
    demo = subprocess.Popen(
        command, env=demo_env(tmp_path, prefix), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        deadline = time.monotonic() + 60  # both workers up and a message published: an order, not a time
        while (len(worker_pids(prefix)) < 2 or not published_to(prefix)) and time.monotonic() < deadline:
            time.sleep(0.5)
        demo.send_signal(signal.SIGTERM)
        out, err = demo.communicate(timeout=60)
        assert demo.returncode == 0, err
        assert json.loads(out)["published"] > 0
        assert worker_pids(prefix) == []
    finally:
        if demo.poll() is None:
            demo.kill()
        clean_up(admin, prefix)
        admin.close()


def test_an_unreachable_broker_is_exit_3_and_one_line_naming_what_to_start(tmp_path: Path) -> None:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "tqadmin.cli",
            "demo",
            "--no-ui",
            "--broker",
            "amqp://guest:guest@127.0.0.1:1/",
        ],
        env=demo_env(tmp_path, "unused"),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 3
    assert done.stdout == ""
    assert done.stderr.count("\n") == 1
    assert "start RabbitMQ" in done.stderr
    assert "Traceback" not in done.stderr


def demo_on_a_headless_dashboard(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], prefix: str
) -> tuple[int, dict[str, Any], str, list[list[str]]]:
    """``tqadmin demo`` in this process with the real app run headless: its exit code, the summary, the
    stderr, and the queues the dashboard showed."""
    from tqadmin.cli import main
    from tqadmin.commands import demo as demo_command
    from tqadmin.tui import TqadminApp
    from tqadmin.tui import app as tui_app

    seen: list[list[str]] = []

    class HeadlessApp(TqadminApp):
        """The real app without a terminal; remembers the queues it was shown."""

        CSS_PATH = str(Path(tui_app.__file__).with_name("app.tcss"))

        def run(self, **kwargs: Any) -> None:  # type: ignore[override]
            super().run(headless=True, **kwargs)

        def on_unmount(self) -> None:
            seen.append(sorted(self.board.stats))

    monkeypatch.setattr(demo_command, "_dashboard", lambda: HeadlessApp)
    code = main(["demo", "--json", "--duration", "6", "--workers", "2", "--queue-prefix", prefix])
    captured = capsys.readouterr()
    return code, json.loads(captured.out), captured.err, seen


def test_with_the_dashboard_the_demo_runs_behind_the_app_and_stops_when_its_time_is_up(
    isolated_env: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    prefix = f"t{uuid.uuid4().hex[:10]}"
    monkeypatch.setenv("XDG_STATE_HOME", str(isolated_env / "state"))
    monkeypatch.setenv("TQADMIN_STORE_URL", f"{REDIS_URL}?prefix={prefix}")
    admin = RabbitMQPlugin().admin(BrokerConfig(url=AMQP_URL))
    try:
        code, summary, err, seen = demo_on_a_headless_dashboard(monkeypatch, capsys, prefix)
        assert code == 0, err
        assert summary["balanced"] and summary["published"] > 0, err
        assert seen and seen[0] and all(name.startswith(f"{prefix}.") for name in seen[0])
        assert worker_pids(prefix) == []
    finally:
        clean_up(admin, prefix)
        admin.close()
