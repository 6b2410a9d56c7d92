"""Paced simulator lines (drivers/sim/line.py): bytes take the wire time of a real 8N1 line, both ways, in order.

Each test asserts a lower bound only (a frame never arrives sooner than the wire allows) and the order and
content of what arrives: a loaded machine makes things later, never earlier, so these cannot flake on speed.
"""

from __future__ import annotations

import asyncio
import time

import pytest

from drivers.interfaces import DeviceEvent, LockAcknowledged
from drivers.reference.framing import (
    GROUP_LOCK,
    SLOT_CONFIRMATION,
    SLOT_PERIOD,
    SLOT_TURNAROUND,
    Frame,
    FrameParser,
    Kind,
    encode_frame,
    encode_group,
    encode_message,
)
from drivers.reference.wager_bus import ReferenceWagerBus
from drivers.registry import create_driver
from drivers.serial_port import open_serial
from drivers.sim.line import LineTiming, default_timing
from drivers.sim.pty import PtyEndpoint
from drivers.sim.wager_bus import WagerBusSim

SLOW = LineTiming(baud=9600, gap_bytes=2)  # 1.04 ms a byte: bounds well above timer noise


async def read_frames(reader: asyncio.StreamReader, count: int) -> list[tuple[float, Frame]]:
    parser = FrameParser()
    got: list[tuple[float, Frame]] = []
    async with asyncio.timeout(5):
        while len(got) < count:
            data = await reader.read(4096)
            got += [(time.monotonic(), f) for f in parser.feed(data)]
    return got


async def test_what_the_device_sends_takes_its_wire_time() -> None:
    endpoint = PtyEndpoint(SLOW)
    reader, writer = await open_serial(endpoint.path, 9600)
    try:
        first = encode_frame(0, 1, Kind.DATA, encode_message({"evt": "wager", "spot": "ante", "amount": 500}))
        second = encode_frame(0, 2, Kind.DATA, encode_message({"evt": "locked"}))
        sent = time.monotonic()
        endpoint.write(first)
        endpoint.write(second)
        (t1, f1), (t2, f2) = await read_frames(reader, 2)
        assert (f1.seq, f2.seq) == (1, 2)
        assert t1 - sent >= SLOW.frame_time(len(first))
        # The second frame waits for the first and the idle gap between them.
        assert t2 - sent >= SLOW.frame_time(len(first) + len(second)) + SLOW.frame_time(1) * SLOW.gap_bytes
        assert endpoint.outbound.bytes_sent == len(first) + len(second)
    finally:
        writer.close()
        endpoint.close()


async def test_a_line_counts_the_wire_time_of_what_it_carried_paced_or_not() -> None:
    """bench/footprint.py --timeline bounds a table's rounds/s by its busiest line: each write's bytes at the baud rate
    and the idle gap before it, whether or not the line paces them (a pty does not, a real line would)."""
    for timing in (SLOW, LineTiming(baud=9600, paced=False)):
        endpoint = PtyEndpoint(timing)
        try:
            endpoint.write(b"\x02" + bytes(20))
            endpoint.write(b"\x02" + bytes(5))
            gap = timing.frame_time(1) * timing.gap_bytes
            assert endpoint.outbound.line_seconds == pytest.approx(timing.frame_time(27) + 2 * gap)
            assert endpoint.inbound.line_seconds == 0.0
        finally:
            endpoint.close()


async def test_what_the_host_sends_reaches_the_device_a_wire_time_later() -> None:
    endpoint = PtyEndpoint(SLOW)
    _reader, writer = await open_serial(endpoint.path, 9600)
    try:
        frame = encode_frame(1, 7, Kind.DATA, encode_message({"cmd": "lock"}))
        sent = time.monotonic()
        writer.write(frame)
        await writer.drain()
        got = b""
        async with asyncio.timeout(5):
            while len(got) < len(frame):
                got += await endpoint.read(4096)
        assert got == frame
        assert time.monotonic() - sent >= SLOW.frame_time(len(frame))
    finally:
        writer.close()
        endpoint.close()


