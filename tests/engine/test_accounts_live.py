"""The Five Card Hand Bonus live (issue 14 items 1-3): game accounts debited and credited in the round, the
terminals' lock-out confirmed like the stations', the Magic Card and Lucky Bonus drawn at the lock-out and sealed
until settlement, a 500 for 1 payout verified before it is credited. Pure engine, scripted decks and draws."""

from __future__ import annotations

from collections.abc import Sequence

import pydantic
import pytest

from controller.engine.commands import DeviceCommand, LockTerminal, ShowAccount, ShowLevels
from controller.engine.inputs import Input, OpenTable, PlayerLeft, ResetMeter, Signed, ValidateJackpot
from controller.engine.round import RoundEngine
from controller.engine.state import Phase, TableState
from controller.games.mississippi_stud.rules import MississippiStudRules
from controller.games.mississippi_stud.spec import MississippiStudSpec
from controller.games.registry import REGISTRY
from drivers.interfaces import (
    AccountRequested,
    DealerConfirmed,
    DeviceOffline,
    DeviceOnline,
    LockAcknowledged,
    WagerDetected,
)
from tests.engine.conftest import PureTable, arranged_deck, decide_all, sealed


class FixedDraws:
    """The table game system's draws, fixed so a test can arrange who wins them (a live table uses the CSPRNG)."""

    def __init__(self, magic: str, lucky: int) -> None:
        self.magic, self.lucky = magic, lucky

    def magic_card(self) -> str:
        return self.magic

    def lucky_seat(self, seats: Sequence[int]) -> int:
        assert self.lucky in seats
        return self.lucky


RULES = MississippiStudRules.model_validate(
    {
        "chapter": "655a",
        "five_card_hand_bonus": True,
        "five_card_hand_bonus_wager_cents": 100,
        "magic_card_bonus": True,
        "lucky_bonus": True,
    }
)


def table(top: Sequence[str], magic: str = "Ah", lucky: int = 3) -> PureTable:
    engine = RoundEngine(MississippiStudSpec(), RULES, "automated_shoe", None, FixedDraws(magic, lucky))
    t = PureTable(engine, TableState("t1"), [arranged_deck(top)])
    t.feed(OpenTable())
    return t


def shown(t: PureTable, seat: int) -> list[tuple[int, str]]:
    return [(c.balance_cents, c.message) for c in t.commands if isinstance(c, ShowAccount) and c.seat == seat]


def of(t: PureTable, kind: str) -> list[dict[str, object]]:
    return [dict(e.payload) for e in t.events if e.type == kind]


# Seat 1 holds the Magic Card (Ah) and makes a flush in hearts with the community (50 for 1, 655a.12(e)(1)); seat 3
# is drawn for the Lucky Bonus and makes nothing, so its wager loses and no bonus is paid (655a.11(i)(3)(i)).
DEAL = ["Ah", "Kh", "2c", "7d", "9h", "4h", "Jh"]


def play_round(t: PureTable) -> None:
    for seat in (1, 3):
        t.wager(seat, "ante", 500)
    t.press("no_more_bets")
    decide_all(t, t.events)


