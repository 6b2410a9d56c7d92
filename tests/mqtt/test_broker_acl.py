"""systemd/mosquitto/ as shipped, on a real mosquitto: TLS only, no anonymous access, per-table users, and an ACL
that keeps each table to its own topics while supervisors read everything and send commands.

The broker, its CA and certificate and its users are made by tests/secure_broker.py (the benches run a table over
TLS on the same): the example's paths moved into a temporary directory and its port to a free one, nothing else.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import re
import ssl
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiomqtt
import paho.mqtt.client as paho
import pytest
from paho.mqtt.enums import CallbackAPIVersion
from structlog.testing import capture_logs

from controller.config.broker import MAX_PACKET_SIZE
from controller.config.table import MqttSettings, load_config
from controller.core.events import DomainEvent
from controller.mqtt.anchor import read_retained_anchor
from controller.mqtt.birth import build_birth
from controller.mqtt.limits import publish_size
from controller.mqtt.publisher import EventPublisher
from controller.store.journal import Journal
from tests.broker import Mosquitto
from tests.secure_broker import EXAMPLE, secure_mosquitto

CONFIGS = Path(__file__).resolve().parents[2] / "configs"
PASSWORDS = {
    "ms-1": "table-one-secret",
    "ms-2": "table-two-secret",
    "supervisor.alice": "alice-secret",
    "link.ms-floor-mega": "link-secret",
}


@dataclass
class SecureBroker:
    broker: Mosquitto  # tests/broker.py's, on systemd/mosquitto/'s config: its start retries a taken port
    ca: Path
    dir: Path

    @property
    def port(self) -> int:
        return self.broker.port

    @property
    def log(self) -> list[str]:
        return list(self.broker.log)

    @property
    def url(self) -> str:
        return f"mqtts://127.0.0.1:{self.port}"

    def settings(self, user: str, password: str | None = None) -> MqttSettings:
        secret = self.dir / f"{user}.password"
        secret.write_text((password or PASSWORDS[user]) + "\n")
        return MqttSettings(broker=self.url, username=user, password_file=str(secret), ca_file=str(self.ca))

    def client(self, user: str | None, password: str | None = None, **kw: Any) -> aiomqtt.Client:
        return aiomqtt.Client(
            "127.0.0.1",
            self.port,
            username=user,
            password=password or PASSWORDS.get(user or ""),
            tls_context=ssl.create_default_context(cafile=str(self.ca)),
            timeout=5,
            **kw,
        )


# One worker runs the module: its tests share one secured mosquitto (the module fixture), made once.
pytestmark = pytest.mark.xdist_group("broker_acl")


@pytest.fixture(scope="module")
def broker() -> Iterator[SecureBroker]:
    try:
        with secure_mosquitto(PASSWORDS) as (mosquitto, ca):
            yield SecureBroker(mosquitto, ca, mosquitto.config.parent)
    except FileNotFoundError as err:
        pytest.fail(str(err), pytrace=False)


class Watcher:
    """A supervisor's console (paho, own thread, TLS): records what is published under tablectl/# from now on
    (retained messages of earlier tests, delivered at subscription, are left out)."""

    def __init__(self, broker: SecureBroker, user: str, topic: str = "tablectl/#") -> None:
        self.messages: list[tuple[str, bytes]] = []
        self._cond = threading.Condition()
        self._subscribed = threading.Event()
        self._client = paho.Client(CallbackAPIVersion.VERSION2, client_id=f"watch-{id(self)}")
        self._client.tls_set(ca_certs=str(broker.ca))
        self._client.username_pw_set(user, PASSWORDS[user])
        self._client.on_connect = lambda c, *_: c.subscribe(topic, qos=1)
        self._client.on_subscribe = lambda *_: self._subscribed.set()
        self._client.on_message = self._on_message
        self._client.connect("127.0.0.1", broker.port)
        self._client.loop_start()
        assert self._subscribed.wait(10), "the supervisor could not subscribe"

    def _on_message(self, client: paho.Client, userdata: Any, msg: paho.MQTTMessage) -> None:
        if msg.retain:
            return
        with self._cond:
            self.messages.append((msg.topic, bytes(msg.payload)))
            self._cond.notify_all()

    def topics(self) -> list[str]:
        with self._cond:
            return [t for t, _ in self.messages]

    async def until(self, predicate: Callable[[list[str]], bool], what: str) -> None:
        def wait() -> None:
            with self._cond:
                if not self._cond.wait_for(lambda: predicate([t for t, _ in self.messages]), 10):
                    raise AssertionError(f"timed out waiting for {what}; got {[t for t, _ in self.messages]}")

        await asyncio.to_thread(wait)

    def close(self) -> None:
        self._client.disconnect()
        self._client.loop_stop()


@pytest.fixture
def watcher(broker: SecureBroker) -> Iterator[Watcher]:
    w = Watcher(broker, "supervisor.alice")
    yield w
    w.close()


async def test_a_table_publishes_over_tls_with_its_credentials(
    broker: SecureBroker, watcher: Watcher, tmp_path: Path
) -> None:
    journal = Journal(tmp_path / "j.sqlite", "ms-1", "boot-1")
    pub = EventPublisher(journal, broker.settings("ms-1"), "ms-1")
    task = asyncio.create_task(pub.run())
    journal.append([DomainEvent("table.opened", "655a.4", {"chapter": "655a"})], dt.datetime.now(dt.UTC))
    pub.notify()
    await watcher.until(lambda ts: "tablectl/ms-1/event" in ts, what="the table's event")
    await pub.close()
    await watcher.until(lambda ts: ts.count("tablectl/ms-1/status") == 2, what="online, then offline")
    assert task.done() and task.result() is None
    got = dict(watcher.messages)
    assert json.loads(got["tablectl/ms-1/event"])["type"] == "table.opened"
    assert journal.unpublished() == []
    assert any("ms-1" in line and "u'ms-1'" in line for line in broker.log), "connected as the table's user"
    journal.close()


@pytest.mark.parametrize(
    ("user", "password"),
    [("ms-1", "not-the-password"), ("ms-9", "any"), (None, None)],
    ids=["wrong-password", "unknown-user", "anonymous"],
)
async def test_a_client_without_valid_credentials_is_refused(
    broker: SecureBroker, user: str | None, password: str | None
) -> None:
    with pytest.raises(aiomqtt.MqttCodeError) as refused:
        async with broker.client(user, password or "x" if user else None):
            pass
    assert refused.value.rc in (4, 5, 134, 135)  # bad user name or password / not authorized (3.1.1 and 5)


async def test_the_publisher_keeps_trying_and_says_why_when_refused(broker: SecureBroker, tmp_path: Path) -> None:
    journal = Journal(tmp_path / "j.sqlite", "ms-1", "boot-1")
    with capture_logs() as logs:
        pub = EventPublisher(journal, broker.settings("ms-1", "wrong"), "ms-1", backoff_min=0.05, backoff_max=0.1)
        task = asyncio.create_task(pub.run())
        deadline = time.monotonic() + 10
        while sum(e["event"] == "mqtt broker unavailable" for e in logs) < 2:
            assert time.monotonic() < deadline, logs
            await asyncio.sleep(0.02)
        await pub.close()
    refusal = next(e for e in logs if e["event"] == "mqtt broker unavailable")
    assert "authori" in refusal["error"].lower() or "password" in refusal["error"].lower()
    assert "check [mqtt] username and password_file" in refusal["fix"]
    assert not pub.connected and task.done()
    journal.close()


async def test_a_plain_text_connection_to_the_tls_listener_fails(broker: SecureBroker) -> None:
    with pytest.raises(aiomqtt.MqttError):
        async with aiomqtt.Client("127.0.0.1", broker.port, username="ms-1", password=PASSWORDS["ms-1"], timeout=2):
            pass


async def test_a_table_is_confined_to_its_own_topics(broker: SecureBroker, watcher: Watcher) -> None:
    forbidden = [
        "tablectl/ms-2/event",
        "tablectl/ms-2/status",
        "tablectl/ms-2/device/shoe",
        "tablectl/ms-2/cmd/reply",
        "tablectl/ms-2/anchor",
        "tablectl/ms-1/cmd/verify_deck",
        "tablectl/other/event",
        "elsewhere/ms-1/event",
    ]
    async with broker.client("ms-1") as table_1, broker.client("ms-2") as table_2:
        await table_2.subscribe("tablectl/ms-2/cmd/+", qos=1)
        await table_1.subscribe("tablectl/ms-1/cmd/+", qos=1)
        await table_1.subscribe("tablectl/ms-2/cmd/+", qos=1)  # accepted, but nothing it may not read arrives
        for topic in forbidden:
            await table_1.publish(topic, b'{"forged": true}', qos=1)
        # One connection, QoS 1: had any of the above been let through, it would arrive before this.
        await table_1.publish("tablectl/ms-1/event", b'{"marker": true}', qos=1)
        await watcher.until(lambda ts: "tablectl/ms-1/event" in ts, what="table 1's own event")
        assert watcher.topics() == ["tablectl/ms-1/event"]

        # A supervisor's command reaches its table only; a supervisor cannot forge a table's event.
        async with broker.client("supervisor.alice") as alice:
            await alice.publish("tablectl/ms-1/event", b'{"forged": true}', qos=1)
            await alice.publish("tablectl/ms-2/cmd/verify_deck", b'{"cmd": 1}', qos=1)
        got = await asyncio.wait_for(anext(aiter(table_2.messages)), 10)
        assert (str(got.topic), got.payload) == ("tablectl/ms-2/cmd/verify_deck", b'{"cmd": 1}')
        await watcher.until(lambda ts: "tablectl/ms-2/cmd/verify_deck" in ts, what="the command")
        # table 1 asked for ms-2's commands too: the first thing it gets must be its own, sent after ms-2's.
        async with broker.client("supervisor.alice") as alice:
            await alice.publish("tablectl/ms-1/cmd/verify_deck", b'{"cmd": 2}', qos=1)
        got = await asyncio.wait_for(anext(aiter(table_1.messages)), 10)
        assert (str(got.topic), got.payload) == ("tablectl/ms-1/cmd/verify_deck", b'{"cmd": 2}')
    assert "tablectl/ms-1/event" not in watcher.topics()[1:]  # the supervisor's forged event went nowhere


async def test_a_table_reads_back_its_own_journal_anchor_and_no_other(broker: SecureBroker) -> None:
    """The anchor a table retains is read back at start through the example ACL (docs/journal.md, "The anchor")."""
    anchor = {
        "table_id": "ms-1",
        "boot_id": "b",
        "seq": 7,
        "hash": "ab" * 32,
        "round_no": 1,
        "ts": "2026-11-21T08:00:00.000000Z",
    }
    async with broker.client("ms-1") as table_1:
        await table_1.publish("tablectl/ms-1/anchor", json.dumps(anchor).encode(), qos=1, retain=True)
    claim = await read_retained_anchor(broker.settings("ms-1"), "ms-1")
    assert claim is not None and (claim.seq, claim.hash) == (7, "ab" * 32)
    # ms-2 may not read ms-1's anchor: as far as it can see, there is none.
    assert await read_retained_anchor(broker.settings("ms-2"), "ms-1") is None


async def test_a_link_controller_and_its_tables_keep_to_their_topics(broker: SecureBroker, watcher: Watcher) -> None:
    """The example ACL's link user (configs/link.toml's `link.ms-floor-mega`) reads its tables' requests and the
    commands to it and writes its answers, state, meters, jackpots, events and replies; a table writes only its own
    request topic and reads its answers and the signs' topics (docs/linked-progressives.md)."""
    base = "tablectl/link/ms-floor-mega"
    async with (
        broker.client("link.ms-floor-mega") as link,
        broker.client("ms-1") as table_1,
        broker.client("supervisor.alice") as alice,
    ):
        await link.subscribe([(f"{base}/request/+", 1), (f"{base}/cmd/+", 1), ("tablectl/link/other/request/+", 1)])
        await table_1.subscribe(
            [(f"{base}/{t}", 1) for t in ("response/ms-1", "response/ms-2", "state", "progressive/+", "jackpot")]
        )
        # A table forging another's request, or writing the link's own topics, reaches nobody. (Its own request
        # topic under any link is its to write: a link that does not list it refuses it.)
        for topic in (f"{base}/request/ms-2", f"{base}/state", f"{base}/response/ms-1", f"{base}/jackpot"):
            await table_1.publish(topic, b'{"forged": true}', qos=1)
        await table_1.publish(f"{base}/request/ms-1", b'{"kind": "heartbeat"}', qos=1)
        got = await asyncio.wait_for(anext(aiter(link.messages)), 10)
        assert (str(got.topic), got.payload) == (f"{base}/request/ms-1", b'{"kind": "heartbeat"}')
        await alice.publish(f"{base}/cmd/open_link", b'{"cmd": 1}', qos=1)
        got = await asyncio.wait_for(anext(aiter(link.messages)), 10)
        assert (str(got.topic), got.payload) == (f"{base}/cmd/open_link", b'{"cmd": 1}')
        # The link forging a table's event or command, another table's answer elsewhere or another link's state:
        # nothing arrives; then its own topics, in order.
        for topic in ("tablectl/ms-1/event", "tablectl/ms-1/cmd/verify_deck", "tablectl/link/other/state"):
            await link.publish(topic, b'{"forged": true}', qos=1)
        own = [f"{base}/{t}" for t in ("response/ms-2", "state", "response/ms-1", "progressive/mega", "jackpot")]
        own += [f"{base}/event", f"{base}/cmd/reply"]
        for topic in own:
            await link.publish(topic, b"{}", qos=1)
        await watcher.until(lambda ts: f"{base}/cmd/reply" in ts, what="the link's reply")
        assert [t for t in watcher.topics() if t != f"{base}/request/ms-1" and not t.endswith("/cmd/open_link")] == own
        # The table reads its answer and the signs' topics, not the link's state nor another table's answers; what it
        # may not read would have come between these (one publisher, QoS 1: in order).
        heard = [str((await asyncio.wait_for(anext(aiter(table_1.messages)), 10)).topic) for _ in range(3)]
        assert heard == [f"{base}/response/ms-1", f"{base}/progressive/mega", f"{base}/jackpot"]


