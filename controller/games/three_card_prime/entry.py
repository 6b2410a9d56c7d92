"""Chapter 679a, Three Card Prime, as the registry lists it."""

from __future__ import annotations

from controller.games.chapter import Chapter
from controller.games.three_card_prime.describe import paytables
from controller.games.three_card_prime.record import ThreeCardPrimeRound
from controller.games.three_card_prime.rules import ThreeCardPrimeRules
from controller.games.three_card_prime.settle import settle
from controller.games.three_card_prime.spec import ThreeCardPrimeSpec
from controller.games.three_card_prime.subsections import SUBSECTIONS

ENTRY = Chapter(
    ThreeCardPrimeRules, ThreeCardPrimeSpec(), ThreeCardPrimeRound, settle, paytables, subsections=SUBSECTIONS
)
