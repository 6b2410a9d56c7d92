"""Chapter 683a, Cajun Stud: everything the controller knows of the chapter.

rankings: the chapter's own hand classes (683a.6); paytables: every table of 683a.12 as data; rules: the Rules
Submission's choices (the [game] table); record: a round as `tablectl settle` reads it; settle: its settlement (order
and the capped payout's apportionment in docs/settle/683a.md); spec: the round as the engine runs it; describe: the
paytables for the birth message; entry: the registry's entry.
"""
