"""A progressive hit awaiting validation: the round held, the winner's seat lit, and the payment once a floorperson
validated the hit through a signed command.

Validation holds the round: 655a.11(i)(1) and 643a.11(f)(3)(iii)/(iv) put the floorperson's validation ((iii),
(C)) before the payment ((iv), (D)), and a percentage-of-meter award is not paid from the table inventory
container, so the winning hand stays on the table until the documentation is done. The round is therefore
not complete (no `round.completed`, no shuffle, no next round) until every hit of it is validated.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from controller.core.settlement import Settled
from controller.engine import accounts, boundary
from controller.engine.commands import LightSeat, SendLink
from controller.engine.context import StepContext
from controller.engine.inputs import ValidateJackpot
from controller.engine.state import LinkRequest, PendingHit, Phase
from drivers.interfaces import SeatLight

JACKPOT_BLOCK = "jackpot"


# What the electronic wagering system pays to the game account (655a.11(i)(3)(iii), 643a.11(f)(3)(v)(C)).
ACCOUNT_WAGERS = ("five_card_hand_bonus", "magic_card_bonus", "lucky_bonus")
# "500 for 1": a floorperson or above verifies it before it is credited (655a.11(i)(3)(ii), 643a.11(f)(3)(v)(B)).
VERIFIED_ODDS = "500 for 1"


def credit_accounts(ctx: StepContext, rows: Sequence[Settled]) -> None:
    """Each win of a wager made from a game account, credited in the settlement's order: the winnings and the wager
    (605a.2(d)(2)). A share of the meter is not (it is a progressive hit, paid with documentation: the hand stays on
    the table); a 500 for 1 payout waits for a floorperson's verification, held like a hit."""
    for x in rows:
        if x.wager not in ACCOUNT_WAGERS or x.outcome != "win" or x.paid + x.returned <= 0:
            continue
        if "% of" in (x.odds or ""):
            continue  # taken from the meter by progressive.take_hits: documentation, never the account
        amount = x.paid + x.returned
        if x.odds == VERIFIED_ODDS:
            hit = PendingHit(
                hit=f"{ctx.r.round_id}-h{len(ctx.s.pending_hits) + 1}",
                seat=x.seat,
                level=x.wager,
                wager=x.wager,
                amount_cents=amount,
                percent=0,
                rule=x.rule,
                documentation=False,
                to_account=True,
            )
            ctx.s.pending_hits.append(hit)
            ctx.emit(
                "account.verification_requested",
                ctx.spec.verification_rule(),
                {
                    "hit": hit.hit,
                    "seat": x.seat,
                    "wager": x.wager,
                    "odds": x.odds,
                    "amount": amount,
                    "remedy": "a floorperson or above verifies it with a signed validate_jackpot command "
                    f"(seat {x.seat}, level {x.wager}); it is then credited to the game account",
                },
            )
            continue
        accounts.credit(ctx, x.seat, x.wager, amount, x.rule, x.note or "")


def hold_for_jackpot(ctx: StepContext, done: dict[str, Any]) -> bool:
    """True when the round's completion waits for jackpot validations (stored with the round)."""
    mine = [h for h in ctx.s.pending_hits if h.hit.startswith(ctx.r.round_id + "-")]
    if not mine:
        return False
    ctx.r.completion = done
    ctx.s.phase = Phase.JACKPOT
    ctx.s.blocks[JACKPOT_BLOCK] = "jackpot awaiting validation: " + ", ".join(
        f"seat {h.seat} {h.level} ({h.hit})" for h in mine
    )
    return True


def validate_jackpot(ctx: StepContext, v: ValidateJackpot) -> None:
    """A floorperson or above validates a hit: it is paid, the seat's light goes out, and once the round's last hit
    is paid the round completes."""
    found = _hit_to_validate(ctx, v)
    if found is None:
        return
    ctx.s.pending_hits = [h for h in ctx.s.pending_hits if h is not found]
    if found.to_account:
        ctx.emit(
            "account.verified",
            found.rule,
            {"hit": found.hit, "seat": found.seat, "wager": found.wager, "by": v.key_id, "role": v.role},
        )
        accounts.credit(ctx, found.seat, found.wager, found.amount_cents, found.rule, f"verified by {v.key_id}")
    else:
        _paid_from_meter(ctx, found, v)
    ctx.command(LightSeat(found.seat, on=False))
    if ctx.s.pending_hits:
        ctx.s.blocks[JACKPOT_BLOCK] = "jackpot awaiting validation: " + ", ".join(
            f"seat {h.seat} {h.level} ({h.hit})" for h in ctx.s.pending_hits
        )
        return
    ctx.s.blocks.pop(JACKPOT_BLOCK, None)
    ctx.emit(
        "table.block_cleared",
        None,
        {"block": JACKPOT_BLOCK, "by": f"{v.role} {v.key_id}", "remaining": dict(ctx.s.blocks)},
    )
    if ctx.s.phase is Phase.JACKPOT and ctx.s.round is not None:
        done = ctx.r.completion or {}
        ctx.r.completion = None
        ctx.emit("round.completed", ctx.rule("complete"), done)
        boundary.round_over(ctx)


