"""The report's figures, aggregated in PostgreSQL over a period's partitions (docs/floor.md, "Reports", has each
definition and formula). What is summed in SQL is what grows with the floor (settlements, lock-outs, rounds); the
rest (devices, tilts, commands: a few events a table a day) is folded here in order.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import psycopg

from controller.core.irregularities import IRREGULARITIES
from floor.days import Period
from floor.report.downtime import LAST_BEFORE, SAID, Downtime
from floor.report.owner import Claims, condition, prepare

Conn = psycopg.Connection[tuple[Any, ...]]


@dataclass(frozen=True, slots=True)
class Scope:
    """Which events a report covers: the period, and a table or a game if asked."""

    period: Period
    table_id: str | None = None
    chapter: str | None = None

    def where(self, claims: Claims, alias: str = "e") -> tuple[str, list[Any]]:
        """The period's events (floor/report/owner.py: a round's events count where it ended), and the table or game
        asked for."""
        sql, params = condition(alias, self.period, claims)
        tables, more = self.tables(alias)
        return sql + tables, params + more

    def tables(self, alias: str = "e") -> tuple[str, list[Any]]:
        """The table or game asked for, as " AND ..." conditions on `alias` (empty for the whole floor)."""
        sql, params = "", list[Any]()
        if self.table_id is not None:
            sql += f" AND {alias}.table_id = %s"
            params.append(self.table_id)
        if self.chapter is not None:
            sql += f" AND {alias}.table_id IN (SELECT table_id FROM table_games WHERE chapter = %s)"
            params.append(self.chapter)
        return sql, params


@dataclass
class Figures:
    """Raw aggregates by table; floor/report/build.py rolls them up by game and floor and renders them."""

    games: dict[str, tuple[str, str]] = field(default_factory=dict)  # table -> (chapter, game name)
    paytables: dict[str, list[dict[str, Any]]] = field(default_factory=dict)  # chapter -> birth paytables
    rounds: dict[str, tuple[int, int, int]] = field(default_factory=dict)  # table -> completed, voided, active hours
    hourly: list[tuple[datetime, str, int]] = field(default_factory=list)  # hour, table, rounds completed
    # hour, table, wager, settled, handle, collected, paid
    wagers: list[tuple[datetime, str, str, int, int, int, int]] = field(default_factory=list)
    takes: list[tuple[str, str, int, int]] = field(default_factory=list)  # table, spot, seats placing, seats playing
    hands: list[tuple[str, str, str, str | None, int, int]] = field(
        default_factory=list
    )  # table, wager, hand, odds, n, rounds
    jackpots: list[tuple[str, str, int, int]] = field(default_factory=list)  # table, level, hits, amount
    # table, level, wagers that contributed, their cents, micro-cents contributed (less what voids reversed)
    contributions: list[tuple[str, str, int, int, int]] = field(default_factory=list)
    liability: list[tuple[str, str, int, int]] = field(default_factory=list)  # table, level, display, reserve
    irregular: list[tuple[str, str, str | None, int]] = field(default_factory=list)  # table, type, rule, count
    devices: list[tuple[str, str, float, int, str, str]] = field(
        default_factory=list
    )  # table, device, down s, faults, codes, note (floor/report/downtime.py BEFORE)
    tilts: list[tuple[str, str, str, str | None, float]] = field(default_factory=list)  # table, tilt, from, to, s
    commands: list[tuple[str, str, str, int]] = field(default_factory=list)  # table, verb, role or outcome, count
    # table, rule, collected at once, held, released to the house, released to the player, held at the period's end
    abandoned: list[tuple[str, str, int, int, int, int, int]] = field(default_factory=list)
    now: datetime | None = None  # the archive's clock (the one every reader shares): a period not begun is said


_TABLE_GAMES = """
CREATE TEMP VIEW table_games AS
SELECT DISTINCT ON (table_id) table_id, payload->'game'->>'chapter' AS chapter, payload->'game'->>'name' AS name,
       payload->'paytables' AS paytables
