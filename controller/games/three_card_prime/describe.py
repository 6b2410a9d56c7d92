"""Chapter 679a's paytables in force, for the birth message: the odds and tables of the Rules Submission, since
the chapter's payouts (679a.12) are not available."""

from __future__ import annotations

from controller.games.describe import PaytableText
from controller.games.partial import odds_text_of, table_text_of
from controller.games.three_card_prime.rules import ThreeCardPrimeRules


def paytables(rules: ThreeCardPrimeRules) -> list[PaytableText]:
    return [
        odds_text_of("ante_odds", rules.ante_odds),
        odds_text_of("play_odds", rules.play_odds),
        *table_text_of("prime_paytable", rules.prime_paytable),
        *table_text_of("pair_bonus_paytable", rules.pair_bonus_paytable),
        *table_text_of("bad_beat_paytable", rules.bad_beat_paytable),
        *table_text_of("all_six_paytable", rules.all_six_paytable),
    ]
