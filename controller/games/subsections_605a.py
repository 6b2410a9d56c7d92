"""Chapter 605a (Electronic Gaming Tables) as it bears on a table this controller runs: the published subsections of
the sections available (shared/regulations/605a-...: 605a.1 in part, 605a.2(a)-(d)(3), 605a.4(a)-(d)(4), 605a.7(a)(1)
-(6), 605a.9) and how the controller stands to each (controller.games.trace). 605a is not a game: the games that
offer the Five Card Hand Bonus (643a.2(e), 655a.2(d)) and the progressives (643a.2(d), 655a.2(c)) call on it, so it
has no package of its own, only this inventory, which `tablectl rules --chapter 605a` reads (docs/rules.md).

Not listed, because their text is not available: 605a.3 (buying in and cashing out with an electronic wagering
system), 605a.5, 605a.6, 605a.8 (linked progressives: NY 9 NYCRR 5321.18 stands in, docs/linked-progressives.md), and
whatever follows where 605a.1, 605a.2, 605a.4 and 605a.7 are cut off.
"""

from __future__ import annotations

from controller.games.trace import SYSTEM, Subsection, enforced, people

NAME = "Electronic Gaming Tables (the sections available, as they bear on a table)"
UNAVAILABLE = (
    "Not listed, as the text is not available: 605a.3 (buying in and cashing out with an electronic wagering "
    "system), 605a.5, 605a.6, 605a.8 (linked progressives: NY 9 NYCRR 5321.18 stands in, docs/linked-progressives.md) "
    "and the sections after 605a.9, and what follows where 605a.1, 605a.2, 605a.4 and 605a.7 are cut off."
)
KEYS = "a key held by a department is the certificate holder's internal control; the table PC has no key switch to read"
CONTROLS = (
    "the certificate holder's written internal controls (465a.2); the controller gives them a journal of every event, "
    "signed software (605a.4(c)) and signed commands to rely on"
)

SUBSECTIONS: tuple[Subsection, ...] = (
    enforced("605a.1", "definitions: the electronic wagering system and each betting position's terminal"),
    enforced("605a.2(a)", "the wagers the rules name made only through the system, at each player's own terminal"),
    people("605a.2(b)", "a dedicated computer under dual key control (finance and table games)", KEYS),
    people("605a.2(c)", "the system and terminals tested and approved by the Bureau (461a.4)", SYSTEM),
    enforced("605a.2(d)(1)", "the game account credited at the buy-in, debited of what remains at the cash-out"),
    enforced("605a.2(d)(2)", "wagers from the account; losses collected from it; winnings and the wager credited"),
    people(
        "605a.2(d)(3)",
        "Poker: pots incremented and distributed",
        "Poker's pots between players: no game this controller runs has a pot (its wagers play the house or a "
        "paytable)",
    ),
    people(
        "605a.4(a)",
        "an electronic gaming table complies with 605a.2",
        "a cross-reference: the 605a.2 rows say what the controller does; whether a table is an electronic gaming "
        "table is the Board's classification (the rest of 605a.1 is not available)",
    ),
    people("605a.4(b)", "a dedicated computer under dual key control, tested and approved", f"{KEYS}; {SYSTEM}"),
    enforced("605a.4(c)", "the control software verifiable for authenticity by the Bureau"),
    people("605a.4(d)", "internal controls: security, data integrity, access, logging of events", CONTROLS),
    enforced("605a.7(a)(1)", "a progressive meter visible to the players, increased by the wagers"),
    enforced("605a.7(a)(2)", "a meter of progressive awards paid by the system or a terminal"),
    enforced("605a.7(a)(3)", "a meter of progressive awards paid by an attendant"),
    enforced("605a.7(a)(4)", "a cumulative progressive payout meter"),
    enforced("605a.7(a)(5)", "a key and keyed switch, or other mechanism, to reset the meters"),
    enforced("605a.7(a)(6)", "no unauthorised alteration of the meters (a locked compartment or other means)"),
    people("605a.9(a)", "hybrid tables and terminals comply with 461a", SYSTEM),
    people(
        "605a.9(b)",
        "every five terminals count as one gaming table",
        "the count of tables authorised under 13A11(b) is the certificate holder's with the Board",
    ),
    people(
        "605a.9(c)",
        "on a hybrid table, wagers at terminals that show the live game",
        "a hybrid gaming table's terminals show the game by video; the tables here are live, their players at the "
        "layout (only the Five Card Hand Bonus is keyed at a terminal, 605a.2(a))",
    ),
)
