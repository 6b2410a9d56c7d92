"""`tablectl link report`: per level, what every table contributed, the hits in their order, what was paid, the
reserve, the overflow and the display, and the balance checked to the micro-cent three ways:

1. the events, replayed from seq 1 through the pure model with no gap, give exactly the stored meters;
2. every level balances: contributions + house-funded = display + reserve + overflow + paid + removed;
3. every contribution row was counted once per level its wager fed (none lost, none twice), and the hits' rows
   add up to the level's paid meter.

A mismatch is a tilt of the link (the service refuses leases until a supervisor clears it).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field, replace
from typing import Any

from controller.cli.shown import shown
from controller.core.events import DomainEvent
from controller.progressive.model import MICRO, MeterError, Meters, apply
from link.records import Hit
from link.store import LinkStore
from link.transaction import Conn


@dataclass
class LevelReport:
    level: str
    display_cents: int
    reserve_micro: int
    overflow_micro: int
    paid_cents: int
    contributed_micro: int
    house_funded_micro: int
    by_table_micro: dict[str, int] = field(default_factory=dict)
    hits: list[Hit] = field(default_factory=list)


@dataclass
class Reconciliation:
    link_id: str
    status: str
    seq: int
    levels: list[LevelReport]
    problems: list[str]

    @property
    def balanced(self) -> bool:
        return not self.problems

    def to_json(self) -> dict[str, Any]:
        return {
            "link_id": self.link_id,
            "status": self.status,
            "seq": self.seq,
            "balanced": self.balanced,
            "problems": self.problems,
            "levels": [
                {
                    "level": lv.level,
                    "display_cents": lv.display_cents,
                    "reserve_micro": lv.reserve_micro,
                    "overflow_micro": lv.overflow_micro,
                    "paid_cents": lv.paid_cents,
                    "contributed_micro": lv.contributed_micro,
                    "house_funded_micro": lv.house_funded_micro,
                    "contributions_by_table_micro": lv.by_table_micro,
                    "hits": [h.to_json() | {"order": i + 1} for i, h in enumerate(lv.hits)],
                }
                for lv in self.levels
            ],
        }


def _replay(conn: Conn, problems: list[str]) -> tuple[Meters, dict[tuple[str, str], int], Counter[tuple[Any, ...]]]:
    meters = Meters()
    by_table: dict[tuple[str, str], int] = defaultdict(int)
    counted: Counter[tuple[Any, ...]] = Counter()
    with conn.cursor(name="link_replay") as cur:  # server-side: a long link's events are not all in memory
        cur.execute("SELECT seq, type, rule, table_id, round_id, payload FROM link_event ORDER BY seq")
        for seq, type_, rule, table_id, round_id, payload in cur:
            if seq != meters.seq + 1:
                problems.append(f"event seq {seq} follows {meters.seq}: events are missing")
                meters = replace(meters, seq=seq - 1)
            if not type_.startswith("meter."):
                meters = replace(meters, seq=seq)
                continue
            try:
                meters = apply(meters, DomainEvent(type_, rule, payload, round_id))
            except MeterError as err:
                problems.append(f"event seq {seq} does not replay: {err}")
                meters = replace(meters, seq=seq)
                continue
            meters = replace(meters, open_rounds={})
            if type_ == "meter.contributed":
                level = str(payload["level"])
                by_table[(level, str(table_id))] += int(payload["delta"].get("contributed_micro", 0))
                counted[(level, table_id, round_id, int(payload["seat"]), payload["wager"])] += 1
    return meters, by_table, counted


def reconcile(conn: Conn) -> Reconciliation:
    store = LinkStore(conn)
    with conn.transaction():
        conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY")  # one snapshot for all checks
        state = store.state()
        stored = store.levels()
        problems: list[str] = []
        replayed, by_table, counted = _replay(conn, problems)
        if replayed.seq != state.seq:
            problems.append(f"the events end at seq {replayed.seq} but the link's state says {state.seq}")
        for name in sorted(set(stored) | set(replayed.levels)):
            a, b = stored.get(name), replayed.levels.get(name)
            if a != b:
                problems.append(f"{name}: the stored meters differ from the replayed events: {a} != {b}")
            if a is not None and (unbalanced := a.balance_problem()):
                problems.append(unbalanced)
        fed: dict[str, list[str]] = defaultdict(list)
        for figures in state.figures:
            for spot in figures.levels:
                fed[figures.wager].append(spot.level)
        rows = conn.execute("SELECT table_id, round_id, seat, wager FROM link_contribution").fetchall()
        expected: Counter[tuple[Any, ...]] = Counter(
            (level, t, r, s, w) for t, r, s, w in rows for level in fed.get(str(w), [])
        )
        if counted != expected:
            twice = [k for k, n in counted.items() if n > 1]
            lost = list((expected - counted).elements())
            extra = list((counted - expected).elements())
            problems.append(
                f"contributions and meters disagree: counted twice {twice[:5]}, never counted {lost[:5]}, "
                f"counted without a contribution row {extra[:5]}"
            )
        hits = store_hits(conn)
        levels: list[LevelReport] = []
        for name, lv in sorted(stored.items()):
            mine = [h for h in hits if h.level == name]
            if sum(h.amount_cents for h in mine) != lv.wins_cents:
                problems.append(
                    f"{name}: the hits add up to {sum(h.amount_cents for h in mine)} cents, "
                    f"the paid meter says {lv.wins_cents}"
                )
            levels.append(
                LevelReport(
                    name,
                    lv.display_cents,
                    lv.reserve_micro,
                    lv.overflow_micro,
                    lv.wins_cents,
                    lv.contributed_micro,
                    lv.house_funded_micro,
                    {t: v for (lvl, t), v in sorted(by_table.items()) if lvl == name},
                    mine,
                )
            )
    return Reconciliation(state.link_id, state.status, state.seq, levels, problems)


def store_hits(conn: Conn) -> list[Hit]:
    rows = conn.execute(
        "SELECT table_id, round_id, seat, level, hit_seq, amount_cents, meter_before_cents, rule, validated_by "
        "FROM link_hit ORDER BY hit_seq"
    ).fetchall()
    return [Hit(*r) for r in rows]


def _money(micro: int) -> str:
    # The sign apart: divmod floors, so -$9,472.83 read as $-9,473.17 (a display below its seed after a hit).
    cents, frac = divmod(abs(micro), MICRO)
    sign = "-" if micro < 0 else ""
    return f"{sign}${cents // 100:,}.{cents % 100:02d}" + (f" {sign or '+'}{frac}µ¢" if frac else "")


def render(rec: Reconciliation) -> str:
    lines = [f"link {shown(rec.link_id)}: {shown(rec.status)}, {rec.seq} events"]  # tables' words: escaped
    for lv in rec.levels:
        growth = lv.display_cents * MICRO - lv.house_funded_micro
        lines.append(
            f"\n{shown(lv.level)}: display {_money(lv.display_cents * MICRO)}, reserve {_money(lv.reserve_micro)}, "
            f"overflow {_money(lv.overflow_micro)}, paid {_money(lv.paid_cents * MICRO)}"
        )
        lines.append(f"  contributions {_money(lv.contributed_micro)} (display growth {_money(growth)} over the seed)")
        for table, micro in lv.by_table_micro.items():
            lines.append(f"    {shown(table):<24} {_money(micro)}")
        for order, h in enumerate(lv.hits, 1):
            state = f"validated by {shown(h.validated_by)}" if h.validated_by else "PENDING validation"
            lines.append(
                f"  hit #{order} (seq {h.hit_seq}): {shown(h.table_id)} seat {h.seat} round {shown(h.round_id)}: "
                f"{_money(h.amount_cents * MICRO)} of {_money(h.meter_before_cents * MICRO)}, {state}"
            )
    if rec.problems:
        lines.append("\nBALANCE MISMATCH (link tilt):")
        lines += [f"  - {shown(p)}" for p in rec.problems]
    else:
        lines.append("\nbalance: exact to the micro-cent (contributions = display growth + reserve + paid + overflow)")
    return "\n".join(lines)
