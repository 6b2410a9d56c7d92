"""`tablectl demo`: a whole Mississippi Stud table on simulated devices, with a simulated dealer and players.

The same floor plays any chapter with a round engine (`tablectl simulate`, controller/people/simulate.py).

The controller side is the real one: drivers open real pseudo-terminals to the device simulators and
speak the reference serial protocol; the journal is a real SQLite file; events go to a real broker.
Only the people are simulated: players place chips on the wager stations' sensors and decide their
streets, the dealer presses the panel's buttons and keys counts on it (docs/protocol.md, "Dealer panel"), a
floorperson (on a progressive table) signs commands. They react to the controller's events, as people
react to what happens on the table.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import random
import tempfile
from collections.abc import Callable, Coroutine, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, TextIO

import structlog
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from controller.config.table import Supervisor, TableConfig
from controller.core.events import JournaledEvent
from controller.engine.inputs import CloseTable
from controller.games.mississippi_stud import MississippiStudRules
from controller.games.registry import spec_for
from controller.shell.runner import build_devices, run_table
from controller.shell.service import TableService
from controller.supervisor.envelope import public_key_b64, sign_command
from controller.supervisor.gate import Accepted, CommandGate
from controller.supervisor.replay import ReplayStore
from drivers.sim.faults import FaultKind
from drivers.sim.script import SimScript
from drivers.sim.shuffler import FRESH_DECK
from drivers.sim.table import SimulatedTable

log = structlog.get_logger("tablectl.demo")


# What a player answers to a decision: an amount (one of the allowed ones) to wager, "fold", or for a
# ride-or-withdraw decision "ride" / "withdraw". None folds too (how the first scripted rounds said it).
Answer = int | str | None
ANSWERS = ("fold", "ride", "withdraw")
# Blocking conditions that only a floorperson can clear: a simulated table with nobody to clear them
# closes instead of waiting forever (when asked to: the demo waits, as a real table would).
_STUCK = ("deck.removed", "table.blocked", "no_more_bets.refused")


@dataclass(frozen=True, slots=True)
class DecisionRequest:
    """A `decision.requested` event as the player sees it."""

    decision: str  # the chapter's decision key, e.g. "street_3"
    spot: str  # the wager spot the decision is about
    kind: str  # "wager_or_fold" or "ride_or_withdraw"
    allowed: tuple[int, ...] = ()  # wager_or_fold: the amounts that may be put out


class Policy(Protocol):
    """What the simulated players do."""

    def wagers(self, round_no: int, config: TableConfig) -> dict[int, dict[str, int]]:
        """Seat -> {spot: cents} placed before "no more bets"."""

    def decide(self, round_no: int, seat: int, request: DecisionRequest) -> Answer:
        """The seat's answer to the decision (see Answer)."""

    def late_wager(self, round_no: int, config: TableConfig) -> tuple[int, str, int] | None:
        """A wager someone tries after "no more bets" (seat, spot, cents), to show the lock-out."""

    def stub_count(self, round_no: int) -> StubCount | None:
        """The dealer's stub count and misdeal ruling this round, or None: the right count."""


