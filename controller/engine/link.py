"""A linked progressive at the table (docs/linked-progressives.md, "The table side"): the link controller keeps the
meters; the table takes progressive wagers only while it holds a fresh lease, sends each lock-out's contributions
and each hit's claim from its outbox (the engine state, journaled with the step that made them) until the link
acknowledges them, waits at the winner's turn for the claim's answer, and shows what the link broadcasts.

605a.8's text is not available: NY 9 NYCRR 5321.18 is the stand-in (`LINK_RULE`). Pure, like the rest of the
engine: the shell's link client (controller/shell/link_client.py) does the MQTT and feeds the answers back in.
"""

from __future__ import annotations

from collections.abc import Sequence

from controller.core.settlement import Settled
from controller.engine.commands import SendLink, ShowLevels
from controller.engine.context import StepContext
from controller.engine.inputs import LinkAnswered, LinkBroadcast, LinkLease
from controller.engine.progressive import LINK_RULE, lock_link, meter_award, show_link, unlock_progressive
from controller.engine.state import LinkAward, LinkRequest, Phase

__all__ = ["LINK_RULE", "answered", "broadcast", "claims_waiting", "lease", "restarted"]


def lease(ctx: StepContext, inp: LinkLease) -> None:
    """A lease granted (progressive wagers reopen, unless the link's levels are not this table's) or lapsed."""
    if ctx.setup.link is None:
        ctx.ignored("link lease", "this table is not on a linked progressive ([progressive] link)")
        return
    if not inp.fresh:
        lock_link(ctx, inp.why or "the lease lapsed")
        return
    ours = sorted(ctx.setup.meter_params.levels)
    if inp.levels and not set(ours) <= set(inp.levels):
        lock_link(
            ctx,
            f"link {ctx.setup.link} keeps levels {sorted(inp.levels)}, this table pays {ours}: make the link's "
            "[[progressive]] levels the table's paytable's (tablectl check-config with [progressive] link_config)",
        )
        return
    ctx.s.link_lease = True
    if "link" in ctx.s.progressive_lockout:
        ctx.emit("link.up", LINK_RULE, {"link": ctx.setup.link, "was": ctx.s.progressive_lockout["link"]})
        unlock_progressive(ctx, "link")
        show_link(ctx)


def restarted(ctx: StepContext) -> None:
    """After a restart the lease is unknown: locked out until the link grants one; the outbox is sent again."""
    if ctx.setup.link is None:
        return
    lock_link(ctx, "the table restarted: awaiting the link's lease")
    if ctx.s.link_outbox:
        ctx.command(SendLink())


def answered(ctx: StepContext, inp: LinkAnswered) -> bool:
    """The link's answer to a request of the outbox. True when it answered the claim settlement waits for."""
    req = ctx.s.link_outbox.get(inp.key)
    if req is None:
        return False  # a second answer to a resent request: the first one was taken, nothing changes
    if not inp.ok:
        _refused(ctx, req, inp.error)
        return False
    del ctx.s.link_outbox[inp.key]
    if req.kind == "contribute":
        ctx.emit(
            "link.contribution_acknowledged",
            LINK_RULE,
            {
                "link": ctx.setup.link,
                "key": inp.key,
                "round": req.round_id,
                "new": inp.new,
                "duplicates": inp.duplicates,
            },
        )
        return False
    if req.kind == "paid":
        ctx.emit(
            "link.paid_acknowledged",
            LINK_RULE,
            {"link": ctx.setup.link, "key": inp.key, "round": req.round_id, "seat": req.seat, "level": req.level},
        )
        return False
    award = LinkAward(inp.amount_cents, inp.order, inp.meter_before_cents, inp.meter_after_cents)
    ctx.emit(
        "link.claim_answered",
        LINK_RULE,
        {
            "link": ctx.setup.link,
            "key": inp.key,
            "seat": req.seat,
            "level": req.level,
            "amount": award.amount_cents,
            "order": award.order,
            "meter_before": award.meter_before_cents,
            # A link older than the field says nothing of it: the event then says nothing either.
            **({"meter_after": award.meter_after_cents} if award.meter_after_cents is not None else {}),
            **_wager_included(ctx, req, award.amount_cents),
        },
    )
    r = ctx.s.round
    if r is None or r.round_id != req.round_id:
        return False
    r.link_awards[f"{req.seat}:{req.level}"] = award
    return ctx.s.phase is Phase.CLAIMING


