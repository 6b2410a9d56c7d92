"""The benches' MQTT subscriber process: `python bench/subscriber.py HOST PORT TOPIC...`.

A paho client in a process of its own (started by benchlib.Subscriber), so that receiving does not compete with
the measured daemon for the GIL; it imports nothing of the controller. It prints `ready` once subscribed, then
for every message one line `<CLOCK_MONOTONIC ns> <topic> <payload>`; CLOCK_MONOTONIC is one clock for every
process on Linux, so the bench compares it with its own stamps.
"""

from __future__ import annotations

import os
import sys
import time
from typing import Any

import paho.mqtt.client as paho
from paho.mqtt.enums import CallbackAPIVersion


def subscribe(host: str, port: str, topics: list[str]) -> None:
    out = sys.stdout

    def on_connect(client: paho.Client, userdata: Any, flags: Any, rc: Any, props: Any = None) -> None:
        client.subscribe([(t, 1) for t in topics])

    def on_subscribe(client: paho.Client, userdata: Any, mid: int, rcs: Any, props: Any = None) -> None:
        out.write("ready\n")
        out.flush()

    def on_message(client: paho.Client, userdata: Any, msg: paho.MQTTMessage) -> None:
        now = time.monotonic_ns()
        out.write(f"{now} {msg.topic} {msg.payload.decode(errors='replace')}\n")
        out.flush()

    client = paho.Client(CallbackAPIVersion.VERSION2, client_id=f"bench-sub-{os.getpid()}")
    client.on_connect, client.on_subscribe, client.on_message = on_connect, on_subscribe, on_message
    client.connect(host, int(port), keepalive=30)
    client.loop_forever()


if __name__ == "__main__":
    subscribe(sys.argv[1], sys.argv[2], sys.argv[3:])
