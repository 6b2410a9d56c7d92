"""Chapter 679a, Three Card Prime: the exact return of the Ante and Play Wagers under the optimal strategy, with the
Bad Beat Bonus, and of the Prime, Pair Bonus and All-Six Bonus Wagers, all with the paytables and rules of the
operator's Rules Submission (the config's [game]: hand_order, ace_two_three, the odds, dealer_not_qualified).

The player sees three cards and plays (a Play Wager equal to the Ante) or folds; the dealer's three cards are any
three of the other 49. For each of the 22,100 player hands the analysis counts, over the 18,424 dealer hands that
share no card with it, those it beats, ties, loses to and those that do not qualify (679a.1: queen high or better),
by comparing every pair at once (a 52-bit card mask tells the disjoint ones), and keeps the better of play and fold.
Hands are ranked by the Rules Submission's own key (ThreeCardPrimeRules.key) and the dealer qualified by the
settlement's own test, so the sheet and settlement rank alike. Integer sums: exact rationals.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from functools import cache
from math import comb

import numpy as np
import numpy.typing as npt

from controller.core.cards import STANDARD_DECK
from controller.core.money import Odds
from controller.core.rankings import rank_three
from controller.games.partial import SUBMISSION
from controller.games.three_card_prime.rules import OPTIONAL, ThreeCardPrimeRules
from controller.games.three_card_prime.settle import qualifies
from controller.par import combos, fixed
from controller.par.sheet import Decision, Row, StrategyTable, WagerSheet, net_per_unit

IntArray = npt.NDArray[np.int64]
HANDS = comb(52, 3)
DEALER_HANDS = comb(49, 3)  # the dealer's three cards, given the player's
_BLOCK = 400


@dataclass(frozen=True)
class Ranked:
    """Every three-card hand (colex order) under the Rules Submission's ranking."""

    strength: IntArray  # dense: equal hands equal, a higher number a better hand
    classes: list[str]  # the class name of each hand (rankings.Three, lowercase)
    qualifies: npt.NDArray[np.bool_]  # as a dealer's hand (679a.1)
    masks: IntArray  # the 52-bit set of its cards
    names: list[str]  # "Qs 6h 4d", for the strategy table


def rank_all(rules: ThreeCardPrimeRules) -> Ranked:
    sets = combos.combinations(3).tolist()
    cards = [[STANDARD_DECK[c] for c in s] for s in sets]
    keys = [rules.key(c) for c in cards]
    order = {k: i for i, k in enumerate(sorted(set(keys)))}
    masks = np.array([sum(1 << c for c in s) for s in sets], dtype=np.int64)
    return Ranked(
        np.array([order[k] for k in keys], dtype=np.int64),
        [rank_three(c).name.lower() for c in cards],
        np.array([qualifies(rules, c) for c in cards], dtype=bool),
        masks,
        [" ".join(sorted(c, key=lambda x: -(STANDARD_DECK.index(x) % 13))) for c in cards],
    )


def _counts(r: Ranked) -> IntArray:
    """counts[p, k] over the dealer hands sharing no card with player hand p: k = 0 the player beats a qualified
    dealer, 1 ties one, 2 loses to one, 3 the dealer does not qualify."""
    out = np.zeros((HANDS, 4), dtype=np.int64)
    for start in range(0, HANDS, _BLOCK):
        p = slice(start, min(start + _BLOCK, HANDS))
        apart = (r.masks[p, None] & r.masks[None, :]) == 0
        q = apart & r.qualifies[None, :]
        mine, theirs = r.strength[p, None], r.strength[None, :]
        out[p, 0] = (q & (mine > theirs)).sum(axis=1)
        out[p, 1] = (q & (mine == theirs)).sum(axis=1)
        out[p, 2] = (q & (mine < theirs)).sum(axis=1)
        out[p, 3] = (apart & ~r.qualifies[None, :]).sum(axis=1)
    if (out.sum(axis=1) != DEALER_HANDS).any():
        raise AssertionError("a player hand does not face 18,424 dealer hands")  # a bug, never the input
    return out


@dataclass(frozen=True)
class Strategy:
    """The optimal 679a.7(d)(1) decision found, as data a simulated player follows (controller.people uses
    `decide`): plays[h] says whether to make the Play Wager on player hand h (colex), ranked by the Rules
    Submission's own key."""

    plays: npt.NDArray[np.bool_]

    def __post_init__(self) -> None:
        # Shared: main_game is made once a process, and every sheet and simulated player reads it.
        self.plays.flags.writeable = False

    def decide(self, cards: list[int]) -> bool:
        """Whether to make the Play Wager on the player's three cards (indices of STANDARD_DECK)."""
        if len(cards) != 3:
            raise ValueError(f"{len(cards)} cards: 679a.7(d)(1) decides on the player's three")
        return bool(self.plays[int(combos.index_unsorted(np.array([cards]))[0])])


