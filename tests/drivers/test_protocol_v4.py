"""Reference protocol v4 (docs/protocol.md section 14): the ANSWER frame (a whole answer that is also the ACK) and the
GROUP `unlock`, the documented test vectors, and the parser's new path under hypothesis: an ANSWER round-trips, a
receiver that reads up to v3 only drops it as a bad header and still finds the frame after it, and only a device sends
one.

The bus driver and the simulators against each other over real ptys are in tests/drivers/test_bus_v4.py.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from drivers.reference.framing import (
    GROUP_ANSWERS,
    GROUP_ANSWERS_V3,
    GROUP_LIGHT,
    GROUP_UNLOCK,
    PROTOCOLS,
    VERSION_3,
    VERSIONS,
    FrameParser,
    Kind,
    code_payload,
    crc16,
    decode_message,
    encode_frame,
    encode_group,
    encode_message,
    group_answers,
    slot_confirmation,
)

IDENTITY = {
    "evt": "identity",
    "model": "ACME-WS1",
    "serial": "SN12345",
    "firmware": "2.1.0",
    "firmware_hash": hashlib.sha256(b"").hexdigest(),
    "protocols": [1, 2, 3, 4],
}
# (what, frame built by the reference code, wire) exactly as docs/protocol.md section 14 prints them.
VECTORS: list[tuple[str, bytes, str]] = [
    (
        "unlock stations 1-7, SEQ 0x22",
        encode_group(0x22, GROUP_UNLOCK, range(1, 8)),
        "A5 35 FF 22 06 01 01 7F 65 8C",
    ),
    (
        "unlock stations 11-17, SEQ 0x23",
        encode_group(0x23, GROUP_UNLOCK, range(11, 18)),
        "A5 35 FF 23 06 0B 01 7F 08 1C",
    ),
    (
        "stations 1-7 confirm SEQ 0x22",
        b"".join(slot_confirmation(a, 0x22) for a in range(1, 8)),
        "01 1E 02 4D 03 7C 04 EB 05 DA 06 89 07 B8",
    ),
    (
        "lights out at stations 1-7, SEQ 0x24",
        encode_group(0x24, GROUP_LIGHT, range(1, 8), False),
        "A5 35 FF 24 07 01 01 7F 00 97 B3",
    ),
    (
        "light stations 2 and 5, SEQ 0x25",
        encode_group(0x25, GROUP_LIGHT, [2, 5], True),
        "A5 35 FF 25 07 02 01 09 01 FB 11",
    ),
    (
        "stations 1-7 confirm SEQ 0x24 (their lamps dark)",
        b"".join(slot_confirmation(a, 0x24) for a in range(1, 8)),
        "01 D8 02 8B 03 BA 04 2D 05 1C 06 4F 07 7E",
    ),
    (
        "the host's identify offering v4, SEQ 0",
        encode_frame(1, 0, Kind.DATA, encode_message({"cmd": "identify", "protocols": [1, 2, 3, 4]})),
        "A5 01 01 00 01 00 28 7B 22 63 6D 64 22 3A 22 69 64 65 6E 74 69 66 79 22 2C 22 70 72 6F 74 6F 63 6F 6C 73 22 3A"
        " 5B 31 2C 32 2C 33 2C 34 5D 7D DA B7",
    ),
    (
        "device 1's identity ANSWER to it",
        encode_frame(1, 0, Kind.REPLY, encode_message(IDENTITY, VERSION_3), VERSION_3, True),
        "A5 3E 01 00 48 A6 01 00 15 84 01 02 03 04 16 68 41 43 4D 45 2D 57 53 31 17 67 53 4E 31 32 33 34 35 18 18 65"
        " 32 2E 31 2E 30 18 19 58 20 E3 B0 C4 42 98 FC 1C 14 9A FB F4 C8 99 6F B9 24 27 AE 41 E4 64 9B 93 4C A4 95 99"
        " 1B 78 52 B8 55 4B EF",
    ),
    (
        "host: light off to device 1, SEQ 0x11",
        encode_frame(1, 0x11, Kind.DATA, encode_message({"cmd": "light", "on": False}, VERSION_3), VERSION_3),
        "A5 30 01 11 05 A2 00 07 0B F4 FF AE",
    ),
    (
        "device 1's light ANSWER to it",
        encode_frame(1, 0x11, Kind.REPLY, encode_message({"evt": "light", "on": False}, VERSION_3), VERSION_3, True),
        "A5 3E 01 11 05 A2 01 11 0B F4 0B AE",
    ),
]


def vector(what: str) -> bytes:
    return next(bytes.fromhex(wire.replace(" ", "")) for name, _frame, wire in VECTORS if name == what)


@pytest.mark.parametrize(("what", "frame", "wire"), VECTORS)
def test_documented_v4_vectors(what: str, frame: bytes, wire: str) -> None:
    assert frame.hex(" ").upper() == wire, what
    if frame[0] == 0xA5:
        assert crc16(frame[1:-2]) == int.from_bytes(frame[-2:], "big")


def test_the_vectors_are_the_ones_the_protocol_page_prints() -> None:
    page = (Path(__file__).resolve().parents[2] / "docs" / "protocol.md").read_text()
    section = page[page.index("## 14.") :]
    printed = re.findall(r"`((?:[0-9A-F]{2} )+[0-9A-F]{2})`", section)
    for what, _frame, wire in VECTORS:
        assert wire in printed, f"{what}: {wire} is not printed in section 14"


def test_the_answer_is_read_as_the_reply_that_acks_the_host_frame() -> None:
    wire = vector("device 1's identity ANSWER to it")
    (frame,) = FrameParser().feed(wire)
    assert (frame.address, frame.seq, frame.kind, frame.version, frame.from_device) == (1, 0, Kind.REPLY, 3, True)
    assert decode_message(frame.payload) == IDENTITY
    # The same identity as v3 sent it: the v1 ACK of the identify (9 bytes) and a DATA frame of the same size.
    v3 = encode_frame(1, 0, Kind.DATA, encode_message(IDENTITY, VERSION_3), VERSION_3, True)
    assert len(v3) == len(wire) and len(encode_frame(1, 0, Kind.ACK, b"")) == 9


def test_a_v3_receiver_drops_an_answer_and_reads_on() -> None:
    """A station or host that reads up to v3 only never takes an ANSWER for anything: VK 0x3E is a bad header there."""
    answer = vector("device 1's light ANSWER to it")
    after = encode_frame(1, 3, Kind.ACK, b"", VERSION_3)
    parser = FrameParser(VERSIONS)
    frames = parser.feed(answer + after) + parser.expire()
    assert [(f.kind, f.seq) for f in frames] == [(Kind.ACK, 3)]
    assert parser.bad_frames >= 1


def test_a_host_answer_is_no_frame() -> None:
    body = bytes((0x36, 1, 0x10, 3)) + encode_message({"evt": "light", "on": True}, VERSION_3)[:3]
    parser = FrameParser()
    assert parser.feed(b"\xa5" + body + crc16(body).to_bytes(2, "big")) + parser.expire() == []
    assert parser.bad_frames >= 1


def test_group_unlock_and_light_are_v4_only() -> None:
    assert group_answers(VERSIONS) == GROUP_ANSWERS_V3 == {5: 7}
    assert group_answers(PROTOCOLS) == GROUP_ANSWERS == {5: 7, 6: 8, 7: 17}
    (frame,) = FrameParser().feed(encode_group(0x22, GROUP_UNLOCK, [11, 12]))
    assert decode_message(frame.payload) == {"cmd": "unlock", "stations": [11, 12]}
    light = encode_group(0x25, GROUP_LIGHT, [2, 5], True)
    (frame,) = FrameParser().feed(light)
    assert decode_message(frame.payload) == {"cmd": "light", "stations": [2, 5], "on": True}
    # A receiver that reads up to v3 looks for the CRC one byte early: a damaged frame, dropped, never acted on.
    v3 = FrameParser(VERSIONS)
    assert v3.feed(light) + v3.expire() == [] and v3.bad_frames >= 1
    # ARG other than 0 or 1, and a light without ARG or another command with one, are refused.
    body = bytearray(light[1:-2])
    body[-1] = 2
    parser = FrameParser()
    assert parser.feed(b"\xa5" + bytes(body) + crc16(bytes(body)).to_bytes(2, "big")) + parser.expire() == []
    with pytest.raises(ValueError, match="light"):
        encode_group(0, GROUP_LIGHT, [1])
    with pytest.raises(ValueError, match="light"):
        encode_group(0, GROUP_UNLOCK, [1], True)


@settings(max_examples=200, deadline=None)
@given(
    stations=st.lists(st.integers(1, 254), min_size=1, max_size=12, unique=True),
    seq=st.integers(0, 255),
    on=st.booleans(),
    noise=st.binary(max_size=30),
)
def test_group_lights_round_trip_through_noise(stations: list[int], seq: int, on: bool, noise: bytes) -> None:
    parser = FrameParser()
    frames = parser.feed(noise + encode_group(seq, GROUP_LIGHT, stations, on)) + parser.expire()
    wanted = {"cmd": "light", "stations": sorted(stations), "on": on}
    assert any(f.kind == Kind.GROUP and f.seq == seq and decode_message(f.payload) == wanted for f in frames)


_EVENTS = st.fixed_dictionaries(
    {"evt": st.sampled_from(["identity", "light", "fault", "wager"])},
    optional={
        "on": st.booleans(),
        "model": st.text(max_size=20),
        "amount": st.integers(min_value=0, max_value=10**6),
        "spot": st.from_regex(r"[a-z][a-z0-9_]{0,10}", fullmatch=True),
    },
)


@settings(max_examples=200, deadline=None)
@given(
    message=_EVENTS,
    address=st.integers(1, 254),
    seq=st.integers(0, 255),
    noise=st.binary(max_size=40),
    split=st.integers(0, 400),
)
def test_answers_round_trip_through_noise_in_any_split(
    message: dict[str, object], address: int, seq: int, noise: bytes, split: int
) -> None:
    """An ANSWER after line noise, fed in two pieces anywhere: a v4 receiver reads it exactly once, as the REPLY it is;
    a v3 receiver never reads it; neither raises nor holds more than a frame."""
    payload = encode_message(message, VERSION_3)
    frame = encode_frame(address, seq, Kind.REPLY, payload, VERSION_3, True)
    bare = payload == code_payload(1, payload[-1])
    assert frame[1] == (0x3C if bare else 0x3E)  # a bare event stays v3's 7-byte REPLY
    stream = noise + frame
    split = min(split, len(stream))
    for versions, expected in ((PROTOCOLS, 1), (VERSIONS, 0)):
        parser = FrameParser(versions)
        got = parser.feed(stream[:split]) + parser.feed(stream[split:]) + parser.expire()
        mine = [f for f in got if f.kind == Kind.REPLY and f.seq == seq and f.address == address]
        if expected:
            assert any(decode_message(f.payload) == message for f in mine)
        else:
            assert bare or not any(f.payload == payload for f in mine)
