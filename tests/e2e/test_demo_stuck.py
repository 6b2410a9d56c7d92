"""`tablectl demo --rounds N` on a table blocked by what none of its simulated people clears stops at once, exit 1,
with the block's reason and the remedy, and leaves nothing running. The case found: a demo on a new --journal against
a broker that keeps the demo table's retained anchor from an earlier run: the table starts under `tilt:rollback` (and
`tilt:meters`), and the demo waited for rounds that never came. Before, the second run below never ended (the
subprocess timeout, a failure bound only, killed it).

Real processes: two `tablectl demo` runs on real ptys and real SQLite journals, against a private mosquitto (its
retained anchor is the point of the test). A `--human-floor` demo waits instead: a supervisor at the console can clear
the tilt (controller/people/stuck.py); controller-level tests below see its warning.
"""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
from collections.abc import MutableMapping
from pathlib import Path
from typing import Any

import pytest
import structlog
from structlog.testing import capture_logs

from controller.config.table import demo_config
from controller.people.demo import play
from tests.broker import own_mosquitto
from tests.tablectl_runs import tablectl

pytestmark = pytest.mark.e2e

FAILURE_BOUND = 90.0  # failure bound only: each run takes a few seconds; before the fix the second never ended


def _types(journal: Path) -> list[str]:
    with sqlite3.connect(journal) as db:
        return [t for (t,) in db.execute("SELECT type FROM events ORDER BY seq")]


def _demo(journal: Path, broker: str, rounds: int) -> tuple[int, str]:
    proc = tablectl(
        "demo", "--rounds", str(rounds), "--pace", "0", "--seed", "1", "--quiet", "--journal", str(journal),
        "--broker", broker, timeout=FAILURE_BOUND,
    )  # fmt: skip
    return proc.returncode, proc.stderr


def test_a_demo_on_a_new_journal_against_the_old_anchor_stops_with_the_remedy(tmp_path: Path) -> None:
    second = tmp_path / "second.sqlite"
    with own_mosquitto() as mosquitto:
        broker = f"mqtt://127.0.0.1:{mosquitto.port}"
        code, err = _demo(tmp_path / "first.sqlite", broker, 1)
        assert code == 0, err[-3000:]
        code, err = _demo(second, broker, 2)
        # Closed, not killed: the journal's lock is let go, so the same journal opens again at once (and stops again).
        again, err_again = _demo(second, broker, 1)
    assert code == 1, err[-3000:]
    said = err[err.index("tablectl demo: the table is blocked") :]
    assert "nobody in the demo can clear it" in said
    assert "tilt:rollback: critical state invalid: the broker's retained anchor (tablectl/demo-ms-1/anchor)" in said
    assert "tilt:meters" in said
    # What to do: the tilt's own remedy, the demo's way out (docs/recovery.md's step) and where the events are.
    assert "restore the journal with its -wal file" in said
    assert f"rm {second}*" in said and "mosquitto_pub -r -n -t tablectl/demo-ms-1/anchor" in said
    assert f"tablectl journal tail --journal {second}" in said and "docs/recovery.md" in said
    assert "round(s) played" not in err
    assert again == 1 and "tablectl demo: the table is blocked" in err_again, err_again[-3000:]
    types = _types(second)
    assert "betting.opened" not in types
    assert types.index("critical_state.invalid") < types.index("table.blocked") < types.index("demo.stopped")
    assert types.index("demo.stopped") < types.index("table.closed")


async def test_with_a_person_at_the_console_the_demo_waits_and_says_why(tmp_path: Path) -> None:
    """--human-floor: the tilt is for the supervisor at the console; the demo warns once and goes on waiting."""
    warned = asyncio.Event()
    seen: list[MutableMapping[str, Any]] = []

    def watch(logger: object, method: str, event: MutableMapping[str, Any]) -> MutableMapping[str, Any]:
        if event.get("event") == "the table waits for a supervisor at the console":
            seen.append({**event, "log_level": method})
            warned.set()
        return event

    with own_mosquitto() as mosquitto:
        broker = f"mqtt://127.0.0.1:{mosquitto.port}"
        first = play(demo_config(), rounds=1, broker=broker, seed=1, journal_path=tmp_path / "first.sqlite")
        assert await asyncio.wait_for(first, FAILURE_BOUND) == 1
        with capture_logs():
            structlog.configure(processors=[watch, *structlog.get_config()["processors"]])
            demo = asyncio.create_task(
                play(demo_config(), rounds=1, broker=broker, journal_path=tmp_path / "j.sqlite", human_floor=True)
            )
            try:
                await asyncio.wait_for(warned.wait(), FAILURE_BOUND)
                assert not demo.done()  # it waits for the person
            finally:
                demo.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await demo
    assert [s["log_level"] for s in seen] == ["warning"]
    assert "tilt:rollback" in str(seen[0]["problem"])


def test_a_deck_removed_by_a_scripted_miscount_stops_the_demo_naming_the_remedy(tmp_path: Path) -> None:
    """The other blocks the demo's people never clear take the same rule: a sim script's shuffler counting 51 cards
    removes the deck (no `table.blocked`: `deck.removed` says it), and only a floorperson's verify_deck lifts it.
    Before, the demo waited for ever; no broker here (the table journals and plays on without one)."""
    script = tmp_path / "count-51.toml"
    script.write_text('[[faults]]\ndevice = "shuffler"\nfault = "count_51"\nwhen = "shuffle 1"\n')
    journal = tmp_path / "j.sqlite"
    proc = tablectl(
        "demo", "--rounds", "2", "--pace", "0", "--seed", "1", "--quiet", "--journal", str(journal),
        "--broker", "mqtt://127.0.0.1:1", "--script", str(script), timeout=FAILURE_BOUND,
    )  # fmt: skip
    assert proc.returncode == 1, proc.stderr[-3000:]
    said = proc.stderr[proc.stderr.index("tablectl demo: the table is blocked") :]
    assert "deck_removed: shuffler counted 51 cards; a new deck must be verified" in said
    assert "what to do: a new deck verified by a floorperson (`verify_deck`, docs/commands.md)" in said
    assert "tilt" not in said
    types = _types(journal)
    assert "betting.opened" not in types and types.index("deck.removed") < types.index("demo.stopped")
    assert types.index("demo.stopped") < types.index("table.closed")
