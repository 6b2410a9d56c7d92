"""The CSV export of a gaming day is signed by a person's key the floor never holds (DESIGN.md, "The floor"): the
floor writes it, the signer signs it where their key is (`report sign`) or at export (`--key`, read only), and the
floor trusts only the public halves in [export] trusted_keys. `report verify` fails on any changed byte or an untrusted
signer; retention drops a day past its term only once its export verifies against a trusted key."""

from __future__ import annotations

import json
import re
from datetime import UTC, date, datetime
from pathlib import Path

import psycopg
import pytest
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat, load_pem_private_key

from floor.config import DatabaseSection, parse_floor_config
from floor.db import connect
from floor.retention import apply_retention, plan_retention
from floor.schema import migrate, partition_ddl, partitions
from tests.floor.conftest import count
from tests.tablectl_runs import here

pytestmark = pytest.mark.floor
OLD, NEW = date(2020, 1, 1), date(2020, 1, 2)
NOW = datetime(2020, 1, 3, 12, tzinfo=UTC)  # gaming day 2020-01-03: a 1-day term keeps 01-02 and on


def _seed(dsn: str) -> None:
    with connect(DatabaseSection(dsn=dsn)) as conn:
        migrate(conn)
        with conn.transaction():
            for seq, day in ((1, OLD), (2, OLD), (3, NEW)):
                conn.execute(partition_ddl(day))
                ts = datetime(day.year, day.month, day.day, 12, tzinfo=UTC)
                conn.execute("INSERT INTO event_keys VALUES ('t1', %s, %s, 'b1', '\\x00', %s)", (seq, f"e{seq}", day))
                conn.execute(
                    "INSERT INTO events (gaming_day, table_id, seq, event_id, boot_id, ts, ts_text, round_id, type,"
                    " rule, payload, replayed) VALUES (%s, 't1', %s, %s, 'b1', %s, %s, NULL, 'x.y', NULL, %s, false)",
                    (day, seq, f"e{seq}", ts, ts.isoformat(), json.dumps({"n": seq})),
                )


def _keygen(path: Path) -> str:
    """A supervisor's key as they make it on their workstation; the public key it printed."""
    made = here("command", "keygen", "--out", path)
    assert made.returncode == 0, made.stderr
    found = re.search(r"^public key: (\S+)$", made.stdout, re.M)
    assert found is not None, made.stdout
    return found.group(1)


def _pem_public(path: Path) -> str:
    key = load_pem_private_key(path.read_bytes(), password=None)
    return key.public_key().public_bytes(Encoding.PEM, PublicFormat.SubjectPublicKeyInfo).decode()


def _config(tmp: Path, dsn: str, trusted: list[str]) -> Path:
    path = tmp / "floor.toml"
    keys = ", ".join(f"'''{k}'''" for k in trusted)  # literal strings: a PEM spans lines
    path.write_text(
        f'name = "f1"\n[database]\ndsn = "{dsn}"\n[retention]\ndays = 1\n'
        f'[export]\ndirectory = "{tmp / "out"}"\ntrusted_keys = [{keys}]\n'
    )
    return path


def _plan(dsn: str, config: Path) -> tuple[list[date], dict[date, str]]:
    with psycopg.connect(dsn) as conn:
        plan = plan_retention(conn, parse_floor_config(config.read_text()), NOW)
    return plan.drop, plan.why


def _signer(dsn: str) -> str | None:
    with psycopg.connect(dsn) as conn:
        row = conn.execute("SELECT signer_public_key FROM exports WHERE gaming_day = %s", (OLD,)).fetchone()
    assert row is not None
    return None if row[0] is None else str(row[0])


def test_signed_where_the_key_lives_then_recorded_lets_retention_drop_the_day(tmp_path: Path, floor_dsn: str) -> None:
    _seed(floor_dsn)
    key = tmp_path / "ann.pem"
    public = _keygen(key)
    key_bytes = key.read_bytes()
    config = _config(tmp_path, floor_dsn, [_pem_public(key)])  # the PEM public half is trusted as its base64

    done = here("report", "--config", config, "export", "--day", str(OLD))
    assert done.returncode == 0, done.stderr
    exported = tmp_path / "out" / f"f1-{OLD}.csv"
    lines = exported.read_text().splitlines()
    assert lines[0] == "table_id,seq,event_id,boot_id,ts,round_id,type,rule,payload" and len(lines) == 3
    assert "not signed yet" in done.stdout and _signer(floor_dsn) is None
    drop, why = _plan(floor_dsn, config)
    assert drop == [] and "not signed yet" in why[OLD]

    signed = here("report", "sign", exported, "--key", key)  # no config, no database: the workstation's step
    assert signed.returncode == 0, signed.stderr
    assert f"public_key: {public}" in (tmp_path / "out" / f"f1-{OLD}.csv.sig").read_text()
    recorded = here("report", "--config", config, "record", exported)
    assert recorded.returncode == 0, recorded.stderr
    assert f"key {public}" in recorded.stdout and f"gaming day {OLD}" in recorded.stdout
    assert _signer(floor_dsn) == public
    good = here("report", "verify", exported, "--config", config)
    assert good.returncode == 0 and "signature good" in good.stdout

    # The key was read, never written: the floor's export directory holds the file and its signature, nothing else.
    assert key.read_bytes() == key_bytes
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == [exported.name, exported.name + ".sig"]

    drop, why = _plan(floor_dsn, config)
    assert (drop, why) == ([OLD], {})
    with psycopg.connect(floor_dsn) as conn:
        plan = plan_retention(conn, parse_floor_config(config.read_text()), NOW)
        assert apply_retention(conn, plan) == [f"dropped gaming day {OLD}"]
        assert partitions(conn) == [NEW]
    assert count(floor_dsn, "SELECT count(*) FROM event_keys") == 1
    assert count(floor_dsn, "SELECT count(*) FROM events") == 1