def test_a_round_from_buy_in_to_cash_out_balances_to_the_cent() -> None:
    """A Magic Card draw is paid on a winning Five Card Hand Bonus hand only (655a.11(i)(3)(i)): the losing hand's draw
    credits nothing."""
    t = table(DEAL)
    # 605a.2(d)(1): nothing is credited until the dealer confirms at the terminal.
    req = t.feed(AccountRequested("wager_terminal_1", 1, "buy_in", 5_000, "cash"))
    assert [e.type for e in req] == ["account.requested"] and t.state.accounts.balance(1) == 0
    assert shown(t, 1)[-1] == (0, "buy-in of $50.00: awaiting the dealer")
    done = t.feed(DealerConfirmed("wager_terminal_1", 1, "buy_in"))
    assert [(e.type, e.rule, e.payload["balance"]) for e in done] == [("account.bought_in", "605a.2(d)(1)", 5_000)]
    t.buy_in(3, 1_000, "chips")

    t.wager(1, "ante", 500)
    placed = t.wager(1, "five_card_hand_bonus", 100)
    assert [(e.type, e.rule) for e in placed] == [
        ("wager.accepted", "655a.7(d)(5)"),
        ("account.wagered", "605a.2(d)(2)"),
    ]
    assert shown(t, 1)[-1] == (4_900, "wager accepted")  # 655a.7(d)(5): the player verifies acceptance
    t.wager(3, "five_card_hand_bonus", 100)
    # Cash-out while the wager is live is refused; the balance stays.
    refused = t.feed(AccountRequested("wager_terminal_1", 1, "cash_out", 0, "chips"))
    assert [e.type for e in refused] == ["account.request_refused"]
    assert "in play" in str(refused[0].payload["reason"]) and t.state.accounts.balance(1) == 4_900

    play_round(t)
    types = t.types()
    # The lock-out: every terminal locked and confirmed; the draws sealed before the first card.
    assert sorted(c.seat for c in t.commands if isinstance(c, LockTerminal)) == [1, 2, 3, 4, 5, 6]
    drawn = next(e for e in t.events if e.type == "bonus.drawn")
    assert sealed(drawn) == {"magic_card": "Ah", "lucky_seat": 3} and "Ah" not in str(drawn.payload)
    assert drawn.rule == "655a.1"
    assert types.index("lockout.confirmed") < types.index("bonus.drawn") < types.index("cards.dealt")
    # Settlement: seat 1's flush pays 50 for 1 and its Magic Card 20 for 1, to the game account; seat 3's Lucky Bonus
    # draw is not paid on its losing hand (655a.1 "an additional payout", 655a.11(i)(3)(i)).
    credits = [(p["seat"], p["wager"], p["amount"]) for p in of(t, "account.credited")]
    assert credits == [(1, "five_card_hand_bonus", 5_000), (1, "magic_card_bonus", 2_000)]
    lost = next(e for e in t.events if e.type == "five_card_hand_bonus.settled" and e.payload["seat"] == 3)
    assert lost.payload["outcome"] == "lose" and "lucky seat 3 drawn, not paid" in str(lost.payload["note"])
    assert not [e for e in t.events if e.type == "lucky_bonus.settled"]
    assert of(t, "bonus.published") == [{"magic_card": "Ah", "lucky_seat": 3}]
    assert types.index("round.recorded") > types.index("bonus.published") > types.index("hand.settled")
    # Replayable by `tablectl settle`: the recorded round settles to the same bonus rows.
    record = of(t, "round.recorded")[0]["record"]
    assert isinstance(record, dict) and record["magic_card"] == "Ah" and record["lucky_seat"] == 3
    rows, _ = REGISTRY["655a"].settle(RULES, record)
    assert {(x.seat, x.wager, x.paid + x.returned) for x in rows if x.wager.endswith("_bonus") and x.paid} == {
        (1, "five_card_hand_bonus", 5_000),
        (1, "magic_card_bonus", 2_000),
    }

    out = t.cash_out(1)
    assert [(e.type, e.payload["amount"], e.payload["balance"]) for e in out[1:]] == [("account.cashed_out", 11_900, 0)]
    ledger = t.state.accounts
    assert ledger.balance_problem() is None
    assert ledger.totals() == {
        "bought_in": 6_000,
        "wagered": 200,
        "won": 7_000,
        "returned": 0,
        "cashed_out": 11_900,
        "held": 900,
    }


def test_the_draws_swapped_pay_the_lucky_bonus_with_the_flush_and_no_magic_card_on_the_losing_hand() -> None:
    """The same deal, the Lucky Bonus drawn for seat 1's flush and the Magic Card (2c) in seat 3's losing hand: 50 for 1
    and 5 for 1 to seat 1, nothing but the collected wager at seat 3 (655a.1, 655a.11(i)(3)(i))."""
    t = table(DEAL, magic="2c", lucky=1)
    for seat in (1, 3):
        t.buy_in(seat, 1_000)
        t.wager(seat, "five_card_hand_bonus", 100)
    play_round(t)
    credits = [(p["seat"], p["wager"], p["amount"]) for p in of(t, "account.credited")]
    assert credits == [(1, "five_card_hand_bonus", 5_000), (1, "lucky_bonus", 500)]
    hands = [(e.payload["seat"], e.payload["outcome"]) for e in t.events if e.type == "five_card_hand_bonus.settled"]
    assert hands == [(3, "lose"), (1, "win")]
    assert not [e for e in t.events if e.type == "magic_card_bonus.settled"]
    assert (t.state.accounts.balance(1), t.state.accounts.balance(3)) == (1_000 - 100 + 5_500, 900)


