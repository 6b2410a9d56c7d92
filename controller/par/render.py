"""A par sheet as text, JSON or HTML (the HTML laid out as a lab files it: game, chapter, paytables with their
citations, every figure, the software digest). Pure string building: the caller writes it where it goes."""

from __future__ import annotations

import html
import json
from fractions import Fraction
from typing import Any

from controller.par.sheet import ParSheet, WagerSheet


def percent(x: Fraction) -> str:
    """An exact rational as a percentage to 6 significant digits past the point (e.g. 4.914858 %)."""
    return f"{float(x * 100):.6f} %"


def number(x: Fraction) -> str:
    return f"{float(x):.8g}"


def _rational(x: Fraction | None) -> dict[str, Any] | None:
    if x is None:
        return None
    return {"exact": f"{x.numerator}/{x.denominator}", "value": float(x)}


def warning(w: WagerSheet) -> str | None:
    """A wager the house pays out more on than it takes (a negative house edge): no operator means to offer one, so
    the sheet says it loudly rather than leaving a minus sign to be noticed."""
    if w.house_edge >= 0:
        return None
    return (
        f"WARNING: this wager returns more than it takes: {w.wager} pays the player {percent(-w.house_edge)} of each "
        "wager on average; check the paytable and the config before offering it"
    )


def as_dict(sheet: ParSheet) -> dict[str, Any]:
    def wager(w: WagerSheet) -> dict[str, Any]:
        out: dict[str, Any] = {
            "wager": w.wager,
            "title": w.title,
            "paytable": w.paytable,
            "unit": w.unit,
            "method": w.method,
            "house_edge": _rational(w.house_edge),
            "returns_more_than_it_takes": w.house_edge < 0,
            "hit_frequency": _rational(w.hit_frequency),
            "average_wager": _rational(w.average_wager),
            "element_of_risk": _rational(w.element_of_risk),
            "variance": _rational(w.variance),
            "standard_deviation": w.standard_deviation,
            "rows": [
                {
                    "row": r.name,
                    "pays": r.pays,
                    "probability": _rational(r.probability),
                    "contribution": _rational(r.contribution),
                }
                for r in w.rows
            ],
            "decisions": [{"point": d.point, "action": d.action, "share": _rational(d.share)} for d in w.decisions],
            "notes": list(w.notes),
        }
        if w.progressive is not None:
            p = w.progressive
            out["progressive"] = {
                "wager_cents": p.wager_cents,
                "meters_cents": p.meters_cents,
                "return_at_meters": _rational(p.return_at_meters),
                "levels": [
                    {
                        "level": line.level,
                        "base": _rational(line.base),
                        "per_cent_of_meter": _rational(line.slope),
                        "figures": line.reseed,
                        "rate": _rational(line.contribution_rate),
                        "break_even_meter_cents": _rational(p.break_even[line.level]),
                    }
                    for line in p.levels
                ],
            }
        return out

    return {
        "table_id": sheet.table_id,
        "chapter": sheet.chapter,
        "game": sheet.game,
        "wagers": [wager(w) for w in sheet.wagers],
        "strategy": [{"point": s.point, "rules": list(s.rules)} for s in sheet.strategy],
        "not_analysed": list(sheet.not_analysed),
        "software": sheet.software,
        "seconds": sheet.seconds,
    }


def as_json(sheet: ParSheet) -> str:
    return json.dumps(as_dict(sheet), indent=2)


def as_text(sheet: ParSheet) -> str:
    lines = [f"Par sheet: {sheet.game} (chapter {sheet.chapter}), table {sheet.table_id}", ""]
    for w in sheet.wagers:
        lines.append(f"{w.title} [{w.wager}], {w.paytable}")
        lines.append(f"  method: {w.method}")
        lines.append(f"  house edge {w.unit}: {percent(w.house_edge)}   (exact {w.house_edge})")
        if (warn := warning(w)) is not None:
            lines.append(f"  {warn}")
        lines.append(f"  hit frequency: {percent(w.hit_frequency)}")
        if w.standard_deviation is not None:
            lines.append(f"  standard deviation {w.unit}: {w.standard_deviation:.6f}")
        if w.average_wager is not None and w.element_of_risk is not None:
            lines.append(
                f"  average total wager: {number(w.average_wager)}   element of risk: {percent(w.element_of_risk)}"
            )
        lines.append(f"  {'row':<32} {'pays':<44} {'probability':>14} {'contribution':>14}")
        for r in w.rows:
            lines.append(f"  {r.name:<32} {r.pays[:44]:<44} {number(r.probability):>14} {number(r.contribution):>14}")
        for d in w.decisions:
            lines.append(f"  decision {d.point}: {d.action} on {percent(d.share)} of hands")
        if w.progressive is not None:
            p = w.progressive
            lines.append(f"  return at meters {p.meters_cents}: {percent(p.return_at_meters)}")
            for line in p.levels:
                be = p.break_even[line.level]
                lines.append(
                    f"  level {line.level}: return = {number(line.base)} + {number(line.slope)} x meter (cents); "
                    f"break-even meter {'none' if be is None else f'{float(be):,.0f} cents'}; {line.reseed}"
                )
        lines.extend(f"  note: {n}" for n in w.notes)
        lines.append("")
    for s in sheet.strategy:
        lines.append(f"Strategy, {s.point}:")
        lines.extend(f"  {rule}" for rule in s.rules)
        lines.append("")
    lines.extend(f"Not analysed: {n}" for n in sheet.not_analysed)
    lines.append(f"Software: {', '.join(f'{k} {v}' for k, v in sheet.software.items())}")
    return "\n".join(lines) + "\n"