def test_an_untrusted_signer_does_not_count_and_a_key_no_longer_trusted_stops_counting(
    tmp_path: Path, floor_dsn: str
) -> None:
    _seed(floor_dsn)
    trusted, stranger = _keygen(tmp_path / "ann.pem"), _keygen(tmp_path / "mallory.pem")
    config = _config(tmp_path, floor_dsn, [trusted])
    exported = tmp_path / "out" / f"f1-{OLD}.csv"

    done = here("report", "--config", config, "export", "--day", str(OLD), "--key", tmp_path / "mallory.pem")
    assert done.returncode == 1 and f"signed by key {stranger}, not by a trusted key ({trusted})" in done.stderr
    assert _signer(floor_dsn) is None
    again = here("report", "--config", config, "record", exported)
    assert again.returncode == 1 and "not by a trusted key" in again.stderr
    assert here("report", "verify", exported, "--public-key", trusted).returncode == 1
    drop, why = _plan(floor_dsn, config)
    assert drop == [] and "not signed yet" in why[OLD]

    done = here("report", "--config", config, "export", "--day", str(OLD), "--key", tmp_path / "ann.pem")
    assert done.returncode == 0, done.stderr
    assert _signer(floor_dsn) == trusted and _plan(floor_dsn, config)[0] == [OLD]
    # The administrator removes Ann's key (she left): her exports no longer let retention drop a day.
    config = _config(tmp_path, floor_dsn, [stranger])
    drop, why = _plan(floor_dsn, config)
    assert drop == [] and why[OLD] == f"its export is signed by {trusted}, which is not in [export] trusted_keys"


def test_a_changed_file_fails_verify_and_does_not_count(tmp_path: Path, floor_dsn: str) -> None:
    _seed(floor_dsn)
    public = _keygen(tmp_path / "ann.pem")
    config = _config(tmp_path, floor_dsn, [public])
    done = here("report", "--config", config, "export", "--day", str(OLD), "--key", tmp_path / "ann.pem")
    assert done.returncode == 0, done.stderr
    exported = tmp_path / "out" / f"f1-{OLD}.csv"
    assert _plan(floor_dsn, config)[0] == [OLD]

    original = exported.read_text()
    exported.write_text(original.replace('""n"":1', '""n"":7'))  # CSV doubles the quotes inside the payload
    assert exported.read_text() != original
    changed = here("report", "verify", exported, "--public-key", public)
    assert changed.returncode == 1 and "changed after it was signed" in changed.stderr
    drop, why = _plan(floor_dsn, config)
    assert drop == [] and "changed after it was signed" in why[OLD]
    # Signing the changed file does not make it the day's export: the floor recorded what it wrote.
    assert here("report", "sign", exported, "--key", tmp_path / "ann.pem").returncode == 0
    forged = here("report", "--config", config, "record", exported)
    assert forged.returncode == 1 and "not the latest export of any gaming day" in forged.stderr
    drop, why = _plan(floor_dsn, config)
    assert drop == [] and "not the file recorded for the day" in why[OLD]


def test_the_old_signing_key_setting_is_refused_with_the_change_and_the_fix(tmp_path: Path) -> None:
    config = tmp_path / "floor.toml"
    config.write_text(
        '[database]\ndsn = "host=127.0.0.1"\n[export]\ndirectory = "/tmp/x"\nsigning_key = "/etc/floor-export.pem"\n'
    )
    for argv in (("report", "--config", config, "export", "--day", OLD), ("floor", "--config", config, "check-config")):
        done = here(*argv)
        assert done.returncode != 0
        assert "export: [export] signing_key is gone: the floor holds no private key" in done.stderr, done.stderr
        assert "trusted_keys" in done.stderr and "tablectl report sign FILE --key KEY.pem" in done.stderr


def test_trusted_keys_are_checked_with_the_fix() -> None:
    with pytest.raises(ValueError, match=r"export.trusted_keys: decodes to 3 bytes.*tablectl command keygen"):
        parse_floor_config('[database]\ndsn = "dbname=x"\n[export]\ntrusted_keys = ["YWJj"]\n')
    with pytest.raises(ValueError, match=r"is not a PEM public key"):
        parse_floor_config(
            '[database]\ndsn = "dbname=x"\n[export]\ntrusted_keys = ["-----BEGIN PUBLIC KEY-----\\nx"]\n'
        )
