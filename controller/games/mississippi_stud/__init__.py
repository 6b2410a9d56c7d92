"""Chapter 655a, Mississippi Stud: everything the controller knows of the chapter.

The round's flow lives in controller.engine; this package states the chapter's seats, wagers, streets, paytables
and the settlement of each wager, each with its citation. rules: the Rules Submission's choices (the [game] table);
paytables: every table of 655a.12 as data; hands: the settlement of a hand's Ante and Street Wagers and of the bonus
wagers; record: a round as `tablectl settle` reads it; settle: its settlement (655a.11(h)-(i)); progressives: the
meters 655a.12(c)(3) and (e)(4) fix; spec: the round as the engine runs it; describe: the paytables for the birth
message; checks: what `tablectl check-config` looks for; players: how the demo's players bet; entry: the
registry's entry.
"""
