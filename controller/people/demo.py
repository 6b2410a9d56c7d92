"""`tablectl demo`: a whole Mississippi Stud table on simulated devices, with a simulated dealer and players.

The same floor plays any chapter with a round engine (`tablectl simulate`, controller/people/simulate.py); the players
here are random (how they bet is their chapter's, controller.games) or scripted by a test, the floor itself is
controller.people.floor.

The controller side is the real one: drivers open real pseudo-terminals to the device simulators and
speak the reference serial protocol; the journal is a real SQLite file; events go to a real broker.
Only the people are simulated: players place chips on the wager stations' sensors and decide their
streets, the dealer presses the panel's buttons and keys counts on it (docs/protocol.md, "Dealer panel"), a
floorperson (on a progressive table) signs commands. They react to the controller's events, as people
react to what happens on the table.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
from collections.abc import Callable, Coroutine, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

import structlog

from controller.config.errors import ConfigError
from controller.config.table import Role, TableConfig
from controller.core.cards import STANDARD_DECK
from controller.core.events import JournaledEvent
from controller.core.invariant import present
from controller.games.registry import chapter_of
from controller.people.actions import ActionScript
from controller.people.floor import SimulatedFloor
from controller.people.optimal import OptimalPolicy, Players
from controller.people.policy import Answer, DecisionRequest, Policy, StubCount
from controller.people.signers import DemoSigners
from controller.people.stuck import TableStuck
from controller.shell.runner import build_devices, run_table
from controller.shell.service import TableService
from controller.shell.start_signals import StartSignals
from drivers.interfaces import WAGER_BUS_ID
from drivers.reference.wager_bus import ReferenceWagerBus
from drivers.registry import create_driver
from drivers.sim.faults import FaultKind
from drivers.sim.script import SimScript
from drivers.sim.table import SimBus, SimulatedTable

log = structlog.get_logger("tablectl.demo")


class SeededDraws:
    """The Magic Card and Lucky Bonus draws (655a.1) from a seeded generator, so `tablectl demo --seed N` plays the
    same bonuses every time. A demo's only: a live table draws from the CSPRNG (controller.core.rng)."""

    def __init__(self, rng: random.Random) -> None:
        self._rng = rng

    def magic_card(self) -> str:
        return self._rng.choice(STANDARD_DECK)

    def lucky_seat(self, seats: Sequence[int]) -> int:
        return self._rng.choice(list(seats))


class RandomPolicy:
    """Random but legal players, from a seeded generator."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng

    def wagers(self, round_no: int, config: TableConfig) -> dict[int, dict[str, int]]:
        # How players bet is the chapter's to say (its registry entry's demo players).
        return chapter_of(config.game).demo_wagers(config.game, self.rng)

    def decide(self, round_no: int, seat: int, request: DecisionRequest) -> Answer:
        if request.kind == "ride_or_withdraw":
            return "ride" if self.rng.random() < 0.7 else "withdraw"
        allowed = request.allowed
        # Mostly the smallest wager, sometimes more, sometimes a fold (the demo's players since 655a).
        weights = ([2, 5, 2, 1] + [1] * len(allowed))[: len(allowed) + 1]
        pick = self.rng.choices([None, *range(len(allowed))], weights=weights)[0]
        return None if pick is None else allowed[pick]

    def late_wager(self, round_no: int, config: TableConfig) -> tuple[int, str, int] | None:
        # Shown on the tables whose chapter's demo players try one (the demo's own table).
        return chapter_of(config.game).demo_late_wager(config.game, self.rng)

    def stub_count(self, round_no: int) -> StubCount | None:
        return None


def policy_for(players: Players, rng: random.Random, config: TableConfig) -> Policy:
    """The simulated players `--players` asks for: random, or betting as the random ones and deciding as the par
    analysis's optimal strategy says (NoStrategy for a chapter without one)."""
    betting = RandomPolicy(rng)
    return OptimalPolicy(betting, config) if players == "optimal" else betting


