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
import tempfile
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from controller.config.table import Devices, TableConfig
from controller.core.cards import STANDARD_DECK
from controller.core.events import JournaledEvent
from controller.core.settlement import ChapterRules
from controller.engine.spec import ChapterSpec
from controller.games.mississippi_stud import MississippiStudRules
from controller.games.registry import SPECS, spec_for
from controller.people.demo import Answer, DecisionRequest, RandomPolicy, ScriptedRound, StubCount, play
from controller.shell.runner import playable
from drivers.interfaces import SPOTS
from drivers.reference.framing import is_card
from drivers.sim.script import ScriptedFault, SimScript, SimScriptError, parse_sim_script

# A publisher needs an address; nothing listens on port 1, so the connection is refused at once and every
# event stays in the journal (the publisher is the runner's, and simulate has nobody to publish to).
NO_BROKER = "mqtt://127.0.0.1:1"
DEFAULT_TIMEOUT = 120.0
_TOP_KEYS = frozenset({"description", "seed", "rounds", "round", "faults"})
_ROUND_KEYS = frozenset({"deck", "wagers", "decisions", "late", "stub_count", "misdeal"})


class ScenarioError(ValueError):
    """A scenario that cannot be played; the message names the file and the field."""


@dataclass(frozen=True, slots=True)
class Scenario:
    rounds: int
    scripted: tuple[ScriptedRound, ...]
    decks: tuple[tuple[str, ...], ...]  # one full deck per round, in round order
    faults: tuple[ScriptedFault, ...] = ()
    seed: int | None = None
    description: str = ""


@dataclass
class ScenarioPolicy:
    """The scripted rounds, then seeded random players for any rounds beyond them."""

    scripted: Sequence[ScriptedRound]
    rng: random.Random
    _random: RandomPolicy = field(init=False)

    def __post_init__(self) -> None:
        self._random = RandomPolicy(self.rng)

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


# -- loading and validating ------------------------------------------------------------------------


