"""A v1 station's answer to a command is its ACK and then the event that answers it, as a frame of its own
(docs/protocol.md section 13, "What the host writes around a window"): the exchange is over on the return pair once
that event is read, not at the station's first DATA frame after the ACK. A station that sends a wager it had queued
ahead of its `locked` has that answer still to come, and no GROUP frame or broadcast lock may go yet.

The host end is BusLink on a real pty opened as the driver opens a port; the test plays the v1 station on the pty's
other end. The line is counted at 300 baud so that each exchange's line time (2.7 s for a `lock`) is a failure bound
only: the host would stop waiting for the answer once it passed.
"""

from __future__ import annotations

import asyncio
import os
import select
from collections.abc import AsyncIterator
from typing import Any

import pytest

from drivers.reference import bus_link
from drivers.reference.bus_link import BusLink
from drivers.reference.framing import (
    VERSION_3,
    FrameParser,
    Kind,
    decode_message,
    encode_frame,
    encode_message,
)
from tests.drivers.pty_host import BOUND, pty_host

STATION = 11


async def _host(baud: int) -> AsyncIterator[tuple[BusLink, int, asyncio.Queue[bytes]]]:
    read: asyncio.Queue[bytes] = asyncio.Queue()
    on_data = lambda _src, payload: read.put_nowait(payload)  # noqa: E731
    async with pty_host(peers=[STATION], baud=baud, ack_timeout=BOUND, on_data=on_data) as (link, master, _):
        yield link, master, read


@pytest.fixture
async def host() -> AsyncIterator[tuple[BusLink, int, asyncio.Queue[bytes]]]:
    async for opened in _host(300):
        yield opened


@pytest.fixture
async def host_9600() -> AsyncIterator[tuple[BusLink, int, asyncio.Queue[bytes]]]:
    """Counted at 9600 baud: an `identify` and its answer, 0.27 s from the write."""
    async for opened in _host(9600):
        yield opened


@pytest.fixture
async def host_1200() -> AsyncIterator[tuple[BusLink, int, asyncio.Queue[bytes]]]:
    """Counted at 1200 baud: a `lock` and its answer, 0.6 s from the write; the `locked` after the ACK, 0.4 s."""
    async for opened in _host(1200):
        yield opened


def read_seq(fd: int) -> int:
    """The SEQ of the next whole frame the host wrote (blocking: run it off the loop, asyncio.to_thread)."""
    parser = FrameParser()
    while True:
        readable, _, _ = select.select([fd], [], [], BOUND)
        assert readable, "the host wrote nothing"
        frames = parser.feed(os.read(fd, 64))
        if frames:
            return frames[0].seq


def event(seq: int, evt: str, **fields: object) -> bytes:
    """A v1 station's DATA frame: to the host (ADDR 0), its own address as `src` inside."""
    return encode_frame(0, seq, Kind.DATA, encode_message({"evt": evt, **fields, "src": STATION}))


async def test_a_wager_sent_ahead_of_the_locked_does_not_end_the_wait_for_it(
    host: tuple[BusLink, int, asyncio.Queue[bytes]],
) -> None:
    link, station_end, read = host
    sent = asyncio.ensure_future(link.send_to(STATION, {"cmd": "lock"}))
    seq = await asyncio.to_thread(read_seq, station_end)
    # The station ACKs the lock, then sends the wager it had queued, and only then its `locked`.
    os.write(station_end, encode_frame(0, seq, Kind.ACK, b""))
    await asyncio.wait_for(sent, BOUND)
    os.write(station_end, event(40, "wager", spot="pass", amount=500))
    assert b"wager" in await asyncio.wait_for(read.get(), BOUND)
    assert link.answers_due(), "the wager ended the wait for the `locked` still to come"
    os.write(station_end, event(41, "locked"))
    assert b"locked" in await asyncio.wait_for(read.get(), BOUND)
    assert not link.answers_due()


