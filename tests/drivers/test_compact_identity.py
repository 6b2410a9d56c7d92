"""The identity in the negotiated version (docs/protocol.md section 10, "Negotiation" rule 2): the host's identify
offers its versions, a device answers in the highest both speak, its firmware_hash as 32 bytes. Seven stations answer
one after another on a shared line's return pair at every start, so the identity's size is the start's wire time."""

from __future__ import annotations

import asyncio
import hashlib
import re
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from drivers.interfaces import DeviceOnline
from drivers.reference.framing import (
    VERSION,
    VERSION_2,
    VERSION_3,
    FrameParser,
    Kind,
    ProtocolError,
    decode_message,
    encode_frame,
    encode_message,
)
from drivers.reference.wager_bus import ReferenceWagerBus
from drivers.serial_port import open_serial
from drivers.sim.line import LineTiming
from drivers.sim.pty import PtyEndpoint
from drivers.sim.wager_bus import WagerBusSim
from tests.drivers.line_log import LineLog, OnLine, start_logged_bus

HASH = hashlib.sha256(b"").hexdigest()
ADDRESSES = {seat: 20 + seat for seat in range(1, 8)}


# --- the codec -----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("version", [VERSION_2, VERSION_3])
def test_a_sha256_travels_as_its_32_bytes_and_reads_back_as_the_hex(version: int) -> None:
    identity = {"evt": "identity", "model": "M", "serial": "S", "firmware": "1", "firmware_hash": HASH}
    payload = encode_message(identity, version)
    assert bytes.fromhex("5820") + bytes.fromhex(HASH) in payload
    assert len(payload) == len(encode_message({**identity, "firmware_hash": ""}, version)) - 1 + 34
    assert decode_message(payload) == identity


@pytest.mark.parametrize("text", ["", "9f2c...e1", HASH.upper(), HASH[:-2], HASH + "00"])
def test_a_firmware_hash_that_is_no_lowercase_sha256_stays_text(text: str) -> None:
    message = {"evt": "identity", "firmware_hash": text}
    payload = encode_message(message, VERSION_3)
    assert text.encode() in payload
    assert decode_message(payload) == message


def test_a_firmware_hash_of_another_length_in_bytes_is_malformed() -> None:
    # {1: 0, 25: h'00 01 02'}: the evt identity with a three-byte hash.
    with pytest.raises(ProtocolError, match="firmware_hash as bytes must be 32 bytes"):
        decode_message(bytes.fromhex("A2 01 00 18 19 43 00 01 02"))


def test_bytes_elsewhere_stay_malformed() -> None:
    with pytest.raises(ProtocolError, match="bytes has no meaning"):
        decode_message(bytes.fromhex("A2 01 00 18 18 42 00 01"))  # {1: 0, 24: h'00 01'}: firmware as bytes


@given(st.text(max_size=70), st.binary(min_size=32, max_size=32))
def test_every_firmware_hash_round_trips(text: str, digest: bytes) -> None:
    for value in (text, digest.hex()):
        message = {"evt": "identity", "firmware_hash": value}
        assert decode_message(encode_message(message, VERSION_3)) == message


def test_the_protocol_page_prints_this_identify() -> None:
    page = (Path(__file__).resolve().parents[2] / "docs" / "protocol.md").read_text()
    section = page.split("**Why the identity is compact.**", 1)[1].split("\n### ", 1)[0]
    printed = re.search(r"`(A5 01 01 00 01 00 26[0-9A-F \n]+)`", section)
    assert printed is not None
    frame = encode_frame(1, 0, Kind.DATA, encode_message({"cmd": "identify", "protocols": [1, 2, 3]}), VERSION)
    assert " ".join(printed.group(1).split()) == frame.hex(" ").upper()


# --- seven stations on one line, through a real pty ----------------------------------------------------------------


@pytest.fixture
async def bus_sim() -> AsyncIterator[WagerBusSim]:
    sim = WagerBusSim("wager_bus", addresses=ADDRESSES)
    yield sim
    await sim.stop()


async def start_bus(sim: WagerBusSim, **settings: Any) -> tuple[LineLog, list[DeviceOnline], ReferenceWagerBus]:
    """Start the line with a log on it, then every seat of the driver at once; return once all seven are online."""
    stations = [{"seat": s, "address": a} for s, a in ADDRESSES.items()]
    return await start_logged_bus(sim, {"stations": stations, **settings}, len(ADDRESSES))


def identities(wire: LineLog) -> dict[int, OnLine]:
    """Each station's identity frame as the line carried it, by address (from the header in v2/v3, `src` in v1)."""
    found: dict[int, OnLine] = {}
    for seen in wire.frames:
        if not seen.from_host and seen.name == "identity":
            message = decode_message(seen.frame.payload)
            address = seen.frame.address if seen.frame.version != VERSION else message["src"]
            # A station sends its identity again, the same frame, when the host's ACK comes after its ACK timeout
            # (section 4): a stall of this process holds the host's ACK and the simulated station's timer alike.
            assert address not in found or found[address].frame == seen.frame, f"station {address}: two identities"
            found.setdefault(address, seen)
    return found


