"""A canary password, given only in the config file, never shows up anywhere a person or a log could see it.

Every command, the worker, the cron and the dashboard run with ``-v`` under failure (the canary is a wrong
password, the host is unreachable, a management URL carries it as its user part like a token, a task raises
an exception naming a URL with the canary in it, the dashboard crashes), and the test looks for the canary
in their stdout and stderr (tracebacks included), in every file they left under a temporary HOME (the audit
log among them), in the dead-letter headers, and in the command lines of the processes they ran. The worker's
own threads are tried too: one that dies and a metrics scrape that fails, both naming the canary.
"""

from __future__ import annotations

import json
import os
import pty
import select
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from worker_harness import Pipeline, pipeline_fixture  # noqa: F401 - the fixture

pytestmark = [pytest.mark.rabbitmq, pytest.mark.redis]

CANARY = "Canary-7Qx9-pw"
WRONG_LOGIN = f"amqp://guest:{CANARY}@127.0.0.1:5672/%2F"
UNREACHABLE = f"amqp://guest:{CANARY}@127.0.0.1:9/%2F"
STORE = f"redis://:{CANARY}@127.0.0.1:6379/0"  # Redis has no password set: AUTH fails
COMMANDS: list[list[str]] = [
    ["queues"],
    ["peek", "q"],
    ["dead-letters", "q.dlq"],
    ["move", "a", "b", "--dry-run"],
    ["replay", "q.dlq", "--dry-run"],
    ["purge", "q", "--yes"],
    ["export", "q", "out.jsonl"],
    ["import", "in.jsonl", "q"],
    ["delete", "q", "--id", "x"],
    ["publish", "--queue", "q", "--job", '{"task_type": "t"}'],
    ["workers"],
    ["stats"],
    ["schedules"],
    ["demo", "--no-ui", "--duration", "1"],
]


