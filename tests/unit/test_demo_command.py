"""`tqadmin demo` refuses what it cannot do before starting anything."""

import subprocess
import sys
from pathlib import Path

import pytest

from tqadmin.cli import main


def test_a_read_only_profile_refuses_the_demo_before_anything_is_sent(
    isolated_env: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["demo", "--no-ui", "--read-only", "--broker", "amqp://guest:guest@127.0.0.1:1/"]) == 6
    assert "demo refused" in capsys.readouterr().err


@pytest.mark.parametrize(
    "argv",
    [
        ["--failure-rate", "1.5"],
        ["--failure-rate", "ten"],
        ["--workers", "0"],
        ["--rate", "0"],
        ["--queue-prefix", "has.dot"],
        ["--duration", "-3"],
    ],
)
def test_bad_options_are_usage_errors(isolated_env: Path, argv: list[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(["demo", "--no-ui", *argv])
    assert info.value.code == 2


@pytest.mark.parametrize("module", ["tqadmin.commands.demo", "tqadmin.demo.tasks", "tqadmin.demo.wiring"])
def test_the_headless_demo_and_its_task_module_import_no_textual_and_no_driver(module: str) -> None:
    code = (
        f"import sys, importlib; importlib.import_module({module!r}); "
        "print(','.join(m for m in ('textual', 'pika', 'redis', 'httpx') if m in sys.modules))"
    )
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert loaded.stdout.strip() == ""


def test_without_a_terminal_the_dashboard_is_refused_before_anything_starts(
    isolated_env: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["demo", "--broker", "amqp://guest:guest@127.0.0.1:1/"]) == 2
    assert "--no-ui" in capsys.readouterr().err
