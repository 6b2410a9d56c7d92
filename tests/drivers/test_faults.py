"""Every simulator fault, injected through the fault API, reaches the driver's sink as the right device event.

All through real pseudo-terminals: the simulators on the master side, the reference drivers on the slave.
"""

from __future__ import annotations

import asyncio
import os
import random
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from drivers.interfaces import (
    ButtonPressed,
    DeviceFault,
    DeviceOffline,
    DeviceOnline,
    FaceUpCard,
    LockAcknowledged,
    ShuffleCompleted,
    StackDispensed,
    StubRemoved,
    WagerDetected,
)
from drivers.reference.wager_station import ReferenceWagerStation
from drivers.sim.faults import Fault, FaultKind, Trigger
from drivers.sim.script import ScriptedFault, SimScript, SimScriptError, load_sim_script
from drivers.sim.shuffler import FRESH_DECK
from drivers.sim.table import SimulatedTable
from tests.drivers.conftest import DriverFactory, Recorder


def _name_exists(path: str) -> bool:
    return os.path.lexists(path)


async def _shuffler(table: SimulatedTable, start_driver: DriverFactory, **settings: Any) -> tuple[Any, Recorder]:
    driver, events = await start_driver("shuffler", "reference-shuffler", table.ports["shuffler"], **settings)
    await events.next(DeviceOnline)
    return driver, events


async def _shoe(table: SimulatedTable, start_driver: DriverFactory, **settings: Any) -> tuple[Any, Recorder]:
    driver, events = await start_driver("shoe", "reference-shoe", table.ports["shoe"], **settings)
    await events.next(DeviceOnline)
    return driver, events


# --- shuffler ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", [FaultKind.JAM, FaultKind.STOPPED, FaultKind.INCOMPLETE])
async def test_shuffler_failures_become_faults_and_the_reshuffle_works(
    table: SimulatedTable, start_driver: DriverFactory, kind: FaultKind
) -> None:
    deck = list(reversed(FRESH_DECK))
    table.shuffler.script_decks([deck])
    shuffler, events = await _shuffler(table, start_driver)
    await table.shuffler.inject(Fault(kind))

    await shuffler.shuffle()
    fault = await events.next(DeviceFault)
    assert (fault.device_id, fault.code) == ("shuffler", kind.value) and fault.detail
    assert table.shoe.cards == []  # nothing reached the shoe

    await shuffler.shuffle()  # one-shot: the reshuffle completes, with the deck the failed shuffle kept
    assert (await events.next(ShuffleCompleted)).card_count == 52
    assert table.shoe.cards == deck


@pytest.mark.parametrize(("kind", "count"), [(FaultKind.COUNT_51, 51), (FaultKind.COUNT_53, 53)])
async def test_shuffler_miscount(
    table: SimulatedTable, start_driver: DriverFactory, kind: FaultKind, count: int
) -> None:
    shuffler, events = await _shuffler(table, start_driver)
    await table.shuffler.inject(Fault(kind))
    await shuffler.shuffle()
    assert (await events.next(ShuffleCompleted)).card_count == count
    loaded = table.shoe.cards
    assert len(loaded) == count
    if count == 53:
        assert len(set(loaded)) == 52  # one card twice
    else:
        assert set(loaded) < set(FRESH_DECK)


async def test_triggered_fault_lands_on_the_counted_shuffle(table: SimulatedTable, start_driver: DriverFactory) -> None:
    shuffler, events = await _shuffler(table, start_driver)
    await table.shuffler.inject(Fault(FaultKind.JAM), "shuffle 2")
    await shuffler.shuffle()
    assert (await events.next(ShuffleCompleted)).card_count == 52
    await shuffler.shuffle()
    assert (await events.next(DeviceFault)).code == "jam"
    await shuffler.shuffle()
    assert (await events.next(ShuffleCompleted)).card_count == 52


