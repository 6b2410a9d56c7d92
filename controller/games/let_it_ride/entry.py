"""Chapter 643a, Let It Ride Poker, as the registry lists it."""

from __future__ import annotations

from controller.games.chapter import Chapter
from controller.games.let_it_ride.checks import wager_settings
from controller.games.let_it_ride.describe import paytables
from controller.games.let_it_ride.progressives import meters
from controller.games.let_it_ride.record import LetItRideRound
from controller.games.let_it_ride.rules import LetItRideRules
from controller.games.let_it_ride.settle import settle_record
from controller.games.let_it_ride.spec import LetItRideSpec
from controller.games.let_it_ride.subsections import SUBSECTIONS

ENTRY = Chapter(
    LetItRideRules,
    LetItRideSpec(),
    LetItRideRound,
    settle_record,
    paytables,
    meters=meters,
    wager_settings=wager_settings,
    subsections=SUBSECTIONS,
)
