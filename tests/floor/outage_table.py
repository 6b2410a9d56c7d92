"""A table as the floor's broker-outage tests need one: QoS 1 events published and each acknowledged by the broker
before `publish` returns, so a test may publish while it holds the floor's event loop (tests/floor/
test_session_lost.py, test_demo_broker_restart.py)."""

from __future__ import annotations

import json

import paho.mqtt.client as paho
from paho.mqtt.enums import CallbackAPIVersion

from tests.broker import fresh_id


def publish(port: int, prefix: str, table: str, seqs: range) -> None:
    client = paho.Client(CallbackAPIVersion.VERSION2, client_id=fresh_id("table"))
    client.connect("127.0.0.1", port)
    client.loop_start()
    try:
        infos = [
            client.publish(
                f"{prefix}/{table}/event",
                json.dumps(
                    {
                        "event_id": f"{table}-{seq}",
                        "boot_id": "b1",
                        "seq": seq,
                        "ts": f"2026-11-21T10:00:{seq:02d}.000000Z",
                        "table_id": table,
                        "round_id": None,
                        "type": "wager.accepted",
                        "rule": "655a.7(d)(1)",
                        "payload": {"seat": 1, "spot": "ante", "amount": 500},
                    }
                ),
                qos=1,
            )
            for seq in seqs
        ]
        for info in infos:
            info.wait_for_publish(timeout=10)
            if not info.is_published():
                raise AssertionError(f"the broker did not acknowledge message {info.mid}")
    finally:
        client.disconnect()
        client.loop_stop()