async def test_persistent_fault_repeats(table: SimulatedTable, start_driver: DriverFactory) -> None:
    shuffler, events = await _shuffler(table, start_driver)
    await table.shuffler.inject(Fault(FaultKind.COUNT_51, persistent=True))
    for _ in range(2):
        await shuffler.shuffle()
        assert (await events.next(ShuffleCompleted)).card_count == 51
    table.shuffler.clear_faults()
    await shuffler.shuffle()
    assert (await events.next(ShuffleCompleted)).card_count == 52


# --- shoe -------------------------------------------------------------------------------------------


async def test_face_up_card_then_a_full_stack(table: SimulatedTable, start_driver: DriverFactory) -> None:
    shoe, events = await _shoe(table, start_driver)
    table.shoe.load(["As", "Kd", "2c", "Th"])
    await table.shoe.inject(Fault(FaultKind.FACE_UP))
    await shoe.dispense_stack(2)
    assert await events.next(FaceUpCard) == FaceUpCard("shoe", "As")
    assert (await events.next(StackDispensed)).cards == ("Kd", "2c")
    assert [type(e) for e in events.seen if not isinstance(e, DeviceOnline)] == [FaceUpCard, StackDispensed]
    await shoe.dispense_stack(1)
    assert (await events.next(StackDispensed)).cards == ("Th",)


async def test_duplicate_card_is_dealt_twice(table: SimulatedTable, start_driver: DriverFactory) -> None:
    shoe, events = await _shoe(table, start_driver)
    await table.shoe.inject(Fault(FaultKind.DUPLICATE))  # applies to the next load, as the shuffler's
    table.shoe.load(["As", "Kd", "2c", "Th"])
    await shoe.dispense_stack(2)
    assert (await events.next(StackDispensed)).cards == ("As", "As")
    await shoe.remove_stub()
    assert (await events.next(StubRemoved)).cards == ("2c", "Th")


async def test_foreign_card_is_a_foreign_card_fault(table: SimulatedTable, start_driver: DriverFactory) -> None:
    shoe, events = await _shoe(table, start_driver)
    table.shoe.load(["As", "Kd", "2c"])
    await table.shoe.inject(Fault(FaultKind.FOREIGN, card="joker"))
    await shoe.dispense_stack(2)
    fault = await events.next(DeviceFault)
    assert fault.code == "foreign_card" and "'joker'" in fault.detail and "position 1" in fault.detail
    assert "As" not in fault.detail  # the real cards stay in the table PC
    assert not any(isinstance(e, StackDispensed) for e in events.seen)
    await shoe.dispense_stack(1)
    assert (await events.next(StackDispensed)).cards == ("Kd",)


async def test_shoe_jam_dispenses_nothing(table: SimulatedTable, start_driver: DriverFactory) -> None:
    shoe, events = await _shoe(table, start_driver)
    table.shoe.load(["As", "Kd", "2c"])
    await table.shoe.inject(Fault(FaultKind.JAM), Trigger("dispense", 2))
    await shoe.dispense_stack(1)
    assert (await events.next(StackDispensed)).cards == ("As",)
    await shoe.dispense_stack(1)
    assert (await events.next(DeviceFault)).code == "jam"
    assert table.shoe.cards == ["Kd", "2c"]


async def test_shuffler_cannot_have_shoe_faults(table: SimulatedTable) -> None:
    with pytest.raises(ValueError, match="face_up"):
        await table.shuffler.inject(Fault(FaultKind.FACE_UP))
    with pytest.raises(ValueError, match="dispense"):
        await table.shuffler.inject(Fault(FaultKind.JAM), "dispense 1")


# --- every device -----------------------------------------------------------------------------------


