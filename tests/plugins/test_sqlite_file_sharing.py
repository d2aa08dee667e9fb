"""The traps of one SQLite file shared by processes: kill -9 mid-transaction, "database is locked", long
reads, the state store's transactions beside the broker's, and network filesystems."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest
from sqlite_kit import Kit, wait_for

from tqadmin.errors import ConfigError
from tqadmin.files.sqlite import network_filesystem
from tqadmin.plugin.models import Message
from tqadmin.store import open_store


def run_child(code: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code), *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


CLAIM_THEN_DIE = """
    import os, signal, sys
    from tqadmin.plugin.base import BrokerConfig
    from tqadmin.files.access import Access
    from tqadmin_sqlite.database import BrokerFile
    from tqadmin_sqlite import rows

    broker = BrokerFile(BrokerConfig(url=sys.argv[1]), access=Access.CREATE)
    commit = sys.argv[2] == "commit"
    with broker.write() as tx:
        taken = rows.claim(tx, "q", "doomed", 100, 500)
        assert len(taken) == 3
        if not commit:
            os.kill(os.getpid(), signal.SIGKILL)  # inside the transaction, the write lock held
    os.kill(os.getpid(), signal.SIGKILL)  # after the commit, before any ack
"""


def test_a_process_killed_inside_its_claiming_transaction_leaves_nothing_claimed(tmp_path: Path) -> None:
    kit = Kit(tmp_path / "broker.db", timeout_s=5)
    kit.publish("q", b"a", b"b", b"c")
    done = run_child(CLAIM_THEN_DIE, kit.url, "inside")
    assert done.returncode == -9, done.stderr
    assert kit.stats("q").ready == 3, "the claim was rolled back with the process"
    with kit.consuming("q") as (_, got):
        wait_for(lambda: len(got) == 3, what="the rows, claimable at once")
        assert [d.message.delivery_count for d in got] == [1, 1, 1]
    kit.close()


def test_a_process_killed_after_claiming_gives_its_rows_back_when_the_lease_ends(tmp_path: Path) -> None:
    kit = Kit(tmp_path / "broker.db", timeout_s=5)
    kit.publish("q", b"a", b"b", b"c")
    done = run_child(CLAIM_THEN_DIE, kit.url, "commit")
    assert done.returncode == -9, done.stderr
    assert kit.stats("q").unacked == 3
    with kit.consuming("q") as (_, got):
        wait_for(lambda: len(got) == 3, what="the 500 ms lease to end")
        assert [d.message.body for d in got] == [b"a", b"b", b"c"]
        assert all(d.message.redelivered for d in got)
    kit.close()


HAMMER = """
    import sys, threading, time
    from tqadmin.plugin.base import BrokerConfig
    from tqadmin.plugin.models import Message
    from tqadmin_sqlite.admin import SQLiteAdmin
    from tqadmin_sqlite.transport import SQLiteTransport
    from tqadmin.store import open_store

    url, name, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
    config = BrokerConfig(url=url, timeout_s=10)
    transport, admin = SQLiteTransport(config), SQLiteAdmin(config)
    store = open_store(url + "?prefix=" + name)
    consumer = transport.consumer("shared", prefetch=8, lease_s=30)
    taken = []

    def work(delivery):  # in the I/O thread itself: every commit of this process contends for the file
        claim = store.claim(delivery.message.id or "", name, 30)
        store.complete(claim, lambda tx: tx.execute("INSERT INTO hammer_effects VALUES (?)", (name,)))
        consumer.ack(delivery)
        taken.append(delivery)

    thread = threading.Thread(target=lambda: consumer.run(work))
    thread.start()
    for i in range(count):
        result = transport.publish([("shared", Message(b"x", id=f"{name}-{i}"))])
        assert result.all_confirmed, result.error
    deadline = time.monotonic() + 60
    while admin.list_queues().queues[0].messages and time.monotonic() < deadline:
        time.sleep(0.05)
    consumer.stop()
    consumer.drained()
    thread.join()
    print(len(taken))
