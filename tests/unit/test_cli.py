import subprocess
import sys
from pathlib import Path

import pytest

from tqadmin.cli import COMMANDS, command_in, main
from tqadmin.plugin.registry import installed_options

COMMAND_MODULES = {module for module, _help in COMMANDS.values()}


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


def modules_loaded_by(*argv: str) -> tuple[int, set[str]]:
    """Run ``tqadmin ARGV`` in a fresh interpreter; its exit code and the modules it had imported."""
    code = (
        "import sys\nfrom tqadmin.cli import main\n"
        f"try:\n    main({list(argv)!r})\nexcept SystemExit as e:\n    status = e.code\n"
        "print('\\n'.join(sys.modules), file=sys.stderr)\nsys.exit(status)"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    return result.returncode, set(result.stderr.split())


HEAVY = {"textual", "pika", "httpx", "redis", "boto3"}


def test_help_imports_no_command_module_and_no_driver() -> None:
    code, modules = modules_loaded_by("--help")
    assert code == 0
    assert not {m for m in modules if m.split(".")[0] in HEAVY}
    assert not {m for m in modules if m.removeprefix("tqadmin.commands.") in COMMAND_MODULES}


def test_a_commands_help_imports_that_command_alone() -> None:
    code, modules = modules_loaded_by("--json", "queues", "--help")
    assert code == 0
    assert "tqadmin.commands.queues" in modules
    others = COMMAND_MODULES - {"queues"}
    assert not {m for m in modules if m.removeprefix("tqadmin.commands.") in others}
    assert not {m for m in modules if m.split(".")[0] in HEAVY}


def test_a_command_module_that_cannot_be_imported_breaks_that_command_alone(
    isolated_env: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """An import error in one command module used to be a traceback for every command, --help included."""
    monkeypatch.setitem(sys.modules, "tqadmin.commands.worker", None)  # importing it raises ImportError
    with pytest.raises(SystemExit) as info:
        main(["queues", "--help"])
    assert info.value.code == 0
    assert "--filter" in capsys.readouterr().out
    with pytest.raises(SystemExit) as info:
        main(["--help"])
    assert info.value.code == 0
    assert "worker" in capsys.readouterr().out
    assert main(["worker", "--queue", "q", "--tasks", "t"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "internal error" in err and "Traceback" not in err


def test_the_command_is_the_first_word_that_is_no_option_value() -> None:
    assert command_in(["--profile", "queues", "peek", "q"]) == "peek"
    assert command_in(["--management-url", "http://h/", "queues"], installed_options()) == "queues"
    assert command_in(["--json", "--timeout=3", "queues"]) == "queues"
    assert command_in(["--json"]) is None
    assert command_in(["nope"]) is None
