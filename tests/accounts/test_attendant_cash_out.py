"""605a.2(d)(1) when the seat's terminal cannot ask: a floorperson's or supervisor's signed `cash_out_account` debits
what remains, exactly as the dealer's confirmation of a terminal's cash-out does, paid by an attendant, with who
authorised it and why; refused while the seat has a wager in the round, for an empty account, a blank reason or a
table without terminals. Pure engine, scripted decks and draws (the signed command over a real broker, with a
restart, is tests/commands/test_cash_out_account_e2e.py)."""

from __future__ import annotations

from collections.abc import Sequence

from controller.core.events import DomainEvent
from controller.engine.commands import ShowAccount
from controller.engine.inputs import CashOutAccount, OpenTable, Signed
from controller.engine.round import RoundEngine
from controller.engine.state import TableState
from controller.games.mississippi_stud.rules import MississippiStudRules
from controller.games.mississippi_stud.spec import MississippiStudSpec
from drivers.interfaces import AccountRequested, DealerConfirmed, DeviceOffline, DeviceOnline
from tests.engine.conftest import PureTable, arranged_deck, decide_all

RULE = "605a.2(d)(1)"
RULES = MississippiStudRules.model_validate(
    {"chapter": "655a", "five_card_hand_bonus": True, "five_card_hand_bonus_wager_cents": 100}
)


class FixedDraws:
    def magic_card(self) -> str:
        return "2c"

    def lucky_seat(self, seats: Sequence[int]) -> int:
        return 6


def table(rules: MississippiStudRules = RULES, top: Sequence[str] = ()) -> PureTable:
    engine = RoundEngine(MississippiStudSpec(), rules, "automated_shoe", None, FixedDraws())
    t = PureTable(engine, TableState("t1"), [arranged_deck(top)] if top else [])
    t.feed(OpenTable())
    return t


def pay_out(t: PureTable, seat: int, reason: str = "terminal offline", who: str = "ann") -> list[DomainEvent]:
    inp = CashOutAccount(seat, reason, who, "floorperson")
    return t.feed(Signed(inp, f"c{len(t.events)}", "cash_out_account", who, "floorperson"))


def shown(t: PureTable, seat: int) -> list[tuple[int, str]]:
    return [(c.balance_cents, c.message) for c in t.commands if isinstance(c, ShowAccount) and c.seat == seat]


def refusal(events: list[DomainEvent]) -> str:
    (refused,) = [e for e in events if e.type == "input.refused"]
    assert refused.rule == RULE
    return str(refused.payload["reason"])


def test_an_offline_terminals_account_is_paid_by_an_attendant_as_a_terminal_cash_out_is() -> None:
    t, twin = table(), table()
    for x in (t, twin):
        x.buy_in(2, 7_500)
    t.feed(DeviceOffline("wager_terminal_2", "no heartbeat"))
    before = len(shown(t, 2))
    out = pay_out(t, 2, "terminal 2 dark since 21:40, ticket TR-118")
    assert [(e.type, e.rule) for e in out] == [("command.accepted", None), ("account.cashed_out", RULE)]
    paid = out[1].payload
    assert paid["paid_by"] == "attendant" and paid["medium"] == "attendant"
    assert (paid["authorised_by"], paid["role"], paid["reason"]) == (
        "ann",
        "floorperson",
        "terminal 2 dark since 21:40, ticket TR-118",
    )
    assert paid["terminal"] == "offline (no heartbeat)"  # why the terminal could not ask
    # The same movement a terminal's cash-out makes: the ledger, the event's amounts and totals.
    (by_terminal,) = [e for e in twin.cash_out(2) if e.type == "account.cashed_out"]
    assert twin.state.accounts == t.state.accounts and t.state.accounts.balance(2) == 0
    common = ("seat", "request", "amount", "balance_before", "balance", "ledger_seq", "totals")
    assert {k: paid[k] for k in common} == {k: by_terminal.payload[k] for k in common}
    assert paid["amount"] == 7_500 and t.state.accounts.totals()["cashed_out"] == 7_500
    # Nothing is sent to a terminal that is not there; back, it shows the zero balance, and asking pays nothing.
    assert len(shown(t, 2)) == before
    t.feed(DeviceOnline("wager_terminal_2"))
    assert shown(t, 2)[-1] == (0, "balance")
    again = t.feed(AccountRequested("wager_terminal_2", 2, "cash_out", 0, "chips"))
    assert [(e.type, e.payload["reason"]) for e in again] == [("account.request_refused", "the game account is empty")]
    assert t.state.accounts.cashed_out == 7_500


