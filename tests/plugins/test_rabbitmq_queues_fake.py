"""How the RabbitMQ admin reads the management API, checked against the local fake: the calls it makes and
how it maps what comes back (cases the real broker cannot be made to show on demand)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from tqadmin_rabbitmq.admin import RabbitMQAdmin

from tests.support.management_api import FakeManagementAPI
from tqadmin.cli import main
from tqadmin.plugin.base import BrokerConfig
from tqadmin.plugin.models import Alarm, QueueStats

NOW = 1_800_000_000.0


@pytest.fixture
def api() -> Iterator[FakeManagementAPI]:
    with FakeManagementAPI() as fake:
        yield fake


def admin_for(api: FakeManagementAPI, vhost: str = "%2F") -> RabbitMQAdmin:
    config = BrokerConfig(
        url=f"amqp://guest:guest@127.0.0.1:5672/{vhost}", options={"management_url": api.url}
    )
    return RabbitMQAdmin(config, clock=lambda: NOW)


def by_name(admin: RabbitMQAdmin) -> dict[str, QueueStats]:
    return {q.name: q for q in admin.list_queues().queues}


def test_up_to_500_queues_cost_one_paged_call_and_one_node_call(api: FakeManagementAPI) -> None:
    names = api.seed(500)
    with admin_for(api) as admin:
        listing = admin.list_queues()
    assert [q.name for q in listing.queues] == names
    assert len(api.requests) == 2
    assert api.requests[0].startswith("/api/queues/%2F?page=1&page_size=500&columns=name%2C")
    assert api.calls_to("/api/nodes?columns=") == 1


def test_more_queues_cost_one_more_column_filtered_call_not_a_page_each(api: FakeManagementAPI) -> None:
    names = api.seed(2600)
    with admin_for(api) as admin:
        listing = admin.list_queues()
    assert [q.name for q in listing.queues] == names
    assert api.calls_to("/api/queues/%2F?") == 2
    assert api.requests[1].startswith("/api/queues/%2F?columns=name%2C")
    assert len(api.requests) == 3


def test_figures_map_to_queue_stats_with_rates_per_second(api: FakeManagementAPI) -> None:
    api.add_queue(
        "jobs", ready=7, unacked=3, consumers=2, publish_rate=12.5, deliver_rate=11.0, ack_rate=10.25
    )
    with admin_for(api) as admin:
        jobs = by_name(admin)["jobs"]
    assert (jobs.messages, jobs.ready, jobs.unacked, jobs.consumers) == (10, 7, 3, 2)
    assert (jobs.publish_rate, jobs.deliver_rate, jobs.ack_rate) == (12.5, 11.0, 10.25)
    assert (jobs.state, jobs.kind) == ("running", "classic")


def test_the_oldest_message_age_comes_from_the_head_timestamp(api: FakeManagementAPI) -> None:
    api.add_queue("stamped", ready=1, head_message_timestamp=int(NOW) - 90)
    api.add_queue("unstamped", ready=1)
    with admin_for(api) as admin:
        queues = by_name(admin)
    assert queues["stamped"].oldest_age_s == 90.0
    assert queues["unstamped"].oldest_age_s is None


def test_a_head_held_in_flight_with_nothing_ready_ages_nothing_and_a_dlq_has_its_own_age(
    api: FakeManagementAPI,
) -> None:
    # a classic queue keeps a delivered message at its head until acked: with nothing ready, nothing waits
    api.add_queue("busy", unacked=2, head_message_timestamp=int(NOW) - 3600)
    api.add_queue("work", ready=1, head_message_timestamp=int(NOW) - 5)
    api.add_queue("work.dlq", ready=4, head_message_timestamp=int(NOW) - 600)
    with admin_for(api) as admin:
        queues = by_name(admin)
    assert queues["busy"].oldest_age_s is None
    assert (queues["work"].oldest_age_s, queues["work"].dlq, queues["work"].dlq_oldest_age_s) == (
        5.0,
        "work.dlq",
        600.0,
    )
    assert queues["busy"].dlq_oldest_age_s is None


def test_a_fresh_queue_without_stats_yet_counts_as_empty(api: FakeManagementAPI) -> None:
    api.add_queue("fresh")
    for key in ("messages", "messages_ready", "messages_unacknowledged", "consumers", "message_stats"):
        api.queues["/"]["fresh"].pop(key)
    with admin_for(api) as admin:
        fresh = by_name(admin)["fresh"]
    assert (fresh.messages, fresh.ready, fresh.unacked, fresh.consumers) == (0, 0, 0, 0)
    assert fresh.publish_rate == 0.0


def test_the_dlq_convention_links_q_to_q_dlq_with_its_depth(api: FakeManagementAPI) -> None:
    api.add_queue("emails", ready=1)
    api.add_queue("emails.dlq", ready=4)
    api.add_queue("lonely")
    with admin_for(api) as admin:
        queues = by_name(admin)
    assert (queues["emails"].dlq, queues["emails"].dlq_messages) == ("emails.dlq", 4)
    assert (queues["lonely"].dlq, queues["lonely"].dlq_messages) == (None, None)
    assert queues["emails.dlq"].dlq is None


def test_dead_letter_arguments_beat_the_policy_and_the_convention(api: FakeManagementAPI) -> None:
    api.add_queue(
        "orders",
        arguments={"x-dead-letter-exchange": "", "x-dead-letter-routing-key": "orders-parking"},
        policy={"dead-letter-exchange": "", "dead-letter-routing-key": "policy-dlq"},
    )
    api.add_queue("orders.dlq")
    api.add_queue("orders-parking", ready=2)
    api.add_queue("policy-dlq")
    with admin_for(api) as admin:
        orders = by_name(admin)["orders"]
    assert (orders.dlq, orders.dlq_messages) == ("orders-parking", 2)


def test_a_retry_tier_that_expires_back_into_its_work_queue_has_no_dlq(api: FakeManagementAPI) -> None:
    api.add_queue(
        "orders.retry.5s",
        arguments={
            "x-message-ttl": 5000,
            "x-dead-letter-exchange": "",
            "x-dead-letter-routing-key": "orders",
        },
    )
    api.add_queue("orders", ready=4)
    with admin_for(api) as admin:
        tier = by_name(admin)["orders.retry.5s"]
    assert (tier.dlq, tier.dlq_messages) == (None, None)


def test_a_policy_names_the_dlq_when_arguments_do_not(api: FakeManagementAPI) -> None:
    api.add_queue("events", policy={"dead-letter-exchange": "", "dead-letter-routing-key": "events-dead"})
    api.add_queue("events-dead", ready=9)
    with admin_for(api) as admin:
        assert by_name(admin)["events"].dlq == "events-dead"


def test_a_named_dead_letter_exchange_is_followed_through_its_bindings_once_per_fetch(
    api: FakeManagementAPI,
) -> None:
    for name in ("a", "b"):
        api.add_queue(name, arguments={"x-dead-letter-exchange": "dlx"})
        api.add_queue(f"{name}-dead", ready=1)
        api.bind("dlx", f"{name}-dead", name)
    with admin_for(api) as admin:
        queues = by_name(admin)
        by_name(admin)  # a second poll within the stats interval reuses the bindings too
    assert (queues["a"].dlq, queues["b"].dlq) == ("a-dead", "b-dead")
    assert api.calls_to("/api/exchanges/%2F/dlx/bindings/source") == 1


def test_a_dead_letter_exchange_that_does_not_exist_links_nothing(api: FakeManagementAPI) -> None:
    api.add_queue("a", arguments={"x-dead-letter-exchange": "gone"})
    with admin_for(api) as admin:
        assert by_name(admin)["a"].dlq is None


def test_node_alarms_and_stopped_nodes_become_alarms(api: FakeManagementAPI) -> None:
    api.nodes = [
        {"name": "rabbit@a", "running": True, "mem_alarm": True, "disk_free_alarm": True},
        {"name": "rabbit@b", "running": False},
        {"name": "rabbit@c", "running": True, "mem_alarm": False, "disk_free_alarm": False},
    ]
    with admin_for(api) as admin:
        alarms = admin.list_queues().alarms
    assert [(a.node, a.kind) for a in alarms] == [
        ("rabbit@a", "memory"),
        ("rabbit@a", "disk"),
        ("rabbit@b", "node_down"),
    ]


def test_a_user_without_the_monitoring_tag_still_gets_its_queues(api: FakeManagementAPI) -> None:
    from tests.support.management_api import status

    api.add_queue("visible")
    api.fail("/api/nodes", status(403, "Not monitor user"))
    with admin_for(api) as admin:
        listing = admin.list_queues()
    assert [q.name for q in listing.queues] == ["visible"]
    assert listing.alarms == (Alarm("?", "alarms_unknown", listing.alarms[0].detail),)


def test_queues_of_another_vhost_are_read_from_that_vhost(api: FakeManagementAPI) -> None:
    api.add_queue("billing-jobs", vhost="billing/eu")
    with admin_for(api, vhost="billing%2Feu") as admin:
        assert list(by_name(admin)) == ["billing-jobs"]
    assert api.calls_to("/api/queues/billing%2Feu?") == 1


def test_queue_exists_asks_for_that_queue_only(api: FakeManagementAPI) -> None:
    api.seed(600)
    with admin_for(api) as admin:
        assert admin.queue_exists("q00599")
        assert not admin.queue_exists("nope")
    assert api.requests[0].startswith("/api/queues/%2F/q00599?")
    assert len(api.requests) == 2


def test_a_poller_reuses_queue_figures_within_its_budget_but_reads_alarms_every_time(
    api: FakeManagementAPI,
) -> None:
    api.add_queue("stamped", ready=1, head_message_timestamp=int(NOW) - 10)
    clock = iter([NOW, NOW + 3])
    config = BrokerConfig(url="amqp://guest:guest@127.0.0.1:5672/%2F", options={"management_url": api.url})
    with RabbitMQAdmin(config, clock=lambda: next(clock), min_interval_s=60) as admin:
        first, second = admin.list_queues(), admin.list_queues()
    assert api.calls_to("/api/queues") == 1
    assert api.calls_to("/api/nodes") == 2
    assert (first.queues[0].oldest_age_s, second.queues[0].oldest_age_s) == (10.0, 13.0)


def test_without_a_budget_every_poll_fetches(api: FakeManagementAPI) -> None:
    api.seed(2)
    config = BrokerConfig(url="amqp://guest:guest@127.0.0.1:5672/%2F", options={"management_url": api.url})
    with RabbitMQAdmin(config, budget=1.0, min_interval_s=0) as admin:
        admin.list_queues()
        admin.list_queues()
    assert api.calls_to("/api/queues") == 2


def test_retry_tiers_fold_into_their_work_queue_and_all_lists_them(
    isolated_env: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """25 delay queues per work queue (at the default 60 s cap) used to be listed as queues of their own."""
    with FakeManagementAPI() as api:
        api.add_queue("work", ready=7)
        for name, waiting in (("work.retry.1s", 3), ("work.retry.1500ms", 2), ("work.retry.60s", 1)):
            api.add_queue(name, ready=waiting, arguments={"x-dead-letter-exchange": "", "x-message-ttl": 1})
        api.add_queue("lonely.retry.5s", ready=4)  # no queue "lonely": not a tier of anything listed
        api.add_queue("work.dlq", ready=1)
        base = [
            "queues",
            "--json",
            "--broker",
            "amqp://guest:guest@127.0.0.1:5672/%2F",
            "--management-url",
            api.url,
        ]
        assert main(base) == 0
        listed = {q["name"]: q for q in json.loads(capsys.readouterr().out)["queues"]}
        assert sorted(listed) == ["lonely.retry.5s", "work", "work.dlq"]
        assert listed["work"]["delayed"] == 6 and listed["work"]["messages"] == 7
        assert listed["work"]["dlq"] == "work.dlq"
        assert main([*base, "--all"]) == 0
        every = {q["name"]: q for q in json.loads(capsys.readouterr().out)["queues"]}
        assert {n for n, q in every.items() if q["delay_for"] == "work"} == {
            "work.retry.1s",
            "work.retry.1500ms",
            "work.retry.60s",
        }
        assert main([*base[:1], *base[2:]]) == 0
        table = capsys.readouterr().out
        assert "DELAYED" in table and "work.retry" not in table
