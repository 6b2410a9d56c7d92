"""Chapter 603a (Table Game Equipment) as far as its text is available (shared/regulations/603a-...: 603a.15(a) to
mid-(g), 603a.16(a) and the start of (b), 603a.17(a) to the start of (d)) and how the controller stands to each
(controller.games.trace). 603a is no game: every game's deck answers to 603a.15, so it has no package of its own,
only this inventory, which `tablectl rules --chapter 603a` reads (docs/rules.md).

Most of what is available is the make of the cards and the shoes and their keeping before they reach a table: the
Bureau's approval and the certificate holder's people, which no device at the table reports. What a table can see is
the deck itself: 52 cards of four suits of thirteen (603a.15(a)-(c)), checked wherever the devices report the cards.
"""

from __future__ import annotations

from controller.games.trace import SYSTEM, Subsection, enforced, people

NAME = "Table Game Equipment (the sections available: cards, dealing shoes, automated shufflers)"
UNAVAILABLE = (
    "Not listed, as the text is not available: the rest of 603a.15 (cut off in (g)), of 603a.16 (cut off in (b); it "
    "runs to (v) at least: .4(e) cites 603a.16(u) and (v), the preinspected decks) and of 603a.17 (cut off in (d)), "
    "and every other section of 603a."
)
BACKS = "the cards' print, approved with the equipment by the Bureau (601a.10(a)); no device at the table sees a back"
RECEIPT = (
    "the decks' receipt and storage happen away from the table, by the certificate holder's security and table games "
    "people under the Bureau's approval (601a.10(f)); the table records only the inspection of the decks it is given "
    "(.4(a), or none for preinspected decks, .4(e))"
)
SHOE = "the manual shoe's make, approved with the equipment by the Bureau (601a.10(a)); no device reports it"

SUBSECTIONS: tuple[Subsection, ...] = (
    enforced("603a.15(a)", "decks of 52 cards; no joker unless the game's rules allow one (none here does)"),
    enforced("603a.15(b)", "four suits: diamonds, spades, clubs and hearts"),
    enforced("603a.15(c)", "thirteen cards a suit, ace to 2"),
    people("603a.15(d)", "identical backs, no marking that tells a card", BACKS),
    people("603a.15(e)", "backs designed against concealed markings", BACKS),
    people("603a.15(f)", "backs bearing the certificate holder's name or logo", BACKS),
    people(
        "603a.15(g)",
        "decks packaged and sealed against tampering (the text is cut off here)",
        "the packages are opened before the cards reach the table: their seals are the people's to check; the table "
        "records the inspection of the cards (.4(a))",
    ),
    people("603a.16(a)", "decks received, inspected and stored under supervision", RECEIPT),
    people("603a.16(b)", "storage areas under two locks (the text is cut off here)", RECEIPT),
    people("603a.17(a)", "definitions: a dealing shoe's base plate and face plate", SHOE),
    people("603a.17(b)", "a manual dealing shoe's make: a white base plate, sealed sides, a stop", SHOE),
    people(
        "603a.17(c)",
        "the manual shoe of Minibaccarat, Midibaccarat and Baccarat",
        "no game this controller runs is a Baccarat",
    ),
    people(
        "603a.17(d)",
        "an automated card shuffling device submitted to the Bureau (the text is cut off here)",
        SYSTEM,
    ),
)
