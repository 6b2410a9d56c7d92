"""The HTML report's charts, drawn with matplotlib to inline SVG (no file, no font or script fetched at view time).

matplotlib's object API (Figure, not pyplot) keeps no global state, so a report drawn in the service's process or
in parallel leaves nothing behind.
"""

from __future__ import annotations

import io
import re

from matplotlib.figure import Figure

from floor.report.build import HitRow

INK = "#1f3b57"
ACCENT = "#c0392b"


def _svg(fig: Figure) -> str:
    buf = io.StringIO()
    fig.savefig(buf, format="svg", bbox_inches="tight", metadata={"Date": None})
    text = buf.getvalue()
    text = text[text.index("<svg") :]  # inline: no XML prolog or DOCTYPE inside HTML
    return re.sub(r"<metadata>.*?</metadata>", "", text, flags=re.S)  # matplotlib's RDF block: nothing to show


def _labels(hours: list[str]) -> list[str]:
    return [h[5:13].replace("T", " ") + "h" for h in hours]


def rounds_per_hour(series: list[tuple[str, int]]) -> str:
    fig = Figure(figsize=(7.5, 2.8))
    ax = fig.add_subplot()
    labels = _labels([h for h, _ in series])
    ax.bar(range(len(series)), [n for _, n in series], color=INK)
    ax.set_xticks(range(len(series)), labels, rotation=60, ha="right", fontsize=7)
    ax.set_ylabel("rounds completed")
    ax.set_title("Rounds per hour, UTC (every table in the report)", fontsize=10)
    ax.grid(axis="y", alpha=0.3)
    return _svg(fig)


def hold_over_time(series: list[tuple[str, float | None]]) -> str:
    fig = Figure(figsize=(7.5, 2.8))
    ax = fig.add_subplot()
    points = [(i, v) for i, (_, v) in enumerate(series) if v is not None]
    ax.plot([i for i, _ in points], [v for _, v in points], color=INK, marker="o", markersize=3)
    ax.axhline(0, color="#888", linewidth=0.8)
    ax.set_xticks(range(len(series)), _labels([h for h, _ in series]), rotation=60, ha="right", fontsize=7)
    ax.set_ylabel("hold %, cumulative")
    ax.set_title("Hold over time, UTC: win / handle from the period's start", fontsize=10)
    ax.grid(axis="y", alpha=0.3)
    return _svg(fig)


def hit_frequencies(rows: list[HitRow]) -> str:
    """Each row with an expectation: the observed frequency with its 95 % interval, and the expected one."""
    shown = [r for r in rows if r.expected is not None and r.expected > 0][:40]
    fig = Figure(figsize=(7.5, 0.28 * max(len(shown), 3) + 1.2))
    ax = fig.add_subplot()
    ys = list(range(len(shown)))
    floor_ = min([r.expected or 1 for r in shown] + [r.low for r in shown if r.low > 0] + [1e-3]) / 2
    for y, r in zip(ys, shown, strict=True):
        colour = ACCENT if r.flagged else INK
        ax.plot([max(r.low, floor_), max(r.high, floor_)], [y, y], color=colour, linewidth=2, alpha=0.6)
        ax.plot([max(r.observed, floor_)], [y], "o", color=colour, markersize=4)
        ax.plot([r.expected or 0.0], [y], "|", color="black", markersize=10, markeredgewidth=2)
    ax.set_xscale("log")
    ax.set_yticks(ys, [r.label for r in shown], fontsize=7)
    ax.invert_yaxis()
    ax.set_xlabel("frequency (log scale): dot observed (bar: its Wilson 95 % interval), | expected; red: flagged")
    ax.set_title("Hit frequency of each paytable row against its expectation", fontsize=10)
    ax.grid(axis="x", alpha=0.3)
    return _svg(fig)


def abandoned_wagers(rows: list[list[object]]) -> str:
    """Per table (the abandoned section's table rows): what the house collected of a departed player's wagers, what
    went back to him, and what is still held at the period's end."""
    rows = [r for r in rows if r[0] == "table"]
    fig = Figure(figsize=(7.5, 0.35 * max(len(rows), 2) + 1.2))
    ax = fig.add_subplot()
    labels = [f"{r[1]} {r[2]}" for r in rows]
    collected = [(_cents(r[3]) + _cents(r[5])) / 100 for r in rows]
    returned = [_cents(r[6]) / 100 for r in rows]
    held = [_cents(r[7]) / 100 for r in rows]
    ys = list(range(len(rows)))
    ax.barh(ys, collected, color=INK, label="collected (at once or released to the house)")
    ax.barh(ys, returned, left=collected, color="#7f8c8d", label="released to the player (returned)")
    ax.barh(ys, held, left=[a + b for a, b in zip(collected, returned, strict=True)], color=ACCENT, label="held")
    ax.set_yticks(ys, labels, fontsize=7)
    ax.invert_yaxis()
    ax.set_xlabel("dollars")
    ax.set_title("Wagers abandoned by a player who left, by table", fontsize=10)
    ax.legend(fontsize=7, loc="lower right")
    ax.grid(axis="x", alpha=0.3)
    return _svg(fig)


def _cents(v: object) -> int:
    return v if isinstance(v, int) else 0
