"""Whether a table or a game a person names on the command line is one the archive knows.

A typo'd `--table` or `--game` matched no event, so the report came out whole with "(none in this period)" in every
section and exit 0: read as a table that played nothing, not as a wrong id. A table the archive knows that played
nothing in the period still gets its empty report.
"""

from __future__ import annotations

import psycopg

from controller.core.shown import shown

Conn = psycopg.Connection[tuple[object, ...]]
SHOWN_AT_MOST = 30  # ids listed in the message; a floor of 500 tables gets the first ones and a count


def _listed(names: list[str], what: str) -> str:
    if not names:
        return f"the archive has no {what} yet (is `tablectl floor` running and subscribed to the tables' prefix?)"
    more = f" and {len(names) - SHOWN_AT_MOST} more" if len(names) > SHOWN_AT_MOST else ""
    return f"its {what}: " + ", ".join(shown(n) for n in names[:SHOWN_AT_MOST]) + more


def archived_tables(conn: Conn) -> list[str]:
    rows = conn.execute("SELECT table_id FROM floor_tables UNION SELECT table_id FROM births ORDER BY 1").fetchall()
    return [str(r[0]) for r in rows]


def unknown_table(conn: Conn, table_id: str) -> str | None:
    """None when the archive knows the table, else the message naming the tables it knows and the fix."""
    tables = archived_tables(conn)
    if table_id in tables:
        return None
    return (
        f"no table '{shown(table_id)}' in the archive; {_listed(tables, 'tables')} "
        "(`tablectl floor status` lists them): check the table id"
    )


def unknown_game(conn: Conn, chapter: str) -> str | None:
    """None when a table of the chapter has a birth archived, else the message naming the archive's games."""
    rows = conn.execute(
        "SELECT DISTINCT payload->'game'->>'chapter' FROM births"
        " WHERE payload->'game'->>'chapter' IS NOT NULL ORDER BY 1"
    ).fetchall()
    games = [str(r[0]) for r in rows]
    if chapter in games:
        return None
    known = _listed(games, "games")
    return f"no table of game '{shown(chapter)}' in the archive; {known}: give --game a chapter, e.g. 655a"