async def test_unplug_then_replug_on_the_same_path(table: SimulatedTable, start_driver: DriverFactory) -> None:
    port = table.ports["dealer_panel"]
    _panel, events = await start_driver("dealer_panel", "reference-dealer-panel", port)
    await events.next(DeviceOnline)
    await table.panel.inject(Fault(FaultKind.UNPLUG))
    assert (await events.next(DeviceOffline)).reason
    assert not _name_exists(port)  # the stable name went with the device, as udev does
    await table.panel.inject(Fault(FaultKind.REPLUG))
    assert table.panel.port == port
    assert (await events.next(DeviceOnline)).identity["model"] == "SIM-DEALER-PANEL"
    await table.panel.press("fold")
    assert await events.next(ButtonPressed) == ButtonPressed("dealer_panel", "fold")


async def test_garbage_then_later_events_still_arrive(table: SimulatedTable, start_driver: DriverFactory) -> None:
    shoe, events = await _shoe(table, start_driver)
    table.shoe.load(["As", "Kd"])
    await table.shoe.inject(Fault(FaultKind.GARBAGE))
    await shoe.dispense_stack(2)
    assert (await events.next(StackDispensed)).cards == ("As", "Kd")
    # The noise is reported once the framer has given up on the garbage: before or just after the stack.
    noise = [e for e in events.seen if isinstance(e, DeviceFault)] or [await events.next(DeviceFault)]
    assert [e.code for e in noise] == ["line_noise"]


async def test_slow_reply_within_the_retry_budget_still_succeeds(
    table: SimulatedTable, start_driver: DriverFactory
) -> None:
    # Driver: 100 ms per attempt, 4 attempts. ACKs held 150 ms arrive during the second attempt.
    shuffler, events = await _shuffler(table, start_driver, ack_timeout=0.1, retries=3)
    await table.shuffler.inject(Fault(FaultKind.SLOW_REPLY, delay_ms=150))
    assert await shuffler.command({"cmd": "shuffle"})
    assert (await events.next(ShuffleCompleted)).card_count == 52
    assert not any(isinstance(e, DeviceFault) for e in events.seen)


async def test_slow_reply_beyond_the_retry_budget_is_a_timeout(
    table: SimulatedTable, start_driver: DriverFactory
) -> None:
    shuffler, events = await _shuffler(table, start_driver, ack_timeout=0.05, retries=1, heartbeat_interval=0)
    await table.shuffler.inject(Fault(FaultKind.SLOW_REPLY, delay_ms=400))
    await shuffler.shuffle()
    fault = await events.next(DeviceFault)
    assert fault.code == "timeout" and "shuffle" in fault.detail


async def test_no_reply_times_out_then_heartbeat_takes_it_offline(
    table: SimulatedTable, start_driver: DriverFactory
) -> None:
    shuffler, events = await _shuffler(table, start_driver, heartbeat_interval=0.2)
    await table.shuffler.inject(Fault(FaultKind.NO_REPLY))
    await shuffler.shuffle()
    assert (await events.next(DeviceFault)).code == "timeout"
    assert "heartbeat" in (await events.next(DeviceOffline)).reason


async def test_unplug_triggered_by_a_command_answers_nothing(
    table: SimulatedTable, start_driver: DriverFactory
) -> None:
    shoe, events = await _shoe(table, start_driver)
    table.shoe.load(["As", "Kd"])
    await table.shoe.inject(Fault(FaultKind.UNPLUG), "dispense 1")
    await shoe.dispense_stack(1)
    await events.next(DeviceOffline)
    assert not any(isinstance(e, StackDispensed) for e in events.seen)


# --- wager station ----------------------------------------------------------------------------------