FROM births ORDER BY table_id, ts DESC
"""


def _rows(conn: Conn, sql: str, params: list[Any]) -> list[tuple[Any, ...]]:
    return conn.execute(sql.encode(), params).fetchall()


def gather(conn: Conn, scope: Scope, work_mem: str | None = None) -> Figures:
    """The figures, in the connection's transaction (not committed here); `work_mem` is that transaction's alone
    (SET LOCAL): a busy day's sorts stop spilling (bench/floor_report.py --plans), other sessions keep theirs."""
    if work_mem is not None:
        conn.execute("SELECT set_config('work_mem', %s, true)", (work_mem,))
    conn.execute("DROP VIEW IF EXISTS table_games")
    conn.execute(_TABLE_GAMES.encode())
    claims = prepare(conn, scope.period)
    f = Figures(now=_rows(conn, "SELECT now()", [])[0][0])
    for table_id, chapter, name, paytables in _rows(
        conn, "SELECT table_id, chapter, name, paytables FROM table_games", []
    ):
        f.games[table_id] = (chapter, name)
        f.paytables.setdefault(chapter, list(paytables or []))
    where, params = scope.where(claims)
    f.rounds = {
        t: (int(c), int(v), int(h))
        for t, c, v, h in _rows(
            conn,
            f"""SELECT table_id, count(*) FILTER (WHERE type = 'round.completed'),
                   count(*) FILTER (WHERE type = 'round.voided'),
                   count(DISTINCT date_trunc('hour', ts)) FILTER (WHERE type = 'round.completed')
                FROM events e WHERE {where} AND type IN ('round.completed', 'round.voided') GROUP BY table_id""",
            params,
        )
    }
    f.hourly = [
        (h, t, int(n))
        for h, t, n in _rows(
            conn,
            f"""SELECT date_trunc('hour', ts), table_id, count(*)
                FROM events e WHERE {where} AND type = 'round.completed' GROUP BY 1, 2 ORDER BY 1""",
            params,
        )
    ]
    f.wagers = _wagers(conn, where, params)
    f.takes = _takes(conn, where, params)
    f.hands = _hands(conn, where, params)
    f.jackpots = [
        (t, lv, int(n), int(a))
        for t, lv, n, a in _rows(
            conn,
            f"""SELECT table_id, payload->>'level', count(*), sum((payload->>'amount')::bigint)
                FROM events e WHERE {where} AND type = 'progressive.paid' GROUP BY 1, 2""",
            params,
        )
    ]
    f.contributions = _contributions(conn, where, params)
    f.liability = _liability(conn, scope)
    f.irregular = [
        (t, ty, r, int(n))
        for t, ty, r, n in _rows(
            conn,
            f"SELECT table_id, type, rule, count(*) FROM events e WHERE {where} AND type = ANY(%s) GROUP BY 1, 2, 3",
            [*params, list(IRREGULARITIES)],
        )
    ]
    f.devices, f.tilts, f.commands = _timelines(conn, scope, where, params, f.now)
    f.abandoned = _abandoned(conn, scope, where, params)
    return f


def _contributions(conn: Conn, where: str, params: list[Any]) -> list[tuple[str, str, int, int, int]]:
    """Per table and level: the wagers that fed the meter, their cents and the micro-cents they contributed, less
    what a void reversed (docs/progressive.md: the meter's own counters, exact)."""
    sql = f"""SELECT table_id, payload->>'level', coalesce(sum((payload->'delta'->>'in_count')::bigint), 0),
                     coalesce(sum((payload->'delta'->>'in_cents')::bigint), 0),
                     coalesce(sum((payload->'delta'->>'contributed_micro')::bigint), 0)
              FROM events e WHERE {where} AND type IN ('meter.contributed', 'meter.contributions_reversed')
              GROUP BY 1, 2"""
    return [(t, lv, int(n), int(c), int(m)) for t, lv, n, c, m in _rows(conn, sql, params)]


