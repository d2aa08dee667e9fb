"""`tqadmin --version` and `tqadmin completion bash|zsh|fish`, each script run by its own shell.

bash runs the completion function as readline would call it (COMP_WORDS, COMP_CWORD); fish answers
``complete -C``, its own completion of a command line; zsh runs the function with the completion system's
builtins (``compadd``, ``_describe``, ``_files``) replaced by stand-ins that print what would be offered,
unfiltered. A shell that is not installed skips its tests. The profiles offered come from a config file of
the test's own, through ``tqadmin completion --profiles`` as the scripts call it.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from tqadmin import __version__
from tqadmin.cli import main

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
ZSH_STANDINS = r"""
compdef() { : }
compadd() { while [[ $# -gt 0 && $1 != -- ]]; do shift; done; shift; print -rl -- "$@" }
_describe() { local -a described; described=("${(@P)${@[-1]}}"); print -rl -- "${described[@]%%:*}" }
_files() { print -r -- '<files>' }
source $1
shift
words=("$@"); CURRENT=$#
_tqadmin
"""


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    home = tmp_path_factory.mktemp("completion-home")
    (home / "config.toml").write_text(
        '[profiles.prod]\nbroker = "amqp://127.0.0.1"\n\n[profiles.staging-eu]\nbroker = "amqp://127.0.0.1"\n'
    )
    return home


@pytest.fixture(scope="module")
def env(home: Path) -> dict[str, str]:
    return {
        "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}",
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "XDG_DATA_HOME": str(home / ".local" / "share"),
        "TQADMIN_CONFIG": str(home / "config.toml"),
        "TQADMIN_PROFILE": "no-such-profile",  # completion reads no settings: a bad one does not stop it
    }


def script(shell: str, home: Path, env: dict[str, str]) -> Path:
    """The script of ``shell`` as ``tqadmin completion SHELL`` prints it, generated once per module."""
    if shutil.which(shell) is None:
        pytest.skip(f"{shell} is not installed")
    path = home / f"tqadmin.{shell}"
    if path.exists():
        return path
    done = subprocess.run(
        [str(BIN / "tqadmin"), "completion", shell], env=env, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    path.write_text(done.stdout)
    return path


def offered(shell: str, home: Path, env: dict[str, str], line: str) -> list[str]:
    """What ``shell`` offers for ``line`` (the cursor at its end)."""
    path = script(shell, home, env)
    words = line.split(" ")
    if shell == "bash":
        quoted = " ".join(f"'{word}'" for word in words)
        code = f"source {path}; COMP_WORDS=({quoted}); COMP_CWORD={len(words) - 1}; _tqadmin"
        code += '; printf "%s\\n" "${COMPREPLY[@]}"'
        command = ["bash", "--norc", "--noprofile", "-c", code]
    elif shell == "zsh":
        (home / "standins.zsh").write_text(ZSH_STANDINS)
        command = ["zsh", "-f", str(home / "standins.zsh"), str(path), *words]
    else:
        command = ["fish", "--no-config", "-c", f'source {path}; complete -C "{line}"']
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    return [entry.split("\t")[0] for entry in done.stdout.splitlines() if entry]


SHELLS = ["bash", "zsh", "fish"]


@pytest.mark.parametrize("shell", SHELLS)
def test_the_commands_are_offered_first(shell: str, home: Path, env: dict[str, str]) -> None:
    found = offered(shell, home, env, "tqadmin ")
    assert {"queues", "dead-letters", "worker", "completion"} <= set(found)
    assert "--json" not in found


@pytest.mark.parametrize("shell", SHELLS)
def test_the_config_files_profiles_are_offered_after_profile(
    shell: str, home: Path, env: dict[str, str]
) -> None:
    assert offered(shell, home, env, "tqadmin --profile ") == ["prod", "staging-eu"]
    assert offered(shell, home, env, "tqadmin queues --profile ") == ["prod", "staging-eu"]
    assert offered(shell, home, env, "tqadmin exporter --profiles ") == ["prod", "staging-eu"]


@pytest.mark.parametrize("shell", SHELLS)
def test_a_global_options_value_is_not_taken_for_the_command(
    shell: str, home: Path, env: dict[str, str]
) -> None:
    found = offered(shell, home, env, "tqadmin --profile prod que")
    assert "queues" in found and "prod" not in found


@pytest.mark.parametrize("shell", SHELLS)
def test_a_commands_options_and_the_global_ones_follow_it(
    shell: str, home: Path, env: dict[str, str]
) -> None:
    found = offered(shell, home, env, "tqadmin peek -")
    assert {"-n", "--yes", "--json", "--profile"} <= set(found)
    assert "--group-by" not in found and "--version" not in found
    assert "--version" in offered(shell, home, env, "tqadmin -")


@pytest.mark.parametrize("shell", SHELLS)
def test_choices_are_offered_after_their_option_and_command(
    shell: str, home: Path, env: dict[str, str]
) -> None:
    assert sorted(offered(shell, home, env, "tqadmin dead-letters --group-by ")) == [
        "error",
        "reason",
        "task_type",
    ]
    assert sorted(offered(shell, home, env, "tqadmin completion ")) == ["bash", "fish", "zsh"]


def test_version_prints_the_packages_version(capsys: pytest.CaptureFixture[str]) -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert __version__ == project["version"]
    for argv in (["--version"], ["queues", "--version"]):
        with pytest.raises(SystemExit) as info:
            main(argv)
        assert info.value.code == 0
        assert capsys.readouterr().out == f"tqadmin {__version__}\n"


def test_completion_without_a_shell_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["completion"]) == 2
    assert "bash|zsh|fish" in capsys.readouterr().err


def test_profiles_of_a_broken_config_are_none_and_no_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    broken = tmp_path / "config.toml"
    broken.write_text("[profiles.prod\n")
    assert main(["completion", "--profiles", "--config", str(broken)]) == 0
    assert capsys.readouterr() == ("", "")
