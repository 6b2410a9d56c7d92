"""Chapter 679a, Three Card Prime: everything the controller knows of the chapter.

rules: the Rules Submission's choices (the [game] table); record: a round as `tablectl settle` reads it; settle: its
settlement; spec: the round as the engine runs it; describe: the paytables for the birth message; entry: the
registry's entry. The chapter shares with 684a what a partially published chapter needs (controller.games.partial).


What the available text fixes: the Ante Wager competes against the dealer's hand and the Play Wager equals
the Ante (679a.7(d)(1)); the dealer qualifies with queen high or better (679a.1); the Prime Wager wins when
all three of the player's cards are of one color (679a.7(d)(2)); the Pair Bonus Wager wins with a pair or
better (679a.7(d)(3)), played with a fourth card dealt to the player (679a.9(b)) or one Pair Bonus community
card (679a.9(g)); the Bad Beat Bonus pays on the Play Wager when the player's flush-or-higher (or
straight-or-higher) hand loses to the dealer's (679a.1); the All-Six Bonus Wager plays against a posted table.

What it does not: the rankings (679a.6), the completion of the round (679a.11) and the payouts (679a.12) are
not available. The certificate holder's Rules Submission (601a.2) supplies them through the [game] table, and
a config that leaves one undefined is refused, naming the setting. The readings this package takes:
- Settlement order: 679a.11 is missing, so, like the other chapters, seats are settled counterclockwise from
  the dealer's right (descending seat number); per seat Ante, Play, Bad Beat Bonus, Prime, Pair Bonus, All-Six.
- Hands compare by `hand_order`, then by ranks high to low with a pair's rank before its kicker; equal hands
  tie and a tie pushes the Ante and Play. Where an A-2-3 straight stands is `ace_two_three`.
- A player who does not make the Play Wager folds and loses the Ante: the Play Wager is what a player makes
  "to remain in competition against the dealer" (679a.1).
- The Bad Beat Bonus is not a wager: it is an award row (amount 0) paid at its odds on the Play Wager, only
  when the dealer qualified and beat the player.
- The All-Six hand is the player's three cards and the dealer's three, ranked as rankings.Six.
"""
