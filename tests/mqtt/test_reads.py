"""controller.mqtt.reads leans on paho internals (`_sock_recv`, `_sock`, `loop_read` reading until EAGAIN): these
tests fail when paho changes under it. What paho decodes through the held reads is held against what it decodes
reading the socket itself, for every way hypothesis splits the same bytes over the wire; against a real mosquitto,
a batch's PUBACKs complete and are read in fewer recv() calls than packets."""

from __future__ import annotations

import asyncio
import itertools
import select
import socket
import struct

import aiomqtt
import paho.mqtt.client as paho
from hypothesis import example, given, settings
from hypothesis import strategies as st
from paho.mqtt.enums import CallbackAPIVersion, MQTTErrorCode

from controller.mqtt import batch, reads
from tests.broker import Mosquitto

PAHO_INTERNALS = ("_sock_recv", "_sock", "_packet_read", "_out_messages")


def test_the_internals_reads_relies_on_are_there() -> None:
    inner = paho.Client(CallbackAPIVersion.VERSION2, protocol=paho.MQTTv5)
    for name in PAHO_INTERNALS:
        assert hasattr(inner, name), f"paho.Client has no {name}: controller/mqtt/reads.py needs another way"


class Reader:
    """A paho client (MQTT 5) with `count` QoS 1 messages in flight, reading the far end of a real socket pair."""

    def __init__(self, count: int, held: bool) -> None:
        self.acked: list[int] = []
        self.client = paho.Client(CallbackAPIVersion.VERSION2, protocol=paho.MQTTv5)
        self.client.on_publish = lambda _c, _u, mid, _rc, _p: self.acked.append(mid)
        for n in range(count):
            self.client.publish("t/event", f"body {n}", qos=1)
        self.wire, near = socket.socketpair()
        near.setblocking(False)
        self.client._sock = self.near = near
        self.recvs = 0
        counted = self.client._sock_recv

        def counting(bufsize: int) -> bytes:
            self.recvs += 1
            return counted(bufsize)

        self.client._sock_recv = counting  # type: ignore[method-assign]
        if held:
            reads.buffered_reads(self.client)

    def deliver(self, chunk: bytes) -> MQTTErrorCode:
        """The bytes arrive; the loop calls loop_read as long as the socket polls readable (level-triggered, as
        asyncio's epoll): paho stops after as many packets as it has in flight and leaves the rest to the next turn."""
        self.wire.sendall(chunk)
        rc = self.client.loop_read()
        while rc == paho.MQTT_ERR_SUCCESS and self.client._sock is not None and readable(self.near):
            rc = self.client.loop_read()
        return rc

    def close(self) -> None:
        self.wire.close()
        if self.client._sock is not None:
            self.client._sock.close()


def readable(sock: socket.socket) -> bool:
    return bool(select.select([sock], [], [], 0)[0])


def pubacks(mids: list[int]) -> bytes:
    # MQTT 5.0 section 3.4: a short PUBACK (0x40, Remaining Length 2, the Packet Identifier); a PINGRESP (0xD0 0x00,
    # section 3.13) between them, and one PUBACK with a reason code and no properties (Remaining Length 3).
    out = bytearray()
    for n, mid in enumerate(mids):
        out += b"\x40\x02" + struct.pack("!H", mid) if n % 3 else b"\x40\x03" + struct.pack("!HB", mid, 0x10)
        if n % 4 == 1:
            out += b"\xd0\x00"
    return bytes(out)


@settings(max_examples=60, deadline=None)
@given(
    mids=st.lists(st.integers(min_value=1, max_value=8), max_size=10),
    cuts=st.lists(st.integers(min_value=0, max_value=64), max_size=6),
)
@example(mids=[1, 2, 3, 4, 5, 6, 7, 8], cuts=[])  # every one in flight acknowledged, in one segment
@example(mids=[1, 2, 3, 4, 5], cuts=[1, 2, 5, 7, 11])  # cut inside the fixed headers and the identifiers
def test_held_reads_decode_as_paho_reading_the_socket_itself(mids: list[int], cuts: list[int]) -> None:
    data = pubacks(mids)
    bounds = sorted({min(c, len(data)) for c in cuts} | {0, len(data)})
    chunks = [data[a:b] for a, b in itertools.pairwise(bounds)]
    plain, held = Reader(8, held=False), Reader(8, held=True)
    try:
        for chunk in chunks:
            assert plain.deliver(chunk) == held.deliver(chunk)
            # Nothing is left held between wake-ups: what arrived was decoded (or waits in paho's partial packet).
            assert plain.acked == held.acked
        assert sorted(plain.client._out_messages) == sorted(held.client._out_messages)
        assert held.recvs <= plain.recvs
    finally:
        plain.close()
        held.close()


def test_one_read_takes_the_pubacks_that_arrived_together() -> None:
    plain, held = Reader(8, held=False), Reader(8, held=True)
    try:
        data = b"".join(b"\x40\x02" + struct.pack("!H", mid) for mid in range(1, 9))
        assert plain.deliver(data) == held.deliver(data) == paho.MQTT_ERR_SUCCESS
        assert held.acked == plain.acked == list(range(1, 9))
        # paho alone: three reads a packet (it stops after the eight it has in flight); held: one for all eight.
        assert (plain.recvs, held.recvs) == (8 * 3, 1)
    finally:
        plain.close()
        held.close()


def test_the_end_of_the_stream_is_seen_as_paho_sees_it() -> None:
    plain, held = Reader(2, held=False), Reader(2, held=True)
    try:
        for r in (plain, held):
            r.wire.sendall(b"\x40\x02\x00\x01")
            r.wire.close()
        assert plain.client.loop_read() == held.client.loop_read() == paho.MQTT_ERR_CONN_LOST
        assert plain.acked == held.acked == [1]
    finally:
        for r in (plain, held):
            if r.client._sock is not None:
                r.client._sock.close()


async def test_a_batch_is_acknowledged_through_the_broker_in_fewer_reads_than_packets(
    mosquitto: Mosquitto, unique_id: str
) -> None:
    client = aiomqtt.Client(mosquitto.host, mosquitto.port, identifier=f"reads-{unique_id}", max_inflight_messages=100)
    inner = client._client
    recvs = [0]
    counted = inner._sock_recv

    def counting(bufsize: int) -> bytes:
        recvs[0] += 1
        return counted(bufsize)

    inner._sock_recv = counting  # type: ignore[method-assign]
    batch.fast_pubacks(client)
    reads.fewer_reads(client)
    async with client:
        lost: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        recvs[0] = 0
        for _ in range(5):
            sent = batch.send(client, f"t/{unique_id}/event", (f'{{"n":{n}}}' for n in range(20)))
            await batch.settled(sent, lost, 5.0)
            batch.forget(client, sent.mids)
            assert sent.complete
    # 100 PUBACKs: paho alone reads each in three calls (300 and more); held, a wake-up's PUBACKs take one and the
    # empty read after them one more.
    assert 0 < recvs[0] < 100, recvs[0]
