"""Progressive meters in the round: seeded at the first open, fed at the lock-out, taken back by a void, hit at
each winner's turn (the validation that pays a hit: controller/engine/jackpot.py), and the sign that shows them.

The meter model (controller.progressive.model) is the truth for the meters: the engine keeps its state in
TableState.meters (restored and replayed with the rest of the state) and journals the `meter.*` events it
returns. The chapter's settle() computes the same awards from the meters as they stand at settlement; the two
are compared at every hit (docs/progressive.md, "Reseed", for the one case they may differ).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import replace

from controller.core.events import DomainEvent
from controller.core.invariant import present
from controller.core.settlement import Settled
from controller.engine.commands import LightSeat, SendLink, ShowLevels, ShowLink, ShowWin
from controller.engine.context import StepContext
from controller.engine.state import LinkAward, LinkContribution, LinkRequest, PendingHit
from controller.progressive import meters as model
from controller.progressive.model import MICRO, MeterError, Meters, PercentOfMeter

# What a chapter's meter award reads as in a settled row: "100% of the mega meter" (655a) or "10% of meter"
# (643a, where the wager spot names its meter). The level as LEVEL_PATTERN spells it: ASCII letters, where \w would
# take every Unicode letter.
_SHARE = re.compile(r"^([0-9]+)% of (?:the ([a-z_]{1,32}) )?meter$")


def meter_events(ctx: StepContext, events: Sequence[DomainEvent], meters: Meters) -> None:
    ctx.s.meters = meters
    rid = ctx.s.round.round_id if ctx.s.round else None
    for ev in events:
        ctx.out.append(ev if ev.round_id is not None or rid is None else replace(ev, round_id=rid))


def seed_meters(ctx: StepContext) -> None:
    """A new table (or a meter the config added) is seeded, journaled; a seeded meter is never seeded again. A
    linked table keeps no meters of its own (the link controller does): it waits for the link's lease instead."""
    params = ctx.setup.meter_params
    if ctx.setup.link is not None:
        if params.levels and not ctx.s.link_lease:
            lock_link(ctx, f"no lease from link {ctx.setup.link} yet")
        return
    if not params.levels or "meters" in ctx.s.progressive_lockout:
        return  # a store that failed validation is never replaced by fresh seeds
    meters, events = model.seed_missing(ctx.s.meters or Meters(), params)
    meter_events(ctx, events, meters)


def progressive_refusal(ctx: StepContext, spot: str, amount: int) -> str | None:
    """Why a progressive wager is refused now, or None (not a progressive wager, or taken)."""
    if spot not in ctx.setup.meter_wagers:
        return None
    if ctx.s.progressive_lockout:
        return (
            "progressive wagering is locked out: "
            + "; ".join(ctx.s.progressive_lockout.values())
            + " (it reopens when the meters and the sign are available)"
        )
    sizes = ctx.spec.wager_sizes(ctx.rules, spot)
    if amount and sizes is not None and amount not in sizes:
        return f"a {spot} wager is one of {', '.join(map(str, sizes))} cents at this table"
    return None


# The stand-in for 605a.8, whose text is not available (docs/linked-progressives.md).
LINK_RULE = "605a.8 (not available; NY 9 NYCRR 5321.18 as the stand-in)"


def lock_link(ctx: StepContext, why: str) -> None:
    """Progressive wagers locked out because the link is down (5321.18: a table's progressive becomes unplayable
    when it loses communication with the controller or the controller is inoperable); the sign says so."""
    ctx.s.link_lease = False
    reason = f"link down: {why}"
    if not ctx.setup.meter_wagers or ctx.s.progressive_lockout.get("link") == reason:
        return
    fresh = "link" not in ctx.s.progressive_lockout
    ctx.s.progressive_lockout["link"] = reason
    if fresh:
        ctx.emit(
            "progressive.locked_out",
            LINK_RULE,
            {
                "reason": "link down",
                "detail": why,
                "link": ctx.setup.link,
                "reasons": dict(ctx.s.progressive_lockout),
                "wagers": list(ctx.setup.meter_wagers),
                "remedy": "progressive wagers are refused until the link controller grants a lease again; "
                "the rest of the game goes on",
            },
        )
        show_link(ctx)