def test_refusals_at_the_terminal() -> None:
    t = table(DEAL)
    # Not enough in the account: refused, nothing debited, the player is told why.
    r = t.wager(2, "five_card_hand_bonus", 100)
    assert [e.type for e in r] == ["wager.rejected"] and "buy in" in str(r[0].payload["reason"])
    # Chips on a station are not a Five Card Hand Bonus Wager (655a.7(d)(5): the electronic wagering device).
    t.buy_in(1, 1_000)
    r = t.feed(WagerDetected("wager_station_1", 1, "five_card_hand_bonus", 100))
    assert "terminal" in str(r[0].payload["reason"]) and t.state.accounts.balance(1) == 1_000
    t.wager(1, "ante", 500)
    t.wager(1, "five_card_hand_bonus", 100)
    # Cancelled before the lock-out: the wager goes back to the account.
    c = t.wager(1, "five_card_hand_bonus", 0)
    assert [e.type for e in c] == ["wager.withdrawn", "account.wager_cancelled"] and t.state.accounts.balance(
        1
    ) == 1_000
    t.wager(1, "five_card_hand_bonus", 100)
    t.press("no_more_bets")
    # After "no more bets": refused with the electronic wagering system's lock-out, shown at the terminal.
    t.buy_in(2, 500)
    late = t.wager(2, "five_card_hand_bonus", 100)
    assert [(e.type, e.rule) for e in late] == [("wager.rejected", "655a.2(d)")]
    assert shown(t, 2)[-1] == (500, "no more bets: wager refused")


def test_the_deal_waits_for_every_terminals_lock() -> None:
    t = table(DEAL)
    held: list[LockTerminal] = []

    def answer(c: DeviceCommand) -> list[Input]:
        if isinstance(c, LockTerminal):
            held.append(c)  # the terminals say nothing until the test lets them
            return []
        return t.perfect_devices(c)

    t.answer = answer
    t.buy_in(1, 1_000)
    t.wager(1, "ante", 500)
    t.wager(1, "five_card_hand_bonus", 100)
    t.press("no_more_bets")
    assert t.state.phase is Phase.LOCKING and "lockout.confirmed" not in t.types()
    for c in held[:-1]:
        t.feed(LockAcknowledged(f"wager_terminal_{c.seat}", c.seat, True))
    assert t.state.phase is Phase.LOCKING
    t.feed(LockAcknowledged(f"wager_terminal_{held[-1].seat}", held[-1].seat, True))
    assert "lockout.confirmed" in t.types() and "bonus.drawn" in t.types()


def test_a_void_returns_the_wager_to_the_account() -> None:
    """A card count found wrong voids the round (655a.13(c)): the wager goes back to the game account it came from."""
    t = table(DEAL)
    t.buy_in(1, 1_000)
    t.wager(1, "ante", 500)
    t.wager(1, "five_card_hand_bonus", 100)
    t.press("no_more_bets")
    t.press("wrong_card_count")  # 655a.13(c): void, every wager returned
    returned = of(t, "account.returned")
    assert [(p["seat"], p["amount"], p["balance"]) for p in returned] == [(1, 100, 1_000)]
    assert t.state.accounts.totals()["returned"] == 100 and t.state.accounts.balance_problem() is None


