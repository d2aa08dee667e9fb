"""What the CLI, the logs and the demo ask of the broker plugins instead of knowing a broker themselves:
publish's addressing flags, the levels of a driver's loggers, what to start when a broker is down."""

import importlib
import logging
from pathlib import Path

import pytest

from tqadmin.cli import main
from tqadmin.plugin.registry import driver_log_levels, installed_plugins, installed_publish_options
from tqadmin.show import logs

JOB = '{"task_type": "t", "id": "j1"}'


def test_publish_help_lists_every_publish_option_the_installed_plugins_declare(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit):
        main(["publish", "--help"])
    shown = " ".join(capsys.readouterr().out.split())
    declared = installed_publish_options()
    assert {o.flag for o in declared} >= {"--exchange", "--routing-key"}  # RabbitMQ's, installed here
    for option in declared:
        assert f"{option.flag} {option.name.upper()}" in shown
        assert " ".join(option.help.split()) in shown


@pytest.mark.parametrize("flag", ["--exchange", "--routing-key"])
def test_a_publish_option_the_broker_does_not_declare_is_refused_with_exit_2_before_anything_is_sent(
    flag: str, isolated_env: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = f"memory://refused-{flag.strip('-')}"
    code = main(["--broker", url, "publish", "--queue", "q", flag, "x", "--job", JOB])
    err = capsys.readouterr().err
    assert code == 2
    assert f"the memory broker has no publish option {flag[2:].replace('-', '_')} ({flag})" in err
    assert err.count("\n") == 1
    from tqadmin_memory.broker import broker_for

    assert broker_for(url).queue_names() == []  # refused before anything was declared or sent


def test_an_addressing_option_stands_in_for_the_queue_and_without_either_publish_says_both(
    isolated_env: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["--broker", "memory://no-address", "publish", "--job", JOB]) == 2
    assert "publish needs --queue Q, or --routing-key ROUTING_KEY" in capsys.readouterr().err


def test_each_plugin_class_declares_what_its_transport_does() -> None:
    """The parser reads the plugin class (no driver loaded); the refusal reads the transport's class."""
    for plugin in installed_plugins():
        transport = importlib.import_module(plugin.__module__ + ".transport")
        classes = [c for c in vars(transport).values() if getattr(c, "__module__", "") == transport.__name__]
        (transport_class,) = [c for c in classes if isinstance(c, type) and hasattr(c, "capabilities")]
        assert plugin.transport_capabilities is transport_class.capabilities, plugin.name


def test_the_driver_loggers_are_tuned_as_their_plugin_asks(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(logging.getLogger("pika"), "level", logging.NOTSET)
    assert driver_log_levels(verbose=False) == {"pika": logging.CRITICAL}
    assert driver_log_levels(verbose=True) == {"pika": logging.WARNING}
    logs.setup(False, driver_log_levels(False))
    assert logging.getLogger("pika").level == logging.CRITICAL


def test_a_redis_broker_that_is_down_is_told_to_start_redis_or_fix_the_broker_url_not_the_store(
    isolated_env: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = f"sqlite:///{isolated_env / 'store.db'}"
    code = main(["--broker", "redis://127.0.0.1:1/0", "--store", store, "demo", "--no-ui"])
    err = capsys.readouterr().err
    assert code == 3
    assert "start Redis" in err and "point --broker at a running one" in err
    assert "--store" not in err