@dataclass
class ScriptedRound:
    wagers: dict[int, dict[str, int]]
    # (seat, decision key) -> an Answer. A missing entry folds a wager_or_fold decision and lets a
    # ride_or_withdraw bet ride: what a player does who does nothing.
    decisions: dict[tuple[int, str], Answer] = field(default_factory=dict)
    late: tuple[int, str, int] | None = None
    stub: StubCount | None = None  # None: the dealer counts the stub right


class ScriptedPolicy:
    """Players who do exactly what a test says, round by round."""

    def __init__(self, rounds: Sequence[ScriptedRound]) -> None:
        self.rounds = list(rounds)

    def _round(self, round_no: int) -> ScriptedRound:
        return self.rounds[(round_no - 1) % len(self.rounds)]

    def wagers(self, round_no: int, config: TableConfig) -> dict[int, dict[str, int]]:
        return self._round(round_no).wagers

    def decide(self, round_no: int, seat: int, request: DecisionRequest) -> Answer:
        default = "ride" if request.kind == "ride_or_withdraw" else "fold"
        return self._round(round_no).decisions.get((seat, request.decision), default)

    def late_wager(self, round_no: int, config: TableConfig) -> tuple[int, str, int] | None:
        return self._round(round_no).late

    def stub_count(self, round_no: int) -> StubCount | None:
        return self._round(round_no).stub


def simulator_settings(config: TableConfig, pace: float, sim_script: SimScript | None = None) -> TableConfig:
    """The config the drivers get on the simulated table: at pace 0, no chip-sensor debounce where nothing bounces.

    The wager station's debounce (30 ms by default) is for real chip sensors, which bounce as chips settle. At a
    human pace it is lost inside each beat, so the table keeps its real settings and looks like a real table.
    At pace 0 the simulated people act as fast as the machine and every wager waited the whole window: a
    decision round trip became 33 ms instead of about 1 ms, so the demo played about 3 rounds a second. The
    simulated sensors report one reading per wager unless a chatter fault is scripted, so a station left at the
    driver's default gets none; a station whose config sets `debounce_ms`, or that a script makes chatter, keeps it.
    """
    devices = config.devices
    if pace or devices is None:
        return config
    chattering = {f.device for f in (sim_script.faults if sim_script else ()) if f.fault.kind is FaultKind.CHATTER}

    def quiet(settings: dict[str, Any], station_ids: set[str]) -> dict[str, Any]:
        if "debounce_ms" in settings or station_ids & chattering:
            return settings
        return {**settings, "debounce_ms": 0}

    stations = [quiet(s, {f"wager_station_{s.get('seat')}"}) for s in devices.wager_stations]
    bus = devices.wager_bus
    if bus is not None:
        bus_seats = {seat for seat, where in devices.station_seats() if where.startswith(f"devices.{WAGER_BUS_ID}")}
        bus = quiet(bus, {f"wager_station_{seat}" for seat in bus_seats})
    undebounced = [s.get("seat") for s in stations if s.get("debounce_ms") == 0]
    if undebounced or (bus is not None and bus.get("debounce_ms") == 0):
        log.debug(
            "pace 0: simulated chip sensors do not bounce, so no debounce",
            seats=undebounced,
            bus=bus is not None and bus.get("debounce_ms") == 0,
        )
    return config.model_copy(
        update={"devices": devices.model_copy(update={"wager_stations": stations, WAGER_BUS_ID: bus})}
    )


def simulated_bus(config: TableConfig) -> SimBus | None:
    """The multi-drop line the simulators must make for the config's [devices.wager_bus], or None without one: its
    seats at the addresses the driver will use, at its configured baud rate. The driver reads its own settings (so a
    bad entry gets the error `tablectl run` would give); the simulated stations speak the reference protocol, so
    another bus driver cannot be simulated."""
    d = config.devices
    if d is None or d.wager_bus is None:
        return None
    driver = create_driver(WAGER_BUS_ID, d.wager_bus, "simulated")
    if not isinstance(driver, ReferenceWagerBus):
        raise ConfigError(
            f"devices.wager_bus: driver {d.wager_bus.get('driver')!r} cannot be simulated: the simulated stations "
            'speak the reference serial protocol (docs/protocol.md); use driver = "reference-wager-bus"'
        )
    stations = driver.settings.all_stations()
    # A config that sets the line's rate is paced at it; one that leaves the driver's default, at the simulators'
    # (TABLECTL_SIM_BAUD, else the same 115200), as every other simulated line.
    baud = driver.settings.baudrate if "baudrate" in d.wager_bus else None
    return SimBus({entry.seat: entry.bus_address for entry in stations}, baud)


