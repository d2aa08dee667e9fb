"""Folders made for files that may hold personal data are 0700, each one made on the way, not only the
last (``mkdir -p`` gives the others the umask's 0755); folders that exist keep their mode."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from tqadmin.demo.orchestrator import default_log_dir
from tqadmin.files.private import make_private_folder

pytestmark = pytest.mark.usefixtures("usual_umask")  # 022: a plain create would give 0644, 0755


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_every_folder_made_is_0700_and_an_existing_one_keeps_its_mode(tmp_path: Path) -> None:
    tmp_path.chmod(0o755)
    make_private_folder(tmp_path / "a" / "b" / "c")
    assert [mode(tmp_path / p) for p in ("a", "a/b", "a/b/c")] == [0o700] * 3
    assert mode(tmp_path) == 0o755
    make_private_folder(tmp_path / "a" / "b")  # already there: nothing to do
    (tmp_path / "file").write_text("")
    with pytest.raises(OSError):
        make_private_folder(tmp_path / "file" / "below")


def test_the_demos_log_folders_are_private(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    logs = default_log_dir("demo")
    assert [mode(p) for p in (logs, logs.parent, logs.parent.parent)] == [0o700] * 3
