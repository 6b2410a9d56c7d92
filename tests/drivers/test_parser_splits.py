"""The host's frame parser reads the same frames however the line's bytes are split into reads.

A stall of the host (a loaded machine, a SIGSTOP) changes where its reads cut the stream: the bytes a station sent
meanwhile wait in the kernel and come in one read, or a frame arrives in two reads, cut anywhere. Every version's
frames (v1, v2, v3, v4's ANSWER, the host's GROUP frames), slot pairs in an open window and line noise, mixed: what the
parser returns, counts as noise and reports as damaged must not depend on the cuts. test_protocol.py checks v1 alone,
the other modules one piece or one cut at a time.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from drivers.reference.framing import (
    MAX_PAYLOAD_V2,
    SOF,
    VERSION,
    VERSION_2,
    VERSION_3,
    Frame,
    FrameParser,
    Kind,
    code_payload,
    encode_frame,
    encode_group,
    encode_message,
    slot_confirmation,
)
from drivers.reference.group import GROUP_LOCK, GROUP_UNLOCK

# The window's stations: 0xA5 left out, a station at that address confirms with the SOF byte and has a test of its own
# (test_protocol_group.py), where a frame whose VK equals its check value is read as its pair.
STATIONS = st.sets(st.integers(1, 254).filter(lambda a: a != SOF), min_size=1, max_size=8)


def _frame(version: int, from_device: bool, kind: Kind, payload: bytes) -> st.SearchStrategy[bytes]:
    return st.builds(
        lambda a, s: encode_frame(a, s, kind, payload, version, from_device), st.integers(0, 254), st.integers(0, 255)
    )


frames_on_the_line = st.one_of(
    st.builds(
        lambda a, s, p: encode_frame(a, s, Kind.DATA, p),
        st.integers(0, 254),
        st.integers(0, 255),
        st.binary(max_size=40),
    ),
    _frame(VERSION, False, Kind.ACK, b""),
    st.builds(
        lambda a, s, p, fd: encode_frame(a, s, Kind.DATA, p, VERSION_2, fd),
        st.integers(0, 254),
        st.integers(0, 255),
        st.binary(max_size=MAX_PAYLOAD_V2 // 8),
        st.booleans(),
    ),
    st.builds(
        lambda a, s, p, fd: encode_frame(a, s, Kind.DATA, p, VERSION_3, fd),
        st.integers(0, 254),
        st.integers(0, 255),
        st.binary(max_size=30),
        st.booleans(),
    ),
    st.builds(
        lambda a, s, k: encode_frame(a, s, k, b"", VERSION_3, True),
        st.integers(0, 254),
        st.integers(0, 255),
        st.sampled_from([Kind.ACK, Kind.NAK]),
    ),
    # A v3 REPLY (a bare event's code) and a v4 ANSWER (an event with a map).
    st.builds(
        lambda a, s, c: encode_frame(a, s, Kind.REPLY, code_payload(1, c), VERSION_3, True),
        st.integers(0, 254),
        st.integers(0, 255),
        st.integers(0, 255),
    ),
    st.builds(
        lambda a, s, on: encode_frame(
            a, s, Kind.REPLY, encode_message({"evt": "light", "on": on}, VERSION_3), VERSION_3, True
        ),
        st.integers(0, 254),
        st.integers(0, 255),
        st.booleans(),
    ),
    st.builds(
        lambda s, code, named: encode_group(s, code, named),
        st.integers(0, 255),
        st.sampled_from([GROUP_LOCK, GROUP_UNLOCK]),
        st.sets(st.integers(1, 254), min_size=1, max_size=10),
    ),
)


def _read(stream: bytes, cuts: list[int], window: tuple[int, set[int]] | None) -> tuple[object, ...]:
    """Everything the parser says of `stream` read in the pieces `cuts` make, the line then going idle."""
    parser = FrameParser()
    if window is not None:
        parser.open_slots(window[0], window[1], 7)
    got: list[Frame] = []
    for start, end in zip([0, *cuts], [*cuts, len(stream)], strict=True):
        got += parser.feed(stream[start:end])
    got += parser.expire()
    return got, parser.discarded_bytes, parser.bad_frames, parser.take_corrupt(), parser.buffered


@st.composite
def lines(draw: st.DrawFn) -> tuple[bytes, tuple[int, set[int]] | None]:
    """A stretch of line: frames, slot pairs of a window (when one is open) and noise, in any order."""
    window = draw(st.none() | st.tuples(st.integers(0, 255), STATIONS))
    pieces = [frames_on_the_line, st.binary(min_size=1, max_size=12)]
    if window is not None:
        pairs = st.sampled_from(sorted(window[1])).map(lambda a: slot_confirmation(a, window[0]))
        pieces.append(pairs)
    return b"".join(draw(st.lists(st.one_of(pieces), max_size=8))), window


@settings(max_examples=300, deadline=None)
@given(lines(), st.lists(st.integers(0, 10_000), max_size=12))
def test_any_cuts_read_as_one_read(line: tuple[bytes, tuple[int, set[int]] | None], cuts: list[int]) -> None:
    stream, window = line
    whole = _read(stream, [], window)
    assert _read(stream, sorted({c % (len(stream) + 1) for c in cuts}), window) == whole
    assert _read(stream, list(range(1, len(stream))), window) == whole  # a byte a read


@settings(max_examples=100, deadline=None)
@given(st.lists(frames_on_the_line, min_size=1, max_size=4), st.integers(0, 255), STATIONS, st.data())
def test_a_cut_at_every_offset_loses_no_frame_and_no_pair(
    frames: list[bytes], seq: int, stations: set[int], data: st.DataObject
) -> None:
    """Frames and pairs back to back, no noise: every one is read once, in order, with the stream cut in two at each
    offset."""
    confirmed = data.draw(st.lists(st.sampled_from(sorted(stations)), unique=True))
    pieces = frames + [slot_confirmation(a, seq) for a in confirmed]
    order = data.draw(st.permutations(range(len(pieces))))
    stream = b"".join(pieces[i] for i in order)
    whole = _read(stream, [], (seq, stations))
    got = whole[0]
    assert isinstance(got, list)
    expected = [
        FrameParser().feed(pieces[i])
        if i < len(frames)
        else [Frame(confirmed[i - len(frames)], seq, Kind.SLOT, code_payload(1, 7), VERSION_3, True)]
        for i in order
    ]
    assert got == [frame for one in expected for frame in one]
    assert whole[1:3] == (0, 0)
    for cut in range(len(stream) + 1):
        assert _read(stream, [cut], (seq, stations)) == whole, cut
