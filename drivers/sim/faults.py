"""Fault injection for the simulators: what can go wrong, and when it is to happen.

A fault is either *immediate* (unplug, replug, garbage, slow_reply, no_reply: done as soon as it is
active) or a *behaviour* that changes how the device answers its next natural event (a shuffle, a
dispense, a load of the shoe, a wager placement). `when` says when the fault becomes active: at once,
or just before the device handles the Nth occurrence of an event ("shuffle 2" = the second shuffle
command since the simulator started), so a scripted fault lands on exactly that event.
"""

from __future__ import annotations

import re
import string
from dataclasses import dataclass
from enum import StrEnum


class FaultKind(StrEnum):
    # shuffler
    JAM = "jam"  # shuffler or shoe
    STOPPED = "stopped"
    INCOMPLETE = "incomplete"
    COUNT_51 = "count_51"
    COUNT_53 = "count_53"
    # shoe
    FACE_UP = "face_up"
    DUPLICATE = "duplicate"
    FOREIGN = "foreign"
    # wager station
    CHATTER = "chatter"
    # progressive sign
    LAMP_FAILURE = "lamp_failure"
    # every device
    UNPLUG = "unplug"
    REPLUG = "replug"
    GARBAGE = "garbage"
    SLOW_REPLY = "slow_reply"
    NO_REPLY = "no_reply"


# Faults a shuffler or shoe may report unprompted (Fault.report): the codes the table holds it unusable for (.13(g)).
REPORTABLE = frozenset({FaultKind.JAM, FaultKind.STOPPED, FaultKind.LAMP_FAILURE})
IMMEDIATE = frozenset({FaultKind.UNPLUG, FaultKind.REPLUG, FaultKind.GARBAGE, FaultKind.SLOW_REPLY, FaultKind.NO_REPLY})

# The event a behaviour fault changes, per device class (a jam means one thing in a shuffler, another in a shoe).
SHUFFLER_BEHAVIOUR = {
    FaultKind.JAM: "shuffle",
    FaultKind.STOPPED: "shuffle",
    FaultKind.INCOMPLETE: "shuffle",
    FaultKind.COUNT_51: "shuffle",
    FaultKind.COUNT_53: "shuffle",
}
SHOE_BEHAVIOUR = {
    FaultKind.JAM: "dispense",
    FaultKind.FACE_UP: "dispense",
    FaultKind.FOREIGN: "dispense",
    FaultKind.DUPLICATE: "load",
}
WAGER_STATION_BEHAVIOUR = {FaultKind.CHATTER: "place"}
# A sign's fault only locks progressive wagering out (`sign:<code>`, controller/engine/sign.py): the sign reports it
# after the next meters it is sent (or at once with report = true) and holds it until cleared.
SIGN_BEHAVIOUR = {FaultKind.LAMP_FAILURE: "show_levels"}

# Events a Trigger may count: every command a device handles, plus the shoe being loaded by the shuffler,
# chips going down on a wager station and a panel button press.
# "fault" counts the faults the device itself reports, so a scripted clear can follow the report it answers.
COMMON_EVENTS = frozenset({"identify", "ping", "fault"})
SHUFFLER_EVENTS = frozenset({"shuffle"})
SHOE_EVENTS = frozenset({"dispense", "remove_stub", "load"})
WAGER_STATION_EVENTS = frozenset({"lock", "unlock", "place"})
DEALER_PANEL_EVENTS = frozenset({"press", "key"})  # a button pressed; a count keyed

DEFAULT_FOREIGN_CARD = "joker"
REPORTED = "found by the device while idle (a scripted report)"  # the detail of a Fault.report
# A false SOF announcing a 1023-byte payload, then noise: the worst kind of garbage for a framer.
DEFAULT_GARBAGE = bytes([0xA5, 0x01, 0x00, 0x07, 0x01, 0x03, 0xFF]) + bytes(range(7, 207))
CHATTER_READINGS = 5  # amount, 0, amount, 0, amount


@dataclass(frozen=True, slots=True)
class Fault:
    """One fault to inject. `persistent` keeps a behaviour fault for every later event, not just the next."""

    kind: FaultKind
    persistent: bool = False
    delay_ms: int = 0  # slow_reply: how long every ACK and reply is held back
    data: bytes = b""  # garbage: bytes to write; empty means DEFAULT_GARBAGE
    card: str = DEFAULT_FOREIGN_CARD  # foreign: what the card reader reports
    # The device reports the fault by itself once it is active (a jam it finds between rounds), and stays faulted for
    # the event it changes until the attendant clears it (SimDevice.fault_cleared); only for jam and stopped.
    report: bool = False

    def __post_init__(self) -> None:
        if not isinstance(self.kind, FaultKind):
            object.__setattr__(self, "kind", FaultKind(self.kind))
        if self.delay_ms < 0:
            raise ValueError(f"delay_ms must be >= 0, got {self.delay_ms}")
        if self.kind is FaultKind.SLOW_REPLY and not self.delay_ms:
            raise ValueError("slow_reply needs delay_ms > 0")
        if self.report and self.kind not in REPORTABLE:
            raise ValueError(
                f"report = true is for a fault a device finds by itself ({', '.join(sorted(REPORTABLE))}), "
                f"not {self.kind.value}"
            )
        if not self.card or len(self.card) > 16:
            raise ValueError(f"a foreign card is reported as 1..16 characters, got {self.card!r}")


# ASCII spaces only: a str pattern's \s (and str.strip) take every Unicode space, "shuffle\u30002" among them.
_TRIGGER = re.compile(r"^\s*([a-z_]+)\s+([0-9]+)\s*$", re.ASCII)


@dataclass(frozen=True, slots=True)
class Trigger:
    """Activate a fault just before the device handles the `count`th `event` (1-based)."""

    event: str
    count: int

    def __post_init__(self) -> None:
        if self.count < 1:
            raise ValueError(f"a trigger counts from 1, got {self.count}")

    @classmethod
    def parse(cls, text: str) -> Trigger | None:
        """ "shuffle 2" -> Trigger("shuffle", 2); "now" -> None (at once)."""
        if text.strip(string.whitespace) == "now":
            return None
        match = _TRIGGER.fullmatch(text)
        if match is None:
            raise ValueError(f'when={text!r}: expected "now" or "<event> <n>" such as "shuffle 2"')
        return cls(match.group(1), int(match.group(2)))

    def __str__(self) -> str:
        return f"{self.event} {self.count}"