def show_link(ctx: StepContext) -> None:
    up = "link" not in ctx.s.progressive_lockout
    message = "LINKED PROGRESSIVE" if up else "PROGRESSIVE CLOSED: LINK DOWN"
    pending = tuple((j.asset_number, j.level, j.amount_cents) for j in ctx.s.link_jackpots)
    ctx.command(ShowLink(up, message, pending))


def lock_progressive(ctx: StepContext, key: str, why: str) -> None:
    if not ctx.setup.meter_wagers or ctx.s.progressive_lockout.get(key) == why:
        return
    ctx.s.progressive_lockout[key] = why
    ctx.emit(
        "progressive.locked_out",
        ctx.spec.lockout_rule(),
        {
            "reason": why,
            "reasons": dict(ctx.s.progressive_lockout),
            "wagers": list(ctx.setup.meter_wagers),
            "remedy": "progressive wagers are refused at the wager stations; the rest of the game goes on",
        },
    )


def unlock_progressive(ctx: StepContext, key: str) -> None:
    if ctx.s.progressive_lockout.pop(key, None) is None:
        return
    if ctx.s.progressive_lockout:
        return
    ctx.emit("progressive.unlocked", ctx.spec.lockout_rule(), {"cleared": key})
    show_levels(ctx)


def contribute_wagers(ctx: StepContext) -> None:
    """At the lock-out every progressive wager of the round's players is collected and contributes
    (655a.8(b), 643a.8(b)(2)), seat by seat clockwise. A linked table's go to the link's outbox."""
    if ctx.setup.link is not None:
        _contribute_linked(ctx)
        return
    if ctx.s.meters is None or not ctx.setup.meter_wagers:
        return
    r = ctx.r
    meters, events = ctx.s.meters, []
    for n in r.players:
        for spot, amount in sorted(r.seats[n].wagers.items()):
            if spot in ctx.setup.meter_wagers:
                meters, more = model.contribute(
                    meters, ctx.setup.meter_params, spot, amount, seat=n, round_id=r.round_id
                )
                events += more
    if events:
        meter_events(ctx, events, meters)
        show_levels(ctx)


def _contribute_linked(ctx: StepContext) -> None:
    """One `contribute` request per lock-out, keyed by the round: kept in the outbox (the engine state, journaled
    with this step) and sent until the link acknowledges it, so a kill -9 of either side loses and doubles nothing."""
    r = ctx.r
    rows = tuple(
        LinkContribution(n, spot, amount)
        for n in r.players
        for spot, amount in sorted(r.seats[n].wagers.items())
        if spot in ctx.setup.meter_wagers and amount > 0
    )
    if not rows:
        return
    key = f"contribute:{r.round_id}"
    ctx.s.link_outbox[key] = LinkRequest(key, "contribute", r.round_id, rows)
    ctx.emit(
        "link.contribution_sent",
        ctx.spec.lockout_rule(),
        {
            "link": ctx.setup.link,
            "key": key,
            "contributions": [{"seat": c.seat, "wager": c.wager, "cents": c.cents} for c in rows],
            "cents": sum(c.cents for c in rows),
            "stand_in": LINK_RULE,
        },
    )
    ctx.command(SendLink())


