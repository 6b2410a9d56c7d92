"""A readable live log of the table for a terminal: one line per event, the rule at the right.

The terminal belongs to the table PC, so it may show cards as they are dealt (from the sealed part of
the journaled events); what is published stays card-free until settlement.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TextIO

from controller.core.events import JournaledEvent
from controller.core.money import fmt

SUIT_SYMBOLS = {"s": "♠", "h": "♥", "d": "♦", "c": "♣"}
WAGER_NAMES = {
    "ante": "Ante",
    "three_card_bonus": "Three Card Bonus",
    "six_card_bonus": "Six Card Bonus",
    "street_3": "3rd Street",
    "street_4": "4th Street",
    "street_5": "5th Street",
    "progressive": "Progressive",
    "three_card_progressive": "Three-Card Progressive",
    "five_card_progressive": "Five-Card Progressive",
    "bet_1": "Bet Number 1",
    "bet_2": "Bet Number 2",
    "bet_3": "Bet Number 3",
    "five_card_bonus": "Five Card Bonus",
}
WIDTH = 96


def show_cards(cards: Sequence[str]) -> str:
    return " ".join(("10" if c[0] == "T" else c[0]) + SUIT_SYMBOLS.get(c[1], c[1]) for c in cards)


def _hand(name: str) -> str:
    return name.replace("_", " ")


def _money_list(wagers: Mapping[str, int]) -> str:
    return ", ".join(f"{WAGER_NAMES.get(w, w)} {fmt(a)}" for w, a in wagers.items())


def _settled(p: Mapping[str, Any]) -> str:
    wagers = p["wagers"]
    staked = sum(w["amount"] for w in wagers if w["outcome"] != "withdrawn")
    paid = sum(w["paid"] for w in wagers)
    collected = sum(w["collected"] for w in wagers)
    odds = next((w["odds"] for w in wagers if w.get("odds")), None)
    if paid:
        result = f"wins {fmt(paid)}" + (f" at {odds}" if odds else "") + f" on {fmt(staked)}"
    elif collected:
        result = f"loses {fmt(collected)}"
    else:
        result = f"push, {fmt(staked)} returned"
    withdrawn = [WAGER_NAMES.get(w["wager"], w["wager"]) for w in wagers if w["outcome"] == "withdrawn"]
    if withdrawn:
        result += f" ({', '.join(withdrawn)} taken back)"
    limited = f" (capped by {p.get('payout_limit_rule') or 'the payout limit'})" if p.get("payout_limited") else ""
    cards = f"{show_cards(p['cards'])} + {show_cards(p.get('community', []))}"
    return f"seat {p['seat']}  {cards}  {_hand(p['hand'])}: {result}{limited}"


def _bonus(name: str, p: Mapping[str, Any]) -> str:
    if p["outcome"] == "win":
        result = f"+{fmt(p['paid'])}" + (f" ({p['odds']})" if p.get("odds") else "")
    else:
        result = f"-{fmt(p['collected'])}"
    return f"seat {p['seat']}  {name} {fmt(p['amount'])}: {_hand(p['hand'])} {result}"


def describe(ev: JournaledEvent) -> str | None:
    """One line for an event, or None for events an operator watching the table need not see."""
    p: Mapping[str, Any] = ev.payload
    sealed: Mapping[str, Any] = ev.sealed or {}
    lines: dict[str, Callable[[], str]] = {
        "table.opened": lambda: f"table open: {p['game']} (chapter {p['chapter']}), {p['seats']} seats",
        "shuffle.completed": lambda: f"shuffler counted {p['card_count']} cards; deck in the dealing shoe",
        "deck.removed": lambda: f"DECK REMOVED: {p['reason']}",
        "betting.opened": lambda: (
            f"betting open: {fmt(p['ante_min'])}-{fmt(p['ante_max'])}; "
            + ", ".join(WAGER_NAMES.get(w, w) for w in p["wagers_offered"])
        ),
        "wager.accepted": lambda: f"seat {p['seat']}  {WAGER_NAMES.get(p['spot'], p['spot'])} {fmt(p['amount'])}",
        "wager.rejected": lambda: (
            f"seat {p['seat']}  {WAGER_NAMES.get(p['spot'], p['spot'])} {fmt(p['amount'])} REJECTED: {p['reason']}"
        ),
        "wager.returned": lambda: (
            f"seat {p['seat']}  {WAGER_NAMES.get(p['spot'], p['spot'])} {fmt(p['amount'])} returned: {p['reason']}"
        ),
        "no_more_bets": lambda: f"NO MORE BETS  players at seats {', '.join(map(str, p['players']))}",
        "lockout.confirmed": lambda: f"all {p['stations']} wager stations confirmed the lock-out",
        "cards.dealt": lambda: f"seat {p['seat']}  dealt {show_cards(sealed.get('cards', []))}",
        "six_card_bonus.dealt": lambda: f"Six Card Bonus cards dealt face down: {show_cards(sealed.get('cards', []))}",
        "community.dealt": lambda: f"community cards dealt face down: {show_cards(sealed.get('cards', []))}",
        "stub.discarded": lambda: f"stub of {p['count']} cards to the discard rack",
        "decision.requested": lambda: (
            f"seat {p['seat']}  {p['street']}: let it ride or take it back?"
            if p.get("kind") == "ride_or_withdraw"
            else f"seat {p['seat']}  {p['street']}: bet " + " / ".join(fmt(a) for a in p["allowed"]) + " or fold?"
        ),
        "bet.rides": lambda: f"seat {p['seat']}  {WAGER_NAMES.get(p['bet'], p['bet'])} {fmt(p['amount'])} rides",
        "bet.withdrawn": lambda: (
            f"seat {p['seat']}  {WAGER_NAMES.get(p['bet'], p['bet'])} {fmt(p['amount'])} taken back"
        ),
        "burn.dealt": lambda: f"card burned: {show_cards(sealed.get('cards', []))}",
        "street_wager.placed": lambda: f"seat {p['seat']}  {p['street']} {fmt(p['amount'])} ({p['multiple']}x)",
        "seat.folded": lambda: f"seat {p['seat']}  folds on {p['street']}; collected {_money_list(p['collected'])}",
        "community.revealed": lambda: f"community card {p['index']}: {show_cards([sealed.get('card', '??')])}",
        "hand.settled": lambda: _settled(p),
        "three_card_bonus.settled": lambda: _bonus("Three Card Bonus", p),
        "six_card_bonus.revealed": lambda: f"Six Card Bonus cards: {show_cards(p['cards'])}",
        "six_card_bonus.settled": lambda: _bonus("Six Card Bonus", p),
        "round.completed": lambda: (
            f"round {p['round_no']} complete: paid {fmt(p['paid'])}, collected "
            f"{fmt(p['collected'])}, table {'+' if p['table_result'] >= 0 else ''}"
            f"{fmt(p['table_result'])}"
        ),
        "round.voided": lambda: f"ROUND VOID: {p['reason']}; {p['remedy']}",
        "shuffle.failed": lambda: f"shuffle failed ({p['code']}): {p['remedy']}",
        "device.offline": lambda: f"device {p['device_id']} OFFLINE: {p['reason']}",
        "device.fault": lambda: f"device {p['device_id']} fault {p['code']}: {p['detail']}",
        "meter.seeded": lambda: f"meter {p['level']} seeded at {fmt(p['meter_after_cents'])}",
        "progressive.settled": lambda: _bonus("Progressive", p),
        "five_card_bonus.settled": lambda: _bonus("Five Card Bonus", p),
        "three_card_progressive.settled": lambda: _bonus("Three-Card Progressive", p),
        "five_card_progressive.settled": lambda: _bonus("Five-Card Progressive", p),
        "progressive.hit": lambda: (
            f"JACKPOT seat {p['seat']}  {p['percent']}% of the {p['level']} meter = "
            f"{fmt(p['amount'])} (meter {fmt(p['meter_before'])} -> "
            f"{fmt(p['meter_after'])}); awaiting a floorperson's validation ({p['hit']})"
        ),
        "progressive.paid": lambda: f"jackpot {p['hit']} validated and paid: seat {p['seat']} {fmt(p['amount'])}",
        "progressive.locked_out": lambda: f"PROGRESSIVE WAGERS LOCKED OUT: {p['reason']}",
        "progressive.unlocked": lambda: "progressive wagers open again",
        "table.closing": lambda: f"table closing after round {p['after_round']}",
        "table.closed": lambda: f"table closed ({p['rounds_played']} rounds so far at this table)",
    }
    render = lines.get(ev.type)
    if render is None:
        return None
    try:
        return render()
    except (KeyError, TypeError, ValueError, IndexError) as err:
        # A payload this log does not know (another chapter's, a newer engine's): show it plainly rather than
        # lose the rest of the log. The journal has it whole either way.
        return f"{ev.type} {dict(p)} (not shown in full: {type(err).__name__} {err})"[:300]


class Console:
    def __init__(self, events: asyncio.Queue[JournaledEvent], out: TextIO) -> None:
        self._events = events
        self._out = out
        self._round: str | None = None
        self._meters: dict[str, int] = {}  # level -> display in cents, from the meter events

    def write(self, ev: JournaledEvent) -> None:
        if ev.type.startswith("meter.") and "meter_after_cents" in ev.payload:
            self._meters[str(ev.payload["level"])] = int(ev.payload["meter_after_cents"])
        text = describe(ev)
        if text is None:
            return
        if ev.type == "betting.opened":
            title = f"── round {ev.payload['round_no']} ({ev.round_id}) "
            self._out.write("\n" + title + "─" * max(0, WIDTH - len(title)) + "\n")
        rule = ev.rule or ""
        pad = max(1, WIDTH - 2 - len(text) - len(rule))
        self._out.write(f"  {text}{' ' * pad}{rule}\n")
        if ev.type in ("round.completed", "round.voided") and self._meters:
            # What the progressive sign shows, once a round: the floor sees the meters move.
            shown = " · ".join(f"{level} {fmt(cents)}" for level, cents in self._meters.items())
            self._out.write(f"  meters: {shown}\n")
        self._out.flush()

    async def run(self) -> None:
        while True:
            self.write(await self._events.get())
