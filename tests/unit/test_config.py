from pathlib import Path

import pytest

from tqadmin.config import DEFAULT_BROKER_URL, Overrides, resolve
from tqadmin.errors import ConfigError, ReadOnly


def write_config(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "config.toml"
    path.write_text(text)
    return path


def test_without_anything_configured_the_local_rabbitmq_is_used(tmp_path: Path) -> None:
    settings = resolve(Overrides(), {"HOME": str(tmp_path)})
    assert settings.broker_url == DEFAULT_BROKER_URL
    assert not settings.read_only


def test_flags_beat_environment_beats_profile(tmp_path: Path) -> None:
    path = write_config(tmp_path, '[profiles.prod]\nbroker = "amqp://p@prod/"\nstore = "redis://prod/"\n')
    env = {"TQADMIN_CONFIG": str(path), "TQADMIN_PROFILE": "prod", "TQADMIN_BROKER_URL": "amqp://e@env/"}
    assert resolve(Overrides(), env).broker_url == "amqp://e@env/"
    assert resolve(Overrides(), env).store_url == "redis://prod/"
    assert resolve(Overrides(broker_url="amqp://f@flag/"), env).broker_url == "amqp://f@flag/"


def test_a_read_only_profile_refuses_writes_before_anything_is_sent(tmp_path: Path) -> None:
    path = write_config(tmp_path, "[profiles.prod]\nread_only = true\n")
    settings = resolve(Overrides(profile="prod", config_path=str(path)), {})
    with pytest.raises(ReadOnly) as info:
        settings.require_writable("purge")
    assert info.value.exit_code == 6
    assert "prod" in str(info.value)


def test_an_unknown_profile_names_the_defined_ones(tmp_path: Path) -> None:
    path = write_config(tmp_path, "[profiles.staging]\n[profiles.prod]\n")
    with pytest.raises(ConfigError, match="staging, prod"):
        resolve(Overrides(profile="dev", config_path=str(path)), {})


def test_a_broken_config_file_is_a_usage_error_not_a_traceback(tmp_path: Path) -> None:
    path = write_config(tmp_path, "[profiles.prod\n")
    with pytest.raises(ConfigError, match="not valid TOML"):
        resolve(Overrides(config_path=str(path)), {})


def test_describe_masks_the_password(tmp_path: Path) -> None:
    settings = resolve(Overrides(broker_url="amqp://admin:topsecret@rabbit/"), {"HOME": str(tmp_path)})
    assert "topsecret" not in settings.describe()
    assert "admin:***@rabbit" in settings.describe()