def test_four_of_a_kind_is_verified_by_a_floorperson_before_it_is_credited() -> None:
    """Four of a kind pays 500 for 1 (655a.12(e)(1)): $500 on the $1 wager, credited once a floorperson verified it."""
    # Seat 1: four aces with the community (500 for 1, 655a.12(e)(1)); no Magic Card or Lucky Bonus hit.
    t = table(["Ah", "As", "Ad", "Ac", "2h"], magic="3c", lucky=6)
    t.buy_in(1, 1_000)
    t.wager(1, "ante", 500)
    t.wager(1, "five_card_hand_bonus", 100)
    t.press("no_more_bets")
    decide_all(t, t.events)
    asked = of(t, "account.verification_requested")
    assert [(p["seat"], p["amount"]) for p in asked] == [(1, 50_000)]
    assert t.state.phase is Phase.JACKPOT and t.state.accounts.balance(1) == 900
    # Cash-out waits for it too.
    assert [e.type for e in t.feed(AccountRequested("wager_terminal_1", 1, "cash_out", 0, "chips"))] == [
        "account.request_refused"
    ]
    hit = str(asked[0]["hit"])
    t.feed(
        Signed(
            ValidateJackpot(1, "five_card_hand_bonus", hit, "fp-1", "floorperson"),
            "c1",
            "validate",
            "fp-1",
            "floorperson",
        )
    )
    assert [(p["seat"], p["amount"]) for p in of(t, "account.credited")] == [(1, 50_000)]
    assert t.state.accounts.balance(1) == 50_900 and "round.completed" in t.types()


# Seat 2's three cards, then the stub's two community cards (643a.10): a flush in spades (50 for 1, 643a.12(f)(1)),
# or the same Magic Card on a straight, which loses (643a.7(i): flush or better).
LIR_FLUSH, LIR_STRAIGHT = ["Qs", "3s", "8s", "2s", "5s"], ["Qs", "Jd", "Tc", "9h", "8d"]


@pytest.mark.parametrize(("deal", "credited"), [(LIR_FLUSH, (50 + 20 + 5) * 100), (LIR_STRAIGHT, 0)])
def test_let_it_ride_terminals_lock_out_and_draw_at_643a(deal: list[str], credited: int) -> None:
    """643a.2(e): the electronic wagering system locks out the Five Card Hand Bonus when dealing begins; the draws are
    the table game system's (643a.1) and pay at 643a.12(f)(3), with a winning hand only (643a.11(f)(3)(v)(A))."""
    from controller.games.let_it_ride.rules import LetItRideRules
    from controller.games.let_it_ride.spec import LetItRideSpec

    rules = LetItRideRules.model_validate(
        {
            "chapter": "643a",
            "let_it_ride_paytable": "A",
            "bet_min_cents": 500,
            "bet_max_cents": 10_000,
            "five_card_hand_bonus": True,
            "five_card_hand_bonus_initial_cents": 1_000_000,
            "five_card_hand_bonus_reset_cents": 1_000_000,
            "five_card_hand_bonus_rate_percent": 13.0,
            "magic_card_bonus": True,
            "lucky_bonus": True,
        }
    )
    # Seat 2 holds the Magic Card (Qs) among its three cards and is drawn for the Lucky Bonus.
    engine = RoundEngine(LetItRideSpec(), rules, "automated_shoe", None, FixedDraws("Qs", 2))
    t = PureTable(engine, TableState("t1"), [arranged_deck(deal)])
    t.feed(OpenTable())
    t.buy_in(2, 2_000)
    for bet in ("bet_1", "bet_2", "bet_3"):
        t.wager(2, bet, 500)
    assert [e.type for e in t.wager(2, "five_card_hand_bonus", 100)] == ["wager.accepted", "account.wagered"]
    t.press("no_more_bets")
    t.buy_in(3, 500)
    assert [(e.type, e.rule) for e in t.wager(3, "five_card_hand_bonus", 100)] == [("wager.rejected", "643a.2(e)")]
    decide_all(t, t.events)
    drawn = next(e for e in t.events if e.type == "bonus.drawn")
    assert drawn.rule == "643a.1" and sealed(drawn) == {"magic_card": "Qs", "lucky_seat": 2}
    record = next(e.payload["record"] for e in t.events if e.type == "round.recorded")
    assert isinstance(record, dict) and sorted([*record["seats"][0]["cards"], *record["community"]]) == sorted(deal)
    credits = [
        (p["wager"], p["amount"], p["rule"])
        for p in ({**e.payload, "rule": e.rule} for e in t.events if e.type == "account.credited")
    ]
    hand = next(e for e in t.events if e.type == "five_card_hand_bonus.settled")
    if credited:
        assert credits == [
            ("five_card_hand_bonus", 5_000, "643a.11(f)(3)(v)"),
            ("magic_card_bonus", 2_000, "643a.11(f)(3)(v)"),
            ("lucky_bonus", 500, "643a.11(f)(3)(v)"),
        ]
        notes = [
            str(e.payload["note"]) for e in t.events if e.type in ("magic_card_bonus.settled", "lucky_bonus.settled")
        ]
        assert len(notes) == 2 and all("(643a.1, 643a.11(f)(3)(v)(A))" in n for n in notes)
    else:
        assert credits == [] and hand.payload["outcome"] == "lose"
        assert "not paid" in str(hand.payload["note"]) and "643a.11(f)(3)(v)(A)" in str(hand.payload["note"])
        assert not [e for e in t.events if e.type in ("magic_card_bonus.settled", "lucky_bonus.settled")]
    assert t.state.accounts.balance(2) == 2_000 - 100 + credited and t.state.accounts.balance_problem() is None


