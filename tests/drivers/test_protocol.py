"""Framing and parser properties of reference protocol v1."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from drivers.reference.framing import (
    MAX_FRAME,
    MAX_PAYLOAD,
    Frame,
    FrameParser,
    Kind,
    ProtocolError,
    crc16,
    decode_message,
    encode_frame,
    encode_message,
)

data_frames = st.builds(
    Frame,
    address=st.integers(0, 255),
    seq=st.integers(0, 255),
    kind=st.just(Kind.DATA),
    payload=st.binary(max_size=MAX_PAYLOAD),
)
control_frames = st.builds(
    Frame, address=st.integers(0, 255), seq=st.integers(0, 255), kind=st.sampled_from([Kind.ACK, Kind.NAK])
)
frames = st.one_of(data_frames, control_frames)


def parse_all(parser: FrameParser, chunks: list[bytes]) -> list[Frame]:
    out: list[Frame] = []
    for chunk in chunks:
        out += parser.feed(chunk)
    out += parser.expire()  # the line goes idle at the end
    return out


def split(data: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({c % (len(data) + 1) for c in cuts})
    return [data[a:b] for a, b in zip([0, *points], [*points, len(data)], strict=True)]


def is_subsequence(wanted: list[Frame], got: list[Frame]) -> bool:
    it = iter(got)
    return all(any(frame == candidate for candidate in it) for frame in wanted)


def bitwise_crc(data: bytes) -> int:
    """CRC-16/CCITT-FALSE straight from its definition, to check the stdlib shortcut."""
    crc = 0xFFFF
    for byte in data:
        crc ^= byte << 8
        for _ in range(8):
            crc = ((crc << 1) ^ 0x1021) if crc & 0x8000 else crc << 1
            crc &= 0xFFFF
    return crc


def test_crc_check_value() -> None:
    assert crc16(b"123456789") == 0x29B1


@given(st.binary(max_size=2048))
def test_crc_matches_definition(data: bytes) -> None:
    assert crc16(data) == bitwise_crc(data)


def test_documented_example_frame() -> None:
    # The example in docs/protocol.md: host asks device 1 to identify, SEQ 0.
    frame = encode_frame(1, 0, Kind.DATA, b'{"cmd":"identify"}')
    assert frame.hex(" ").upper() == (
        "A5 01 01 00 01 00 12 7B 22 63 6D 64 22 3A 22 69 64 65 6E 74 69 66 79 22 7D 8A 83"
    )
    assert encode_frame(0, 0, Kind.ACK).hex(" ").upper() == "A5 01 00 00 06 00 00 F9 10"


@pytest.mark.parametrize(
    ("address", "seq", "kind", "payload", "head", "crc"),
    [
        (0, 0x2A, Kind.DATA, b'{"evt":"pong"}', "A5 01 00 2A 01 00 0E", "49 1C"),
        (1, 0x2A, Kind.ACK, b"", "A5 01 01 2A 06 00 00", "0C A4"),
        (0, 5, Kind.NAK, b"", "A5 01 00 05 15 00 00", "5F 66"),
        (1, 0x17, Kind.DATA, b'{"cmd":"dispense","cards":2}', "A5 01 01 17 01 00 1C", "DC 4F"),
        (0, 0x17, Kind.ACK, b"", "A5 01 00 17 06 00 00", "B3 9A"),
        (0, 3, Kind.DATA, b'{"evt":"stack","cards":["As","Kd"]}', "A5 01 00 03 01 00 23", "B9 61"),
        (1, 3, Kind.ACK, b"", "A5 01 01 03 06 00 00", "C8 9D"),
    ],
)
def test_other_documented_frames(address: int, seq: int, kind: Kind, payload: bytes, head: str, crc: str) -> None:
    frame = encode_frame(address, seq, kind, payload)
    assert frame[:7].hex(" ").upper() == head
    assert frame[7:-2] == payload
    assert frame[-2:].hex(" ").upper() == crc


def test_encode_rejects_out_of_range() -> None:
    with pytest.raises(ValueError, match="payload"):
        encode_frame(1, 0, Kind.DATA, b"x" * (MAX_PAYLOAD + 1))
    with pytest.raises(ValueError, match="seq"):
        encode_frame(1, 256, Kind.DATA)
    with pytest.raises(ValueError, match="no payload"):
        encode_frame(1, 0, Kind.ACK, b"x")


def test_messages_are_compact_json_objects() -> None:
    assert encode_message({"cmd": "dispense", "cards": 2}) == b'{"cmd":"dispense","cards":2}'
    assert decode_message(b'{"evt":"pong"}') == {"evt": "pong"}
    for bad in (b"\xff\xfe", b"[1,2]", b"{", b""):
        with pytest.raises(ProtocolError):
            decode_message(bad)


def test_bad_crc_with_readable_header_is_reported_for_nak() -> None:
    frame = bytearray(encode_frame(1, 42, Kind.DATA, b'{"cmd":"ping"}'))
    frame[-1] ^= 0xFF
    parser = FrameParser()
    assert parser.feed(bytes(frame)) == []
    assert [(c.address, c.seq) for c in parser.take_corrupt()] == [(1, 42)]
    assert parser.bad_frames >= 1


@given(frames)
def test_round_trip(frame: Frame) -> None:
    parser = FrameParser()
    assert parser.feed(frame.encode()) == [frame]
    assert (parser.discarded_bytes, parser.bad_frames, parser.buffered) == (0, 0, 0)


@settings(deadline=None)
@given(st.lists(frames, max_size=8), st.lists(st.integers(0, 10_000), max_size=20))
def test_split_anywhere_gives_same_frames(batch: list[Frame], cuts: list[int]) -> None:
    stream = b"".join(f.encode() for f in batch)
    assert parse_all(FrameParser(), split(stream, cuts)) == batch
    assert parse_all(FrameParser(), [stream[i : i + 1] for i in range(len(stream))]) == batch


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.tuples(st.binary(max_size=64), frames), max_size=6),
    st.binary(max_size=64),
    st.lists(st.integers(0, 10_000), max_size=20),
)
def test_garbage_never_raises_and_frames_are_recovered(
    pairs: list[tuple[bytes, Frame]], tail: bytes, cuts: list[int]
) -> None:
    stream = b"".join(garbage + frame.encode() for garbage, frame in pairs) + tail
    parser = FrameParser()
    got = parse_all(parser, split(stream, cuts))
    assert is_subsequence([frame for _, frame in pairs], got)
    assert parser.buffered == 0


@settings(deadline=None)
@given(st.binary(min_size=1, max_size=4096))
def test_memory_is_bounded(garbage: bytes) -> None:
    parser = FrameParser()
    for start in range(0, len(garbage), 97):
        parser.feed(garbage[start : start + 97])
        assert parser.buffered <= MAX_FRAME


def test_false_sof_announcing_long_payload_is_expired() -> None:
    real = encode_frame(0, 9, Kind.DATA, b'{"evt":"pong"}')
    parser = FrameParser()
    # A fake header claiming 1023 payload bytes would otherwise hold back the real frame.
    assert parser.feed(bytes([0xA5, 0x01, 0x00, 0x07, 0x01, 0x03, 0xFF]) + real) == []
    assert parser.expire() == [Frame(0, 9, Kind.DATA, b'{"evt":"pong"}')]
