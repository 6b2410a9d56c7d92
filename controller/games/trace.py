"""The traceability inventory: every subsection of a chapter's published text, and whether the controller enforces it,
records what people do under it, or leaves it to people (with why). Each chapter package lists its own
(`subsections.py`); `tablectl rules --chapter 683a` finds, from the code, where each is enforced or recorded and which
tests name it (controller/cli/rules.py, docs/rules.md).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

Disposition = Literal["enforced", "recorded", "people"]
# A citation as the code and the tests write it: chapter, section, then any subsections, e.g. 683a.11(i)(1)(ii).
CITATION = re.compile(r"\b(?P<chapter>6\d\da)\.(?P<section>\d+)(?P<sub>(?:\([a-z0-9]+\))*)")


@dataclass(frozen=True, slots=True)
class Subsection:
    """One subsection of the text (or a section without subsections, e.g. the definitions, 683a.1)."""

    cite: str  # e.g. "683a.13(d)"
    what: str  # what it says, in a few words
    by: Disposition
    why: str = ""  # for a subsection left to people: why the controller does not (and cannot) do it

    def __post_init__(self) -> None:
        if CITATION.fullmatch(self.cite) is None:
            raise ValueError(f"{self.cite!r} is not a citation like 683a.13(d)")
        if (self.by == "people") != bool(self.why):
            raise ValueError(f"{self.cite}: a subsection left to people says why, and only such a one")

    def covers(self, citation: str) -> bool:
        """Whether `citation` (as found in code or a test) is this subsection or a part of it: 683a.11(i) covers
        683a.11(i)(4)(ii), not 683a.11(j) nor 683a.1 (683a.10)."""
        mine, other = CITATION.fullmatch(self.cite), CITATION.fullmatch(citation)
        if mine is None or other is None:
            return False
        same = (mine["chapter"], mine["section"]) == (other["chapter"], other["section"])
        return same and other["sub"].startswith(mine["sub"])


def enforced(cite: str, what: str) -> Subsection:
    return Subsection(cite, what, "enforced")


def recorded(cite: str, what: str) -> Subsection:
    return Subsection(cite, what, "recorded")


def people(cite: str, what: str, why: str) -> Subsection:
    return Subsection(cite, what, "people", why)


# Reasons shared by every chapter's text, so that the tables read alike.
LAYOUT = "the layout and its inscriptions are approved by the Bureau (601a.10(a)); no device reports them"
BOXES = "a fixture of the table (601a.10(g)); no device reports it"
SPREAD = "the cards spread for the first player is the dealer's and the player's; the controller records the inspection"
WASH = "washing and stacking are the dealer's hands; the shuffle that follows is recorded (.5)"
CUT = "a manual cut is the dealer's hands: the controller records the manual shuffle and cut the dealer confirms"
RECUT = "a floorperson's judgement of the cut happens before any card: nothing for a device to see"
HANDS = "how the dealer holds and draws the cards is the dealer's hands; the controller sees the cards dealt"
EXAMINE = "how players hold and show their cards is for the dealer and the surveillance to watch"
SHOE_PLACE = "where the shoe sits is approved by the Bureau (601a.10(g))"
SYSTEM = "the approval of a table game system or device is the Bureau's (461a.4)"