class RandomPolicy:
    """Random but legal players, from a seeded generator."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng

    def wagers(self, round_no: int, config: TableConfig) -> dict[int, dict[str, int]]:
        g = config.game
        if not isinstance(g, MississippiStudRules):
            return self._any_chapter_wagers(config)
        chips = [a for a in (500, 1000, 2500, 5000) if g.ante_min_cents <= a <= g.ante_max_cents]
        chips = chips or [g.ante_min_cents]
        out: dict[int, dict[str, int]] = {}
        for seat in range(1, g.seats + 1):
            if self.rng.random() > 0.8:
                continue  # an empty seat this round
            w = {"ante": self.rng.choice(chips)}
            # Bonus wagers at the minimum or a fifth of the maximum, within the table's limits either way.
            if g.three_card_bonus_paytable and self.rng.random() < 0.4:
                w["three_card_bonus"] = max(
                    g.three_card_bonus_min_cents, self.rng.choice([0, g.three_card_bonus_max_cents // 5])
                )
            if g.six_card_bonus_paytable and self.rng.random() < 0.3:
                w["six_card_bonus"] = max(
                    g.six_card_bonus_min_cents, self.rng.choice([0, g.six_card_bonus_max_cents // 5])
                )
            if g.progressive_paytable and self.rng.random() < 0.6:
                w["progressive"] = g.progressive_wager_cents  # 655a.7(d)(3): the one size the meters are "for 1" of
            out[seat] = w
        if not out:
            out[self.rng.randint(1, g.seats)] = {"ante": chips[0]}
        return out

    def _any_chapter_wagers(self, config: TableConfig) -> dict[int, dict[str, int]]:
        """From the chapter's spec alone: the same amount on each main wager it offers (some chapters want
        them equal), optional wagers now and then at their minimum; seats that would not make a player sit out."""
        spec = spec_for(config.game)
        if spec is None:
            raise ValueError(f"chapter {config.game.chapter} has no round engine yet")
        offers = list(spec.offers(config.game))
        main = [o for o in offers if o.spot in spec.main_wagers] or offers[:1]
        optional = [o for o in offers if o not in main]
        low = max(o.min_cents for o in main)
        high = min(o.max_cents for o in main)
        chips = [a for a in (500, 1000, 2500, 5000) if low <= a <= high] or [low]
        seats = spec.seats(config.game)
        out: dict[int, dict[str, int]] = {}
        for seat in range(1, seats + 1):
            if self.rng.random() > 0.8:
                continue
            amount = self.rng.choice(chips)
            w = {o.spot: amount for o in main}
            w.update({o.spot: o.min_cents for o in optional if self.rng.random() < 0.3})
            if spec.player_problem(w) is None:
                out[seat] = w
        if not out:
            out[self.rng.randint(1, seats)] = {o.spot: chips[0] for o in main}
        return out

    def decide(self, round_no: int, seat: int, request: DecisionRequest) -> Answer:
        if request.kind == "ride_or_withdraw":
            return "ride" if self.rng.random() < 0.7 else "withdraw"
        allowed = request.allowed
        # Mostly the smallest wager, sometimes more, sometimes a fold (the demo's players since 655a).
        weights = ([2, 5, 2, 1] + [1] * len(allowed))[: len(allowed) + 1]
        pick = self.rng.choices([None, *range(len(allowed))], weights=weights)[0]
        return None if pick is None else allowed[pick]

    def late_wager(self, round_no: int, config: TableConfig) -> tuple[int, str, int] | None:
        g = config.game
        if not isinstance(g, MississippiStudRules):
            return None  # the lock-out is shown on the demo's own table
        if self.rng.random() < 0.15:
            return self.rng.randint(1, g.seats), "ante", g.ante_min_cents
        return None

    def stub_count(self, round_no: int) -> StubCount | None:
        return None


@dataclass(frozen=True, slots=True)
class StubCount:
    """What the dealer enters when asked to count the stub (.8(f), .9(d), .10(d)), and, when that count does
    not make 52 cards, whether the dealer rules the cards misdealt (void) or not (void, the deck removed)."""

    count: int
    misdeal: bool = False


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


class SimulatedFloor:
    """The dealer and the players, acting on the simulated devices in answer to the controller's events.

    Whatever the chapter, the events say what to do: wagers when betting opens, "no more bets" once they
    are all on the layout, cards drawn from a manual shoe while the round is dealt, "dealt" once a deal
    from the hand is on the layout, an answer to each `decision.requested` of the kind it asks. The dealer's
    part goes through the panel as at a real table: the counts (chips, stub) keyed when asked for, "misdeal" /
    "no_misdeal" after a stub miscount, "inspected" when an idle table's cards are due for inspection, and a
    shuffle by hand (into the shoe) then "shuffled" once the shuffler is out of order. The floorperson, when
    there is one, only signs commands; without one, nothing verifies an opening inspection, so the dealer
    leaves it to whoever runs the table (tests verify it by signed command).
    """

    def __init__(
        self,
        service: TableService,
        sims: SimulatedTable,
        policy: Policy,
        rounds: int | None,
        pace: float,
        *,
        close_when_stuck: bool = False,
        floorperson: DemoFloorperson | None = None,
        rng: random.Random | None = None,
    ) -> None:
        self.service = service
        self.rng = rng or random.Random(0)  # the dealer's hand shuffles; seeded so a run can be repeated
        self.floorperson = floorperson
        self.sims = sims
        self.policy = policy
        self.rounds = rounds
        self.pace = pace
        self.close_when_stuck = close_when_stuck
        self.method = service.engine.method
        self.events = service.subscribe()
        self._awaiting: int = 0  # wagers placed whose acceptance or rejection is not yet journaled
        self._round_no = 0
        self._started = 0
        self._drawing = False  # a manual shoe is being dealt from

    async def _beat(self) -> None:
        if self.pace:
            await asyncio.sleep(self.pace)  # human pace for the watcher, not synchronisation

    async def run(self) -> None:
        while True:
            ev = await self.events.get()
            if ev.type == "table.closed":
                return
            await self._on(ev)

    async def _on(self, ev: JournaledEvent) -> None:
        p = ev.payload
        if ev.type == "betting.opened":
            self._round_no = int(p["round_no"])
            self._started += 1
            await self._place_wagers()
        elif ev.type == "no_more_bets" and self.rounds is not None and self._started >= self.rounds:
            # The last round is under way: the table closes when it is complete instead of reshuffling.
            self.service.submit(CloseTable())
        elif ev.type in ("wager.accepted", "wager.rejected", "wager.confirmed") and self._awaiting:
            self._awaiting -= 1
            if not self._awaiting:
                await self._no_more_bets()
        elif ev.type == "lockout.confirmed" and self.method == "manual_shoe":
            self._drawing = True
            await self._draw()
        elif ev.type == "card.dealt" and self._drawing:
            await self._draw()
        elif ev.type in ("stub.discarded", "round.voided"):
            self._drawing = False
        elif ev.type == "deal.awaiting_dealer":
            await self._beat()
            await self.sims.panel.press("dealt")
        elif ev.type == "decision.requested":
            await self._beat()
            await self._decide(
                int(p["seat"]),
                DecisionRequest(
                    str(p["decision"]), str(p["spot"]), str(p["kind"]), tuple(int(a) for a in p.get("allowed", ()))
                ),
            )
        elif ev.type == "chip_count.requested":
            # The dealer's count matches the wagers accepted: the simulated chips are exactly those placed.
            await self._beat()
            await self.sims.panel.key_count("chips", int(p["accepted"]))
        elif ev.type == "stub_count.requested" and ev.sealed is not None:
            # The right count, unless the script has the dealer count otherwise.
            await self._beat()
            stub = self.policy.stub_count(self._round_no)
            await self.sims.panel.key_count("stub", int(ev.sealed["expected"]) if stub is None else stub.count)
        elif ev.type == "stub_count.mismatch":
            # The dealer determines whether the cards were misdealt (.8(h), .9(f), .10(f)).
            await self._beat()
            stub = self.policy.stub_count(self._round_no)
            await self.sims.panel.press("misdeal" if stub is not None and stub.misdeal else "no_misdeal")
        elif ev.type == "cards.inspection_due":
            # An idle table (.5(f)): the dealer spreads and inspects the cards alone, then confirms on the panel.
            await self._beat()
            await self.sims.panel.press("inspected")
        elif ev.type == "shuffle.started" and p.get("device") == "manual":
            # The shuffler is out of order (.13(g)): the dealer shuffles by hand, cuts with the cover card
            # (.5(c)(2), (d)), puts the deck in the shoe and confirms on the panel.
            await self._beat()
            deck = list(FRESH_DECK)
            self.rng.shuffle(deck)
            self.sims.shoe.load(deck)
            await self.sims.panel.press("shuffled")
        elif ev.type in ("device.out_of_order", "device.back_in_service") and p.get("dealing_method"):
            self.method = p["dealing_method"]  # e.g. a manual shoe takes over from dealing by hand
        elif ev.type == "progressive.hit" and self.floorperson is not None:
            # The floorperson checks the hand and validates the hit with a signed command (655a.11(i)(1)(iii)).
            await self._beat()
            await self.floorperson.validate(self.service, int(p["seat"]), str(p["level"]), str(p["hit"]))
        elif ev.type == "table.recovered" and p.get("policy") == "await_jackpot" and self.floorperson is not None:
            # Restarted while hits awaited validation: their progressive.hit events belong to the last boot, so the
            # floorperson validates what the restored state still holds pending (each once; 655a.11(i)(1)(iii)).
            for pending in list(self.service.state.pending_hits):
                await self._beat()
                await self.floorperson.validate(self.service, pending.seat, pending.level, pending.hit)
        elif ev.type in _STUCK and self.close_when_stuck:
            self.service.submit(CloseTable())

    async def _draw(self) -> None:
        await self._beat()
        await self.sims.shoe.draw()

    async def _decide(self, seat: int, request: DecisionRequest) -> None:
        answer = self.policy.decide(self._round_no, seat, request)
        if request.kind == "ride_or_withdraw":
            await self.sims.panel.press("withdraw" if answer == "withdraw" else "let_it_ride")
        elif answer is None or answer == "fold" or isinstance(answer, str):
            await self.sims.panel.press("fold")
        else:
            await self.sims.stations[seat].place(request.spot, answer)

    async def _place_wagers(self) -> None:
        plan = self.policy.wagers(self._round_no, self.service.config)
        self._awaiting = sum(len(w) for w in plan.values())
        for seat, wagers in sorted(plan.items()):
            for spot, amount in wagers.items():
                await self._beat()
                await self.sims.stations[seat].place(spot, amount)

    async def _no_more_bets(self) -> None:
        await self._beat()
        await self.sims.panel.press("no_more_bets")
        late = self.policy.late_wager(self._round_no, self.service.config)
        if late:
            seat, spot, amount = late
            await self.sims.stations[seat].place(spot, amount)


class DemoFloorperson:
    """The demo's floorperson: a key generated for this run, listed in the table's supervisors, whose commands go
    through the same checks as a command from the broker (CommandGate: signature, role, freshness, replay) before
    the service steps them, as the command listener does."""

    KEY_ID = "demo-floorperson"

    def __init__(self, config: TableConfig, replay_path: Path) -> None:
        self.key = Ed25519PrivateKey.generate()
        self.supervisor = Supervisor(key_id=self.KEY_ID, role="floorperson", public_key=public_key_b64(self.key))
        self.table_id = config.table_id
        self.gate = CommandGate(
            config.table_id,
            [*config.supervisors, self.supervisor],
            config.commands,
            ReplayStore(replay_path, config.table_id),
        )

    async def validate(self, service: TableService, seat: int, level: str, hit: str) -> None:
        envelope = sign_command(
            self.key,
            table_id=self.table_id,
            verb="validate_jackpot",
            key_id=self.KEY_ID,
            args={"seat": seat, "level": level, "hit": hit},
        )
        result = self.gate.check("validate_jackpot", json.dumps(envelope).encode(), dt.datetime.now(dt.UTC))
        if not isinstance(result, Accepted):
            log.error("demo floorperson's command refused", reason=result.reason)
            return
        await service.submit_and_wait(result.input)


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
        bus_seats = {seat for seat, where in devices.station_seats() if where.startswith("devices.wager_bus")}
        bus = quiet(bus, {f"wager_station_{seat}" for seat in bus_seats})
    undebounced = [s.get("seat") for s in stations if s.get("debounce_ms") == 0]
    if undebounced or (bus is not None and bus.get("debounce_ms") == 0):
        log.debug(
            "pace 0: simulated chip sensors do not bounce, so no debounce",
            seats=undebounced,
            bus=bus is not None and bus.get("debounce_ms") == 0,
        )
    return config.model_copy(
        update={"devices": devices.model_copy(update={"wager_stations": stations, "wager_bus": bus})}
    )


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
) -> int:
    """Play the table until `rounds` rounds are complete (or until Ctrl-C); returns the rounds played.

    `on_event` sees every journaled event, in seq order, including those journaled as the table closes.
    `close_when_stuck` closes the table when it blocks for a floorperson, who is not simulated.
    `on_floor_error` hears of a simulated person who could not act (the table would wait for them forever).
    """
    rng = random.Random(seed)
    progressive = config.devices is not None and config.devices.progressive_sign is not None
    replay_dir = tempfile.TemporaryDirectory(prefix="tablectl-demo-")
    floorperson = DemoFloorperson(config, Path(replay_dir.name) / "commands.sqlite") if progressive else None
    if floorperson is not None:
        config = config.model_copy(update={"supervisors": [*config.supervisors, floorperson.supervisor]})
    async with SimulatedTable(config.game.seats, rng, sign=progressive) as sims:
        if decks:
            sims.shuffler.script_decks(decks)
        if sim_script is not None:
            await sims.apply_script(sim_script)
        heard: list[asyncio.Queue[JournaledEvent]] = []

        async def listen(events: asyncio.Queue[JournaledEvent]) -> None:
            assert on_event is not None
            while True:
                on_event(await events.get())

        async def watched(floor: SimulatedFloor) -> None:
            try:
                await floor.run()
            except Exception as err:
                if on_floor_error is None:
                    raise
                on_floor_error(err)

        def people(service: TableService) -> list[Coroutine[Any, Any, None]]:
            floor = SimulatedFloor(
                service,
                sims,
                policy or RandomPolicy(rng),
                rounds,
                pace,
                close_when_stuck=close_when_stuck,
                floorperson=floorperson,
                rng=rng,
            )
            if on_event is None:
                return [watched(floor)]
            heard.append(service.subscribe())  # now, so that nothing journaled from the start is missed
            return [watched(floor), listen(heard[0])]

        drivers = build_devices(simulator_settings(config, pace, sim_script), sims.ports)
        played = await run_table(config, drivers, broker=broker, journal_path=journal_path, out=out, companions=people)
        # The runner stops its helpers as soon as the table is closed: hand on what they had not yet seen.
        for queue in heard:
            while not queue.empty():
                assert on_event is not None
                on_event(queue.get_nowait())
        return played
