"""The report as text (a terminal or a printer), CSV (a spreadsheet: one block per section) and JSON (a program)."""

from __future__ import annotations

import csv
import io
import json
from typing import Any

from controller.core.money import fmt
from floor.report.build import Report, Section


def cell(column: str, value: Any) -> str:
    """A value as a person reads it: cents as dollars, percentages with two decimals, nothing as '-'."""
    if value is None:
        return "-"
    if column.endswith("_cents") and isinstance(value, int):
        return fmt(value)  # the one money formatter: the round recall's and the table's terminal's too
    if column.endswith("_pct") and isinstance(value, float):
        return f"{value:.4f}%" if abs(value) < 1 else f"{value:.2f}%"
    if column.endswith("_s") and isinstance(value, float):
        return f"{value / 60:.1f} min"
    return str(value)


def heading(column: str) -> str:
    return column.removesuffix("_cents").removesuffix("_pct").removesuffix("_s").replace("_", " ")


def _text_section(s: Section) -> list[str]:
    out = [s.title, "=" * len(s.title)]
    if not s.rows:
        return [*out, "(none in this period)", ""]
    cells = [[cell(c, v) for c, v in zip(s.columns, r, strict=True)] for r in s.rows]
    heads = [heading(c) for c in s.columns]
    widths = [max(len(h), *(len(r[i]) for r in cells)) for i, h in enumerate(heads)]
    numeric = [all(isinstance(r[i], int | float) or r[i] is None for r in s.rows) for i in range(len(heads))]

    def line(values: list[str]) -> str:
        return "  ".join(v.rjust(w) if n else v.ljust(w) for v, w, n in zip(values, widths, numeric, strict=True))

    out += [line(heads).rstrip(), "  ".join("-" * w for w in widths)]
    out += [line(r).rstrip() for r in cells]
    if s.note:
        out.append(f"({s.note})")
    return [*out, ""]


def to_text(r: Report) -> str:
    out = [r.title, f"from {r.start} to {r.end}; generated {r.generated_at}", ""]
    if r.notice:
        out += [f"NOTE: {r.notice}", ""]
    for s in r.sections:
        out += _text_section(s)
    return "\n".join(out)


def to_csv(r: Report) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["report", r.title, r.start, r.end, r.generated_at])
    if r.notice:
        w.writerow(["notice", r.notice])
    for s in r.sections:
        w.writerow([])
        w.writerow(["section", *s.columns])
        for row in s.rows:
            w.writerow([s.key, *("" if v is None else v for v in row)])
    return buf.getvalue()


def to_json(r: Report) -> str:
    return json.dumps(r.to_json(), indent=2, default=str)
