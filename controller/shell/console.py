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
    "five_card_hand_bonus": "Five Card Hand Bonus",
    "magic_card_bonus": "Magic Card",
    "lucky_bonus": "Lucky Bonus",
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


# One line per event type an operator watching the table needs to see: (payload, sealed part) -> text.
_Line = Callable[[Mapping[str, Any], Mapping[str, Any]], str]
LINES: Mapping[str, _Line] = {
    "table.opened": lambda p, sealed: (
        f"table open: {p['game']} (chapter {p['chapter']}), {p['seats']} seats{_still_out(p)}"
    ),
    "shuffle.completed": lambda p, sealed: f"shuffler counted {p['card_count']} cards; deck in the dealing shoe",
    "deck.removed": lambda p, sealed: f"DECK REMOVED: {p['reason']}",
    # A blocked table plays no round until someone acts: without these lines the terminal stayed silent and a demo
    # whose journal's deck had been in play 8 hours (.3(c)) looked hung.
    "table.blocked": lambda p, sealed: "TABLE BLOCKED: " + "; ".join(map(str, p["reasons"].values())),
    "table.block_cleared": lambda p, sealed: f"block cleared ({p['by']}): {p['block'].replace('_', ' ')}",
    "deck.verified": lambda p, sealed: f"new deck {', '.join(p['decks'])} verified by the {p['by']}",
    "betting.opened": lambda p, sealed: (
        f"betting open: {fmt(p['ante_min'])}-{fmt(p['ante_max'])}; "
        + ", ".join(WAGER_NAMES.get(w, w) for w in p["wagers_offered"])
    ),
    "wager.accepted": lambda p, sealed: f"seat {p['seat']}  {WAGER_NAMES.get(p['spot'], p['spot'])} {fmt(p['amount'])}",
    "wager.rejected": lambda p, sealed: (
        f"seat {p['seat']}  {WAGER_NAMES.get(p['spot'], p['spot'])} {fmt(p['amount'])} REJECTED: {p['reason']}"
    ),
    "wager.returned": lambda p, sealed: (
        f"seat {p['seat']}  {WAGER_NAMES.get(p['spot'], p['spot'])} {fmt(p['amount'])} returned: {p['reason']}"
    ),
    "no_more_bets": lambda p, sealed: f"NO MORE BETS  players at seats {', '.join(map(str, p['players']))}",
    "lockout.confirmed": lambda p, sealed: f"all {p['stations']} wager stations confirmed the lock-out",
    "cards.dealt": lambda p, sealed: f"seat {p['seat']}  dealt {show_cards(sealed.get('cards', []))}",
    "six_card_bonus.dealt": lambda p, sealed: (
        f"Six Card Bonus cards dealt face down: {show_cards(sealed.get('cards', []))}"
    ),
    "community.dealt": lambda p, sealed: f"community cards dealt face down: {show_cards(sealed.get('cards', []))}",
    "stub.discarded": lambda p, sealed: f"stub of {p['count']} cards to the discard rack",
    "decision.requested": lambda p, sealed: (
        f"seat {p['seat']}  {p['street']}: let it ride or take it back?"
        if p.get("kind") == "ride_or_withdraw"
        else f"seat {p['seat']}  {p['street']}: bet " + " / ".join(fmt(a) for a in p["allowed"]) + " or fold?"
    ),
    "bet.rides": lambda p, sealed: f"seat {p['seat']}  {WAGER_NAMES.get(p['bet'], p['bet'])} {fmt(p['amount'])} rides",
    "bet.withdrawn": lambda p, sealed: (
        f"seat {p['seat']}  {WAGER_NAMES.get(p['bet'], p['bet'])} {fmt(p['amount'])} taken back"
    ),
    "burn.dealt": lambda p, sealed: f"card burned: {show_cards(sealed.get('cards', []))}",
    "street_wager.placed": lambda p, sealed: f"seat {p['seat']}  {p['street']} {fmt(p['amount'])} ({p['multiple']}x)",
    "seat.folded": lambda p, sealed: (
        f"seat {p['seat']}  folds on {p['street']}; collected {_money_list(p['collected'])}"
    ),
    "community.revealed": lambda p, sealed: f"community card {p['index']}: {show_cards([sealed.get('card', '??')])}",
    "hand.settled": lambda p, sealed: _settled(p),
    "three_card_bonus.settled": lambda p, sealed: _bonus("Three Card Bonus", p),
    "six_card_bonus.revealed": lambda p, sealed: f"Six Card Bonus cards: {show_cards(p['cards'])}",
    "six_card_bonus.settled": lambda p, sealed: _bonus("Six Card Bonus", p),
    "round.completed": lambda p, sealed: (
        f"round {p['round_no']} complete: paid {fmt(p['paid'])}, collected "
        f"{fmt(p['collected'])}, table {'+' if p['table_result'] >= 0 else ''}"
        f"{fmt(p['table_result'])}"
    ),
    "round.voided": lambda p, sealed: f"ROUND VOID: {p['reason']}; {p['remedy']}",
    "shuffle.failed": lambda p, sealed: f"shuffle failed ({p['code']}): {p['remedy']}",
    "device.offline": lambda p, sealed: f"device {p['device_id']} OFFLINE: {p['reason']}",
    "device.fault": lambda p, sealed: f"device {p['device_id']} fault {p['code']}: {p['detail']}",
    "meter.seeded": lambda p, sealed: f"meter {p['level']} seeded at {fmt(p['meter_after_cents'])}",
    "progressive.settled": lambda p, sealed: _bonus("Progressive", p),
    "five_card_bonus.settled": lambda p, sealed: _bonus("Five Card Bonus", p),
    "three_card_progressive.settled": lambda p, sealed: _bonus("Three-Card Progressive", p),
    "five_card_progressive.settled": lambda p, sealed: _bonus("Five-Card Progressive", p),
    "progressive.hit": lambda p, sealed: (
        f"JACKPOT seat {p['seat']}  {p['percent']}% of the {p['level']} meter = "
        f"{fmt(p['amount'])} (meter {fmt(p['meter_before'])} -> "
        f"{fmt(p['meter_after']) if 'meter_after' in p else 'reseeded at the link'}); "
        f"awaiting a floorperson's validation ({p['hit']})"
    ),
    "progressive.paid": lambda p, sealed: f"jackpot {p['hit']} validated and paid: seat {p['seat']} {fmt(p['amount'])}",
    "progressive.locked_out": lambda p, sealed: f"PROGRESSIVE WAGERS LOCKED OUT: {p['reason']}",
    "progressive.unlocked": lambda p, sealed: "progressive wagers open again",
    "five_card_hand_bonus.settled": lambda p, sealed: _bonus("Five Card Hand Bonus", p),
    "magic_card_bonus.settled": lambda p, sealed: f"seat {p['seat']}  MAGIC CARD pays {fmt(p['paid'] + p['returned'])}",
    "lucky_bonus.settled": lambda p, sealed: f"seat {p['seat']}  LUCKY BONUS pays {fmt(p['paid'] + p['returned'])}",
    # The draws stay sealed on the table's own console too: nobody at the table may know them before the cards.
    "bonus.drawn": lambda p, sealed: (
        "table game system drew: " + ", ".join(b.replace("_", " ") for b in p["bonuses"]) + " (sealed until settlement)"
    ),
    "bonus.published": lambda p, sealed: (
        "drawn this round: "
        + ", ".join(f"{k.replace('_', ' ')} {show_cards([v]) if k == 'magic_card' else v}" for k, v in p.items())
    ),
    "account.requested": lambda p, sealed: (
        f"seat {p['seat']}  terminal: {p['request'].replace('_', '-')} {fmt(p['amount'])} ({p['medium']}), "
        "awaiting the dealer"
    ),
    "account.bought_in": lambda p, sealed: (
        f"seat {p['seat']}  bought in {fmt(p['amount'])} ({p['medium']}); account {fmt(p['balance'])}"
    ),
    "account.wagered": lambda p, sealed: f"seat {p['seat']}  account {fmt(p['balance'])} after the wager",
    "account.credited": lambda p, sealed: (
        f"seat {p['seat']}  {WAGER_NAMES.get(p['wager'], p['wager'])} {fmt(p['amount'])} credited; "
        f"account {fmt(p['balance'])}"
    ),
    "account.returned": lambda p, sealed: f"seat {p['seat']}  {fmt(p['amount'])} back to the account",
    "account.cashed_out": lambda p, sealed: (
        f"seat {p['seat']}  cashed out {fmt(p['amount'])} in {p['medium']}; account {fmt(p['balance'])}"
        if p.get("paid_by") != "attendant"
        else f"seat {p['seat']}  cashed out {fmt(p['amount'])}, paid by an attendant on {p['authorised_by']}'s "
        f"authority ({p['reason']}); account {fmt(p['balance'])}"
    ),
    "account.request_refused": lambda p, sealed: f"seat {p['seat']}  {p['request']} refused: {p['reason']}",
    "account.verification_requested": lambda p, sealed: (
        f"seat {p['seat']}  {fmt(p['amount'])} at {p['odds']}: a floorperson verifies it ({p['hit']})"
    ),
    "table.closing": lambda p, sealed: f"table closing after round {p['after_round']}{_asked(p)}",
    "table.closed": lambda p, sealed: (
        f"table closed ({p['rounds_played']} round{'' if p['rounds_played'] == 1 else 's'} so far at this table)"
        f"{_asked(p)}"
    ),
    "table.stopped": lambda p, sealed: (
        f"TABLE STOPPED at once ({p['by']}) in {p['phase']}{_in_play(p['round_no'])}; at the next start: {p['what']}"
    ),
    "table.recovered": lambda p, sealed: (
        f"table recovered in {p['phase']}{_round(p['round_no'])} ({p['policy']}){_after(p)}: {p['what']}"
        f"{_still_closing(p)}{_refused(p)}"
    ),
    "device.out_of_order": lambda p, sealed: (
        f"DEVICE OUT OF ORDER: {p['device']} ({p['reason']}{_again(p)}); {p['takes_over']} takes over, "
        f"{_deals_by(p['dealing_method'])}"
    ),
    "device.back_in_service": lambda p, sealed: (
        f"device {p['device']} back in service; {_deals_by(p['dealing_method'])}"
    ),
    "device.unusable": lambda p, sealed: f"DEVICE UNUSABLE: {p['device']} ({p['reason']}); {p['remedy']}",
    # Why a command or an input did nothing: a supervisor's command sent from elsewhere left this screen silent.
    "command.rejected": lambda p, sealed: f"COMMAND REJECTED: {p['verb'] or 'a command'} ({p['code']}): {p['reason']}",
    "input.ignored": lambda p, sealed: f"{p['input']} ignored in {p['phase']}: {p['reason']}",
    "input.refused": lambda p, sealed: f"{p['input']} REFUSED in {p['phase']}: {p['reason']}",
}


