"""The winner's seat light in the pure engine (issue 7 item 3, 655a.11(i)(1)(ii), 643a.11(f)(3)(iii)(B)): lit at
the hit, put out at the validation, lit again for a station that comes back and set right after a restart, and
every station's confirmation journaled beside the hit it shows. (The pty simulators and the real drivers are in
tests/drivers/test_seat_light_drivers.py and tests/e2e/test_seat_light_e2e.py.)"""

from __future__ import annotations

from pathlib import Path
from typing import TypedDict

from controller.engine.commands import LightSeat
from controller.engine.inputs import Recover, Signed, ValidateJackpot
from controller.engine.state import Phase
from controller.games.registry import SPECS
from drivers.interfaces import DeviceOffline, DeviceOnline, SeatLight
from tests.engine.conftest import Deck, MakeTable, PureTable


class ProgressiveRules(TypedDict):
    progressive_paytable: str
    progressive_wager_cents: int


RULES: ProgressiveRules = {"progressive_paytable": "C", "progressive_wager_cents": 100}
# Seats 1 and 3 both make a straight flush in hearts with the community 9h Th Jh: two major hits in one round.
TOP = ["Qh", "Kh", "7h", "8h", "9h", "Th", "Jh"]


def signed(inp: ValidateJackpot) -> Signed:
    return Signed(inp, f"cmd-{inp.hit}", "validate_jackpot", inp.key_id, inp.role)


def jackpot_table(make_table: MakeTable, deck: Deck) -> PureTable:
    t = make_table([deck(TOP)], **RULES)
    for seat in (1, 3):
        t.wager(seat, "ante", 500)
        t.wager(seat, "progressive", 100)
    t.press("no_more_bets")
    for street in ("street_3", "street_4", "street_5"):
        for seat in (1, 3):
            t.wager(seat, street, 500)
    assert t.state.phase is Phase.JACKPOT
    return t


def lights(t: PureTable, since: int = 0) -> list[tuple[str, int | None]]:
    return [(c.verb, c.seat) for c in t.commands[since:] if isinstance(c, LightSeat)]


def test_hit_lights_the_winner_and_validation_puts_it_out(make_table: MakeTable, deck: Deck) -> None:
    t = jackpot_table(make_table, deck)
    assert lights(t) == [("light_on", 3), ("light_on", 1)]
    hits = {e.payload["seat"]: e.payload["hit"] for e in t.events if e.type == "progressive.hit"}
    mark = len(t.commands)
    t.feed(signed(ValidateJackpot(3, "major", hits[3], "floor-ann", "floorperson")))
    assert lights(t, mark) == [("light_off", 3)]  # seat 1 still awaits: its light stays lit


def test_confirmations_are_journaled_with_the_hits_they_show(make_table: MakeTable, deck: Deck) -> None:
    t = jackpot_table(make_table, deck)
    hits = {e.payload["seat"]: e.payload["hit"] for e in t.events if e.type == "progressive.hit"}
    [ev] = t.feed(SeatLight("wager_station_3", seat=3, on=True))
    assert (ev.type, ev.rule) == ("progressive.light", "655a.11(i)(1)(ii)")
    assert ev.payload == {"seat": 3, "on": True, "device_id": "wager_station_3", "hits": [hits[3]], "awaiting": True}
    # A light reported out while its hit awaits validation says what to do; nothing is sent again (a lamp that
    # cannot light would otherwise be asked forever).
    mark = len(t.commands)
    [ev] = t.feed(SeatLight("wager_station_1", seat=1, on=False))
    assert ev.payload["awaiting"] is True and not ev.payload["on"] and "lamp" in ev.payload["remedy"]
    assert lights(t, mark) == []
    t.feed(signed(ValidateJackpot(3, "major", hits[3], "floor-ann", "floorperson")))
    [ev] = t.feed(SeatLight("wager_station_3", seat=3, on=False))
    assert ev.payload["hits"] == [] and ev.payload["awaiting"] is False and "remedy" not in ev.payload