def _paid_from_meter(ctx: StepContext, found: PendingHit, v: ValidateJackpot) -> None:
    # The validation is (C) of the wager hit; its payment, below, is (D) (643a.11(f)(3)(iii), (iv)).
    ctx.emit(
        "progressive.validated",
        ctx.spec.validation_rule(found.rule),
        {"hit": found.hit, "seat": found.seat, "level": found.level, "by": v.key_id, "role": v.role},
    )
    ctx.emit(
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
    # The hit's id is "<round>-h<n>" (progressive._take_linked_hit): the link keys its hits by that round.
    _report_paid(ctx, found.hit.rsplit("-h", 1)[0], found.seat, found.level, found.amount_cents, v.key_id, found.rule)


def lit_seats(ctx: StepContext) -> dict[int, list[PendingHit]]:
    """Seats whose light must be lit: those with a hit awaiting validation."""
    out: dict[int, list[PendingHit]] = {}
    for h in ctx.s.pending_hits:
        out.setdefault(h.seat, []).append(h)
    return out


def relight(ctx: StepContext, seat: int) -> None:
    """A station that came back may have lost power (and its light) meanwhile: light it again while its hit
    awaits validation, so the dealer can still verify the light before the floorperson validates."""
    if seat in lit_seats(ctx):
        ctx.command(LightSeat(seat, on=True))


def reissue_lights(ctx: StepContext, reachable: Sequence[int]) -> None:
    """After a restart the stations' lights are unknown: the light_on of a pending hit, or the light_off of a
    validated one, may never have left the process. Every reachable station is told what it must show."""
    lit = lit_seats(ctx)
    for n in reachable:
        ctx.command(LightSeat(n, on=n in lit))


def seat_light(ctx: StepContext, inp: SeatLight) -> None:
    """A station's confirmation of its light, journaled for the examiner beside the hit it shows. A report
    that disagrees with the pending hits is journaled as it is and not answered with another command: it is
    usually the confirmation of a command sent before the last validation, and a lamp that cannot light
    would otherwise be told again forever; `awaiting` says what the light should show."""
    hits = lit_seats(ctx).get(inp.seat, [])
    rule = ctx.spec.light_rule(hits[0].rule if hits else "")
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
    ctx.emit("progressive.light", rule, payload)


def _hit_to_validate(ctx: StepContext, v: ValidateJackpot) -> PendingHit | None:
    """The pending hit the command names, or None once the refusal is recorded (role, unknown hit, wrong seat)."""
    what = f"validate jackpot seat {v.seat} {v.level} {v.hit}"
    if v.role not in ("floorperson", "supervisor", "manager"):
        rule = ctx.spec.validation_rule(next((h.rule for h in ctx.s.pending_hits if h.hit == v.hit), ""))
        ctx.refused(
            what,
            f"role {v.role!r} may not validate a progressive payout: a floorperson or above must ({rule})",
            rule,
        )
        return None
    found = next((h for h in ctx.s.pending_hits if h.hit == v.hit), None)
    if found is None:
        waiting = ", ".join(f"{h.hit} (seat {h.seat} {h.level})" for h in ctx.s.pending_hits) or "none"
        ctx.refused(what, f"no jackpot {v.hit!r} awaits validation (awaiting: {waiting})", None)
        return None
    if found.seat != v.seat or found.level != v.level:
        ctx.refused(
            what,
            f"jackpot {v.hit} is seat {found.seat}'s {found.level}, not seat {v.seat}'s "
            f"{v.level}: check the hit and send it again",
            None,
        )
        return None
    return found


def _report_paid(ctx: StepContext, round_id: str, seat: int, level: str, amount_cents: int, by: str, rule: str) -> None:
    """A linked hit validated and paid here (655a.11(i)(1)(iii)-(iv)): the link is told, from the outbox like a claim,
    so its books close the hit and every linked sign drops it without a second signature at the link. Put in the
    outbox by the step that journals the payment, sent until the link acknowledges it; the link's key (table, round,
    seat, level) makes a resend change nothing."""
    if ctx.setup.link is None:
        return
    key = f"paid:{round_id}:{seat}:{level}"
    ctx.s.link_outbox[key] = LinkRequest(
        key, "paid", round_id, seat=seat, level=level, amount_cents=amount_cents, by=by, rule=rule
    )
    ctx.emit(
        "link.paid_sent",
        rule,
        {"link": ctx.setup.link, "key": key, "seat": seat, "level": level, "amount": amount_cents, "by": by},
    )
    ctx.command(SendLink())
