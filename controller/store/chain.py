"""The journal's hash chain: how one row links to the one before it (docs/journal.md, "Integrity").

Every row carries `hash` = sha256(previous row's hash || canonical encoding of the row's immutable fields),
genesis 64 zeros, one chain per table. This module is the recipe alone, with no database: the writer
(controller.store.journal), the migration of a schema 1 file (controller.store.schema) and the verifier
(controller.store.walk) all link rows with it, so they cannot disagree.
"""

from __future__ import annotations

import hashlib
import json

GENESIS = "0" * 64

# json.dumps(..., ensure_ascii=False, separators=(",", ":")) builds an encoder at every call; the same encoder, once.
_CANONICAL = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"))


def row_hash(
    prev: str,
    seq: int,
    event_id: str,
    boot_id: str,
    ts: str,
    table_id: str,
    round_id: str | None,
    type_: str,
    rule: str | None,
    payload: str,
    sealed: str | None,
) -> str:
    """The chain link of one row: sha256 over the previous row's hash (32 bytes) and the canonical encoding of
    the row's immutable fields, a compact UTF-8 JSON array in this order (payload and sealed as stored, i.e.
    their own canonical JSON text). docs/journal.md gives the recipe for an independent checker."""
    enc = _CANONICAL.encode([seq, event_id, boot_id, ts, table_id, round_id, type_, rule, payload, sealed])
    try:
        prev_bytes = bytes.fromhex(prev)
    except (ValueError, TypeError):
        prev_bytes = str(prev).encode()  # a damaged stored hash: the link will not match, which is the finding
    # surrogateescape: text verify read from a damaged row (not UTF-8) hashes as the bytes stored, so it is a
    # finding, not an exception. Valid text encodes as plain UTF-8.
    return hashlib.sha256(prev_bytes + enc.encode("utf-8", "surrogateescape")).hexdigest()
