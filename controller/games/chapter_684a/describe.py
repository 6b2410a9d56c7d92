"""Chapter 684a's paytables in force, for the birth message: the odds and tables of the Rules Submission, since
the chapter's payouts (684a.12) are not available."""

from __future__ import annotations

from controller.games.chapter_684a.rules import Chapter684aRules
from controller.games.describe import PaytableText
from controller.games.partial import odds_text_of, table_text_of


def paytables(rules: Chapter684aRules) -> list[PaytableText]:
    # The birth message has listed the Ante Wager's odds and the tables since 684a was added, not raise_odds
    # (the config's [game] in the same message carries it); kept so the contract does not change.
    return [
        odds_text_of("ante_odds", rules.ante_odds),
        *table_text_of("odds_paytable", rules.odds_paytable),
        *table_text_of("four_card_bonus_paytable", rules.four_card_bonus_paytable),
        *table_text_of("prime_paytable", rules.prime_paytable),
        *table_text_of("all_six_paytable", rules.all_six_paytable),
    ]
