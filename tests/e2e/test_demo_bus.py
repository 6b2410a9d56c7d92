"""End to end: `tablectl demo` and `play()` on a table whose wager stations share one multi-drop line.

configs/let-it-ride-wager-bus.toml puts the seven stations of a Let It Ride table on one line at addresses 11-17. The
simulated table makes one pty for the line with the seven simulated stations on it (drivers/sim/wager_bus.py); the
controller drives it with the reference bus driver over that pty, the journal is a real SQLite file and the events go
to a real mosquitto. What crossed the line is read from the simulated line itself (`WagerBusSim.heard`, each
station's `slot_history`): the pty is real, only the stations behind it are simulated.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from controller.config.errors import ConfigError
from controller.config.table import TableConfig, load_config, parse_config, read_config
from controller.core.events import JournaledEvent
from controller.people.demo import play
from drivers.reference.framing import BROADCAST_ADDRESS, Kind, decode_message, slot_confirmation
from drivers.sim.table import SimulatedTable
from drivers.sim.wager_bus import WagerBusSim
from tests.broker import Mosquitto, Subscribe, fresh_id
from tests.e2e.conftest import table_config

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]
BUS_CONFIG = ROOT / "configs" / "let-it-ride-wager-bus.toml"
ADDRESSES = {seat: 10 + seat for seat in range(1, 8)}  # as the config sets them
LOCK_RULE = "643a.10(a)(2)"  # "no more bets" and the lock-out before an automated shoe deals
ROUNDS = 3
SEED = 11


def _table(table_id: str, prefix: str, bus_seats: list[int] | None = None) -> TableConfig:
    """The shipped bus config under this test's table id and topic prefix; `bus_seats`: only those seats on the
    line, the others on stations of their own (a config may have both); [] for none on it."""
    data = read_config(BUS_CONFIG)
    data["table_id"] = table_id
    data["mqtt"]["prefix"] = prefix
    devices = data["devices"]
    for name in ("shuffler", "shoe", "dealer_panel", "wager_bus", "progressive_sign"):
        devices[name]["port"] = "simulated"
    if bus_seats is not None:
        devices["wager_bus"]["stations"] = [s for s in devices["wager_bus"]["stations"] if s["seat"] in bus_seats]
        own = [seat for seat in range(1, 8) if seat not in bus_seats]
        devices["wager_stations"] = [
            {"driver": "reference-wager-station", "port": "simulated", "seat": seat} for seat in own
        ]
        if not bus_seats:
            del devices["wager_bus"]
    return parse_config(data, "test config")


class Seen:
    """What a play() run leaves to assert: its journaled events and its simulated devices."""

    def __init__(self) -> None:
        self.events: list[JournaledEvent] = []
        self.sims: SimulatedTable | None = None

    def on_sims(self, sims: SimulatedTable) -> None:
        self.sims = sims

    @property
    def bus(self) -> WagerBusSim:
        assert self.sims is not None and self.sims.bus is not None
        return self.sims.bus


async def _play(config: TableConfig, broker: str, journal: Path) -> tuple[int, Seen]:
    seen = Seen()
    played = await play(
        config,
        rounds=ROUNDS,
        broker=broker,
        seed=SEED,
        journal_path=journal,
        on_event=seen.events.append,
        on_sims=seen.on_sims,
    )
    return played, seen


def _lock_commands(bus: WagerBusSim) -> list[tuple[Kind, int, dict[str, Any]]]:
    """(kind, ADDR, message) of every lock command the host put on the line, in order."""
    out: list[tuple[Kind, int, dict[str, Any]]] = []
    for frame in bus.heard:
        if frame.kind in (Kind.DATA, Kind.GROUP) and not frame.from_device:
            message = decode_message(frame.payload)
            if message.get("cmd") == "lock":
                out.append((frame.kind, frame.address, message))
    return out


def _one_group_a_round(bus: WagerBusSim, group: tuple[Kind, int, dict[str, Any]]) -> None:
    """Each round's "no more bets" locked the line with one GROUP frame, and so did the table as it closed
    (controller/engine/boundary.py, closed): that last one may still be queued when the simulators stop."""
    locks = _lock_commands(bus)
    groups = [lock for lock in locks if lock[0] == Kind.GROUP]
    assert groups[:ROUNDS] == [group] * ROUNDS
    assert groups[ROUNDS:] in ([], [group])
    # After each, once its window closed, a lock of its own to each station its slot pair alone counted locked (its
    # answer proves the pair, docs/protocol.md section 13), and nothing else: all of them before the next round's lock,
    # at most one each after the last (they may not all be out when the simulators stop).
    after: list[list[int]] = []
    for kind, address, message in locks:
        if kind == Kind.GROUP:
            after.append([])
        else:
            assert message == {"cmd": "lock"} and after, locks
            after[-1].append(address)
    named = sorted(group[2]["stations"])
    assert [sorted(proofs) for proofs in after[: ROUNDS - 1]] == [named] * (ROUNDS - 1)
    assert all(len(set(proofs)) == len(proofs) and set(proofs) <= set(named) for proofs in after[ROUNDS - 1 :])


def _settlements(events: list[JournaledEvent]) -> list[tuple[str | None, str, dict[str, Any]]]:
    """Every wager, settlement and round total, in journal order: what the players staked, were paid and what was
    collected. Wagers accepted between two settlements are taken in seat order: the players wager at once, and on
    lines of their own the controller reads them in the order the seven ptys happen to deliver (seat 7 before seat 6
    in some runs at load 9), where one line delivers them in the order the stations sent them."""
    out: list[tuple[str | None, str, dict[str, Any]]] = []
    wagers: list[tuple[str | None, str, dict[str, Any]]] = []
    for e in events:
        if e.type == "wager.accepted":
            wagers.append((e.round_id, e.type, dict(e.payload)))
            continue
        if e.type.endswith(".settled") or e.type in ("round.completed", "seat.folded"):
            out += sorted(wagers, key=lambda w: (int(w[2]["seat"]), str(w[2]["spot"])))
            wagers = []
            out.append((e.round_id, e.type, dict(e.payload)))
    return out + sorted(wagers, key=lambda w: (int(w[2]["seat"]), str(w[2]["spot"])))


async def test_demo_locks_the_bus_with_one_group_frame_a_round_and_settles_as_per_seat_stations(
    mosquitto: Mosquitto, subscribe: Subscribe, unique_id: str, tmp_path: Path
) -> None:
    sub = subscribe(f"e2e/{unique_id}/event")
    played, seen = await _play(_table(unique_id, "e2e"), mosquitto.url, tmp_path / "bus.sqlite")
    assert played == ROUNDS

    # The lock-out, as the journal has it: each round one "no more bets" and every one of the seven stations
    # confirmed (none unreachable), under 643a.10(a)(2).
    events = seen.events
    for kind in ("no_more_bets", "lockout.confirmed"):
        mine = [e for e in events if e.type == kind]
        assert [e.rule for e in mine] == [LOCK_RULE] * ROUNDS, kind
    assert [dict(e.payload) for e in events if e.type == "lockout.confirmed"] == [{"stations": 7}] * ROUNDS
    rounds = Counter(e.round_id for e in events if e.type == "round.completed")
    assert len(rounds) == ROUNDS and set(rounds.values()) == {1}
    accepted = {int(e.payload["seat"]) for e in events if e.type == "wager.accepted"}
    assert accepted and accepted <= set(ADDRESSES), "the players wagered through the stations on the line"

    # On the wire: every lock went out as one v3 GROUP frame to the broadcast address naming the seven addresses,
    # never a station's own lock frame; each station confirmed each one in its own slot (ascending address order).
    group = (Kind.GROUP, BROADCAST_ADDRESS, {"cmd": "lock", "stations": sorted(ADDRESSES.values())})
    _one_group_a_round(seen.bus, group)
    # The round's reopening and the opening's lights are GROUP frames too (v4, docs/protocol.md section 14): each
    # station confirmed every GROUP frame naming it, in its slot, in order, the locks of the rounds among them.
    groups = [f for f in seen.bus.heard if f.kind == Kind.GROUP]
    locks = [g for g in groups if decode_message(g.payload).get("cmd") == "lock"][:ROUNDS]
    assert {decode_message(g.payload)["cmd"] for g in groups} >= {"lock", "unlock"}
    for seat in sorted(ADDRESSES):
        station = seen.bus.stations[seat]
        address = station.address
        assert address == ADDRESSES[seat]
        naming = [(g, decode_message(g.payload)["stations"]) for g in groups]
        expected = [
            (named.index(address), slot_confirmation(address, g.seq)) for g, named in naming if address in named
        ]
        named_me = [g for g, named in naming if address in named]
        assert station.slot_history == expected[: len(station.slot_history)], seat
        assert len(station.slot_history) > named_me.index(locks[-1]), seat  # every round's lock confirmed in its slot

    # The same seed on the same table with a station per seat on lines of their own: the same wagers, settlements
    # and round totals, to the cent (how the stations are wired changes nothing the players are paid).
    twin_config = _table(f"{unique_id}-own", "e2e", [])
    twin_played, twin = await _play(twin_config, mosquitto.url, tmp_path / "own.sqlite")
    assert twin_played == ROUNDS and twin.sims is not None and twin.sims.bus is None
    assert _settlements(twin.events) == [
        (rid.replace(unique_id, f"{unique_id}-own") if rid else rid, kind, payload)
        for rid, kind, payload in _settlements(events)
    ]

    # What a supervisor sees on the broker: every journaled event, in order, none lost.
    await sub.await_until(lambda ms: any(b'"table.closed"' in m.payload for m in ms), what="table.closed")
    published = sorted({m.json()["seq"] for m in sub.messages})
    assert published == [e.seq for e in events]


async def test_a_line_with_some_seats_and_stations_of_their_own_for_the_rest(
    mosquitto: Mosquitto, unique_id: str, tmp_path: Path
) -> None:
    """Seats 1-5 on the line, 6 and 7 on lines of their own: the GROUP frame names the five; all seven lock."""
    config = _table(unique_id, "e2e", [1, 2, 3, 4, 5])
    played, seen = await _play(config, mosquitto.url, tmp_path / "j.sqlite")
    assert played == ROUNDS
    assert seen.sims is not None
    assert sorted(seen.bus.stations) == [1, 2, 3, 4, 5]
    assert {"wager_bus", "wager_station_6", "wager_station_7"} <= set(seen.sims.ports)
    assert not {"wager_station_1", "wager_station_5"} & set(seen.sims.ports)
    assert [dict(e.payload) for e in seen.events if e.type == "lockout.confirmed"] == [{"stations": 7}] * ROUNDS
    named = [ADDRESSES[seat] for seat in range(1, 6)]
    _one_group_a_round(seen.bus, (Kind.GROUP, BROADCAST_ADDRESS, {"cmd": "lock", "stations": named}))


def test_tablectl_demo_plays_the_shipped_bus_config(mosquitto: Mosquitto, subscribe: Subscribe, tmp_path: Path) -> None:
    """The user's path: `tablectl demo --config configs/let-it-ride-wager-bus.toml --rounds 2` as a process, its
    lines paced as a user's are (the suite runs the simulators unpaced): the bus at the config's 115200 baud, so the
    stations' slot confirmations take their real byte times. (Whether each came in its window is not asserted here:
    under load the driver may lock a late one on its own, which is correct; the unpaced test above checks the wire.)"""
    table_id = load_config(BUS_CONFIG).table_id
    env = {k: v for k, v in os.environ.items() if k not in ("TABLECTL_SIM_PACING", "TABLECTL_SIM_BAUD")}
    # The shipped config under a prefix of its own: the suite's broker is shared (no other run's retained anchor).
    prefix = fresh_id("bus")
    config = table_config(tmp_path, table_id, prefix, name=BUS_CONFIG.name)
    sub = subscribe(f"{prefix}/{table_id}/event")
    proc = subprocess.run(
        [
            *(sys.executable, "-m", "controller.cli", "demo", "--config", str(config)),
            *("--rounds", "2", "--seed", "5", "--pace", "0", "--broker", mosquitto.url),
            *("--journal", str(tmp_path / "j.sqlite")),
        ],
        capture_output=True,
        text=True,
        timeout=180,
        stdin=subprocess.DEVNULL,
        env=env,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "2 round(s) played" in proc.stderr
    sub.wait_until(lambda ms: any(b'"table.closed"' in m.payload for m in ms), what="table.closed")
    events = sorted({m.json()["seq"]: m.json() for m in sub.messages}.values(), key=lambda e: e["seq"])
    locked = [(e["rule"], e["payload"]) for e in events if e["type"] == "lockout.confirmed"]
    assert locked == [(LOCK_RULE, {"stations": 7})] * 2
    assert [e["type"] for e in events].count("round.completed") == 2


def test_a_bus_naming_a_seat_the_game_lacks_is_refused_with_the_fix(tmp_path: Path) -> None:
    data = read_config(BUS_CONFIG)
    data["devices"]["wager_bus"]["stations"].append({"seat": 8, "address": 18})
    with pytest.raises(ConfigError) as refused:
        parse_config(data, "bus.toml")
    assert "devices.wager_bus.stations[7] names seat 8, which the game does not have" in str(refused.value)
    bad = tmp_path / "bus.toml"
    text = BUS_CONFIG.read_text().replace("{ seat = 7, address = 17 },", "{ seat = 7, address = 17 }, { seat = 8 },")
    bad.write_text(text)
    proc = subprocess.run(
        [sys.executable, "-m", "controller.cli", "demo", "--config", str(bad), "--rounds", "1"],
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
        check=False,
    )
    assert proc.returncode == 2, proc.stderr
    assert "names seat 8, which the game does not have" in proc.stderr
    assert "exactly one station, in wager_stations or on the wager_bus" in proc.stderr
