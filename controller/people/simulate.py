"""`tablectl simulate`: scripted rounds on simulated devices, every journaled event as a JSON line.

A scenario (docs/scenarios.md) scripts what the people and the devices do: each round's deck order, the
players' wagers and decisions, and device faults at named points. It runs through the same wiring as
`tablectl demo` (real drivers, simulators on real pseudo-terminals, a real journal), so what comes out
is what the table PC would journal for that round. Only the floor is simulated.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import random
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from controller.config.table import Devices, TableConfig
from controller.core.events import JournaledEvent
from controller.games.registry import SPECS, spec_for
from controller.people.demo import ScriptedRound, play, policy_for
from controller.people.optimal import NoStrategy, Players, check_optimal
from controller.people.policy import Answer, DecisionRequest, Policy, StubCount
from controller.people.scenario import Scenario, ScenarioError, load_scenario
from controller.shell.runner import playable
from drivers.sim import scratch
from drivers.sim.script import SimScript

# A publisher needs an address; nothing listens on port 1, so the connection is refused at once and every
# event stays in the journal (the publisher is the runner's, and simulate has nobody to publish to).
NO_BROKER = "mqtt://127.0.0.1:1"
DEFAULT_TIMEOUT = 120.0


@dataclass
class ScenarioPolicy:
    """The scripted rounds, then seeded random (or optimal, `--players optimal`) players for any rounds beyond them."""

    scripted: Sequence[ScriptedRound]
    rng: random.Random
    config: TableConfig
    players: Players = "random"
    _random: Policy = field(init=False)

    def __post_init__(self) -> None:
        self._random = policy_for(self.players, self.rng, self.config)

    def _round(self, round_no: int) -> ScriptedRound | None:
        return self.scripted[round_no - 1] if round_no <= len(self.scripted) else None

    def wagers(self, round_no: int, config: TableConfig) -> dict[int, dict[str, int]]:
        r = self._round(round_no)
        return r.wagers if r is not None else self._random.wagers(round_no, config)

    def decide(self, round_no: int, seat: int, request: DecisionRequest) -> Answer:
        r = self._round(round_no)
        if r is None:
            return self._random.decide(round_no, seat, request)
        default = "ride" if request.kind == "ride_or_withdraw" else "fold"
        return r.decisions.get((seat, request.decision), default)

    def late_wager(self, round_no: int, config: TableConfig) -> tuple[int, str, int] | None:
        r = self._round(round_no)
        return r.late if r is not None else None

    def stub_count(self, round_no: int) -> StubCount | None:
        r = self._round(round_no)
        return r.stub if r is not None else None


# -- the table -------------------------------------------------------------------------------------


def simulated_config(config: TableConfig) -> TableConfig:
    """The config with a reference device for everything when it names none (settlement-only configs):
    the simulators stand in for them, one wager station per seat."""
    if config.devices is not None:
        return config

    def sim(driver: str, **extra: Any) -> dict[str, Any]:
        return {"driver": driver, "port": "simulated", **extra}

    devices = Devices(
        shuffler=sim("reference-shuffler"),
        shoe=sim("reference-shoe"),
        dealer_panel=sim("reference-dealer-panel"),
        wager_stations=[sim("reference-wager-station", seat=n) for n in range(1, config.game.seats + 1)],
    )
    return config.model_copy(update={"devices": devices})


def unplayable(config: TableConfig) -> str | None:
    """Why simulate cannot run this config, or None."""
    if spec_for(config.game) is None:
        return (
            f"chapter {config.game.chapter} has no round engine yet (the live engine runs "
            f"{', '.join(sorted(SPECS))}); `tablectl settle` settles its rounds"
        )
    return playable(simulated_config(config))


def event_line(ev: JournaledEvent, sealed: bool = True) -> str:
    body = ev.public()
    if sealed and ev.sealed is not None:
        body["sealed"] = dict(ev.sealed)
    return json.dumps(body, separators=(",", ":"), ensure_ascii=False)


@dataclass
class Outcome:
    rounds_played: int = 0
    closed: bool = False  # the table closed: the scenario played out
    problem: str | None = None


async def simulate(
    config: TableConfig,
    scenario: Scenario,
    *,
    out: TextIO,
    journal_path: Path | None = None,
    broker: str | None = None,
    give_up_after: float = DEFAULT_TIMEOUT,
    sealed: bool = True,
    players: Players = "random",
) -> Outcome:
    """Play the scenario, writing every journaled event to `out` as it is journaled."""
    config = simulated_config(config)
    outcome = Outcome()
    failed: asyncio.Future[str] = asyncio.get_running_loop().create_future()

    def on_event(ev: JournaledEvent) -> None:
        out.write(event_line(ev, sealed) + "\n")
        out.flush()
        if ev.type == "table.closed":
            outcome.closed = True

    def on_floor_error(err: Exception) -> None:
        if not failed.done():
            failed.set_result(f"the simulated floor could not act: {err}")

    with contextlib.ExitStack() as stack:
        if journal_path is None:
            # In the process's simulator dir, owned on the leash: a SIGKILLed simulate leaves it to the next sweep.
            leased = scratch.lease("simulate-journal")
            stack.callback(scratch.release, leased)
            journal_path = leased / f"{config.table_id}.sqlite"
        policy = ScenarioPolicy(scenario.scripted, random.Random(scenario.seed), config, players)
        playing = asyncio.ensure_future(
            play(
                config,
                rounds=scenario.rounds,
                broker=broker or NO_BROKER,
                seed=scenario.seed,
                journal_path=journal_path,
                policy=policy,
                decks=scenario.decks,
                sim_script=SimScript(faults=scenario.faults) if scenario.faults else None,
                on_event=on_event,
                close_when_stuck=True,
                on_floor_error=on_floor_error,
                script=scenario.script,
            )
        )
        await _outcome(playing, failed, give_up_after, outcome)
        failed.cancel()
    return outcome


async def _outcome(
    playing: asyncio.Future[int], failed: asyncio.Future[str], give_up_after: float, outcome: Outcome
) -> None:
    """Wait for the play to end, the floor to fail or the time to run out, and say which in `outcome`."""
    # Not asyncio.timeout: the runner treats a cancel as "stop now" and returns normally, so the
    # expiry would not surface as TimeoutError; waiting on both says which came first.
    waiting: set[asyncio.Future[Any]] = {playing, failed}
    done, _ = await asyncio.wait(waiting, timeout=give_up_after, return_when=asyncio.FIRST_COMPLETED)
    if playing in done:
        outcome.rounds_played = playing.result()
        return
    outcome.problem = (
        failed.result()
        if failed in done
        else (
            f"the scenario did not play out within {give_up_after:g} s (the table is waiting for something the "
            f"scenario does not do; the events above show for what)"
        )
    )
    playing.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await playing


def main_simulate(
    config: TableConfig,
    config_path: Path,
    scenario_path: Path,
    *,
    journal: Path | None,
    broker: str | None,
    timeout: float,
    sealed: bool,
    players: Players = "random",
) -> int:
    why = unplayable(config)
    if why:
        print(f"tablectl: {config_path}: {why}", file=sys.stderr)
        return 2
    if players == "optimal":
        try:
            check_optimal(config.game)
        except NoStrategy as err:
            print(f"tablectl: {config_path}: --players optimal: {err}", file=sys.stderr)
            return 2
    try:
        scenario = load_scenario(scenario_path, config)
    except ScenarioError as err:
        print(f"tablectl: {err}", file=sys.stderr)
        return 2
    outcome = asyncio.run(
        simulate(
            config,
            scenario,
            out=sys.stdout,
            journal_path=journal,
            broker=broker,
            give_up_after=timeout,
            sealed=sealed,
            players=players,
        )
    )
    if outcome.problem is not None or not outcome.closed:
        print(f"tablectl: {scenario_path}: {outcome.problem or 'the table did not close'}", file=sys.stderr)
        return 1
    print(f"tablectl: {outcome.rounds_played} of {scenario.rounds} round(s) played", file=sys.stderr)
    return 0
