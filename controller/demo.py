"""`tablectl demo`: a whole Mississippi Stud table on simulated devices, with a simulated dealer and players.

The controller side is the real one: drivers open real pseudo-terminals to the device simulators and
speak the reference serial protocol; the journal is a real SQLite file; events go to a real broker.
Only the people are simulated: players place chips on the wager stations' sensors and decide their
streets, the dealer presses the panel's buttons. They react to the controller's events, as people
react to what happens on the table.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Coroutine, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, TextIO

import structlog

from controller.config import TableConfig
from controller.engine.inputs import CloseTable
from controller.events import JournaledEvent
from controller.games.mississippi_stud import MississippiStudRules
from controller.runner import build_devices, run_table
from controller.service import TableService
from drivers.sim.script import SimScript
from drivers.sim.table import SimulatedTable

log = structlog.get_logger("tablectl.demo")


class Policy(Protocol):
    """What the simulated players do."""

    def wagers(self, round_no: int, config: TableConfig) -> dict[int, dict[str, int]]:
        """Seat -> {spot: cents} placed before "no more bets"."""

    def street(self, round_no: int, seat: int, street: str, allowed: Sequence[int]) -> int | None:
        """The Street Wager in cents (one of allowed), or None to fold."""

    def late_wager(self, round_no: int, config: TableConfig) -> tuple[int, str, int] | None:
        """A wager someone tries after "no more bets" (seat, spot, cents), to show the lock-out."""


class RandomPolicy:
    """Random but legal players, from a seeded generator."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng

    def wagers(self, round_no: int, config: TableConfig) -> dict[int, dict[str, int]]:
        g = config.game
        assert isinstance(g, MississippiStudRules), "the demo plays chapter 655a"
        chips = [a for a in (500, 1000, 2500, 5000) if g.ante_min_cents <= a <= g.ante_max_cents]
        chips = chips or [g.ante_min_cents]
        out: dict[int, dict[str, int]] = {}
        for seat in range(1, g.seats + 1):
            if self.rng.random() > 0.8:
                continue  # an empty seat this round
            w = {"ante": self.rng.choice(chips)}
            # Bonus wagers at the minimum or a fifth of the maximum, within the table's limits either way.
            if g.three_card_bonus_paytable and self.rng.random() < 0.4:
                w["three_card_bonus"] = max(g.three_card_bonus_min_cents,
                                            self.rng.choice([0, g.three_card_bonus_max_cents // 5]))
            if g.six_card_bonus_paytable and self.rng.random() < 0.3:
                w["six_card_bonus"] = max(g.six_card_bonus_min_cents,
                                          self.rng.choice([0, g.six_card_bonus_max_cents // 5]))
            out[seat] = w
        if not out:
            out[self.rng.randint(1, g.seats)] = {"ante": chips[0]}
        return out

    def street(self, round_no: int, seat: int, street: str, allowed: Sequence[int]) -> int | None:
        pick = self.rng.choices([None, 0, 1, 2], weights=[2, 5, 2, 1])[0]
        return None if pick is None else allowed[pick]

    def late_wager(self, round_no: int, config: TableConfig) -> tuple[int, str, int] | None:
        g = config.game
        assert isinstance(g, MississippiStudRules), "the demo plays chapter 655a"
        if self.rng.random() < 0.15:
            return self.rng.randint(1, g.seats), "ante", g.ante_min_cents
        return None


@dataclass
class ScriptedRound:
    wagers: dict[int, dict[str, int]]
    # (seat, street spot) -> cents, or None to fold. A missing entry folds.
    decisions: dict[tuple[int, str], int | None] = field(default_factory=dict)
    late: tuple[int, str, int] | None = None


class ScriptedPolicy:
    """Players who do exactly what a test says, round by round."""

    def __init__(self, rounds: Sequence[ScriptedRound]) -> None:
        self.rounds = list(rounds)

    def _round(self, round_no: int) -> ScriptedRound:
        return self.rounds[(round_no - 1) % len(self.rounds)]

    def wagers(self, round_no: int, config: TableConfig) -> dict[int, dict[str, int]]:
        return self._round(round_no).wagers

    def street(self, round_no: int, seat: int, street: str, allowed: Sequence[int]) -> int | None:
        return self._round(round_no).decisions.get((seat, street))

    def late_wager(self, round_no: int, config: TableConfig) -> tuple[int, str, int] | None:
        return self._round(round_no).late


class SimulatedFloor:
    """The dealer and the players, acting on the simulated devices in answer to the controller's events."""

    def __init__(self, service: TableService, sims: SimulatedTable, policy: Policy, rounds: int | None,
                 pace: float) -> None:
        self.service = service
        self.sims = sims
        self.policy = policy
        self.rounds = rounds
        self.pace = pace
        self.events = service.subscribe()
        self._awaiting: int = 0  # wagers placed whose acceptance or rejection is not yet journaled
        self._round_no = 0
        self._started = 0

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
        elif ev.type in ("wager.accepted", "wager.rejected") and self._awaiting:
            self._awaiting -= 1
            if not self._awaiting:
                await self._no_more_bets()
        elif ev.type == "decision.requested":
            await self._beat()
            seat = int(p["seat"])
            amount = self.policy.street(self._round_no, seat, str(p["spot"]), list(p["allowed"]))
            if amount is None:
                await self.sims.panel.press("fold")
            else:
                await self.sims.stations[seat].place(str(p["spot"]), amount)

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


async def play(config: TableConfig, *, rounds: int | None, broker: str | None = None, seed: int | None = None,
               pace: float = 0.0, journal_path: Path | None = None, policy: Policy | None = None,
               decks: Sequence[Sequence[str]] = (), out: TextIO | None = None,
               sim_script: SimScript | None = None) -> int:
    """Play the table until `rounds` rounds are complete (or until Ctrl-C); returns the rounds played."""
    rng = random.Random(seed)
    async with SimulatedTable(config.game.seats, rng) as sims:
        if decks:
            sims.shuffler.script_decks(decks)
        if sim_script is not None:
            await sims.apply_script(sim_script)

        def people(service: TableService) -> list[Coroutine[Any, Any, None]]:
            return [SimulatedFloor(service, sims, policy or RandomPolicy(rng), rounds, pace).run()]

        return await run_table(config, build_devices(config, sims.ports), broker=broker, journal_path=journal_path,
                               out=out, companions=people)
