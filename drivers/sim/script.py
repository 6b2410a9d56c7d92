"""Sim scripts: a TOML or JSON file of scripted deck orders and faults to drive a SimulatedTable.

    decks = [["As", "Kd", ...], "Qh 7c ..."]    # shuffles 1, 2...: a list of cards or one spaced string
    [[faults]]
    device = "shuffler"                        # shuffler, shoe, dealer_panel, progressive_sign, wager_station_<seat>
    fault = "jam"                              # a drivers.sim.faults.FaultKind value
    when = "shuffle 1"                         # "now" (default) or "<event> <n>"
    persistent = false                         # optional; delay_ms, data_hex, card, report as the fault needs
    [[clears]]                                 # the attendant clears a fault the table holds (.13(g))
    device = "shoe"                            # shuffler, shoe or progressive_sign
    code = "jam"                               # the fault code the device reported
    when = "fault 1"                           # "now" (default) or "<event> <n>"; "ping n": since its fault report
    detail = "cleared by hand"                 # optional

docs/protocol.md ("Simulators and fault injection") is the reference.
"""

from __future__ import annotations

import json
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from drivers.reference.framing import is_card
from drivers.sim.faults import (
    COMMON_EVENTS,
    DEALER_PANEL_EVENTS,
    IMMEDIATE,
    SHOE_BEHAVIOUR,
    SHOE_EVENTS,
    SHUFFLER_BEHAVIOUR,
    SHUFFLER_EVENTS,
    SIGN_BEHAVIOUR,
    WAGER_STATION_BEHAVIOUR,
    WAGER_STATION_EVENTS,
    Fault,
    FaultKind,
    Trigger,
)
from drivers.sim.progressive_sign import SIGN_EVENTS
from drivers.sim.wager_terminal import WAGER_TERMINAL_EVENTS

# Per device class, the same tables the simulators use, so a bad script fails at load rather than mid-run.
DEVICE_CLASSES: dict[str, tuple[Mapping[FaultKind, str], frozenset[str]]] = {
    "shuffler": (SHUFFLER_BEHAVIOUR, SHUFFLER_EVENTS),
    "shoe": (SHOE_BEHAVIOUR, SHOE_EVENTS),
    "wager_station": (WAGER_STATION_BEHAVIOUR, WAGER_STATION_EVENTS),
    "dealer_panel": ({}, DEALER_PANEL_EVENTS),
    "progressive_sign": (SIGN_BEHAVIOUR, SIGN_EVENTS),
    "wager_terminal": ({}, WAGER_TERMINAL_EVENTS),
}
_STATION = re.compile(r"^wager_station_([1-9][0-9]*)$")
_TERMINAL = re.compile(r"^wager_terminal_([1-9][0-9]*)$")
# A deck string is spaced in ASCII (as re.ASCII's \s): str.split() would also split on U+3000, U+00A0 and the
# separators U+001C..U+001F, so "As\u3000Kd" read as two cards (drivers never import controller.core.spaces).
ASCII_SPACE = " \t\n\r\f\v"
_SPACES = re.compile(r"[ \t\n\r\f\v]+")
_FAULT_KEYS = frozenset({"device", "fault", "when", "persistent", "delay_ms", "data_hex", "card", "report"})
_CLEAR_KEYS = frozenset({"device", "code", "when", "detail"})
# The devices whose reported fault the table holds until they say it cleared: a shuffler's or shoe's stops rounds
# (controller.engine.device_holds, other_method), a sign's locks progressive wagering out (controller.engine.sign).
HOLDING = ("shuffler", "shoe", "progressive_sign")
# The fault codes each of them reports for a scripted fault (drivers.sim.shuffler's failures, the shoe's jam: the
# fault's own name), and unscripted (a shoe asked for cards it does not have): the codes a clear may name.
REPORTS = {
    "shuffler": frozenset({"jam", "stopped", "incomplete"}),
    "shoe": frozenset({"jam"}),
    "progressive_sign": frozenset(k.value for k in SIGN_BEHAVIOUR),
}
UNSCRIPTED = {"shuffler": frozenset[str](), "shoe": frozenset({"empty"}), "progressive_sign": frozenset[str]()}
_CODE = re.compile(r"[a-z][a-z0-9_]{0,31}")


