"""Files of message data (export, purge --backup, publish --report) on the embedded broker: each is a new file
0600, never written through a symbolic link, and an existing file is replaced only with ``--force``, by a new
file (its old mode and hard links are not kept), checked before anything is fetched, purged or published.
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlite_kit import Kit

TqJson = Callable[..., tuple[int, Any, str]]
CANARY_BODY = b'{"task_type": "t", "id": "j1", "card": "4111-canary"}'


@pytest.fixture
def kit(tmp_path: Path, isolated_env: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Kit]:
    k = Kit(tmp_path / "broker.db")
    monkeypatch.setenv("TQADMIN_BROKER_URL", k.url)
    monkeypatch.setenv("TQADMIN_STORE_URL", k.url)
    old_umask = os.umask(0o022)  # the usual one: a plain open() would make the file 0644
    k.publish("q", CANARY_BODY)
    yield k
    os.umask(old_umask)
    k.close()


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def existing(path: Path, text: str = "keep me\n") -> Path:
    path.write_text(text)
    path.chmod(0o644)
    return path


def test_export_writes_a_new_file_0600(kit: Kit, tq_json: TqJson, tmp_path: Path) -> None:
    out = tmp_path / "out.jsonl"
    code, report, _ = tq_json("export", "q", str(out))
    assert code == 0 and report["moved"] == 1
    assert mode(out) == 0o600 and b"4111-canary" in out.read_bytes()


def test_export_over_an_existing_file_is_refused_without_force_and_replaced_by_a_new_0600_file_with_it(
    kit: Kit, tq_json: TqJson, tmp_path: Path
) -> None:
    out = existing(tmp_path / "out.jsonl")
    other_name = tmp_path / "hard-link.txt"
    os.link(out, other_name)
    code, _, err = tq_json("export", "q", str(out))
    assert code == 2 and "exists" in err and "--force" in err and err.count("\n") == 1
    assert out.read_text() == "keep me\n" and mode(out) == 0o644
    code, report, _ = tq_json("export", "q", str(out), "--force")
    assert code == 0 and report["moved"] == 1
    assert mode(out) == 0o600 and b"4111-canary" in out.read_bytes()
    assert other_name.read_text() == "keep me\n", "the old file's other name is not written through"


@pytest.mark.parametrize("force", [(), ("--force",)])
def test_export_to_a_symbolic_link_is_refused_even_with_force(
    kit: Kit, tq_json: TqJson, tmp_path: Path, force: tuple[str, ...]
) -> None:
    victim = existing(tmp_path / "authorized_keys")
    link = tmp_path / "q.jsonl"
    link.symlink_to(victim)
    dangling = tmp_path / "dangling.jsonl"
    dangling.symlink_to(tmp_path / "nowhere")
    for target in (link, dangling):
        code, _, err = tq_json("export", "q", str(target), *force)
        assert code == 2 and "symbolic link" in err and err.count("\n") == 1
    assert victim.read_text() == "keep me\n" and not (tmp_path / "nowhere").exists()


def test_purge_backup_over_an_existing_file_purges_nothing_without_force(
    kit: Kit, tq_json: TqJson, tmp_path: Path
) -> None:
    backup = existing(tmp_path / "backup.jsonl")
    code, _, err = tq_json("purge", "q", "--yes", "--backup", str(backup))
    assert code == 2 and "--force" in err
    assert kit.stats("q").messages == 1 and backup.read_text() == "keep me\n"
    code, report, _ = tq_json("purge", "q", "--yes", "--backup", str(backup), "--force")
    assert code == 0 and report["purged"] == 1
    assert mode(backup) == 0o600 and b"4111-canary" in backup.read_bytes()


def test_publish_report_is_0600_and_an_existing_one_is_refused_before_anything_is_published(
    kit: Kit, tq_json: TqJson, tmp_path: Path
) -> None:
    report = existing(tmp_path / "report.json")
    job = json.dumps({"task_type": "t", "id": "p1"})
    code, _, err = tq_json("publish", "--queue", "q", "--job", job, "--report", str(report))
    assert code == 2 and "--force" in err
    assert kit.stats("q").messages == 1, "nothing was published"
    code, _, _ = tq_json("publish", "--queue", "q", "--job", job, "--report", str(report), "--force")
    assert code == 0 and kit.stats("q").messages == 2
    assert mode(report) == 0o600 and json.loads(report.read_text())["jobs"] == {"p1": "confirmed"}