_STYLE = """body{font-family:serif;max-width:60em;margin:2em auto}table{border-collapse:collapse;margin:.5em 0 1.5em}
td,th{border:1px solid #444;padding:.2em .5em}td.n{text-align:right;font-variant-numeric:tabular-nums}
h1{font-size:1.4em}h2{font-size:1.1em;border-bottom:1px solid #000}.meta td{border:none}
.warning{color:#a00;border:2px solid #a00;padding:.3em .5em}"""


def as_html(sheet: ParSheet) -> str:
    e = html.escape
    out = [
        "<!doctype html><html><head><meta charset='utf-8'>",
        f"<title>Par sheet {e(sheet.game)} {e(sheet.table_id)}</title><style>{_STYLE}</style></head><body>",
        f"<h1>Par sheet: {e(sheet.game)}</h1>",
        "<table class='meta'>",
        f"<tr><td>Chapter</td><td>58 Pa. Code chapter {e(sheet.chapter)}</td></tr>",
        f"<tr><td>Table</td><td>{e(sheet.table_id)}</td></tr>",
        *(f"<tr><td>Software</td><td>{e(k)}: <code>{e(v)}</code></td></tr>" for k, v in sheet.software.items()),
        "</table>",
    ]
    for w in sheet.wagers:
        out.extend(_wager_html(w))
    for s in sheet.strategy:
        out.append(f"<h2>Strategy: {e(s.point)}</h2><ol>")
        out.extend(f"<li>{e(rule)}</li>" for rule in s.rules)
        out.append("</ol>")
    if sheet.not_analysed:
        out.append("<h2>Not analysed</h2><ul>")
        out.extend(f"<li>{e(n)}</li>" for n in sheet.not_analysed)
        out.append("</ul>")
    out.append("</body></html>")
    return "\n".join(out) + "\n"


def _wager_html(w: WagerSheet) -> list[str]:
    """One wager's section: its figures, outcome rows, decisions, meter lines and notes."""
    e = html.escape
    out: list[str] = []
    out.append(f"<h2>{e(w.title)} &mdash; {e(w.paytable)}</h2>")
    if (warn := warning(w)) is not None:
        out.append(f"<p class='warning'><strong>{e(warn)}</strong></p>")
    out.append(f"<p>{e(w.method)}.</p><table>")
    facts = [
        (f"House edge {w.unit}", percent(w.house_edge)),
        ("Hit frequency", percent(w.hit_frequency)),
    ]
    if w.standard_deviation is not None:
        facts.append((f"Standard deviation {w.unit}", f"{w.standard_deviation:.6f}"))
    if w.average_wager is not None and w.element_of_risk is not None:
        facts += [("Average total wager", number(w.average_wager)), ("Element of risk", percent(w.element_of_risk))]
    out.extend(f"<tr><th>{e(k)}</th><td class='n'>{e(v)}</td></tr>" for k, v in facts)
    out.append("</table><table><tr><th>Outcome</th><th>Pays</th><th>Probability</th><th>Contribution</th></tr>")
    out.extend(
        f"<tr><td>{e(r.name)}</td><td>{e(r.pays)}</td><td class='n'>{number(r.probability)}</td>"
        f"<td class='n'>{number(r.contribution)}</td></tr>"
        for r in w.rows
    )
    out.append("</table>")
    if w.decisions:
        out.append("<table><tr><th>Decision</th><th>Action</th><th>Share of hands</th></tr>")
        out.extend(
            f"<tr><td>{e(d.point)}</td><td>{e(d.action)}</td><td class='n'>{percent(d.share)}</td></tr>"
            for d in w.decisions
        )
        out.append("</table>")
    if w.progressive is not None:
        p = w.progressive
        out.append(
            "<table><tr><th>Level</th><th>Return at meter 0</th><th>Per cent of meter</th>"
            "<th>Break-even meter</th><th>Figures</th></tr>"
        )
        for line in p.levels:
            be = p.break_even[line.level]
            out.append(
                f"<tr><td>{e(line.level)}</td><td class='n'>{number(line.base)}</td>"
                f"<td class='n'>{number(line.slope)}</td>"
                f"<td class='n'>{'none' if be is None else f'{float(be):,.0f} cents'}</td>"
                f"<td>{e(line.reseed)}</td></tr>"
            )
        out.append(f"</table><p>Return at meters {e(str(p.meters_cents))}: {percent(p.return_at_meters)}</p>")
    out.extend(f"<p><em>Note:</em> {e(n)}</p>" for n in w.notes)
    return out


FORMATS = {"text": as_text, "json": as_json, "html": as_html}
