"""Reference protocol v3: short frames, the REPLY that is the ACK and the answer at once, the documented test vectors,
negotiation at identify (v1 and v2 devices unchanged), and a REPLY's loss recovered by the host's retransmission.

docs/protocol.md section 12 is what these hold the code to.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from drivers.interfaces import DeviceOnline, LockAcknowledged
from drivers.reference import compact, messages
from drivers.reference.compact import COMMAND_NAMES, EVENT_NAMES
from drivers.reference.device import ReferenceDevice
from drivers.reference.framing import (
    MAX_PAYLOAD_V2,
    VERSION,
    VERSION_2,
    VERSION_3,
    VERSION_4,
    Frame,
    FrameParser,
    Kind,
    bare_code,
    code_payload,
    crc16,
    decode_message,
    encode_frame,
    encode_message,
)
from drivers.reference.link import Link
from drivers.sim.pty import PtyEndpoint
from drivers.sim.table import SimulatedTable
from tests.drivers.conftest import DriverFactory
from tests.drivers.line_log import LineLog, OnLine
from tests.drivers.loop_pauses import LoopPauses

# (what, address, seq, kind, message, from_device, frame) exactly as docs/protocol.md section 12 prints them.
VECTORS: list[tuple[str, int, int, Kind, dict[str, Any] | None, bool, str]] = [
    ("host locks device 1", 1, 0x10, Kind.DATA, {"cmd": "lock"}, False, "A5 33 01 10 05 57 13"),
    ("device 1 answers locked", 1, 0x10, Kind.REPLY, {"evt": "locked"}, True, "A5 3C 01 10 07 A3 BF"),
    ("host pings device 1", 1, 0x11, Kind.DATA, {"cmd": "ping"}, False, "A5 33 01 11 01 24 A6"),
    ("device 1 ACKs SEQ 0x12", 1, 0x12, Kind.ACK, None, True, "A5 39 01 12 96 EA"),
    ("device 1 NAKs SEQ 5", 1, 0x05, Kind.NAK, None, True, "A5 3A 01 05 AD 6C"),
    ("host ACKs device 1's SEQ 3", 1, 0x03, Kind.ACK, None, False, "A5 31 01 03 3D 5B"),
    ("device 1's own unlocked", 1, 0x07, Kind.DATA, {"evt": "unlocked"}, True, "A5 3B 01 07 08 99 99"),
    (
        "no more bets",
        1,
        0x05,
        Kind.DATA,
        {"evt": "button", "button": "no_more_bets"},
        True,
        "A5 38 01 05 05 A2 01 0B 08 00 D9 F1",
    ),
    (
        "a wager",
        1,
        0x04,
        Kind.DATA,
        {"evt": "wager", "spot": "ante", "amount": 500},
        True,
        "A5 38 01 04 0D A3 01 09 03 64 61 6E 74 65 04 19 01 F4 7E FA",
    ),
    ("dispense 2", 1, 0x17, Kind.DATA, {"cmd": "dispense", "cards": 2}, False, "A5 30 01 17 05 A2 00 03 05 02 2E 9D"),
    (
        "identity, the hash as 32 bytes (section 10, Negotiation rule 2)",
        1,
        0x00,
        Kind.DATA,
        {
            "evt": "identity",
            "model": "ACME-WS1",
            "serial": "SN12345",
            "firmware": "2.1.0",
            "firmware_hash": "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
            "protocols": [1, 2, 3],
        },
        True,
        "A5 38 01 00 47 A6 01 00 15 83 01 02 03 16 68 41 43 4D 45 2D 57 53 31 17 67 53 4E 31 32 33 34 35 18 18 65 32 2E"
        " 31 2E 30 18 19 58 20 E3 B0 C4 42 98 FC 1C 14 9A FB F4 C8 99 6F B9 24 27 AE 41 E4 64 9B 93 4C A4 95 99 1B"
        " 78 52 B8 55 89 CC",
    ),
]


@pytest.mark.parametrize(("what", "address", "seq", "kind", "message", "from_device", "wire"), VECTORS)
def test_documented_vectors(
    what: str, address: int, seq: int, kind: Kind, message: dict[str, Any] | None, from_device: bool, wire: str
) -> None:
    payload = encode_message(message, VERSION_3) if message is not None else b""
    frame = encode_frame(address, seq, kind, payload, VERSION_3, from_device)
    assert frame.hex(" ").upper() == wire, what
    parsed = FrameParser().feed(bytes.fromhex(wire))
    assert parsed == [Frame(address, seq, kind, payload, VERSION_3, from_device)]
    if message is not None:
        assert decode_message(parsed[0].payload) == message


def test_the_lock_out_fits_in_14_bytes() -> None:
    """2 ms at 115200 8N1 is 23 bytes: v2's lock, ACK and locked are 30; v3's lock and REPLY are 14."""
    lock = encode_frame(1, 0, Kind.DATA, encode_message({"cmd": "lock"}, VERSION_3), VERSION_3)
    locked = encode_frame(1, 0, Kind.REPLY, encode_message({"evt": "locked"}, VERSION_3), VERSION_3, True)
    assert (len(lock), len(locked)) == (7, 7)


def test_a_reply_is_only_a_devices_bare_event() -> None:
    # What is not a bare event goes whole in v4's ANSWER (kind 6, section 14), which only a device sends either.
    for message in ({"cmd": "lock"}, {"evt": "locked", "src": 1}):
        payload = encode_message(message, VERSION_3)
        frame = encode_frame(1, 0, Kind.REPLY, payload, VERSION_3, True)
        assert frame[1] == 0x3E and frame[4] == len(payload)
    with pytest.raises(ValueError, match="REPLY"):
        encode_frame(1, 0, Kind.REPLY, encode_message({"evt": "locked"}, VERSION_3), VERSION_3, False)
    with pytest.raises(ValueError, match="v3"):
        encode_frame(1, 0, Kind.REPLY, encode_message({"evt": "locked"}, VERSION_2), VERSION_2, True)


def test_a_host_reply_is_no_frame() -> None:
    """Only a device answers: VK 0x34 (REPLY without the from-device bit) is dropped like any bad header."""
    body = bytes((0x34, 1, 0x10, 7))
    parser = FrameParser()
    assert parser.feed(b"\xa5" + body + crc16(body).to_bytes(2, "big")) + parser.expire() == []
    assert parser.bad_frames == 1


def test_codes_past_23_take_the_two_byte_cbor_form() -> None:
    assert bare_code(code_payload(1, 7)) == (1, 7)
    assert bare_code(code_payload(0, 200)) == (0, 200)
    assert bare_code(bytes((0xA1, 0x00, 0x18, 0x05))) is None  # not canonical: stays a DATA frame
    frame = encode_frame(1, 9, Kind.DATA, code_payload(0, 200), VERSION_3)
    assert len(frame) == 7
    assert FrameParser().feed(frame) == [Frame(1, 9, Kind.DATA, code_payload(0, 200), VERSION_3)]


v3_frames = st.one_of(
    st.builds(
        Frame,
        address=st.integers(0, 255),
        seq=st.integers(0, 255),
        kind=st.just(Kind.DATA),
        payload=st.binary(max_size=MAX_PAYLOAD_V2),
        version=st.just(VERSION_3),
        from_device=st.booleans(),
    ),
    st.builds(
        lambda a, s, k, fd: Frame(a, s, k, b"", VERSION_3, fd),
        st.integers(0, 255),
        st.integers(0, 255),
        st.sampled_from([Kind.ACK, Kind.NAK]),
        st.booleans(),
    ),
    st.builds(
        lambda a, s, c: Frame(a, s, Kind.REPLY, code_payload(1, c), VERSION_3, True),
        st.integers(0, 255),
        st.integers(0, 255),
        st.integers(0, 255),
    ),
    st.builds(
        lambda a, s, c, fd: Frame(a, s, Kind.DATA, code_payload(1 if fd else 0, c), VERSION_3, fd),
        st.integers(0, 255),
        st.integers(0, 255),
        st.integers(0, 255),
        st.booleans(),
    ),
)
older_frames = st.builds(
    Frame,
    address=st.integers(0, 255),
    seq=st.integers(0, 255),
    kind=st.just(Kind.DATA),
    payload=st.binary(max_size=64),
    version=st.sampled_from([VERSION, VERSION_2]),
    from_device=st.just(False),
)


@settings(max_examples=300, deadline=None)
@given(v3_frames)
def test_every_v3_frame_round_trips(frame: Frame) -> None:
    assert FrameParser().feed(frame.encode()) == [frame]


@settings(max_examples=200, deadline=None)
@given(st.lists(v3_frames | older_frames, max_size=8), st.binary(max_size=32))
def test_one_parser_reads_all_three_versions_interleaved(batch: list[Frame], garbage: bytes) -> None:
    parser = FrameParser()
    got = parser.feed(garbage + b"".join(f.encode() for f in batch)) + parser.expire()
    it = iter(got)
    assert all(any(frame == candidate for candidate in it) for frame in batch)


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=80), st.integers(1, 7))
def test_arbitrary_bytes_never_crash_the_parser(data: bytes, chunk: int) -> None:
    parser = FrameParser()
    for at in range(0, len(data), chunk):
        for frame in parser.feed(data[at : at + chunk]):
            assert frame.version in (VERSION, VERSION_2, VERSION_3)
        assert parser.buffered <= 1033
    parser.expire()
    assert parser.buffered == 0


def test_a_v2_receiver_never_takes_a_v3_frame() -> None:
    parser = FrameParser(frozenset({VERSION, VERSION_2}))
    v3 = encode_frame(1, 1, Kind.DATA, encode_message({"cmd": "lock"}, VERSION_3), VERSION_3)
    v2 = encode_frame(1, 2, Kind.DATA, encode_message({"cmd": "lock"}, VERSION_2), VERSION_2)
    assert parser.feed(v3 + v2) + parser.expire() == [Frame(1, 2, Kind.DATA, bytes.fromhex("A10005"), VERSION_2)]


def test_the_codes_are_the_v2_tables() -> None:
    assert COMMAND_NAMES[5] == "lock" and EVENT_NAMES[7] == "locked"
    assert all(len(names) < 24 for names in (COMMAND_NAMES, EVENT_NAMES))  # one byte each today


def test_the_protocol_page_prints_exactly_these_vectors() -> None:
    page = (Path(__file__).resolve().parents[2] / "docs" / "protocol.md").read_text()
    section = page.split("### Test vectors (v3)", 1)[1].split("\n## ", 1)[0]
    printed = re.findall(r"\| `(A5 3[0-9A-F](?: [0-9A-F]{2})+)`", section)
    assert printed == [wire for *_, wire in VECTORS]


# --- negotiation and the REPLY, against the simulators over real ptys ----------------------------------------------


def link_of(driver: ReferenceDevice) -> Link:
    assert driver._link is not None
    return driver._link


async def test_a_v3_station_locks_with_two_short_frames(table: SimulatedTable, start_driver: DriverFactory) -> None:
    """The lock-out in v3 is the host's 7-byte CODE `lock` and the station's 7-byte REPLY `locked`, no ACK either way
    (docs/protocol.md section 12). Read from the frames on the line, not a byte count: beside the exchange, the line may
    carry what the protocol allows at that moment, and each is named (`beside_the_lock`)."""
    endpoint = table.stations[1]._endpoint
    assert endpoint is not None
    line = LineLog(endpoint)
    station, events = await start_driver(
        "wager_station_1", "reference-wager-station", table.ports["wager_station_1"], seat=1
    )
    assert isinstance(station, ReferenceDevice)
    await events.next(DeviceOnline)
    assert station.protocol_version == VERSION_4  # v3 frames; v4 adds nothing to a lock-out
    mark = line.mark()
    assert await station.command({"cmd": "lock"})
    assert (await events.next(LockAcknowledged)).locked
    window = line.window(mark)
    lock = [seen for seen in window if seen.from_host and seen.name == "lock"]
    answers = [seen for seen in window if lock and not seen.from_host and seen.frame.seq == lock[0].frame.seq]
    start = len(line.frames) - len(window)
    verdicts = [
        (True, "the lock exchange") if seen in lock or seen in answers else beside_the_lock(seen, line.frames[:at])
        for at, seen in enumerate(window, start)
    ]
    listing = "on the line meanwhile:\n" + "\n".join(
        f"{seen}: {what}" for seen, (_, what) in zip(window, verdicts, strict=True)
    )
    assert lock, listing
    # The lock (7 bytes) and the REPLY (7): no ACK frame either way. A REPLY late past the host's ACK timeout costs a
    # retransmission of the identical lock, answered by the identical REPLY (section 12, REPLY rule 2); the last
    # copy's REPLY may still be crossing when the host has taken the first.
    assert {(seen.frame, seen.size) for seen in lock} == {(lock[0].frame, 7)}, listing
    assert lock[0].frame.kind == Kind.DATA and lock[0].frame.version == VERSION_3, listing
    assert 1 <= len(answers) <= len(lock) <= station.settings.retries + 1, listing
    assert {(seen.frame.kind, seen.name, seen.size) for seen in answers} == {(Kind.REPLY, "locked", 7)}, listing
    assert len({seen.frame for seen in answers}) == 1, listing
    assert all(allowed for allowed, _ in verdicts), listing
    assert table.stations[1].locked
    # An answer that is not bare (the light's `on`) still travels as a DATA frame of its own after an ACK.
    await station.command({"cmd": "light", "on": True})
    assert table.stations[1].light


def beside_the_lock(seen: OnLine, before: list[OnLine]) -> tuple[bool, str]:
    """Whether the protocol allows `seen` on the line during a lock exchange, given what crossed `before` it, and what
    it is (or why it does not belong), for the assertion's listing."""
    frame = seen.frame
    if seen.from_host and frame.kind == Kind.ACK:
        # `identity` (v1) is ACKed before the driver reports the device online, but a pty hands the slave's bytes to
        # the master in a kernel work item of its own: under load the station reads that ACK together with the lock.
        sent = [b for b in before if not b.from_host and b.frame.kind == Kind.DATA and b.frame.seq == frame.seq]
        acked = [b for b in before if b.from_host and b.frame == frame]
        if sent and len(acked) < len(sent):
            return True, f"allowed: the host's ACK of the station's `{sent[-1].name}`, late on the line (section 4)"
        return False, "NOT ALLOWED: an ACK of no frame the station sent"
    if seen.from_host and frame.kind == Kind.DATA and seen.name == "ping":
        return True, "allowed: a heartbeat ping (section 5: the host may ping at any time)"
    if not seen.from_host and frame.kind in (Kind.REPLY, Kind.ACK):
        pings = [b for b in before if b.from_host and b.name == "ping" and b.frame.seq == frame.seq]
        if pings and (frame.kind == Kind.ACK or seen.name == "pong"):
            return True, "allowed: the answer to a heartbeat ping (section 12, REPLY rules 1 and 5)"
        return False, "NOT ALLOWED: answers no frame the host sent"
    if not seen.from_host and frame.kind == Kind.DATA and seen.name == "pong":
        return True, "allowed: a heartbeat's `pong` after its ACK (section 12, REPLY rule 5)"
    return False, "NOT ALLOWED: not the lock, nor anything the protocol allows beside it"


