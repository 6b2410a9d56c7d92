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
# A citation as the code and the tests write it: chapter, section, then any subsections, e.g. 683a.11(i)(1)(ii);
# ASCII, \b included (in a str pattern a Unicode letter before "655a" is a word character too).
CITATION = re.compile(r"\b(?P<chapter>6[0-9][0-9]a)\.(?P<section>[0-9]+)(?P<sub>(?:\([a-z0-9]+\))*)", re.ASCII)


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


def opening_and_shuffle(chapter: str) -> tuple[Subsection, ...]:
    """.3 (decks), .4 (opening) and .5 (shuffle and cut), worded and lettered alike in 643a, 655a and 683a."""
    c = chapter
    return (
        enforced(f"{c}.3(a)", "one deck and a cover card"),
        enforced(f"{c}.3(b)", "two decks alternating, with an automated shuffler"),
        enforced(f"{c}.3(c)", "decks changed every 4 hours by hand, 8 from a shoe"),
        recorded(f"{c}.4(a)", "the dealer inspects the cards, the floorperson verifies"),
        people(f"{c}.4(b)", "the cards spread for the first player", SPREAD),
        people(f"{c}.4(c)", "turned down, washed, stacked, then shuffled", WASH),
        people(f"{c}.4(d)", "each of two decks spread and inspected", SPREAD),
        enforced(f"{c}.4(e)", "preinspected decks need no opening inspection"),
        enforced(f"{c}.5(a)", "a shuffle after every round"),
        enforced(f"{c}.5(b)", "a counting shuffler's count other than 52 removes the deck"),
        enforced(f"{c}.5(c)", "after the shuffle: deal, or cut a manual shuffle"),
        people(f"{c}.5(d)", "the cut with the cover card", CUT),
        people(f"{c}.5(e)", "a floorperson may require a recut", RECUT),
        enforced(f"{c}.5(f)", "an idle table's cards inspected again"),
        people(f"{c}.5(g)", "an approved reshuffling and counting shoe", SYSTEM),
    )


def irregularities(
    chapter: str, exposed: str = "a community card exposed early voids the round"
) -> tuple[Subsection, ...]:
    """.13 (irregularities), lettered alike in 643a, 655a and 683a; (d) says what the chapter does on an exposure."""
    c = chapter
    return (
        enforced(f"{c}.13(a)", "a card face up in the shoe; two void the round"),
        recorded(f"{c}.13(b)", "a card drawn in error used as the next card"),
        enforced(f"{c}.13(c)", "an incorrect number of cards voids the round"),
        enforced(f"{c}.13(d)", exposed),
        enforced(f"{c}.13(e)", "a shuffler jam: the cards reshuffled"),
        enforced(f"{c}.13(f)", "an automated shoe jam: void, reshuffled"),
        enforced(f"{c}.13(g)", "a device out of order marked before another method is used"),
    )


def stub_rows(chapter: str, section: int, letters: str, where: str) -> tuple[Subsection, ...]:
    """A dealing section's stub count: (count, 52 present, not 52) at these three letters, e.g. 683a.8 "efg"."""
    c, count, whole, wrong = chapter, letters[0], letters[1], letters[2]
    return (
        enforced(f"{c}.{section}({count})", f"{where}: the stub counted at least every 5 rounds"),
        enforced(f"{c}.{section}({whole})", f"{where}: 52 cards, the stub discarded"),
        enforced(f"{c}.{section}({wrong})", f"{where}: not 52: a misdeal voids, else the deck is removed"),
    )
