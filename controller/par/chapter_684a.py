"""Chapter 684a: the exact return of the Ante, Odds and Raise Wagers under the optimal raise/fold strategy, and of the
Prime and All-Six Bonus Wagers, with the operator's Rules Submission (the config's [game]: dealer_qualifies,
raise_multiples, ante_odds, raise_odds, odds_paytable, dealer_not_qualified, odds_when_player_loses).

The player sees five cards and makes a Raise Wager of one of the allowed multiples of the Ante, or folds (684a.1);
the dealer's five cards are any five of the other 47. controller.par.dealer_counts counts, for each player hand up to
suit permutation, the dealer hands that do not qualify, qualify and rank lower, tie, and rank higher, exactly; the
dealer is qualified by settlement's own test (DealerQualifies.met_by on rankings.best_five), which is a threshold in
the hand order (checked here). Integer sums: exact rationals.

684a fixes no ratio between the Odds and Ante Wagers, both placed before the deal; the sheet is figured with the
Odds Wager `odds_per_ante` times the Ante (1 by default, as the records of docs/settle/684a.md), and says so.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from math import comb, lcm

import numpy as np
import numpy.typing as npt

from controller.core.money import Odds
from controller.core.rankings import Five
from controller.games.chapter_684a.rules import Chapter684aRules
from controller.games.partial import SUBMISSION
from controller.par import combos, dealer_counts, fixed
from controller.par.chapter_684a_terms import DEALS, HANDS, POINT, Terms, qualify_rank, terms_of
from controller.par.evaluator import hand_class
from controller.par.sheet import Decision, Row, StrategyTable, WagerSheet, net_per_unit

_RANKS = "23456789TJQKA"
_MAX_LINES = 16


@dataclass(frozen=True)
class Strategy:
    """The optimal Raise per five-card hand: 0 folds, else the multiple of the Ante (`decide`)."""

    multiple: npt.NDArray[np.int8]  # per colex hand
    odds_per_ante: Fraction

    def decide(self, cards: list[int]) -> int:
        """The Raise multiple (0: fold) for the player's five cards (indices of STANDARD_DECK)."""
        return int(self.multiple[int(combos.index_unsorted(np.array([cards]))[0])])


@dataclass(frozen=True)
class MainGame:
    sheet: WagerSheet
    strategy: Strategy
    strategy_tables: tuple[StrategyTable, ...]


def _scaled(values: list[Fraction], scale: int) -> npt.NDArray[np.int64]:
    return np.array([int(v * scale) for v in values], dtype=np.int64)


def _total(a: npt.NDArray[np.int64]) -> int:
    return sum(int(x) for x in a)  # Python ints: no overflow however large the weights


