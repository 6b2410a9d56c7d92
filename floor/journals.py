"""Which of a table's journals an archived event is of. A table's seq counts from 1 across its restarts, so a seq
names one event while the table keeps its journal; a table PC replaced under the same table id with a fresh journal
and no broker anchor to go on from (docs/recovery.md) counts seq, and its rounds, from 1 again. The archive keeps one
event a (table, seq): the fresh journal's seqs the old one's archived keys still hold are refused (`seq_reused`
integrity alarms, keeping the event as received), the rest archived beside what remains of the old journal. So seq
order mixes the two; time does not (the new journal began after the old one's last event). A journal starts at its
seq 1, archived or refused; the span of the journal writing at a moment is from the latest start at or before it
to the next start after it."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import psycopg

Conn = psycopg.Connection[tuple[Any, ...]]

# The archived seq 1 found by its key (event_keys: primary key table, seq), its time in its day's partition: `events`
# has no index on seq, so a filter on it read every event of the table in every partition.
_STARTS = (
    "SELECT e.ts FROM event_keys k JOIN events e ON e.gaming_day = k.gaming_day AND e.event_id = k.event_id"
    " WHERE k.table_id = %(t)s AND k.seq = 1"
    " UNION ALL SELECT (received->>'ts')::timestamptz FROM integrity_alarms"
    " WHERE table_id = %(t)s AND seq = 1 AND kind = 'seq_reused'"
)
# Time splits a table's events only where another journal is known: two starts, or a seq refused as reused. A table
# with one journal is read whole, whatever its clock did (one ahead at its seq 1, then set back, cut off the events
# stamped before it).
_SPAN = (
    "SELECT max(ts) FILTER (WHERE ts <= %(at)s), min(ts) FILTER (WHERE ts > %(at)s), count(*) > 1 OR EXISTS"
    " (SELECT 1 FROM integrity_alarms WHERE table_id = %(t)s AND kind = 'seq_reused')"
    f" FROM ({_STARTS}) AS starts"
)


def journal_span(conn: Conn, table_id: str, at: datetime) -> tuple[datetime | None, datetime | None]:
    """The start and end (the next journal's start) of the table's journal writing at `at`; None for a bound the
    archive holds no start for (the table's first journal, its seq 1 retired), and both None for a table with one
    journal."""
    row = conn.execute(_SPAN, {"t": table_id, "at": at}).fetchone()
    return (row[0], row[1]) if row is not None and row[2] else (None, None)