def _wagers(conn: Conn, where: str, params: list[Any]) -> list[tuple[datetime, str, str, int, int, int, int]]:
    """Per hour, table and wager: settled count, handle, collected, paid. A bet withdrawn (643a.11(b)) was never at
    risk and is not handle; a fold's wagers are collected at the fold (seat.folded); a departed player's wagers
    (.7(b)) when the house collects them: at once (`wagers.abandoned`, disposition "lose") or when a floorperson
    releases the held ones to it (`held_wagers.released`, to "house"). Held, or released to the player, they are
    neither handle nor win (the wager goes back, as a push's would)."""
    sql = f"""
    WITH s AS (SELECT date_trunc('hour', ts) AS hour, table_id, type, payload FROM events e WHERE {where}
               AND (type LIKE '%%.settled' OR type IN ('seat.folded', 'wagers.abandoned', 'held_wagers.released')))
    SELECT hour, table_id, w->>'wager', count(*), sum((w->>'amount')::bigint), sum((w->>'collected')::bigint),
           sum((w->>'paid')::bigint)
    FROM s, jsonb_array_elements(CASE WHEN type LIKE '%%.settled' THEN s.payload->'wagers' END) w
    WHERE s.payload ? 'wagers' AND w->>'outcome' <> 'withdrawn' GROUP BY 1, 2, 3
    UNION ALL
    SELECT hour, table_id, coalesce(payload->>'wager', split_part(type, '.', 1)), count(*),
           coalesce(sum((payload->>'amount')::bigint), 0), coalesce(sum((payload->>'collected')::bigint), 0),
           sum((payload->>'paid')::bigint)
    FROM s WHERE type LIKE '%%.settled' AND NOT s.payload ? 'wagers' GROUP BY 1, 2, 3
    UNION ALL
    SELECT hour, table_id, c.key, count(*), sum(c.value::bigint), sum(c.value::bigint), 0
    FROM s, jsonb_each_text(s.payload->'collected') c WHERE type = 'seat.folded' GROUP BY 1, 2, 3
    UNION ALL
    SELECT hour, table_id, c.key, count(*), sum(c.value::bigint), sum(c.value::bigint), 0
    FROM s, jsonb_each_text(s.payload->'wagers') c
    WHERE (type = 'wagers.abandoned' AND payload->>'disposition' = 'lose')
       OR (type = 'held_wagers.released' AND payload->>'to' = 'house') GROUP BY 1, 2, 3
    """
    out: dict[tuple[datetime, str, str], list[int]] = defaultdict(lambda: [0, 0, 0, 0])
    for hour, t, w, n, handle, coll, paid in _rows(conn, sql, params):
        acc = out[(hour, t, w)]
        for i, v in enumerate((n, handle, coll, paid)):
            acc[i] += int(v or 0)
    return [(h, t, w, v[0], v[1], v[2], v[3]) for (h, t, w), v in sorted(out.items())]


def _takes(conn: Conn, where: str, params: list[Any]) -> list[tuple[str, str, int, int]]:
    """Per table and spot: the seat-rounds with that wager at lock-out, and the seat-rounds played."""
    sql = f"""
    WITH nmb AS (SELECT table_id, payload FROM events e WHERE {where} AND type = 'no_more_bets'),
    seats AS (SELECT table_id, s.key AS seat, s.value AS spots FROM nmb, jsonb_each(nmb.payload->'wagers') s),
    played AS (SELECT table_id, count(*) AS n FROM seats GROUP BY 1)
    SELECT seats.table_id, k, count(*), max(played.n)
    FROM seats JOIN played USING (table_id), jsonb_object_keys(seats.spots) k GROUP BY 1, 2
    """
    return [(t, k, int(n), int(m)) for t, k, n, m in _rows(conn, sql, params)]


def _hands(conn: Conn, where: str, params: list[Any]) -> list[tuple[str, str, str, str | None, int, int]]:
    """Per table, wager and hand paid (a win or a push): the settlements, and the distinct rounds they came from.
    A main hand (hand.settled) counts as paid when any of its wagers won or pushed; its odds are that wager's."""
    sql = f"""
    WITH s AS (
        SELECT table_id, round_id, payload,
               CASE WHEN payload ? 'wagers' THEN (SELECT w FROM jsonb_array_elements(payload->'wagers') w
                    WHERE w->>'outcome' IN ('win', 'push') LIMIT 1) ELSE payload END AS paid_by
        FROM events e WHERE {where} AND type LIKE '%%.settled' AND payload ? 'hand' AND type NOT LIKE '%%envy%%'
    )
    SELECT table_id, CASE WHEN payload ? 'wagers' THEN 'main:' || (payload->>'paytable') ELSE payload->>'wager' END,
           CASE WHEN paid_by->>'outcome' IN ('win', 'push') THEN payload->>'hand' ELSE '(no award)' END,
           paid_by->>'odds', count(*), count(DISTINCT round_id)
    FROM s GROUP BY 1, 2, 3, 4
    """
    return [(t, w, h, o, int(n), int(r)) for t, w, h, o, n, r in _rows(conn, sql, params)]


def _liability(conn: Conn, scope: Scope) -> list[tuple[str, str, int, int]]:
    """Each meter's last report before the period's end: display + reserve is what the floor owes on it."""
    sql = "SELECT DISTINCT ON (table_id, level) table_id, level, display_cents, reserve_cents FROM meter_reports m"
    tables, params = scope.tables("m")
    sql += " WHERE ts < %s" + tables
    params = [scope.period.end, *params]
    sql += " ORDER BY table_id, level, ts DESC, as_of_seq DESC"
    return [(t, lv, int(d), int(r)) for t, lv, d, r in _rows(conn, sql, params)]


# What a `wagers.abandoned` puts on hold: its wagers but those gone back to a game account (`to_account`, 605a.2(d)(2)).
_HELD = """(SELECT coalesce(sum(v::bigint), 0) FROM jsonb_each_text(payload->'wagers') x(k, v)
            WHERE NOT coalesce(payload->'to_account', '{}'::jsonb) ? k)"""