async def test_seven_v3_stations_answer_in_v3_in_half_the_bytes(bus_sim: WagerBusSim) -> None:
    wire, online, driver = await start_bus(bus_sim, protocol=3)  # v3 (v4 in test_bus_v4.py)
    try:
        sent = [s.frame for s in wire.frames if s.from_host and s.name == "identify"]
        # One identify to each station; a copy (the same frame) only after a stall past the ACK timeout.
        assert len(set(sent)) == 7 and len({f.address for f in sent}) == 7, sent
        assert all(decode_message(f.payload)["protocols"] == [1, 2, 3] for f in sent)
        answers = identities(wire)
        assert sorted(answers) == sorted(ADDRESSES.values())
        for seat, address in ADDRESSES.items():
            station = bus_sim.stations[seat]
            v1_size = len(encode_frame(0, 0, Kind.DATA, encode_message({"evt": "identity", **station.identity})))
            seen = answers[address]
            assert seen.frame.version == VERSION_3 and "src" not in decode_message(seen.frame.payload)
            # The hash (66 bytes as text) is 34 as bytes, the keys and names one byte each: under half of v1.
            assert seen.size == len(
                encode_frame(
                    address,
                    0,
                    Kind.DATA,
                    encode_message({"evt": "identity", **station.identity}, VERSION_3),
                    VERSION_3,
                    True,
                )
            )
            assert seen.size < v1_size / 2 + 5, (seen.size, v1_size)
        # What the host reports is the device's hex, whatever the wire carried.
        assert [e.identity["firmware_hash"] for e in online] == [
            bus_sim.stations[seat].identity["firmware_hash"] for seat in ADDRESSES
        ]
        # The start on the return pair: an ACK of each identify (v1, the identify's version) and one identity each.
        back = [(s.frame.kind, s.frame.version) for s in wire.frames if not s.from_host]
        if len(sent) == 7 and back.count((Kind.DATA, VERSION_3)) == 7:  # nothing sent again (a stall's copies)
            assert sorted(back) == sorted([(Kind.ACK, VERSION)] * 7 + [(Kind.DATA, VERSION_3)] * 7)
        assert set(back) == {(Kind.ACK, VERSION), (Kind.DATA, VERSION_3)}, back
        assert {s.protocol_version for s in driver.stations.values()} == {3}
    finally:
        await asyncio.gather(*(s.stop() for s in driver.stations.values()))


async def test_older_stations_answer_in_their_own_version(bus_sim: WagerBusSim) -> None:
    bus_sim.stations[2].configure_line((1,))
    bus_sim.stations[5].configure_line((1, 2))
    wire, online, driver = await start_bus(bus_sim, protocol=3)  # v3 (v4 in test_bus_v4.py)
    try:
        versions = {a: s.frame.version for a, s in identities(wire).items()}
        expected = {a: VERSION_3 for a in ADDRESSES.values()} | {ADDRESSES[2]: VERSION, ADDRESSES[5]: VERSION_2}
        assert versions == expected
        assert [s.protocol_version for s in driver.stations.values()] == [expected[a] for a in ADDRESSES.values()]
        assert all(e.identity["firmware_hash"] == bus_sim.stations[1].identity["firmware_hash"] for e in online)
    finally:
        await asyncio.gather(*(s.stop() for s in driver.stations.values()))


async def test_a_host_kept_to_v1_offers_nothing_and_is_answered_in_v1(bus_sim: WagerBusSim) -> None:
    wire, _online, driver = await start_bus(bus_sim, protocol=1)
    try:
        sent = [s.frame for s in wire.frames if s.from_host and s.name == "identify"]
        # One identify to each station. A stall of this process past the ACK timeout (a loaded machine, the simulated
        # stations' answers held with the host) has the host send one again: a copy, byte for byte the same frame.
        assert len({f.address for f in sent}) == 7 and len(set(sent)) == 7, sent
        assert not any("protocols" in decode_message(f.payload) for f in sent)
        assert {s.frame.version for s in identities(wire).values()} == {VERSION}
    finally:
        await asyncio.gather(*(s.stop() for s in driver.stations.values()))


# --- the simulated line hands over each frame of one read when its own last byte arrives ----------------------------


async def test_frames_written_together_arrive_one_by_one() -> None:
    """A host writes an identify to each station at once; the pty reads them in one go. The first must reach the
    stations when its own last byte would have, not with the last frame's (a lower bound and the order only)."""
    slow = LineTiming(baud=9600, gap_bytes=2)
    endpoint = PtyEndpoint(slow)
    deliveries: list[tuple[float, bytes]] = []
    endpoint.tap = lambda from_host, data: deliveries.append((time.monotonic(), data)) if from_host else None
    _reader, writer = await open_serial(endpoint.path, 9600)
    try:
        frames = [
            encode_frame(a, a, Kind.DATA, encode_message({"cmd": "identify", "protocols": [1, 2, 3]}))
            for a in (1, 2, 3)
        ]
        sent = time.monotonic()
        writer.write(b"".join(frames))
        got = b""
        async with asyncio.timeout(5):
            while len(got) < sum(map(len, frames)):
                got += await endpoint.read(4096)
        assert got == b"".join(frames)
        parser = FrameParser()
        per_delivery = [len(parser.feed(data)) for _t, data in deliveries]
        # Each delivery completes exactly one frame (a frame may come in pieces, cut at a 0xA5 in its payload).
        assert sum(per_delivery) == 3 and max(per_delivery) == 1
        first_done = next(t for (t, _d), n in zip(deliveries, per_delivery, strict=True) if n)
        assert first_done - sent >= slow.frame_time(len(frames[0]))
        assert deliveries[-1][0] - sent >= slow.frame_time(sum(map(len, frames)))
    finally:
        writer.close()
        endpoint.close()
