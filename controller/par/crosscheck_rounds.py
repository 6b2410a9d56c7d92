"""One round of each chapter, as the cross-check (crosscheck.py) plays it: dealt from a seeded shuffle, decided by the
par analysis's optimal strategy, settled by the chapter's REAL settlement (what `tablectl settle` runs), the main
game checked to the cent against the analysis's payoff and each wager's net added to its Estimate. Pure."""

from __future__ import annotations

from collections.abc import Callable
from fractions import Fraction
from typing import Any

import numpy as np
import numpy.typing as npt

from controller.core.cards import STANDARD_DECK
from controller.core.money import Odds
from controller.core.settlement import Settled
from controller.games.cajun_stud.record import CajunStudRound
from controller.games.cajun_stud.rules import CajunStudRules
from controller.games.cajun_stud.settle import settle as settle_cajun_stud
from controller.games.chapter_684a.record import Chapter684aRound
from controller.games.chapter_684a.rules import Chapter684aRules
from controller.games.chapter_684a.settle import settle as settle_chapter_684a
from controller.games.let_it_ride.record import LetItRideRound
from controller.games.let_it_ride.rules import LetItRideRules
from controller.games.let_it_ride.settle import settle_record as settle_let_it_ride
from controller.games.mississippi_stud.hands import payout_limit
from controller.games.mississippi_stud.paytables import FIVE_CARD_HAND_BONUS_SEED_FOR_1, PROGRESSIVE_SEED_FOR_1
from controller.games.mississippi_stud.record import MississippiStudRound
from controller.games.mississippi_stud.rules import MississippiStudRules
from controller.games.mississippi_stud.settle import settle as settle_mississippi_stud
from controller.games.three_card_prime.record import ThreeCardPrimeRound
from controller.games.three_card_prime.rules import ThreeCardPrimeRules
from controller.games.three_card_prime.settle import settle as settle_three_card_prime
from controller.par import (
    cajun_stud,
    chapter_684a_terms,
    combos,
    dealer_counts,
    let_it_ride,
    mississippi_stud,
    stud,
    three_card_prime,
)
from controller.par.analyse import (
    cajun_stud_strategy,
    chapter_684a_strategy,
    let_it_ride_strategy,
    mississippi_stud_strategy,
    three_card_prime_strategy,
)
from controller.par.estimate import CrossCheck, dealt, net, tally
from controller.par.evaluator import hand_class
from controller.par.sheet import net_per_unit

MS_MAIN = ("ante", "street_3", "street_4", "street_5")


LIR_MAIN = ("bet_1", "bet_2", "bet_3")


# The Five Card Hand Bonus's result is its own row and the Magic Card's and Lucky Bonus's, which stake nothing.
HAND_BONUS = ("five_card_hand_bonus", "magic_card_bonus", "lucky_bonus")


def _offers(rules: MississippiStudRules | LetItRideRules | CajunStudRules) -> dict[str, int]:
    """Each optional wager the live table offers, at its smallest size."""
    return {o.spot: o.min_cents for o in rules.optional_offers()}


def _wager_net(rows: list[Settled], wager: str) -> int:
    return net(r for r in rows if (r.wager in HAND_BONUS if wager == HAND_BONUS[0] else r.wager == wager))


def _agree(main: int, expected: int | Fraction, dealt: str) -> None:
    """A round's main game must settle to the cent as the analysis pays it."""
    if main != expected:
        raise AssertionError(
            f"settlement pays {main} cents where the par analysis pays {expected} on {dealt}: "
            "the par sheet and settlement disagree"
        )


def _add_offers(check: CrossCheck, offers: dict[str, int], rows: list[Settled]) -> None:
    for wager, amount in offers.items():
        tally(check, wager, amount, _wager_net(rows, wager))


def _draws(
    rules: MississippiStudRules | LetItRideRules,
    rng: np.random.Generator,
    record: dict[str, Any],
    wagers: dict[str, int],
) -> None:
    """The table game system's Magic Card and Lucky Bonus position (655a.1, 643a.1), drawn as the engine draws them
    (controller.core.rng: any of the 52 cards, any of the table's positions, independent of the shuffle) but from the
    seeded generator, so a run repeats; the simulated box is position 1."""
    if HAND_BONUS[0] not in wagers:
        return
    if rules.magic_card_bonus:
        record["magic_card"] = STANDARD_DECK[int(rng.integers(52))]
    if rules.lucky_bonus:
        record["lucky_seat"] = int(rng.integers(1, rules.seats + 1))


