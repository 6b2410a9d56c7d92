"""A demo table blocked by what none of its simulated people clears (`tablectl demo`): it stops and says why.

A tilt (a stored state that failed its checks, a journal behind the broker's anchor: docs/recovery.md) waits for a
supervisor's signed `clear_tilt`; a chip count for a floorperson's decision; a removed deck for a new one verified; a
table with no dealing method for a device back in service. The demo's floorperson brings a deck when one is due and
validates jackpots, nothing more, so such a block never lifts: the demo waited for rounds that never came. Now it closes
the table and ends with the block's reason and the operator's remedy; a block holding a round in play (the chip count)
would keep the close waiting for that round, so there the demo stops the table without it. Either way the stop is
journaled first (`demo.stopped`, docs/events.md): without it a journal stopped mid-round reads as a table that died. A
device's own fault is not one of these: it clears when the device says so (a sim script's `[[clears]]`) or comes back.
With --human-floor a person at the console can clear any of them: the demo says so once and waits, as for a deck due.
"""

from __future__ import annotations

from pathlib import Path

import structlog

from controller.core.events import DomainEvent, JournaledEvent
from controller.engine import sign
from controller.engine.commands import SIGN as SIGN_ID
from controller.engine.state import Phase, TableState
from controller.engine.tilts import is_tilt
from controller.mqtt.contract import Topics
from controller.people.actions import Action, ActionError, Clear
from controller.shell.service import TableService

log = structlog.get_logger("tablectl.demo")

# Blocks that are not tilts and that only a person the demo does not simulate clears (controller.engine).
FOR_A_PERSON = {
    "chip_count": "a floorperson's decision on the chip count (`floorperson_decision`, docs/commands.md)",
    "deck_removed": "a new deck verified by a floorperson (`verify_deck`, docs/commands.md)",
    "no_method": "the shuffler or shoe put back in service (`back_in_service`, docs/commands.md)",
}
RECOVERY = "docs/recovery.md, 'What the operator does'"
# The events that say the table is blocked: a removed deck and a chip count block it without a `table.blocked`, and a
# block raised while betting is open (no method left) is heard when "no more bets" is refused for it.
ANNOUNCING = ("table.blocked", "deck.removed", "chip_count.mismatch", "no_more_bets.refused", "table.recovered")
# Where `CloseTable` closes at once (the wagers on the layout returned); elsewhere it waits for the round to complete.
CLOSES_AT_ONCE = (Phase.SHUFFLING, Phase.BETTING, Phase.BLOCKED, Phase.OPENING, Phase.CLOSED)


class TableStuck(Exception):
    """The demo's table is blocked by what nobody in the demo clears; the message says what and what to do."""


