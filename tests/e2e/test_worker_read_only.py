"""A read-only run refuses `tqadmin worker` (exit 6) before it connects: a worker acks, retries and
dead-letters, so it writes to the broker however it is started. The real CLI, on the embedded broker in a
temporary HOME."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from fresh_home import environment as fresh_environment
from fresh_home import tqadmin as fresh_tqadmin

TASKS = """
from pathlib import Path
from tqadmin import task

@task("touch")
def touch(ctx, job):
    Path(job["path"]).write_text(ctx.job_id)
"""


@pytest.fixture
def home(tmp_path: Path) -> Path:
    (tmp_path / "tasks.py").write_text(TASKS)
    return tmp_path


def environment(home: Path, **extra: str) -> dict[str, str]:
    return fresh_environment(home, **{"TQADMIN_AUDIT_LOG": str(home / "audit.jsonl"), **extra})


def tqadmin(home: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return fresh_tqadmin(home, *args, **{"TQADMIN_AUDIT_LOG": str(home / "audit.jsonl"), **env})


def worker(home: Path, *global_options: str, **env: str) -> subprocess.CompletedProcess[str]:
    """A worker run that must end by itself: one that is not refused consumes until it is killed here
    (supervisor and child, its whole session), and the test fails."""
    command = [sys.executable, "-m", "tqadmin.cli", *global_options, "worker", "--queue", "jobs"]
    command += ["--tasks", str(home / "tasks.py")]
    process = subprocess.Popen(
        command,
        env=environment(home, **env),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        out, err = process.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        out, err = process.communicate()
        pytest.fail(f"the worker was not refused: it ran until killed\n{err[-2000:]}")
    return subprocess.CompletedProcess(command, process.returncode, out, err)


def queued_job(home: Path) -> Path:
    """One job in queue ``jobs`` of the embedded broker; returns the file its task would write."""
    effect = home / "ran.txt"
    job = json.dumps({"task_type": "touch", "id": "job-1", "path": str(effect)})
    assert tqadmin(home, "publish", "--queue", "jobs", "--job", job).returncode == 0
    return effect


def untouched(home: Path, effect: Path) -> None:
    """The job is still queued, never delivered, and its task never ran."""
    peek = tqadmin(home, "--json", "peek", "jobs")
    assert peek.returncode == 0, peek.stderr
    (message,) = json.loads(peek.stdout)["messages"]
    assert message["id"] == "job-1" and message["delivery_count"] == 0
    assert not effect.exists()


def test_read_only_flag_refuses_the_worker_with_exit_6_and_leaves_the_queue_as_it_was(home: Path) -> None:
    effect = queued_job(home)
    refused = worker(home, "--read-only")
    assert refused.returncode == 6
    assert refused.stderr.strip().splitlines() == [
        "tqadmin: worker refused: read-only mode is on; nothing was sent"
    ]
    untouched(home, effect)


def test_a_read_only_profile_refuses_the_worker_naming_the_profile(home: Path) -> None:
    effect = queued_job(home)
    config = home / "config.toml"
    config.write_text("[profiles.watch]\nread_only = true\n")
    refused = worker(home, "--profile", "watch", TQADMIN_CONFIG=str(config))
    assert refused.returncode == 6
    assert "profile 'watch' is read-only" in refused.stderr and "worker" in refused.stderr
    untouched(home, effect)


def test_the_read_only_refusal_does_not_depend_on_the_audit_log(home: Path) -> None:
    """A worker writes no audit record: an unwritable audit log is no reason to refuse it, so a read-only
    run is refused for being read-only, whatever the state of the audit log."""
    effect = queued_job(home)
    blocked = home / "not-a-folder"
    blocked.write_text("")
    refused = worker(home, "--read-only", TQADMIN_AUDIT_LOG=str(blocked / "audit.jsonl"))
    assert refused.returncode == 6 and "read-only" in refused.stderr and "audit" not in refused.stderr
    untouched(home, effect)