def play_mississippi_stud(
    rules: MississippiStudRules, check: CrossCheck, rng: np.random.Generator
) -> Callable[[npt.NDArray[np.int64]], None]:
    strategy = mississippi_stud_strategy()
    outcome = stud.outcome_of_hands()
    pay = mississippi_stud.payoffs(None, None)
    ante = rules.ante_min_cents
    if ante * 500 * 10 > payout_limit(rules.ante_min_cents):
        raise AssertionError("655a.12(b)'s limit binds at the minimum Ante")  # cannot: the limit is at least that
    offers = _offers(rules)
    meters: dict[str, int] = {}
    if rules.progressive_paytable:
        letter = rules.progressive_paytable
        meters = {lv: f * rules.progressive_wager_cents for lv, f in PROGRESSIVE_SEED_FOR_1[letter].items()}
    if rules.five_card_hand_bonus:
        meters[HAND_BONUS[0]] = FIVE_CARD_HAND_BONUS_SEED_FOR_1 * rules.five_card_hand_bonus_wager_cents

    def play(order: npt.NDArray[np.int64]) -> None:
        cards = dealt(order)
        own, community, bonus = cards[:2], cards[2:5], cards[5:9]
        wagers = {"ante": ante, **offers}
        folded_on = None
        units = 1
        for k, street in enumerate(("street_3", "street_4", "street_5")):
            # 655a.11(b), (d), (f): the two cards, then one more community card face up per Street.
            multiple = strategy.decide([int(i) for i in order[: 2 + k]], units)
            if multiple == 0:
                folded_on = street
                break
            wagers[street] = multiple * ante
            units += multiple
        seat: dict[str, Any] = {"seat": 1, "cards": own, "wagers": wagers}
        if folded_on:
            seat["folded_on"] = folded_on
        record: dict[str, Any] = {"chapter": "655a", "seats": [seat], "community": community, "meters": meters}
        if "six_card_bonus" in wagers:
            record["six_card_bonus_cards"] = bonus
        _draws(rules, rng, record, wagers)
        rows, _ = settle_mississippi_stud(rules, MississippiStudRound.model_validate(record))
        main = net(r for r in rows if r.wager in MS_MAIN)
        hand = int(combos.index_unsorted(order[None, :5])[0])
        expected = -units * ante if folded_on else int(pay[units, outcome[hand]]) * ante
        _agree(main, expected, f"{cards[:5]} with {wagers}")
        tally(check, "ante", ante, main)
        _add_offers(check, offers, rows)

    return play


def play_let_it_ride(
    rules: LetItRideRules, check: CrossCheck, rng: np.random.Generator
) -> Callable[[npt.NDArray[np.int64]], None]:
    strategy = let_it_ride_strategy(rules.let_it_ride_paytable)
    outcome = let_it_ride.outcome_of_hands()
    pay = let_it_ride.payoffs(rules.let_it_ride_paytable, None, None)
    bet = rules.bet_min_cents
    if rules.payout_limit_cents is not None and int(pay[3].max()) * bet > rules.payout_limit_cents:
        raise AssertionError("643a.12(g)'s limit binds at the minimum bet")  # a config check refuses it first
    offers = _offers(rules)
    meters = {
        level: rules.meter(level).initial_cents or 0
        for level in ("three_card_progressive", "five_card_progressive", HAND_BONUS[0])
    }
    meters = {level: cents for level, cents in meters.items() if level in offers}
    # A progressive is analysed per wager size it accepts (643a.7(g), (h)): the rounds take each size in turn.
    sizes = {
        "three_card_progressive": rules.three_card_progressive_wagers_cents,
        "five_card_progressive": rules.five_card_progressive_wagers_cents,
        # The par sheet gives the Five Card Hand Bonus at its smallest and largest size (one meter for every size).
        HAND_BONUS[0]: sorted(
            {o.min_cents for o in rules.optional_offers() if o.spot == HAND_BONUS[0]}
            | {o.max_cents for o in rules.optional_offers() if o.spot == HAND_BONUS[0]}
        ),
    }
    played = [0]

    def play(order: npt.NDArray[np.int64]) -> None:
        cards = dealt(order)
        own, community = cards[:3], cards[3:5]
        # 643a.11(c): Bet Number 1 on the three cards; (d): Bet Number 2 on those and the first community card.
        rides_1 = strategy.rides([int(i) for i in order[:3]], 2)
        rides_2 = strategy.rides([int(i) for i in order[:4]], 1 + rides_1)
        n = played[0]
        played[0] += 1
        sized = {w: sizes[w][n % len(sizes[w])] if w in sizes else a for w, a in offers.items()}
        seat = {
            "seat": 1,
            "cards": own,
            "wagers": {"bet_1": bet, "bet_2": bet, "bet_3": bet, **sized},
            "bet_1_withdrawn": not rides_1,
            "bet_2_withdrawn": not rides_2,
        }
        record: dict[str, Any] = {"chapter": "643a", "seats": [seat], "community": community, "meters": meters}
        _draws(rules, rng, record, sized)
        rows, _ = settle_let_it_ride(rules, LetItRideRound.model_validate(record))
        main = net(r for r in rows if r.wager in LIR_MAIN)
        riding = 1 + rides_1 + rides_2
        hand = int(combos.index_unsorted(order[None, :5])[0])
        expected = int(pay[riding, outcome[hand]]) * bet
        _agree(main, expected, f"{cards[:5]} with {riding} bets riding")
        tally(check, "bet", bet, main)
        for wager, amount in sized.items():
            name = f"{wager}@{amount}" if wager in sizes else wager
            tally(check, name, amount, _wager_net(rows, wager))

    return play