def reverse_progressive_contributions(ctx: StepContext, rule: str, returned: Mapping[str, Mapping[str, int]]) -> None:
    """A void returns the progressive wagers, so the meters take back exactly what they contributed. A linked
    table's contributions are final once sent: the link keeps them (docs/linked-progressives.md, "A void")."""
    wagers = {
        seat: {spot: amount for spot, amount in w.items() if spot in ctx.setup.progressive}
        for seat, w in returned.items()
    }
    wagers = {seat: w for seat, w in wagers.items() if w}
    if ctx.setup.link is not None:
        key = f"contribute:{ctx.r.round_id}" if ctx.s.round is not None else ""
        sent = ctx.s.link_outbox.get(key)
        acknowledged = sent is None and key != "" and any(wagers.values())
        if wagers:
            ctx.emit(
                "progressive.contributions_kept",
                LINK_RULE,
                {
                    "wagers": wagers,
                    "link": ctx.setup.link,
                    "acknowledged": acknowledged,
                    "reason": "a linked contribution is final once sent to the link controller: the returned "
                    "progressive wagers are funded by the house, the link's meter keeps what they contributed "
                    f"(the Rules Submission says so; {rule} returns the wagers)",
                },
            )
        return
    if ctx.s.meters is None or ctx.s.round is None:
        if wagers:
            ctx.emit("progressive.contributions_reversed", rule, {"wagers": wagers, "contributions": {}})
        return
    try:
        meters, events = model.void_round(ctx.s.meters, ctx.r.round_id, rule=rule)
    except MeterError as err:  # cannot happen before settlement, where the hits are; never lose it silently
        ctx.block("tilt:meters", str(err))
        ctx.emit("progressive.reversal_refused", rule, {"reason": str(err)})
        return
    if not wagers and not events:
        return  # nothing was contributed this round: nothing to take back, nothing to report
    contributions = {str(e.payload["level"]): e.payload["delta"] for e in events}
    ctx.emit("progressive.contributions_reversed", rule, {"wagers": wagers, "contributions": contributions})
    if events:
        meter_events(ctx, events, meters)
        show_levels(ctx)


def meter_values(ctx: StepContext) -> dict[str, int]:
    if ctx.setup.link is not None:
        # The link's meters as last heard (a level not heard of yet reads 0: the claim's answer pays, not this).
        return {level: ctx.s.link_display.get(level, 0) for level in ctx.setup.meter_params.levels}
    return ctx.s.meters.display() if ctx.s.meters is not None else {}


def meter_carry(ctx: StepContext) -> dict[str, int]:
    """By level, the reserve and the display's fraction of a cent (micro-cents): what a reseed restarts from, so the
    chapter's settlement (and `tablectl settle` from the recorded round) reseeds as the model does."""
    if ctx.s.meters is None:
        return {}
    out = {}
    for level in ctx.s.meters.display():
        lv = ctx.s.meters.level(level)
        carry = lv.reserve_micro + lv.display_micro % MICRO
        if carry:
            out[level] = carry
    return out


def show_levels(ctx: StepContext) -> None:
    """The sign shows the meters as this step leaves them (carried in the command: the shell reads no state)."""
    values = meter_values(ctx)
    if ctx.setup.link is None or ctx.s.link_display:
        ctx.command(ShowLevels(values))


def take_hits(ctx: StepContext, rows: Sequence[Settled]) -> list[Settled]:
    """Each meter award, in the settlement's (counterclockwise) order, from the meter as it stands at that
    turn; the rows get the model's amounts (equal to the chapter's but for a reseed funded by a reserve). A linked
    table's awards are what the link controller answered to each claim (controller/engine/link.py)."""
    if ctx.setup.link is not None:
        out_linked = []
        for x in rows:
            award = meter_award(ctx, x)
            found = ctx.r.link_awards.get(f"{x.seat}:{award[1]}") if award is not None else None
            out_linked.append(x if award is None or found is None else _take_linked_hit(ctx, x, *award, found))
        return out_linked
    if ctx.s.meters is None:
        return list(rows)
    out: list[Settled] = []
    for x in rows:
        m = _SHARE.fullmatch(x.odds or "") if x.outcome == "win" and x.wager in ctx.setup.meter_wagers else None
        out.append(x if m is None else _take_hit(ctx, x, int(m.group(1)), m.group(2) or x.wager))
    if ctx.s.meters is not None:
        meters, events = model.close_round(ctx.s.meters, ctx.r.round_id)
        meter_events(ctx, events, meters)
    show_levels(ctx)
    return out


