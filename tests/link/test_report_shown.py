"""`tablectl link report` shows what tables sent escaped (controller/cli/shown.py): a round id and a validator's name
carrying an ESC sequence, a CR and a bidi override come out as `\\x1b`, `\\r`, `\\u202e`, not acted on by the
operator's terminal; `--json` (to_json) keeps the text as stored. The renderer is pure: given its books directly."""

from __future__ import annotations

import json

from link.records import Hit
from link.report import LevelReport, Reconciliation, render

EVIL = "\x1b[2J\r\u202eok"


def test_the_link_report_escapes_what_the_tables_sent() -> None:
    hit = Hit(f"t{EVIL}", f"r{EVIL}", 3, "mega", 7, 100_00, 100_00, "655a.13(f)", f"sup{EVIL}")
    level = LevelReport("mega", 100_00, 0, 0, 100_00, 0, 0, {f"t{EVIL}": 5}, [hit])
    rec = Reconciliation("link-1", "open", 7, [level], [f"a problem naming {EVIL}"])
    out = render(rec)
    assert not any(c in out for c in "\x1b\r\u202e"), repr(out)
    assert "t\\x1b[2J\\r\\u202eok seat 3 round r\\x1b[2J\\r\\u202eok" in out
    assert "validated by sup\\x1b[2J\\r\\u202eok" in out and "  - a problem naming \\x1b[2J" in out
    assert json.loads(json.dumps(rec.to_json()))["problems"] == [f"a problem naming {EVIL}"]


def test_a_meter_below_its_seed_shows_its_negative_growth_exactly() -> None:
    """After a 10 % hit the display is under the seed: the growth is negative and must read as the books hold it
    (the demo showed $40,527.17 on a $50,000.00 seed as growth `$-9,473.17`, floored, for -$9,472.83)."""
    level = LevelReport("progressive", 40_527_17, 0, 0, 9_505_38, 32_55 * 1_000_000, 50_000_00 * 1_000_000)
    out = render(Reconciliation("link-1", "open", 36, [level], []))
    assert "display growth -$9,472.83 over the seed" in out, out
