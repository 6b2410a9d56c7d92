"""The benches' MQTT subscriber process: `python bench/subscriber.py HOST PORT TOPIC...`.

A paho client in a process of its own (started by benchlib.Subscriber), so that receiving does not compete with
the measured daemon for the GIL; it imports nothing of the controller. It prints `ready` once subscribed, then
for every message one line `<CLOCK_MONOTONIC ns> <arrived ns> <topic> <payload>`; CLOCK_MONOTONIC is one clock for
every process on Linux, so the bench compares it with its own stamps. `arrived` is the kernel's stamp of the segment
that brought the packet's first byte to this socket (SO_TIMESTAMPNS, taken when loopback delivered it, i.e. as the
broker wrote it), moved from CLOCK_REALTIME to CLOCK_MONOTONIC: what lies before it is the broker's, what lies after
it this process's (0 when the kernel gave no stamp).

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
import struct
import sys
import time
from typing import Any

import paho.mqtt.client as paho
from paho.mqtt.enums import CallbackAPIVersion

# linux/include/uapi/asm-generic/socket.h (the socket module does not name them): SO_TIMESTAMPNS_OLD, whose control
# message is a struct timespec of two longs.
SO_TIMESTAMPNS = 35
SCM_TIMESTAMPNS = SO_TIMESTAMPNS
_TIMESPEC = struct.Struct("@ll")


def stamp_arrivals(client: paho.Client, sock: socket.socket) -> list[int]:
    """Read the client's socket with recvmsg, keeping the kernel's arrival stamp of each packet's first byte
    (CLOCK_MONOTONIC ns) in the returned one-item list; paho reads a packet's command byte alone, so each packet's
    first read is a read of one byte with no packet under way."""
    sock.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
    arrived = [0]
    space = socket.CMSG_SPACE(_TIMESPEC.size)

    def recv(bufsize: int) -> bytes:
        data, ancillary, _, _ = sock.recvmsg(bufsize, space)
        if bufsize == 1 and client._in_packet["command"] == 0:
            arrived[0] = 0
            for level, kind, cdata in ancillary:
                if level == socket.SOL_SOCKET and kind == SCM_TIMESTAMPNS:
                    sec, nsec = _TIMESPEC.unpack(cdata[: _TIMESPEC.size])
                    arrived[0] = sec * 1_000_000_000 + nsec - (time.time_ns() - time.monotonic_ns())
        return data

    client._sock_recv = recv  # type: ignore[method-assign]
    return arrived


def subscribe(host: str, port: str, topics: list[str]) -> None:
    out = sys.stdout

    def on_connect(client: paho.Client, userdata: Any, flags: Any, rc: Any, props: Any = None) -> None:
        client.subscribe([(t, 1) for t in topics])

    def on_subscribe(client: paho.Client, userdata: Any, mid: int, rcs: Any, props: Any = None) -> None:
        out.write("ready\n")
        out.flush()

    arrived = [0]

    def on_message(client: paho.Client, userdata: Any, msg: paho.MQTTMessage) -> None:
        now = time.monotonic_ns()
        out.write(f"{now} {arrived[0]} {msg.topic} {msg.payload.decode(errors='replace')}\n")

    client = paho.Client(CallbackAPIVersion.VERSION2, client_id=f"bench-sub-{os.getpid()}")
    client.on_connect, client.on_subscribe, client.on_message = on_connect, on_subscribe, on_message
    client.connect(host, int(port), keepalive=30)
    sock = client.socket()
    assert isinstance(sock, socket.socket)  # plain TCP to the bench's broker
    arrived = stamp_arrivals(client, sock)
    while True:
        # One packet each turn (paho reads a packet's bytes and no more, so a readable socket means more is waiting).
        rc = client.loop(timeout=1.0)
        if rc != paho.MQTT_ERR_SUCCESS:
            sys.exit(f"bench subscriber: the connection to the broker ended ({paho.error_string(rc)})")
        if not select.select([sock], [], [], 0)[0]:
            out.flush()


if __name__ == "__main__":
    subscribe(sys.argv[1], sys.argv[2], sys.argv[3:])