async def test_unpaced_line_passes_bytes_at_once_in_order() -> None:
    endpoint = PtyEndpoint(LineTiming(paced=False))
    reader, writer = await open_serial(endpoint.path, 115200)
    try:
        frames = [encode_frame(0, n, Kind.DATA, encode_message({"evt": "pong"})) for n in range(20)]
        for frame in frames:
            endpoint.write(frame)
        got = await read_frames(reader, 20)
        assert [f.seq for _t, f in got] == list(range(20))
    finally:
        writer.close()
        endpoint.close()


def lock_out_line_time(protocol: int, line: LineTiming) -> float:
    """The least line time a lock-out of stations 1 to 7 takes in `protocol` (docs/protocol.md section 13, "Line time
    of a lock-out on one line"): v2, the broadcast and seven `locked` frames back to back; v3, the GROUP frame and its
    window up to the end of the last confirmation."""
    if protocol == 2:
        broadcast = encode_frame(
            0xFF, 0, Kind.DATA, encode_message({"cmd": "lock", "stations": [1, 2, 3, 4, 5, 6, 7]}, 2), 2
        )
        locked = encode_frame(1, 0, Kind.DATA, encode_message({"evt": "locked"}, 2), 2, True)
        return line.frame_time(len(broadcast) + 7 * len(locked))
    group = encode_group(0, GROUP_LOCK, [1, 2, 3, 4, 5, 6, 7])
    return line.frame_time(len(group) + SLOT_TURNAROUND + 6 * SLOT_PERIOD + SLOT_CONFIRMATION)


# The v3 line was measured against v2's bound and passed only while retransmitted identities still queued on the
# return pair ahead of the lock (a simulated station timed its ACK from the queueing of its frame).
@pytest.mark.parametrize("protocol", [2, 3])
async def test_stations_answering_a_broadcast_share_the_return_pair(protocol: int) -> None:
    """Seven `locked` answers (v2) or slot confirmations (v3) on one paced line follow each other: the last comes no
    sooner than the lock and all seven answers allow."""
    # 115200 baud: at 9600 seven v1 `identity` answers (about 140 bytes each) would outlast the ACK timeout.
    line = LineTiming()
    sim = WagerBusSim("wager_bus", seats=range(1, 8), timing=line)
    await sim.start()
    driver = create_driver(
        "wager_bus",
        {
            "driver": "reference-wager-bus",
            "port": sim.port,
            "seats": list(range(1, 8)),
            "heartbeat_interval": 0,
            "protocol": protocol,
        },
    )
    assert isinstance(driver, ReferenceWagerBus)
    acks: asyncio.Queue[DeviceEvent] = asyncio.Queue()
    online = [asyncio.Event() for _ in range(7)]

    def sink(event: DeviceEvent) -> None:
        if isinstance(event, LockAcknowledged):
            acks.put_nowait(event)
        else:
            online[int(event.device_id.rsplit("_", 1)[1]) - 1].set()

    try:
        await asyncio.gather(*(s.start(sink) for s in driver.stations.values()))
        async with asyncio.timeout(10):
            for event in online:
                await event.wait()
        start = time.monotonic()
        await asyncio.gather(*(s.lock() for s in driver.stations.values()))
        seats = []
        async with asyncio.timeout(10):
            for _ in range(7):
                ack = await acks.get()
                assert isinstance(ack, LockAcknowledged)
                seats.append(ack.seat)
        elapsed = time.monotonic() - start
        assert sorted(seats) == list(range(1, 8))
        assert {s.protocol_version for s in driver.stations.values()} == {protocol}
        assert elapsed >= lock_out_line_time(protocol, line)
    finally:
        await asyncio.gather(*(s.stop() for s in driver.stations.values()))
        await sim.stop()


def test_pacing_setting_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TABLECTL_SIM_PACING", "off")
    assert not default_timing().paced
    monkeypatch.setenv("TABLECTL_SIM_PACING", "on")
    monkeypatch.setenv("TABLECTL_SIM_BAUD", "57600")
    assert default_timing() == LineTiming(baud=57600)
    monkeypatch.setenv("TABLECTL_SIM_BAUD", "fast")
    with pytest.raises(ValueError, match=r"TABLECTL_SIM_BAUD=.fast. is not a whole number of baud, e\.g\. 115200"):
        default_timing()
    with pytest.raises(ValueError, match="baud must be positive"):
        LineTiming(baud=0)
