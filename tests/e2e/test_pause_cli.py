"""``tqadmin pause``, ``resume`` and ``pauses`` through the real CLI: on the embedded default (one SQLite
file) and on Redis; the audit records, the refusals (read-only, no ``--for``, another framework's queue)."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path
from typing import Any

import pytest

from tqadmin.cli import main

REDIS = "redis://127.0.0.1:6379/0"


def run_json(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, Any]:
    code = main(["--json", *argv])
    out = capsys.readouterr().out
    return code, json.loads(out) if out.strip() else None


def audit_lines(home: Path) -> list[dict[str, Any]]:
    path = home / "audit.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def test_pause_pauses_resume(isolated_env: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, done = run_json(
        capsys, "pause", "orders", "--task-type", "resize", "--for", "10m", "--reason", "vendor 503", "--yes"
    )
    assert code == 0 and done["action"] == "pause"
    assert done["pause"]["task_type"] == "resize" and done["pause"]["until"].endswith("Z")
    assert run_json(capsys, "pause", "orders", "--for", "forever", "--yes")[0] == 0

    code, listed = run_json(capsys, "pauses")
    assert code == 0
    by_type = {p["task_type"]: p for p in listed["pauses"]}
    assert set(by_type) == {"resize", None}
    typed = by_type["resize"]
    assert (typed["queue"], typed["reason"], typed["schedule"]) == ("orders", "vendor 503", None)
    assert typed["who"] and typed["since"].endswith("Z") and 500 < typed["left_s"] <= 600
    assert by_type[None]["until"] is None and by_type[None]["left_s"] is None

    assert run_json(capsys, "resume", "orders", "--task-type", "resize", "--yes")[0] == 0
    assert [p["task_type"] for p in run_json(capsys, "pauses")[1]["pauses"]] == [None]
    code, nothing = run_json(capsys, "resume", "orders", "--task-type", "resize", "--yes")
    assert code == 0 and nothing["pause"] is None

    records = audit_lines(isolated_env)
    assert [(r["action"], r["target"], r["task_type"], r["outcome"]) for r in records] == [
        ("pause", "orders", "resize", "ok"),
        ("pause", "orders", None, "ok"),
        ("resume", "orders", "resize", "ok"),
    ]
    assert records[0]["reason"] == "vendor 503" and records[0]["until"].endswith("Z") and records[0]["who"]
    assert records[1]["until"] is None and records[2]["paused_for"] == "vendor 503"


def test_a_pause_needs_for(isolated_env: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["pause", "orders", "--yes"]) == 2
    assert "--for forever" in capsys.readouterr().err
    assert main(["pause", "orders", "--for", "10", "--yes"]) == 2
    assert "30s, 10m, 2h" in capsys.readouterr().err
    assert run_json(capsys, "pauses")[1] == {"pauses": []}
    assert audit_lines(isolated_env) == []


def test_read_only_refuses_before_any_write(isolated_env: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run_json(capsys, "pause", "orders", "--for", "1h", "--yes")[0] == 0
    for argv in (["pause", "orders", "--for", "5m", "--yes"], ["resume", "orders", "--yes"]):
        assert main(["--read-only", *argv]) == 6
        assert "read-only" in capsys.readouterr().err
    code, listed = run_json(capsys, "--read-only", "pauses")
    assert code == 0 and [p["until"] is not None for p in listed["pauses"]] == [True]
    assert [r["action"] for r in audit_lines(isolated_env)] == ["pause"]


def test_without_a_terminal_a_pause_needs_yes(isolated_env: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["pause", "orders", "--for", "5m"]) == 2
    assert "--yes" in capsys.readouterr().err
    assert run_json(capsys, "pauses")[1] == {"pauses": []}


def test_an_expiry_is_audited_once(isolated_env: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run_json(capsys, "pause", "orders", "--for", "1s", "--reason", "short", "--yes")[0] == 0
    deadline = time.monotonic() + 20
    while run_json(capsys, "pauses")[1]["pauses"]:
        assert time.monotonic() < deadline, "the pause never expired"
        time.sleep(0.2)
    assert run_json(capsys, "pause", "other", "--for", "1h", "--yes")[0] == 0
    assert run_json(capsys, "resume", "other", "--yes")[0] == 0
    expiries = [r for r in audit_lines(isolated_env) if r["outcome"] == "expired"]
    assert len(expiries) == 1
    [gone] = expiries
    assert (gone["action"], gone["target"], gone["reason"], gone["who"]) == (
        "resume",
        "orders",
        "resumed by expiry",
        "expiry",
    )
    assert gone["paused_for"] == "short"


@pytest.mark.redis
def test_another_frameworks_queue_is_refused(
    isolated_env: Path, capsys: pytest.CaptureFixture[str], unique: str
) -> None:
    store = f"{REDIS}?prefix=tqp{unique}"
    for name, way in (("celery:jobs", "cancel_consumer"), ("rq:default", "rq suspend")):
        assert main(["--broker", REDIS, "--store", store, "pause", name, "--for", "5m", "--yes"]) == 6
        error = capsys.readouterr().err
        assert way in error and "nothing was written" in error
    assert run_json(capsys, "--store", store, "pauses")[1] == {"pauses": []}
    assert audit_lines(isolated_env) == []


def test_queues_show_their_pauses(isolated_env: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for queue in ("orders", "mail"):
        assert main(["publish", "--queue", queue, "--job", '{"task_type": "charge"}']) == 0
    capsys.readouterr()
    assert (
        run_json(
            capsys, "pause", "orders", "--task-type", "charge", "--for", "2h", "--reason", "psp", "--yes"
        )[0]
        == 0
    )
    code, listed = run_json(capsys, "queues")
    assert code == 0
    paused = {q["name"]: q["paused"] for q in listed["queues"]}
    assert paused["mail"] == []
    [charge] = paused["orders"]
    assert (charge["task_type"], charge["reason"]) == ("charge", "psp") and charge["left_s"] > 7000
    assert main(["queues"]) == 0
    assert re.search(
        r"^paused orders \(charge\): paused (1h59m|2h00m) left: psp$", capsys.readouterr().out, re.M
    )


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["pause", "--for", "1m", "--yes"], "name a QUEUE or --schedule NAME"),
        (["pause", "orders", "--schedule", "nightly", "--for", "1m", "--yes"], "name a QUEUE or --schedule"),
        (
            ["pause", "--schedule", "nightly", "--task-type", "t", "--for", "1m", "--yes"],
            "not with --schedule",
        ),
        (["resume", "--yes"], "name a QUEUE or --schedule NAME"),
    ],
)
def test_a_pause_names_a_queue_or_a_schedule(
    isolated_env: Path, capsys: pytest.CaptureFixture[str], argv: list[str], said: str
) -> None:
    assert main(argv) == 2
    assert said in capsys.readouterr().err
    assert audit_lines(isolated_env) == []


def test_a_schedule_is_paused_and_resumed_like_a_queue(
    isolated_env: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, paused = run_json(
        capsys, "pause", "--schedule", "nightly", "--for", "2h", "--reason", "dw", "--yes"
    )
    assert code == 0 and paused["target"] == "nightly"
    assert paused["pause"]["schedule"] == "nightly" and paused["pause"]["queue"] is None
    code, listed = run_json(capsys, "pauses")
    assert [p["target"] for p in listed["pauses"]] == ["nightly"]
    code, resumed = run_json(capsys, "resume", "--schedule", "nightly", "--yes")
    assert code == 0 and resumed["pause"]["reason"] == "dw"
    records = audit_lines(isolated_env)
    assert [(r["action"], r["target"], r["schedule"]) for r in records] == [
        ("pause", "nightly", "nightly"),
        ("resume", "nightly", "nightly"),
    ]
    assert main(["--read-only", "pause", "--schedule", "nightly", "--for", "1m", "--yes"]) == 6
    assert len(audit_lines(isolated_env)) == 2
