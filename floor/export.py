"""The signed CSV export of a gaming day (docs/floor.md, "Retention and export"): every archived event of the day, one
line each in (table, seq) order, and beside it FILE.sig: the file's Ed25519 signature by a person's key. The floor
never holds that key (DESIGN.md, "The floor"): it writes the file, the signer signs it where their key lives
(`tablectl report sign`, or `export --key` read for that command only), and the floor trusts only the public halves
listed in `[export] trusted_keys`. `verify` checks a file against them; any changed byte, an untrusted signer or a
missing file fails, and retention counts an export only when it verifies (floor/retention.py)."""

from __future__ import annotations

import base64
import csv
import hashlib
import io
import json
import mmap
import os
from collections.abc import Collection, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Any

import psycopg
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

from controller.config.files import SECRET_MAX_BYTES, FileRefused, kind_of, read_bounded
from controller.config.keys import PrivateKeyError, read_private_key

Conn = psycopg.Connection[tuple[Any, ...]]
HEADER = ["table_id", "seq", "event_id", "boot_id", "ts", "round_id", "type", "rule", "payload"]
MAGIC = "tablectl-floor-export-signature v1"


class ExportError(ValueError):
    """The export cannot be made, signed or checked; the message says what to fix."""


def load_signing_key(path: Path) -> Ed25519PrivateKey:
    """The signer's own key (`tablectl command keygen`), read for one command and kept nowhere."""
    try:
        return read_private_key(path, SECRET_MAX_BYTES)
    except PrivateKeyError as err:
        raise ExportError(f"--key: {err}: give your own key as `tablectl command keygen --out {path}` wrote") from None


def public_b64(key: Ed25519PublicKey) -> str:
    return base64.b64encode(key.public_bytes(Encoding.Raw, PublicFormat.Raw)).decode()


def sig_path(path: Path) -> Path:
    return path.with_name(path.name + ".sig")


@dataclass(frozen=True, slots=True)
class Exported:
    path: Path
    events: int
    sha256: str


@dataclass(frozen=True, slots=True)
class Verified:
    path: Path
    signer: str  # the signer's public key, base64 of the raw 32 bytes
    sha256: str

    def describe(self) -> str:
        return f"{self.path}: signature good (Ed25519, key {self.signer}, sha256 {self.sha256})"


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


def signed_export(conn: Conn, day: date) -> tuple[str, str] | None:
    """The day's recorded export and its signer's key, when one is recorded as signed; else None."""
    row = conn.execute(
        "SELECT path, signer_public_key FROM exports WHERE gaming_day = %s AND signer_public_key IS NOT NULL", (day,)
    ).fetchone()
    return None if row is None else (str(row[0]), str(row[1]))


def export_day(conn: Conn, day: date, directory: Path, floor_name: str) -> Exported:
    """Writes the day's CSV, unsigned, and records it with no signer: a new file needs a new signature, so a stale
    .sig beside it is removed."""
    data, n = day_csv(conn, day)
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{floor_name}-{day.isoformat()}.csv"
    path.write_bytes(data)
    sig_path(path).unlink(missing_ok=True)
    digest = hashlib.sha256(data).hexdigest()
    with conn.transaction():
        conn.execute(
            "INSERT INTO exports (gaming_day, path, sha256, events) VALUES (%s, %s, %s, %s) ON CONFLICT (gaming_day)"
            " DO UPDATE SET path = excluded.path, sha256 = excluded.sha256, events = excluded.events,"
            " exported_at = now(), signer_public_key = NULL, signed_at = NULL",
            (day, str(path), digest, n),
        )
    return Exported(path, n, digest)


def sign_file(path: Path, key: Ed25519PrivateKey) -> Path:
    """Writes FILE.sig beside an export; needs no database, so it runs where the signer's key is."""
    head = (",".join(HEADER) + "\n").encode()
    with export_bytes(path) as data:
        if bytes(data[: len(head)]) != head:
            raise ExportError(f"{path}: not a floor export (its first line is not the export's header): give the .csv")
        digest = _sha256(data)
        signature = base64.b64encode(key.sign(data)).decode()
    sig = sig_path(path)
    sig.write_text(
        f"{MAGIC}\nalgorithm: ed25519\npublic_key: {public_b64(key.public_key())}\nsha256: {digest}\n"
        f"signature: {signature}\n"
    )
    return sig


# A .sig is five short lines (~250 bytes); anything much bigger is not one, and is not read whole.
SIG_MAX_BYTES = 4096
SIG_FIELDS = ("algorithm", "public_key", "sha256", "signature")


