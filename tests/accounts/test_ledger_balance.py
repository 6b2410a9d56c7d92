"""The game accounts balance to the cent (issue 14 item 1): a hypothesis state machine plays random rounds of a
Mississippi Stud table offering the Five Card Hand Bonus with its Magic Card and Lucky Bonus (random decks, random
draws), random buy-ins, wagers, cancellations, voids, cash-outs and restarts from the stored state, and keeps its own
books: each seat's balance from what it bought in, what it wagered, what came back and what the chapter's own
settlement (the one `tablectl settle` runs) pays to the account. After every step the ledger must equal those books
and balance: bought in + won + returned = wagered + cashed out + held."""

from __future__ import annotations

import random
from collections.abc import Sequence

from hypothesis import HealthCheck, Phase, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule, run_state_machine_as_test

from controller.accounts import codec
from controller.core.cards import STANDARD_DECK
from controller.core.events import DomainEvent
from controller.engine.commands import ShowAccount
from controller.engine.inputs import CashOutAccount, OpenTable, Recover, Signed, ValidateJackpot
from controller.engine.round import RoundEngine
from controller.engine.state import Phase as TablePhase
from controller.engine.state import TableState
from controller.games.mississippi_stud.rules import MississippiStudRules
from controller.games.mississippi_stud.spec import MississippiStudSpec
from controller.games.registry import REGISTRY
from controller.store import snapshot
from drivers.interfaces import AccountRequested, DealerConfirmed, DeviceOffline, DeviceOnline
from tests.engine.conftest import PureTable, decide_all

RULES = MississippiStudRules.model_validate(
    {
        "chapter": "655a",
        "five_card_hand_bonus": True,
        "five_card_hand_bonus_wager_cents": 100,
        "magic_card_bonus": True,
        "lucky_bonus": True,
    }
)
FCHB = "five_card_hand_bonus"
TO_ACCOUNT = ("five_card_hand_bonus", "magic_card_bonus", "lucky_bonus")
SEATS = range(1, 7)


