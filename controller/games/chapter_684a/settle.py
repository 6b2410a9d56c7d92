"""Chapter 684a: the settlement of a recorded round, the same the round engine uses live.

684a.11 and 684a.12 are not available: seats are settled as the package docstring reads it, and every rule the
text leaves open comes from the Rules Submission.
"""

from __future__ import annotations

from controller.core.invariant import present
from controller.core.money import Cents, Odds
from controller.core.rankings import FiveCardHand, best_five, rank_six
from controller.core.settlement import Settled, lose, push, win
from controller.core.settlement import (
    fail as _fail,
)
from controller.games.chapter_684a.record import Chapter684aRound, Chapter684aSeat, validate
from controller.games.chapter_684a.rules import MAIN, OPTIONAL, WAGER_RULE, Chapter684aRules
from controller.games.partial import SUBMISSION, prime_hand, settle_seats


def settle(rules: Chapter684aRules, r: Chapter684aRound) -> tuple[list[Settled], dict[str, Cents]]:
    """Every wager of the round, seats counterclockwise from the dealer's right (684a.11 not available), and the
    meters, which no 684a wager moves."""
    validate(rules, r)
    dealer = best_five(r.dealer)
    qualified = rules.dealer_qualifies.met_by(dealer)
    out = settle_seats(
        r.seats,
        OPTIONAL,
        WAGER_RULE,
        rules.folded_optional_wagers,
        lambda s: _main(rules, s, dealer, qualified),
        lambda s, w, amount: _optional(rules, r, s, w, amount),
    )
    return out, dict(r.meters)


def settle_round(rules: Chapter684aRules, r: Chapter684aRound) -> list[Settled]:
    return settle(rules, r)[0]


def _main(rules: Chapter684aRules, s: Chapter684aSeat, dealer: FiveCardHand, qualified: bool) -> list[Settled]:
    mine = best_five(s.cards)
    hand = mine.name
    amounts = {w: s.wagers[w] for w in MAIN if s.wagers.get(w)}
    if s.folded:
        return [lose(s.seat, w, a, "684a.1", hand=hand, note="the player folded (684a.1)") for w, a in amounts.items()]
    table = f"{SUBMISSION} odds_paytable"
    odds = {
        "ante": Odds.parse(rules.ante_odds),
        "raise": Odds.parse(rules.raise_odds),
        "odds": Odds.parse(rules.odds_paytable[hand]),
    }
    if not qualified:
        dnq = rules.dealer_not_qualified
        choice = {"ante": dnq.ante, "raise": dnq.raise_, "odds": "win" if dnq.odds == "paytable" else "push"}
        note = "the dealer did not qualify (dealer_qualifies); dealer_not_qualified"
        return [
            win(s.seat, w, a, odds[w], "684a.1", hand=hand, paytable=table if w == "odds" else SUBMISSION, note=note)
            if choice[w] == "win"
            else push(s.seat, w, a, "684a.1", hand=hand, note=note)
            for w, a in amounts.items()
        ]
    if mine > dealer:
        return [
            win(s.seat, w, a, odds[w], "684a.1", hand=hand, paytable=table if w == "odds" else SUBMISSION)
            for w, a in amounts.items()
        ]
    if mine == dealer:
        return [push(s.seat, w, a, "684a.1", hand=hand, note="tie with the dealer") for w, a in amounts.items()]
    return [
        push(s.seat, w, a, "684a.1", hand=hand, note="odds_when_player_loses = push")
        if w == "odds" and rules.odds_when_player_loses == "push"
        else lose(s.seat, w, a, "684a.1", hand=hand)
        for w, a in amounts.items()
    ]


def _optional(rules: Chapter684aRules, r: Chapter684aRound, s: Chapter684aSeat, w: str, amount: Cents) -> Settled:
    if w == "prime":
        hand, row = prime_hand(s.cards, rules.prime_paytable)
        table = f"{SUBMISSION} prime_paytable ({rules.prime_hand})"
    elif w == "all_six":
        sixth = present(r.all_six_bonus_card, "the All Six Bonus card")  # validate() requires it
        hand = rank_six([*s.cards, sixth]).name
        row = (rules.all_six_paytable or {}).get(hand)
        table = f"{SUBMISSION} all_six_paytable ({rules.all_six_hand})"
    else:  # the rules refuse to offer the Four Card Bonus, so validate() refuses the wager before this
        raise _fail(f"seats[seat={s.seat}].wagers.{w}", "the Four Card Bonus Wager cannot be settled here")
    if row is None:
        return lose(s.seat, w, amount, WAGER_RULE[w], hand=hand, paytable=table)
    return win(s.seat, w, amount, Odds.parse(row), WAGER_RULE[w], hand=hand, paytable=table)