def _fields(sig: Path) -> dict[str, str]:
    """The fields of a signature file as `sign_file` writes it, read bounded (a FIFO or /dev/zero named FILE.sig is
    refused, not waited on or read until memory runs out) and strictly: the first line, then each known field once,
    and nothing else, so what is checked is all the file says."""
    again = f"sign the export again: `tablectl report sign {sig.with_suffix('')} --key YOUR.pem`, the .sig beside it"
    try:
        data = read_bounded(sig, SIG_MAX_BYTES)
    except FileRefused as err:
        raise ExportError(f"{sig}: the signature {err.problem}; {again}") from None
    try:
        lines = data.decode("ascii").split("\n")
    except UnicodeDecodeError as err:
        raise ExportError(
            f"{sig}: not a signature file (a byte that is not ASCII at offset {err.start}); {again}"
        ) from None
    if lines[-1] == "":
        lines.pop()
    if not lines or lines[0] != MAGIC:
        raise ExportError(f"{sig}: not a tablectl floor export signature (its first line is not {MAGIC!r}); {again}")
    fields: dict[str, str] = {}
    for n, line in enumerate(lines[1:], start=2):
        name, sep, value = line.partition(": ")
        if not sep or name not in SIG_FIELDS or name in fields:
            what = "a second " + repr(name) if name in fields else repr(line[:40])
            raise ExportError(
                f"{sig}, line {n}: {what} is not what a signature holds (one each of {', '.join(SIG_FIELDS)}); {again}"
            )
        fields[name] = value
    missing = [name for name in SIG_FIELDS if name not in fields]
    if missing or fields["algorithm"] != "ed25519":
        problem = f"lacks {', '.join(missing)}" if missing else f"algorithm {fields['algorithm']!r} is not ed25519"
        raise ExportError(f"{sig}: the signature {problem}; {again}")
    return fields


HASH_CHUNK = 1 << 20


@contextmanager
def export_bytes(path: Path) -> Iterator[memoryview]:
    """An export's bytes, mapped from the regular file at `path` rather than read onto the heap (a day's CSV can be
    large; Ed25519 signs the whole message, so the signature check takes it whole). Anything else is refused, named:
    a FIFO there blocked `read_bytes()` until someone wrote to it, and /dev/zero never ended. Opened O_NONBLOCK, so a
    path swapped for a FIFO after a look does not block the open either."""
    fix = "give the .csv `tablectl report export` wrote"
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    except OSError as err:
        raise ExportError(f"{path}: cannot read it ({err.strerror}); {fix}") from None
    try:
        kind = kind_of(os.fstat(fd).st_mode)
        if kind is not None:
            raise ExportError(f"{path}: is {kind}, not a regular file; {fix}")
        if os.fstat(fd).st_size == 0:
            yield memoryview(b"")
            return
        with mmap.mmap(fd, 0, access=mmap.ACCESS_READ) as mapped, memoryview(mapped) as view:
            yield view
    finally:
        os.close(fd)


def _sha256(data: memoryview) -> str:
    digest = hashlib.sha256()
    for at in range(0, len(data), HASH_CHUNK):  # a chunk at a time from the mapping: nothing copied whole
        digest.update(data[at : at + HASH_CHUNK])
    return digest.hexdigest()


def verify(path: Path, trusted: Collection[str]) -> Verified:
    """Raises ExportError unless `path` is signed, unchanged, by one of the `trusted` keys (base64 public keys)."""
    if not trusted:
        raise ExportError(
            f"{path}: no key is trusted: list the signers' public keys in [export] trusted_keys, or give --public-key"
        )
    if not path.exists():  # the file first: else the .sig missing beside it was named, with "sign it again"
        with export_bytes(path):
            pass
    fields = _fields(sig_path(path))
    signer = fields.get("public_key", "")
    if signer not in trusted:
        raise ExportError(
            f"{path}: signed by key {signer or '(none)'}, not by a trusted key ({', '.join(sorted(trusted))}): "
            "have a trusted signer sign it, or, once its owner confirmed it, add the key to [export] trusted_keys"
        )
    try:
        public = Ed25519PublicKey.from_public_bytes(base64.b64decode(signer, validate=True))
        signature = base64.b64decode(fields.get("signature", ""), validate=True)
    except ValueError:
        raise ExportError(
            f"{path}: the signature does not match the file: it was changed after it was signed"
        ) from None
    with export_bytes(path) as data:
        digest = _sha256(data)
        try:
            public.verify(signature, data)
        except InvalidSignature:
            raise ExportError(
                f"{path}: the signature does not match the file: it was changed after it was signed"
            ) from None
    return Verified(path, signer, digest)


def record_signature(conn: Conn, path: Path, trusted: Collection[str]) -> tuple[date, Verified]:
    """Records who signed an export, once the signature verifies against a trusted key and the file is the one the
    floor wrote for its day (the sha256 recorded at export): a signed file from elsewhere is no export of ours."""
    good = verify(path, trusted)
    # By sha256 and file name: the name carries the day, and days without events share the header-only file.
    with conn.transaction():
        days = [
            day
            for day, recorded in conn.execute("SELECT gaming_day, path FROM exports WHERE sha256 = %s", (good.sha256,))
            if Path(recorded).name == path.name
        ]
        if len(days) == 1:
            conn.execute(
                "UPDATE exports SET signer_public_key = %s, signed_at = now(), path = %s WHERE gaming_day = %s",
                (good.signer, str(path.absolute()), days[0]),
            )
    if len(days) != 1:
        raise ExportError(
            f"{path}: signed by a trusted key, but not the latest export of any gaming day in this archive "
            f"(sha256 {good.sha256}): export the day again (`tablectl report export --day D`) and sign that file"
        )
    day: date = days[0]
    return day, good
