"""The simulated people at a table: the players and the dealer acting on the simulated devices in answer to the
controller's events, and the floorperson who signs commands (`tablectl demo`, `tablectl simulate`, the tests).

What the players do is a Policy's (controller.people.demo has random and scripted ones); the events say when.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import functools
import random
from collections import Counter

import structlog

from controller.core.events import JournaledEvent
from controller.core.invariant import present
from controller.engine.inputs import CloseTable, Tick
from controller.engine.state import Phase
from controller.games.registry import chapter_of
from controller.people.actions import Action, ActionScript, Advance, Bind, Clear, Command, Key, Place, Press
from controller.people.blocks import STUCK, dealer_clears, deck_due
from controller.people.policy import DecisionRequest, Policy
from controller.people.signers import VERIFY_DECK_REMEDY, DemoSigners
from controller.people.stuck import Unclearable, held_codes, refuse_unheld
from controller.people.together import Step, at_once
from controller.shell.service import TableService, utc_now
from drivers.interfaces import TERMINAL_SPOTS
from drivers.sim.shuffler import FRESH_DECK
from drivers.sim.table import SimulatedTable

log = structlog.get_logger("tablectl.demo")


class SimulatedFloor:
    """The dealer and the players, acting on the simulated devices in answer to the controller's events.

    Whatever the chapter, the events say what to do: wagers when betting opens, "no more bets" once they
    are all on the layout, cards drawn from a manual shoe while the round is dealt, "dealt" once a deal
    from the hand is on the layout, an answer to each `decision.requested` of the kind it asks. The dealer's
    part goes through the panel as at a real table: the counts (chips, stub) keyed when asked for, "misdeal" /
    "no_misdeal" after a stub miscount, "inspected" when an idle table's cards are due for inspection, and a
    shuffle by hand (into the shoe) then "shuffled" once the shuffler is out of order. The floorperson, when
    there is one, only signs commands; without one, nothing verifies an opening inspection, so the dealer
    leaves it to whoever runs the table (tests verify it by signed command). A scenario's actions
    (controller.people.actions) come first on the event they wait for.
    """

    def __init__(
        self,
        service: TableService,
        sims: SimulatedTable,
        policy: Policy,
        rounds: int | None,
        pace: float,
        *,
        close_when_stuck: bool = False,
        floorperson: DemoSigners | None = None,
        rng: random.Random | None = None,
        script: ActionScript | None = None,
    ) -> None:
        self.service = service
        self.rng = rng or random.Random(0)  # the dealer's hand shuffles; seeded so a run can be repeated
        chapter = chapter_of(service.config.game)
        self._cash_out_media = list(chapter.spec.options(chapter.rules(service.config.game)).cash_out_media)
        self.floorperson = floorperson
        self.sims = sims
        self.policy = policy
        self.rounds = rounds
        self.pace = pace
        self.close_when_stuck = close_when_stuck
        # A table that closes when stuck (`simulate`) needs no watch; the demo's closes on a block nobody here clears.
        self.unclearable = None if close_when_stuck else Unclearable(person=floorperson is None)
        # A scenario's floorperson does what its script says and nothing more; the demo's brings new decks too.
        self._scripted = script is not None
        self.script = script or ActionScript()
        self.method = service.engine.method
        # lossless: the people act on each event (a missed betting.opened or decision would stall the round)
        self.events = service.subscribe("people", "lossless")
        # The wagers placed before "no more bets" whose acceptance or rejection is not yet journaled, by (seat, spot):
        # "no more bets" waits for them all, and an answer about another wager does not count.
        self._awaiting: Counter[tuple[int, str]] = Counter()
        self._round_no = 0
        self._started = 0
        self._drawing = False  # a manual shoe is being dealt from
        self._refused = False  # "no more bets" was refused: pressed again once what blocked it is cleared
        self._clock_ahead = dt.timedelta(0)  # how far scripted ticks moved the clock on
        self._deck_hinted = False  # a person was told to verify the deck now due (--human-floor)
        # What the players see of the round in progress (_watch): cards by seat, community cards face up, wagers.
        self._cards: dict[int, list[str]] = {}
        self._faceup: list[str] = []
        self._wagers: dict[int, dict[str, int]] = {}
        # Terminal wagers waiting for the player's buy-in to be confirmed: seat -> (spot, cents).
        self._after_buy_in: dict[int, tuple[str, int]] = {}
        # The stations lock every spot at "no more bets" but those of the wagers the chapter takes after the deal.
        open_spots = chapter_of(service.config.game).spots_after_lockout(service.config.game)
        for station in sims.stations.values():
            station.keep_open(open_spots)

    async def _beat(self) -> None:
        if self.pace:
            await asyncio.sleep(self.pace)  # human pace for the watcher, not synchronisation

    async def run(self) -> None:
        while True:
            ev = await self.events.get()
            if ev.type == "table.closed":
                return
            await self._on(ev)
            if self.unclearable is not None and self.unclearable.stop_now:
                return  # the table cannot close with its round open: the demo stops it (controller.people.demo)

    async def _on(self, ev: JournaledEvent) -> None:
        self._watch(ev)
        due = self.script.due(ev)
        for action in due:
            await self._perform(action)
        # A scripted person who acts on a table blocked for a floorperson is that floorperson: the table stays open.
        if any(a.instead for a in due) or (due and ev.type in STUCK):
            return
        if self.unclearable is not None and self.unclearable.heard(ev, self.service):
            # Journaled now, ahead of the close: the file says why the table stops. A round held open gets no close (it
            # would wait for that round for ever): the demo stops the table, this the journal's last event (`ending`).
            self.service.ending = self.service.ending or self.unclearable.stop_now
            await self.service.note([self.unclearable.stopped(self.service.state)])
            if not self.unclearable.stop_now:
                self.service.submit(CloseTable())
            return
        # Each event type is one handler's at most; the first that takes it acts.
        for handler in (self._on_round, self._on_accounts, self._on_dealer_duty, self._on_floor):
            if await handler(ev):
                return

    async def _perform(self, action: Action) -> None:
        """One scripted action (docs/scenarios.md, "Actions")."""
        await self._beat()
        do = action.do
        match do:
            case Press(button=button):
                await self.sims.panel.press(button)
            case Key(what=what, count=count):
                await self.sims.panel.key_count(what, count)
            case Bind(seats=seats):
                await self.sims.panel.bind(list(seats))
            case Place(seat=seat, spot=spot, amount=amount):
                if self.service.state.phase is Phase.BETTING:
                    self._awaiting[(seat, spot)] += 1
                await self.sims.stations[seat].place(spot, amount)
            case Command(verb=verb, args=args, role=role):
                # the scenario's signers are made for its commands
                signer = present(self.floorperson, "the scenario's floorperson")
                await signer.command(self.service, verb, args, role)
            case Advance(minutes=minutes):
                self._clock_ahead += dt.timedelta(minutes=minutes)
                self.service.submit(Tick(utc_now() + self._clock_ahead))
            case Clear(device=device, code=code, detail=detail):
                refuse_unheld(action, held_codes(self.service.state, device))
                await self.sims.device(device).fault_cleared(code, detail)

    async def _on_round(self, ev: JournaledEvent) -> bool:
        """The round as the players and the dealer play it: wagers, "no more bets", cards, decisions."""
        p = ev.payload
        if ev.type == "betting.opened":
            self._round_no = int(p["round_no"])
            self._started += 1
            self._refused = False
            await self._place_wagers()
        elif ev.type == "no_more_bets" and self.rounds is not None and self._started >= self.rounds:
            # The last round is under way: the table closes when it is complete instead of reshuffling.
            self.service.submit(CloseTable())
        elif ev.type in ("wager.accepted", "wager.rejected", "wager.confirmed"):
            await self._answered((int(p["seat"]), str(p["spot"])))
        elif ev.type == "lockout.confirmed" and self.method == "manual_shoe":
            self._drawing = True
            await self._draw()
        elif ev.type == "card.dealt" and self._drawing:
            await self._draw()
        elif ev.type in ("stub.discarded", "round.voided"):
            self._drawing = False
        elif ev.type == "deal.awaiting_dealer":
            await self._beat()
            await self.sims.panel.press("dealt")
        elif ev.type == "decision.requested":
            await self._beat()
            seat = int(p["seat"])
            await self._decide(
                seat,
                DecisionRequest(
                    str(p["decision"]),
                    str(p["spot"]),
                    str(p["kind"]),
                    tuple(int(a) for a in p.get("allowed", ())),
                    *self._seen_by(seat),
                ),
            )
        else:
            return False
        return True

    def _watch(self, ev: JournaledEvent) -> None:
        """What the players see of the round, as the table shows it: each box's cards as dealt (the sealed part, as
        the player looks at their own cards), the community cards as they are turned, the wagers on the layout."""
        p = ev.payload
        card = ev.sealed.get("card") if ev.sealed else None
        if ev.type == "betting.opened":
            self._cards, self._faceup, self._wagers = {}, [], {}
        elif ev.type == "wager.accepted":
            self._wagers.setdefault(int(p["seat"]), {})[str(p["spot"])] = int(p["amount"])
        elif ev.type == "street_wager.placed":
            self._wagers.setdefault(int(p["seat"]), {})[str(p["decision"])] = int(p["amount"])
        elif ev.type == "bet.withdrawn":
            self._wagers.get(int(p["seat"]), {}).pop(str(p["bet"]), None)
        elif ev.type == "cards.dealt" and ev.sealed:
            self._cards.setdefault(int(p["seat"]), []).extend(str(c) for c in ev.sealed["cards"])
        elif ev.type == "card.dealt" and str(p.get("to", "")).startswith("seat:") and card:
            self._cards.setdefault(int(str(p["to"])[5:]), []).append(str(card))
        elif ev.type == "community.revealed" and card:
            self._faceup.append(str(card))

    def _seen_by(self, seat: int) -> tuple[tuple[str, ...], tuple[tuple[str, int], ...]]:
        """The seat's cards and the community cards face up, and its live wagers: what its player sees."""
        return (*self._cards.get(seat, ()), *self._faceup), tuple(sorted(self._wagers.get(seat, {}).items()))

    async def _on_accounts(self, ev: JournaledEvent) -> bool:
        """The game accounts at the terminals (605a.2(d)(1)): the dealer confirms each buy-in and cash-out at the
        seat's terminal; a bought-in player keys the wager in; now and then a player cashes out after a round."""
        p = ev.payload
        if ev.type == "account.requested":
            await self._beat()
            await self.sims.terminals[int(p["seat"])].dealer_confirm(str(p["request"]))
        elif ev.type == "account.bought_in" and int(p["seat"]) in self._after_buy_in:
            seat = int(p["seat"])
            _, amount = self._after_buy_in.pop(seat)
            await self._beat()
            await self.sims.terminals[seat].place(amount)
        elif ev.type == "account.request_refused" and int(p["seat"]) in self._after_buy_in:
            await self._answered((int(p["seat"]), self._after_buy_in.pop(int(p["seat"]))[0]))
        elif ev.type == "round.completed" and self.sims.terminals:
            # Who cashes out, and how, is drawn in seat order; the players then go to their terminals at once.
            leaving = [
                functools.partial(self.sims.terminals[seat].cash_out, self.rng.choice(self._cash_out_media))
                for seat in sorted(self.sims.terminals)
                if self.service.state.accounts.balance(seat) and self.rng.random() < 0.2
            ]
            await at_once(([step] for step in leaving), self._beat)
            return False  # round.completed is also the round's end for the other handlers
        else:
            return False
        return True

    def _terminal_wager(self, seat: int, spot: str, amount: int) -> Step:
        """A player keys the wager in at the terminal, buying in first when the account holds too little: decided now
        (the buy-in drawn in seat order, controller.people.together), keyed in when the step is awaited."""
        terminal = self.sims.terminals[seat]
        if self.service.state.accounts.balance(seat) >= amount:
            return functools.partial(terminal.place, amount)
        self._after_buy_in[seat] = (spot, amount)
        return functools.partial(
            terminal.buy_in, amount * self.rng.choice([5, 10, 20, 50]), self.rng.choice(["cash", "chips"])
        )

    async def _answered(self, wager: tuple[int, str]) -> None:
        if not self._awaiting[wager]:
            return  # not one of the wagers "no more bets" waits for
        self._awaiting[wager] -= 1
        if not +self._awaiting:
            await self._no_more_bets()

    async def _on_dealer_duty(self, ev: JournaledEvent) -> bool:
        """What the dealer keys or presses on the panel when the controller asks (docs/protocol.md, "Dealer panel")."""
        p = ev.payload
        if ev.type == "chip_count.requested":
            # The dealer's count matches the wagers accepted: the simulated chips are exactly those placed.
            await self._beat()
            await self.sims.panel.key_count("chips", int(p["accepted"]))
        elif ev.type == "stub_count.requested" and ev.sealed is not None:
            # The right count, unless the script has the dealer count otherwise.
            await self._beat()
            stub = self.policy.stub_count(self._round_no)
            await self.sims.panel.key_count("stub", int(ev.sealed["expected"]) if stub is None else stub.count)
        elif ev.type == "stub_count.mismatch":
            # The dealer determines whether the cards were misdealt (.8(h), .9(f), .10(f)).
            await self._beat()
            stub = self.policy.stub_count(self._round_no)
            await self.sims.panel.press("misdeal" if stub is not None and stub.misdeal else "no_misdeal")
        elif ev.type == "cards.inspection_due":
            # An idle table (.5(f)): the dealer spreads and inspects the cards alone, then confirms on the panel.
            await self._beat()
            await self.sims.panel.press("inspected")
        elif ev.type == "shuffle.started" and p.get("device") == "manual":
            # The shuffler is out of order (.13(g)): the dealer shuffles by hand, cuts with the cover card
            # (.5(c)(2), (d)), puts the deck in the shoe and confirms on the panel.
            await self._beat()
            deck = list(FRESH_DECK)
            self.rng.shuffle(deck)
            self.sims.shoe.load(deck)
            await self.sims.panel.press("shuffled")
        else:
            return False
        return True

    async def _on_floor(self, ev: JournaledEvent) -> bool:
        """Devices out of order, jackpots for the floorperson, and a table blocked for one who is not simulated."""
        p = ev.payload
        if ev.type in ("device.out_of_order", "device.back_in_service") and p.get("dealing_method"):
            self.method = p["dealing_method"]  # e.g. a manual shoe takes over from dealing by hand
            await self._again_after_refusal()
        elif ev.type == "table.block_cleared":
            self._deck_hinted = self._deck_hinted and p.get("block") != "deck_change_due"
            await self._again_after_refusal()
        elif ev.type == "progressive.hit" and self.floorperson is not None:
            # The floorperson checks the hand and validates the hit with a signed command (655a.11(i)(1)(iii)).
            await self._beat()
            await self.floorperson.validate(self.service, int(p["seat"]), str(p["level"]), str(p["hit"]))
        elif ev.type == "account.verification_requested" and self.floorperson is not None:
            # A 500 for 1 Five Card Hand Bonus payout: the floorperson verifies it, then it is credited (655a.11(i)(3)).
            await self._beat()
            await self.floorperson.validate(self.service, int(p["seat"]), str(p["wager"]), str(p["hit"]))
        elif ev.type == "table.recovered" and p.get("policy") == "await_jackpot" and self.floorperson is not None:
            # Restarted while hits awaited validation: their progressive.hit events belong to the last boot, so the
            # floorperson validates what the restored state still holds pending (each once; 655a.11(i)(1)(iii)).
            for pending in list(self.service.state.pending_hits):
                await self._beat()
                await self.floorperson.validate(self.service, pending.seat, pending.level, pending.hit)
        elif ev.type == "table.blocked" and self._deck_due(ev):
            # A deck in play its hours (.3(c)): the demo's journal outlives a run, so a demo started the next day
            # found its deck due and waited for ever. The floorperson verifies a new one (.4(a)), as on the floor.
            await self._beat()
            signer = present(self.floorperson, "the demo's floorperson")  # _deck_due checked there is one
            await signer.command(self.service, "verify_deck", {"note": "the demo's floorperson: a new deck"})
        elif ev.type == "table.blocked" and self._deck_due_for_a_person(ev):
            # --human-floor: nobody simulated verifies the new deck. Say who must and how, instead of a silent wait;
            # once per deck due (the table blocks again, for the same deck, when another reason joins).
            self._deck_hinted = True
            log.warning(
                "the table waits for a floorperson to verify a new deck (655a.4(a))",
                table_id=self.service.config.table_id,
                remedy=VERIFY_DECK_REMEDY,
            )
        elif ev.type == "no_more_bets.refused":
            self._refused = True
            if self.close_when_stuck:
                self.service.submit(CloseTable())
        elif ev.type in STUCK and self.close_when_stuck and not dealer_clears(ev):
            self.service.submit(CloseTable())
        else:
            return False
        return True

    def _deck_due(self, ev: JournaledEvent) -> bool:
        return self.floorperson is not None and not self._scripted and deck_due(ev)

    def _deck_due_for_a_person(self, ev: JournaledEvent) -> bool:
        return self.floorperson is None and not self.close_when_stuck and not self._deck_hinted and deck_due(ev)

    async def _again_after_refusal(self) -> None:
        """What refused "no more bets" is cleared while the wagers are still on the layout: the dealer says it again."""
        if self._refused and self.service.state.phase is Phase.BETTING:
            self._refused = False
            await self._no_more_bets()

    async def _draw(self) -> None:
        await self._beat()
        await self.sims.shoe.draw()

    async def _decide(self, seat: int, request: DecisionRequest) -> None:
        answer = self.policy.decide(self._round_no, seat, request)
        if request.kind == "ride_or_withdraw":
            await self.sims.panel.press("withdraw" if answer == "withdraw" else "let_it_ride")
        elif answer is None or answer == "fold" or isinstance(answer, str):
            await self.sims.panel.press("fold")
        else:
            await self.sims.stations[seat].place(request.spot, answer)

    async def _place_wagers(self) -> None:
        """The players put their chips down when betting opens, each at their own station and line: the seats at once,
        as at a real table, so the controller commits together what arrives together (issue 19); a seat's in turn."""
        plan = self.policy.wagers(self._round_no, self.service.config)
        self._awaiting = Counter((seat, spot) for seat, wagers in plan.items() for spot in wagers)
        hands = [
            [self._wager(seat, spot, cents) for spot, cents in wagers.items()] for seat, wagers in sorted(plan.items())
        ]
        await at_once(hands, self._beat)

    def _wager(self, seat: int, spot: str, amount: int) -> Step:
        if spot in TERMINAL_SPOTS and self.sims.terminals:
            return self._terminal_wager(seat, spot, amount)
        return functools.partial(self.sims.stations[seat].place, spot, amount)

    async def _no_more_bets(self) -> None:
        await self._beat()
        await self.sims.panel.press("no_more_bets")
        late = self.policy.late_wager(self._round_no, self.service.config)
        if late:
            seat, spot, amount = late
            if spot in TERMINAL_SPOTS and self.sims.terminals:
                await self.sims.terminals[seat].place(amount)  # its lock-out refuses it (WagerRefused)
            elif spot not in TERMINAL_SPOTS:
                await self.sims.stations[seat].place(spot, amount)