async def test_v2_and_v1_stations_keep_their_versions(table: SimulatedTable, start_driver: DriverFactory) -> None:
    for seat, protocols in ((1, (1, 2)), (2, (1,))):
        await table.stations[seat].stop()
        table.stations[seat].configure_line(protocols)
        await table.stations[seat].start()
    got = {}
    for seat in (1, 2):
        station, events = await start_driver(
            f"wager_station_{seat}", "reference-wager-station", table.stations[seat].port, seat=seat
        )
        await events.next(DeviceOnline)
        assert isinstance(station, ReferenceDevice)
        assert await station.command({"cmd": "lock"})
        assert (await events.next(LockAcknowledged)).locked
        sim_link = table.stations[seat]._link
        assert sim_link is not None
        got[seat] = (station.protocol_version, set(sim_link.data_versions))
    assert got == {1: (2, {1, 2}), 2: (1, {1})}


class _Pipe:
    """One direction of a pty pair the test holds itself, so it can lose a frame on purpose."""

    def __init__(self, endpoint: PtyEndpoint) -> None:
        self.endpoint = endpoint
        self.drop_next_reply = False

    def write(self, data: bytes) -> None:
        if self.drop_next_reply and data[1] == 0x3C:
            self.drop_next_reply = False  # lost on the wire
            return
        self.endpoint.write(data)

    async def drain(self) -> None:
        return None

    def close(self) -> None:
        self.endpoint.close()