class SeededDraws:
    """The table game system's draws from a seeded generator (the live table's are the CSPRNG's)."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)

    def magic_card(self) -> str:
        return self.rng.choice(STANDARD_DECK)

    def lucky_seat(self, seats: Sequence[int]) -> int:
        return self.rng.choice(list(seats))


class Accounts(RuleBasedStateMachine):
    @initialize(seed=st.integers(0, 2**32 - 1))
    def open(self, seed: int) -> None:
        self.rng = random.Random(seed)
        engine = RoundEngine(MississippiStudSpec(), RULES, "automated_shoe", None, SeededDraws(seed))
        self.t = PureTable(engine, TableState("t1"))
        self.t.feed(OpenTable())
        self.books = dict.fromkeys(SEATS, 0)
        self.bought = self.cashed = self.wagered = self.won = self.returned = 0

    def _shuffled(self) -> None:
        deck = list(STANDARD_DECK)
        self.rng.shuffle(deck)
        self.t.decks.append(deck)

    @rule(seat=st.sampled_from(SEATS), cents=st.integers(1, 20_000), medium=st.sampled_from(["cash", "chips"]))
    def buy_in(self, seat: int, cents: int, medium: str) -> None:
        events = self.t.buy_in(seat, cents, medium)
        if any(e.type == "account.bought_in" for e in events):
            self.books[seat] += cents
            self.bought += cents

    @rule(seat=st.sampled_from(SEATS), fchb=st.booleans(), fund=st.booleans())
    def wager(self, seat: int, fchb: bool, fund: bool) -> None:
        if self.t.state.phase is not TablePhase.BETTING:
            return
        self.t.wager(seat, "ante", 500)
        if fchb and fund and self.books[seat] < 100:
            self.buy_in(seat, 1_000, "cash")
        if fchb:
            events = self.t.wager(seat, FCHB, 100)
            if any(e.type == "account.wagered" for e in events):
                self.books[seat] -= 100
                self.wagered += 100

    @rule(seat=st.sampled_from(SEATS))
    def cancel(self, seat: int) -> None:
        events = self.t.wager(seat, FCHB, 0)
        if any(e.type == "account.wager_cancelled" for e in events):
            self.books[seat] += 100
            self.returned += 100

    @rule(void=st.booleans(), players=st.sets(st.sampled_from(SEATS), max_size=4))
    def play(self, void: bool, players: set[int]) -> None:
        if self.t.state.phase is not TablePhase.BETTING:
            return
        for seat in sorted(players):
            self.wager(seat, True, True)
        self._shuffled()
        wagered = (
            {n: st_.wagers.get(FCHB, 0) for n, st_ in self.t.state.round.seats.items()} if self.t.state.round else {}
        )
        events = self.t.press("no_more_bets")
        if void and self.t.state.phase.value == "decision":
            events += self.t.press("wrong_card_count")  # 655a.13(c): void, every wager returned
        events = decide_all(self.t, events)
        self._settled(events, wagered)

    def _settled(self, events: list[DomainEvent], wagered: dict[int, int]) -> None:
        types = [e.type for e in events]
        if "round.voided" in types or "wager.returned" in types:
            back = [e for e in events if e.type == "account.returned"]
            for e in back:
                self.books[int(e.payload["seat"])] += 100
                self.returned += 100
            if "round.voided" in types:
                assert sorted(int(e.payload["seat"]) for e in back) == sorted(n for n, a in wagered.items() if a)
        record = next((e.payload["record"] for e in events if e.type == "round.recorded"), None)
        if record is None:
            return
        # The chapter's settlement of the recorded round, as `tablectl settle --journal` runs it.
        rows, _ = REGISTRY["655a"].settle(RULES, record)
        for x in rows:
            if x.wager in TO_ACCOUNT and x.outcome == "win" and "% of" not in (x.odds or ""):
                self.books[x.seat] += x.paid + x.returned
                self.won += x.paid + x.returned
        for h in list(self.t.state.pending_hits):  # a floorperson validates whatever awaits it
            v = ValidateJackpot(h.seat, h.level, h.hit, "fp-1", "floorperson")
            self.t.feed(Signed(v, f"c-{h.hit}", "validate_jackpot", "fp-1", "floorperson"))

    @rule(seat=st.sampled_from(SEATS), medium=st.sampled_from(["chips", "ticket"]))
    def cash_out(self, seat: int, medium: str) -> None:
        events = self.t.feed(AccountRequested(f"wager_terminal_{seat}", seat, "cash_out", 0, medium))
        events += self.t.feed(DealerConfirmed(f"wager_terminal_{seat}", seat, "cash_out"))
        paid = [int(e.payload["amount"]) for e in events if e.type == "account.cashed_out"]
        if paid:
            assert paid == [self.books[seat]]  # everything left, to the cent
            self.cashed += paid[0]
            self.books[seat] = 0
        else:
            assert self.books[seat] == 0 or any(e.type == "account.request_refused" for e in events)

    @rule(seat=st.sampled_from(SEATS), asked=st.booleans(), down=st.booleans(), asks_again=st.booleans())
    def attendant_cash_out(self, seat: int, asked: bool, down: bool, asks_again: bool) -> None:
        """605a.2(d)(1) on a floorperson's authority: the terminal may have asked before it failed, may be offline,
        and may come back and ask (and the dealer confirm) again; the account is paid once, everything left."""
        terminal = f"wager_terminal_{seat}"
        if asked:
            self.t.feed(AccountRequested(terminal, seat, "cash_out", 0, "chips"))
        if down:
            self.t.feed(DeviceOffline(terminal, "no heartbeat"))
        inp = CashOutAccount(seat, "terminal out of order", "fp-1", "floorperson")
        events = self.t.feed(Signed(inp, f"c-{len(self.t.events)}", "cash_out_account", "fp-1", "floorperson"))
        paid = [e.payload for e in events if e.type == "account.cashed_out"]
        if paid:
            assert [(p["amount"], p["paid_by"], p["authorised_by"]) for p in paid] == [
                (self.books[seat], "attendant", "fp-1")
            ]
            self.cashed += self.books[seat]
            self.books[seat] = 0
        else:
            (refused,) = [e for e in events if e.type == "input.refused"]
            assert refused.rule == "605a.2(d)(1)"
            in_round = self.t.state.phase is not TablePhase.BETTING or bool(
                self.t.state.round and self.t.state.round.seats.get(seat) and self.t.state.round.seats[seat].wagers
            )
            assert self.books[seat] == 0 or in_round, refused.payload
        if down:
            self.t.feed(DeviceOnline(terminal))
            shown = [c for c in self.t.commands if isinstance(c, ShowAccount) and c.seat == seat]
            assert shown[-1].balance_cents == self.books[seat]  # back, the terminal shows what is left
        if asks_again:
            again = self.t.feed(DealerConfirmed(terminal, seat, "cash_out"))
            again += self.t.feed(AccountRequested(terminal, seat, "cash_out", 0, "ticket"))
            again += self.t.feed(DealerConfirmed(terminal, seat, "cash_out"))
            for e in again:
                if e.type == "account.cashed_out":  # only what was left after a refusal (a wager in play)
                    assert int(e.payload["amount"]) == self.books[seat] > 0 and not paid
                    self.cashed += self.books[seat]
                    self.books[seat] = 0

    @rule()
    def restart(self) -> None:
        """A kill -9 and a restart from what was stored: the engine state and the ledger's two copies."""
        body = snapshot.encode(self.t.state)
        state = snapshot.decode(body)
        stored = codec.encode(self.t.state.accounts, 1)
        loaded = codec.load_copies(stored, stored)
        assert loaded.findings == [] and loaded.ledger == state.accounts
        self.t.state = state
        self.t.feed(Recover())

    @invariant()
    def balances(self) -> None:
        if not hasattr(self, "t"):
            return
        ledger = self.t.state.accounts
        assert ledger.balance_problem() is None
        assert {n: ledger.balance(n) for n in SEATS} == self.books
        assert (ledger.bought_in, ledger.wagered, ledger.won, ledger.returned, ledger.cashed_out) == (
            self.bought,
            self.wagered,
            self.won,
            self.returned,
            self.cashed,
        )
        assert self.bought + self.won + self.returned == self.wagered + self.cashed + sum(self.books.values())


def test_accounts_balance_to_the_cent_across_random_rounds_voids_and_restarts() -> None:
    run_state_machine_as_test(
        Accounts,
        settings=settings(
            max_examples=60,
            stateful_step_count=60,
            derandomize=True,
            deadline=None,
            suppress_health_check=list(HealthCheck),
            phases=[Phase.explicit, Phase.reuse, Phase.generate],
        ),
    )


def test_a_copy_damaged_or_behind_is_found() -> None:
    from controller.accounts.ledger import Ledger, buy_in

    a, _ = buy_in(Ledger(), 1, 500)
    b, _ = buy_in(a, 2, 700)
    good, old = codec.encode(b, 2), codec.encode(a, 1)
    assert codec.load_copies(good, good).findings == []
    assert codec.load_copies(good, old).ledger == b and "differ" in codec.load_copies(good, old).findings[0]
    tampered = good.replace(b'"2":700', b'"2":900')
    assert "sha256" in codec.load_copies(good, tampered).findings[0]
    assert "missing" in codec.load_copies(None, good).findings[0]
