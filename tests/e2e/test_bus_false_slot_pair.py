"""End to end: a wager station on the shared line that missed the GROUP lock and passed for locked through a false slot
pair (docs/protocol.md section 13, "Collisions and noise") is locked again by its first wager, which the controller
refuses as placed after "no more bets" (or by the proof of its pair after the window, whichever goes first).

The shipped bus config (configs/let-it-ride-wager-bus.toml) played by `play()` over a real pty, a real SQLite journal
and a real mosquitto. Two things are faked, because a pty cannot collide: station 3 does not hear the first round's
GROUP lock (WagerBusSim's missed_groups), and the simulator's on_group hook writes into that lock's window what a
collision of station 3's own frame with the slots leaves on the return pair: its frame with SEQ equal to its check
value, SOF and VK destroyed, so nothing in the bytes tells it from a confirmation. A player then pushes chips at seat 3
(its station never locked), as the damaged frame's retransmission would arrive.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from controller.config.table import TableConfig, parse_config, read_config
from controller.core.events import JournaledEvent
from controller.people.demo import play
from drivers.reference.framing import VERSION_3, Frame, Kind, decode_message, encode_frame, encode_message, slot_check
from drivers.sim.table import SimulatedTable
from tests.broker import Mosquitto

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]
BUS_CONFIG = ROOT / "configs" / "let-it-ride-wager-bus.toml"
SEAT = 3
ADDRESS = 13  # seat 3's address in the config
ADDRESSES = [10 + seat for seat in range(1, 8)]  # every seat's, 10 + N in the config
LATE = {"evt": "wager", "spot": "three_card_bonus", "amount": 500}


def _table(table_id: str) -> TableConfig:
    data = read_config(BUS_CONFIG)
    data["table_id"] = table_id
    data["mqtt"]["prefix"] = "e2e"
    for name in ("shuffler", "shoe", "dealer_panel", "wager_bus", "progressive_sign"):
        data["devices"][name]["port"] = "simulated"
    return parse_config(data, "test config")


class Collision:
    """At the first GROUP lock: station 3 misses it, the collision's bytes land in its window, chips go on seat 3."""

    def __init__(self) -> None:
        self.sims: SimulatedTable | None = None
        self.group: Frame | None = None
        self.tasks: set[asyncio.Task[None]] = set()

    def on_sims(self, sims: SimulatedTable) -> None:
        assert sims.bus is not None
        self.sims = sims
        sims.bus.on_group = self.on_group

    def on_group(self, frame: Frame) -> None:
        if self.group is not None or decode_message(frame.payload).get("cmd") != "lock":
            return
        assert self.sims is not None and self.sims.bus is not None
        self.group = frame
        bus, station = self.sims.bus, self.sims.bus.stations[SEAT]
        station.missed_groups = 1  # this very frame: on_group runs before the stations are fed
        own = bytearray(
            encode_frame(ADDRESS, slot_check(ADDRESS, frame.seq), Kind.DATA, encode_message(LATE, 3), VERSION_3, True)
        )
        own[:2] = b"\x00\x00"
        own[-1] = 0
        bus.write(bytes(own), gap=False)
        task = asyncio.get_running_loop().create_task(station.place(str(LATE["spot"]), int(str(LATE["amount"]))))
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)


async def test_a_station_falsely_counted_locked_is_locked_by_its_wager_which_is_refused(
    mosquitto: Mosquitto, unique_id: str, tmp_path: Path
) -> None:
    collision = Collision()
    events: list[JournaledEvent] = []
    played = await play(
        _table(unique_id),
        rounds=1,
        broker=mosquitto.url,
        seed=11,
        journal_path=tmp_path / "bus.sqlite",
        on_event=events.append,
        on_sims=collision.on_sims,
    )
    assert played == 1 and collision.group is not None and collision.sims is not None
    bus = collision.sims.bus
    assert bus is not None

    # The false pair counted: the lock-out was journaled as confirmed by all seven.
    confirmed = [e for e in events if e.type == "lockout.confirmed"]
    assert dict(confirmed[0].payload) == {"stations": 7}
    # Seat 3's chips after "no more bets" were refused, not counted.
    after = events[[e.type for e in events].index("no_more_bets") :]
    refused = [dict(e.payload) for e in after if e.type == "wager.rejected" and e.payload.get("seat") == SEAT]
    assert refused[:1] == [
        {
            "seat": SEAT,
            "spot": "three_card_bonus",
            "amount": 500,
            "reason": 'placed after "no more bets" or outside betting: not counted',
        }
    ]
    accepted = [dict(e.payload) for e in after if e.type == "wager.accepted" and e.payload.get("seat") == SEAT]
    assert [w for w in accepted if w.get("spot") == "three_card_bonus" and w.get("amount") == 500] == []
    # On the line: the GROUP lock, then station 3's lock of its own, sent because of that wager (read with the last slot
    # pair, it usually comes first), or as the proof of its pair that follows every GROUP lock (docs/protocol.md section
    # 13, "The proof of a pair"), whichever went first; the other is then not sent.
    locks: list[tuple[Kind, int, dict[str, Any]]] = []
    for frame in bus.heard:
        if frame.kind in (Kind.DATA, Kind.GROUP) and not frame.from_device:
            message = decode_message(frame.payload)
            if message.get("cmd") == "lock":
                locks.append((frame.kind, frame.address, message))
    assert locks[0][0] == Kind.GROUP
    groups = [i for i, (kind, _a, _m) in enumerate(locks) if kind == Kind.GROUP] + [len(locks)]
    own = locks[1 : groups[1]]  # the first round's addressed locks
    assert all(message == {"cmd": "lock"} for _k, _a, message in own)
    others = sorted(address for _k, address, _m in own if address != ADDRESS)
    assert others == [a for a in ADDRESSES if a != ADDRESS]  # their proofs, once each
    assert [address for _k, address, _m in own].count(ADDRESS) in (1, 2)  # the relock, the proof or both
