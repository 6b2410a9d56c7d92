"""Progressive meters in the round: seeded at the first open, fed at the lock-out, taken back by a void, hit at
each winner's turn, and paid only once a floorperson validated the hit through a signed command.

The meter model (controller.progressive.model) is the truth for the meters: the engine keeps its state in
TableState.meters (restored and replayed with the rest of the state) and journals the `meter.*` events it
returns. The chapter's settle() computes the same awards from the meters as they stand at settlement; the two
are compared at every hit (docs/progressive.md, "Reseed", for the one case they may differ).

Validation holds the round: 655a.11(i)(1) and 643a.11(f)(3)(iii)/(iv) put the floorperson's validation ((iii),
(C)) before the payment ((iv), (D)), and a percentage-of-meter award is not paid from the table inventory
container, so the winning hand stays on the table until the documentation is done. The round is therefore
not complete (no `round.completed`, no shuffle, no next round) until every hit of it is validated.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from controller.core.events import DomainEvent
from controller.core.settlement import Settled
from controller.engine.inputs import Command, ValidateJackpot
from controller.engine.state import PendingHit, Phase
from controller.engine.step import _StepBase
from controller.progressive import meters as model
from controller.progressive.model import MeterError, Meters, PercentOfMeter
from drivers.interfaces import SeatLight

if TYPE_CHECKING:
    from controller.engine.inputs import Input

SIGN = "progressive_sign"
JACKPOT_BLOCK = "jackpot"
# What a chapter's meter award reads as in a settled row: "100% of the mega meter" (655a) or "10% of meter"
# (643a, where the wager spot names its meter).
_SHARE = re.compile(r"^(\d+)% of (?:the (\w+) )?meter$")


class _ProgressiveMixin(_StepBase):
    # -- the meters' events ----------------------------------------------------------------------

    def meter_events(self, events: Sequence[DomainEvent], meters: Meters) -> None:
        self.s.meters = meters
        rid = self.s.round.round_id if self.s.round else None
        for ev in events:
            self.out.append(ev if ev.round_id is not None or rid is None else replace(ev, round_id=rid))

    def seed_meters(self) -> None:
        """A new table (or a meter the config added) is seeded, journaled; a seeded meter is never seeded again."""
        params = self.e.meter_params
        if not params.levels or "meters" in self.s.progressive_lockout:
            return  # a store that failed validation is never replaced by fresh seeds
        meters, events = model.seed_missing(self.s.meters or Meters(), params)
        self.meter_events(events, meters)

    # -- wagers and the lock-out -------------------------------------------------------------------

    def progressive_refusal(self, spot: str, amount: int) -> str | None:
        """Why a progressive wager is refused now, or None (not a progressive wager, or taken)."""
        if spot not in self.e.meter_wagers:
            return None
        if self.s.progressive_lockout:
            return (
                "progressive wagering is locked out: "
                + "; ".join(self.s.progressive_lockout.values())
                + " (it reopens when the meters and the sign are available)"
            )
        sizes = self.spec.wager_sizes(self.rules, spot)
        if amount and sizes is not None and amount not in sizes:
            return f"a {spot} wager is one of {', '.join(map(str, sizes))} cents at this table"
        return None

    def lock_progressive(self, key: str, why: str) -> None:
        if not self.e.meter_wagers or self.s.progressive_lockout.get(key) == why:
            return
        self.s.progressive_lockout[key] = why
        self.emit(
            "progressive.locked_out",
            self.spec.lockout_rule(),
            {
                "reason": why,
                "reasons": dict(self.s.progressive_lockout),
                "wagers": list(self.e.meter_wagers),
                "remedy": "progressive wagers are refused at the wager stations; the rest of the game goes on",
            },
        )

    def unlock_progressive(self, key: str) -> None:
        if self.s.progressive_lockout.pop(key, None) is None:
            return
        if self.s.progressive_lockout:
            return
        self.emit("progressive.unlocked", self.spec.lockout_rule(), {"cleared": key})
        self.command(SIGN, "show_levels")

    def contribute_wagers(self) -> None:
        """At the lock-out every progressive wager of the round's players is collected and contributes
        (655a.8(b), 643a.8(b)(2)), seat by seat clockwise."""
        if self.s.meters is None or not self.e.meter_wagers:
            return
        r = self.r
        meters, events = self.s.meters, []
        for n in r.players:
            for spot, amount in sorted(r.seats[n].wagers.items()):
                if spot in self.e.meter_wagers:
                    meters, more = model.contribute(
                        meters, self.e.meter_params, spot, amount, seat=n, round_id=r.round_id
                    )
                    events += more
        if events:
            self.meter_events(events, meters)
            self.command(SIGN, "show_levels")

    def reverse_progressive_contributions(self, rule: str, returned: Mapping[str, Mapping[str, int]]) -> None:
        """A void returns the progressive wagers, so the meters take back exactly what they contributed."""
        wagers = {
            seat: {spot: amount for spot, amount in w.items() if spot in self.e.progressive}
            for seat, w in returned.items()
        }
        wagers = {seat: w for seat, w in wagers.items() if w}
        if self.s.meters is None or self.s.round is None:
            if wagers:
                self.emit("progressive.contributions_reversed", rule, {"wagers": wagers, "contributions": {}})
            return
        try:
            meters, events = model.void_round(self.s.meters, self.r.round_id, rule=rule)
        except MeterError as err:  # cannot happen before settlement, where the hits are; never lose it silently
            self.block("tilt:meters", str(err))
            self.emit("progressive.reversal_refused", rule, {"reason": str(err)})
            return
        contributions = {str(e.payload["level"]): e.payload["delta"] for e in events}
        self.emit("progressive.contributions_reversed", rule, {"wagers": wagers, "contributions": contributions})
        if events:
            self.meter_events(events, meters)
            self.command(SIGN, "show_levels")

    # -- settlement: the hits at each winner's turn ------------------------------------------------------

    def meter_values(self) -> dict[str, int]:
        return self.s.meters.display() if self.s.meters is not None else {}

    def take_hits(self, rows: Sequence[Settled]) -> list[Settled]:
        """Each meter award, in the settlement's (counterclockwise) order, from the meter as it stands at that
        turn; the rows get the model's amounts (equal to the chapter's but for a reseed funded by a reserve)."""
        if self.s.meters is None:
            return list(rows)
        r = self.r
        out: list[Settled] = []
        meters = self.s.meters
        for x in rows:
            m = _SHARE.match(x.odds or "") if x.outcome == "win" and x.wager in self.e.meter_wagers else None
            if m is None:
                out.append(x)
                continue
            percent, level = int(m.group(1)), m.group(2) or x.wager
            before = meters.level(level).display_cents
            meters, share, events = model.hit(
                meters,
                self.e.meter_params,
                level,
                PercentOfMeter(percent),
                seat=x.seat,
                round_id=r.round_id,
                rule=x.rule,
            )
            self.meter_events(events, meters)
            chapter_share = x.paid + x.returned
            if share != chapter_share:
                # docs/progressive.md "Reseed": a reserve moved into a reseeded meter; the model is the truth.
                x = replace(
                    x,
                    paid=share - x.amount,
                    note=f"{x.note or ''}; paid {share} from the meter model "
                    f"(the chapter's figure {chapter_share} assumed a reseed without reserve)".lstrip("; "),
                )
            hit = PendingHit(
                hit=f"{r.round_id}-h{len(self.s.pending_hits) + 1}",
                seat=x.seat,
                level=level,
                wager=x.wager,
                amount_cents=share,
                percent=percent,
                rule=x.rule,
                documentation=True,
            )
            self.s.pending_hits.append(hit)
            validate = self.spec.validation_rule(x.rule)
            light = self.spec.light_rule(x.rule)
            self.emit(
                "progressive.hit",
                validate,
                {
                    "hit": hit.hit,
                    "seat": x.seat,
                    "level": level,
                    "wager": x.wager,
                    "hand": x.hand,
                    "percent": percent,
                    "amount": share,
                    "meter_before": before,
                    "meter_after": meters.level(level).display_cents,
                    "light_rule": light,
                    "documentation": "the award is a percentage of the meter, not paid from the table inventory "
                    f"container ({x.rule}): the cards stay on the table until it is documented",
                    "remedy": "a floorperson or above validates the hit with a signed validate_jackpot command",
                },
            )
            self.command("wager_station", "light_on", seat=x.seat)
            self.out.append(Command(SIGN, "show_win", x.seat, level=level, amount_cents=share))
            out.append(x)
        if self.s.meters is not None:
            meters, events = model.close_round(self.s.meters, r.round_id)
            self.meter_events(events, meters)
        self.command(SIGN, "show_levels")
        return out

    def hold_for_jackpot(self, done: dict[str, Any]) -> bool:
        """True when the round's completion waits for jackpot validations (stored with the round)."""
        mine = [h for h in self.s.pending_hits if h.hit.startswith(self.r.round_id + "-")]
        if not mine:
            return False
        self.r.completion = done
        self.s.phase = Phase.JACKPOT
        self.s.blocks[JACKPOT_BLOCK] = "jackpot awaiting validation: " + ", ".join(
            f"seat {h.seat} {h.level} ({h.hit})" for h in mine
        )
        return True

    def validate_jackpot(self, v: ValidateJackpot) -> None:
        what = f"validate jackpot seat {v.seat} {v.level} {v.hit}"
        if v.role not in ("floorperson", "supervisor", "manager"):
            rule = self.spec.validation_rule(next((h.rule for h in self.s.pending_hits if h.hit == v.hit), ""))
            self.refused(
                what,
                f"role {v.role!r} may not validate a progressive payout: a floorperson or above must ({rule})",
                rule,
            )
            return
        found = next((h for h in self.s.pending_hits if h.hit == v.hit), None)
        if found is None:
            waiting = ", ".join(f"{h.hit} (seat {h.seat} {h.level})" for h in self.s.pending_hits) or "none"
            self.refused(what, f"no jackpot {v.hit!r} awaits validation (awaiting: {waiting})", None)
            return
        if found.seat != v.seat or found.level != v.level:
            self.refused(
                what,
                f"jackpot {v.hit} is seat {found.seat}'s {found.level}, not seat {v.seat}'s "
                f"{v.level}: check the hit and send it again",
                None,
            )
            return
        self.s.pending_hits = [h for h in self.s.pending_hits if h is not found]
        # The validation is (C) of the wager hit; its payment, below, is (D) (643a.11(f)(3)(iii), (iv)).
        self.emit(
            "progressive.validated",
            self.spec.validation_rule(found.rule),
            {"hit": found.hit, "seat": found.seat, "level": found.level, "by": v.key_id, "role": v.role},
        )
        self.emit(
            "progressive.paid",
            found.rule,
            {
                "hit": found.hit,
                "seat": found.seat,
                "level": found.level,
                "wager": found.wager,
                "amount": found.amount_cents,
                "percent": found.percent,
                "paid_from": "progressive meter",
                "documented_by": v.key_id,
            },
        )
        self.command("wager_station", "light_off", seat=found.seat)
        if self.s.pending_hits:
            self.s.blocks[JACKPOT_BLOCK] = "jackpot awaiting validation: " + ", ".join(
                f"seat {h.seat} {h.level} ({h.hit})" for h in self.s.pending_hits
            )
            return
        self.s.blocks.pop(JACKPOT_BLOCK, None)
        self.emit(
            "table.block_cleared",
            None,
            {"block": JACKPOT_BLOCK, "by": f"{v.role} {v.key_id}", "remaining": dict(self.s.blocks)},
        )
        if self.s.phase is Phase.JACKPOT and self.s.round is not None:
            done = self.r.completion or {}
            self.r.completion = None
            self.emit("round.completed", self.e.rule("complete"), done)
            self.round_over()

    # -- the winner's seat light -------------------------------------------------------------------

    def lit_seats(self) -> dict[int, list[PendingHit]]:
        """Seats whose light must be lit: those with a hit awaiting validation."""
        out: dict[int, list[PendingHit]] = {}
        for h in self.s.pending_hits:
            out.setdefault(h.seat, []).append(h)
        return out

    def relight(self, seat: int) -> None:
        """A station that came back may have lost power (and its light) meanwhile: light it again while its hit
        awaits validation, so the dealer can still verify the light before the floorperson validates."""
        if seat in self.lit_seats():
            self.command("wager_station", "light_on", seat=seat)

    def reissue_lights(self, reachable: Sequence[int]) -> None:
        """After a restart the stations' lights are unknown: the light_on of a pending hit, or the light_off of a
        validated one, may never have left the process. Every reachable station is told what it must show."""
        lit = self.lit_seats()
        for n in reachable:
            self.command("wager_station", "light_on" if n in lit else "light_off", seat=n)

    def seat_light(self, inp: SeatLight) -> None:
        """A station's confirmation of its light, journaled for the examiner beside the hit it shows. A report
        that disagrees with the pending hits is journaled as it is and not answered with another command: it is
        usually the confirmation of a command sent before the last validation, and a lamp that cannot light
        would otherwise be told again forever; `awaiting` says what the light should show."""
        hits = self.lit_seats().get(inp.seat, [])
        rule = self.spec.light_rule(hits[0].rule if hits else "")
        payload: dict[str, Any] = {
            "seat": inp.seat,
            "on": inp.on,
            "device_id": inp.device_id,
            "hits": [h.hit for h in hits],
            "awaiting": bool(hits),
        }
        if hits and not inp.on:
            payload["remedy"] = (
                "the seat's light is out while its jackpot awaits validation: the dealer cannot "
                "verify it; check the station's lamp (it is lit again when the station comes back)"
            )
        self.emit("progressive.light", rule, payload)

    # -- the sign ----------------------------------------------------------------------------------

    def sign_event(self, kind: str, why: str = "") -> None:
        if kind == "down":
            self.lock_progressive("sign", f"the progressive sign is unavailable ({why})")
        else:
            self.unlock_progressive("sign")

    if TYPE_CHECKING:

        def handle(self, inp: Input) -> None: ...
