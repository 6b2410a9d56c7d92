"""What the people at a table can do besides betting and deciding, as a scenario scripts it (docs/scenarios.md,
"Actions"): a dealer-panel key or keyed count, boxes bound to one player, chips on a spot, a signed supervisor
command, the clock moving on. Each action waits for a journaled event (`at = "card.dealt 3"`): the n-th event of
that type in its round (from the round's `betting.opened` to the next one's), or from the start for the scenario's
top-level actions.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from controller.config.table import Role
from controller.core.events import JournaledEvent
from controller.supervisor.verbs import VERBS, parse_args, roles_for
from drivers.interfaces import BUTTONS, COUNTS
from drivers.sim.script import SimScriptError, parse_sim_script

# ASCII spaces only (re.ASCII): a str pattern's \s takes every Unicode space, "card.dealt\u30003" among them.
_AT = re.compile(r"^\s*([a-z][a-z0-9_]*(?:\.[a-z0-9_]+)*)\s*(?:\s([1-9][0-9]*))?\s*$", re.ASCII)
# The roles a scripted command is signed with when the scenario names none: the lowest that may sign the verb.
_ROLE_ORDER: tuple[Role, ...] = ("floorperson", "technician", "supervisor")
_DO_KEYS = ("press", "key", "bind", "place", "command", "advance_minutes", "clear")
_KEYS = frozenset({"at", "instead", "args", "role", *_DO_KEYS})
MAX_MINUTES = 7 * 24 * 60


class ActionError(ValueError):
    """An action that cannot be played; the message names the field."""


@dataclass(frozen=True, slots=True)
class Press:
    button: str  # a dealer-panel key (drivers.interfaces.BUTTONS)


@dataclass(frozen=True, slots=True)
class Key:
    what: str  # chips or stub (drivers.interfaces.COUNTS)
    count: int


@dataclass(frozen=True, slots=True)
class Bind:
    seats: tuple[int, ...]  # the dealer binds these boxes to one player on the panel (one box: released)


@dataclass(frozen=True, slots=True)
class Place:
    seat: int
    spot: str
    amount: int


@dataclass(frozen=True, slots=True)
class Command:
    verb: str
    args: Mapping[str, Any]
    role: Role


@dataclass(frozen=True, slots=True)
class Advance:
    minutes: int  # the clock moves on: a Tick this much later (deck change .3(c), idle inspection .5(f))


@dataclass(frozen=True, slots=True)
class Clear:
    device: str  # shuffler or shoe: the attendant clears its fault and the device says so (`fault_cleared`, .13(g))
    code: str
    detail: str = ""


Do = Press | Key | Bind | Place | Command | Advance | Clear


@dataclass(frozen=True, slots=True)
class Action:
    event: str  # the journaled event type it waits for
    count: int  # the n-th such event in its span
    do: Do
    instead: bool = False  # the simulated people do not also react to that event as they would
    where: str = ""  # the scenario's step, e.g. "FILE: actions[0]", for an error found when it is due


@dataclass
class ActionScript:
    """The scenario's actions and which are due on each journaled event, in the order they are listed."""

    start: Sequence[Action] = ()
    rounds: Mapping[int, Sequence[Action]] = field(default_factory=dict)
    _round: int = 0
    _seen: Counter[str] = field(default_factory=Counter)
    _seen_in_round: Counter[str] = field(default_factory=Counter)

    def due(self, ev: JournaledEvent) -> list[Action]:
        if ev.type == "betting.opened":
            self._round = int(ev.payload["round_no"])
            self._seen_in_round = Counter()
        self._seen[ev.type] += 1
        self._seen_in_round[ev.type] += 1
        return [a for a in self.start if (a.event, a.count) == (ev.type, self._seen[ev.type])] + [
            a for a in self.rounds.get(self._round, ()) if (a.event, a.count) == (ev.type, self._seen_in_round[ev.type])
        ]

    def roles(self) -> set[Role]:
        """The roles whose signing keys the scripted commands need."""
        actions = [*self.start, *(a for r in self.rounds.values() for a in r)]
        return {a.do.role for a in actions if isinstance(a.do, Command)}


def parse_actions(value: Any, where: str, seats: int) -> tuple[Action, ...]:
    """A list of action tables (TOML [[round.actions]] or JSON); ActionError naming the field."""
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(a, dict) for a in value):
        raise ActionError(f"{where}: a list of action tables, e.g. [[round.actions]] at = ... press = ...")
    return tuple(_action(a, f"{where}[{i}]", seats) for i, a in enumerate(value))