def meter_award(ctx: StepContext, x: Settled) -> tuple[int, str] | None:
    """(percent, level) of a settled row that is a share of a meter, else None."""
    m = _SHARE.fullmatch(x.odds or "") if x.outcome == "win" and x.wager in ctx.setup.meter_wagers else None
    return None if m is None else (int(m.group(1)), m.group(2) or x.wager)


def _take_linked_hit(ctx: StepContext, x: Settled, percent: int, level: str, award: LinkAward) -> Settled:
    """The link's award for this seat's hit: held for validation at this table, the seat lit, the sign told."""
    r = ctx.r
    share = award.amount_cents
    if share != x.paid + x.returned:
        x = replace(
            x, paid=share - x.amount, note=f"{x.note or ''}; paid {share} by link {ctx.setup.link}".lstrip("; ")
        )
    hit = PendingHit(
        hit=f"{r.round_id}-h{len(ctx.s.pending_hits) + 1}",
        seat=x.seat,
        level=level,
        wager=x.wager,
        amount_cents=share,
        percent=percent,
        rule=x.rule,
        documentation=True,
    )
    ctx.s.pending_hits.append(hit)
    ctx.emit(
        "progressive.hit",
        ctx.spec.validation_rule(x.rule),
        {
            "hit": hit.hit,
            "seat": x.seat,
            "level": level,
            "wager": x.wager,
            "hand": x.hand,
            "percent": percent,
            "amount": share,
            "meter_before": award.meter_before_cents,
            # The link's meter after the award and its reseed, so a reader of the hit sees the sign restart; a link
            # older than its claim answer's meter_after_cents says nothing of it, and neither does this event then.
            **({"meter_after": award.meter_after_cents} if award.meter_after_cents is not None else {}),
            "link": ctx.setup.link,
            "order": award.order,
            "light_rule": ctx.spec.light_rule(x.rule),
            "documentation": "the award is a percentage of the link's meter, not paid from the table inventory "
            f"container ({x.rule}): the cards stay on the table until it is documented",
            "remedy": "a floorperson or above validates the hit with a signed validate_jackpot command",
        },
    )
    ctx.command(LightSeat(x.seat, on=True))
    ctx.command(ShowWin(level, share, x.seat))
    return x


def _take_hit(ctx: StepContext, x: Settled, percent: int, level: str) -> Settled:
    """One award taken from meter `level` at the player's turn: held for validation, the seat lit, the sign told."""
    r = ctx.r
    held = present(ctx.s.meters, "the progressive meters at a hit")
    before = held.level(level).display_cents
    meters, share, events = model.hit(
        held,
        ctx.setup.meter_params,
        level,
        PercentOfMeter(percent),
        seat=x.seat,
        round_id=r.round_id,
        rule=x.rule,
    )
    meter_events(ctx, events, meters)
    chapter_share = x.paid + x.returned
    if share != chapter_share:
        # The chapter reads the reseed as the model does (the reserve moves in, docs/progressive.md "Reseed"), so
        # only a meter limit the chapter does not model can make them differ: the model is the truth.
        x = replace(
            x,
            paid=share - x.amount,
            note=f"{x.note or ''}; paid {share} from the meter model "
            f"(the chapter's figure {chapter_share} assumed a reseed without reserve)".lstrip("; "),
        )
    hit = PendingHit(
        hit=f"{r.round_id}-h{len(ctx.s.pending_hits) + 1}",
        seat=x.seat,
        level=level,
        wager=x.wager,
        amount_cents=share,
        percent=percent,
        rule=x.rule,
        documentation=True,
    )
    ctx.s.pending_hits.append(hit)
    ctx.emit(
        "progressive.hit",
        ctx.spec.validation_rule(x.rule),
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
            "light_rule": ctx.spec.light_rule(x.rule),
            "documentation": "the award is a percentage of the meter, not paid from the table inventory "
            f"container ({x.rule}): the cards stay on the table until it is documented",
            "remedy": "a floorperson or above validates the hit with a signed validate_jackpot command",
        },
    )
    ctx.command(LightSeat(x.seat, on=True))
    ctx.command(ShowWin(level, share, x.seat))
    return x
