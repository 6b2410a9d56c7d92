"""Reference protocol v2: compact frames, the documented test vectors, negotiation at identify, v1 devices unchanged.

docs/protocol.md section 10 is what these hold the code to.
"""

from __future__ import annotations

import contextlib
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from drivers.interfaces import DeviceOnline, LockAcknowledged, StackDispensed, WagerRefused
from drivers.reference.compact import (
    BUTTON_NAMES,
    COMMAND_NAMES,
    EVENT_NAMES,
    KEYS,
    decode_compact,
    encode_compact,
)
from drivers.reference.device import ReferenceDevice
from drivers.reference.framing import (
    MAX_PAYLOAD_V2,
    VERSION,
    Frame,
    FrameParser,
    Kind,
    ProtocolError,
    decode_message,
    encode_frame,
    encode_message,
)
from drivers.reference.shoe import ReferenceDealingShoe
from drivers.sim.table import SimulatedTable
from tests.drivers.conftest import DriverFactory
from tests.drivers.loop_pauses import LoopPauses

# (what, frame) exactly as docs/protocol.md section 10 prints them.
VECTORS: list[tuple[str, int, int, Kind, dict[str, Any] | None, bool, str]] = [
    ("host locks device 1", 1, 0x10, Kind.DATA, {"cmd": "lock"}, False, "A5 02 01 10 01 03 A1 00 05 F7 F9"),
    ("device 1 ACKs it", 1, 0x10, Kind.ACK, None, True, "A5 02 01 10 86 00 D1 66"),
    ("device 1 confirms", 1, 0x03, Kind.DATA, {"evt": "locked"}, True, "A5 02 01 03 81 03 A1 01 07 12 3E"),
    ("host ACKs that", 1, 0x03, Kind.ACK, None, False, "A5 02 01 03 06 00 D0 CD"),
    ("device 1 NAKs SEQ 5", 1, 0x05, Kind.NAK, None, True, "A5 02 01 05 95 00 2F D5"),
    (
        "broadcast lock",
        0xFF,
        0x20,
        Kind.DATA,
        {"cmd": "lock", "stations": [1, 2, 3, 4, 5, 6, 7]},
        False,
        "A5 02 FF 20 01 0C A2 00 05 07 87 01 02 03 04 05 06 07 3B ED",
    ),
    (
        "no more bets",
        1,
        0x05,
        Kind.DATA,
        {"evt": "button", "button": "no_more_bets"},
        True,
        "A5 02 01 05 81 05 A2 01 0B 08 00 AD BC",
    ),
    (
        "a wager",
        1,
        0x04,
        Kind.DATA,
        {"evt": "wager", "spot": "ante", "amount": 500},
        True,
        "A5 02 01 04 81 0D A3 01 09 03 64 61 6E 74 65 04 19 01 F4 F0 A5",
    ),
    (
        "dispense 2",
        1,
        0x17,
        Kind.DATA,
        {"cmd": "dispense", "cards": 2},
        False,
        "A5 02 01 17 01 05 A2 00 03 05 02 3D 5C",
    ),
    (
        "the stack",
        1,
        0x03,
        Kind.DATA,
        {"evt": "stack", "cards": ["As", "Kd"]},
        True,
        "A5 02 01 03 81 0B A2 01 03 05 82 62 41 73 62 4B 64 1B D9",
    ),
    (
        "the shoe says its jam is cleared",
        1,
        0x06,
        Kind.DATA,
        {"evt": "fault_cleared", "code": "jam"},
        True,
        "A5 02 01 06 81 08 A2 01 12 0C 63 6A 61 6D 42 B0",
    ),
]


@pytest.mark.parametrize(("what", "address", "seq", "kind", "message", "from_device", "wire"), VECTORS)
def test_documented_vectors(
    what: str, address: int, seq: int, kind: Kind, message: dict[str, Any] | None, from_device: bool, wire: str
) -> None:
    payload = encode_message(message, 2) if message is not None else b""
    frame = encode_frame(address, seq, kind, payload, 2, from_device)
    assert frame.hex(" ").upper() == wire, what
    parsed = FrameParser().feed(bytes.fromhex(wire))
    assert parsed == [Frame(address, seq, kind, payload, 2, from_device)]
    if message is not None:
        assert decode_message(parsed[0].payload) == message