def play_three_card_prime(rules: ThreeCardPrimeRules, check: CrossCheck) -> Callable[[npt.NDArray[np.int64]], None]:
    ranked = three_card_prime.rank_all(rules)
    # The strategy the optimal players follow (controller.people.optimal): the rounds check what they would play.
    plays = three_card_prime_strategy(rules).plays
    limits = rules.posted_limits()

    def size(wager: str) -> int:
        # Five dollars where the limits allow (whole cents at any odds the Rules Submission gives), else the nearest.
        low, high = limits[wager]
        return min(max(low, 500), high)

    ante = size("ante")
    offers = {w: size(w) for w in ("prime", "pair_bonus", "all_six") if rules.offers(w)}
    odds = net_per_unit(Odds.parse(rules.ante_odds)) + net_per_unit(Odds.parse(rules.play_odds))
    nq = rules.dealer_not_qualified
    nq_net = (net_per_unit(Odds.parse(rules.ante_odds)) if nq.ante == "win" else 0) + (
        net_per_unit(Odds.parse(rules.play_odds)) if nq.play == "win" else 0
    )
    bad_beat = {c: net_per_unit(Odds.parse(o)) for c, o in (rules.bad_beat_paytable or {}).items()}

    def play(order: npt.NDArray[np.int64]) -> None:
        cards = dealt(order)
        mine = int(combos.index_unsorted(order[None, :3])[0])
        dealer = int(combos.index_unsorted(order[None, 3:6])[0])
        # 679a.7(d)(1): the Play Wager, equal to the Ante, on the hands the strategy plays; else a fold.
        folded = not plays[mine]
        wagers = {"ante": ante, **({} if folded else {"play": ante}), **offers}
        seat = {"seat": 1, "cards": cards[:3], "wagers": wagers, "folded": folded}
        if rules.pair_bonus_layout == "community_card":
            extra = {"pair_bonus_community_card": cards[6]}
        else:
            seat["fourth_card"] = cards[6]
            extra = {}
        record = {"chapter": "679a", "seats": [seat], "dealer": cards[3:6], **extra}
        rows, _ = settle_three_card_prime(rules, ThreeCardPrimeRound.model_validate(record))
        main = net(r for r in rows if r.wager in ("ante", "play", "bad_beat_bonus"))
        if folded:
            expected = Fraction(-1)
        elif not ranked.qualifies[dealer]:
            expected = Fraction(nq_net)
        elif ranked.strength[mine] > ranked.strength[dealer]:
            expected = odds
        elif ranked.strength[mine] == ranked.strength[dealer]:
            expected = Fraction(0)
        else:
            expected = bad_beat.get(ranked.classes[mine], Fraction(0)) - 2
        _agree(main, expected * ante, str(cards[:6]))
        tally(check, "ante", ante, main)
        _add_offers(check, offers, rows)

    return play