def _in_play(round_no: int | None) -> str:
    return "" if round_no is None else f", round {round_no} left in play"


def _round(round_no: int | None) -> str:
    return "" if round_no is None else f", round {round_no}"


def _after(p: Mapping[str, Any]) -> str:
    """The stop on purpose a restart follows (`after_stop`); a crash's restart has none."""
    stop = p.get("after_stop")
    return f" after the stop at seq {stop['seq']} ({stop['by']})" if isinstance(stop, Mapping) else ""


def _still_closing(p: Mapping[str, Any]) -> str:
    """A close asked before the restart stands (`closing`): the operator must know the table closes after the round."""
    closing = p.get("closing")
    if not isinstance(closing, Mapping):
        return ""
    who = f" (asked by {closing['by']})" if closing.get("by") else ""
    return f"; STILL CLOSING after round {closing['after_round']}{who}: the table closes when the round is complete"


def _refused(p: Mapping[str, Any]) -> str:
    """A refusal of "no more bets" pending at the restart (`no_more_bets_refused`): said now, with what lifts it, not
    only when the dealer presses the button again."""
    refused = p.get("no_more_bets_refused")
    if not isinstance(refused, Mapping):
        return ""
    return f'; "NO MORE BETS" REFUSED ({refused["rule"]}) until: {refused["remedy"]}'


