"""Every published subsection of chapter 684a and how the controller stands to it (controller.games.trace). Only
684a.1 and 684a.10 are available: the table lists those."""

from __future__ import annotations

from controller.games.trace import Subsection, enforced

SUBSECTIONS: tuple[Subsection, ...] = (
    enforced("684a.1", "definitions: the Ante and Odds Wagers make a player; the Raise Wager or a fold"),
    enforced("684a.10(a)", 'automated shoe: "no more bets" before any stack'),
    enforced("684a.10(b)", "five-card stacks to each player and the dealer; the All-Six Bonus card"),
    enforced("684a.10(c)", "the stub to the discard rack"),
    enforced("684a.10(d)", "the stub counted at least every 5 rounds without a counting shuffler"),
    enforced("684a.10(e)", "52 cards: the stub discarded"),
    enforced("684a.10(f)", "not 52: a misdeal voids, else the deck is removed"),
)
