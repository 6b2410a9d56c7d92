"""Chapter 683a, Cajun Stud, as the registry lists it."""

from __future__ import annotations

from controller.games.cajun_stud.describe import paytables
from controller.games.cajun_stud.record import CajunStudRound
from controller.games.cajun_stud.rules import CajunStudRules
from controller.games.cajun_stud.settle import settle
from controller.games.cajun_stud.spec import CajunStudSpec
from controller.games.cajun_stud.subsections import SUBSECTIONS
from controller.games.chapter import Chapter

ENTRY = Chapter(CajunStudRules, CajunStudSpec(), CajunStudRound, settle, paytables, subsections=SUBSECTIONS)