def test_the_reseed_moves_the_reserve_in_and_settle_agrees_with_the_meter_model() -> None:
    """655a.12(e)(4): seed $10,000 for 1, reseed $0, 13 % primary and 8 % reserve. The reserve of the incrementation
    rate funds the next meter, so after a 100 % award the meter restarts at the reserve (topped up to the reseed if
    short); the chapter's settlement, fed the carry recorded with the round, reseeds to the same cent."""
    # Three $1 wagers put 8 % each into the reserve at the lock-out; seat 1 then holds a royal flush in hearts with the
    # community (stacks go to seats 1, 2, 3 in turn, then the community from the stub).
    t = table(["Ah", "Kh", "2c", "3d", "4s", "6d", "Qh", "Jh", "Th"], magic="2s", lucky=6)
    for seat in (1, 2, 3):
        t.buy_in(seat, 1_000)
    for seat in (1, 2, 3):
        t.wager(seat, "ante", 500)
        t.wager(seat, "five_card_hand_bonus", 100)
    t.press("no_more_bets")
    decide_all(t, t.events)
    for h in list(t.state.pending_hits):
        t.feed(Signed(ValidateJackpot(h.seat, h.level, h.hit, "fp", "floorperson"), "c", "v", "fp", "floorperson"))
    reseeds = [e for e in t.events if e.type == "meter.reseeded" and e.payload["level"] == "five_card_hand_bonus"]
    assert reseeds, "the royal flush reseeded the meter"
    reseed = reseeds[-1].payload
    assert reseed["from_reserve_micro"] == 24 * 10**6  # three $1 wagers at 8 %: 24 cents
    after = int(reseed["meter_after_cents"])
    assert after == 24  # the reserve, not $0
    settled = next(e for e in t.events if e.type == "five_card_hand_bonus.settled" and e.payload["seat"] == 1)
    assert "from the meter model" not in str(settled.payload.get("note", ""))
    record = next(e.payload["record"] for e in t.events if e.type == "round.recorded")
    _, meters = REGISTRY["655a"].settle(RULES, record)
    assert meters["five_card_hand_bonus"] == after


def test_the_operator_chooses_how_accounts_are_cashed_out() -> None:
    """605a.2(d)(1): a cash-out record paid in chips or a ticket, per the table's config (game_account_cash_out)."""
    rules = RULES.model_copy(update={"game_account_cash_out": ["ticket"]})
    engine = RoundEngine(MississippiStudSpec(), rules, "automated_shoe", None, FixedDraws("Ah", 3))
    t = PureTable(engine, TableState("t1"), [arranged_deck(DEAL)])
    t.feed(OpenTable())
    t.buy_in(1, 1_000)
    refused = t.feed(AccountRequested("wager_terminal_1", 1, "cash_out", 0, "chips"))
    assert [e.type for e in refused] == ["account.request_refused"]
    assert "ticket only" in str(refused[0].payload["reason"]) and t.state.accounts.balance(1) == 1_000
    asked = t.feed(AccountRequested("wager_terminal_1", 1, "cash_out", 0, "ticket"))
    assert "account.request_refused" not in [e.type for e in asked]
    paid = t.feed(DealerConfirmed("wager_terminal_1", 1, "cash_out", True))
    assert [(e.type, e.payload.get("medium")) for e in paid if e.type.startswith("account.cashed")] == [
        ("account.cashed_out", "ticket")
    ]
    assert t.state.accounts.balance(1) == 0