def _wager_included(ctx: StepContext, req: LinkRequest, amount: int) -> dict[str, object]:
    """The link's amount is the whole award, the wager included, as "N for 1" odds are (655a.12(c)(1)): the table
    settles it as `paid` (the amount less the wager) and `returned` (the wager), so progressive.settled's `paid` is
    the wager less than this answer's `amount`. Said here so a reader of the two events sees why."""
    spot = next((p.wager for p in ctx.setup.meter_params.progressives if req.level in {v.level for v in p.levels}), "")
    r = ctx.s.round
    seat = r.seats.get(req.seat) if r is not None and r.round_id == req.round_id else None
    wager = seat.wagers.get(spot, 0) if seat is not None else 0
    return {"wager": wager, "wager_included": True, "paid_besides_wager": amount - wager}


def _refused(ctx: StepContext, req: LinkRequest, error: str) -> None:
    # The link refuses only what it cannot take (an unknown table, a wager spot it keeps no meter for): a
    # configuration that disagrees with the link's. Progressive play stops here until that is fixed; the request
    # stays in the outbox and is sent again, so nothing is lost once the link's config takes it.
    why = f"link {ctx.setup.link} refused {req.key}: {error}"
    if ctx.s.progressive_lockout.get("link_refused") == why:
        return
    ctx.s.progressive_lockout["link_refused"] = why
    ctx.emit(
        "link.refused",
        LINK_RULE,
        {
            "link": ctx.setup.link,
            "key": req.key,
            "error": error,
            "remedy": "make the table's [progressive] and the link's [[tables]] and [[progressive]] agree "
            "(tablectl check-config); the request is sent again until the link takes it",
        },
    )


def broadcast(ctx: StepContext, inp: LinkBroadcast) -> None:
    """The link's meters and pending jackpots, for this table's sign (every linked sign shows them, 5321.18)."""
    if ctx.setup.link is None:
        return
    display = {k: v for k, v in inp.display.items() if k in ctx.setup.meter_params.levels}
    if display and display != ctx.s.link_display:
        ctx.s.link_display = {**ctx.s.link_display, **display}
        ctx.command(ShowLevels(dict(ctx.s.link_display)))
    if inp.jackpots is not None and list(inp.jackpots) != ctx.s.link_jackpots:
        ctx.s.link_jackpots = list(inp.jackpots)
        ctx.emit(
            "link.jackpots_pending",
            LINK_RULE,
            {
                "link": ctx.setup.link,
                "pending": [
                    {"table_id": j.table_id, "asset_number": j.asset_number, "level": j.level, "amount": j.amount_cents}
                    for j in inp.jackpots
                ],
            },
        )
        show_link(ctx)


def claims_waiting(ctx: StepContext, rows: Sequence[Settled]) -> bool:
    """At settlement of a linked table: each meter award is claimed from the link at that player's turn, in the
    settlement's order, one at a time (the next claim sees the meter the last one left). True while a claim's answer
    is awaited: settlement resumes when it comes (LinkAnswered)."""
    if ctx.setup.link is None:
        return False
    r = ctx.r
    for x in rows:
        award = meter_award(ctx, x)
        if award is None or f"{x.seat}:{award[1]}" in r.link_awards:
            continue
        percent, level = award
        key = f"claim:{r.round_id}:{x.seat}:{level}"
        if key not in ctx.s.link_outbox:
            ctx.s.link_outbox[key] = LinkRequest(
                key, "claim", r.round_id, seat=x.seat, level=level, percent=percent, rule=x.rule
            )
            ctx.emit(
                "link.claim_sent",
                x.rule,
                {
                    "link": ctx.setup.link,
                    "key": key,
                    "seat": x.seat,
                    "level": level,
                    "percent": percent,
                    "stand_in": LINK_RULE,
                },
            )
        ctx.s.phase = Phase.CLAIMING
        ctx.command(SendLink())
        return True
    return False
