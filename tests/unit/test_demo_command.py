"""`tqadmin demo` refuses what it cannot do before starting anything."""

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