async def test_a_v1_answer_is_decoded_once_for_its_sender_and_its_event(
    host: tuple[BusLink, int, asyncio.Queue[bytes]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A v1 frame names its sender inside its payload: the decoding that finds the `src` also gives the `evt` the
    exchange awaits, and the payload is not decoded a second time for it (bench/lock_in_window.py --mixed)."""
    link, station_end, read = host
    decoded: list[bytes] = []

    def counted(payload: bytes) -> dict[str, Any]:
        decoded.append(payload)
        return decode_message(payload)

    monkeypatch.setattr(bus_link, "decode_message", counted)
    sent = asyncio.ensure_future(link.send_to(STATION, {"cmd": "lock"}))
    seq = await asyncio.to_thread(read_seq, station_end)
    os.write(station_end, encode_frame(0, seq, Kind.ACK, b""))
    await asyncio.wait_for(sent, BOUND)
    assert link.answers_due()
    os.write(station_end, event(41, "locked"))
    payload = await asyncio.wait_for(read.get(), BOUND)
    assert not link.answers_due(), "the `locked` did not end the exchange"
    assert decoded == [payload]


async def test_a_station_slow_to_turn_round_has_its_event_awaited_from_its_ack(
    host_1200: tuple[BusLink, int, asyncio.Queue[bytes]],
) -> None:
    """The host allows a station 1 ms to turn round beyond the line time from its write; a station slower than that
    (busy firmware; a simulated station on a loaded machine took 2.6 to 5.4 ms, bench/late_identity.py) ACKs after the
    whole answer's line time has passed. Before, the host counted the answer over then, and a GROUP frame written as the
    ACK was read met the event crossing the return pair. The ACK read says the event follows: it is due from there."""
    link, station_end, read = host_1200
    sent = asyncio.ensure_future(link.send_to(STATION, {"cmd": "lock"}))
    seq = await asyncio.to_thread(read_seq, station_end)
    await asyncio.sleep(0.8)  # the station's turnaround: the scenario itself, past the host's 0.6 s estimate
    assert not link.answers_due(), "the host's estimate from its write has not passed: the station is not late"
    os.write(station_end, encode_frame(0, seq, Kind.ACK, b""))
    await asyncio.wait_for(sent, BOUND)
    assert link.answers_due(), "the ACK was read and its `locked` is still to come, yet nothing is due"
    os.write(station_end, event(41, "locked"))
    assert b"locked" in await asyncio.wait_for(read.get(), BOUND)
    assert not link.answers_due()


async def test_a_late_reply_to_an_identify_leaves_no_event_due(
    host_9600: tuple[BusLink, int, asyncio.Queue[bytes]],
) -> None:
    """An `identify` goes before the station's version is known, as a v1 exchange whose event would follow its ACK; a
    v3 station's REPLY carries the identity. Read after the exchange's line time, it is still the whole answer: nothing
    is due after it (a GROUP frame need not wait an identity's line time for an event that never comes)."""
    link, station_end, _read = host_9600
    sent = asyncio.ensure_future(link.send_to(STATION, {"cmd": "identify"}))
    seq = await asyncio.to_thread(read_seq, station_end)
    await asyncio.sleep(0.4)  # the station's turnaround: the scenario itself, past the host's 0.27 s estimate
    assert not link.answers_due(), "the host's estimate from its write has not passed: the station is not late"
    identity = {"evt": "identity", "model": "SIM-WAGER-STATION", "serial": "s11", "firmware": "1.0.0", "protocol": 3}
    os.write(station_end, encode_frame(STATION, seq, Kind.REPLY, encode_message(identity, VERSION_3), VERSION_3, True))
    await asyncio.wait_for(sent, BOUND)
    assert not link.answers_due(), "the REPLY carried the identity, yet an event is counted still to come"


async def test_an_ack_and_its_event_in_one_read_end_the_exchange(
    host: tuple[BusLink, int, asyncio.Queue[bytes]],
) -> None:
    """A v1 station's ACK and its `locked` read together: the event was handled before the ACK's callback counted it
    due, so the host then waited the event's whole line time (2.7 s for a `lock` here, 20 ms for an identity at 115200
    baud) for a frame it had already read, and no GROUP frame or broadcast lock went meanwhile."""
    link, station_end, read = host
    sent = asyncio.ensure_future(link.send_to(STATION, {"cmd": "lock"}))
    seq = await asyncio.to_thread(read_seq, station_end)
    os.write(station_end, encode_frame(0, seq, Kind.ACK, b"") + event(41, "locked"))
    await asyncio.wait_for(sent, BOUND)
    assert b"locked" in await asyncio.wait_for(read.get(), BOUND)
    assert not link.answers_due(), "the `locked` read with its ACK did not end the exchange"


async def test_a_wager_read_with_the_ack_does_not_end_the_wait_for_the_event(
    host: tuple[BusLink, int, asyncio.Queue[bytes]],
) -> None:
    """The same read, but the frame after the ACK is a wager the station had queued: its `locked` is still to come."""
    link, station_end, read = host
    sent = asyncio.ensure_future(link.send_to(STATION, {"cmd": "lock"}))
    seq = await asyncio.to_thread(read_seq, station_end)
    os.write(station_end, encode_frame(0, seq, Kind.ACK, b"") + event(40, "wager", spot="pass", amount=500))
    await asyncio.wait_for(sent, BOUND)
    assert b"wager" in await asyncio.wait_for(read.get(), BOUND)
    assert link.answers_due(), "the wager read with the ACK ended the wait for the `locked` still to come"
    os.write(station_end, event(41, "locked"))
    assert b"locked" in await asyncio.wait_for(read.get(), BOUND)
    assert not link.answers_due()