def test_a_config_offering_no_cash_out_medium_is_refused() -> None:
    with pytest.raises(pydantic.ValidationError, match="game_account_cash_out"):
        MississippiStudRules.model_validate({"chapter": "655a", "game_account_cash_out": []})


@pytest.mark.parametrize("how", ["lose", "hold"])
def test_a_held_abandoned_account_wager_goes_back_to_the_account_655a_7_b(how: str) -> None:
    """655a.7(b) with 605a.2(d)(2): a player leaves mid-round. Lost, his Five Card Hand Bonus Wager stays collected by
    the debit made when it was placed; held, it has no chips on the layout for the dealer to hold, so it goes back to
    the game account it came from (not to the chips' held list), and the ledger balances. A void afterwards does not
    return it a second time.

    A card count found wrong voids the round (655a.13(c)): every wager is returned, the departed player's included."""
    rules = RULES.model_copy(update={"abandoned_wagers": how})
    engine = RoundEngine(MississippiStudSpec(), rules, "automated_shoe", None, FixedDraws("Ah", 3))
    t = PureTable(engine, TableState("t1"), [arranged_deck(DEAL)])
    t.feed(OpenTable())
    t.buy_in(1, 1_000)
    t.wager(1, "ante", 500)
    t.wager(1, "five_card_hand_bonus", 100)
    t.wager(3, "ante", 500)
    t.press("no_more_bets")
    left = t.feed(PlayerLeft(1))
    assert [(e.type, e.rule) for e in left][:1] == [("wagers.abandoned", "655a.7(b)")]
    if how == "hold":
        assert left[0].payload["to_account"] == {"five_card_hand_bonus": 100}
        assert [(e.type, e.rule, e.payload["amount"], e.payload["balance"]) for e in left[1:2]] == [
            ("account.returned", "655a.7(b)", 100, 1_000)
        ]
        assert t.state.held_wagers == {1: {"ante": 500}}
    else:
        assert "to_account" not in left[0].payload and not of(t, "account.returned")
        assert t.state.held_wagers == {}
    assert t.state.accounts.balance(1) == (1_000 if how == "hold" else 900)
    assert t.state.accounts.balance_problem() is None
    t.press("wrong_card_count")  # 655a.13(c): void, every wager returned, the departed player's included
    voided = next(e for e in t.events if e.type == "round.voided")
    assert voided.payload["returned"]["1"] == (
        {"ante": 500} if how == "hold" else {"ante": 500, "five_card_hand_bonus": 100}
    )
    assert t.state.accounts.balance(1) == 1_000  # the 100 back once, whichever way
    assert t.state.accounts.totals()["returned"] == 100 and t.state.accounts.balance_problem() is None


