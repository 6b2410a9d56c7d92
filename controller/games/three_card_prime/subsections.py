"""Every published subsection of chapter 679a, Three Card Prime, and how the controller stands to it
(controller.games.trace). Only 679a.1, part of 679a.7 and 679a.9 are available: the table lists those."""

from __future__ import annotations

from controller.games.trace import Subsection, enforced, people, recorded

SUBSECTIONS: tuple[Subsection, ...] = (
    enforced("679a.1", "definitions: the Ante, Play and optional wagers; the dealer qualifies with a queen high"),
    people("679a.7(a)", "wagers by chips on the layout; no verbal wagers", "how a wager is made is seen at the layout"),
    recorded("679a.7(b)", "only seated players wager; a player who leaves: abandoned wagers"),
    enforced("679a.7(c)", 'no wager but the Play Wager after "no more bets"'),
    enforced("679a.7(d)", "the Ante and Play Wagers, the Prime and Pair Bonus Wagers offered"),
    enforced("679a.9(a)", 'from the hand: an automated shuffler; "no more bets" before any card'),
    enforced("679a.9(b)", "one card at a time to each player and the dealer; the Pair Bonus fourth card"),
    enforced("679a.9(c)", "the stub to the discard rack"),
    enforced("679a.9(d)", "the stub counted at least every 5 rounds without a counting shuffler"),
    enforced("679a.9(e)", "52 cards: the stub discarded"),
    enforced("679a.9(f)", "not 52: a misdeal voids, else the deck is removed"),
    enforced("679a.9(g)", "one Pair Bonus community card instead of the fourth cards"),
)