def test_a_station_that_comes_back_is_lit_again_while_its_hit_awaits(make_table: MakeTable, deck: Deck) -> None:
    t = jackpot_table(make_table, deck)
    hits = {e.payload["seat"]: e.payload["hit"] for e in t.events if e.type == "progressive.hit"}
    t.feed(DeviceOffline("wager_station_1", reason="unplugged"))
    mark = len(t.commands)
    t.feed(DeviceOnline("wager_station_1", {}))
    assert lights(t, mark) == [("light_on", 1)]
    # Seat 2 has no hit: its return lights nothing.
    t.feed(DeviceOffline("wager_station_2", reason="unplugged"))
    mark = len(t.commands)
    t.feed(DeviceOnline("wager_station_2", {}))
    assert lights(t, mark) == []
    # Once seat 1's hit is validated, its return lights nothing either.
    t.feed(signed(ValidateJackpot(1, "major", hits[1], "floor-ann", "floorperson")))
    t.feed(DeviceOffline("wager_station_1", reason="unplugged"))
    mark = len(t.commands)
    t.feed(DeviceOnline("wager_station_1", {}))
    assert lights(t, mark) == []


def test_recovery_tells_every_station_what_its_light_must_show(make_table: MakeTable, deck: Deck) -> None:
    t = jackpot_table(make_table, deck)
    seats = t.engine.rules.seats
    mark = len(t.commands)
    events = t.feed(Recover())
    assert events[0].type == "table.recovered" and events[0].payload["policy"] == "await_jackpot"
    assert sorted(lights(t, mark), key=lambda x: x[1] or 0) == [
        ("light_on" if n in (1, 3) else "light_off", n) for n in range(1, seats + 1)
    ]


def test_recovery_after_the_validation_puts_a_stale_light_out(make_table: MakeTable, deck: Deck) -> None:
    # The crash came after the validation was journaled but before its light_off left the process.
    t = jackpot_table(make_table, deck)
    for e in [e for e in t.events if e.type == "progressive.hit"]:
        t.feed(signed(ValidateJackpot(e.payload["seat"], "major", e.payload["hit"], "floor-ann", "floorperson")))
    assert t.state.pending_hits == []
    mark = len(t.commands)
    t.feed(Recover())
    assert {v for v, _ in lights(t, mark)} == {"light_off"}
    assert {s for _, s in lights(t, mark)} == set(range(1, t.engine.rules.seats + 1))


def test_643a_light_rules_name_the_wager() -> None:
    assert SPECS["643a"].light_rule("643a.11(f)(3)(iii)(D)") == "643a.11(f)(3)(iii)(B)"
    assert SPECS["643a"].light_rule("643a.11(f)(3)(iv)(D)") == "643a.11(f)(3)(iv)(B)"
    assert SPECS["655a"].light_rule("655a.11(i)(1)(iv)") == "655a.11(i)(1)(ii)"


class LightlessStation:
    """A third-party wager station driver written before seat lights: lock and unlock only (a real class of the kind
    a plugin ships, not a mock; it drives no hardware because none is attached here)."""

    def __init__(self, seat: int) -> None:
        self.device_id, self.seat, self.locks = f"wager_station_{seat}", seat, 0

    async def start(self, sink: object) -> None:
        pass

    async def stop(self) -> None:
        pass

    async def lock(self) -> None:
        self.locks += 1

    async def unlock(self) -> None:
        pass


async def test_service_skips_a_station_without_a_light_and_says_so_once(tmp_path: Path) -> None:
    import structlog

    from controller.config.table import demo_config
    from controller.engine.commands import LockSeat
    from controller.shell.service import TableService
    from controller.store.journal import Journal

    config = demo_config()
    station = LightlessStation(2)
    service = TableService(
        config, {station.device_id: station}, Journal(tmp_path / "j.sqlite", config.table_id, boot_id="b1")
    )
    with structlog.testing.capture_logs() as logs:
        for command in (LightSeat(2, on=True), LightSeat(2, on=False), LockSeat(2), LightSeat(2, on=True)):
            await service._execute([command])
    unlit = [entry for entry in logs if "no seat light" in entry["event"]]
    assert len(unlit) == 1 and unlit[0]["device"] == "wager_station_2"
    assert station.locks == 1  # the other commands still reach it
    assert service._inputs.empty()  # no fault was raised for the missing light