async def test_sensor_chatter_is_one_wager_with_the_final_amount(
    table: SimulatedTable, start_driver: DriverFactory
) -> None:
    sim = table.stations[1]
    station, events = await start_driver("wager_station_1", "reference-wager-station", sim.port, seat=1)
    await events.next(DeviceOnline)
    readings, _deadlines = watch_readings(station)
    await sim.inject(Fault(FaultKind.CHATTER))
    await sim.place("ante", 500)
    await station.lock()  # a later event: anything still held back would have to come out before it
    await events.next(LockAcknowledged)
    wagers = [e for e in events.seen if isinstance(e, WagerDetected)]
    # The five readings are one wager when they arrive within the debounce of the first, as they do on a quick machine;
    # the window is not extended (a wager is never held longer), so a stall between them can split them: one wager per
    # window at most, the last with the final amount.
    assert len(readings) == 5 and 1 <= len(wagers) <= windows_of(readings, station._debounce), (readings, wagers)
    assert wagers[-1] == WagerDetected("wager_station_1", 1, "ante", 500)
    assert all(w.amount_cents in (0, 500) for w in wagers)


def watch_readings(station: ReferenceWagerStation) -> tuple[list[float], list[float]]:
    """The loop's clock at each wager reading the station's driver takes in, and the deadline of its spot's debounce
    timer just after it."""
    loop, readings, deadlines, take = asyncio.get_running_loop(), list[float](), list[float](), station._wager

    def on_reading(message: Mapping[str, Any]) -> WagerDetected | None:
        readings.append(loop.time())
        held = take(message)
        deadlines.append(station._held[str(message["spot"])][1].when())
        return held

    station._wager = on_reading  # type: ignore[method-assign]
    station._translators = None  # built at the first message, with the reader then in place
    return readings, deadlines


def windows_of(readings: list[float], debounce: float) -> int:
    """The most debounce windows `readings` can open: a window opens at a reading with none open and closes a debounce
    later (a late timer closes it later still, which can only merge windows)."""
    windows, opened = 0, float("-inf")
    for at in readings:
        if at - opened >= debounce:
            windows, opened = windows + 1, at
    return windows


async def test_single_reading_arrives_within_the_debounce(table: SimulatedTable, start_driver: DriverFactory) -> None:
    sim = table.stations[2]
    station, events = await start_driver("wager_station_2", "reference-wager-station", sim.port, seat=2, debounce_ms=30)
    await events.next(DeviceOnline)
    readings, deadlines = watch_readings(station)
    await sim.place("street_3", 1000)
    assert (await events.next(WagerDetected)).amount_cents == 1000
    # Reported by the reading's own timer, due one debounce after it arrived and not extended. Not timed from the
    # test: when the timer runs is the machine's (a stall of a loaded one delays it), its deadline the driver's.
    assert len(readings) == 1 and deadlines[0] - readings[0] == pytest.approx(0.03, abs=0.001), (readings, deadlines)


async def test_wager_before_lock_is_reported_before_the_lock(
    table: SimulatedTable, start_driver: DriverFactory
) -> None:
    sim = table.stations[1]
    station, events = await start_driver(
        "wager_station_1", "reference-wager-station", sim.port, seat=1, debounce_ms=500
    )
    await events.next(DeviceOnline)
    await sim.place("ante", 500)
    await station.lock()
    await events.next(LockAcknowledged)
    kinds = [type(e) for e in events.seen if not isinstance(e, DeviceOnline)]
    assert kinds == [WagerDetected, LockAcknowledged]


async def test_debounce_off_reports_every_reading(table: SimulatedTable, start_driver: DriverFactory) -> None:
    sim = table.stations[1]
    _station, events = await start_driver("wager_station_1", "reference-wager-station", sim.port, seat=1, debounce_ms=0)
    await events.next(DeviceOnline)
    await sim.inject(Fault(FaultKind.CHATTER))
    await sim.place("ante", 500)
    amounts = [(await events.next(WagerDetected)).amount_cents for _ in range(5)]
    assert amounts == [500, 0, 500, 0, 500]


# --- sim scripts ------------------------------------------------------------------------------------

SCRIPT = """
decks = ["As Kd Qh", ["2c", "3c"]]

[[faults]]
device = "shuffler"
fault = "jam"
when = "shuffle 1"

[[faults]]
device = "wager_station_2"
fault = "slow_reply"
delay_ms = 20

[[faults]]
device = "shoe"
fault = "foreign"
card = "Jk"
when = "dispense 3"
persistent = true
"""


