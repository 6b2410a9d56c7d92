"""A table passing for another, against the broker set up as designed: mosquitto with the project's own ACL
(systemd/mosquitto/acl) and a password per table, the link controller a real `tablectl link` process as its own user.
The link trusts the table id of a request's topic (docs/linked-progressives.md, "Validation"), so what must stop a
forged contribution is the ACL: table ms-01 publishing on ms-02's request topic, or on ms-02's event topic, is refused
by the broker (MQTT v5 PUBACK "not authorized"), never reaches the link or the floor, and changes no meter; its own
requests are served."""

from __future__ import annotations

import json
import subprocess
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import paho.mqtt.client as paho
import pytest
from paho.mqtt.enums import CallbackAPIVersion
from paho.mqtt.packettypes import PacketTypes
from paho.mqtt.properties import Properties

from tests.broker import Mosquitto, find_mosquitto
from tests.floor.conftest import ROOT, wait_for
from tests.link.conftest import LinkProcess, link_toml, rows

pytestmark = [pytest.mark.floor, pytest.mark.e2e]
LINK = "ms-floor-mega"  # the link id the example ACL spells out
BASE = f"tablectl/link/{LINK}"
USERS = ("ms-01", "ms-02", f"link.{LINK}", "floor.archive")


@pytest.fixture
def acl_broker() -> Iterator[Mosquitto]:
    binary = find_mosquitto()
    assert binary is not None, "mosquitto is not installed (python3 dev.py test installs it)"
    # On the leash, its password file beside its config: gone with this run, however it ends.
    broker = Mosquitto.leashed(binary)
    passwords = broker.config.parent / "passwd"
    for i, user in enumerate(USERS):
        create = ["-c"] if i == 0 else []
        subprocess.run(["mosquitto_passwd", *create, "-b", str(passwords), user, f"pw-{user}"], check=True)
    passwords.chmod(0o600)
    conf = broker.config.read_text().replace("allow_anonymous true", "allow_anonymous false")
    acl = ROOT / "systemd" / "mosquitto" / "acl"
    broker.config.write_text(f"{conf}password_file {passwords}\nacl_file {acl}\n")
    try:
        broker.start()
        yield broker
    finally:
        broker.close()


class Client:
    """A paho MQTT v5 client under a broker user, recording what it receives and each publish's PUBACK reason."""

    def __init__(self, broker: Mosquitto, user: str, *topics: str) -> None:
        self.got: list[tuple[str, bytes, Any]] = []
        self.cond = threading.Condition()
        self.client = paho.Client(
            CallbackAPIVersion.VERSION2, client_id=f"{user}-{uuid.uuid4().hex[:6]}", protocol=paho.MQTTv5
        )
        self.client.username_pw_set(user, f"pw-{user}")
        self.client.on_message = self._on_message
        self.client.on_connect = lambda c, u, f, rc, p=None: self._subscribe(topics)
        self.client.connect(broker.host, broker.port)
        self.client.loop_start()

    def _subscribe(self, topics: tuple[str, ...]) -> None:
        for topic in topics:
            self.client.subscribe(topic, qos=1)

    def _on_message(self, client: paho.Client, userdata: Any, msg: paho.MQTTMessage) -> None:
        with self.cond:
            self.got.append((msg.topic, bytes(msg.payload), msg.properties))
            self.cond.notify_all()

    def request(self, as_table: str, body: dict[str, Any], reply_to: str) -> bytes:
        corr = uuid.uuid4().bytes
        props = Properties(PacketTypes.PUBLISH)  # type: ignore[no-untyped-call]
        props.ResponseTopic = reply_to
        props.CorrelationData = corr
        self.client.publish(f"{BASE}/request/{as_table}", json.dumps(body), qos=1, properties=props).wait_for_publish(
            10
        )
        return corr

    def answer(self, corr: bytes, within: float) -> dict[str, Any] | None:
        with self.cond:
            self.cond.wait_for(
                lambda: any(getattr(p, "CorrelationData", None) == corr for _, _, p in self.got), timeout=within
            )
            for _, payload, p in self.got:
                if getattr(p, "CorrelationData", None) == corr:
                    return dict(json.loads(payload))
        return None

    def close(self) -> None:
        self.client.loop_stop()
        self.client.disconnect()


def test_a_table_cannot_contribute_or_publish_as_another(acl_broker: Mosquitto, link_db: str, tmp_path: Path) -> None:
    secret = tmp_path / "link.pw"
    secret.write_text(f"pw-link.{LINK}\n")
    secret.chmod(0o600)
    config = tmp_path / "link.toml"
    text = link_toml(link_db, acl_broker.url, "tablectl", link_id=LINK)
    login = f'prefix = "tablectl"\nusername = "link.{LINK}"\npassword_file = "{secret}"\n'
    config.write_text(text.replace('prefix = "tablectl"\n', login))
    (tmp_path / "logs").mkdir()
    link = LinkProcess(config, tmp_path / "logs")
    archive = Client(acl_broker, "floor.archive", "tablectl/+/event")
    one = Client(acl_broker, "ms-01", f"{BASE}/response/ms-01")
    two = Client(acl_broker, "ms-02", f"{BASE}/response/ms-02")
    link.start()
    try:
        mine_topic = f"{BASE}/response/ms-01"
        wait_for(
            lambda: one.answer(one.request("ms-01", {"kind": "heartbeat"}, mine_topic), 1) is not None, 60, "ms-01"
        )
        seat = {"seat": 1, "wager": "progressive", "cents": 500}
        forged = {"kind": "contribute", "round_id": "ms-02-r7", "contributions": [seat]}
        corr = one.request("ms-02", forged, f"{BASE}/response/ms-01")  # ms-01's credentials, ms-02's topic
        one.client.publish("tablectl/ms-02/event", b'{"forged": true}', qos=1).wait_for_publish(10)
        own = {**forged, "round_id": "ms-01-r1"}
        mine = one.answer(one.request("ms-01", own, f"{BASE}/response/ms-01"), 20)
        one.client.publish("tablectl/ms-01/event", b'{"own": true}', qos=1).wait_for_publish(10)
        with archive.cond:
            archive.cond.wait_for(lambda: len(archive.got) >= 1, timeout=20)
        assert mine is not None and mine["ok"] and mine["new"] == 1
        assert one.answer(corr, 0.5) is None, "the forged request reached the link"
        assert rows(link_db, "SELECT table_id, round_id FROM link_contribution") == [("ms-01", "ms-01-r1")]
        assert [t for t, _, _ in archive.got] == ["tablectl/ms-01/event"], "a forged event reached the floor"
        assert not two.got
    finally:
        link.stop()
        for c in (archive, one, two):
            c.close()
