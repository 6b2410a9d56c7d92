"""The linked progressive controller (`tablectl link`): one set of progressive meters shared by several tables,
kept in PostgreSQL (docs/linked-progressives.md). 605a.8's text is not available; the controller is built to the
closest published rules with the same title, 9 NYCRR 5321.18 and N.J.A.C. 13:69E-1.39B, cited as the stand-in."""
