"""How the dashboard is opened: ``TqadminApp()`` configured like the CLI, and ``tqadmin ui`` options."""

from __future__ import annotations

from pathlib import Path

import pytest

from tqadmin.cli import build_parser
from tqadmin.reading.reading import Part
from tqadmin.tui import TqadminApp


def test_the_app_takes_broker_profile_and_store_from_the_environment(
    isolated_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = isolated_env / "config.toml"
    config.write_text('[profiles.ops]\nbroker = "amqp://ops:pw@rabbit:5672/"\nread_only = true\n')
    monkeypatch.setenv("TQADMIN_CONFIG", str(config))
    monkeypatch.setenv("TQADMIN_STORE_URL", "redis://store:6379/3")
    app = TqadminApp(profile="ops")
    assert app.settings.broker_url == "amqp://ops:pw@rabbit:5672/"
    assert app.settings.read_only
    assert "pw" not in app.poll_state.target
    assert (app.telemetry_source, app.cron_source) == (None, None)  # the read service's, from the store
    assert app.sources.store_parts == {Part.WORKERS, Part.TELEMETRY, Part.CRON, Part.PAUSES}
    assert app.reader.settings.store_url == "redis://store:6379/3"


def test_ui_takes_a_refresh_interval_and_refuses_a_silly_one(capsys: pytest.CaptureFixture[str]) -> None:
    assert build_parser().parse_args(["ui", "--refresh", "5"]).refresh == 5.0
    with pytest.raises(SystemExit) as exit_info:
        build_parser().parse_args(["ui", "--refresh", "0.01"])
    assert exit_info.value.code == 2
    assert "at least 0.2" in capsys.readouterr().err


def test_only_the_tui_package_imports_textual() -> None:
    root = Path(__file__).resolve().parents[2] / "tqadmin"
    offenders = [
        str(path.relative_to(root))
        for path in root.rglob("*.py")
        if "tui" not in path.relative_to(root).parts[:1]
        and any(
            line.lstrip().startswith(("import textual", "from textual"))
            for line in path.read_text(encoding="utf-8").splitlines()
        )
    ]
    assert offenders == []
