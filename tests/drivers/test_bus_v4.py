"""Seven v4 wager stations on one multi-drop line (docs/protocol.md section 14): the start's identities are ANSWERs
(no ACK of the identify, no host ACK of the identity), a round's reopening is one GROUP unlock and seven two-byte slot
confirmations, a seat light is answered by its ANSWER; a line with one v3 station keeps today's addressed unlocks, and a
confirmation damaged in its slot falls back to the addressed unlock. The bus driver against the bus simulator on a real
pty, paced at 115200 baud where the test counts the return pair's bytes; frames counted from a tap on the line.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import AsyncIterator
from typing import Any

import pytest

from drivers.interfaces import DeviceFault, LockAcknowledged, SeatLight
from drivers.reference.framing import BROADCAST_ADDRESS, VERSION_3, Kind, decode_message, encode_frame, encode_message
from drivers.reference.wager_bus import BusWagerStation, ReferenceWagerBus
from drivers.sim.wager_bus import WagerBusSim
from tests.drivers.bus_helpers import (
    ADDRESSES,
    SEATS,
    Line,
    Recorder,
    Writes,
    copies_answered,
    settled,
    start_line,
    stop_lines,
    watch_windows,
    watch_writes,
    without_start_answers,
)
from tests.drivers.line_log import OnLine


@pytest.fixture
async def line(request: pytest.FixtureRequest) -> AsyncIterator[Any]:
    started: list[tuple[WagerBusSim, ReferenceWagerBus]] = []

    async def start(v3_seat: int | None = None, paced: bool = True, **settings: Any) -> Line:
        return await start_line(started, v3_seat, paced, **settings)

    yield start
    await stop_lines(started)


def back(frames: list[OnLine]) -> list[OnLine]:
    return [seen for seen in frames if not seen.from_host]


def forth(frames: list[OnLine]) -> list[OnLine]:
    return [seen for seen in frames if seen.from_host]


async def unlock_every_station(stations: dict[int, BusWagerStation], recorders: dict[int, Recorder]) -> None:
    await asyncio.gather(*(s.unlock() for s in stations.values()))
    acks = await asyncio.gather(*(r.next(LockAcknowledged) for r in recorders.values()))
    assert [(a.seat, a.locked) for a in acks] == [(seat, False) for seat in SEATS]


async def test_a_v4_start_answers_each_identify_with_one_frame(line: Any) -> None:
    sim, log, _driver, stations, _recorders = await line()
    assert {s.protocol_version for s in stations.values()} == {4}
    returned = back(log.frames)
    identified = {seen.frame.address for seen in returned if seen.name == "identity"}
    assert identified == set(ADDRESSES.values())
    # Nothing but identities on the return pair: no ACK of an identify, each identity the ANSWER (v3 VK 0x3E) to it.
    assert {(seen.frame.kind, seen.frame.version) for seen in returned} == {(Kind.REPLY, VERSION_3)}
    for seen in returned:
        seat = next(s for s, a in ADDRESSES.items() if a == seen.frame.address)
        identity = {"evt": "identity", **sim.stations[seat].identity}
        assert decode_message(seen.frame.payload) == identity
        answer = encode_frame(seen.frame.address, seen.frame.seq, Kind.REPLY, encode_message(identity, 3), 3, True)
        assert seen.size == len(answer)
    # The host's pair: the identifies (one each, more only if one was resent) and no ACK of an identity.
    assert {seen.name for seen in forth(log.frames)} == {"identify"}
    # A station answers a resent identify with the same ANSWER again: any copy is byte for byte the first.
    by_station: dict[int, OnLine] = {}
    for seen in returned:
        assert by_station.setdefault(seen.frame.address, seen).frame == seen.frame
    # Against v3's start: 9 bytes (the v1 ACK of the identify) fewer per station on the return pair.
    saved = sum(len(encode_frame(a, 0, Kind.ACK, b"")) for a in ADDRESSES.values())
    assert saved == 63


def assert_own_commands(own: list[OnLine], writes: Writes, late: set[int], ack_timeout: float) -> None:
    """The frames the host wrote beside a GROUP frame: one command to each station `late`, and copies of it sent again
    an ACK timeout apart (Writes.resent), nothing else."""
    assert set(writes.resent(ack_timeout)) == late, (writes, late)
    assert sorted((seen.frame.kind, seen.frame.address, seen.frame.seq) for seen in own) == sorted(
        (Kind.DATA, address, seq) for _at, address, seq in writes.seen
    )


async def test_a_rounds_reopening_is_one_group_frame_and_seven_slots(line: Any) -> None:
    sim, log, driver, stations, recorders = await line()
    # A station the simulator, slowed by a loaded machine, let miss the ACK timeout is sent its command on its own (and
    # answers it): checked by Windows.late and left out of the counts below.
    # A copy of that command sent again, its REPLY late past the ACK timeout too: checked by Writes.resent.
    windows, writes = watch_windows(driver), watch_writes(driver)
    mark = log.mark()
    await unlock_every_station(stations, recorders)
    await copies_answered(log, mark, writes)
    await settled(sim)
    frames = without_start_answers(log, mark, log.window(mark))
    late = windows.late(driver.settings.ack_timeout)
    group, *own = forth(frames)
    assert_own_commands(own, Writes(writes.seen[:]), late, driver.settings.ack_timeout)
    assert group.frame.kind == Kind.GROUP and group.frame.address == BROADCAST_ADDRESS and group.size == 10
    assert decode_message(group.frame.payload) == {"cmd": "unlock", "stations": sorted(ADDRESSES.values())}
    returned = [seen for seen in back(frames) if seen.frame.address not in late]
    assert [(seen.frame.kind, seen.frame.address) for seen in returned] == [
        (Kind.SLOT, a) for a in sorted(ADDRESSES.values()) if a not in late
    ]
    assert sum(seen.size for seen in returned) == 2 * len(returned)  # v3: a 7-byte REPLY each

    # The opening's lights: one GROUP light (the state in its ARG byte, 11 bytes), seven pairs.
    mark, since, written = log.mark(), len(windows.alone), len(writes.seen)
    await asyncio.gather(*(s.light_off() for s in stations.values()))
    lights = await asyncio.gather(*(r.next(SeatLight) for r in recorders.values()))
    assert [(ev.seat, ev.on) for ev in lights] == [(seat, False) for seat in SEATS]
    await copies_answered(log, mark, Writes(writes.seen[written:]))
    await settled(sim)
    frames = without_start_answers(log, mark, log.window(mark))
    late = windows.late(driver.settings.ack_timeout, since)
    group, *own = forth(frames)
    assert_own_commands(own, Writes(writes.seen[written:]), late, driver.settings.ack_timeout)
    assert group.frame.kind == Kind.GROUP and group.size == 11
    assert decode_message(group.frame.payload) == {"cmd": "light", "stations": sorted(ADDRESSES.values()), "on": False}
    pairs = [(seen.frame.kind, seen.size) for seen in back(frames) if seen.frame.address not in late]
    assert pairs == [(Kind.SLOT, 2)] * (7 - len(late))
    faults = {ev.code for r in recorders.values() for ev in r.seen if isinstance(ev, DeviceFault)}
    assert faults <= ({"line_noise"} if windows.alone else set())  # a pair read after the window closed is noise


async def test_a_line_with_one_v3_station_keeps_the_addressed_unlocks(line: Any) -> None:
    sim, log, driver, stations, recorders = await line(v3_seat=4, paced=False)
    assert [s.protocol_version for s in stations.values()] == [3 if seat == 4 else 4 for seat in SEATS]
    writes = watch_writes(driver)
    mark = log.mark()
    await unlock_every_station(stations, recorders)
    await settled(sim)
    frames = without_start_answers(log, mark, log.window(mark))
    # One unlock to each station; a copy only as that unlock again, its REPLY late past the ACK timeout under a stall
    # of a loaded machine (Writes.resent), and a station answers each copy it hears.
    assert set(writes.resent(driver.settings.ack_timeout)) == set(ADDRESSES.values()), writes
    assert sorted((seen.frame.kind, seen.frame.address, seen.frame.seq, seen.name) for seen in forth(frames)) == sorted(
        (Kind.DATA, address, seq, "unlock") for _at, address, seq in writes.seen
    )
    answers = [(seen.frame.kind, seen.frame.address, seen.frame.seq, seen.size) for seen in back(frames)]
    assert {(kind, size) for kind, _a, _s, size in answers} == {(Kind.REPLY, 7)}, answers
    assert sorted({(a, seq) for _k, a, seq, _n in answers}) == sorted({(a, seq) for _t, a, seq in writes.seen})
    # The lock still goes by v3's GROUP frame: every station speaks v3 (then a lock of its own to each station its slot
    # pair alone counted locked, once the window closed: docs/protocol.md section 13, "Collisions and noise").
    mark = log.mark()
    await asyncio.gather(*(s.lock() for s in stations.values()))
    await asyncio.gather(*(r.next(LockAcknowledged) for r in recorders.values()))
    assert [seen.frame.kind for seen in forth(log.window(mark))][:1] == [Kind.GROUP]


async def test_a_damaged_slot_falls_back_to_the_addressed_unlock(line: Any) -> None:
    """Seat 3's slot pair is damaged: the host sends it its unlock on its own once the window closed, and the damaged
    pair is line noise and nothing else. Unpaced with a 50 ms ACK timeout, so a stall of a loaded machine past it (the
    simulator late with its pair, or with a REPLY) has the host, rightly, send another station its unlock on its own, or
    a copy of an unlock sent again: each checked against the ACK timeout (Windows.late, Writes.resent), then allowed."""
    ack_timeout = 0.05
    sim, log, driver, stations, recorders = await line(paced=False, ack_timeout=ack_timeout)
    sim.stations[3].damaged_slots = 1
    windows, writes = watch_windows(driver), watch_writes(driver)
    mark = log.mark()
    await unlock_every_station(stations, recorders)
    await settled(sim)
    # Not log.window: the damaged pair is two bytes of no frame, as noise is.
    frames = log.frames[mark[0] :]
    late = windows.late(ack_timeout)
    assert ADDRESSES[3] in late  # a damaged pair is no confirmation
    assert set(writes.resent(ack_timeout)) == late  # one unlock (and its copies) to each, and to no other station
    group, *own = forth(frames)
    assert (group.frame.kind, group.frame.address) == (Kind.GROUP, BROADCAST_ADDRESS)
    assert decode_message(group.frame.payload) == {"cmd": "unlock", "stations": sorted(ADDRESSES.values())}
    assert sorted((seen.frame.kind, seen.frame.address, seen.frame.seq, seen.name) for seen in own) == sorted(
        (Kind.DATA, address, seq, "unlock") for _at, address, seq in writes.seen
    )
    assert not any(s.locked for s in sim.stations.values())
    # The pairs on the line: every other station's in address order; one the host did not read in time is there too
    # unless the simulator's stall outlasted its unlock.
    others = [a for seat, a in ADDRESSES.items() if seat != 3]
    slots = [seen.frame.address for seen in back(frames) if seen.frame.kind == Kind.SLOT]
    assert slots == [a for a in others if a in slots] and set(others) - late <= set(slots), (slots, late)
    faults = {ev.code for r in recorders.values() for ev in r.seen if isinstance(ev, DeviceFault)}
    assert faults == {"line_noise"}  # the damaged pair is noise on the line, and nothing else


async def test_lights_asked_both_ways_are_two_group_frames_and_a_burnt_lamp_answers_after_the_window(line: Any) -> None:
    """Seats 2 and 5 lit, the others put out, in one turn (a restarted host telling every station what its light must
    show): one GROUP light per state. Seat 5's lamp is burnt out: it must not confirm `on`; it answers with its `light`
    event (on: false) as a frame of its own after the window, and the host takes that as its answer: no addressed
    `light`, and the seat's SeatLight says what the lamp shows."""
    sim, log, driver, stations, recorders = await line()
    sim.stations[5].lamp_failed = True
    windows = watch_windows(driver)
    assert driver.link is not None
    loop, heard = asyncio.get_running_loop(), driver.link.window.heard
    event_at: list[float] = []

    def on_heard(address: int, event: str | None) -> None:
        if address == ADDRESSES[5]:
            event_at.append(loop.time())  # seat 5's own frame read
        heard(address, event)

    driver.link.window.heard = on_heard
    mark = log.mark()
    await asyncio.gather(*(s.light_on() if seat in (2, 5) else s.light_off() for seat, s in stations.items()))
    lights = await asyncio.gather(*(r.next(SeatLight) for r in recorders.values()))
    assert [(ev.seat, ev.on) for ev in lights] == [(seat, seat == 2) for seat in SEATS]
    await settled(sim)
    frames = without_start_answers(log, mark, log.window(mark))
    sent = [decode_message(seen.frame.payload) for seen in forth(frames) if seen.frame.kind == Kind.GROUP]
    off = sorted(a for seat, a in ADDRESSES.items() if seat not in (2, 5))
    assert sent == [
        {"cmd": "light", "stations": off, "on": False},
        {"cmd": "light", "stations": [ADDRESSES[2], ADDRESSES[5]], "on": True},
    ]
    # Beside the two GROUP frames the host sent only its ACK of each copy of seat 5's own `light` event and, the
    # simulator later than the ACK timeout on a loaded machine, a `light` of its own (and its copies, the same SEQ,
    # sent again after the ACK timeout) to each station whose confirmation it missed.
    late = windows.late(driver.settings.ack_timeout)
    # Seat 5's own `light` is its answer: a `light` of its own goes to it only if that frame was not read in time.
    alone_at = [at for at, address in windows.alone if address == ADDRESSES[5]]
    assert not alone_at or not event_at or event_at[0] > alone_at[0], (windows, event_at)
    own = [seen.frame for seen in back(frames) if seen.frame.kind == Kind.DATA]
    assert own, "seat 5 sent no `light` of its own"
    # Seat 5's `light` sent again (its SEQ) only when the host's ACK of it came after the station's own timeout; a
    # second one (a SEQ of its own) only as its answer to the host's `light` to it alone, sent when a stall of this
    # process (the simulated station held with the host) kept the first from being read in time.
    assert {(f.address, tuple(decode_message(f.payload).items())) for f in own} == {
        (ADDRESSES[5], (("evt", "light"), ("on", False)))
    }, own
    assert len({f.seq for f in own}) <= (2 if ADDRESSES[5] in late else 1), (own, late)
    host = [seen.frame for seen in forth(frames) if seen.frame.kind != Kind.GROUP]
    # An ACK of each of its frames; of a copy sent again, the last ACK may still be on its way when the line settled.
    acks = [f.address for f in host if f.kind == Kind.ACK]
    assert set(acks) <= {ADDRESSES[5]} and len({f.seq for f in own}) <= len(acks) <= len(own), (acks, own)
    commands = [f for f in host if f.kind != Kind.ACK]
    assert all(f.kind == Kind.DATA for f in commands) and {f.address for f in commands} == late, (commands, late)
    assert len({(f.address, f.seq) for f in commands}) == len(late)  # a copy is the same command, not a second one
    slots = [
        seen.frame.address for seen in back(frames) if seen.frame.kind == Kind.SLOT and seen.frame.address not in late
    ]
    assert slots == [a for a in [*off, ADDRESSES[2]] if a not in late]
    assert sim.stations[2].light and not sim.stations[5].light


async def test_no_answer_is_still_due_once_every_identity_was_read(line: Any) -> None:
    """A v4 station's identity is the ANSWER to its `identify`, sent before the host knows its version: the exchange
    ends with it, so a GROUP frame right after the start waits for nothing (LineWindow.replied). Counted as a v1
    exchange (an ACK, then the identity in a frame of its own), the last one stayed due until its line time, 27 ms after
    its write, and a reopening right after the start waited for it."""
    _sim, log, driver, _stations, _recorders = await line()
    link = driver.link
    assert link is not None
    if link.answers_due():
        # Only a copy can still be owed: a stall of this process past the ACK timeout (a loaded machine,
        # tools/stall.py's SIGSTOP) had the host send an identify again, and the station answers the copy too, read
        # after the start returned. Every identify sent once, nothing may be due.
        identifies = Counter((s.frame.address, s.frame.seq) for s in forth(log.frames) if s.name == "identify")
        assert max(identifies.values()) > 1, ("an answer is due, yet every identify went once", identifies)
        link.hold()
        try:
            async with asyncio.timeout(5.0):  # a failure bound only
                assert await link.clear_for_group(0.0)
        finally:
            link.unhold()
    assert not link.answers_due()
