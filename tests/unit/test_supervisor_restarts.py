"""The worker supervisor starts a fresh process after a plugin fault, with backoff, and counts restarts."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from tqadmin.pipeline.supervisor import Restart, restarts, supervise


def test_a_child_that_asks_for_a_fresh_process_gets_one_and_each_restart_is_counted(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Two plugin faults in a row, then the fault has passed: the third process runs and exits 0."""
    seen = tmp_path / "restarts-seen-by-each-child"

    def child() -> int:
        with seen.open("a") as out:
            out.write(f"{restarts()}\n")
        return Restart(1) if len(seen.read_text().split()) < 3 else 0

    with caplog.at_level(logging.WARNING, "tqadmin.worker"):
        assert supervise(child) == 0
    assert seen.read_text().split() == ["0", "1", "2"]  # what each child's heartbeat carries
    said = [r.getMessage() for r in caplog.records if "restart" in r.getMessage()]
    assert len(said) == 2
    assert "stopped after a fault (exit 1); restart 1 in" in said[0]
    assert "restart 2 in" in said[1]


def test_a_child_that_exits_1_on_its_own_bug_is_not_restarted(tmp_path: Path) -> None:
    """A worker bug stops the worker (exit 1) rather than run the same job into it for ever."""
    seen = tmp_path / "children"

    def child() -> int:
        with seen.open("a") as out:
            out.write("x")
        return 1

    assert supervise(child) == 1
    assert seen.read_text() == "x"
