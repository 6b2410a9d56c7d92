"""The chapters of 58 Pa. Code this controller plays, one package each (docs/new-chapter.md).

A chapter's package holds everything the chapter knows: its rules model, rankings and paytables with their
citations, its round record and settlement, its spec for the round engine, its meter figures, what its birth
message and `tablectl check-config` say, and its demo players. `registry` lists them by chapter code and is the
only door to them; `chapter`, `describe`, `players` and `partial` are what the packages share.
"""
