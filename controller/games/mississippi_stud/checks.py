"""What `tablectl check-config` checks of a chapter 655a config beyond its rules model."""

from __future__ import annotations

from controller.games.mississippi_stud.rules import MississippiStudRules


def wager_settings(rules: MississippiStudRules) -> dict[str, str]:
    """The settings these rules turn on that offer a metered or terminal wager (655a.7(d)(3), (5)), and the spot
    each offers."""
    out: dict[str, str] = {}
    if rules.progressive_paytable:
        out["progressive_paytable"] = "progressive"
    if rules.five_card_hand_bonus:
        out["five_card_hand_bonus"] = "five_card_hand_bonus"
    return out