def test_v2_frames_are_smaller_on_the_lock_out_path() -> None:
    for message in ({"cmd": "lock"}, {"evt": "locked"}, {"evt": "button", "button": "no_more_bets"}):
        v1 = encode_frame(1, 0, Kind.DATA, encode_message(message))
        v2 = encode_frame(1, 0, Kind.DATA, encode_message(message, 2), 2)
        assert len(v2) * 2 <= len(v1), message


def test_codebook_is_stable() -> None:
    # Appending is allowed, renumbering never: a device built today must read tomorrow's host.
    assert KEYS[:8] == ("cmd", "evt", "src", "spot", "amount", "cards", "card", "stations")
    assert COMMAND_NAMES.index("lock") == 5 and EVENT_NAMES.index("locked") == 7
    assert BUTTON_NAMES[0] == "no_more_bets"


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**40), 2**40) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=8,
)
NAMED = ("cmd", "evt", "button")
names = st.sampled_from(COMMAND_NAMES + EVENT_NAMES + BUTTON_NAMES) | st.text(max_size=12)
messages = st.builds(
    lambda plain, named: plain | named,
    st.dictionaries(
        st.sampled_from([k for k in KEYS if k not in NAMED])
        | st.text(min_size=1, max_size=10).filter(lambda k: k not in NAMED),
        json_values,
        max_size=5,
    ),
    st.dictionaries(st.sampled_from(NAMED), names, max_size=2),
)


@settings(max_examples=200, deadline=None)
@given(messages)
def test_any_v1_message_survives_v2(message: dict[str, Any]) -> None:
    """The v2 vocabulary is v1's: every JSON object comes back as it went, coded or not."""
    assert decode_compact(encode_compact(message)) == message


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=64))
def test_arbitrary_payload_never_crashes_the_decoder(payload: bytes) -> None:
    with contextlib.suppress(ProtocolError):
        decode_message(payload)


@pytest.mark.parametrize(
    ("payload", "problem"),
    [
        (bytes([0xA1, 0x18, 0x63, 0x01]), "unknown key code 99"),
        (bytes([0xA1, 0x00, 0x18, 0x63]), "unknown cmd code 99"),
        (bytes([0xA1, 0x01, 0x41, 0x00]), "bytes has no meaning"),
        (bytes([0xA1, 0xF5, 0x01]), "neither a key code nor text"),
    ],
)
def test_bad_v2_payloads_are_named(payload: bytes, problem: str) -> None:
    with pytest.raises(ProtocolError, match=problem):
        decode_message(payload)


v2_frames = st.builds(
    Frame,
    address=st.integers(0, 255),
    seq=st.integers(0, 255),
    kind=st.just(Kind.DATA),
    payload=st.binary(max_size=MAX_PAYLOAD_V2),
    version=st.just(2),
    from_device=st.booleans(),
)
v1_frames = st.builds(
    Frame, address=st.integers(0, 255), seq=st.integers(0, 255), kind=st.just(Kind.DATA), payload=st.binary(max_size=64)
)


@settings(max_examples=200, deadline=None)
@given(st.lists(v1_frames | v2_frames, max_size=8), st.binary(max_size=32))
def test_one_parser_reads_both_versions_interleaved(batch: list[Frame], garbage: bytes) -> None:
    """Negotiation changes the version frame by frame, so a line may carry both: each frame is found."""
    parser = FrameParser()
    got = parser.feed(garbage + b"".join(f.encode() for f in batch)) + parser.expire()
    it = iter(got)
    assert all(any(frame == candidate for candidate in it) for frame in batch)


def test_a_v1_receiver_never_takes_a_v2_frame() -> None:
    parser = FrameParser(frozenset({VERSION}))
    v2 = encode_frame(1, 1, Kind.DATA, encode_message({"cmd": "lock"}, 2), 2)
    v1 = encode_frame(1, 2, Kind.DATA, encode_message({"cmd": "lock"}))
    assert parser.feed(v2 + v1) + parser.expire() == [Frame(1, 2, Kind.DATA, b'{"cmd":"lock"}')]


def test_a_name_that_is_not_text_is_not_carried_by_v2() -> None:
    """It would read back as a coded name; the link sends such a (malformed) message in v1 instead."""
    with pytest.raises(ValueError, match="cmd must be text"):
        encode_message({"cmd": 5}, 2)


def test_v2_refuses_what_it_cannot_carry() -> None:
    with pytest.raises(ValueError, match="exceeds 255"):
        encode_frame(1, 0, Kind.DATA, b"x" * 256, 2)
    with pytest.raises(ValueError, match="from_device is v2"):
        encode_frame(1, 0, Kind.ACK, b"", 1, True)


