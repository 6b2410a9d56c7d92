"""The report as one self-contained HTML page: inline CSS and SVG charts, nothing fetched at view time, laid out to
print on A4 or Letter (no chart or row split across pages, a table's header repeated on each page)."""

from __future__ import annotations

from html import escape

from floor.report import charts
from floor.report.build import Report, Section
from floor.report.render import cell, heading

CSS = """
body { font: 13px/1.4 system-ui, sans-serif; color: #1b1b1b; margin: 2em auto; max-width: 60em; padding: 0 1em; }
h1 { font-size: 1.4em; margin-bottom: 0.2em; } h2 { font-size: 1.1em; border-bottom: 2px solid #1f3b57; }
p.meta, p.note { color: #555; } p.note { font-size: 0.9em; }
p.notice { border-left: 4px solid #c98a00; background: #fff8e6; padding: 0.4em 0.8em; }
table { border-collapse: collapse; width: 100%; margin-bottom: 0.5em; }
th, td { border-bottom: 1px solid #ddd; padding: 2px 6px; text-align: left; white-space: nowrap; }
td.n { text-align: right; font-variant-numeric: tabular-nums; }
tr.floor td, tr.game td { font-weight: 600; background: #f3f6f9; }
td.flag { color: #c0392b; font-weight: 600; }
figure { margin: 1em 0; } figure svg { width: 100%; height: auto; max-height: 60vh; }
@media print {
  body { margin: 0; max-width: none; font-size: 8.5pt; }
  figure, tr { break-inside: avoid; }
  h2 { break-after: avoid; }
  thead { display: table-header-group; }
}
@page { margin: 15mm; }
"""


def _table(s: Section) -> str:
    if not s.rows:
        return "<p>(none in this period)</p>"
    head = "".join(f"<th>{escape(heading(c))}</th>" for c in s.columns)
    body = []
    for r in s.rows:
        scope = r[0] if s.columns[0] == "scope" else ""
        tds = []
        for c, v in zip(s.columns, r, strict=True):
            klass = "n" if isinstance(v, int | float) else ("flag" if c == "flag" and v else "")
            tds.append(f'<td class="{klass}">{escape(cell(c, v))}</td>')
        body.append(f'<tr class="{escape(str(scope))}">{"".join(tds)}</tr>')
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"


def to_html(r: Report) -> str:
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>{escape(r.title)}</title><style>{CSS}</style></head><body>",
        f"<h1>{escape(r.title)}</h1>",
        f'<p class="meta">From {escape(r.start)} to {escape(r.end)}; generated {escape(r.generated_at)}.</p>',
    ]
    if r.notice:
        parts.append(f'<p class="notice"><strong>Note:</strong> {escape(r.notice)}</p>')
    if r.hourly_rounds:
        parts.append(f"<section><h2>Charts</h2><figure>{charts.rounds_per_hour(r.hourly_rounds)}</figure>")
        parts.append(f"<figure>{charts.hold_over_time(r.hourly_hold)}</figure>")
        if any(h.expected for h in r.hits):
            parts.append(f"<figure>{charts.hit_frequencies(r.hits)}</figure>")
        if r.section("abandoned").rows:
            parts.append(f"<figure>{charts.abandoned_wagers(r.section('abandoned').rows)}</figure>")
        parts.append("</section>")
    for s in r.sections:
        parts.append(f"<section><h2>{escape(s.title)}</h2>{_table(s)}")
        if s.note:
            parts.append(f'<p class="note">{escape(s.note)}</p>')
        parts.append("</section>")
    parts.append("</body></html>")
    return "\n".join(parts)
