"""Chapter 684a (the game's name is not in the available text): everything the controller knows of the chapter.

rules: the Rules Submission's choices (the [game] table); record: a round as `tablectl settle` reads it; settle: its
settlement; spec: the round as the engine runs it; describe: the paytables for the birth message; entry: the
registry's entry. The chapter shares with 679a what a partially published chapter needs (controller.games.partial).


What the available text fixes: five-card stacks from an automated dealing shoe to each player with Ante and
Odds Wagers, clockwise from the dealer's left, then a stack to the dealer; if any player placed an All-Six
Bonus Wager, the top card of the next stack is the All-Six Bonus card (684a.10(b)); a player makes a Raise
Wager or folds (684a.1); the Four Card Bonus, Prime and All-Six Bonus Wagers play against posted tables
(684a.1).

What it does not: how the dealer qualifies, the Raise amounts, how the Ante, Odds and Raise Wagers are paid,
and how the optional wagers' hands are formed (684a.7, 684a.11 and 684a.12 are not available). Each is a
required rule of the operator's Rules Submission (601a.2) in the [game] table; a config that leaves one out is
refused with a message naming it. The readings this package takes:
- Settlement order: seats counterclockwise from the dealer's right (descending seat number), like the other
  chapters; per seat Ante, Odds, Raise, then Four Card Bonus, Prime, All-Six Bonus.
- Hands are poker hands of five cards (rankings.best_five) compared class first, then ranks; equal hands tie,
  and a tie pushes the Ante, Odds and Raise Wagers.
- A player who folds (684a.1 "Fold") withdraws from the round: the Ante and Odds Wagers are collected.
- The Four Card Bonus needs four-card classes and a formation rule that neither the text nor this controller
  defines, so a config that offers it is refused.
"""