def _again(p: Mapping[str, Any]) -> str:
    """A mark said again at a restart, with what the covered device said last when it would refuse its
    back_in_service (`not_in_service_until`): the operator learns it now, not at the refusal."""
    if not p.get("restored"):
        return ""
    unfit = p.get("not_in_service_until")
    return "; said again at the restart" + (f"; NOT BACK IN SERVICE until it answers: {unfit}" if unfit else "")


def _deals_by(method: object) -> str:
    return f"dealing by {method}" if method else "NO DEALING METHOD usable (no_method)"


def _still_out(p: Mapping[str, Any]) -> str:
    """A device marked out of order outlasts the close (.13(g)): the reopened table deals by what took over, or not
    at all; said here, as the configured method no longer is what the dealer deals by."""
    out = p.get("out_of_order")
    if not out or not isinstance(out, Mapping):
        return ""
    return f"; out of order: {', '.join(sorted(map(str, out)))}; {_deals_by(p.get('dealing_method'))}"


def _asked(p: Mapping[str, Any]) -> str:
    """Who asked a close (`by`, docs/events.md), when the event says."""
    return f", asked by {p['by']}" if p.get("by") else ""


def describe(ev: JournaledEvent) -> str | None:
    """One line for an event, or None for events an operator watching the table need not see."""
    render = LINES.get(ev.type)
    if render is None:
        return None
    try:
        return render(ev.payload, ev.sealed or {})
    except (KeyError, TypeError, ValueError, IndexError) as err:
        # A payload this log does not know (another chapter's, a newer engine's): show it plainly rather than
        # lose the rest of the log. The journal has it whole either way.
        return f"{ev.type} {dict(ev.payload)} (not shown in full: {type(err).__name__} {err})"[:300]


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
        try:
            while True:
                self.write(await self._events.get())
        finally:
            # A stop journals its record (table.stopped) and cancels this display in the same turn of the loop: what
            # is queued is written as the log stops, or the terminal would end without the stop's line.
            while not self._events.empty():
                self.write(self._events.get_nowait())
