"""Bad input to `tqadmin exporter` is exit 2 before anything is served, naming what is wrong."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from tqadmin.cli import main


def exit_code(argv: list[str]) -> int | str | None:
    """What the process would exit with: argparse's own errors leave through SystemExit."""
    try:
        return main(argv)
    except SystemExit as exc:
        return exc.code


@pytest.fixture
def config(isolated_env: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = isolated_env / "config.toml"
    path.write_text('[profiles.prod]\nbroker = "sqlite:///%s"\n' % (isolated_env / "tq.db"))
    monkeypatch.setenv("TQADMIN_CONFIG", str(path))
    return path


def test_a_profile_that_does_not_exist_is_named_with_those_that_do(
    config: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["exporter", "--listen", "127.0.0.1:0", "--profiles", "prod,prdo"]) == 2
    err = capsys.readouterr().err
    assert "profile 'prdo' is not defined" in err and "prod" in err and "serving" not in err


def test_a_port_in_use_is_refused_before_serving(config: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        assert main(["exporter", "--listen", f"127.0.0.1:{port}", "--profiles", "prod"]) == 2
    err = capsys.readouterr().err
    assert f"cannot serve metrics on 127.0.0.1:{port}" in err and "--listen" in err and "serving" not in err


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["--listen", "9808"], "expected HOST:PORT"),
        (["--listen", "127.0.0.1:99999"], "expected HOST:PORT"),
        (["--profiles", ","], "names no profile"),
        (["--profiles", "prod,prod"], "names a profile twice"),
        (["--interval", "0"], "must be greater than 0"),
        (["--max-queues", "many"], "not a valid number"),
    ],
)
def test_bad_options_are_usage_errors(
    config: Path, capsys: pytest.CaptureFixture[str], argv: list[str], said: str
) -> None:
    assert exit_code(["exporter", *argv]) == 2
    assert said in capsys.readouterr().err


def test_an_environment_url_that_would_override_every_profile_is_refused(
    config: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    config.write_text(config.read_text() + '[profiles.staging]\nbroker = "sqlite:///elsewhere.db"\n')
    monkeypatch.setenv("TQADMIN_BROKER_URL", "redis://127.0.0.1:6379/0")
    assert main(["exporter", "--listen", "127.0.0.1:0", "--profiles", "prod,staging"]) == 2
    assert "TQADMIN_BROKER_URL would point every profile" in capsys.readouterr().err
