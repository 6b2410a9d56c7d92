"""Chapter 655a, Mississippi Stud, as the registry lists it."""

from __future__ import annotations

from controller.games.chapter import Chapter
from controller.games.mississippi_stud.checks import wager_settings
from controller.games.mississippi_stud.describe import paytables
from controller.games.mississippi_stud.players import MississippiStudPlayers
from controller.games.mississippi_stud.progressives import meters
from controller.games.mississippi_stud.record import MississippiStudRound
from controller.games.mississippi_stud.rules import MississippiStudRules
from controller.games.mississippi_stud.settle import settle
from controller.games.mississippi_stud.spec import MississippiStudSpec
from controller.games.mississippi_stud.subsections import SUBSECTIONS

ENTRY = Chapter(
    MississippiStudRules,
    MississippiStudSpec(),
    MississippiStudRound,
    settle,
    paytables,
    meters=meters,
    wager_settings=wager_settings,
    players=MississippiStudPlayers(),
    subsections=SUBSECTIONS,
)
