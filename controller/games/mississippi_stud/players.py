"""How the demo's simulated players bet at a Mississippi Stud table, the default demo's: every optional wager the
rules offer now and then, within its own limits, and now and then an Ante after "no more bets" to show the lock-out."""

from __future__ import annotations

import random

from controller.engine.spec import ChapterSpec
from controller.games.mississippi_stud.rules import MississippiStudRules
from controller.games.players import CHIPS, DemoPlayers, Wagers


class MississippiStudPlayers(DemoPlayers[MississippiStudRules]):
    def wagers(
        self, rules: MississippiStudRules, spec: ChapterSpec[MississippiStudRules], rng: random.Random
    ) -> Wagers:
        chips = [a for a in CHIPS if rules.ante_min_cents <= a <= rules.ante_max_cents]
        chips = chips or [rules.ante_min_cents]
        out: Wagers = {}
        for seat in range(1, rules.seats + 1):
            if rng.random() > 0.8:
                continue  # an empty seat this round
            w = {"ante": rng.choice(chips)}
            # Bonus wagers at the minimum or a fifth of the maximum, within the table's limits either way.
            if rules.three_card_bonus_paytable and rng.random() < 0.4:
                w["three_card_bonus"] = max(
                    rules.three_card_bonus_min_cents, rng.choice([0, rules.three_card_bonus_max_cents // 5])
                )
            if rules.six_card_bonus_paytable and rng.random() < 0.3:
                w["six_card_bonus"] = max(
                    rules.six_card_bonus_min_cents, rng.choice([0, rules.six_card_bonus_max_cents // 5])
                )
            if rules.progressive_paytable and rng.random() < 0.6:
                w["progressive"] = rules.progressive_wager_cents  # 655a.7(d)(3): the one size the meters are "for 1" of
            if rules.five_card_hand_bonus and rng.random() < 0.6:
                # 655a.7(d)(5): keyed in at the seat's terminal, from the player's game account.
                w["five_card_hand_bonus"] = rules.five_card_hand_bonus_wager_cents
            out[seat] = w
        if not out:
            out[rng.randint(1, rules.seats)] = {"ante": chips[0]}
        return out

    def late_wager(self, rules: MississippiStudRules, rng: random.Random) -> tuple[int, str, int] | None:
        if rng.random() < 0.15:
            if rules.five_card_hand_bonus and rng.random() < 0.5:
                # At the terminal after "no more bets": refused by the lock-out, and the player is told (655a.2(d)).
                return rng.randint(1, rules.seats), "five_card_hand_bonus", rules.five_card_hand_bonus_wager_cents
            return rng.randint(1, rules.seats), "ante", rules.ante_min_cents
        return None
