"""The host's safety net behind a GROUP lock's slot pairs (docs/protocol.md section 13, "Collisions and noise"): a
station counted as locked by its two slot bytes that then sends a wager, which a locked station cannot sense, is
locked again at once with a frame of its own.

The bus driver runs against the bus simulator on a real paced pty. Station 3 misses the GROUP lock (it never locks);
a collision of its own frame with the slots cannot happen on a pty, so the simulator's on_group hook writes the bytes
a collision leaves on the return pair inside the window: station 3's own wager frame whose SEQ equals its check value,
its SOF hit (the parser's rule then refuses the pair) or its SOF and VK hit (nothing in the bytes tells, the pair is
taken: the safety net's case). The parser-level tests are tests/drivers/test_slot_false_confirmation.py.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import AsyncIterator
from typing import Any

import pytest
from structlog.testing import capture_logs

from drivers.interfaces import LockAcknowledged, WagerDetected
from drivers.reference.framing import (
    BROADCAST_ADDRESS,
    VERSION_3,
    Frame,
    Kind,
    decode_message,
    encode_frame,
    encode_message,
    slot_check,
)
from drivers.reference.wager_bus import BusWagerStation, ReferenceWagerBus
from drivers.registry import create_driver
from drivers.sim.wager_bus import WagerBusSim
from tests.drivers.bus_helpers import (
    ADDRESSES,
    SEATS,
    Recorder,
    Writes,
    all_online,
    commands_done,
    own_locks,
    settled,
    watch_writes,
)

MISSED = 3  # the seat whose station misses the GROUP lock
FALSE_PAIR = "wager from a station its slot pair counted as locked: the pair was false, locking it on its own"

# The simulated line, the host's stations, what each reported, and each copy of a frame the host wrote to one station
# from the lock on (a stall of this process past the ACK timeout has the host send a proof again: Writes.resent).
Started = tuple[WagerBusSim, dict[int, BusWagerStation], dict[int, Recorder], Writes]


@pytest.fixture
async def line() -> AsyncIterator[Started]:
    random.seed(16)  # the host's SEQs (BusLink draws its counters' starts): the same GROUP SEQ every run
    sim = WagerBusSim("wager_bus", addresses=ADDRESSES)
    await sim.start()
    driver = create_driver(
        "wager_bus",
        {
            "driver": "reference-wager-bus",
            "port": sim.port,
            "stations": [{"seat": seat, "address": address} for seat, address in ADDRESSES.items()],
            "ack_timeout": 0.1,
            "heartbeat_interval": 0,  # nothing on the line but the lock-out
        },
    )
    assert isinstance(driver, ReferenceWagerBus)
    recorders = {seat: Recorder() for seat in SEATS}
    await asyncio.gather(*(s.start(recorders[seat]) for seat, s in driver.stations.items()))
    try:
        await all_online(recorders)
        await settled(sim)
        yield sim, dict(driver.stations), recorders, watch_writes(driver)
    finally:
        await asyncio.gather(*(s.stop() for s in driver.stations.values()))
        await sim.stop()


def _collision(sim: WagerBusSim, hit: int, wager: bool = False) -> list[asyncio.Task[None]]:
    """Station MISSED misses the next GROUP frame; in its window the return pair carries that station's own wager frame
    with SEQ = its check value, its first `hit` bytes (SOF, then VK) and its last byte destroyed by the collision. With
    `wager`, the station also senses that wager then (the task placing it is in the list returned)."""
    address = ADDRESSES[MISSED]
    sim.stations[MISSED].missed_groups = 1
    payload = encode_message({"evt": "wager", "spot": "ante", "amount": 500}, VERSION_3)
    placed: list[asyncio.Task[None]] = []

    def collide(group: Frame) -> None:
        frame = bytearray(encode_frame(address, slot_check(address, group.seq), Kind.DATA, payload, VERSION_3, True))
        frame[:hit] = bytes(hit)
        frame[-1] = 0
        sim.write(bytes(frame), gap=False)
        if wager:  # sensed now: the simulated station sends it once the window ended
            placed.append(asyncio.ensure_future(sim.stations[MISSED].place("ante", 500)))

    sim.on_group = collide
    return placed


def _locks(sim: WagerBusSim) -> list[tuple[int, dict[str, Any]]]:
    """(ADDR, message) of every lock the host put on the line, in order (a GROUP frame as the message it stands for)."""
    heard = [(f.address, decode_message(f.payload)) for f in sim.heard if f.kind in (Kind.DATA, Kind.GROUP)]
    return [(address, m) for address, m in heard if not m.get("evt") and m.get("cmd") == "lock"]


async def _lock_every_station(stations: dict[int, BusWagerStation], recorders: dict[int, Recorder]) -> None:
    await asyncio.gather(*(s.lock() for s in stations.values()))
    acks = await asyncio.gather(*(r.next(LockAcknowledged) for r in recorders.values()))
    assert [(a.seat, a.locked) for a in acks] == [(seat, True) for seat in SEATS]


def _one_lock_each(sim: WagerBusSim, writes: Writes, named: list[int]) -> None:
    """Each station was written one lock of its own after the GROUP frame (its pair's proof, or its lock after the
    window): copies only as that lock sent again an ACK timeout after the copy before (a stall of this process, whose
    simulated stations' answers are held with the host), and with no copy the line carried exactly one each."""
    assert set(writes.resent(0.1)) == set(named), writes
    assert {a: len(seqs) for a, seqs in own_locks(sim).items()} == {a: 1 for a in named}
    locks = _locks(sim)
    assert all(m == {"cmd": "lock"} for _a, m in locks[1:]), locks
    if len(writes.seen) == len(named):
        assert sorted(a for a, _m in locks[1:]) == named, locks


def _lock_acks(recorders: dict[int, Recorder]) -> dict[int, list[bool]]:
    return {seat: [e.locked for e in r.seen if isinstance(e, LockAcknowledged)] for seat, r in recorders.items()}


async def test_a_false_slot_pair_is_proven_by_a_lock_of_its_own_though_the_station_sends_nothing(
    line: Started,
) -> None:
    """SOF and VK hit: the host takes station 3's ADDR and SEQ for its confirmation and counts it locked, although it
    never locked, and station 3 then sends nothing. Once the window closed, every station counted locked by its slot
    pair alone gets a lock frame of its own, whose answer is a whole frame: station 3 locks. Before, it stayed open
    until its next frame (a wager, which the safety net below relocks on). The proofs' answers are not reported to the
    controller a second time."""
    sim, stations, recorders, writes = line
    _collision(sim, hit=2)
    await _lock_every_station(stations, recorders)
    await commands_done(stations)
    assert sim.stations[MISSED].locked
    named = sorted(ADDRESSES.values())
    assert _locks(sim)[0] == (BROADCAST_ADDRESS, {"cmd": "lock", "stations": named})
    _one_lock_each(sim, writes, named)
    assert _lock_acks(recorders) == {seat: [True] for seat in SEATS}
    assert all(not s.locked_by_slot_alone for s in stations.values())


async def test_a_wager_after_a_false_slot_pair_has_the_station_locked_on_its_own(line: Started) -> None:
    """SOF and VK hit, and station 3's wager (the retransmission of the damaged frame; here sensed in the window, so
    the simulator sends it once the window ended) comes before the answer to the host's proof: the wager proves the
    pair false, has the station locked at once, and is logged; the wager itself goes on to the controller, which
    refuses a wager after "no more bets" (controller/engine/betting.py; tests/engine/test_round_655a.py,
    test_wager_after_no_more_bets_is_rejected_and_not_counted)."""
    sim, stations, recorders, _writes = line
    placed = _collision(sim, hit=2, wager=True)
    with capture_logs() as logs:
        await _lock_every_station(stations, recorders)
        wager = await recorders[MISSED].next(WagerDetected)
        relocked = await recorders[MISSED].next(LockAcknowledged)
        await commands_done(stations)
    await placed[0]
    assert (wager.seat, wager.spot, wager.amount_cents) == (MISSED, "ante", 500)
    assert relocked.locked and sim.stations[MISSED].locked
    named = sorted(ADDRESSES.values())
    locks = _locks(sim)
    assert locks[0] == (BROADCAST_ADDRESS, {"cmd": "lock", "stations": named})
    # Every other station's proof once; station 3 its proof and the relock, or the relock alone (the wager read before
    # its proof was written).
    # (A copy, the same lock sent again after a stall of this process past the ACK timeout, has its lock's SEQ.)
    own = {a: len(seqs) for a, seqs in own_locks(sim).items()}
    assert {a: n for a, n in own.items() if a != ADDRESSES[MISSED]} == {a: 1 for a in named if a != ADDRESSES[MISSED]}
    assert own[ADDRESSES[MISSED]] in (1, 2)
    assert all(m == {"cmd": "lock"} for _a, m in locks[1:]), locks
    warned = [e for e in logs if e["event"] == FALSE_PAIR]
    assert [(e["log_level"], e["device"], e["spot"]) for e in warned] == [("warning", "wager_station_3", "ante")]


async def test_a_damaged_frame_whose_vk_survived_is_no_confirmation_and_the_station_is_locked_after_the_window(
    line: Started,
) -> None:
    """SOF hit, VK intact: the parser does not take the ADDR and SEQ after a frame's VK for a pair, so station 3 is
    still awaited when the window closes and is locked with a frame of its own then, without any wager needed (the
    six others each get their proof)."""
    sim, stations, recorders, writes = line
    _collision(sim, hit=1)
    with capture_logs() as logs:
        await _lock_every_station(stations, recorders)  # station 3's LockAcknowledged: its REPLY to its own lock
        await commands_done(stations)
    assert sim.stations[MISSED].locked
    named = sorted(ADDRESSES.values())
    assert _locks(sim)[0] == (BROADCAST_ADDRESS, {"cmd": "lock", "stations": named})
    _one_lock_each(sim, writes, named)
    assert _lock_acks(recorders) == {seat: [True] for seat in SEATS}
    assert [e for e in logs if e["event"] == FALSE_PAIR] == []