def _packet_limit() -> int:
    found = re.findall(r"^max_packet_size (\d+)$", (EXAMPLE / "mosquitto.conf").read_text(), re.MULTILINE)
    assert len(found) == 1, "systemd/mosquitto/mosquitto.conf sets max_packet_size once"
    # One number: the brokers the demo, dev.py, bench and the tests start, and a table's [mqtt] max_packet_size
    # default, all take controller.config.broker.MAX_PACKET_SIZE.
    assert int(found[0]) == MAX_PACKET_SIZE, "the shipped config and controller.config.broker.MAX_PACKET_SIZE differ"
    assert MqttSettings().max_packet_size == MAX_PACKET_SIZE
    return int(found[0])


# What the table counts before it publishes (controller.mqtt.limits), held here to what the broker does.
_counted = publish_size


async def test_the_largest_real_messages_pass_and_an_oversized_packet_is_refused(
    broker: SecureBroker, watcher: Watcher
) -> None:
    """The packet limit of the shipped config on the real broker: every shipped table config's birth (the largest
    message a table sends: systemd/mosquitto/mosquitto.conf says why) and a packet of exactly the limit reach a
    supervisor; one byte more and the broker drops the packet unread and disconnects the table, which connects
    again and is served, while the supervisor's connection is untouched. The births stay within a quarter of the
    limit, so one grown past it fails here first."""
    limit = _packet_limit()
    topic = "tablectl/ms-1/birth"
    tables = [c for c in sorted(CONFIGS.glob("*.toml")) if c.name not in {"floor.toml", "link.toml"}]
    births = {c.name: build_birth(load_config(c), "boot-1").model_dump_json() for c in tables}
    largest = max(births.values(), key=len)
    assert _counted(topic, len(largest)) * 4 <= limit, (len(largest), limit)
    at_limit = b"x" * (limit - _counted(topic, 0))
    async with broker.client("ms-1", identifier="ms-1-size") as table:
        for birth in births.values():
            await table.publish(topic, birth, qos=1)
        await table.publish(topic, at_limit, qos=1)
        await watcher.until(
            lambda ts: ts.count(topic) == len(births) + 1, what="the births and the packet at the limit"
        )
    with pytest.raises(aiomqtt.MqttError):
        async with broker.client("ms-1", identifier="ms-1-size") as table:
            await table.publish(topic, at_limit + b"x", qos=1)
    assert any("ms-1-size disconnected due to oversize packet" in line for line in broker.log), broker.log[-10:]
    async with broker.client("ms-1", identifier="ms-1-size") as table:
        await table.publish(topic, b"after", qos=1)
    await watcher.until(lambda ts: ts.count(topic) == len(births) + 2, what="the table's next message")
    payloads = [p for t, p in watcher.messages if t == topic]
    assert payloads[: len(births)] == [b.encode() for b in births.values()]
    assert payloads[len(births) :] == [at_limit, b"after"], "the oversized packet never reached the supervisor"
