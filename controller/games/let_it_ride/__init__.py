"""Chapter 643a, Let It Ride Poker: everything the controller knows of the chapter.

paytables: every table of 643a.12 as data, with its citation; rules: the Rules Submission's choices (the [game]
table); record: a round as `tablectl settle` reads it; settle: its settlement (643a.11(f)); progressives: the meters
of the three progressive wagers (643a.12(d)(3), (e)(3), (f)(4)); spec: the round as the engine runs it; describe: the
paytables for the birth message; checks: what `tablectl check-config` looks for; entry: the registry's entry.
"""
