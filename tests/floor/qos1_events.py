"""Events published as a table publishes them (QoS 1, each acknowledged by the broker before this returns), for the
floor's outage tests."""

from __future__ import annotations

import json
import uuid

import paho.mqtt.client as paho
from paho.mqtt.enums import CallbackAPIVersion

from tests.broker import Mosquitto


def publish_events(mosquitto: Mosquitto, prefix: str, table: str, seqs: range) -> None:
    client = paho.Client(CallbackAPIVersion.VERSION2, client_id=f"outage-{uuid.uuid4().hex[:8]}")
    client.connect(mosquitto.host, mosquitto.port)
    client.loop_start()
    infos = []
    for seq in seqs:
        event = {
            "event_id": f"{table}-{seq}",
            "boot_id": "b1",
            "seq": seq,
            "ts": f"2026-11-21T10:{seq // 60 % 60:02d}:{seq % 60:02d}.000000Z",
            "table_id": table,
            "round_id": None,
            "type": "wager.accepted",
            "rule": "655a.7(d)(1)",
            "payload": {"seat": 1, "spot": "ante", "amount": 500},
        }
        infos.append(client.publish(f"{prefix}/{table}/event", json.dumps(event), qos=1))
    for info in infos:
        info.wait_for_publish(timeout=10)
    client.disconnect()
    client.loop_stop()