async def test_a_lost_reply_is_repeated_for_the_retransmission_and_acted_on_once() -> None:
    """The host's lock gets no REPLY (lost), so it retransmits; the device answers the repeat with the same REPLY
    and does not lock twice; the host delivers `locked` once."""
    endpoint = PtyEndpoint()
    pipe = _Pipe(endpoint)
    acted: list[bytes] = []
    device: Link

    def on_command(payload: bytes) -> None:
        acted.append(payload)
        assert device.answer({"evt": "locked"})

    device = Link(endpoint, pipe, local_address=1, peer_address=0, on_data=on_command, name="device")
    device.follow_peer = True
    device.start()
    host_fd = os.open(endpoint.path, os.O_RDWR | os.O_NOCTTY)
    os.set_blocking(host_fd, False)
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader()
    loop.add_reader(host_fd, lambda: reader.feed_data(os.read(host_fd, 4096)))

    class HostWriter:
        def write(self, data: bytes) -> None:
            os.write(host_fd, data)

        async def drain(self) -> None:
            return None

        def close(self) -> None:
            return None

    answers: list[bytes] = []
    host = Link(
        reader, HostWriter(), local_address=0, peer_address=1, on_data=answers.append, ack_timeout=0.05, name="host"
    )
    host.version = VERSION_3
    host.start()
    pauses = LoopPauses()
    try:
        pipe.drop_next_reply = True
        async with asyncio.timeout(2):
            await host.send({"cmd": "lock"})
        await pauses.stop()
        assert [decode_message(a) for a in answers] == [{"evt": "locked"}]
        assert len(acted) == 1
        # The lock and its retransmission; a stall of this process past the host's ACK timeout after it (the device
        # is held with the host) has the host send the lock once more, the same frame, answered with the same REPLY.
        assert device.data_versions[VERSION_3] >= 2
        if pauses.longest < host.ack_timeout / 2:  # no stall near the timeout (two in a row add up)
            assert device.data_versions[VERSION_3] == 2, pauses.longest
    finally:
        await host.close(close_transport=False)
        await device.close(close_transport=False)
        loop.remove_reader(host_fd)
        with contextlib.suppress(OSError):
            os.close(host_fd)
        endpoint.close()


def test_a_bare_command_is_encoded_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """A lock-out encodes `{"cmd": "lock"}` once per station; its payload is the same bytes every time (canonical
    CBOR), so it is encoded once and kept: the frames of a lock-out are written sooner (performance-history Part 16)."""
    calls: list[object] = []
    real = compact.encode_compact

    def counting(message: Any) -> bytes:
        calls.append(message)
        return real(message)

    monkeypatch.setattr(messages, "encode_compact", counting)
    payloads = {encode_message({"cmd": "unlock"}, VERSION_3) for _ in range(7)}
    assert len(calls) <= 1 and payloads == {bytes.fromhex("A1 00 06")}, (calls, payloads)
    # Anything with more than the command still goes through the encoder every time.
    assert encode_message({"cmd": "light", "on": True}, VERSION_3) == real({"cmd": "light", "on": True})
    assert len(calls) <= 2