def test_605a_2_a_a_terminal_speaks_only_for_its_own_players_account() -> None:
    """605a.2(a) ("each player's electronic wagering terminal") and 605a.1: a terminal is its betting position's. A
    driver that reports another seat from seat 1's terminal (a misconfigured or faulty plugin) must not wager from,
    cash out, or confirm the lock-out of seat 2's terminal: each is refused, recorded, and seat 2's money stays."""
    t = table(DEAL)
    held: list[LockTerminal] = []

    def answer(c: DeviceCommand) -> list[Input]:
        if isinstance(c, LockTerminal) and c.seat == 2:
            held.append(c)  # seat 2's terminal says nothing until the test lets it
            return []
        return t.perfect_devices(c)

    t.answer = answer
    t.buy_in(2, 1_000)
    t.wager(2, "ante", 500)
    foreign = [
        WagerDetected("wager_terminal_1", 2, "five_card_hand_bonus", 100),
        AccountRequested("wager_terminal_1", 2, "cash_out", 0, "chips"),
    ]
    for inp in foreign:
        out = t.feed(inp)
        assert [(e.type, e.rule) for e in out] == [("input.refused", "605a.2(a)")]
        assert "wager_terminal_1 is seat 1's terminal" in str(out[0].payload["reason"])
    r = t.state.round
    assert r is not None and "five_card_hand_bonus" not in r.seat(2).wagers and t.state.accounts.balance(2) == 1_000
    t.wager(2, "five_card_hand_bonus", 100)
    t.press("no_more_bets")
    assert held and t.state.phase is Phase.LOCKING
    # Seat 1's terminal cannot confirm seat 2's lock-out: the deal still waits for seat 2's own terminal.
    out = t.feed(LockAcknowledged("wager_terminal_1", 2, True))
    assert [(e.type, e.rule) for e in out] == [("input.refused", "605a.2(a)")] and t.state.phase is Phase.LOCKING
    t.feed(LockAcknowledged("wager_terminal_2", 2, True))
    assert "lockout.confirmed" in t.types()


def test_a_meter_share_of_the_bonus_is_paid_by_an_attendant_never_to_the_account_605a_7_a_3() -> None:
    """655a.11(i)(3)(iii): a Five Card Hand Bonus payout that is a percentage of the meter "may not be paid to the
    player's game account". So it goes on the attendant's meter (605a.7(a)(3)), never the system's or a terminal's
    (605a.7(a)(2)), and on the cumulative payout meter (605a.7(a)(4)); the account stays as the wager left it through
    the floorperson's validation.

    The straight flush wins 10 % of the meter (655a.12(e)(1)), the meter being its $10,000-for-1 seed (655a.12(e)(4))
    plus the wager's 13 %."""
    # Seat 1 alone: 9h Th, then the community Jh Qh Kh: a straight flush, 10% of the meter (655a.12(e)(1)).
    t = table(["9h", "Th", "Jh", "Qh", "Kh"], magic="3c", lucky=6)
    t.buy_in(1, 1_000)
    t.wager(1, "ante", 500)
    t.wager(1, "five_card_hand_bonus", 100)
    t.press("no_more_bets")
    decide_all(t, t.events)
    # The meter: $10,000 for 1 of the $1 wager (655a.12(e)(4)) plus the wager's 13 %: 1,000,013 cents; 10 % of it.
    (hit,) = of(t, "meter.hit")
    assert (hit["meter_before_cents"], hit["paid_cents"], hit["paid_by"]) == (1_000_013, 100_001, "attendant")
    meters = t.state.meters
    assert meters is not None
    level = meters.levels["five_card_hand_bonus"]
    assert (level.paid_by_attendant_cents, level.paid_by_system_cents, level.wins_cents) == (100_001, 0, 100_001)
    assert t.state.phase is Phase.JACKPOT and t.state.accounts.balance(1) == 900
    (held,) = of(t, "progressive.hit")
    t.feed(
        Signed(
            ValidateJackpot(1, "five_card_hand_bonus", str(held["hit"]), "fp-1", "floorperson"),
            "c1",
            "validate",
            "fp-1",
            "floorperson",
        )
    )
    assert [p["amount"] for p in of(t, "progressive.paid")] == [100_001] and "round.completed" in t.types()
    assert of(t, "account.credited") == [] and t.state.accounts.balance(1) == 900