# --- negotiation, against the simulators over real ptys ----------------------------------------------------------


ACK_TIMEOUT = 0.1  # the drivers' default (drivers/reference/device.py), which these tests keep


def link_of(driver: ReferenceDevice) -> Any:
    assert driver._link is not None
    return driver._link


async def test_a_v2_device_is_spoken_to_in_v2_after_identify(
    table: SimulatedTable, start_driver: DriverFactory
) -> None:
    # A device built before v3 (section 12) offers [1, 2].
    await table.stations[1].stop()
    table.stations[1].configure_line((1, 2))
    await table.stations[1].start()
    pauses = LoopPauses()
    station, events = await start_driver("wager_station_1", "reference-wager-station", table.stations[1].port, seat=1)
    assert isinstance(station, ReferenceDevice)
    online = await events.next(DeviceOnline)
    # The identity the controller records is the four v1 fields; the offer is the link's business.
    assert set(online.identity) == {"model", "serial", "firmware", "firmware_hash"}
    assert station.protocol_version == 2
    await station.command({"cmd": "lock"})
    assert (await events.next(LockAcknowledged)).locked
    sim_link = table.stations[1]._link
    assert sim_link is not None
    # identify went in v1 (a device of either version reads it); the lock in v2, and the answer came back in v2.
    # A stall of this process past the ACK timeout (the simulated station is held with the host) has the host send
    # either again, the same frame in the same version, which the station ACKs and does not act on twice.
    await pauses.stop()
    assert set(sim_link.data_versions) == {1, 2}
    assert (table.stations[1]._counts["identify"], table.stations[1]._counts["lock"]) == (1, 1)
    if pauses.longest < ACK_TIMEOUT / 2:  # no stall near the timeout (two in a row add up)
        assert sim_link.data_versions == {1: 1, 2: 1}, pauses.longest
    assert link_of(station).data_versions[2] >= 1
    await table.stations[1].place("ante", 500)
    refused = await events.next(WagerRefused)
    assert (refused.seat, refused.spot, refused.amount_cents, refused.reason) == (1, "ante", 500, "locked")


async def test_a_v1_device_keeps_v1(table: SimulatedTable, start_driver: DriverFactory) -> None:
    """A device built before v2 does not offer it: every frame both ways stays v1, and it works as before."""
    await table.shoe.stop()
    table.shoe.configure_line((1,))
    await table.shoe.start()
    table.shuffler.script_decks([["As", "Kd", *[c for c in _deck() if c not in ("As", "Kd")]]])
    shuffler, _ = await start_driver("shuffler", "reference-shuffler", table.ports["shuffler"])
    shoe, events = await start_driver("shoe", "reference-shoe", table.shoe.port)
    await events.next(DeviceOnline)
    assert isinstance(shoe, ReferenceDealingShoe) and shoe.protocol_version == 1
    await shuffler.shuffle()
    await shoe.dispense_stack(2)
    stack = await events.next(StackDispensed)
    assert stack.cards == ("As", "Kd")
    sim_link = table.shoe._link
    assert sim_link is not None
    assert set(sim_link.data_versions) == {1}
    assert set(link_of(shoe).data_versions) == {1}


async def test_the_host_may_keep_a_v2_device_on_v1(table: SimulatedTable, start_driver: DriverFactory) -> None:
    panel, events = await start_driver(
        "dealer_panel", "reference-dealer-panel", table.ports["dealer_panel"], protocol=1
    )
    await events.next(DeviceOnline)
    assert isinstance(panel, ReferenceDevice) and panel.protocol_version == 1
    await table.panel.press("no_more_bets")
    sim_link = table.panel._link
    assert sim_link is not None
    assert set(sim_link.data_versions) == {1}


def _deck() -> list[str]:
    return [rank + suit for suit in "cdhs" for rank in "23456789TJQKA"]


def test_the_protocol_page_prints_exactly_these_vectors() -> None:
    """A manufacturer implements from docs/protocol.md alone: its v2 test vectors are the ones proven here."""
    page = (Path(__file__).resolve().parents[2] / "docs" / "protocol.md").read_text()
    section = page.split("### Test vectors", 1)[1].split("\n## ", 1)[0]
    printed = re.findall(r"\| `(A5 02(?: [0-9A-F]{2})+)`", section)
    assert printed == [wire for *_, wire in VECTORS]
