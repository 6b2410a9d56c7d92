"""The game accounts of a table's electronic wagering system (605a.2(d)(1)-(2)): pure, exact to the cent.

One account per betting position (655a.2(d), 643a.2(e): "each betting position must contain an electronic
wagering system"). Every movement is one of the operations below; each returns the new ledger and the payload of
the `account.*` event the engine journals in the same step as the wager or settlement that caused it.

The balance, checked by `balance_problem` at every operation, by the codec at save and load, and by the hypothesis
state machine in tests/accounts/test_ledger_balance.py:

    bought_in + won + returned == wagered + cashed_out + sum(balances)          (cents)

i.e. the credits in (buy-ins, winnings with their wager, wagers given back by a cancel or a void) equal the
wagers taken, the cash-outs and what the accounts hold: no cent is created or lost.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Literal

# The largest single buy-in a terminal may ask for: far above any table's limits, low enough that a garbled
# amount is refused rather than credited (a config may lower it, never raise it).
MAX_BUY_IN_CENTS = 10_000_000  # $100,000

Medium = Literal["cash", "chips", "ticket"]


class LedgerError(ValueError):
    """An operation the accounts cannot make (not enough in the account, an amount that is not a whole positive
    number of cents); the message says why, for the refusal the engine journals."""


@dataclass(frozen=True)
class Ledger:
    """The table's game accounts (605a.2(d)(1)-(2)): each seat's balance, and the totals that must balance with them."""

    balances: dict[int, int] = field(default_factory=dict)  # seat -> cents in its game account
    bought_in: int = 0  # credited at buy-ins (605a.2(d)(1))
    wagered: int = 0  # debited for wagers placed from an account (605a.2(d)(2))
    won: int = 0  # winnings and their wager credited (605a.2(d)(2), 655a.11(i)(3)(iii))
    returned: int = 0  # wagers given back: cancelled before the lock-out, returned by a void
    cashed_out: int = 0  # debited at cash-outs (605a.2(d)(1))
    seq: int = 0  # movements so far: a stored copy behind the engine's is found by it

    def balance(self, seat: int) -> int:
        return self.balances.get(seat, 0)

    @property
    def held(self) -> int:
        return sum(self.balances.values())

    def balance_problem(self) -> str | None:
        credits = self.bought_in + self.won + self.returned
        debits = self.wagered + self.cashed_out + self.held
        if any(v < 0 for v in self.balances.values()):
            return "an account holds less than nothing: " + ", ".join(
                f"seat {s} {v}" for s, v in sorted(self.balances.items()) if v < 0
            )
        if min(self.bought_in, self.wagered, self.won, self.returned, self.cashed_out, self.seq) < 0:
            return "a ledger total is negative"
        if credits != debits:
            return (
                f"the accounts do not balance: bought in {self.bought_in} + won {self.won} + returned "
                f"{self.returned} = {credits} cents != wagered {self.wagered} + cashed out {self.cashed_out} + "
                f"held {self.held} = {debits}"
            )
        return None

    def totals(self) -> dict[str, int]:
        return {
            "bought_in": self.bought_in,
            "wagered": self.wagered,
            "won": self.won,
            "returned": self.returned,
            "cashed_out": self.cashed_out,
            "held": self.held,
        }


def _cents(what: str, amount: int, at_most: int | None = None) -> None:
    if isinstance(amount, bool) or not isinstance(amount, int) or amount <= 0:
        raise LedgerError(f"{what} must be a whole positive number of cents, got {amount!r}")
    if at_most is not None and amount > at_most:
        raise LedgerError(f"{what} of {amount} cents is above the most one movement may be ({at_most} cents)")


def _moved(ledger: Ledger, seat: int, delta: int, **totals: int) -> tuple[Ledger, dict[str, Any]]:
    balances = dict(ledger.balances)
    after = balances.get(seat, 0) + delta
    if after:
        balances[seat] = after
    else:
        balances.pop(seat, None)
    new = replace(
        ledger,
        balances=balances,
        seq=ledger.seq + 1,
        **{k: getattr(ledger, k) + v for k, v in totals.items()},
    )
    problem = new.balance_problem()
    if problem is not None:  # cannot happen through these operations; never store a ledger that lost a cent
        raise LedgerError(problem)
    return new, {"seat": seat, "balance_before": ledger.balance(seat), "balance": after, "ledger_seq": new.seq}


def buy_in(ledger: Ledger, seat: int, amount: int, limit: int = MAX_BUY_IN_CENTS) -> tuple[Ledger, dict[str, Any]]:
    """605a.2(d)(1): credit the funds a player bought in with (cash or chips the dealer took)."""
    _cents("a buy-in", amount, limit)
    new, payload = _moved(ledger, seat, amount, bought_in=amount)
    return new, {**payload, "amount": amount}


def cash_out(ledger: Ledger, seat: int) -> tuple[Ledger, dict[str, Any]]:
    """605a.2(d)(1): debit every remaining cent of the account at the cash-out."""
    amount = ledger.balance(seat)
    if amount <= 0:
        raise LedgerError(f"seat {seat}'s game account is empty: nothing to cash out")
    new, payload = _moved(ledger, seat, -amount, cashed_out=amount)
    return new, {**payload, "amount": amount}


def wager(ledger: Ledger, seat: int, amount: int) -> tuple[Ledger, dict[str, Any]]:
    """605a.2(d)(2): a wager placed from the game account is debited when it is placed."""
    _cents("a wager", amount)
    if ledger.balance(seat) < amount:
        raise LedgerError(
            f"seat {seat}'s game account holds {ledger.balance(seat)} cents, less than the {amount} cent wager: "
            "buy in at the terminal"
        )
    new, payload = _moved(ledger, seat, -amount, wagered=amount)
    return new, {**payload, "amount": amount}


def give_back(ledger: Ledger, seat: int, amount: int) -> tuple[Ledger, dict[str, Any]]:
    """A wager cancelled before the lock-out, or returned by a void: the whole wager goes back to the account."""
    _cents("a returned wager", amount)
    new, payload = _moved(ledger, seat, amount, returned=amount)
    return new, {**payload, "amount": amount}


def credit_win(ledger: Ledger, seat: int, amount: int) -> tuple[Ledger, dict[str, Any]]:
    """605a.2(d)(2), 655a.11(i)(3)(iii), 643a.11(f)(3)(v)(C): the winnings and the corresponding wager."""
    _cents("a win", amount)
    new, payload = _moved(ledger, seat, amount, won=amount)
    return new, {**payload, "amount": amount}


def from_balances(balances: Mapping[int, int]) -> Ledger:
    """A ledger whose accounts hold `balances`, all of it bought in (tests and examples)."""
    ledger = Ledger()
    for seat, amount in sorted(balances.items()):
        if amount:
            ledger, _ = buy_in(ledger, seat, amount, limit=max(amount, MAX_BUY_IN_CENTS))
    return ledger