def load_scenario(path: str | Path, config: TableConfig) -> Scenario:
    """Read a .toml or .json scenario and check it against the table it runs on; ScenarioError if bad."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ScenarioError(f"{path}: cannot read: {exc.strerror or exc}") from None
    is_json = path.suffix.lower() == ".json"
    try:
        data: Any = json.loads(text) if is_json else tomllib.loads(text)
    except (ValueError, tomllib.TOMLDecodeError) as exc:
        raise ScenarioError(f"{path}: not valid {'JSON' if is_json else 'TOML'}: {exc}") from None
    return parse_scenario(data, config, str(path))


def parse_scenario(data: Any, config: TableConfig, source: str = "scenario") -> Scenario:
    spec = spec_for(config.game)
    if spec is None:
        raise ScenarioError(f"{source}: chapter {config.game.chapter} has no round engine yet")
    if not isinstance(data, dict):
        raise ScenarioError(f"{source}: expected a table/object at the top, got {type(data).__name__}")
    unknown = set(data) - _TOP_KEYS
    if unknown:
        raise ScenarioError(
            f"{source}: unknown key(s) {', '.join(sorted(unknown))}; expected {', '.join(sorted(_TOP_KEYS))}"
        )
    description = data.get("description", "")
    if not isinstance(description, str):
        raise ScenarioError(f"{source}: description must be a string")
    seed = data.get("seed")
    if seed is not None and not _is_int(seed):
        raise ScenarioError(f"{source}: seed must be an integer, got {seed!r}")
    raw_rounds = data.get("round", [])
    if not isinstance(raw_rounds, list) or not all(isinstance(r, dict) for r in raw_rounds):
        raise ScenarioError(f"{source}: round must be a list of [[round]] tables")
    rounds = data.get("rounds", len(raw_rounds))
    if not _is_int(rounds) or rounds < 1:
        raise ScenarioError(
            f"{source}: rounds must be a whole number of rounds, 1 or more, got {rounds!r} "
            f"(it defaults to the number of [[round]] tables)"
        )
    if rounds < len(raw_rounds):
        raise ScenarioError(
            f"{source}: rounds = {rounds} but {len(raw_rounds)} [[round]] tables are given: "
            f"raise rounds or remove the extra rounds"
        )
    rng = random.Random(seed)
    scripted: list[ScriptedRound] = []
    decks: list[tuple[str, ...]] = []
    for i, raw in enumerate(raw_rounds):
        where = f"{source}: round[{i}]"
        unknown = set(raw) - _ROUND_KEYS
        if unknown:
            raise ScenarioError(
                f"{where}: unknown key(s) {', '.join(sorted(unknown))}; expected {', '.join(sorted(_ROUND_KEYS))}"
            )
        decks.append(_deck(raw.get("deck"), f"{where}.deck", rng))
        wagers = _wagers(raw.get("wagers"), f"{where}.wagers", config, spec)
        decisions = _decisions(raw.get("decisions", {}), f"{where}.decisions", config, spec, wagers)
        late = _late(raw.get("late"), f"{where}.late", config)
        stub = _stub(raw.get("stub_count"), raw.get("misdeal"), where)
        scripted.append(ScriptedRound(wagers, decisions, late, stub))
    decks += [_deck(None, "", rng) for _ in range(rounds - len(decks))]
    faults = _faults(data.get("faults", []), source, config)
    return Scenario(rounds, tuple(scripted), tuple(decks), faults, seed, description)


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _deck(value: Any, where: str, rng: random.Random) -> tuple[str, ...]:
    if value is None:
        deck = list(STANDARD_DECK)
        rng.shuffle(deck)
        return tuple(deck)
    cards = value.split() if isinstance(value, str) else value
    if not isinstance(cards, list):
        raise ScenarioError(f'{where}: a deck is a string of spaced cards ("Ah Ad 9c") or a list of cards')
    seen: set[str] = set()
    for j, card in enumerate(cards):
        if not is_card(card):
            raise ScenarioError(f'{where}[{j}]: {card!r} is not a card like "As" or "Td"')
        if card in seen:
            raise ScenarioError(
                f"{where}[{j}]: {card} is in the deck twice; a duplicate card is a fault "
                f'(fault = "duplicate" on the shoe), not a deck order'
            )
        seen.add(card)
    # The cards not named follow in the standard order, so a scenario names only the cards that matter.
    return (*cards, *(c for c in STANDARD_DECK if c not in seen))


def _seat(key: Any, where: str, config: TableConfig) -> int:
    text = str(key)
    if not text.isdigit() or not 1 <= int(text) <= config.game.seats:
        raise ScenarioError(f"{where}: {key!r} is not a seat of this table (1 to {config.game.seats})")
    return int(text)


def _wagers(value: Any, where: str, config: TableConfig, spec: ChapterSpec[ChapterRules]) -> dict[int, dict[str, int]]:
    if not isinstance(value, dict) or not value:
        raise ScenarioError(
            f"{where}: required: a table of seat -> {{spot = cents}}, e.g. wagers = {{ 1 = {{ ante = 1000 }} }}"
        )
    offers = {o.spot: o for o in spec.offers(config.game)}
    out: dict[int, dict[str, int]] = {}
    for key, spots in value.items():
        seat = _seat(key, f"{where}.{key}", config)
        if not isinstance(spots, dict) or not spots:
            raise ScenarioError(f"{where}.{key}: a table of spot -> cents, e.g. {{ ante = 1000 }}")
        for spot, amount in spots.items():
            here = f"{where}.{key}.{spot}"
            offer = offers.get(spot)
            if offer is None:
                raise ScenarioError(
                    f"{here}: this table takes no {spot!r} wager before the deal; it takes {', '.join(offers)}"
                )
            if not _is_int(amount) or not offer.min_cents <= amount <= offer.max_cents:
                raise ScenarioError(
                    f"{here}: {amount!r} is not a wager in cents within the table's limits "
                    f"{offer.min_cents} to {offer.max_cents} ({offer.rule})"
                )
        problem = spec.player_problem(spots)
        if problem is not None:
            raise ScenarioError(f"{where}.{key}: these wagers do not make a player: {problem}")
        out[seat] = dict(spots)
    return out


def _decisions(
    value: Any,
    where: str,
    config: TableConfig,
    spec: ChapterSpec[ChapterRules],
    wagers: Mapping[int, Mapping[str, int]],
) -> dict[tuple[int, str], Answer]:
    if not isinstance(value, dict):
        raise ScenarioError(f'{where}: a table of "<seat>.<decision>" -> cents | "fold" | "ride" | "withdraw"')
    decisions = {d.key: d for d in spec.decisions(config.game)}
    known = ", ".join(decisions) or "none"
    parsed: dict[tuple[int, str], Answer] = {}
    for key, answer in value.items():
        here = f'{where}."{key}"'
        seat_text, dot, decision_key = str(key).partition(".")
        if not dot:
            example = next(iter(decisions), "decision")
            raise ScenarioError(f'{here}: write the key as "<seat>.<decision>", e.g. "1.{example}"')
        seat = _seat(seat_text, here, config)
        d = decisions.get(decision_key)
        if d is None:
            raise ScenarioError(
                f"{here}: {decision_key!r} is not a decision of chapter {spec.chapter}; its decisions are {known}"
            )
        if seat not in wagers:
            raise ScenarioError(f"{here}: seat {seat} has no wagers this round, so it has no decisions")
        if d.kind == "ride_or_withdraw" and answer not in ("ride", "withdraw"):
            raise ScenarioError(
                f'{here}: {d.name} is let it ride or withdraw: answer "ride" or "withdraw", got {answer!r}'
            )
        if d.kind == "wager_or_fold" and answer != "fold" and not _is_int(answer):
            raise ScenarioError(f'{here}: {d.name} is a wager in cents or "fold", got {answer!r}')
        parsed[(seat, decision_key)] = answer
    # Amounts are checked in decision order, each seat's earlier decisions counted, as the engine will.
    for seat, spots in wagers.items():
        held = dict(spots)
        for d in spec.decisions(config.game):
            answer = parsed.get((seat, d.key))
            if d.kind != "wager_or_fold":
                if answer == "withdraw":
                    held.pop(d.spot, None)
                continue
            if not _is_int(answer):
                break  # a fold (said or by default) ends the seat's decisions
            assert isinstance(answer, int)
            allowed = list(spec.allowed(config.game, d, held))
            if answer not in allowed:
                raise ScenarioError(
                    f'{where}."{seat}.{d.key}": {answer} is not an amount {d.name} allows here; '
                    f"it allows {', '.join(map(str, allowed))} ({d.rule})"
                )
            held[d.spot] = answer
    return parsed


def _late(value: Any, where: str, config: TableConfig) -> tuple[int, str, int] | None:
    if value is None:
        return None
    if not isinstance(value, dict) or set(value) != {"seat", "spot", "amount"}:
        raise ScenarioError(f'{where}: a table {{ seat = 6, spot = "ante", amount = 500 }}')
    seat = _seat(value["seat"], f"{where}.seat", config)
    if not isinstance(value["spot"], str) or not _is_int(value["amount"]) or value["amount"] < 1:
        raise ScenarioError(f"{where}: spot must be a wager spot and amount a positive number of cents")
    return seat, value["spot"], value["amount"]


def _stub(count: Any, misdeal: Any, where: str) -> StubCount | None:
    if count is None:
        if misdeal is not None:
            raise ScenarioError(
                f"{where}.misdeal: the dealer rules on a misdeal only after a wrong stub count: give stub_count too"
            )
        return None
    if not _is_int(count) or not 0 <= count <= 52:
        raise ScenarioError(f"{where}.stub_count: the cards the dealer counts in the stub, 0 to 52, got {count!r}")
    if misdeal is not None and not isinstance(misdeal, bool):
        raise ScenarioError(f"{where}.misdeal: true (the cards were misdealt) or false, got {misdeal!r}")
    return StubCount(count, bool(misdeal))


def _faults(value: Any, source: str, config: TableConfig) -> tuple[ScriptedFault, ...]:
    try:
        script = parse_sim_script({"faults": value}, source)
    except SimScriptError as exc:
        raise ScenarioError(str(exc)) from None
    for i, f in enumerate(script.faults):
        if f.device.startswith("wager_station_") and int(f.device.rsplit("_", 1)[1]) > config.game.seats:
            raise ScenarioError(
                f"{source}: faults[{i}]: device={f.device!r}: the table has seats 1 to {config.game.seats}"
            )
    return script.faults


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


def unsensed_spots(config: TableConfig) -> list[str]:
    """The chapter's wager spots that a wager station cannot report (not in the protocol's vocabulary)."""
    spec = spec_for(config.game)
    if spec is None:
        return []
    spots = [o.spot for o in spec.offers(config.game)]
    spots += [d.spot for d in spec.decisions(config.game) if d.kind == "wager_or_fold"]
    return [spot for spot in dict.fromkeys(spots) if spot not in SPOTS]


def unplayable(config: TableConfig) -> str | None:
    """Why simulate cannot run this config, or None."""
    if spec_for(config.game) is None:
        return (
            f"chapter {config.game.chapter} has no round engine yet (the live engine runs "
            f"{', '.join(sorted(SPECS))}); `tablectl settle` settles its rounds"
        )
    missing = unsensed_spots(config)
    if missing:
        # Found here rather than as a floor that cannot put chips down half way through the round.
        return (
            f"the wager stations cannot sense the chapter's wager spot(s) {', '.join(missing)}: the reference "
            f"protocol's spots are {', '.join(SPOTS)} (drivers.interfaces.SPOTS)"
        )
    if isinstance(config.game, MississippiStudRules):
        return playable(simulated_config(config))
    return None


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
            journal_path = (
                Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="tablectl-simulate-")))
                / f"{config.table_id}.sqlite"
            )
        policy = ScenarioPolicy(scenario.scripted, random.Random(scenario.seed))
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
            )
        )
        # Not asyncio.timeout: the runner treats a cancel as "stop now" and returns normally, so the
        # expiry would not surface as TimeoutError; waiting on both says which came first.
        waiting: set[asyncio.Future[Any]] = {playing, failed}
        done, _ = await asyncio.wait(waiting, timeout=give_up_after, return_when=asyncio.FIRST_COMPLETED)
        if playing in done:
            outcome.rounds_played = playing.result()
        else:
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
        failed.cancel()
    return outcome


def main_simulate(
    config: TableConfig,
    config_path: Path,
    scenario_path: Path,
    *,
    journal: Path | None,
    broker: str | None,
    timeout: float,
    sealed: bool,
) -> int:
    why = unplayable(config)
    if why:
        print(f"tablectl: {config_path}: {why}", file=sys.stderr)
        return 2
    try:
        scenario = load_scenario(scenario_path, config)
    except ScenarioError as err:
        print(f"tablectl: {err}", file=sys.stderr)
        return 2
    outcome = asyncio.run(
        simulate(
            config, scenario, out=sys.stdout, journal_path=journal, broker=broker, give_up_after=timeout, sealed=sealed
        )
    )
    if outcome.problem is not None or not outcome.closed:
        print(f"tablectl: {scenario_path}: {outcome.problem or 'the table did not close'}", file=sys.stderr)
        return 1
    print(f"tablectl: {outcome.rounds_played} of {scenario.rounds} round(s) played", file=sys.stderr)
    return 0
