from pathlib import Path

import pytest

from tqadmin.config import Overrides, resolve
from tqadmin.errors import ConfigError, ReadOnly


def write_config(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "config.toml"
    path.write_text(text)
    return path


def test_without_anything_configured_broker_and_store_are_one_embedded_sqlite_file(tmp_path: Path) -> None:
    settings = resolve(Overrides(), {"HOME": str(tmp_path)})
    expected = f"sqlite:///{tmp_path}/.local/state/tqadmin/tqadmin.db"
    assert settings.broker_url == settings.store_url == expected
    assert not settings.read_only


def test_the_embedded_file_follows_xdg_state_home(tmp_path: Path) -> None:
    settings = resolve(Overrides(), {"HOME": str(tmp_path), "XDG_STATE_HOME": str(tmp_path / "state")})
    assert settings.broker_url == settings.store_url == f"sqlite:///{tmp_path}/state/tqadmin/tqadmin.db"


def test_a_configured_broker_without_a_store_keeps_its_state_in_the_embedded_file(tmp_path: Path) -> None:
    settings = resolve(Overrides(broker_url="amqp://guest:guest@127.0.0.1:5672/%2F"), {"HOME": str(tmp_path)})
    assert settings.store_url == f"sqlite:///{tmp_path}/.local/state/tqadmin/tqadmin.db"


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


def test_a_typo_in_a_profile_is_a_usage_error_naming_the_key_and_the_file(tmp_path: Path) -> None:
    path = write_config(tmp_path, '[profiles.prod]\nbroker = "amqp://p@prod/"\nread_onyl = true\n')
    with pytest.raises(ConfigError, match=r"unknown key 'read_onyl' in \[profiles.prod\]") as info:
        resolve(Overrides(profile="prod", config_path=str(path)), {})
    assert str(path) in str(info.value) and "did you mean 'read_only'" in str(info.value)
    assert info.value.exit_code == 2


def test_unknown_keys_anywhere_are_refused_even_in_a_profile_not_chosen(tmp_path: Path) -> None:
    for text in ('defualt_profile = "x"\n', "[profiles.a]\n[profiles.b]\nprodution = true\n"):
        with pytest.raises(ConfigError, match="unknown key"):
            resolve(Overrides(config_path=str(write_config(tmp_path, text))), {})
    thresholds = "[profiles.a.thresholds]\ndepth_treshold = 5\n"
    with pytest.raises(ConfigError, match="depth_treshold"):
        resolve(Overrides(config_path=str(write_config(tmp_path, thresholds))), {})


def test_read_only_must_be_a_boolean_not_a_string_that_reads_as_true(tmp_path: Path) -> None:
    path = write_config(tmp_path, '[profiles.prod]\nread_only = "no"\n')
    with pytest.raises(ConfigError, match="true or false"):
        resolve(Overrides(profile="prod", config_path=str(path)), {})


def test_a_plugin_option_comes_from_its_flag_its_environment_or_the_profile(tmp_path: Path) -> None:
    path = write_config(
        tmp_path, '[profiles.p]\nbroker = "amqp://u:pw@r/"\nmanagement_url = "http://profile:15672/"\n'
    )
    base = {"TQADMIN_CONFIG": str(path), "TQADMIN_PROFILE": "p"}
    assert resolve(Overrides(), base).broker_options == {"management_url": "http://profile:15672/"}
    env = {**base, "TQADMIN_MANAGEMENT_URL": "http://env:15672/"}
    assert resolve(Overrides(), env).broker_options["management_url"] == "http://env:15672/"
    flag = Overrides(broker_options={"management_url": "http://flag:15672/"})
    config = resolve(flag, env).broker_config()
    assert config.option("management_url") == "http://flag:15672/"
    assert "pw" not in repr(config)


def test_the_stall_window_is_the_profiles_stall_after_s_sixty_seconds_unless_set(tmp_path: Path) -> None:
    path = write_config(tmp_path, "[profiles.a]\nstall_after_s = 15\n[profiles.b]\n")
    env = {"TQADMIN_CONFIG": str(path), "HOME": str(tmp_path)}
    assert resolve(Overrides(profile="a"), env).stall_after_s == 15.0
    assert resolve(Overrides(profile="b"), env).stall_after_s == 60.0


@pytest.mark.parametrize("value", ["0", "-5", '"soon"', "true"])
def test_a_stall_window_that_is_no_positive_number_is_refused(tmp_path: Path, value: str) -> None:
    path = write_config(tmp_path, f"[profiles.a]\nstall_after_s = {value}\n")
    with pytest.raises(ConfigError, match="stall_after_s"):
        resolve(Overrides(profile="a"), {"TQADMIN_CONFIG": str(path), "HOME": str(tmp_path)})