class SimScriptError(ValueError):
    """A sim script that cannot be used; the message names the file and the problem."""


@dataclass(frozen=True, slots=True)
class ScriptedFault:
    device: str
    fault: Fault
    when: Trigger | None = None  # None: at once, when the script is applied


@dataclass(frozen=True, slots=True)
class ScriptedClear:
    """The attendant clears fault `code` on `device` (SimDevice.clear_at): the device says `fault_cleared`."""

    device: str
    code: str
    when: Trigger | None = None  # None: at once, when the script is applied
    detail: str = ""


@dataclass(frozen=True, slots=True)
class SimScript:
    decks: tuple[tuple[str, ...], ...] = ()
    faults: tuple[ScriptedFault, ...] = ()
    clears: tuple[ScriptedClear, ...] = ()


def device_class(device: str) -> str | None:
    if device in DEVICE_CLASSES:
        return device
    if _TERMINAL.fullmatch(device):
        return "wager_terminal"
    return "wager_station" if _STATION.fullmatch(device) else None


def load_sim_script(path: str | Path) -> SimScript:
    """Read a .toml or .json sim script; SimScriptError says what is wrong and where."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise SimScriptError(f"{path}: cannot read: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise SimScriptError(
            f"{path} is not UTF-8 text (byte offset {exc.start}): save the sim script as UTF-8"
        ) from None
    return loads_sim_script(text, path)


def loads_sim_script(text: str, path: str | Path) -> SimScript:
    """A sim script from the text of the file at `path` (its suffix says JSON or TOML), read by the caller: the
    controller's CLI reads it bounded, refusing a FIFO or a device (controller.config.files)."""
    path = Path(path)
    try:
        data: Any = json.loads(text) if path.suffix.lower() == ".json" else tomllib.loads(text)
    except (ValueError, tomllib.TOMLDecodeError) as exc:
        kind = "JSON" if path.suffix.lower() == ".json" else "TOML"
        raise SimScriptError(f"{path}: not valid {kind}: {exc}") from None
    return parse_sim_script(data, str(path))


def parse_sim_script(data: Any, source: str = "sim script") -> SimScript:
    if not isinstance(data, dict):
        raise SimScriptError(f"{source}: expected a table/object at the top, got {type(data).__name__}")
    unknown = set(data) - {"decks", "faults", "clears"}
    if unknown:
        raise SimScriptError(f"{source}: unknown key(s) {', '.join(sorted(unknown))}; expected decks, faults, clears")
    decks_raw = data.get("decks", [])
    faults_raw = data.get("faults", [])
    clears_raw = data.get("clears", [])
    if not isinstance(decks_raw, list):
        raise SimScriptError(f"{source}: decks must be a list of decks")
    if not isinstance(faults_raw, list):
        raise SimScriptError(f"{source}: faults must be a list of [[faults]] tables")
    if not isinstance(clears_raw, list):
        raise SimScriptError(f"{source}: clears must be a list of [[clears]] tables")
    decks = tuple(_deck(deck, f"{source}: decks[{i}]") for i, deck in enumerate(decks_raw))
    faults = tuple(_fault(entry, f"{source}: faults[{i}]") for i, entry in enumerate(faults_raw))
    clears = tuple(_clear(entry, f"{source}: clears[{i}]") for i, entry in enumerate(clears_raw))
    return SimScript(decks, faults, clears)


def _deck(value: Any, where: str) -> tuple[str, ...]:
    cards = _SPACES.split(value.strip(ASCII_SPACE)) if isinstance(value, str) and value.strip(ASCII_SPACE) else value
    if not isinstance(cards, list) or not cards:
        raise SimScriptError(f"{where}: a deck is a non-empty list of cards or a string of spaced cards")
    for j, card in enumerate(cards):
        if not is_card(card):
            raise SimScriptError(f'{where}[{j}]: {card!r} is not a card like "As" or "Td"')
    return tuple(cards)