def play_cajun_stud(rules: CajunStudRules, check: CrossCheck) -> Callable[[npt.NDArray[np.int64]], None]:
    letter = rules.ante_paytable
    strategy = cajun_stud_strategy(letter)
    outcome = stud.outcome_of_hands()
    pay = cajun_stud.payoffs(letter)  # in half-Antes
    ante = rules.ante_min_cents
    if (
        rules.payout_limit_cents is not None
        and int(pay.max()) * ante // cajun_stud.HALF_ANTES > rules.payout_limit_cents
    ):
        raise AssertionError("683a.12(f)'s limit binds at the minimum Ante")  # cannot: the floor is at least that
    offers = _offers(rules)

    def play(order: npt.NDArray[np.int64]) -> None:
        cards = dealt(order)
        own, community, all_six = cards[:2], cards[2:5], cards[5:9]
        wagers = {"ante": ante, **offers}
        decisions: list[str] = []
        units = 1
        for k, spot in enumerate(("raise_1", "raise_2", "raise_3")):
            # 683a.11(b), (d), (f): the two cards, then one more community card face up before each next decision.
            multiple = strategy.decide([int(i) for i in order[: 2 + k]], units)
            if multiple == 0:
                decisions.append("fold")
                break
            decisions.append("raise")
            wagers[spot] = multiple * ante
            units += multiple
        seat = {"seat": 1, "cards": own, "wagers": wagers, "decisions": decisions}
        record: dict[str, Any] = {"chapter": "683a", "seats": [seat], "community_cards": community}
        if "all_six_bonus" in wagers:
            record["all_six_bonus_cards"] = all_six
        rows, _ = settle_cajun_stud(rules, CajunStudRound.model_validate(record))
        main = net(r for r in rows if r.wager in ("ante", "raise_1", "raise_2", "raise_3"))
        hand = int(combos.index_unsorted(order[None, :5])[0])
        folded = decisions[-1] == "fold"
        expected = -units * ante if folded else int(pay[units, outcome[hand]]) * ante // cajun_stud.HALF_ANTES
        _agree(main, expected, f"{cards[:5]} with {wagers}")
        tally(check, "ante", ante, main)
        _add_offers(check, offers, rows)

    return play


def play_chapter_684a(rules: Chapter684aRules, check: CrossCheck) -> Callable[[npt.NDArray[np.int64]], None]:
    strategy = chapter_684a_strategy(rules)
    limits = rules.posted_limits()

    def size(wager: str) -> int:
        low, high = limits[wager]
        return min(max(low, 500), high)

    ante = size("ante")
    # The analysis figures the Odds Wager at strategy.odds_per_ante times the Ante: the rounds wager so.
    odds = int(ante * strategy.odds_per_ante)
    terms = chapter_684a_terms.terms_of(rules, strategy.odds_per_ante)
    q = chapter_684a_terms.qualify_rank(rules)
    rank = dealer_counts.ranked()
    offers = {w: size(w) for w in ("prime", "all_six") if rules.offers(w)}

    def play(order: npt.NDArray[np.int64]) -> None:
        cards = dealt(order)
        # 684a.10(b): the player's stack, the dealer's stack, then the All-Six Bonus card.
        mine = int(combos.index_unsorted(order[None, :5])[0])
        dealer = int(combos.index_unsorted(order[None, 5:10])[0])
        multiple = strategy.decide([int(i) for i in order[:5]])
        wagers = {"ante": ante, "odds": odds, **({"raise": multiple * ante} if multiple else {}), **offers}
        seat = {"seat": 1, "cards": cards[:5], "wagers": wagers, "folded": not multiple}
        record: dict[str, Any] = {"chapter": "684a", "seats": [seat], "dealer": cards[5:10]}
        if "all_six" in offers:
            record["all_six_bonus_card"] = cards[10]
        rows, _ = settle_chapter_684a(rules, Chapter684aRound.model_validate(record))
        main = net(r for r in rows if r.wager in ("ante", "odds", "raise"))
        mine_rank, dealer_rank = int(rank.rank[mine]), int(rank.rank[dealer])
        cls = int(hand_class(rank.values[mine_rank : mine_rank + 1])[0])
        if not multiple:
            expected = terms.fold
        else:
            i = terms.multiples.index(multiple)
            if dealer_rank < q:
                expected = terms.not_qualified[cls][i]
            elif mine_rank > dealer_rank:
                expected = terms.win[cls][i]
            elif mine_rank == dealer_rank:
                expected = Fraction(0)
            else:
                expected = terms.lose[i]
        _agree(main, expected * ante, str(cards[:10]))
        tally(check, "ante", ante, main)
        _add_offers(check, offers, rows)

    return play
