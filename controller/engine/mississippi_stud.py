"""The round of chapter 655a as a pure state machine: (state, input) -> (state', effects).

No I/O, no awaiting, no clock: the shell feeds device events and controller inputs in, journals the
domain events that come out, and only then carries out the device commands. Every domain event cites
the subsection that makes it happen.

Dealing follows 655a.10 (automated dealing shoe): "no more bets" and every wager station's lock
confirmed before the first stack (655a.10(a)(2)); a two-card stack to each seat with an Ante,
clockwise from the dealer's left (655a.10(b)); then from the stub the four Six Card Bonus cards when
any seat wagered it, then the three community cards (655a.10(c)).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from controller.cards import deck_problems
from controller.engine.inputs import CloseTable, Command, Input, OpenTable
from controller.engine.state import Phase, RoundState, TableState
from controller.events import DomainEvent
from controller.games import mississippi_stud as ms
from controller.games.mississippi_stud import MississippiStudRules
from controller.games.mississippi_stud_round import MAIN, MississippiStudRound, MississippiStudSeat
from controller.games.mississippi_stud_round import settle as settle_655a
from controller.games.settlement import Settled
from controller.money import fmt
from drivers.interfaces import (
    PRE_DEAL_SPOTS,
    ButtonPressed,
    DeviceFault,
    DeviceOffline,
    DeviceOnline,
    FaceUpCard,
    LockAcknowledged,
    ShuffleCompleted,
    StackDispensed,
    StubRemoved,
    WagerDetected,
    WagerRefused,
)

Effect = DomainEvent | Command

SHUFFLER_FAULTS = {"jam", "stopped", "incomplete"}  # 655a.13(e)
SHOE_FAULTS = {"jam", "stopped", "empty", "misfeed"}  # 655a.13(f)


class MississippiStudEngine:
    """Steps a table of chapter 655a. Holds only the immutable rules; state travels outside."""

    def __init__(self, rules: MississippiStudRules) -> None:
        self.rules = rules
        self.limit = ms.payout_limit(rules.ante_min_cents)

    # -- entry point ---------------------------------------------------------------------------

    def step(self, state: TableState, inp: Input) -> tuple[TableState, list[Effect]]:
        s = state.clone()
        out: list[Effect] = []
        _Step(self, s, out).handle(inp)
        return s, out


class _Step:
    """One input's worth of work on a private copy of the state."""

    def __init__(self, engine: MississippiStudEngine, s: TableState, out: list[Effect]) -> None:
        self.rules = engine.rules
        self.limit = engine.limit
        self.s = s
        self.out = out

    # -- helpers -------------------------------------------------------------------------------

    @property
    def r(self) -> RoundState:
        assert self.s.round is not None, "no round in progress"
        return self.s.round

    def emit(self, type_: str, rule: str | None, payload: Mapping[str, Any] | None = None,
             sealed: Mapping[str, Any] | None = None) -> None:
        rid = self.s.round.round_id if self.s.round else None
        self.out.append(DomainEvent(type_, rule, dict(payload or {}), rid, sealed))

    def command(self, target: str, verb: str, seat: int | None = None, cards: int = 0) -> None:
        self.out.append(Command(target, verb, seat, cards))

    def ignored(self, what: str, why: str) -> None:
        self.emit("input.ignored", None, {"input": what, "reason": why, "phase": str(self.s.phase)})

    # -- dispatch ------------------------------------------------------------------------------

    def handle(self, inp: Input) -> None:
        match inp:
            case OpenTable():
                self.open_table()
            case CloseTable():
                self.close_table()
            case ShuffleCompleted():
                self.shuffle_completed(inp)
            case WagerDetected():
                self.wager(inp)
            case WagerRefused():
                self.emit("wager.rejected", "655a.7(c)", {
                    "seat": inp.seat, "spot": inp.spot, "amount": inp.amount_cents,
                    "reason": f"refused by the wager station's lock-out ({inp.reason}) after \"no more bets\""})
            case ButtonPressed(button="no_more_bets"):
                self.no_more_bets()
            case ButtonPressed(button="fold"):
                self.fold()
            case ButtonPressed():
                self.ignored(f"button {inp.button!r}", "not a button this controller knows")
            case LockAcknowledged():
                self.lock_acknowledged(inp)
            case StackDispensed():
                self.stack_dispensed(inp)
            case StubRemoved():
                self.stub_removed(inp)
            case FaceUpCard():
                self.face_up(inp)
            case DeviceFault():
                self.device_fault(inp)
            case DeviceOnline():
                self.emit("device.online", None, {"device_id": inp.device_id, "identity": dict(inp.identity)})
            case DeviceOffline():
                self.emit("device.offline", None, {"device_id": inp.device_id, "reason": inp.reason})
            case _:
                self.ignored(type(inp).__name__, "not an input of this engine")

    # -- shuffle and betting -------------------------------------------------------------------

    def open_table(self) -> None:
        if self.s.phase is not Phase.CLOSED:
            self.ignored("open table", "the table is already open")
            return
        self.emit("table.opened", "655a.4", {"chapter": ms.CHAPTER, "game": ms.NAME, "seats": self.rules.seats})
        self.start_shuffle()

    def close_table(self) -> None:
        phase = self.s.phase
        if phase in (Phase.CLOSED,):
            self.ignored("close table", "the table is already closed")
        elif phase in (Phase.SHUFFLING, Phase.BETTING, Phase.BLOCKED):
            # No cards are out: wagers on the layout go back to their players.
            if self.s.round:
                for n, st in sorted(self.s.round.seats.items()):
                    for spot, amount in sorted(st.wagers.items()):
                        self.emit("wager.returned", "655a.7(c)", {
                            "seat": n, "spot": spot, "amount": amount, "reason": "the table closed"})
            self.closed()
        else:
            self.s.closing = True
            self.emit("table.closing", None, {"after_round": self.r.number})

    def closed(self) -> None:
        self.s.round = None
        self.s.phase = Phase.CLOSED
        self.s.closing = False
        self.emit("table.closed", None, {"rounds_played": self.s.rounds_played})
        for seat in range(1, self.rules.seats + 1):
            self.command("wager_station", "lock", seat=seat)

    def start_shuffle(self) -> None:
        if self.s.closing:
            self.closed()
            return
        self.s.phase = Phase.SHUFFLING
        self.emit("shuffle.started", "655a.5(a)", {"device": "shuffler"})
        self.command("shuffler", "shuffle")

    def shuffle_completed(self, inp: ShuffleCompleted) -> None:
        if self.s.phase is not Phase.SHUFFLING:
            self.ignored("shuffle completed", "no shuffle was asked for")
            return
        if inp.card_count != 52:
            # 655a.5(b): a counting shuffler that finds other than 52 cards: the deck leaves the table.
            self.s.phase = Phase.BLOCKED
            self.s.block_reason = f"shuffler counted {inp.card_count} cards; a new deck must be verified"
            self.emit("deck.removed", "655a.5(b)", {"card_count": inp.card_count, "reason": self.s.block_reason})
            return
        self.emit("shuffle.completed", "655a.5(b)", {"card_count": 52, "deck_in": "shoe"})
        self.open_betting()

    def open_betting(self) -> None:
        """Unlock every wager station; betting opens once all have confirmed, so that no chips meet a
        station that is still locked from the last round."""
        n = self.s.rounds_played + 1
        self.s.rounds_played = n
        self.s.round = RoundState(number=n, round_id=f"{self.s.table_id}-r{n:06d}")
        self.s.phase = Phase.BETTING
        self.r.unlocks_pending = set(range(1, self.rules.seats + 1))
        for seat in range(1, self.rules.seats + 1):
            self.command("wager_station", "unlock", seat=seat)

    def betting_opened(self) -> None:
        offered = ["ante"] + [w for w, table in (("three_card_bonus", self.rules.three_card_bonus_paytable),
                                                 ("six_card_bonus", self.rules.six_card_bonus_paytable)) if table]
        self.emit("betting.opened", "655a.7(c)", {
            "round_no": self.r.number, "seats": self.rules.seats, "wagers_offered": offered,
            "ante_min": self.rules.ante_min_cents, "ante_max": self.rules.ante_max_cents})

    def _limits(self, spot: str) -> tuple[int, int] | str:
        """(min, max) for an offered pre-deal wager, or why it is not offered."""
        r = self.rules
        if spot == "ante":
            return r.ante_min_cents, r.ante_max_cents
        if spot == "three_card_bonus":
            if not r.three_card_bonus_paytable:
                return "the Three Card Bonus Wager is not offered (game.three_card_bonus_paytable is unset)"
            return r.three_card_bonus_min_cents, r.three_card_bonus_max_cents
        if spot == "six_card_bonus":
            if not r.six_card_bonus_paytable:
                return "the Six Card Bonus Wager is not offered (game.six_card_bonus_paytable is unset)"
            return r.six_card_bonus_min_cents, r.six_card_bonus_max_cents
        return f"unknown wager spot {spot!r}"

    def wager(self, inp: WagerDetected) -> None:
        seat, spot, amount = inp.seat, inp.spot, inp.amount_cents
        base = {"seat": seat, "spot": spot, "amount": amount}
        if not 1 <= seat <= self.rules.seats:
            self.emit("wager.rejected", "655a.2(a)", {**base, "reason": f"no seat {seat} at this table"})
            return
        if spot in PRE_DEAL_SPOTS:
            self.pre_deal_wager(seat, spot, amount, base)
        elif self.s.phase is Phase.DECISION and spot == ms.STREETS[self.r.street].spot:
            self.street_wager(seat, amount, base)
        else:
            self.emit("wager.rejected", "655a.7(c)", {
                **base, "reason": "a Street Wager is made only when the dealer asks that seat for it"})

    def pre_deal_wager(self, seat: int, spot: str, amount: int, base: dict[str, Any]) -> None:
        rule = ms.WAGER_RULES[spot]
        if self.s.phase is not Phase.BETTING:
            self.emit("wager.rejected", "655a.7(c)", {
                **base, "reason": "placed after \"no more bets\" or outside betting: not counted"})
            return
        limits = self._limits(spot)
        if isinstance(limits, str):
            self.emit("wager.rejected", rule, {**base, "reason": limits})
            return
        lo, hi = limits
        wagers = self.r.seat(seat).wagers
        if amount == 0:
            if wagers.pop(spot, 0):
                self.emit("wager.withdrawn", "655a.7(c)", base)
            return
        if not lo <= amount <= hi:
            self.emit("wager.rejected", rule, {
                **base, "reason": f"outside the table limits {fmt(lo)} to {fmt(hi)}"})
            return
        wagers[spot] = amount  # the sensor reports the chips on the spot, so the latest reading stands
        self.emit("wager.accepted", rule, base)

    def no_more_bets(self) -> None:
        if self.s.phase is not Phase.BETTING:
            self.ignored("no more bets", "betting is not open")
            return
        r = self.r
        players = sorted(n for n, st in r.seats.items() if st.wagers.get("ante"))
        if not players:
            self.emit("no_more_bets.refused", "655a.7(d)(1)", {"reason": "no Ante Wager on the table"})
            return
        for n, st in sorted(r.seats.items()):
            if st.wagers.get("ante"):
                continue
            # 655a.7(d)(1): only an Ante makes a player; the optional wagers of a seat without one go back.
            for spot, amount in sorted(st.wagers.items()):
                self.emit("wager.returned", ms.WAGER_RULES[spot], {
                    "seat": n, "spot": spot, "amount": amount, "reason": "no Ante Wager at this seat"})
            st.wagers.clear()
        self.s.phase = Phase.LOCKING
        r.locks_pending = set(range(1, self.rules.seats + 1))
        self.emit("no_more_bets", "655a.10(a)(2)", {
            "players": players,
            "wagers": {str(n): dict(r.seats[n].wagers) for n in players}})
        for seat in range(1, self.rules.seats + 1):
            self.command("wager_station", "lock", seat=seat)

    def lock_acknowledged(self, inp: LockAcknowledged) -> None:
        if not inp.locked:
            if self.s.phase is Phase.BETTING and self.r.unlocks_pending:
                self.r.unlocks_pending.discard(inp.seat)
                if not self.r.unlocks_pending:
                    self.betting_opened()
            return
        if self.s.phase is not Phase.LOCKING:
            return  # a repeated confirmation after dealing began changes nothing
        r = self.r
        r.locks_pending.discard(inp.seat)
        if r.locks_pending:
            return
        self.emit("lockout.confirmed", "655a.10(a)(2)", {"stations": self.rules.seats})
        self.s.phase = Phase.DEALING
        r.deal_queue = sorted(n for n, st in r.seats.items() if st.wagers.get("ante"))
        self.command("shoe", "dispense_stack", cards=ms.PLAYER_CARDS)

    # -- dealing (655a.10) ---------------------------------------------------------------------

    def stack_dispensed(self, inp: StackDispensed) -> None:
        if self.s.phase is not Phase.DEALING or not self.r.deal_queue:
            self.ignored("stack dispensed", "no stack was asked for")
            return
        r = self.r
        seat = r.deal_queue.pop(0)
        r.dealt.extend(inp.cards)
        if len(inp.cards) != ms.PLAYER_CARDS:
            self.void("655a.13(c)", f"seat {seat} was dealt {len(inp.cards)} cards instead of {ms.PLAYER_CARDS}")
            return
        r.seat(seat).cards = list(inp.cards)
        self.emit("cards.dealt", "655a.10(b)", {"seat": seat, "count": len(inp.cards)}, {"cards": list(inp.cards)})
        if r.deal_queue:
            self.command("shoe", "dispense_stack", cards=ms.PLAYER_CARDS)
        else:
            self.command("shoe", "remove_stub")

    def stub_removed(self, inp: StubRemoved) -> None:
        r = self.r if self.s.round else None
        if self.s.phase is not Phase.DEALING or r is None or r.deal_queue:
            self.ignored("stub removed", "the stub was not asked for")
            return
        stub = list(inp.cards)
        problems = deck_problems(r.dealt + r.discarded + stub)
        if problems:
            # The dealt cards plus the stub must be one whole deck; anything else cannot be dealt on.
            self.void("655a.13(c)", "deck check failed: " + "; ".join(problems))
            return
        if any(st.wagers.get("six_card_bonus") for st in r.seats.values()):
            r.six_card_cards, stub = stub[: ms.SIX_CARD_BONUS_CARDS], stub[ms.SIX_CARD_BONUS_CARDS:]
            self.emit("six_card_bonus.dealt", "655a.10(c)", {"count": len(r.six_card_cards)},
                      {"cards": list(r.six_card_cards)})
        r.community, stub = stub[: ms.COMMUNITY_CARDS], stub[ms.COMMUNITY_CARDS:]
        self.emit("community.dealt", "655a.10(c)", {"count": len(r.community)}, {"cards": list(r.community)})
        self.emit("stub.discarded", "655a.10(c)", {"count": len(stub)})
        self.s.phase = Phase.DECISION
        r.street = 0
        self.next_decision()

    def face_up(self, inp: FaceUpCard) -> None:
        """655a.13(a): a card found face up while dealing is not used; more than one voids the round."""
        if self.s.phase is not Phase.DEALING:
            self.ignored("face-up card", "no cards are being dealt")
            return
        r = self.r
        r.discarded.append(inp.card)
        if len(r.discarded) > 1:
            self.void("655a.13(a)", f"{len(r.discarded)} cards found face up in the shoe while dealing")
            return
        self.emit("card.face_up_discarded", "655a.13(a)", {"remedy": "not used this round; to the discard rack"},
                  {"card": inp.card})

    # -- decisions (655a.11(b)-(g)) --------------------------------------------------------------

    def next_decision(self, after: int = 0) -> None:
        """Ask the next seat clockwise, or reveal the community card when everyone has decided."""
        r = self.r
        street = ms.STREETS[r.street]
        waiting = [n for n in r.in_play() if n > after]
        if waiting:
            seat = waiting[0]
            r.turn = seat
            ante = r.seats[seat].wagers["ante"]
            self.emit("decision.requested", street.decide_rule, {
                "seat": seat, "street": street.name, "spot": street.spot,
                "allowed": [m * ante for m in ms.STREET_MULTIPLES]})
            return
        r.turn = None
        r.revealed += 1
        self.emit("community.revealed", street.reveal_rule, {"index": r.revealed, "after": street.name},
                  {"card": r.community[r.revealed - 1]})
        if r.street + 1 < len(ms.STREETS):
            r.street += 1
            self.next_decision()
        else:
            self.settle()

    def street_wager(self, seat: int, amount: int, base: dict[str, Any]) -> None:
        r = self.r
        street = ms.STREETS[r.street]
        if seat != r.turn:
            self.emit("wager.rejected", street.decide_rule, {
                **base, "reason": f"seat {r.turn} is deciding; seat {seat} must wait for its turn"})
            return
        ante = r.seats[seat].wagers["ante"]
        allowed = [m * ante for m in ms.STREET_MULTIPLES]
        if amount not in allowed:
            self.emit("wager.rejected", street.decide_rule, {
                **base, "reason": "must be one, two or three times the Ante: " + ", ".join(map(fmt, allowed))})
            return
        r.seats[seat].wagers[street.spot] = amount
        self.emit("street_wager.placed", street.decide_rule, {
            "seat": seat, "street": street.name, "amount": amount, "multiple": amount // ante})
        self.next_decision(after=seat)

    def fold(self) -> None:
        seat = self.s.round.turn if self.s.round else None
        if self.s.phase is not Phase.DECISION or seat is None:
            self.ignored("fold", "no decision is awaited")
            return
        r = self.r
        st = r.seats[seat]
        street = ms.STREETS[r.street]
        st.folded = True
        st.folded_on = street.spot
        main = ("ante", *(x.spot for x in ms.STREETS))
        st.collected = {w: st.wagers.pop(w) for w in main if w in st.wagers}
        optional = sorted(w for w in st.wagers if w in ("three_card_bonus", "six_card_bonus"))
        self.emit("seat.folded", street.decide_rule, {
            "seat": seat, "street": street.name, "collected": dict(st.collected),
            # With an optional wager the cards stay on the table until it is settled (655a.11(b)).
            "cards": "left on the table" if optional else "to the discard rack",
            "optional_wagers_pending": optional})
        self.next_decision(after=seat)

    # -- settlement (655a.11(h)-(j)) -------------------------------------------------------------

    def settle(self) -> None:
        """655a.11(h)-(j) through the same settlement `tablectl settle` uses for a disputed round."""
        r = self.r
        record = MississippiStudRound(chapter="655a", round_id=r.round_id, community=r.community,
                                      six_card_bonus_cards=r.six_card_cards, seats=[
                                          MississippiStudSeat(seat=n, cards=st.cards, folded_on=st.folded_on,
                                                              wagers={**st.collected, **st.wagers})
                                          for n, st in r.seats.items() if st.cards])
        rows, _ = settle_655a(self.rules, record)
        six_revealed = False
        for seat in sorted({x.seat for x in rows}, reverse=True):
            mine = [x for x in rows if x.seat == seat]
            main = [x for x in mine if x.wager in MAIN]
            if main and not r.seats[seat].folded:  # a fold's wagers were collected and reported at the fold
                limited = any(x.note and "655a.12(b)" in x.note for x in main)
                self.emit("hand.settled", main[0].rule, {
                    "seat": seat, "cards": r.seats[seat].cards, "community": r.community, "hand": main[0].hand,
                    "paytable": main[0].paytable, "payout_limited": limited,
                    "payout_limit_rule": "655a.12(b)" if limited else None,
                    "wagers": [_wager(x) for x in main], "paid": sum(x.paid for x in main)})
            for x in mine:
                if x.wager in MAIN:
                    continue
                payload: dict[str, Any] = {"seat": seat, "hand": x.hand, "paytable": x.paytable, **_wager(x)}
                if x.wager == "six_card_bonus":
                    if not six_revealed:
                        six_revealed = True
                        self.emit("six_card_bonus.revealed", "655a.11(i)(4)", {"cards": r.six_card_cards})
                    payload |= {"cards": r.seats[seat].cards, "bonus_cards": r.six_card_cards}
                elif x.wager == "three_card_bonus":
                    payload["community"] = r.community
                self.emit(f"{x.wager}.settled", x.rule, payload)
        paid, collected = sum(x.paid for x in rows), sum(x.collected for x in rows)
        self.emit("round.completed", "655a.11(j)", {
            "round_no": r.number, "players": sorted(n for n, st in r.seats.items() if st.cards),
            "paid": paid, "collected": collected, "table_result": collected - paid})
        self.s.round = None
        self.start_shuffle()

    # -- faults and voids (655a.13) --------------------------------------------------------------

    def device_fault(self, inp: DeviceFault) -> None:
        self.emit("device.fault", None, {"device_id": inp.device_id, "code": inp.code, "detail": inp.detail})
        if inp.device_id == "shuffler" and self.s.phase is Phase.SHUFFLING and inp.code in SHUFFLER_FAULTS:
            self.emit("shuffle.failed", "655a.13(e)", {"code": inp.code, "remedy": "the cards are reshuffled"})
            self.start_shuffle()
        elif inp.device_id == "shoe" and self.s.phase is Phase.DEALING and inp.code in SHOE_FAULTS:
            self.void("655a.13(f)", f"the automated dealing shoe reported {inp.code}: {inp.detail}")
        elif inp.device_id == "shoe" and self.s.phase is Phase.DEALING and inp.code == "foreign_card":
            # A card that is not of the inspected deck: the hands cannot stand, as with a deck that fails its check.
            self.void("655a.13(c)", f"the shoe read a card foreign to the deck: {inp.detail}")

    def void(self, rule: str, reason: str) -> None:
        """All hands void, every wager returned, the cards reshuffled."""
        r = self.r
        returned = {}
        for n, st in sorted(r.seats.items()):
            every = {**st.collected, **st.wagers}
            if every:
                returned[str(n)] = every
        self.emit("round.voided", rule, {"reason": reason, "returned": returned,
                                         "remedy": "all wagers returned; cards reshuffled"})
        self.s.round = None
        self.start_shuffle()


def _wager(x: Settled) -> dict[str, Any]:
    return {"wager": x.wager, "amount": x.amount, "outcome": x.outcome, "odds": x.odds, "paid": x.paid,
            "returned": x.returned, "collected": x.collected}
