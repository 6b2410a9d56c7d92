"""The Alpha Sign Communications Protocol driver against a simulated sign over a real pty.

The simulator parses packets with its own code (drivers/sim/alpha_sign.py), so framing errors in either side
show up. The pty refuses parity settings, so these tests run the line 8N1 (a real sign's 7E1 is the default);
delays are measured on a ManualClock shared by the driver and the sign, never on the wall clock.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator
from typing import Any, Protocol, TypeVar

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from drivers.interfaces import (
    DeviceEvent,
    DeviceFault,
    DeviceFaultCleared,
    DeviceOffline,
    DeviceOnline,
    MetersShown,
    ProgressiveSign,
)
from drivers.registry import DriverConfigError, available_drivers, create_driver
from drivers.sign_pacing import WIN_DEADLINE, ManualClock
from drivers.sim.alpha_sign import AlphaSignSim
from drivers.vendor.alpha_sign.driver import AlphaSign
from drivers.vendor.alpha_sign.packets import PacketParser, encode_packet, format_amount, parse_amount, parse_body

TIMEOUT = 5.0  # failure bound only
LEVELS = {"mega": 1_250_000, "major": 180_000, "minor": 41_000}
FAST = {
    "serial_format": "8N1",
    "layout_pause": 0,
    "heartbeat_interval": 0,
    "max_updates_per_second": 20,
    "reply_timeout": 0.3,
}


# --- framing, by hand from the protocol's description -------------------------------------------------------


def test_packet_bytes() -> None:
    # Write STRING file B with "$1.00" to every sign (type Z, address 00). Checksum: STX 02 + "G" 47 + "B" 42 +
    # "$1.00" (24 31 2E 30 30) + ETX 03 = 0x0171, sent as the four characters "0171".
    assert encode_packet("Z", "00", b"G", b"B$1.00") == (b"\x00\x00\x00\x00\x00\x01Z00\x02GB$1.00\x030171\x04")


def test_parse_body_checks_the_checksum_and_the_shape() -> None:
    good = encode_packet("0", "00", b"G", b"B$1.00")[6:-1]  # between SOH and EOT
    packet = parse_body(good)
    assert packet is not None and (
        packet.type_code,
        packet.address,
        packet.command,
        packet.data,
        packet.checksum_ok,
    ) == ("0", "00", b"G", b"B$1.00", True)
    bad = parse_body(good.replace(b"0171", b"0172"))
    assert bad is not None and bad.checksum_ok is False
    no_checksum = parse_body(b"000\x02GB$1.00")
    assert no_checksum is not None and no_checksum.checksum_ok is None
    for broken in (b"", b"000", b"000GB", b"000\x02", b"000\x02GB\x0301", b"000\x02G\x02B\x030000"):
        assert parse_body(broken) is None, broken


def test_amounts() -> None:
    assert [format_amount(c) for c in (0, 5, 100, 123_456_789)] == [b"$0.00", b"$0.05", b"$1.00", b"$1,234,567.89"]
    assert [parse_amount(t) for t in (b"$0.05", b"$1,234,567.89", b"$1234.00", b"1.00", b"$1.0")] == [
        5,
        123_456_789,
        None,
        None,
        None,
    ]


replies = st.builds(
    lambda label, cents: encode_packet("0", "00", b"G", label + format_amount(cents)),
    st.sampled_from([b"B", b"C", b"Z"]),
    st.integers(0, 10**12),
)
noise = st.binary(max_size=40).map(lambda b: b.replace(b"\x01", b""))  # noise without SOH frames nothing


@settings(max_examples=200, deadline=None, derandomize=True)
@given(st.lists(st.tuples(noise, replies), max_size=6), noise, st.integers(1, 7))
def test_parser_finds_every_packet_between_noise_in_any_chunks(
    pairs: list[tuple[bytes, bytes]], tail: bytes, chunk: int
) -> None:
    stream = b"".join(n + p for n, p in pairs) + tail
    parser = PacketParser()
    found = []
    for i in range(0, len(stream), chunk):
        found += parser.feed(stream[i : i + chunk])
    assert [encode_packet(p.type_code, p.address, p.command, p.data) for p in found] == [p for _, p in pairs]
    assert all(p.checksum_ok for p in found)


@settings(max_examples=300, deadline=None, derandomize=True)
@given(st.binary(max_size=300))
def test_parser_survives_any_bytes_and_recovers(junk: bytes) -> None:
    parser = PacketParser()
    parser.feed(junk)
    parser.expire()  # the line went quiet: a half packet is dropped
    packet = encode_packet("0", "00", b"G", b"Z0001")
    assert [p.data for p in parser.feed(packet)] == [b"Z0001"]


def test_partial_packet_then_soh_or_silence() -> None:
    parser = PacketParser()
    whole = encode_packet("0", "00", b"G", b"B$2.00")
    assert parser.feed(whole[:12]) == [] and parser.pending
    assert [p.data for p in parser.feed(whole)] == [b"B$2.00"]  # the new SOH drops the cut packet
    assert parser.bad_packets == 1
    parser.feed(whole[:9])
    parser.expire()
    assert not parser.pending and parser.bad_packets == 2


# --- through the pty ------------------------------------------------------------------------------------------


E = TypeVar("E", bound=DeviceEvent)


class Events:
    def __init__(self) -> None:
        self.seen: list[DeviceEvent] = []
        self._changed = asyncio.Event()

    def __call__(self, event: DeviceEvent) -> None:
        self.seen.append(event)
        self._changed.set()

    async def next(self, kind: type[E], after: int = 0) -> E:
        """The first `kind` event at index >= after (waits for it)."""
        async with asyncio.timeout(TIMEOUT):
            while True:
                for event in self.seen[after:]:
                    if isinstance(event, kind):
                        return event
                self._changed.clear()
                await self._changed.wait()

    def mark(self) -> int:
        """Where the events seen so far end: `next(kind, after=mark)` waits for a later one."""
        return len(self.seen)

    def count(self, kind: type[DeviceEvent]) -> int:
        return sum(isinstance(e, kind) for e in self.seen)


@pytest.fixture
async def sign() -> AsyncIterator[AlphaSignSim]:
    sim = AlphaSignSim("alpha_sign")
    await sim.start()
    yield sim
    await sim.stop()


class StartAlpha(Protocol):
    """The start fixture: an AlphaSign driver started against the simulated sign, and its Events."""

    async def __call__(
        self, sim: AlphaSignSim, clock: ManualClock | None = None, **settings: Any
    ) -> tuple[AlphaSign, Events]: ...


@pytest.fixture
async def start() -> AsyncIterator[StartAlpha]:
    started: list[AlphaSign] = []

    async def start_alpha(
        sim: AlphaSignSim, clock: ManualClock | None = None, **settings: Any
    ) -> tuple[AlphaSign, Events]:
        driver = create_driver("alpha_sign", {"driver": "alpha-sign", "port": sim.port, **FAST, **settings})
        assert isinstance(driver, AlphaSign)
        if clock is not None:
            driver.clock = clock
        events = Events()
        started.append(driver)
        await driver.start(events)
        return driver, events

    yield start_alpha
    for driver in started:
        await driver.stop()


async def test_every_level_shown_and_read_back(sign: AlphaSignSim, start: StartAlpha) -> None:
    driver, events = await start(sign, captions={"mega": "MEGA JACKPOT"})
    assert isinstance(driver, ProgressiveSign)
    online = await events.next(DeviceOnline)
    assert online.identity["model"] == "Alpha Sign Communications Protocol sign"
    await driver.show_levels(LEVELS)
    shown = await events.next(MetersShown)
    assert shown == MetersShown("alpha_sign", LEVELS)
    # One message per level, in the order asked for, each its caption and the amount from its STRING file.
    assert sign.messages == ("MEGA JACKPOT $12,500.00", "MAJOR $1,800.00", "MINOR $410.00")
    assert sign.rejected == []
    # The layout is written once; the next update rewrites only the STRING file that changed.
    before, mark = list(sign.accepted), events.mark()
    await driver.show_levels({**LEVELS, "minor": 41_003})
    await events.next(MetersShown, after=mark)
    assert [a for a in sign.accepted[len(before) :] if not a.startswith("H:")] == ["G:D"]
    # mypy keeps sign.messages narrowed by the assert above across the update since (python/mypy#17537)
    assert sign.messages[2] == "MINOR $410.03"  # type: ignore[comparison-overlap]


async def test_a_display_mismatch_is_cleared_once_the_sign_reads_back_what_was_asked(
    sign: AlphaSignSim, start: StartAlpha
) -> None:
    """The protocol has no fault report of its own: the read-back is the sign's status. A level file that reads back
    wrong is rewritten at the next slot; once every level reads back as asked, the sign shows the meters again and the
    driver says the fault is cleared, which lifts the progressive lock-out (controller/engine/sign.py)."""
    driver, events = await start(sign)
    await events.next(DeviceOnline)
    await driver.show_levels(LEVELS)
    await events.next(MetersShown)
    sign.strings["C"] = b"$0.00"  # the major meter's file lost its text (the sign's own fault)
    mark = events.mark()
    await driver.show_levels({**LEVELS, "minor": 41_003})
    fault = await events.next(DeviceFault, after=mark)
    assert fault.code == "display_mismatch" and "'major': (0, 180000)" in fault.detail
    cleared = await events.next(DeviceFaultCleared, after=mark)
    assert (cleared.code, cleared.device_id) == ("display_mismatch", "alpha_sign")
    after_fault = events.seen[events.seen.index(fault) :]
    shown = [e for e in after_fault[: after_fault.index(cleared)] if isinstance(e, MetersShown)]
    assert shown[-1] == MetersShown("alpha_sign", {**LEVELS, "minor": 41_003}), "cleared before the read-back agreed"
    assert sign.messages[1] == "MAJOR $1,800.00"
    assert events.count(DeviceFaultCleared) == 1


async def test_rate_limit_and_win_within_30_s_on_the_clock(sign: AlphaSignSim, start: StartAlpha) -> None:
    clock = ManualClock(1000.0)
    sign.clock = clock
    driver, events = await start(sign, clock, max_updates_per_second=0.1, win_seconds=20)  # a slot every 10 s
    await events.next(DeviceOnline)
    for step in range(20):  # twenty updates asked for at once: one goes, the rest merge into the latest
        await driver.show_levels({**LEVELS, "minor": 41_000 + step})
    first = await events.next(MetersShown)
    assert first.levels["minor"] == 41_019 and driver.pacer.coalesced == 19
    after_first = events.mark()

    await driver.show_levels({**LEVELS, "minor": 42_000})
    async with asyncio.timeout(TIMEOUT):
        await clock.until_sleeping()
    writes = len(sign.accepted)
    clock.advance(9.9)  # not yet a slot
    await asyncio.sleep(0)
    assert len(sign.accepted) == writes and events.count(MetersShown) == 1

    # A win asked for now goes at once, ahead of the waiting meters, and is read back from the sign.
    asked = clock.now()
    async with asyncio.timeout(TIMEOUT):
        await driver.show_win("mega", 1_250_000, 4)
    shown_at = next(s.at for s in sign.history if s.messages == ("MEGA WIN $12,500.00 SEAT 4",))
    assert shown_at == asked and shown_at - asked <= WIN_DEADLINE
    assert events.count(MetersShown) == 1  # the meters keep their slot, 0.1 s of clock away

    # The meters go in their slot (under the win, which hides everything while it is up); twenty seconds after
    # the win it is cleared and the meters show again.
    async with asyncio.timeout(TIMEOUT):
        await clock.until_sleeping()
    clock.advance(0.1)
    assert (await events.next(MetersShown, after=after_first)).levels["minor"] == 42_000
    assert sign.messages == ("MEGA WIN $12,500.00 SEAT 4",)
    async with asyncio.timeout(TIMEOUT):
        await clock.until_sleeping()
    clock.advance(19.9)
    async with asyncio.timeout(TIMEOUT):
        await sign.until(lambda: sign.messages == ("MEGA $12,500.00", "MAJOR $1,800.00", "MINOR $420.00"))
    # The display changed three times: the first update at 1000, the win at 1009.9, its end at 1029.9.
    assert sorted({round(s.at, 6) for s in sign.history}) == [1000.0, 1009.9, 1029.9]


async def test_garbage_and_partial_packets_on_the_line(sign: AlphaSignSim, start: StartAlpha) -> None:
    # Host to sign: write straight into the pty, as a noisy line or a host that died mid-packet would.
    fd = os.open(sign.port, os.O_WRONLY | os.O_NOCTTY)
    try:
        valid = encode_packet("Z", "00", b"E", b"$ZBL00200000")
        corrupt = encode_packet("Z", "00", b"G", b"Z1234").replace(b"Z1234", b"Z1235")
        os.write(fd, b"\x13\x37garbage" + valid[:9] + valid + corrupt + encode_packet("Z", "00", b"G", b"Zok"))
        async with asyncio.timeout(TIMEOUT):
            await sign.until(lambda: "G:Z" in sign.accepted)
    finally:
        os.close(fd)
    assert sign.accepted == ["E:$", "G:Z"] and sign.strings == {"Z": b"ok"}
    assert sign.rejected[0] == "packet cut short by a new SOH" and sign.rejected[1].startswith("checksum")

    # Sign to host: noise, a false SOH and a cut packet before real answers; the driver reports it and goes on.
    driver, events = await start(sign)
    await events.next(DeviceOnline)
    sign.inject_garbage(b"\xff\xfe noise \x01Z00\x02G" + encode_packet("0", "00", b"G", b"Q")[:10])
    fault = await events.next(DeviceFault)
    assert fault.code == "line_noise"
    await driver.show_levels(LEVELS)
    assert (await events.next(MetersShown)).levels == LEVELS


async def test_unplug_and_replug_blank_restores_the_latest_values(sign: AlphaSignSim, start: StartAlpha) -> None:
    driver, events = await start(sign, heartbeat_interval=0.2)
    await events.next(DeviceOnline)
    await driver.show_levels(LEVELS)
    await events.next(MetersShown)

    await sign.unplug()
    offline = await events.next(DeviceOffline)
    assert offline.reason
    mark = events.mark()
    await driver.show_win("mega", 5, 1)  # nobody to show it to: refused at once, with a fault
    assert (await events.next(DeviceFault, after=mark)).code == "offline"
    await driver.show_levels({**LEVELS, "mega": 1_250_021})  # kept for when the sign is back

    mark = events.mark()
    await sign.replug(power_lost=True)
    await events.next(DeviceOnline, after=mark)
    shown = await events.next(MetersShown, after=mark)
    assert shown.levels == {**LEVELS, "mega": 1_250_021}
    assert sign.messages == ("MEGA $12,500.21", "MAJOR $1,800.00", "MINOR $410.00")


async def test_brownout_is_found_by_the_heartbeat(sign: AlphaSignSim, start: StartAlpha) -> None:
    driver, events = await start(sign, heartbeat_interval=0.1)
    await events.next(DeviceOnline)
    await driver.show_levels(LEVELS)
    await events.next(MetersShown)
    mark = events.mark()
    sign.lose_memory()  # the port stays open: only the heartbeat's read-back of file Z can tell
    offline = await events.next(DeviceOffline, after=mark)
    assert "file Z" in offline.reason and "HEARTBEAT" not in sign.rejected
    assert "read STRING 'Z': no such file" in sign.rejected
    mark = events.mark()
    await events.next(DeviceOnline, after=mark)
    assert (await events.next(MetersShown, after=mark)).levels == LEVELS
    assert sign.messages == ("MEGA $12,500.00", "MAJOR $1,800.00", "MINOR $410.00")


async def test_a_sign_that_never_answers_stays_offline(sign: AlphaSignSim, start: StartAlpha) -> None:
    sign.deaf = True
    _driver, events = await start(sign, reply_timeout=0.2)
    offline = await events.next(DeviceOffline)
    assert "no answer to a read of file Z" in offline.reason
    assert events.count(DeviceOnline) == 0


async def test_bad_requests_are_refused_without_sending(sign: AlphaSignSim, start: StartAlpha) -> None:
    driver, events = await start(sign)
    await events.next(DeviceOnline)
    sent = list(sign.accepted)
    for call, args, field in (
        ("show_levels", ({},), "levels"),
        ("show_levels", ({"Mega": 1},), "Mega"),
        ("show_levels", ({"mega": -1},), "amount"),
        ("show_win", ("mega", 5, 0), "seat"),
        ("show_win", ("mega!", 5, 1), "level"),
        ("show_levels", ({f"l{chr(97 + i)}": 1 for i in range(25)},), "at most 24"),
    ):
        before = len(events.seen)
        await getattr(driver, call)(*args)
        fault = await events.next(DeviceFault, after=before)
        assert fault.code == "bad_request" and field in fault.detail, fault
    assert sign.accepted == sent


def test_registered_and_settings_errors_name_the_field() -> None:
    assert available_drivers()["alpha-sign"] is AlphaSign
    for settings_, field in (
        ({"port": "/dev/x", "address": "G1"}, "address"),
        ({"port": "/dev/x", "max_updates_per_second": 0.05}, "within 30 s"),
        ({"port": "/dev/x", "captions": {"mega": "MÉGA"}}, "printable ASCII"),
        ({"port": "/dev/x", "baudrate": 115200}, "baudrate"),
        ({"port": ""}, "port"),
    ):
        with pytest.raises(DriverConfigError, match="invalid settings") as info:
            create_driver("alpha_sign", {"driver": "alpha-sign", **settings_})
        assert field in str(info.value)


async def test_a_port_that_refuses_7e1_is_reported_not_fatal(sign: AlphaSignSim, start: StartAlpha) -> None:
    _driver, events = await start(sign, serial_format="7E1")  # a pty cannot do parity
    offline = await events.next(DeviceOffline)
    assert "7E1" in offline.reason and events.count(DeviceFault) == 0


async def test_a_win_the_sign_does_not_confirm_is_reported_and_show_win_returns(
    sign: AlphaSignSim, start: StartAlpha
) -> None:
    driver, events = await start(sign)
    await events.next(DeviceOnline)
    sign.deaf = True  # takes the write, never answers the read-back
    mark = events.mark()
    async with asyncio.timeout(TIMEOUT):
        await driver.show_win("major", 180_000, 3)
    faults = [e for e in events.seen[mark:] if isinstance(e, DeviceFault)]
    assert [f.code for f in faults][:2] == ["win_not_shown", "timeout"]
    assert "announce it again" in faults[0].detail
    await events.next(DeviceOffline, after=mark)
