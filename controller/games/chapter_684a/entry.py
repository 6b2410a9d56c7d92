"""Chapter 684a as the registry lists it."""

from __future__ import annotations

from controller.games.chapter import Chapter
from controller.games.chapter_684a.describe import paytables
from controller.games.chapter_684a.record import Chapter684aRound
from controller.games.chapter_684a.rules import Chapter684aRules
from controller.games.chapter_684a.settle import settle
from controller.games.chapter_684a.spec import Chapter684aSpec
from controller.games.chapter_684a.subsections import SUBSECTIONS

ENTRY = Chapter(Chapter684aRules, Chapter684aSpec(), Chapter684aRound, settle, paytables, subsections=SUBSECTIONS)