@dataclass(frozen=True)
class MainGame:
    sheet: WagerSheet
    strategy: Strategy
    strategy_tables: tuple[StrategyTable, ...]


def _main_rows(
    rules: ThreeCardPrimeRules, played: npt.NDArray[np.int64], total: int, win: Fraction, nq_net: Fraction
) -> list[Row]:
    """The played hands' outcomes (won, dealer not qualified, tie, lost: `played`'s columns 0, 3, 1, 2), per Ante;
    `win` is what the Ante and Play Wagers net together on a win."""
    nq = rules.dealer_not_qualified
    rows = [
        Row(
            "win",
            f"Ante {rules.ante_odds}, Play {rules.play_odds} (beats a qualified dealer)",
            Fraction(int(played[0]), total),
            Fraction(int(played[0]), total) * win,
        ),
        Row(
            "dealer_not_qualified",
            f"Ante {nq.ante}, Play {nq.play} (dealer_not_qualified)",
            Fraction(int(played[3]), total),
            Fraction(int(played[3]), total) * nq_net,
        ),
        Row("push", "a tie with a qualified dealer", Fraction(int(played[1]), total), Fraction(0)),
        Row(
            "lose",
            "Ante and Play lose to a qualified dealer",
            Fraction(int(played[2]), total),
            Fraction(int(played[2]) * -2, total),
        ),
    ]
    return rows


def _bad_beat_rows(
    rules: ThreeCardPrimeRules,
    ranked: Ranked,
    plays: npt.NDArray[np.bool_],
    counts: IntArray,
    bad_beat: dict[str, Fraction],
    total: int,
) -> list[Row]:
    """The Bad Beat Bonus (679a.1) on each losing played hand of a class its paytable pays."""
    rows = []
    for cls, net in bad_beat.items():
        mask = plays & np.array([c == cls for c in ranked.classes])
        n = int(counts[mask, 2].sum())
        rows.append(
            Row(
                f"bad_beat_{cls}",
                f"{rules.bad_beat_paytable and rules.bad_beat_paytable[cls]} on the Play Wager (679a.1)",
                Fraction(n, total),
                Fraction(n, total) * net,
            )
        )
    return rows


def analyse_main(rules: ThreeCardPrimeRules, ranked: Ranked) -> MainGame:
    counts = _counts(ranked)
    ante = net_per_unit(Odds.parse(rules.ante_odds))
    play = net_per_unit(Odds.parse(rules.play_odds))
    nq = rules.dealer_not_qualified
    nq_net = (ante if nq.ante == "win" else Fraction(0)) + (play if nq.play == "win" else Fraction(0))
    bad_beat = {c: net_per_unit(Odds.parse(o)) for c, o in (rules.bad_beat_paytable or {}).items()}
    # Per player hand, in units of the Ante (the Play Wager equals it: 679a spec, `allowed`).
    beat = [bad_beat.get(c, Fraction(0)) for c in ranked.classes]
    played_value = [
        int(won) * (ante + play) + int(lost) * (b - 2) + int(nq_n) * nq_net
        for won, lost, nq_n, b in zip(counts[:, 0], counts[:, 2], counts[:, 3], beat, strict=True)
    ]
    fold_value = -DEALER_HANDS
    plays = np.array([v > fold_value for v in played_value], dtype=bool)
    total = HANDS * DEALER_HANDS
    expected = sum((v if p else Fraction(fold_value) for v, p in zip(played_value, plays, strict=True)), Fraction(0))
    expected /= total

    played = counts[plays].sum(axis=0)
    folds = int((~plays).sum()) * DEALER_HANDS
    rows = _main_rows(rules, played, total, ante + play, nq_net)
    second = (
        Fraction(int(played[0]), total) * (ante + play) ** 2
        + Fraction(int(played[3]), total) * nq_net**2
        + Fraction(folds, total)
    )
    rows += _bad_beat_rows(rules, ranked, plays, counts, bad_beat, total)
    # The second moment of the losing hands, with their bad beat bonus where they hold one.
    for i in np.flatnonzero(plays & (counts[:, 2] > 0)):
        second += Fraction(int(counts[i, 2]), total) * (beat[int(i)] - 2) ** 2
    rows.append(Row("fold", "the Ante loses (679a.1)", Fraction(folds, total), Fraction(-folds, total)))
    if sum((r.contribution for r in rows), Fraction(0)) != expected:
        raise AssertionError("the rows disagree with the total")  # a bug, never the input
    point = "Play Wager (679a.7(d)(1))"
    share = Fraction(int(plays.sum()), HANDS)
    sheet = WagerSheet(
        "ante",
        "Ante and Play Wagers, optimal strategy" + (", with the Bad Beat Bonus" if bad_beat else ""),
        f"{SUBMISSION}: ante_odds, play_odds, dealer_not_qualified, hand_order, ace_two_three"
        + (", bad_beat_paytable" if bad_beat else ""),
        "per Ante",
        -expected,
        tuple(rows),
        Fraction(int(played[0]), total) + (Fraction(int(played[3]), total) if nq_net > 0 else Fraction(0)),
        "exact: every player hand against every dealer hand, 22,100 x 18,424",
        average_wager=1 + share,
        decisions=(Decision(point, "play", share), Decision(point, "fold", 1 - share)),
        second_moment=second,
    )
    return MainGame(sheet, Strategy(plays), (_strategy(ranked, plays),))


