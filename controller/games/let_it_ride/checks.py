"""What `tablectl check-config` checks of a chapter 643a config beyond its rules model."""

from __future__ import annotations

from controller.games.let_it_ride.rules import LetItRideRules

# The wagers paid from a progressive meter or made on an electronic wagering terminal (643a.7(g)-(i)); the setting
# that offers each is named after its wager spot.
METERED = ("three_card_progressive", "five_card_progressive", "five_card_hand_bonus")


def wager_settings(rules: LetItRideRules) -> dict[str, str]:
    """The settings these rules turn on that offer a metered or terminal wager, and the spot each offers."""
    return {wager: wager for wager in METERED if rules.offered()[wager]}
