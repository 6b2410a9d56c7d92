"""The benches' MQTT subscriber process: `python bench/subscriber.py HOST PORT TOPIC...`.

A paho client in a process of its own (started by benchlib.Subscriber), so that receiving does not compete with
the measured daemon for the GIL; it imports nothing of the controller. It prints `ready` once subscribed, then
for every message one line `<CLOCK_MONOTONIC ns> <topic> <payload>`; CLOCK_MONOTONIC is one clock for every
process on Linux, so the bench compares it with its own stamps.

The lines of a burst (a settlement's 10-16 events) go out in one write, once nothing more waits on the socket, not
one write and flush each: each line woke the bench's reader thread, which runs in the measured process and took
its GIL from the loop publishing the rest of the burst. Each message is still stamped as paho hands it over, and this
process does less per message than before (a zero-timeout select instead of a pipe write): no slower than a plain
paho subscriber doing anything with its messages.
"""

from __future__ import annotations

import os
import select
import socket
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

    client = paho.Client(CallbackAPIVersion.VERSION2, client_id=f"bench-sub-{os.getpid()}")
    client.on_connect, client.on_subscribe, client.on_message = on_connect, on_subscribe, on_message
    client.connect(host, int(port), keepalive=30)
    sock = client.socket()
    assert isinstance(sock, socket.socket)  # plain TCP to the bench's broker
    while True:
        # One packet each turn (paho reads a packet's bytes and no more, so a readable socket means more is waiting).
        rc = client.loop(timeout=1.0)
        if rc != paho.MQTT_ERR_SUCCESS:
            sys.exit(f"bench subscriber: the connection to the broker ended ({paho.error_string(rc)})")
        if not select.select([sock], [], [], 0)[0]:
            out.flush()


if __name__ == "__main__":
    subscribe(sys.argv[1], sys.argv[2], sys.argv[3:])
