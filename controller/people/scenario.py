"""A scenario of `tablectl simulate` (docs/scenarios.md), read from TOML or JSON and checked against the table it
runs on: each round's deck order, the players' wagers and decisions, the dealer's stub counts, device faults."""

from __future__ import annotations

import json
import random
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from controller.config.files import FileRefused, read_bounded
from controller.config.table import TableConfig
from controller.core.cards import STANDARD_DECK
from controller.core.digits import is_ascii_digits
from controller.core.settlement import ChapterRules
from controller.core.spaces import split_ascii
from controller.engine.spec import ChapterSpec
from controller.games.registry import spec_for
from controller.people.actions import ActionError, ActionScript, Clear, parse_actions
from controller.people.demo import ScriptedRound
from controller.people.policy import Answer, StubCount
from drivers.reference.framing import is_card
from drivers.sim.script import REPORTS, UNSCRIPTED, ScriptedFault, SimScriptError, parse_sim_script

SCENARIO_MAX_BYTES = 4 * 1024 * 1024  # scripted rounds: decks, wagers, decisions, faults; far below this
_TOP_KEYS = frozenset({"description", "seed", "rounds", "round", "faults", "actions"})
_ROUND_KEYS = frozenset({"deck", "wagers", "decisions", "late", "stub_count", "misdeal", "actions"})


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
    script: ActionScript = field(default_factory=ActionScript)


def load_scenario(path: str | Path, config: TableConfig) -> Scenario:
    """Read a .toml or .json scenario and check it against the table it runs on; ScenarioError if bad."""
    path = Path(path)
    try:
        text = read_bounded(path, SCENARIO_MAX_BYTES).decode("utf-8")
    except FileRefused as exc:
        # A FIFO or a device would have blocked the read for ever (tablectl simulate --scenario /dev/zero).
        raise ScenarioError(f"cannot read scenario {exc.path}: {exc.problem}; give a .toml or .json scenario") from None
    except UnicodeDecodeError as exc:
        raise ScenarioError(f"{path} is not UTF-8 text (byte offset {exc.start}): save the scenario as UTF-8") from None
    is_json = path.suffix.lower() == ".json"
    try:
        data: Any = json.loads(text) if is_json else tomllib.loads(text)
    except (ValueError, tomllib.TOMLDecodeError) as exc:
        raise ScenarioError(f"{path}: not valid {'JSON' if is_json else 'TOML'}: {exc}") from None
    return parse_scenario(data, config, str(path))


def _refuse_unknown_top_keys(data: dict[str, Any], source: str) -> None:
    unknown = set(data) - _TOP_KEYS
    if not unknown:
        return
    # A sim script's [[clears]] is the likely slip: name the scenario's own way, an action on what the table shows.
    hint = (
        '; a scenario clears a fault by an action: [[actions]] at = "table.blocked", '
        'clear = { device = "shoe", code = "jam" } (docs/scenarios.md)'
        if "clears" in unknown
        else ""
    )
    raise ScenarioError(
        f"{source}: unknown key(s) {', '.join(sorted(unknown))}; expected {', '.join(sorted(_TOP_KEYS))}{hint}"
    )


def parse_scenario(data: Any, config: TableConfig, source: str = "scenario") -> Scenario:
    spec = spec_for(config.game)
    if spec is None:
        raise ScenarioError(f"{source}: chapter {config.game.chapter} has no round engine yet")
    if not isinstance(data, dict):
        raise ScenarioError(f"{source}: expected a table/object at the top, got {type(data).__name__}")
    _refuse_unknown_top_keys(data, source)
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
    try:
        start = parse_actions(data.get("actions"), f"{source}: actions", config.game.seats)
        actions = {
            i + 1: parse_actions(r.get("actions"), f"{source}: round[{i}].actions", config.game.seats)
            for i, r in enumerate(raw_rounds)
        }
    except ActionError as err:
        raise ScenarioError(str(err)) from None
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
    script = ActionScript(start, actions)
    _refuse_clears_never_reported(script, faults)
    return Scenario(rounds, tuple(scripted), tuple(decks), faults, seed, description, script)


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _deck(value: Any, where: str, rng: random.Random) -> tuple[str, ...]:
    if value is None:
        deck = list(STANDARD_DECK)
        rng.shuffle(deck)
        return tuple(deck)
    cards = split_ascii(value) if isinstance(value, str) else value
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
    if not is_ascii_digits(text) or not 1 <= int(text) <= config.game.seats:
        raise ScenarioError(f"{where}: {key!r} is not a seat of this table (1 to {config.game.seats}, in ASCII digits)")
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
        out[seat] = dict(spots)
    # A seat whose wagers do not make a player (a lone optional wager) has them handed back at "no more bets"
    # (e.g. 683a.7(d)(1)); at least one seat must make a player, or no round can be dealt.
    if all(spec.player_problem(spots) is not None for spots in out.values()):
        seat, spots = next(iter(out.items()))
        raise ScenarioError(
            f"{where}.{seat}: these wagers do not make a player: {spec.player_problem(spots)}; at least one seat "
            "must make a player for the round to be dealt"
        )
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
            if not isinstance(answer, int) or isinstance(answer, bool):
                break  # a fold (said or by default) ends the seat's decisions
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


def _refuse_clears_never_reported(script: ActionScript, faults: tuple[ScriptedFault, ...]) -> None:
    """A `clear` for a code its device never reports in this scenario (its [[faults]] say which it reports): the table
    would ignore the device's `fault_cleared` and the scenario wait until --timeout for a table that never closes."""
    for action in [*script.start, *(a for r in script.rounds.values() for a in r)]:
        do = action.do
        if not isinstance(do, Clear):
            continue
        scripted = {f.fault.kind.value for f in faults if f.device == do.device} & REPORTS[do.device]
        if do.code in scripted | UNSCRIPTED[do.device]:
            continue
        says = f"report only {', '.join(sorted(scripted))}" if scripted else "report no fault"
        raise ScenarioError(
            f"{action.where}.clear: code={do.code!r}: the scenario's [[faults]] have the {do.device} {says}; clear "
            f"the code its device.fault event names, or add the [[faults]] entry that makes the {do.device} report it"
        )


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
