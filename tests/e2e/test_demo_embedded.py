"""`tqadmin demo` with nothing configured: the embedded SQLite broker and store, no server at all.

Every process of the run (the demo and its workers) carries an audit hook that refuses and records any
connection to RabbitMQ's or Redis's ports, so the test proves the demo needs neither, whether or not they
happen to run on this machine.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families
from test_demo import demo_on_a_headless_dashboard, worker_pids

from tqadmin.store import open_store

pytestmark = pytest.mark.xdist_group("demo")

SERVER_PORTS = (5672, 15672, 6379)
WATCH = f"""
import os, sys

def _no_servers(event, args):
    if event == "socket.connect" and isinstance(args[1], tuple) and args[1][1] in {SERVER_PORTS!r}:
        with open(os.environ["TQ_TEST_CONNECTS"], "a") as log:
            log.write(f"{{os.getpid()}} {{args[1]!r}}\\n")
        raise ConnectionRefusedError(f"this test allows no connection to {{args[1]!r}}")

sys.addaudithook(_no_servers)
"""


def embedded_env(home: Path, hooks: Path, connects: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TQADMIN_", "XDG_"))}
    env.update(
        HOME=str(home),
        XDG_STATE_HOME=str(home / "state"),
        TQADMIN_AUDIT_LOG=str(home / "audit.jsonl"),
        PYTHONPATH=os.pathsep.join([str(hooks), env.get("PYTHONPATH", "")]).rstrip(os.pathsep),
        TQ_TEST_CONNECTS=str(connects),
    )
    return env


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    home = tmp_path_factory.mktemp("embedded-home")
    hooks = home / "hooks"
    hooks.mkdir()
    (hooks / "sitecustomize.py").write_text(WATCH)
    connects = home / "connects.log"
    prefix = f"e{uuid.uuid4().hex[:10]}"
    command = [sys.executable, "-m", "tqadmin.cli", "demo", "--no-ui", "--json", "--queue-prefix", prefix]
    command += ["--duration", "20", "--failure-rate", "0.2", "--job-timeout", "1", "--drain", "40"]
    done = subprocess.run(
        command,
        env=embedded_env(home, hooks, connects),
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    return {
        "prefix": prefix,
        "code": done.returncode,
        "stderr": done.stderr,
        "summary": json.loads(done.stdout) if done.stdout.strip() else {},
        "home": home,
        "connects": connects.read_text() if connects.exists() else "",
    }


def test_the_demo_runs_with_no_broker_and_no_store_configured_and_touches_no_server(
    run: dict[str, Any],
) -> None:
    assert run["code"] == 0, run["stderr"]
    assert run["connects"] == "", "a process tried to reach RabbitMQ or Redis"
    assert (run["home"] / "state" / "tqadmin" / "tqadmin.db").exists(), (
        "broker and store in the embedded file"
    )
    summary = run["summary"]
    assert summary["workers"] == 4 and summary["published"] > 100
    assert summary["done"] > 0 and summary["retried"] > 0 and summary["dead_lettered"] > 0
    assert set(summary["task_types"]) >= {"resize_image", "send_email", "generate_report", "charge_card"}


def test_the_embedded_demos_summary_accounts_for_every_message(run: dict[str, Any]) -> None:
    s = run["summary"]
    assert s["balanced"], s
    assert s["scheduled"] >= 1, "the cron's leader fired reports (one every 2 s once it is up)"
    incoming = s["published"] + s["scheduled"]
    assert incoming == s["done"] + s["dead_lettered"] + s["deduplicated"] + s["left_in_queues"]
    assert s["left_in_queues"] == 0, s["notes"]
    assert s["in_dead_letter_queues"] == s["dead_lettered"]
    assert s["dead_letter_reasons"].get("malformed", 0) >= 1


def test_each_card_is_charged_once_in_the_embedded_file(run: dict[str, Any]) -> None:
    url = f"sqlite:///{run['home'] / 'state' / 'tqadmin' / 'tqadmin.db'}"
    store = open_store(url)
    with store._file.read() as db:  # type: ignore[attr-defined]
        times = [
            row[0]
            for row in db.execute(
                "SELECT value FROM tq_effects WHERE field = 'times' AND name LIKE ?", (f"{run['prefix']}:%",)
            )
        ]
    store.close()
    assert times and set(times) == {1}
    assert len(times) == run["summary"]["task_types"]["charge_card"]["done"]


def test_no_embedded_worker_outlives_the_demo(run: dict[str, Any]) -> None:
    left = worker_pids(run["prefix"])
    assert left == [], [Path(f"/proc/{pid}/cmdline").read_bytes() for pid in left]


def test_with_nothing_configured_the_dashboard_shows_the_embedded_demos_queues(
    isolated_env: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(isolated_env / "state"))
    prefix = f"d{uuid.uuid4().hex[:10]}"
    code, summary, err, seen = demo_on_a_headless_dashboard(monkeypatch, capsys, prefix)
    assert code == 0, err
    assert summary["balanced"] and summary["published"] > 0, json.dumps(summary, indent=1) + err
    assert seen and {f"{prefix}.tasks", f"{prefix}.tasks.dlq"} <= set(seen[0])
    assert worker_pids(prefix) == []


def test_the_demo_serves_its_run_to_prometheus_and_says_where(tmp_path: Path) -> None:
    """The exporter runs beside the demo: its queues and its workers' runs can be scraped while it runs."""
    prefix = f"m{uuid.uuid4().hex[:10]}"
    env = embedded_env(tmp_path, tmp_path, tmp_path / "connects.log")
    command = [sys.executable, "-m", "tqadmin.cli", "demo", "--no-ui", "--json", "--queue-prefix", prefix]
    demo = subprocess.Popen(
        [*command, "--duration", "15", "--workers", "2"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert demo.stderr is not None
        said = next(line for line in demo.stderr if "Prometheus metrics of this run at" in line)
        url = said.split(" at ", 1)[1].split()[0]
        runs, queues = 0.0, set()
        deadline = time.monotonic() + 60
        while not (runs and f"{prefix}.tasks" in queues) and time.monotonic() < deadline:
            time.sleep(1)
            text = httpx.get(url, timeout=10).text
            samples = [s for f in text_string_to_metric_families(text) for s in f.samples]
            queues = {s.labels["queue"] for s in samples if s.name == "tqadmin_queue_messages"}
            runs = sum(s.value for s in samples if s.name == "tqadmin_task_runs_total")
        assert runs > 0 and f"{prefix}.tasks" in queues, (runs, queues)
        out, _ = demo.communicate(timeout=120)
    finally:
        if demo.poll() is None:
            demo.kill()
            demo.communicate()
    assert demo.returncode == 0
    assert json.loads(out)["metrics_url"] == url
