"""Every Lua script touches only the keys it is given, and the keys given together hash to one slot, so each
script runs on Redis Cluster (where a script's keys must share a slot); the store's COMPLETE_AND_CLAIM, whose
keys are many jobs' (many slots), is sent to a single server only."""

from __future__ import annotations

import re

import pytest
from redis.crc import key_slot
from tqadmin_redis import scripts as broker_scripts
from tqadmin_redis.naming import Layout

from tqadmin.store.completion import redis_scripts as store_scripts
from tqadmin.store.keys import heartbeat_keys, history_key, job_key, job_tag

NAMES = [
    "orders",
    "orders.dlq",
    "a.b.c",
    "x{y}z",
    "{}",
    "q:with:colons",
    "ünïcode",
    "dlq.dlq.dlq",
    "Q.dlq.dlq",
]
KEYLESS = {"TIME"}
KEY_AFTER = {"XINFO": 1, "XGROUP": 1}  # a subcommand comes first, then the key


def calls(source: str) -> list[list[str]]:
    """The arguments of every ``redis.call(...)`` in a Lua source, split at top-level commas."""
    found = []
    for start in (m.end() for m in re.finditer(r"redis\.call\(", source)):
        depth, args, current = 0, [], ""
        for char in source[start:]:
            if char == ")" and depth == 0:
                break
            depth += {"(": 1, ")": -1}.get(char, 0)
            if char == "," and depth == 0:
                args.append(current.strip())
                current = ""
            else:
                current += char
        found.append([*args, current.strip()])
    return found


def key_argument(args: list[str]) -> str | None:
    command = args[0].strip("'")
    if command in KEYLESS:
        return None
    if command == "XREADGROUP":
        return args[args.index("'STREAMS'") + 1]
    return args[1 + KEY_AFTER.get(command, 0)]


def slot(key: str) -> int:
    return key_slot(key.encode())


@pytest.mark.parametrize("name", NAMES)
def test_a_queue_its_dlq_and_their_delay_and_consumer_keys_share_one_slot(name: str) -> None:
    layout = Layout("tq")
    queue, dlq = layout.queue(name), layout.dlq(name)
    keys = {queue.stream, queue.delay, queue.consumers, dlq.stream, dlq.delay, dlq.consumers}
    assert len(keys) == 6
    assert len({slot(k) for k in keys}) == 1


def test_two_queues_are_spread_over_the_cluster_by_name() -> None:
    layout = Layout("tq")
    assert len({slot(layout.queue(f"q{i}").stream) for i in range(50)}) > 40


@pytest.mark.parametrize("script", broker_scripts.ALL + store_scripts.ALL, ids=lambda s: s.sha[:8])
def test_every_script_names_only_the_keys_it_was_given(script: store_scripts.Script) -> None:
    for args in calls(script.source):
        key = key_argument(args)
        assert key is None or given(script.source, key), f"{args} touches a key it was not given"


def given(source: str, key: str) -> bool:
    """``key`` is one of ``KEYS``, or a Lua function's parameter that every call of it fills with one."""
    if key.startswith("KEYS["):
        return True
    for function in re.finditer(r"local function (\w+)\((\w+)", source):
        if function.group(2) == key:
            passed = re.findall(rf"(?<!function ){function.group(1)}\(([^,)]*)", source)
            return bool(passed) and all(p.strip().startswith("KEYS[") for p in passed)
    return False


@pytest.mark.parametrize("job_id", ["job-1", "a{b}c", "{}", "x" * 200])
def test_a_jobs_record_and_its_tagged_effects_share_one_slot(job_id: str) -> None:
    effect_key = f"orders:{job_tag(job_id)}:effect"
    assert slot(job_key("tq", job_id)) == slot(effect_key)


def test_a_heartbeat_writes_keys_of_one_slot() -> None:
    assert len({slot(k) for k in (*heartbeat_keys("tq"), history_key("tq", "host:1"))}) == 1
