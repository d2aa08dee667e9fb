"""Worker supervision: restarts, notes, and a stop that leaves no process behind."""

import os
import signal
import sys
import time
from pathlib import Path

import pytest

from tqadmin.demo.orchestrator import default_log_dir
from tqadmin.demo.processes import Supervisor

SLEEPER = [sys.executable, "-c", "import time; time.sleep(60)"]
# A worker that starts a grandchild in its own group, then waits: stopping must take both.
PARENT = [
    sys.executable,
    "-c",
    "import subprocess, sys, time; "
    "subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)']); time.sleep(60)",
]
QUITTER = [sys.executable, "-c", "import sys; print('no broker plugin for this URL'); sys.exit(3)"]


def group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True


def in_groups(pgids: list[int]) -> int:
    """How many processes run in the process groups ``pgids``."""
    count = 0
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue  # gone meanwhile
        count += int(fields[2]) in pgids  # the field after the state: the process group
    return count


def wait_until(condition, timeout_s: float = 60.0) -> bool:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.05)
    return condition()


def test_stop_ends_every_worker_and_what_it_started(tmp_path: Path) -> None:
    supervisor = Supervisor({"w1": SLEEPER, "w2": PARENT}, dict(os.environ), tmp_path)
    supervisor.start()
    pids = supervisor.pids()
    assert supervisor.alive() == 2
    assert wait_until(lambda: in_groups(pids) == 3)  # the grandchild started too
    supervisor.stop(grace_s=5)
    assert supervisor.alive() == 0
    assert wait_until(lambda: not any(group_alive(pid) for pid in pids))


def test_each_worker_runs_in_its_own_process_group(tmp_path: Path) -> None:
    supervisor = Supervisor({"w1": SLEEPER}, dict(os.environ), tmp_path)
    supervisor.start()
    try:
        (pid,) = supervisor.pids()
        assert os.getpgid(pid) == pid != os.getpgid(0)
    finally:
        supervisor.stop(grace_s=5)


def test_a_worker_that_exits_is_noted_with_its_last_line_and_restarted_within_the_limit(
    tmp_path: Path,
) -> None:
    supervisor = Supervisor({"w1": QUITTER}, dict(os.environ), tmp_path, max_restarts=2)
    supervisor.start()
    for _ in range(3):
        assert wait_until(
            lambda: (
                supervisor.children[0].process is None or supervisor.children[0].process.poll() is not None
            )
        )
        supervisor.check()
    assert supervisor.gave_up()
    assert supervisor.children[0].exits == [3, 3, 3]
    assert supervisor.notes[0] == "w1 exited with code 3: no broker plugin for this URL"
    supervisor.stop()


def test_a_worker_that_ignores_sigterm_is_killed_after_the_grace(tmp_path: Path) -> None:
    stubborn = [
        sys.executable,
        "-c",
        "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); print('up', flush=True); "
        "time.sleep(60)",
    ]
    supervisor = Supervisor({"w1": stubborn}, dict(os.environ), tmp_path)
    supervisor.start()
    assert wait_until(lambda: "up" in (tmp_path / "w1.log").read_text())
    (pid,) = supervisor.pids()
    supervisor.stop(grace_s=0.2)
    assert wait_until(lambda: not group_alive(pid))


def test_a_worker_dies_with_the_demo_even_when_the_demo_is_killed(tmp_path: Path) -> None:
    script = tmp_path / "demo.py"
    script.write_text(
        "import os, sys, time\n"
        "from pathlib import Path\n"
        "from tqadmin.demo.processes import Supervisor\n"
        f"s = Supervisor({{'w1': {SLEEPER!r}}}, dict(os.environ), Path({str(tmp_path)!r}))\n"
        "s.start()\n"
        "print(s.pids()[0], flush=True)\n"
        "time.sleep(60)\n"
    )
    import subprocess

    demo = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True)
    assert demo.stdout is not None
    worker = int(demo.stdout.readline())
    demo.send_signal(signal.SIGKILL)
    demo.wait()
    assert wait_until(lambda: not group_alive(worker))


def test_only_the_most_recent_runs_keep_their_logs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path))
    made = []
    for n in range(4):
        made.append(default_log_dir(f"p{n}", keep=2))
        os.utime(made[-1], (n, n))  # oldest first
    assert sorted(p.name for p in (tmp_path / "tqadmin" / "demo").iterdir()) == sorted(
        p.name for p in made[2:]
    )