def choose(terms: Terms, counts: npt.NDArray[np.int64], classes: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
    """Per player class, the index into terms.multiples of the best Raise, or -1 to fold (fold on a tie)."""
    scale = _scale(terms)
    best_value = np.full(len(counts), int(terms.fold * scale) * dealer_counts.DEALER_HANDS, dtype=np.int64)
    best = np.full(len(counts), -1, dtype=np.int64)
    for i in range(len(terms.multiples)):
        value = _value(terms, counts, classes, i, scale)
        better = value > best_value
        best[better] = i
        best_value[better] = value[better]
    return best


def _scale(terms: Terms) -> int:
    nets = [
        terms.fold,
        *terms.lose,
        *(x for row in terms.win for x in row),
        *(x for r in terms.not_qualified for x in r),
    ]
    return lcm(*(n.denominator for n in nets))


def _value(
    terms: Terms, counts: npt.NDArray[np.int64], classes: npt.NDArray[np.int64], i: int, scale: int
) -> npt.NDArray[np.int64]:
    win = _scaled([row[i] for row in terms.win], scale)[classes]
    nq = _scaled([row[i] for row in terms.not_qualified], scale)[classes]
    lose = int(terms.lose[i] * scale)
    return counts[:, 0] * nq + counts[:, 1] * win + counts[:, 3] * lose


@dataclass(frozen=True)
class Outcome:
    """The main game under a strategy: per-row integer counts of deals and their summed nets, scaled."""

    rows: list[Row]
    house_edge: Fraction
    average_wager: Fraction
    second_moment: Fraction
    hit: Fraction
    shares: dict[str, Fraction]  # action -> share of hands
    odds_rows: list[tuple[str, Fraction]]  # the Odds Wager's paytable rows: (class, contribution)


def evaluate(terms: Terms, counts: npt.NDArray[np.int64], choice: npt.NDArray[np.int64]) -> Outcome:
    """The exact figures of the strategy `choice` (per player class, as `choose` gives it)."""
    pc = dealer_counts.player_classes()
    classes = hand_class(dealer_counts.ranked().values[pc.rank]).astype(np.int64)
    w = pc.weight
    total = Fraction(1, DEALS)
    rows: list[Row] = []
    second = Fraction(0)
    hit = Fraction(0)
    odds_rows: list[tuple[str, Fraction]] = []
    shares, raise_count, lose_count, nq_count = _by_multiple(terms, counts, choice, classes, w)
    raised = choice >= 0
    for c in reversed(Five):
        name = c.name.lower()
        n_by_m = [
            _total(w[(choice == i) & (classes == int(c))] * counts[(choice == i) & (classes == int(c)), 1])
            for i in range(len(terms.multiples))
        ]
        p = sum(n_by_m) * total
        contribution = sum((n * total * terms.win[int(c)][i] for i, n in enumerate(n_by_m)), Fraction(0))
        second += sum((n * total * terms.win[int(c)][i] ** 2 for i, n in enumerate(n_by_m)), Fraction(0))
        if p:
            hit += p
        rows.append(Row(f"win_{name}", f"beats a qualified dealer with {name.replace('_', ' ')}", p, contribution))
        if terms.odds_part:
            odds_rows.append((name, p * terms.odds_part[int(c)]))
    nq_p = sum(nq_count.values()) * total
    nq_c = sum((n * total * terms.not_qualified[c][i] for (c, i), n in nq_count.items()), Fraction(0))
    second += sum((n * total * terms.not_qualified[c][i] ** 2 for (c, i), n in nq_count.items()), Fraction(0))
    hit += sum((n * total for (c, i), n in nq_count.items() if terms.not_qualified[c][i] > 0), Fraction(0))
    if terms.odds_part_not_qualified and any(terms.odds_part_not_qualified):
        for c in Five:
            extra = sum(nq_count[(int(c), i)] for i in range(len(terms.multiples))) * total
            odds_rows.append(
                (f"{c.name.lower()} (dealer not qualified)", extra * terms.odds_part_not_qualified[int(c)])
            )
    rows.append(Row("dealer_not_qualified", "the dealer does not qualify (dealer_not_qualified)", nq_p, nq_c))
    tie = _total(w[raised] * counts[raised, 2]) * total
    rows.append(Row("push", "a tie with a qualified dealer", tie, Fraction(0)))
    lose_p = sum(lose_count.values()) * total
    lose_c = sum((n * total * terms.lose[i] for i, n in lose_count.items()), Fraction(0))
    second += sum((n * total * terms.lose[i] ** 2 for i, n in lose_count.items()), Fraction(0))
    rows.append(Row("lose", "a qualified dealer beats the player", lose_p, lose_c))
    fold_p = shares["fold"]
    rows.append(
        Row("fold", "the player folds (684a.1): the wagers placed before the deal lose", fold_p, fold_p * terms.fold)
    )
    second += fold_p * terms.fold**2
    expected = sum((r.contribution for r in rows), Fraction(0))
    if sum((r.probability for r in rows), Fraction(0)) != 1:
        raise AssertionError("the rows do not cover every deal")  # a bug, never the input
    return Outcome(rows, -expected, -terms.fold + raise_count, second, hit, shares, odds_rows)


def _by_multiple(
    terms: Terms,
    counts: npt.NDArray[np.int64],
    choice: npt.NDArray[np.int64],
    classes: npt.NDArray[np.int64],
    w: npt.NDArray[np.int64],
) -> tuple[dict[str, Fraction], Fraction, dict[int, int], dict[tuple[int, int], int]]:
    """Per raise multiple: its share of hands (and the fold's), the raise it adds on average, the deals a qualified
    dealer beats, and per hand class the deals the dealer does not qualify on."""
    raise_count = Fraction(0)
    shares: dict[str, Fraction] = {}
    nq_count: dict[tuple[int, int], int] = {}
    lose_count: dict[int, int] = {}
    for i, m in enumerate(terms.multiples):
        mine = choice == i
        shares[f"raise {m}x"] = Fraction(_total(w[mine]), HANDS)
        raise_count += m * shares[f"raise {m}x"]
        lose_count[i] = _total(w[mine] * counts[mine, 3])
        for c in Five:
            sel = mine & (classes == int(c))
            nq_count[(int(c), i)] = _total(w[sel] * counts[sel, 0])
    shares["fold"] = 1 - sum(shares.values(), Fraction(0))
    return shares, raise_count, lose_count, nq_count


def analyse_main(rules: Chapter684aRules, odds_per_ante: Fraction = Fraction(1)) -> MainGame:
    terms = terms_of(rules, odds_per_ante)
    q = qualify_rank(rules)
    counts = dealer_counts.buckets(q)
    pc = dealer_counts.player_classes()
    classes = hand_class(dealer_counts.ranked().values[pc.rank]).astype(np.int64)
    choice = choose(terms, counts, classes)
    out = evaluate(terms, counts, choice)
    per_hand = np.where(choice >= 0, np.array(terms.multiples)[np.maximum(choice, 0)], 0)[pc.of_hand]
    strategy = Strategy(per_hand.astype(np.int8), odds_per_ante)
    notes = [
        f"the Odds Wager figured at {odds_per_ante} x the Ante (684a fixes no ratio; both are placed before the deal)",
        f"the dealer qualifies from {_name(int(dealer_counts.ranked().values[q]))} up (dealer_qualifies)",
        *(
            f"Odds Wager paytable row {name}: contributes {float(c) * 100:.6f} % of the Ante"
            for name, c in out.odds_rows
        ),
    ]
    decisions = tuple(Decision(POINT, action, share) for action, share in out.shares.items())
    sheet = WagerSheet(
        "ante",
        "Ante, Odds and Raise Wagers, optimal strategy",
        f"{SUBMISSION}: dealer_qualifies, raise_multiples, ante_odds, raise_odds, odds_paytable, dealer_not_qualified, "
        "odds_when_player_loses",
        "per Ante",
        out.house_edge,
        tuple(out.rows),
        out.hit,
        "exact: every player hand (134,459 suit classes) against the 1,533,939 dealer hands disjoint from it, by "
        "inclusion-exclusion over the player's cards",
        average_wager=out.average_wager,
        decisions=decisions,
        notes=tuple(notes),
        second_moment=out.second_moment,
    )
    return MainGame(sheet, strategy, (strategy_table(terms, choice),))


def _name(value: int) -> str:
    """A hand value as players say it: 'A-K-J-8-3 high', 'a pair of 8s, T-9-2'."""
    cls = Five(value >> 20)
    ranks = [_RANKS[r - 2] for r in ((value >> (16 - 4 * i)) & 0xF for i in range(5)) if r]
    if cls is Five.HIGH_CARD:
        return f"{'-'.join(ranks)} high"
    if cls is Five.PAIR:
        return f"a pair of {ranks[0]}s, {'-'.join(ranks[1:])}"
    return f"{cls.name.lower().replace('_', ' ')} {'-'.join(ranks)}"


def strategy_table(terms: Terms, choice: npt.NDArray[np.int64]) -> StrategyTable:
    """'raise 2x with ... or better; fold the rest' when one threshold in the hand order decides, else how the
    hands of the values that split (card removal: the suits the player holds) divide."""
    pc = dealer_counts.player_classes()
    values = dealer_counts.ranked().values
    lines: list[str] = []
    raised = choice >= 0
    if not raised.any():
        return StrategyTable(POINT, ("fold every hand",))
    if raised.all() and len(set(choice.tolist())) == 1:
        m = terms.multiples[int(choice[0])]
        return StrategyTable(
            POINT, (f"raise {m}x on every hand: a fold loses {-terms.fold} Antes, more than any hand loses raising",)
        )
    ranks = len(values)
    up = np.bincount(pc.rank[raised], weights=pc.weight[raised], minlength=ranks)
    all_ = np.bincount(pc.rank, weights=pc.weight, minlength=ranks)
    # Per value: 1 every hand raises, 0 none, -1 the suits held decide (card removal).
    state = np.where(up == all_, 1, np.where(up == 0, 0, -1))
    used = [i for i in range(len(terms.multiples)) if (choice == i).any()]
    if len(used) > 1:
        for i in sorted(used, key=lambda i: -terms.multiples[i]):
            low = int(pc.rank[choice == i].min())
            # Exact only if no hand from there up raises less (or folds): else say how many do.
            at_least = choice >= 0
            at_least &= np.array(terms.multiples)[np.maximum(choice, 0)] >= terms.multiples[i]
            less = int(pc.weight[(pc.rank >= low) & ~at_least].sum())
            lines.append(
                f"raise {terms.multiples[i]}x from {_name(int(values[low]))} (by rank) up, where no higher raise"
                + (f" (but {less:,} hands from there up raise less: card removal)" if less else "")
            )
        if raised.all():
            lines.append(
                f"never fold: a fold loses {-terms.fold} Antes, more than raising {min(terms.multiples)}x loses on any "
                "hand"
            )
            return StrategyTable(POINT, tuple(lines))
    runs = _runs(state)
    m = terms.multiples[used[0]]
    for k, (st, high, low) in enumerate(runs):
        if len(lines) >= _MAX_LINES:
            lines.append(
                f"... and {len(runs) - k} more runs of values: the strategy's data (Strategy.decide) has them all"
            )
            break
        if k == 0 and st == 1:
            lines.append(f"raise {m}x with {_name(int(values[low]))} (by rank) or better")
        elif st == 1:
            lines.append(f"raise also from {_name(int(values[low]))} to {_name(int(values[high]))}")
        elif st == -1:
            lines.append(
                f"{_name(int(values[low]))}: raise on {int(up[low]):,} of its {int(all_[low]):,} hands "
                "(the suits held decide: card removal)"
            )
    lines.append("fold the rest")
    return StrategyTable(POINT, tuple(lines))


def _runs(state: npt.NDArray[np.int64]) -> list[tuple[int, int, int]]:
    """(state, highest value, lowest value) of each run of values that decide alike, from the top; a value the suits
    held decide is a run of its own."""
    runs: list[tuple[int, int, int]] = []
    for r in range(len(state) - 1, -1, -1):
        if runs and runs[-1][0] == state[r] and state[r] != -1:
            runs[-1] = (runs[-1][0], runs[-1][1], r)
        else:
            runs.append((int(state[r]), r, r))
    return runs


def prime(rules: Chapter684aRules, strategy: Strategy | None) -> WagerSheet:
    """The player's five cards all one color, at the Rules Submission's same_color odds; collected with a folded
    hand when folded_optional_wagers = collected (then the strategy says which hands fold)."""
    odds = Odds.parse((rules.prime_paytable or {})["same_color"])
    hands = combos.combinations(5)
    red = np.isin(hands // 13, [1, 2]).sum(axis=1)  # STANDARD_DECK suits c, d, h, s: d and h are red
    same = (red == 0) | (red == 5)
    folded = np.zeros(HANDS, dtype=bool) if strategy is None else strategy.multiple == 0
    n_same = int((same & ~folded).sum())
    if n_same + int((~same | folded).sum()) != HANDS or 2 * comb(26, 5) != int(same.sum()):
        raise AssertionError("the Prime counts do not add up")  # a bug
    outcomes = [
        fixed.Outcome("same_color", str(odds), n_same, net_per_unit(odds)),
        fixed.Outcome("lose", "mixed colors (or a folded hand, collected)", HANDS - n_same, Fraction(-1)),
    ]
    return fixed.sheet(
        "prime",
        "Prime Wager",
        f"{SUBMISSION} prime_paytable ({rules.prime_hand})",
        outcomes,
        HANDS,
        "exact: every five-card hand",
    )


def all_six(rules: Chapter684aRules) -> WagerSheet:
    """684a.10(b): the player's five cards and the All-Six Bonus card, any six of the deck (rankings.Six)."""
    return fixed.all_six(rules.all_six_paytable or {}, f"{SUBMISSION} all_six_paytable ({rules.all_six_hand})")


def analyse(rules: Chapter684aRules) -> tuple[MainGame, list[WagerSheet], list[str]]:
    main = analyse_main(rules)
    collected = rules.folded_optional_wagers == "collected"
    side: list[WagerSheet] = []
    missing: list[str] = []
    if rules.prime_paytable is not None:
        side.append(prime(rules, main.strategy if collected else None))
    if rules.all_six_paytable is not None:
        side.append(all_six(rules))
        if collected:
            missing.append(
                "folded_optional_wagers = collected: the All-Six Bonus figure assumes every hand plays (a folded "
                "hand's wager would lose); it is an upper bound on the return (the Prime Wager's is exact)"
            )
    if rules.wager_limits:
        missing.append("wager_limits bound the wagers, not the payouts: no payout limit applies to the figures")
    return main, side, missing
