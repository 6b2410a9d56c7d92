"""A covered device's latest report (.13(g)). While a shuffler or shoe is "covered or [has] a sign indicating that
[it] is out of order", nothing it says holds the table: its faults, jams and absence are ignored, the cover being the
record. But what it said last is kept with the state (`TableState.covered_reports`), so that a signed back_in_service
of a device that is not answering, or is in fault, is refused with the reason, since when and what to do, instead of
dealing a round from it whose first dispense voids it (.13(f)). Healthy (docs/rules.md): the device's latest report
is not its going offline, and it has no fault outstanding of those that would hold it in service; a restart keeps a
fault, which the device's start-up identification does not clear (as for a device held in service)."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

from controller.engine.context import StepContext
from controller.engine.state import CoveredReport, HeldFault

SHUFFLER_FAULTS = {"jam", "stopped", "incomplete"}  # .13(e)
SHOE_FAULTS = {"jam", "stopped", "empty", "misfeed"}  # .13(f)
# The shoe faults that outlast the dispense they stop: "empty" is refilled by the next shuffle, these need a hand.
SHOE_STUCK = SHOE_FAULTS - {"empty"}


def outstanding(ctx: StepContext, dev: str, code: str) -> bool:
    """Would `code` hold the device were it in service (controller/engine/device_holds.py): any fault of the shuffler;
    for the shoe, not "empty" (the next shuffle refills it), nor a manual shoe's .13(f) faults (recorded only), nor a
    foreign card (the shoe read what it was given)."""
    if code == "foreign_card":
        return False
    if dev == "shoe" and code in SHOE_FAULTS:
        shoe = ctx.setup.method if ctx.setup.method != "hand" else ctx.opts.fallback_dealing_method
        return shoe == "automated_shoe" and code in SHOE_STUCK
    return True


def at_cover(ctx: StepContext, dev: str, down: str | None, held: HeldFault | None) -> None:
    """The mark takes over the hold: a device held in fault or offline when covered is still so until it says
    otherwise (its hold no longer stops the table, but it cannot be put back in service as it is)."""
    ctx.s.covered_reports.pop(dev, None)
    if held is not None:
        ctx.s.covered_reports[dev] = CoveredReport(fault=held)
    elif down is not None:
        ctx.s.covered_reports[dev] = CoveredReport(offline=down, offline_since=ctx.s.now)


def fault(ctx: StepContext, dev: str, code: str, detail: str) -> None:
    if not outstanding(ctx, dev, code):
        return
    old = ctx.s.covered_reports.get(dev, CoveredReport())
    held = old.fault
    if held is None:
        held = HeldFault(code, detail, ctx.s.now, ctx.s.rounds_played, codes=(code,))
    elif code not in held.uncleared:
        held = replace(held, codes=(*held.uncleared, code))
    # A device that reports a fault answers: it is in fault, no longer offline.
    ctx.s.covered_reports[dev] = CoveredReport(fault=held)


def offline(ctx: StepContext, dev: str, why: str) -> None:
    old = ctx.s.covered_reports.get(dev, CoveredReport())
    if old.offline is None:
        ctx.s.covered_reports[dev] = replace(old, offline=why, offline_since=ctx.s.now)


def online(ctx: StepContext, dev: str) -> None:
    """It identified: it answers. A fault kept across a restart stands through its start-up identification (which
    says nothing of the fault), and lifts at the next; otherwise the identification of a device cleared and restarted
    clears its faults, as it lifts a hold in service."""
    old = ctx.s.covered_reports.get(dev)
    if old is None:
        return
    if old.fault is not None and old.fault.restarted:
        ctx.s.covered_reports[dev] = CoveredReport(fault=replace(old.fault, restarted=False))
    else:
        del ctx.s.covered_reports[dev]


def cleared(ctx: StepContext, dev: str, code: str) -> str | None:
    """The device says a fault is cleared: noted, if it had reported it while covered (what the `input.ignored`
    adds: nothing it says holds the table while it is covered); None if it had not."""
    old = ctx.s.covered_reports.get(dev)
    if old is None or old.fault is None or code not in old.fault.uncleared:
        return None
    left = tuple(c for c in old.fault.uncleared if c != code)
    ctx.s.covered_reports[dev] = replace(old, fault=replace(old.fault, codes=left) if left else None)
    if ctx.s.covered_reports[dev] == CoveredReport():
        del ctx.s.covered_reports[dev]
    still = f"still in fault {', '.join(left)}" if left else "no fault outstanding: it can be put back in service"
    return f"the {dev} marked out of order said fault {code} cleared: noted ({still})"


def restarted(ctx: StepContext) -> None:
    """At a restart: a covered device's fault stands through its start-up identification."""
    for dev, report in sorted(ctx.s.covered_reports.items()):
        if report.fault is not None:
            ctx.s.covered_reports[dev] = replace(report, fault=replace(report.fault, restarted=True))


def when(at: datetime | None) -> str:
    if at is None:
        return ""
    utc = at.astimezone(UTC) if at.tzinfo is not None else at
    return f" since {utc:%Y-%m-%d %H:%M:%S} UTC"


def status(report: CoveredReport) -> dict[str, Any]:
    """The device's status as the refusal shows it."""
    if report.offline is not None:
        return {"state": "offline", "reason": report.offline, "since": iso(report.offline_since)}
    held = report.fault
    return {
        "state": "fault",
        "faults": list(held.uncleared) if held else [],
        "detail": held.detail if held else "",
        "since": iso(held.since) if held else None,
        "restarted": held.restarted if held else False,
    }


def iso(at: datetime | None) -> str | None:
    return at.isoformat() if at is not None else None


def words(dev: str, report: CoveredReport) -> str:
    """Why the device cannot be put back in service, since when, and what to do."""
    if report.offline is not None:
        return (
            f"the {dev} is {report.offline}{when(report.offline_since)}: reconnect it so that it identifies again, "
            f"or leave it covered"
        )
    held = report.fault
    if held is None:
        return f"the {dev} is not answering: leave it covered until it identifies"
    codes = held.uncleared
    said = f"fault{'s' if len(codes) > 1 else ''} {', '.join(codes)}" + (f" ({held.detail})" if held.detail else "")
    restart = (
        "; the table restarted since, and its identification at start-up does not say the fault was cleared"
        if held.restarted
        else ""
    )
    return (
        f"the {dev} reported {said}{when(held.since)} and has not said it is cleared{restart}: clear it (the {dev} "
        f"says the fault is cleared, or is cleared and restarted and identifies again), or leave it covered"
    )


def refusal(ctx: StepContext, dev: str) -> tuple[str, dict[str, Any]] | None:
    """The reason a back_in_service of `dev` is refused, and the device's status; None when it reports healthy."""
    report = ctx.s.covered_reports.get(dev)
    if report is None:
        return None
    return words(dev, report), status(report)
