"""The signed CSV export of a gaming day (docs/floor.md, "Export"): every archived event of the day, one line each in
(table, seq) order, and beside it FILE.sig: the file's Ed25519 signature by the floor's export key. `tablectl report
verify FILE --public-key KEY` checks it; any changed byte, a signature by another key or a missing file fails."""

from __future__ import annotations

import base64
import csv
import hashlib
import io
import json
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Any

import psycopg
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat, load_pem_private_key

Conn = psycopg.Connection[tuple[Any, ...]]
HEADER = ["table_id", "seq", "event_id", "boot_id", "ts", "round_id", "type", "rule", "payload"]
MAGIC = "tablectl-floor-export-signature v1"


class ExportError(ValueError):
    """The export cannot be made or checked; the message says what to fix."""


def load_signing_key(path: Path) -> Ed25519PrivateKey:
    try:
        key = load_pem_private_key(path.read_bytes(), password=None)
    except (OSError, ValueError) as err:
        raise ExportError(
            f"export.signing_key {path}: cannot load it ({err}); make one with `tablectl command keygen --out {path}`"
        ) from None
    if not isinstance(key, Ed25519PrivateKey):
        raise ExportError(f"export.signing_key {path}: not an Ed25519 key; make one with `tablectl command keygen`")
    return key


def public_b64(key: Ed25519PublicKey) -> str:
    return base64.b64encode(key.public_bytes(Encoding.Raw, PublicFormat.Raw)).decode()


@dataclass(frozen=True, slots=True)
class Exported:
    path: Path
    signature: Path
    events: int
    sha256: str


def day_csv(conn: Conn, day: date) -> tuple[bytes, int]:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(HEADER)
    n = 0
    cur = conn.execute(
        "SELECT table_id, seq, event_id, boot_id, ts_text, round_id, type, rule, payload FROM events"
        " WHERE gaming_day = %s ORDER BY table_id, seq",
        (day,),
    )
    for row in cur:
        *head, payload = row
        w.writerow(
            [*("" if v is None else v for v in head), json.dumps(payload, sort_keys=True, separators=(",", ":"))]
        )
        n += 1
    return buf.getvalue().encode(), n


def export_day(conn: Conn, day: date, directory: Path, key: Ed25519PrivateKey, floor_name: str) -> Exported:
    data, n = day_csv(conn, day)
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{floor_name}-{day.isoformat()}.csv"
    path.write_bytes(data)
    digest = hashlib.sha256(data).hexdigest()
    signature = base64.b64encode(key.sign(data)).decode()
    sig = path.with_name(path.name + ".sig")
    sig.write_text(
        f"{MAGIC}\nalgorithm: ed25519\npublic_key: {public_b64(key.public_key())}\nsha256: {digest}\n"
        f"signature: {signature}\n"
    )
    with conn.transaction():
        conn.execute(
            "INSERT INTO exports (gaming_day, path, sha256, events) VALUES (%s, %s, %s, %s) ON CONFLICT (gaming_day)"
            " DO UPDATE SET path = excluded.path, sha256 = excluded.sha256, events = excluded.events,"
            " exported_at = now()",
            (day, str(path), digest, n),
        )
    return Exported(path, sig, n, digest)


def _fields(sig: Path) -> dict[str, str]:
    try:
        lines = sig.read_text().splitlines()
    except OSError as err:
        raise ExportError(f"{sig}: cannot read the signature ({err.strerror}); it is made beside the export") from None
    if not lines or lines[0] != MAGIC:
        raise ExportError(f"{sig}: not a tablectl floor export signature")
    return dict(line.split(": ", 1) for line in lines[1:] if ": " in line)


def verify(path: Path, trusted_public: str) -> str:
    """Raises ExportError unless `path` is signed, unchanged, by the key whose base64 public key is given."""
    fields = _fields(path.with_name(path.name + ".sig"))
    if fields.get("public_key") != trusted_public:
        raise ExportError(f"{path}: signed by key {fields.get('public_key')}, not by the trusted key {trusted_public}")
    try:
        data = path.read_bytes()
        public = Ed25519PublicKey.from_public_bytes(base64.b64decode(trusted_public, validate=True))
        public.verify(base64.b64decode(fields.get("signature", ""), validate=True), data)
    except OSError as err:
        raise ExportError(f"{path}: cannot read it ({err.strerror})") from None
    except (InvalidSignature, ValueError):
        raise ExportError(
            f"{path}: the signature does not match the file: it was changed after it was signed"
        ) from None
    return f"{path}: signature good (Ed25519, key {trusted_public}, sha256 {hashlib.sha256(data).hexdigest()})"