def _fault(entry: Any, where: str) -> ScriptedFault:
    if not isinstance(entry, dict):
        raise SimScriptError(f"{where}: expected a table with device, fault and when")
    unknown = set(entry) - _FAULT_KEYS
    if unknown:
        raise SimScriptError(f"{where}: unknown key(s) {', '.join(sorted(unknown))}")
    device = entry.get("device")
    klass = device_class(device) if isinstance(device, str) else None
    if klass is None or not isinstance(device, str):
        raise SimScriptError(
            f"{where}: device={device!r} is not shuffler, shoe, dealer_panel, progressive_sign, wager_station_<seat> "
            "or wager_terminal_<seat>"
        )
    behaviours = DEVICE_CLASSES[klass][0]
    name = entry.get("fault")
    try:
        kind = FaultKind(name if isinstance(name, str) else "")
    except ValueError:
        raise SimScriptError(f"{where}: fault={name!r} is not one of {', '.join(k.value for k in FaultKind)}") from None
    if kind not in IMMEDIATE and kind not in behaviours:
        takes = ", ".join(sorted(k.value for k in IMMEDIATE | set(behaviours)))
        raise SimScriptError(f"{where}: a {klass} cannot have fault {kind.value!r}; it takes {takes}")
    trigger = _when(entry, where, klass)
    persistent = entry.get("persistent", False)
    delay_ms = entry.get("delay_ms", 0)
    card = entry.get("card", "joker")
    data_hex = entry.get("data_hex", "")
    report = entry.get("report", False)
    if not isinstance(persistent, bool):
        raise SimScriptError(f"{where}: persistent must be true or false, got {persistent!r}")
    if not isinstance(report, bool):
        raise SimScriptError(f"{where}: report must be true or false, got {report!r}")
    if not isinstance(delay_ms, int) or isinstance(delay_ms, bool):
        raise SimScriptError(f"{where}: delay_ms must be an integer number of milliseconds, got {delay_ms!r}")
    if not isinstance(card, str):
        raise SimScriptError(f"{where}: card must be a string, got {card!r}")
    try:
        data = bytes.fromhex(data_hex) if isinstance(data_hex, str) else None
    except ValueError:
        data = None
    if data is None:
        raise SimScriptError(f'{where}: data_hex must be hex digits such as "a5 01 ff", got {data_hex!r}')
    try:
        fault = Fault(kind, persistent=persistent, delay_ms=delay_ms, data=data, card=card, report=report)
    except ValueError as exc:
        raise SimScriptError(f"{where}: {exc}") from None
    return ScriptedFault(device, fault, trigger)


def _when(entry: dict[str, Any], where: str, klass: str) -> Trigger | None:
    events = DEVICE_CLASSES[klass][1] | COMMON_EVENTS
    when = entry.get("when", "now")
    if not isinstance(when, str):
        raise SimScriptError(f'{where}: when must be a string such as "now" or "shuffle 2", got {when!r}')
    try:
        trigger = Trigger.parse(when)
    except ValueError as exc:
        raise SimScriptError(f"{where}: {exc}") from None
    if trigger is not None and trigger.event not in events:
        raise SimScriptError(
            f"{where}: a {klass} never sees {trigger.event!r}; when counts one of {', '.join(sorted(events))}"
        )
    return trigger


def _clear(entry: Any, where: str) -> ScriptedClear:
    if not isinstance(entry, dict):
        raise SimScriptError(f"{where}: expected a table with device, code and when")
    unknown = set(entry) - _CLEAR_KEYS
    if unknown:
        raise SimScriptError(
            f"{where}: unknown key(s) {', '.join(sorted(unknown))}; expected {', '.join(sorted(_CLEAR_KEYS))}"
        )
    device = entry.get("device")
    if device not in HOLDING or not isinstance(device, str):
        raise SimScriptError(
            f"{where}: device={device!r}: only the fault of a {', '.join(HOLDING[:-1])} or {HOLDING[-1]} is cleared "
            "this way, the devices "
            "whose faults a script makes and the table holds until cleared (.13(g); a sign's progressive lock-out); a "
            "station is used once online"
        )
    code = entry.get("code")
    if not isinstance(code, str) or not _CODE.fullmatch(code):
        raise SimScriptError(
            f'{where}: code={code!r}: the fault code the {device} reported, a-z, 0-9 and _, such as "jam"'
        )
    detail = entry.get("detail", "")
    if not isinstance(detail, str):
        raise SimScriptError(f"{where}: detail must be text, got {detail!r}")
    return ScriptedClear(device, code, _when(entry, where, device), detail)
