"""A journal written before the progressive sign's faults were kept per code (`sign:<code>`) holds a sign fault under
the offline key (`sign`), which only the sign's identification lifted. The daemon restores it upgraded: the sign's next
`fault_cleared` (any code) or identification lifts it (controller/engine/sign.py), and the log says so once.

The journal is a real SQLite file written by the daemon; its engine record is then stored again in the old form
through the journal's own API, as older software wrote it (no hand-written SQL)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

from structlog.testing import capture_logs

from controller.config.table import demo_config
from controller.store import snapshot
from controller.store.journal import Journal
from tests.journal.conftest import play, stored_state

OLD_FAULT = "the progressive sign is unavailable (display_mismatch: level mega read back wrong)"
SAID = "sign fault stored in the old form"


def store_in_the_old_form(path: Path, table_id: str) -> None:
    state = stored_state(path)
    assert state is not None and state.progressive_lockout == {}
    doc = json.loads(snapshot.encode(state))
    doc["state"]["progressive_lockout"] = {"sign": OLD_FAULT}
    journal = Journal(path, table_id, "older-software")
    try:
        journal.save([snapshot.record(json.dumps(doc).encode())], datetime.now(UTC))
    finally:
        journal.close()
    restored = stored_state(path)
    assert restored is not None and restored.progressive_lockout == {"sign": OLD_FAULT}


async def test_a_sign_fault_stored_in_the_old_form_is_upgraded_at_restore_and_said_once(
    tmp_path: Path, no_broker: str
) -> None:
    path = tmp_path / "table.sqlite"
    config = demo_config()
    assert await play(config, rounds=1, broker=no_broker, seed=3, journal_path=path) == 1
    store_in_the_old_form(path, config.table_id)
    with capture_logs() as logs:
        assert await play(config, rounds=1, broker=no_broker, seed=4, journal_path=path) == 1
    said = [e for e in logs if str(e["event"]).startswith(SAID)]
    assert len(said) == 1 and said[0]["reason"] == OLD_FAULT and said[0]["log_level"] == "warning"
    after = stored_state(path)
    assert after is not None and "sign" not in after.progressive_lockout
    with capture_logs() as again:
        assert await play(config, rounds=1, broker=no_broker, seed=5, journal_path=path) == 1
    assert not [e for e in again if str(e["event"]).startswith(SAID)], "said once: the state stored since is upgraded"