def _abandoned(
    conn: Conn, scope: Scope, where: str, params: list[Any]
) -> list[tuple[str, str, int, int, int, int, int]]:
    """Per table and rule (.7(b) of its chapter): the departed players' wagers collected at once, put on hold,
    released to the house and to the player in the period, and still held at its end (every hold and release
    before the end, whenever it began: a hold may outlast a gaming day)."""

    def amounts(where: str) -> str:
        return f"""
    SELECT table_id, rule,
      coalesce(sum({_HELD}) FILTER (WHERE type = 'wagers.abandoned' AND payload->>'disposition' = 'lose'), 0),
      coalesce(sum({_HELD}) FILTER (WHERE type = 'wagers.abandoned' AND payload->>'disposition' = 'hold'), 0),
      coalesce(sum((payload->>'amount')::bigint) FILTER (WHERE type = 'held_wagers.released'
                                                         AND payload->>'to' = 'house'), 0),
      coalesce(sum((payload->>'amount')::bigint) FILTER (WHERE type = 'held_wagers.released'
                                                         AND payload->>'to' = 'player'), 0)
    FROM events e WHERE {where} AND type IN ('wagers.abandoned', 'held_wagers.released') GROUP BY 1, 2"""

    found = {
        (t, r or ""): [int(a), int(b), int(c), int(d), 0] for t, r, a, b, c, d in _rows(conn, amounts(where), params)
    }
    tables, tables_params = scope.tables("e")
    until = "e.gaming_day <= %s AND e.ts < %s" + tables
    until_params: list[Any] = [scope.period.last_day, scope.period.end, *tables_params]
    for t, r, _lost, held, house, player in _rows(conn, amounts(until), until_params):
        if held - house - player:
            found.setdefault((t, r or ""), [0, 0, 0, 0, 0])[4] = int(held - house - player)
    return [(t, r, v[0], v[1], v[2], v[3], v[4]) for (t, r), v in sorted(found.items())]


_TIMELINE_TYPES = [
    "device.offline",
    "device.online",
    "device.unusable",
    "device.out_of_order",
    "device.back_in_service",
    "device.fault",
    "device.fault_cleared",
    "table.blocked",
    "table.block_cleared",
    "command.accepted",
    "command.rejected",
]


def _timelines(
    conn: Conn, scope: Scope, where: str, params: list[Any], now: datetime | None
) -> tuple[
    list[tuple[str, str, float, int, str, str]],
    list[tuple[str, str, str, str | None, float]],
    list[tuple[str, str, str, int]],
]:
    rows = _rows(
        conn,
        f"SELECT table_id, ts, ts_text, type, payload FROM events e WHERE {where} AND type = ANY(%s)"
        " ORDER BY table_id, seq",
        [*params, _TIMELINE_TYPES],
    )
    end = scope.period.end
    downtime = Downtime(end, scope.period.start, now)
    tables, more = scope.tables()
    downtime.before_start(_rows(conn, LAST_BEFORE.format(tables=tables), [SAID, scope.period.start, *more]))
    tilt_open: dict[tuple[str, str], tuple[datetime, str]] = {}
    tilts: list[tuple[str, str, str, str | None, float]] = []
    commands: dict[tuple[str, str, str], int] = defaultdict(int)
    for table, ts, ts_text, type_, p in rows:
        if type_.startswith("device."):
            downtime.note(table, ts, type_, p)
        elif type_ == "table.blocked":
            for block in p.get("reasons", {}):
                if block == "critical_state" or block.startswith("tilt:"):
                    tilt_open.setdefault((table, block), (ts, ts_text))
        elif type_ == "table.block_cleared" and (table, p.get("block")) in tilt_open:
            start, text = tilt_open.pop((table, str(p.get("block"))))
            tilts.append((table, str(p.get("block")), text, ts_text, (ts - start).total_seconds()))
        elif type_ == "command.accepted":
            commands[(table, str(p.get("verb")), str(p.get("role")))] += 1
        elif type_ == "command.rejected":
            commands[(table, str(p.get("verb")), f"rejected: {p.get('code')}")] += 1
    until = now if downtime.going and now is not None else end  # a period not over: what has happened of it
    for (table, tilt), (start, text) in tilt_open.items():
        tilts.append((table, tilt, text, None, max(0.0, (until - start).total_seconds())))
    return downtime.rows(), tilts, [(t, v, r, n) for (t, v, r), n in sorted(commands.items())]