def test_605a_7_a_5_a_supervisor_resets_a_meter_between_rounds_audited() -> None:
    """605a.7(a)(5): "a key and keyed switch to reset the progressive meter or meters or other reset mechanism". The
    table's mechanism is a supervisor's signed reset_meter with a reason: the display is taken off into the removed
    meter (still owed under the Rules Submission) and the level reseeded; never during a round, whose contributions a
    void must still be able to take back."""
    t = table(DEAL)

    def reset(level: str, reason: str) -> list[tuple[str, str | None]]:
        inp = ResetMeter(level, reason, "sup-1", "supervisor")
        return [(e.type, e.rule) for e in t.feed(Signed(inp, "c9", "reset_meter", "sup-1", "supervisor"))]

    t.buy_in(1, 1_000)
    t.wager(1, "ante", 500)
    t.wager(1, "five_card_hand_bonus", 100)
    t.press("no_more_bets")
    assert ("input.refused", "605a.7(a)(5)") in reset("five_card_hand_bonus", "meter fault, ticket 42")
    assert t.state.meters is not None and t.state.meters.display()["five_card_hand_bonus"] == 1_000_013
    decide_all(t, t.events)
    assert t.state.phase is Phase.BETTING
    assert ("input.refused", "605a.7(a)(5)") in reset("mega", "meter fault, ticket 42")  # no such meter here
    assert ("input.refused", "605a.7(a)(5)") in reset("five_card_hand_bonus", "  ")  # a reset says why
    done = reset("five_card_hand_bonus", "meter fault, ticket 42")
    assert [x for x in done if x[0].startswith("meter.")] == [
        ("meter.reset", "605a.7(a)(5)"),
        ("meter.reseeded", "655a.12(e)(4)"),
    ]
    (removed,) = of(t, "meter.reset")
    assert (removed["authorised_by"], removed["reason"]) == ("sup-1", "meter fault, ticket 42")
    level = t.state.meters.levels["five_card_hand_bonus"]
    # The reseed is $0 plus the 8 % reserve the wager put aside (655a.12(e)(4)): 8 cents on the sign.
    assert (level.removed_micro // 1_000_000, t.state.meters.display()["five_card_hand_bonus"]) == (1_000_013, 8)
    assert [dict(c.levels) for c in t.commands if isinstance(c, ShowLevels)][-1] == {"five_card_hand_bonus": 8}
    assert level.balance_problem() is None


def test_655a_2_d_a_terminal_lost_at_the_lock_out_takes_no_wager_and_is_locked_when_back() -> None:
    """655a.2(d): the lock-out prevents any Five Card Hand Bonus Wager after dealing begins. A terminal that goes away
    before confirming its lock cannot take a wager, so the deal stops waiting for it (recorded as unreachable); the
    wager it took before stands and settles to the account (605a.2(d)(2)); back, it is locked at once, and a wager it
    sends is refused, never counted."""
    t = table(["Ah", "Kh", "9h", "4h", "Jh"])  # seat 1 alone: a flush in hearts with the community
    held: list[LockTerminal] = []

    def answer(c: DeviceCommand) -> list[Input]:
        if isinstance(c, LockTerminal) and c.seat == 1:
            held.append(c)  # seat 1's terminal never confirms: it is failing
            return []
        return t.perfect_devices(c)

    t.answer = answer
    t.buy_in(1, 1_000)
    t.wager(1, "ante", 500)
    t.wager(1, "five_card_hand_bonus", 100)
    t.press("no_more_bets")
    assert held and t.state.phase is Phase.LOCKING
    t.feed(DeviceOffline("wager_terminal_1", "no heartbeat"))
    (confirmed,) = of(t, "lockout.confirmed")
    assert confirmed["terminals_unreachable"] == [1] and confirmed["terminals"] == 5
    types = t.types()
    assert types.index("lockout.confirmed") < types.index("bonus.drawn") < types.index("cards.dealt")
    before = len(t.commands)
    t.feed(DeviceOnline("wager_terminal_1"))
    assert [c for c in t.commands[before:] if isinstance(c, LockTerminal)] == [LockTerminal(1)]
    late = t.feed(WagerDetected("wager_terminal_1", 1, "five_card_hand_bonus", 0))
    late += t.feed(WagerDetected("wager_terminal_1", 1, "five_card_hand_bonus", 200))
    assert {(e.type, e.rule) for e in late} == {("wager.rejected", "655a.2(d)")}
    r = t.state.round
    assert r is not None and r.seat(1).wagers["five_card_hand_bonus"] == 100
    decide_all(t, t.events)
    # Seat 1's flush in hearts pays 50 for 1 and the Magic Card (Ah) 20 for 1, credited to the account.
    assert [(p["seat"], p["amount"]) for p in of(t, "account.credited")] == [(1, 5_000), (1, 2_000)]
    assert t.state.accounts.balance(1) == 900 + 7_000 and t.state.accounts.balance_problem() is None