def _action(raw: dict[str, Any], where: str, seats: int) -> Action:
    unknown = set(raw) - _KEYS
    if unknown:
        raise ActionError(f"{where}: unknown key(s) {', '.join(sorted(unknown))}; expected {', '.join(sorted(_KEYS))}")
    at = raw.get("at")
    match = _AT.fullmatch(at) if isinstance(at, str) else None
    if match is None:
        raise ActionError(
            f'{where}.at: the journaled event it waits for, "<type>" or "<type> <n>" (the n-th in its round), '
            f'e.g. "card.dealt 3", got {at!r}'
        )
    chosen = [k for k in _DO_KEYS if k in raw]
    if len(chosen) != 1:
        raise ActionError(f"{where}: give exactly one of {', '.join(_DO_KEYS)} (what the person does), got {chosen}")
    instead = raw.get("instead", False)
    if not isinstance(instead, bool):
        raise ActionError(f"{where}.instead: true or false, got {instead!r}")
    if chosen[0] != "command" and ("args" in raw or "role" in raw):
        raise ActionError(f"{where}: args and role go with command")
    do = _do(chosen[0], raw, f"{where}.{chosen[0]}", seats)
    return Action(match.group(1), int(match.group(2) or 1), do, instead, where)


def _do(kind: str, raw: dict[str, Any], where: str, seats: int) -> Do:
    value = raw[kind]
    if kind == "press":
        if value not in BUTTONS:
            raise ActionError(f"{where}: {value!r} is not a dealer-panel key; the keys are {', '.join(BUTTONS)}")
        return Press(value)
    if kind == "key":
        if not isinstance(value, dict) or value.get("what") not in COUNTS or not _count(value.get("count")):
            raise ActionError(f'{where}: a table {{ what = "stub", count = 40 }}, what one of {", ".join(COUNTS)}')
        return Key(value["what"], value["count"])
    if kind == "bind":
        ok = isinstance(value, list) and value and all(_is_int(n) and 1 <= n <= seats for n in value)
        if not ok:
            raise ActionError(f"{where}: a list of the boxes bound to one player, seats 1 to {seats}, e.g. [3, 4]")
        return Bind(tuple(value))
    if kind == "place":
        return _place(value, where, seats)
    if kind == "command":
        return _command(value, raw.get("args", {}), raw.get("role"), where)
    if kind == "clear":
        return _clear(value, where)
    if not _is_int(value) or not 1 <= value <= MAX_MINUTES:
        raise ActionError(f"{where}: whole minutes from 1 to {MAX_MINUTES}, got {value!r}")
    return Advance(value)


def _place(value: Any, where: str, seats: int) -> Place:
    if not isinstance(value, dict) or set(value) != {"seat", "spot", "amount"}:
        raise ActionError(f'{where}: a table {{ seat = 2, spot = "all_six_bonus", amount = 100 }}')
    seat, spot, amount = value["seat"], value["spot"], value["amount"]
    if not _is_int(seat) or not 1 <= seat <= seats or not isinstance(spot, str) or not _is_int(amount) or amount < 1:
        raise ActionError(f"{where}: seat 1 to {seats}, spot a wager spot, amount a positive number of cents")
    return Place(seat, spot, amount)


def _clear(value: Any, where: str) -> Clear:
    # Validated as a sim script's [[clears]] entry is, so both say the same about a bad one.
    if not isinstance(value, dict) or "when" in value:
        raise ActionError(f'{where}: a table {{ device = "shoe", code = "jam" }} (detail optional; at says when)')
    try:
        clear = parse_sim_script({"clears": [value]}, where).clears[0]
    except SimScriptError as err:
        raise ActionError(str(err).replace(f"{where}: clears[0]", where, 1)) from None
    return Clear(clear.device, clear.code, clear.detail)


def _command(verb: Any, args: Any, role: Any, where: str) -> Command:
    if verb not in VERBS:
        raise ActionError(f"{where}: {verb!r} is not a supervisor verb; the verbs are {', '.join(VERBS)}")
    if not isinstance(args, dict):
        raise ActionError(f"{where}: args is a table of the verb's arguments")
    try:
        parse_args(verb, args)
    except ValueError as err:
        raise ActionError(f"{where}: {err}") from None
    allowed = roles_for(verb)
    if role is None:
        role = next(r for r in _ROLE_ORDER if r in allowed)
    if role not in allowed:
        raise ActionError(f"{where}: a {role!r} may not sign {verb}; {', '.join(allowed)} may (docs/commands.md)")
    chosen: Role = next(r for r in _ROLE_ORDER if r == role)
    return Command(verb, dict(args), chosen)


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _count(value: Any) -> bool:
    return _is_int(value) and value >= 0
