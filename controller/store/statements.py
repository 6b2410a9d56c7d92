"""The SQL a journal commit runs (controller.store.journal), each shaped to touch as few pages and take as few
statement steps as it can: every page is a WAL frame written and synced, every step a GIL hand-off (issue 19)."""

from __future__ import annotations

import functools

from controller.store.schema import COLUMNS

# The rows rewritten in every commit are updated in place (an upsert), not deleted and inserted again as INSERT OR
# REPLACE does: a REPLACE gives the row a new rowid, so it dirties the table's page and its primary key index's page,
# an update the table's page alone. Three pages fewer in every commit's WAL frames (about 11.5 -> 8.5; issue 19).
HEAD_UPSERT = (
    "INSERT INTO chain_head (table_id, seq, hash) VALUES (?, ?, ?) "
    "ON CONFLICT (table_id) DO UPDATE SET seq = excluded.seq, hash = excluded.hash"
)
RECORD_UPSERT = (
    "INSERT INTO critical_state (table_id, record, copy, body, sha256, seq, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?) "
    "ON CONFLICT (table_id, record, copy) DO UPDATE SET body = excluded.body, sha256 = excluded.sha256, "
    "seq = excluded.seq, updated_at = excluded.updated_at"
)

# The tail (last seq and hash) and the manifest's transaction count, read at the start of every commit in one
# statement instead of two: each statement the writer thread runs releases and takes back the GIL, which the event
# loop's thread holds most of the time (a futex wait each; issue 19). No row when the table has none yet.
TAIL_AND_COMMITS = (
    "SELECT seq, hash, (SELECT commits FROM manifest WHERE table_id = ?1) FROM events WHERE table_id = ?1 "
    "ORDER BY seq DESC LIMIT 1"
)

# A commit's rows go in one INSERT (one statement step, as above), at most this many rows a statement (SQLite allows
# 32,766 parameters).
ROWS_PER_INSERT = 500
ROW_PARAMS = 11  # COLUMNS and the hash


@functools.cache
def insert_rows(n: int) -> str:
    row = "(" + ", ".join("?" * ROW_PARAMS) + ")"
    return f"INSERT INTO events ({COLUMNS}, hash) VALUES " + ", ".join([row] * n)