def test_a_request_the_terminal_left_pending_is_superseded_so_the_dealers_key_cannot_pay_twice() -> None:
    """The terminal asked, then failed before the dealer confirmed: the attendant pays, the pending request goes (its
    `account.request_declined` says why), and the dealer's confirmation from the terminal once it is back finds none."""
    t = table()
    t.buy_in(1, 4_000)
    t.feed(AccountRequested("wager_terminal_1", 1, "cash_out", 0, "ticket"))
    t.feed(DeviceOffline("wager_terminal_1", "faulted: printer jam"))
    out = pay_out(t, 1)
    assert [e.type for e in out] == ["command.accepted", "account.request_declined", "account.cashed_out"]
    assert out[1].payload["request"] == "cash_out" and "superseded" in str(out[1].payload["reason"])
    assert out[2].payload["amount"] == 4_000 and not t.state.account_requests
    t.feed(DeviceOnline("wager_terminal_1"))
    late = t.feed(DealerConfirmed("wager_terminal_1", 1, "cash_out"))
    assert [e.type for e in late] == ["input.refused"] and "no cash_out awaits" in str(late[0].payload["reason"])
    assert t.state.accounts.cashed_out == 4_000 and t.state.accounts.balance_problem() is None


def test_a_buy_in_never_credited_is_named_so_the_attendant_gives_back_what_the_dealer_took() -> None:
    t = table()
    t.buy_in(3, 2_000)
    t.feed(AccountRequested("wager_terminal_3", 3, "buy_in", 500, "cash"))
    out = pay_out(t, 3)
    declined = next(e for e in out if e.type == "account.request_declined")
    assert declined.payload["request"] == "buy_in" and "never credited" in str(declined.payload["reason"])
    assert next(e for e in out if e.type == "account.cashed_out").payload["amount"] == 2_000  # the 500 never was


def test_refused_while_the_seat_has_a_wager_in_the_round_then_paid_once_it_is_settled() -> None:
    """The player is still in the hand: the round must settle (or be voided) first; the balance stays."""
    t = table(top=["Ah", "Kh", "2c", "7d", "9h", "4h", "Jh"])
    t.buy_in(1, 1_000)
    t.wager(1, "ante", 500)
    why = refusal(pay_out(t, 1))  # chips only so far: the player is in the round all the same
    assert "seat 1 has wagers in round" in why and "settle the round or void it first" in why
    t.wager(1, "five_card_hand_bonus", 100)
    t.press("no_more_bets")
    assert "settle the round or void it first" in refusal(pay_out(t, 1))
    assert t.state.accounts.balance(1) == 900 and t.state.accounts.cashed_out == 0
    decide_all(t, t.events)
    balance = t.state.accounts.balance(1)
    out = pay_out(t, 1)
    assert [e.payload["amount"] for e in out if e.type == "account.cashed_out"] == [balance]


def test_refused_for_no_account_an_empty_one_a_blank_reason_no_seat_and_no_terminals() -> None:
    t = table()
    assert refusal(pay_out(t, 4)) == "seat 4's game account is empty: nothing to pay"
    t.buy_in(4, 300)
    pay_out(t, 4)
    assert refusal(pay_out(t, 4)) == "seat 4's game account is empty: nothing to pay"  # paid once, never twice
    t.buy_in(5, 300)
    assert "a reason is required" in refusal(pay_out(t, 5, reason="  "))
    assert "no seat 9" in refusal(pay_out(t, 9))
    assert t.state.accounts.balance(5) == 300 and t.state.accounts.cashed_out == 300
    plain = table(MississippiStudRules.model_validate({"chapter": "655a"}))
    assert "no electronic wagering system" in refusal(pay_out(plain, 1))