# size: its 18 keyword options and their docstring are 32 of its lines; the body is one setup, read top to bottom
async def play(
    config: TableConfig,
    *,
    rounds: int | None,
    broker: str | None = None,
    seed: int | None = None,
    pace: float = 0.0,
    journal_path: Path | None = None,
    policy: Policy | None = None,
    decks: Sequence[Sequence[str]] = (),
    out: TextIO | None = None,
    sim_script: SimScript | None = None,
    on_event: Callable[[JournaledEvent], None] | None = None,
    close_when_stuck: bool = False,
    on_floor_error: Callable[[Exception], None] | None = None,
    script: ActionScript | None = None,
    human_floor: bool = False,
    on_service: Callable[[TableService], None] | None = None,
    players: Players = "random",
    on_sims: Callable[[SimulatedTable], None] | None = None,
    sim_state: Path | None = None,
    start: StartSignals | None = None,
) -> int:
    """Play the table until `rounds` rounds are complete (or until Ctrl-C); returns the rounds played.

    `on_event` sees every journaled event, in seq order, including those journaled as the table closes.
    `close_when_stuck` closes the table when it blocks for a floorperson, who is not simulated.
    `on_floor_error` hears of a simulated person who could not act (the table would wait for them forever).
    `script` is a scenario's actions (controller.people.actions): its signed commands get a key per role they need.
    `human_floor`: no simulated floorperson validates jackpots; they wait for a person's signed command (the floor
    console). `on_service` is handed the table's service once it exists (a test that drives the shell's inputs).
    `players`: without a `policy`, random players or players following the optimal strategy (controller.par).
    `on_sims` is handed the simulated devices once they run (a test that asserts what crossed a simulated line).
    `sim_state`: the simulators' state file (the shoe's cards), kept across restarts as a real shoe keeps its cards.
    `start`: the signals of `tablectl demo`'s start (controller.shell.start_signals), handed to the runner.
    Raises TableStuck once the table closed on a block none of the simulated people clears (controller.people.stuck).
    """
    rng = random.Random(seed)
    policy = policy or policy_for(players, rng, config)
    progressive = config.devices is not None and config.devices.progressive_sign is not None
    roles: set[Role] = script.roles() if script is not None else set()
    terminals = config.devices is not None and bool(config.devices.wager_terminals)
    if (progressive or terminals or not close_when_stuck) and not human_floor:
        # Validates the jackpots (655a.11(i)(1)(iii)) and verifies a 500 for 1 Five Card Hand Bonus (655a.11(i)(3)(ii));
        # at every demo table, brings a new deck when one is due (.3(c), .4(a)): a table without a sign or terminals
        # had no floorperson, so a demo on a journal whose deck was due blocked and waited for ever. The key is the
        # demo's own (DemoSigners): no config lacks one. A simulation that closes when stuck keeps the floorperson to
        # the tables that had one: its scenarios say what the floorperson does.
        roles.add("floorperson")
    start = start or StartSignals()
    async with contextlib.AsyncExitStack() as stack:
        start.reached("starting the simulators")
        floorperson = stack.enter_context(DemoSigners.leased(config, roles)) if roles else None
        if floorperson is not None:
            config = config.model_copy(update={"supervisors": [*config.supervisors, *floorperson.supervisors]})
        sims = await stack.enter_async_context(
            SimulatedTable(
                config.game.seats,
                rng,
                sign=progressive,
                terminals=terminals,
                bus=simulated_bus(config),
                state=sim_state,
            )
        )
        if on_sims is not None:
            on_sims(sims)
        if decks:
            sims.shuffler.script_decks(decks)
        if sim_script is not None:
            await sims.apply_script(sim_script)
        people = _People(
            lambda service: SimulatedFloor(
                service,
                sims,
                policy,
                rounds,
                pace,
                close_when_stuck=close_when_stuck,
                floorperson=floorperson,
                rng=rng,
                script=script,
            ),
            on_event,
            on_floor_error,
            on_service,
        )
        drivers = build_devices(simulator_settings(config, pace, sim_script), sims.ports)
        # A seeded demo repeats its Magic Card and Lucky Bonus draws too; unseeded, they come from the CSPRNG as at a
        # live table (`tablectl run` never takes draws).
        draws = SeededDraws(random.Random(f"draws-{seed}")) if seed is not None else None
        played = await _until_stuck(
            run_table(
                config,
                drivers,
                broker=broker,
                journal_path=journal_path,
                out=out,
                companions=people,
                draws=draws,
                start=start,
            ),
            people.halted,
        )
        people.hand_on_the_rest()
        if people.made is not None and people.made.unclearable is not None and people.made.unclearable.reason:
            raise TableStuck(people.made.unclearable.reason)  # the table closed, its devices stop on the way out
        return played


