"""The link's meters in PostgreSQL: every operation is one transaction that takes the link's state row (for the
seq), then the rows of the levels it touches (FOR UPDATE), runs the pure meter model
(controller.progressive.meters) on them and writes back the meters, the events and its own rows.

Synchronous psycopg on one connection: the service runs each call in a worker thread, one at a time, and the
report and the tests call the same code. A commit returns only once the synchronous standby has the WAL
(synchronous_commit = on with synchronous_standby_names, systemd/link-ha.md), and only then does the service
acknowledge to a table.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from psycopg.types.json import Jsonb

from controller.progressive import meters as ops
from controller.progressive.model import LevelMeters, MeterError, PercentOfMeter
from link.config import LinkConfig, ProgressiveFigures, figures_of
from link.records import STATUS_RULE, ContributeResult, Contribution, Hit, LinkRefused, State, level_from_json
from link.transaction import Conn, Transaction


class LinkStore:
    def __init__(self, conn: Conn) -> None:
        self.conn = conn

    # -- reading ------------------------------------------------------------------------------------------

    def state(self, *, lock: bool = False) -> State:
        row = self.conn.execute(
            "SELECT link_id, status, tilt, seq, published_seq, params FROM link_state" + (" FOR UPDATE" if lock else "")
        ).fetchone()
        if row is None:
            raise LinkRefused("the link's database has no state: start `tablectl link --config LINK.toml` once")
        figures = [ProgressiveFigures.model_validate(p) for p in row[5]]
        return State(str(row[0]), str(row[1]), row[2], int(row[3]), int(row[4]), figures)

    def levels(self, names: Iterable[str] | None = None, *, lock: bool = False) -> dict[str, LevelMeters]:
        sql = "SELECT level, meters FROM link_level"
        params: tuple[Any, ...] = ()
        if names is not None:
            sql += " WHERE level = ANY(%s)"
            params = (sorted(names),)
        sql += " ORDER BY level" + (" FOR UPDATE" if lock else "")  # one lock order: no deadlock between two
        return {str(r[0]): level_from_json(str(r[0]), r[1]) for r in self.conn.execute(sql.encode(), params)}

    def display(self) -> dict[str, int]:
        return {name: lv.display_cents for name, lv in self.levels().items()}

    def events_after(self, seq: int, limit: int = 1000) -> list[dict[str, Any]]:
        rows = self.conn.execute(
            "SELECT seq, ts, type, rule, table_id, round_id, payload FROM link_event WHERE seq > %s "
            "ORDER BY seq LIMIT %s",
            (seq, limit),
        ).fetchall()
        self.conn.commit()
        keys = ("seq", "ts", "type", "rule", "table_id", "round_id", "payload")
        return [dict(zip(keys, (r[0], r[1].isoformat(), *r[2:]), strict=True)) for r in rows]

    def hits(self, meter_after: bool = False) -> list[Hit]:
        """Every hit; with `meter_after`, each one awaiting validation with the meter its claim booked (a lookup per
        pending hit: a handful at a time)."""
        rows = self.conn.execute(
            "SELECT table_id, round_id, seat, level, hit_seq, amount_cents, meter_before_cents, rule, validated_by "
            "FROM link_hit ORDER BY hit_seq"
        ).fetchall()
        hits = [Hit(*r) for r in rows]
        if meter_after:
            hits = [h if h.validated_by else replace(h, meter_after_cents=self._meter_after(h.hit_seq)) for h in hits]
        self.conn.commit()
        return hits

    # -- the link's lifetime ------------------------------------------------------------------------------

    def initialise(self, config: LinkConfig) -> bool:
        """A new link: its state (closed) and its meters seeded from the config's figures. False if it exists."""
        with self.conn.transaction():
            self.conn.execute("LOCK TABLE link_state IN EXCLUSIVE MODE")
            if self.conn.execute("SELECT 1 FROM link_state").fetchone() is not None:
                return False
            figures = [p.model_dump(mode="json") for p in config.progressive]
            self.conn.execute(
                "INSERT INTO link_state (link_id, status, seq, params) VALUES (%s, 'closed', 0, %s)",
                (config.link.id, Jsonb(figures)),
            )
            tx = Transaction(self.conn, self.state(lock=True), {})
            after, events = ops.seed_missing(tx.meters, config.figures)
            tx.take(events, after, None)
            tx.note("link.created", STATUS_RULE, {"link_id": config.link.id, "tables": len(config.tables)})
            tx.finish()
        return True

    # -- contributions ------------------------------------------------------------------------------------

    def contribute(self, batch: Sequence[Contribution]) -> ContributeResult:
        """Each contribution at most once, with the meters' change, in one transaction (the caller acks after)."""
        with self.conn.transaction():
            state = self.state(lock=True)
            params = state.params
            for c in batch:
                params.for_wager(c.wager)  # an unknown spot: refused before anything is written
            inserted = self.conn.execute(
                "INSERT INTO link_contribution (table_id, round_id, seat, wager, cents, seq) "
                "SELECT t, r, s, w, c, %s FROM unnest(%s::text[], %s::text[], %s::int[], %s::text[], %s::bigint[]) "
                "AS u(t, r, s, w, c) ON CONFLICT DO NOTHING RETURNING table_id, round_id, seat, wager",
                (
                    state.seq + 1,
                    [c.table_id for c in batch],
                    [c.round_id for c in batch],
                    [c.seat for c in batch],
                    [c.wager for c in batch],
                    [c.cents for c in batch],
                ),
            ).fetchall()
            fresh = {(str(r[0]), str(r[1]), int(r[2]), str(r[3])) for r in inserted}
            counted = frozenset(fresh)
            fed = {lv.level for c in batch for lv in params.for_wager(c.wager).levels}
            tx = Transaction(self.conn, state, self.levels(fed, lock=True))
            new = 0
            for c in batch:
                if c.key not in fresh:
                    continue
                fresh.discard(c.key)  # the same key twice in one batch counts once
                after, events = ops.contribute(tx.meters, params, c.wager, c.cents, seat=c.seat, round_id=c.round_id)
                tx.take(events, after, c.table_id)
                new += 1
            tx.finish()
            display = {name: lv.display_cents for name, lv in tx.meters.levels.items()}
            return ContributeResult(new, len(batch) - new, tx.meters.seq, display, counted)

    # -- hits ---------------------------------------------------------------------------------------------

    def claim(
        self, table_id: str, round_id: str, seat: int, level: str, percent: int, rule: str, asset_number: str
    ) -> tuple[Hit, bool]:
        """The winning table claims `percent` % of the meter as it stands now; the level is reseeded at once after
        100 %. Under the level's row lock, so the commit order is the order of wins. A claim made again (a
        resend) returns the hit recorded the first time. Returns the hit and whether it is new."""
        with self.conn.transaction():
            state = self.state(lock=True)
            if state.status == "tilted":
                raise LinkRefused(f"the link is tilted ({state.tilt}): the claim waits until a supervisor clears it")
            known = self._hit(table_id, round_id, seat, level)
            if known is not None:
                return replace(known, meter_after_cents=self._meter_after(known.hit_seq)), False
            params = state.params
            params.level(level)
            tx = Transaction(self.conn, state, self.levels([level], lock=True))
            try:
                after, paid, events = ops.hit(
                    tx.meters, params, level, PercentOfMeter(percent), seat=seat, round_id=round_id, rule=rule
                )
            except MeterError as err:
                raise LinkRefused(str(err)) from None
            tx.take(events, after, table_id)
            hit_event = events[0].payload
            hit = Hit(
                table_id,
                round_id,
                seat,
                level,
                int(hit_event["seq"]),
                paid,
                int(hit_event["meter_before_cents"]),
                rule,
                None,
                tx.meters.levels[level].display_cents,
            )
            self.conn.execute(
                "INSERT INTO link_hit (table_id, round_id, seat, level, hit_seq, amount_cents, meter_before_cents, "
                "rule) VALUES (%s, %s, %s, %s, %s, %s, %s, %s)",
                (table_id, round_id, seat, level, hit.hit_seq, paid, hit.meter_before_cents, rule),
            )
            tx.note(
                "link.jackpot_pending",
                rule,
                {
                    **hit.to_json(),
                    "asset_number": asset_number,
                    "meter_after_cents": hit.meter_after_cents,
                },
                table_id,
            )
            tx.finish()
            return hit, True

    def _hit(self, table_id: str, round_id: str, seat: int, level: str) -> Hit | None:
        row = self.conn.execute(
            "SELECT table_id, round_id, seat, level, hit_seq, amount_cents, meter_before_cents, rule, validated_by "
            "FROM link_hit WHERE table_id = %s AND round_id = %s AND seat = %s AND level = %s",
            (table_id, round_id, seat, level),
        ).fetchone()
        return Hit(*row) if row else None

    def _meter_after(self, hit_seq: int) -> int | None:
        """The meter after a hit as its claim booked it: the claim's link.jackpot_pending event, which follows the
        hit's meter.hit (seq hit_seq) in the same transaction, so a few rows on by the primary key."""
        row = self.conn.execute(
            "SELECT (payload->>'meter_after_cents')::bigint FROM link_event WHERE seq > %s "
            "AND type = 'link.jackpot_pending' AND (payload->>'hit_seq')::bigint = %s ORDER BY seq LIMIT 1",
            (hit_seq, hit_seq),
        ).fetchone()
        return None if row is None or row[0] is None else int(row[0])

    def validate(self, table_id: str, round_id: str, seat: int, level: str, by: str, command_id: str) -> Hit:
        with self.conn.transaction():
            state = self.state(lock=True)
            hit = self._hit(table_id, round_id, seat, level)
            if hit is None:
                raise LinkRefused(
                    f"no claimed {level} hit at {table_id} round {round_id} seat {seat}: check `tablectl link report`"
                )
            if hit.validated_by is not None:
                raise LinkRefused(f"that hit was validated already by {hit.validated_by}: it is paid once")
            self.conn.execute(
                "UPDATE link_hit SET validated_at = now(), validated_by = %s, command_id = %s "
                "WHERE table_id = %s AND round_id = %s AND seat = %s AND level = %s",
                (by, command_id, table_id, round_id, seat, level),
            )
            tx = Transaction(self.conn, state, {})
            done = replace(hit, validated_by=by)
            tx.note(
                "link.jackpot_validated", "655a.11(i)(1)(iii)", {**done.to_json(), "command_id": command_id}, table_id
            )
            tx.finish()
            return done

    def paid(self, table_id: str, round_id: str, seat: int, level: str, amount_cents: int, by: str) -> tuple[Hit, bool]:
        """The winning table reports that it paid its hit after a floorperson's signed validate_jackpot there
        (655a.11(i)(1)(iii)-(iv)): the link's books close the hit, once. (hit, False) when they had already (a resent
        report, or a validate_jackpot signed at the link first); refused when the link recorded no such hit or
        another amount, which the table must not have paid."""
        with self.conn.transaction():
            state = self.state(lock=True)
            hit = self._hit(table_id, round_id, seat, level)
            if hit is None:
                raise LinkRefused(
                    f"no claimed {level} hit at {table_id} round {round_id} seat {seat}: check `tablectl link report`"
                )
            if hit.amount_cents != amount_cents:
                raise LinkRefused(
                    f"the table reports paying {amount_cents} cents for its {level} hit of round {round_id} seat "
                    f"{seat}, the link awarded {hit.amount_cents}: investigate before the books close"
                )
            if hit.validated_by is not None:
                return hit, False
            who = f"{by} at {table_id}"
            self.conn.execute(
                "UPDATE link_hit SET validated_at = now(), validated_by = %s "
                "WHERE table_id = %s AND round_id = %s AND seat = %s AND level = %s",
                (who, table_id, round_id, seat, level),
            )
            tx = Transaction(self.conn, state, {})
            done = replace(hit, validated_by=who)
            tx.note("link.jackpot_paid", "655a.11(i)(1)(iv)", {**done.to_json(), "reported_by": table_id}, table_id)
            tx.finish()
            return done, True

    # -- the operator's side ------------------------------------------------------------------------------

    def set_status(self, status: str, by: str, command_id: str, tilt: str | None = None) -> int:
        with self.conn.transaction():
            state = self.state(lock=True)
            self.conn.execute("UPDATE link_state SET status = %s, tilt = %s", (status, tilt))
            tx = Transaction(self.conn, state, {})
            payload: dict[str, Any] = {"status": status, "before": state.status, "by": by, "command_id": command_id}
            if tilt:
                payload["tilt"] = tilt
            seq = tx.note(f"link.{status}", STATUS_RULE, payload)
            tx.finish()
            return seq

    def set_parameters(self, figures: list[ProgressiveFigures], by: str, command_id: str) -> int:
        """New figures, only while the link is closed (5321.18: no change while in operation); a new level is
        seeded; a level that still holds money cannot be dropped."""
        params = figures_of(figures)
        with self.conn.transaction():
            state = self.state(lock=True)
            if state.status != "closed":
                raise LinkRefused(
                    f"the link is {state.status}: parameters change only while it is closed; send close_link first"
                )
            tx = Transaction(self.conn, state, self.levels(lock=True))
            dropped = sorted(set(tx.meters.levels) - set(params.levels))
            if dropped:
                raise LinkRefused(
                    f"the new figures drop level(s) {', '.join(dropped)} that still hold money owed to players: "
                    "keep them"
                )
            after, events = ops.seed_missing(tx.meters, params)
            tx.take(events, after, None)
            self.conn.execute(
                "UPDATE link_state SET params = %s, params_version = params_version + 1",
                (Jsonb([p.model_dump(mode="json") for p in figures]),),
            )
            before = [p.model_dump(mode="json") for p in state.figures]
            after_json = [p.model_dump(mode="json") for p in figures]
            seq = tx.note(
                "link.parameters_changed",
                STATUS_RULE,
                {"by": by, "command_id": command_id, "before": before, "after": after_json},
            )
            tx.finish()
            return seq

    def record_command(
        self,
        command_id: str,
        nonce: str,
        key_id: str,
        role: str | None,
        verb: str,
        args: Mapping[str, Any],
        issued_at: str,
        outcome: str,
        reason: str | None,
    ) -> bool:
        """Journal a command received; False when its id or nonce was seen before (a replay)."""
        with self.conn.transaction():
            row = self.conn.execute(
                "INSERT INTO link_command (command_id, nonce, key_id, role, verb, args, issued_at, outcome, reason) "
                "VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s) ON CONFLICT DO NOTHING RETURNING 1",
                (command_id, nonce, key_id, role, verb, Jsonb(dict(args)), issued_at, outcome, reason),
            ).fetchone()
            return row is not None

    def finish_command(self, command_id: str, outcome: str, reason: str | None) -> None:
        with self.conn.transaction():
            self.conn.execute(
                "UPDATE link_command SET outcome = %s, reason = %s WHERE command_id = %s", (outcome, reason, command_id)
            )

    def mark_published(self, seq: int) -> None:
        with self.conn.transaction():
            self.conn.execute("UPDATE link_state SET published_seq = greatest(published_seq, %s)", (seq,))