def test_sim_script_loads(tmp_path: Path) -> None:
    path = tmp_path / "faults.toml"
    path.write_text(SCRIPT)
    script = load_sim_script(path)
    assert script.decks == (("As", "Kd", "Qh"), ("2c", "3c"))
    assert script.faults == (
        ScriptedFault("shuffler", Fault(FaultKind.JAM), Trigger("shuffle", 1)),
        ScriptedFault("wager_station_2", Fault(FaultKind.SLOW_REPLY, delay_ms=20), None),
        ScriptedFault("shoe", Fault(FaultKind.FOREIGN, persistent=True, card="Jk"), Trigger("dispense", 3)),
    )
    json_path = tmp_path / "faults.json"
    json_path.write_text('{"faults": [{"device": "shoe", "fault": "face_up", "when": "dispense 1"}]}')
    assert load_sim_script(json_path) == SimScript(
        (), (ScriptedFault("shoe", Fault(FaultKind.FACE_UP), Trigger("dispense", 1)),)
    )


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ('decks = [["As", "Zz"]]', "decks[0][1]: 'Zz' is not a card"),
        ('[[faults]]\ndevice = "toaster"\nfault = "jam"', "faults[0]: device='toaster'"),
        ('[[faults]]\ndevice = "shoe"\nfault = "melt"', "faults[0]: fault='melt' is not one of"),
        ('[[faults]]\ndevice = "shoe"\nfault = "count_51"', "a shoe cannot have fault 'count_51'"),
        ('[[faults]]\ndevice = "shuffler"\nfault = "jam"\nwhen = "dispense 1"', "never sees 'dispense'"),
        ('[[faults]]\ndevice = "shuffler"\nfault = "jam"\nwhen = "soon"', "when='soon'"),
        ('[[faults]]\ndevice = "shuffler"\nfault = "jam"\nwhen = "shuffle 0"', "counts from 1"),
        ('[[faults]]\ndevice = "shoe"\nfault = "slow_reply"', "slow_reply needs delay_ms"),
        ('[[faults]]\ndevice = "shoe"\nfault = "jam"\ncolour = 1', "unknown key(s) colour"),
        ("decks = [", "not valid TOML"),
        ("seats = 3", "unknown key(s) seats"),
    ],
)
def test_bad_sim_script_names_the_problem(tmp_path: Path, text: str, problem: str) -> None:
    path = tmp_path / "bad.toml"
    path.write_text(text)
    with pytest.raises(SimScriptError) as caught:
        load_sim_script(path)
    assert str(path) in str(caught.value) and problem in str(caught.value)


def test_missing_sim_script(tmp_path: Path) -> None:
    with pytest.raises(SimScriptError, match="cannot read"):
        load_sim_script(tmp_path / "absent.toml")


async def test_apply_script_to_a_table(rng: random.Random, start_driver: DriverFactory) -> None:
    script = SimScript(
        decks=(tuple(reversed(FRESH_DECK)),),
        faults=(ScriptedFault("shuffler", Fault(FaultKind.COUNT_53), Trigger("shuffle", 1)),),
    )
    async with SimulatedTable(seats=2, rng=rng) as table:
        await table.apply_script(script)
        shuffler, events = await _shuffler(table, start_driver)
        await shuffler.shuffle()
        assert (await events.next(ShuffleCompleted)).card_count == 53
        assert table.shoe.cards[:52] == list(reversed(FRESH_DECK))
        await shuffler.stop()
    with pytest.raises(KeyError, match="wager_station_9"):
        async with SimulatedTable(seats=2, rng=rng) as table:
            await table.apply_script(SimScript(faults=(ScriptedFault("wager_station_9", Fault(FaultKind.UNPLUG)),)))