def _strategy(ranked: Ranked, plays: npt.NDArray[np.bool_]) -> StrategyTable:
    """Play from the weakest hand played up, when the hands played are exactly those as good as it or better."""
    point = "Play Wager (679a.7(d)(1)): the player's three cards"
    weakest = int(ranked.strength[plays].min())
    if (plays == (ranked.strength >= weakest)).all():
        example = ranked.names[int(np.flatnonzero(ranked.strength == weakest)[0])]
        return StrategyTable(point, (f"play with {example} (by rank) or better", "fold anything lower"))
    return StrategyTable(point, (f"play on {int(plays.sum()):,} of the 22,100 hands (not one threshold)",))


def prime(rules: ThreeCardPrimeRules) -> WagerSheet:
    """679a.7(d)(2): the player's three cards all one color, at the Rules Submission's same_color odds."""
    odds = Odds.parse((rules.prime_paytable or {})["same_color"])
    same = 2 * comb(26, 3)
    outcomes = [
        fixed.Outcome("same_color", str(odds), same, net_per_unit(odds)),
        fixed.Outcome("lose", "mixed colors lose", HANDS - same, Fraction(-1)),
    ]
    return fixed.sheet(
        "prime", "Prime Wager", f"{SUBMISSION} prime_paytable", outcomes, HANDS, "exact: every three-card hand"
    )


def pair_bonus(rules: ThreeCardPrimeRules, ranked: Ranked) -> WagerSheet:
    """679a.7(d)(3): the best three of the player's three cards and the fourth (or community) card."""
    table = rules.pair_bonus_paytable or {}
    sets = combos.combinations(4)
    best = np.full(len(sets), -1, dtype=np.int64)
    for drop in range(4):
        best = np.maximum(best, ranked.strength[combos.index_of(np.delete(sets, drop, axis=1))])
    class_of = {int(s): c for s, c in zip(ranked.strength, ranked.classes, strict=True)}
    counts: dict[str, int] = {}
    for strength, n in zip(*np.unique(best, return_counts=True), strict=True):
        counts[class_of[int(strength)]] = counts.get(class_of[int(strength)], 0) + int(n)
    outcomes = []
    lose = 0
    for cls in rules.hand_order:
        n = counts.get(cls, 0)
        if cls in table:
            odds = Odds.parse(table[cls])
            outcomes.append(fixed.Outcome(cls, str(odds), n, net_per_unit(odds)))
        else:
            lose += n
    outcomes.append(fixed.Outcome("lose", "loses", lose, Fraction(-1)))
    return fixed.sheet(
        "pair_bonus",
        "Pair Bonus Wager",
        f"{SUBMISSION} pair_bonus_paytable ({rules.pair_bonus_layout})",
        outcomes,
        comb(52, 4),
        "exact: every four-card set, the best three of four",
    )


def all_six(rules: ThreeCardPrimeRules) -> WagerSheet:
    """679a.1 All-Six Bonus: the player's three cards and the dealer's three, any six of the deck (rankings.Six)."""
    return fixed.all_six(rules.all_six_paytable or {}, f"{SUBMISSION} all_six_paytable")


def main_game(rules: ThreeCardPrimeRules) -> MainGame:
    """The Ante and Play under the rules' own ranking, made once a process per set of rules (their JSON): each sheet
    of the same rules and the optimal players read it."""
    return _main_game(rules.model_dump_json(by_alias=True))


@cache
def _main_game(settings: str) -> MainGame:
    rules = ThreeCardPrimeRules.model_validate_json(settings)
    return analyse_main(rules, rank_all(rules))


def analyse(rules: ThreeCardPrimeRules) -> tuple[MainGame, list[WagerSheet], list[str]]:
    ranked = rank_all(rules)
    main = main_game(rules)
    side: list[WagerSheet] = []
    missing: list[str] = []
    if rules.folded_optional_wagers == "collected" and any(rules.offers(w) for w in OPTIONAL):
        missing.append(
            "folded_optional_wagers = collected: the optional wagers below assume every hand plays (a folded hand's "
            "optional wagers would lose); their figures are an upper bound on the return"
        )
    if rules.prime_paytable is not None:
        side.append(prime(rules))
    if rules.pair_bonus_paytable is not None:
        side.append(pair_bonus(rules, ranked))
    if rules.all_six_paytable is not None:
        side.append(all_six(rules))
    return main, side, missing
