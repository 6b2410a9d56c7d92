"""Device commands as typed values (issue 11): the engine puts into each command what the device needs (the sign's
meters as the step leaves them), and the shell's CommandRunner carries each out through the device's protocol, a
device of the wrong kind or a missing one becoming a DeviceFault fed back to the engine."""

from __future__ import annotations

from collections.abc import Mapping

from controller.engine.commands import DeviceCommand, LockSeat, ShowLevels, ShowWin, Shuffle
from controller.engine.context import Effect
from controller.engine.inputs import Input, Signed, ValidateJackpot
from controller.engine.state import TableState
from controller.shell.device_commands import CommandRunner
from drivers.interfaces import DeviceEvent, DeviceFault, EventSink
from tests.engine.conftest import Deck, MakeTable

RULES = {"progressive_paytable": "C", "progressive_wager_cents": 100}


def test_every_show_levels_carries_the_meters_its_step_leaves(make_table: MakeTable, deck: Deck) -> None:
    t = make_table([deck(["Qh", "Kh", "7h", "8h", "9h", "Th", "Jh"])], "automated_shoe", **RULES)
    steps: list[tuple[TableState, list[Effect]]] = []
    step = t.engine.step

    def recording(state: TableState, inp: Input) -> tuple[TableState, list[Effect]]:
        new, effects = step(state, inp)
        steps.append((new, effects))
        return new, effects

    t.engine.step = recording  # type: ignore[method-assign]  # a recording stand-in for the engine's step
    for seat in (1, 3):
        t.wager(seat, "ante", 500)
        t.wager(seat, "progressive", 100)
    t.press("no_more_bets")
    for street in ("street_3", "street_4", "street_5"):
        for seat in (1, 3):
            t.wager(seat, street, 500)
    for hit in [e.payload for e in t.events if e.type == "progressive.hit"]:
        v = ValidateJackpot(hit["seat"], hit["level"], hit["hit"], "floor-ann", "floorperson")
        t.feed(Signed(v, f"cmd-{v.hit}", "validate_jackpot", v.key_id, v.role))
    shown = [(state, c) for state, effects in steps for c in effects if isinstance(c, ShowLevels)]
    # The contributions at the lock-out and the hits at settlement each told the sign.
    assert len(shown) >= 2
    for state, c in shown:
        assert state.meters is not None and dict(c.levels) == state.meters.display()
    assert [c for _, effects in steps for c in effects if isinstance(c, ShowWin)] == [
        ShowWin("major", 100_014, 3),
        ShowWin("major", 100_000, 1),
    ]


class Station:
    """A wager station driver with lock and unlock only (no seat light, no shuffle)."""

    def __init__(self, seat: int) -> None:
        self.device_id, self.seat, self.calls = f"wager_station_{seat}", seat, list[str]()

    async def start(self, sink: EventSink) -> None:
        pass

    async def stop(self) -> None:
        pass

    async def lock(self) -> None:
        self.calls.append("lock")

    async def unlock(self) -> None:
        self.calls.append("unlock")


class Sign:
    """A progressive sign driver that keeps what it was told to show."""

    device_id = "progressive_sign"

    def __init__(self) -> None:
        self.shown: list[Mapping[str, int]] = []
        self.wins: list[tuple[str, int, int]] = []

    async def start(self, sink: EventSink) -> None:
        pass

    async def stop(self) -> None:
        pass

    async def show_levels(self, levels: Mapping[str, int]) -> None:
        self.shown.append(levels)

    async def show_win(self, level: str, amount_cents: int, seat: int) -> None:
        self.wins.append((level, amount_cents, seat))


async def run(devices: dict[str, object], commands: list[DeviceCommand]) -> list[DeviceEvent]:
    faults: list[DeviceEvent] = []
    await CommandRunner(devices, faults.append).execute(commands)  # type: ignore[arg-type]
    return faults


async def test_each_command_reaches_its_device_through_its_protocol() -> None:
    station, sign = Station(2), Sign()
    commands: list[DeviceCommand] = [
        LockSeat(2),
        ShowLevels({"major": 100_014}),
        ShowWin("major", 100_014, 2),
    ]
    assert await run({station.device_id: station, sign.device_id: sign}, commands) == []
    assert station.calls == ["lock"]
    assert sign.shown == [{"major": 100_014}] and sign.wins == [("major", 100_014, 2)]


async def test_a_device_of_the_wrong_kind_or_none_is_a_fault_and_no_sign_is_none() -> None:
    faults = await run({"shuffler": Station(1)}, [Shuffle(), LockSeat(4), ShowLevels({"major": 1})])
    assert [(f.device_id, f.code) for f in faults if isinstance(f, DeviceFault)] == [
        ("shuffler", "command_failed"),
        ("wager_station_4", "not_configured"),
    ]
    assert (
        isinstance(faults[0], DeviceFault)
        and faults[0].detail == "shuffle: Station is not a shuffler: it cannot shuffle"
    )