class Home:
    """A temporary HOME whose config file is the only place the canary is written."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.config = root / ".config" / "tqadmin" / "config.toml"
        self.config.parent.mkdir(parents=True)
        self.config.write_text(
            'default_profile = "wrong"\n'
            f'[profiles.wrong]\nbroker = "{WRONG_LOGIN}"\nstore = "{STORE}"\n'
            f'management_url = "http://guest:{CANARY}@127.0.0.1:15672/"\n'
            f'[profiles.unreachable]\nbroker = "{UNREACHABLE}"\nstore = "redis://:{CANARY}@127.0.0.1:9/0"\n'
            f'management_url = "http://guest:{CANARY}@127.0.0.1:9/"\n'
            f'[profiles.token]\nbroker = "{WRONG_LOGIN}"\nstore = "{STORE}"\n'
            f'management_url = "http://{CANARY}@127.0.0.1:15672/"\n'
            '[profiles.good]\nbroker = "amqp://guest:guest@127.0.0.1:5672/%2F"\n'
        )
        (root / "in.jsonl").write_text('{"body": "{}", "headers": {}}\n')
        self.env = {
            **{k: v for k, v in os.environ.items() if not k.startswith("TQADMIN_")},
            "HOME": str(root),
            "XDG_STATE_HOME": str(root / ".local" / "state"),
        }
        self.outputs: dict[str, str] = {}

    def run(self, name: str, *argv: str, timeout_s: float = 120) -> int:
        result = subprocess.run(
            [sys.executable, "-m", "tqadmin.cli", "-v", *argv],
            cwd=self.root,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=timeout_s,
            check=False,
        )
        self.outputs[name] = result.stdout + result.stderr
        return result.returncode

    def hits(self) -> list[str]:
        """Where the canary was found: command outputs and files under HOME (the config file aside)."""
        found = [f"output of {name}" for name, text in self.outputs.items() if CANARY in text]
        for path in self.root.rglob("*"):
            if path.is_file() and path != self.config and CANARY.encode() in path.read_bytes():
                found.append(str(path.relative_to(self.root)))
        return found


@pytest.fixture
def home(tmp_path: Path) -> Iterator[Home]:
    yield Home(tmp_path / "home")


def holds(pipeline: Pipeline, queue: str, at_least: int) -> bool:
    try:
        return pipeline.depth(queue) >= at_least
    except Exception:  # not declared yet
        return False


def command_lines(pid: int) -> list[bytes]:
    """The command lines of ``pid`` and its children, as ``ps`` would show them."""
    lines = []
    pending = [pid]
    while pending:
        current = pending.pop()
        try:
            lines.append(Path(f"/proc/{current}/cmdline").read_bytes())
            for task in Path(f"/proc/{current}/task").iterdir():
                pending += [int(c) for c in (task / "children").read_text().split()]
        except OSError:
            continue
    return lines


@pytest.mark.parametrize("profile", ["wrong", "unreachable", "token"])
def test_no_command_shows_the_canary_when_the_login_is_wrong_or_the_host_unreachable(
    home: Home, profile: str
) -> None:
    codes = {" ".join(argv): home.run(" ".join(argv), "--profile", profile, *argv) for argv in COMMANDS}
    assert home.hits() == []
    # Redis without a password takes any (its AUTH is skipped): the store's commands may well succeed.
    failed = {name for name, code in codes.items() if code != 0}
    assert failed >= {" ".join(argv) for argv in COMMANDS[:10]}, codes
    assert all("tqadmin:" in home.outputs[name] for name in failed)


def test_the_worker_and_the_cron_under_failure_show_no_canary_in_logs_headers_or_process_titles(
    home: Home, pipeline: Pipeline, tmp_path: Path
) -> None:
    # a task whose exception names a URL with the canary: logged by the worker, written in the DLQ header
    tasks = tmp_path / "canary_tasks.py"  # outside HOME: the test wrote the canary there itself
    tasks.write_text(
        "from tqadmin import task\n\n"
        "@task('leaky', max_retries=1)\n"
        "def leaky(ctx, job):\n"
        f"    raise ValueError('talking to amqp://user:{CANARY}@db.internal/')\n"
    )
    log = (home.root / "worker.log").open("wb")
    worker = subprocess.Popen(
        [
            *(sys.executable, "-m", "tqadmin.cli", "-v", "--profile", "good", "--store", pipeline.store_url),
            *("worker", "--queue", pipeline.queue, "--tasks", str(tasks), "--backoff-base", "0.05"),
        ],
        cwd=home.root,
        env=home.env,
        stdout=log,
        stderr=log,
        start_new_session=True,
    )
    try:
        pipeline.wait_for(lambda: holds(pipeline, pipeline.queue, 0), 30, "the worker to declare its queue")
        pipeline.publish_raw([json.dumps({"task_type": "leaky", "id": f"{pipeline.id_prefix}1"}).encode()])
        pipeline.wait_for(
            lambda: holds(pipeline, f"{pipeline.queue}.dlq", 1), 60, "the job to be dead-lettered"
        )
        titles = command_lines(worker.pid)
        assert len(titles) >= 2 and not any(CANARY.encode() in t for t in titles)
    finally:
        os.killpg(worker.pid, signal.SIGTERM)
        worker.wait(20)
        log.close()
    ((properties, _body),) = pipeline.dead_letters()
    assert "attempt 1 failed" in (home.root / "worker.log").read_text()
    assert CANARY not in json.dumps(properties.headers, default=str)

    schedule = home.root / "schedule.toml"
    schedule.write_text('[[schedule]]\nname = "beat"\ncron = "* * * * * *"\nqueue = "q"\ntask_type = "t"\n')
    for profile in ("wrong", "unreachable"):
        home.run(f"cron {profile}", "--profile", profile, "cron", "--schedule", str(schedule), timeout_s=60)
        cron_good_store = ["--profile", profile, "--store", pipeline.store_url, "cron", "--schedule"]
        home.run(f"cron {profile} (store up)", *cron_good_store, str(schedule), "--lock-ttl", "2")
    assert home.hits() == []


def run_in_terminal(
    home: Home, argv: list[str], extra_env: dict[str, str], seconds: float
) -> tuple[int, str]:
    """Run ``tqadmin ARGV`` on a pseudo-terminal for up to ``seconds``, then press q; exit code and screen."""
    main, child = pty.openpty()
    process = subprocess.Popen(
        [sys.executable, "-m", "tqadmin.cli", "-v", *argv],
        cwd=home.root,
        env={**home.env, **extra_env, "TERM": "xterm-256color", "COLUMNS": "120", "LINES": "40"},
        stdin=child,
        stdout=child,
        stderr=child,
        start_new_session=True,
    )
    os.close(child)
    screen = b""
    deadline = time.monotonic() + seconds
    while process.poll() is None:
        if time.monotonic() > deadline:
            os.write(main, b"q")
            deadline += 10
        if select.select([main], [], [], 0.1)[0]:
            try:
                screen += os.read(main, 65536)
            except OSError:
                break
    try:
        while select.select([main], [], [], 0.2)[0]:
            screen += os.read(main, 65536)
    except OSError:
        pass
    os.close(main)
    return process.wait(10), screen.decode("utf-8", "replace")


def test_the_dashboard_shows_no_canary_and_a_crash_is_exit_1_with_a_masked_report(
    home: Home, tmp_path: Path
) -> None:
    code, screen = run_in_terminal(home, ["--profile", "wrong", "ui", "--refresh", "0.5"], {}, 6)
    assert code == 0 and "refused" in screen
    assert CANARY not in screen

    # A crash: the overview raises, with the broker URL (canary included) in a local variable and the text.
    hook = tmp_path / "hook"
    hook.mkdir()
    (hook / "sitecustomize.py").write_text(
        "from tqadmin.tui.screens.overview import OverviewScreen\n"
        "def crash(self):\n"
        "    url = self.app.settings.broker_url\n"
        "    raise RuntimeError(f'cannot draw {url}')\n"
        "OverviewScreen.on_mount = crash\n"
    )
    env = {"PYTHONPATH": os.pathsep.join([str(hook), *sys.path])}
    code, screen = run_in_terminal(home, ["--profile", "wrong", "ui"], env, 30)
    assert code == 1
    assert "RuntimeError: cannot draw amqp://guest:***@" in screen.replace("\r\n", "\n").replace("\n", "")
    assert CANARY not in screen
    assert home.hits() == []


def test_a_dying_thread_and_a_failing_metrics_scrape_in_the_worker_show_no_canary(
    home: Home, tmp_path: Path
) -> None:
    """Tracebacks no log handler formats, in the worker process: a thread of it that dies, and a scrape of
    its metrics endpoint that fails, each naming a URL whose password (the canary, with '@', ':' and '/'
    after it) would print raw through Python's own hooks."""
    leaky = f"amqp://ops:{CANARY}@:/x@db.internal/"
    hook = tmp_path / "hook"
    hook.mkdir()
    (hook / "sitecustomize.py").write_text(
        "import threading\n"
        "import tqadmin.telemetry.endpoint as endpoint\n"
        "def collected(families):\n"
        f"    raise RuntimeError('cannot read {leaky}')\n"
        "def dying():\n"
        f"    raise ConnectionError('settler lost {leaky}')\n"
        "entered = endpoint.MetricsServer.__enter__\n"
        "def enter(self):\n"
        "    threading.Thread(target=dying, name='tq-doomed', daemon=True).start()\n"
        "    return entered(self)\n"
        "endpoint._Collected = collected\n"
        "endpoint.MetricsServer.__enter__ = enter\n"
    )
    tasks = tmp_path / "quiet_tasks.py"
    tasks.write_text("from tqadmin import task\n\n@task('t')\ndef t(ctx, job):\n    pass\n")
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = int(probe.getsockname()[1])
    broker = f"sqlite:///{home.root / 'broker.db'}"
    log_path = home.root / "worker.log"
    with log_path.open("wb") as log:
        worker = subprocess.Popen(
            [
                *(sys.executable, "-m", "tqadmin.cli", "-v", "--profile", "good"),
                *("--broker", broker, "--store", broker),
                *("worker", "--queue", "q", "--tasks", str(tasks), "--metrics-port", str(port)),
            ],
            cwd=home.root,
            env={**home.env, "PYTHONPATH": os.pathsep.join([str(hook), *sys.path])},
            stdout=log,
            stderr=log,
            start_new_session=True,
        )
        try:
            deadline = time.monotonic() + 60
            status = None
            while status != 500 and time.monotonic() < deadline and worker.poll() is None:
                try:
                    urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5).close()
                except urllib.error.HTTPError as exc:
                    status = exc.code
                    exc.close()
                except (urllib.error.URLError, ConnectionError):
                    time.sleep(0.2)  # not listening yet
            assert status == 500, log_path.read_text()
        finally:
            os.killpg(worker.pid, signal.SIGTERM)
            worker.wait(20)
    said = log_path.read_text()
    assert "Exception in thread tq-doomed" in said and "ConnectionError: settler lost amqp://ops:***@" in said
    assert "RuntimeError: cannot read amqp://ops:***@db.internal/" in said
    assert home.hits() == []