"""


def test_writers_of_four_processes_never_see_database_is_locked(tmp_path: Path) -> None:
    kit = Kit(tmp_path / "broker.db")
    kit.transport.declare("shared")
    store = open_store(f"{kit.url}?prefix=setup")
    store.claim("setup", "me", 1)
    with store._file.write() as db:  # type: ignore[attr-defined]
        db.execute("CREATE TABLE hammer_effects (worker TEXT)")
    children = [
        subprocess.Popen(
            [sys.executable, "-c", textwrap.dedent(HAMMER), kit.url, f"p{n}", "300"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for n in range(4)
    ]
    outputs = [child.communicate(timeout=120) for child in children]
    for child, (out, err) in zip(children, outputs, strict=True):
        assert child.returncode == 0, err
        assert "locked" not in err and "Traceback" not in err
    assert sum(int(out) for out, _ in outputs) == 1200
    with store._file.read() as db:  # type: ignore[attr-defined]
        assert db.execute("SELECT COUNT(*) FROM hammer_effects").fetchone()[0] == 1200
    assert kit.stats("shared").messages == 0
    store.close()
    kit.close()


def test_a_long_read_such_as_a_tui_poll_does_not_stall_writers(tmp_path: Path) -> None:
    reader = Kit(tmp_path / "broker.db")
    # a writer that waited for the reader would fail: the read is held until the writes are done (or failed)
    writer = Kit(tmp_path / "broker.db", timeout_s=5)
    writer.publish("q", b"first")
    holding = threading.Event()
    release = threading.Event()

    def long_read() -> None:
        with reader.admin.broker.read() as (db, _):
            db.execute("SELECT COUNT(*) FROM tqb_messages").fetchone()
            holding.set()
            release.wait(120)

    thread = threading.Thread(target=long_read)
    thread.start()
    assert holding.wait(60)
    try:
        for i in range(50):
            writer.publish("q", f"m{i}".encode())
        with writer.consuming("q", prefetch=100) as (consumer, got):
            wait_for(lambda: len(got) == 51)
            assert all(consumer.ack(d) for d in got)
            wait_for(lambda: writer.stats("q").messages == 0)
    finally:
        release.set()
        thread.join()
    reader.close()
    writer.close()


def test_the_state_store_and_the_broker_share_a_file_without_stepping_on_each_others_transactions(
    tmp_path: Path,
) -> None:
    kit = Kit(tmp_path / "tqadmin.db")
    kit.transport.declare("q")
    store = open_store(kit.url)
    claim = store.claim("job-1", "worker", 30)
    in_effect = threading.Event()

    def slow_effect(tx: object) -> None:
        tx.execute("CREATE TABLE IF NOT EXISTS ledger (n INTEGER)")  # type: ignore[attr-defined]
        tx.execute("INSERT INTO ledger VALUES (1)")  # type: ignore[attr-defined]
        in_effect.set()
        time.sleep(0.5)  # the store's transaction holds the write lock meanwhile

    committing = threading.Thread(target=lambda: store.complete(claim, slow_effect))
    committing.start()
    in_effect.wait(5)
    result = kit.transport.publish([("q", Message(b"during the effect"))])  # waits its turn, then commits
    committing.join()
    assert result.all_confirmed
    assert store.done_among(["job-1"]) == {"job-1"}
    assert kit.bodies("q") == [b"during the effect"]
    with store._file.read() as db:  # type: ignore[attr-defined]
        assert db.execute("SELECT COUNT(*) FROM ledger").fetchone()[0] == 1
    store.close()
    kit.close()


MOUNTS = """\
sysfs /sys sysfs rw 0 0
/dev/sda1 / ext4 rw,relatime 0 0
server:/export /mnt/shared nfs4 rw,relatime 0 0
me@host:/home /mnt/ssh\\040home fuse.sshfs rw 0 0
//nas/q /mnt/smb cifs rw 0 0
"""


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("/mnt/shared/q/tqadmin.db", ("nfs4", "/mnt/shared")),
        ("/mnt/ssh home/tqadmin.db", ("fuse.sshfs", "/mnt/ssh home")),
        ("/mnt/smb/tqadmin.db", ("cifs", "/mnt/smb")),
        ("/var/lib/tqadmin.db", None),
        ("/mnt/sharedother/tqadmin.db", None),
    ],
)
def test_network_filesystems_are_recognised_from_proc_mounts(path: str, expected: object) -> None:
    assert network_filesystem(Path(path), MOUNTS) == expected


def test_a_broker_file_on_a_network_filesystem_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    mounts = tmp_path / "mounts"
    mounts.write_text(f"/dev/sda1 / ext4 rw 0 0\nserver:/x {tmp_path} nfs rw 0 0\n")
    monkeypatch.setattr("tqadmin.files.sqlite.MOUNTS", mounts)
    with pytest.raises(ConfigError, match=f"network filesystem \\(nfs at {tmp_path}\\)"):
        Kit(tmp_path / "broker.db")
    assert not (tmp_path / "broker.db").exists()
    assert os.path.exists(mounts)