class Unclearable:
    """Watches a demo table's events for a block none of its simulated people clears."""

    def __init__(self, *, person: bool) -> None:
        self._person = person
        self._remedies: dict[str, str] = {}  # tilt -> the remedy its event gave
        self._told = False
        self.reason: str | None = None  # set once the table must close: the message for the operator
        # The block holds a round in play (a chip count awaiting the floorperson): the table closes only once that
        # round is complete, which nobody here brings about, so the demo stops the table without its close.
        self.stop_now = False
        self._stuck: dict[str, str] = {}  # the blocks nobody here clears, once the table must stop: block -> why

    def heard(self, ev: JournaledEvent, service: TableService) -> bool:
        """True when the table must close now: `ev` announced a block and the table's blocks hold one that nobody in
        this demo clears. The service is read only then (a bench's people run on a stand-in that has no state)."""
        p = ev.payload
        if ev.type in ("critical_state.invalid", "tilt.raised") and isinstance(p.get("remedy"), str):
            self._remedies[str(p["tilt"])] = str(p["remedy"])
        if ev.type not in ANNOUNCING or self.reason is not None:
            return False
        stuck = {k: v for k, v in service.state.blocks.items() if is_tilt(k) or k in FOR_A_PERSON}
        # A restart into a round still waiting for a person (the chip count) says so only with `table.recovered`; a tilt
        # at a restart is said by its own events, which carry its remedy.
        if not stuck or (ev.type == "table.recovered" and not stuck.keys() & FOR_A_PERSON.keys()):
            return False
        message = self._message(
            stuck, service.journal.path, Topics(service.config.mqtt.prefix, service.config.table_id)
        )
        if self._person:
            if not self._told:
                self._told = True
                log.warning("the table waits for a supervisor at the console", problem=message)
            return False
        self.stop_now = service.state.round is not None and service.state.phase not in CLOSES_AT_ONCE
        self._stuck = stuck
        self.reason = message + (
            "\n  the round in play stays open in the journal: the table stopped without closing, and the decision is "
            "still due when it starts again"
            if self.stop_now
            else ""
        )
        return True

    def stopped(self, state: TableState) -> DomainEvent:
        """The journal's record of the stop `heard` decided, journaled before the close (or as the last event when the
        table stops without one): a reader of the file, and the table started again on it, see a table stopped on
        purpose on these blocks, not one that died; with a round open, that no wager moved without the person."""
        rnd = state.round if self.stop_now else None
        remedy = (
            "the table stopped without closing: the round stays open in the journal, no wager moved; started again "
            "on this journal it resumes the round, still awaiting the person named (docs/recovery.md)"
            if rnd is not None
            else "the table closes now; started again on this journal, the blocks stand until cleared"
        )
        payload = {
            "by": "tablectl demo",
            "blocks": dict(sorted(self._stuck.items())),
            "awaiting": {block: self._remedy(block) for block in sorted(self._stuck)},
            "closes": rnd is None,
            "phase": state.phase.value,
            "round_no": state.round.number if state.round is not None else None,
            "remedy": remedy,
        }
        return DomainEvent("demo.stopped", None, payload, round_id=rnd.round_id if rnd is not None else None)

    def _remedy(self, block: str) -> str:
        return self._remedies.get(block) or FOR_A_PERSON.get(block, "a supervisor's signed clear_tilt")

    def _message(self, blocks: dict[str, str], journal: Path, topics: Topics) -> str:
        lines = ["the table is blocked, and nobody in the demo can clear it:"]
        for block, why in sorted(blocks.items()):
            lines.append(f"  {block}: {why}")
            lines.append(f"    what to do: {self._remedy(block)}")
        if "tilt:rollback" in blocks:
            lines.append(
                "  a demo started on a new --journal while its broker keeps the table's earlier anchor does this: run "
                f"it on the journal it used before, or start the table over: delete the journal with its anchor file "
                f"(rm {journal}*) and clear the broker's retained anchor (mosquitto_pub -r -n -t "
                f"{topics.anchor}, with -h/-p for --broker), or use another broker"
            )
        lines.append(f"  ({RECOVERY}; the events: tablectl journal tail --journal {journal})")
        return "\n".join(lines)


def held_codes(state: TableState, device: str) -> tuple[str, ...]:
    """The fault codes the table holds for `device` (or keeps for it while it is covered): a sign's are its progressive
    lock-out reasons (`sign:<code>`)."""
    if device == SIGN_ID:
        return tuple(sign.held_codes(state.progressive_lockout))
    held = state.device_faults.get(device)
    codes = held.uncleared if held is not None else ()
    # A device marked out of order holds nothing, but what it reported while covered waits for its clear before a
    # back_in_service is taken (docs/rules.md): a clear of it is heard.
    covered = state.covered_reports.get(device)
    kept = covered.fault.uncleared if covered is not None and covered.fault is not None else ()
    return codes + tuple(c for c in kept if c not in codes)


def refuse_unheld(action: Action, held: tuple[str, ...]) -> None:
    """A scripted clear due now for a fault the device does not hold (`held`: the codes the table holds for it): the
    table would ignore the device's `fault_cleared` and wait for a clear that never comes, so the scenario fails at
    once naming the step. (controller.people.scenario refuses it at load when the scenario's faults say the codes.)"""
    do = action.do
    if not isinstance(do, Clear) or do.code in held:
        return
    holds = f"it holds {', '.join(held)}" if held else "it holds no fault"
    raise ActionError(
        f"{action.where}: clear {do.device} {do.code!r} at {action.event} {action.count}: the table never heard the "
        f"{do.device} report {do.code!r} ({holds}); clear the code of its device.fault event, at an event after it"
    )
