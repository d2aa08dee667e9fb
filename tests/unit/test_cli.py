from pathlib import Path

import pytest

from tqadmin.cli import main


def test_global_options_work_before_and_after_the_command(
    isolated_env: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for argv in (["--broker", "nope://x", "queues"], ["queues", "--broker", "nope://x"]):
        assert main(argv) == 2
        assert "no broker plugin" in capsys.readouterr().err


def test_an_unknown_scheme_is_one_line_with_the_known_schemes(
    isolated_env: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["queues", "--broker", "kafka://user:pw123@host/"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert "amqp://" in err
    assert "pw123" not in err


def test_usage_errors_exit_2(isolated_env: Path) -> None:
    with pytest.raises(SystemExit) as info:
        main(["queues", "--timeout", "-1"])
    assert info.value.code == 2


def test_errors_keep_stdout_clean_for_json_consumers(
    isolated_env: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["queues", "--json", "--broker", "nope://"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.startswith("tqadmin: ")
