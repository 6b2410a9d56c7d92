"""The suite's mosquitto is shared by every test of a worker's session (tests/conftest.py's session fixture; each
xdist worker has its own). Retained topics outlive the test that published them, so two tests that run a table with
the same table id and prefix share its status, birth, meters and anchor: a fresh journal behind another test's
retained anchor was taken for a rollback, its progressives locked out, and the test hung 120 s. tests/conftest.py's
`shared_broker_guard` fails a test that leaves a retained topic there without an id from `unique_id` or
tests.broker.fresh_id(); these tests check the guard's parts on a broker of their own (not the shared one, which
the guard watches), so that the guard can fail."""

from __future__ import annotations

from collections.abc import Iterator

import paho.mqtt.client as paho
import pytest
from paho.mqtt.enums import CallbackAPIVersion

from tests.broker import ISSUED, Mosquitto, fresh_id, own_mosquitto, retained_topics, unregistered


@pytest.fixture
def own_broker() -> Iterator[Mosquitto]:
    with own_mosquitto() as broker:
        yield broker


def _retain(broker: Mosquitto, messages: dict[str, bytes]) -> None:
    client = paho.Client(CallbackAPIVersion.VERSION2, client_id=fresh_id("retain-"))
    client.connect(broker.host, broker.port)
    client.loop_start()
    try:
        for topic, payload in messages.items():
            client.publish(topic, payload, qos=1, retain=True).wait_for_publish(timeout=10)
    finally:
        client.disconnect()
        client.loop_stop()


def test_fresh_ids_differ_and_are_registered() -> None:
    ids = {fresh_id("t") for _ in range(1000)}
    assert len(ids) == 1000 and ids <= ISSUED
    assert all(i.startswith("t") and len(i) == 13 for i in ids)


def test_a_fixed_table_id_and_prefix_is_named_and_a_fresh_one_in_either_place_is_not() -> None:
    mine = fresh_id("demo")
    changed = {
        "tablectl/demo-ms-1/anchor": b'{"seq": 40}',  # configs/demo.toml as shipped: what two tests may both run
        "tablectl/demo-ms-1/progressive/mega": b"{}",
        f"{mine}/demo-ms-1/anchor": b'{"seq": 40}',  # the default id under a prefix of its own
        f"tablectl/{mine}/status": b"{}",  # a table id of its own under the default prefix
        "tablectl/ms-table-01/status": b"",  # a retained topic cleared (empty payload) is nobody's
    }
    assert unregistered(changed, ISSUED) == ["tablectl/demo-ms-1/anchor", "tablectl/demo-ms-1/progressive/mega"]
    # An id the suite never handed out, however random it looks, is not accepted: only the registry is.
    assert unregistered({"tablectl/t0123456789ab/anchor": b"{}"}, ISSUED) == ["tablectl/t0123456789ab/anchor"]


def test_the_snapshot_holds_every_retained_topic_of_the_broker(own_broker: Mosquitto) -> None:
    assert retained_topics(own_broker.host, own_broker.port) == {}
    mine = fresh_id("snap")
    sent = {f"{mine}/{fresh_id()}/device/shoe-{n}": f'{{"n": {n}}}'.encode() for n in range(300)}
    sent["tablectl/demo-ms-1/anchor"] = b'{"seq": 40, "chain": "ab"}'
    _retain(own_broker, sent)
    seen = retained_topics(own_broker.host, own_broker.port)
    assert seen == sent
    assert unregistered(seen, ISSUED) == ["tablectl/demo-ms-1/anchor"]