async def _until_stuck(table: Coroutine[Any, Any, int], halted: asyncio.Event) -> int:
    """Run the table until it closes, or stop it (as a second Ctrl-C does) once its people say it is stuck with a round
    in play that only a person the demo does not simulate can finish: its close would wait for that round for ever."""
    running = asyncio.ensure_future(table)
    stuck = asyncio.ensure_future(halted.wait())
    try:
        await asyncio.wait((running, stuck), return_when=asyncio.FIRST_COMPLETED)
    finally:
        stuck.cancel()
        if not running.done():
            running.cancel()  # the runner's own clean-up runs: devices stopped, the journal let go
    try:
        return await running
    except asyncio.CancelledError:
        me = asyncio.current_task()
        if halted.is_set() and (me is None or not me.cancelling()):
            return 0  # stopped here, not cancelled from outside: the caller raises TableStuck with the reason
        raise


class _People:
    """The runner's companions on the simulated table: the floor, and a listener handing on every event."""

    def __init__(
        self,
        floor: Callable[[TableService], SimulatedFloor],
        on_event: Callable[[JournaledEvent], None] | None,
        on_floor_error: Callable[[Exception], None] | None,
        on_service: Callable[[TableService], None] | None = None,
    ) -> None:
        self.on_service = on_service
        self.floor = floor
        self.on_event = on_event
        self.on_floor_error = on_floor_error
        self.heard: list[asyncio.Queue[JournaledEvent]] = []
        self.made: SimulatedFloor | None = None
        self.halted = asyncio.Event()  # the floor stopped on a block holding a round in play (controller.people.stuck)

    def __call__(self, service: TableService) -> list[Coroutine[Any, Any, None]]:
        if self.on_service is not None:
            self.on_service(service)
        floor = self.made = self.floor(service)
        if self.on_event is None:
            return [self._watched(floor)]
        # now, so that nothing journaled from the start is missed; lossless: `simulate` prints every event
        self.heard.append(service.subscribe("people-events", "lossless"))
        return [self._watched(floor), self._listen(self.on_event, self.heard[0])]

    async def _listen(self, on_event: Callable[[JournaledEvent], None], events: asyncio.Queue[JournaledEvent]) -> None:
        while True:
            on_event(await events.get())

    async def _watched(self, floor: SimulatedFloor) -> None:
        try:
            await floor.run()
            if floor.unclearable is not None and floor.unclearable.stop_now:
                self.halted.set()
        except Exception as err:
            if self.on_floor_error is None:
                raise
            self.on_floor_error(err)

    def hand_on_the_rest(self) -> None:
        """The runner stops its helpers as soon as the table is closed: hand on what they had not yet seen."""
        for queue in self.heard:
            while not queue.empty():
                present(self.on_event, "the demo's event handler")(queue.get_nowait())
