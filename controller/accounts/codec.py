"""The game accounts' stored form: two copies of one canonical JSON line, each with its SHA-256, like the
progressive meters (controller/progressive/codec.py, docs/progressive.md "Persisted form").

A copy that is not JSON, of another format, fails its checksum, has a bad field or does not balance is corrupt.
Loading never resets the accounts: with no sound copy the caller raises a tilt; a missing, damaged or
differing copy is named in the findings, and the caller raises the `tilt:accounts` tilt.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any

from controller.accounts.ledger import Ledger
from controller.core.digits import is_ascii_digits

FORMAT = "tablectl-game-accounts"
VERSION = 1


class AccountsCorrupt(ValueError):
    """No stored copy of the accounts can be read; the message says why."""


def _digest(body: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(body, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def _state(ledger: Ledger) -> dict[str, Any]:
    return {
        "balances": {str(s): v for s, v in sorted(ledger.balances.items())},
        "bought_in": ledger.bought_in,
        "wagered": ledger.wagered,
        "won": ledger.won,
        "returned": ledger.returned,
        "cashed_out": ledger.cashed_out,
        "seq": ledger.seq,
    }


def encode(ledger: Ledger, generation: int) -> bytes:
    problem = ledger.balance_problem()
    if problem is not None:
        raise ValueError(f"refusing to store game accounts that do not balance: {problem}")
    body = {"format": FORMAT, "version": VERSION, "generation": generation, "state": _state(ledger)}
    return json.dumps({**body, "sha256": _digest(body)}, sort_keys=True, separators=(",", ":")).encode()


def _int(value: object, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{what} is not a whole number")
    return value


def decode(raw: bytes) -> tuple[Ledger, int]:
    """The ledger and its generation, or ValueError naming what is wrong with the copy."""
    try:
        doc = json.loads(raw)
    except (ValueError, UnicodeDecodeError) as err:
        raise ValueError(f"not JSON ({err})") from None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT or doc.get("version") != VERSION:
        raise ValueError(f"not a {FORMAT} version {VERSION} record")
    body = {k: doc.get(k) for k in ("format", "version", "generation", "state")}
    if doc.get("sha256") != _digest(body):
        raise ValueError("fails its sha256 check")
    st = doc["state"]
    if not isinstance(st, dict) or not isinstance(st.get("balances"), dict):
        raise ValueError("has no balances")
    balances = {}
    for seat, v in st["balances"].items():
        if not is_ascii_digits(str(seat)):
            raise ValueError(f"balance of {seat!r}: not a seat (a seat is written in ASCII digits 0-9)")
        balances[int(seat)] = _int(v, f"the balance of seat {seat}")
    ledger = Ledger(
        balances=balances,
        **{k: _int(st.get(k), k) for k in ("bought_in", "wagered", "won", "returned", "cashed_out", "seq")},
    )
    problem = ledger.balance_problem()
    if problem is not None:
        raise ValueError(problem)
    return ledger, _int(doc["generation"], "generation")


@dataclass(frozen=True)
class Loaded:
    """The accounts load_copies chose: the newest sound copy's ledger, and what is wrong with the copies."""

    ledger: Ledger
    generation: int
    findings: list[str]  # what is wrong with the copies; any finding raises the `tilt:accounts` tilt


def load_copies(a: bytes | None, b: bytes | None) -> Loaded:
    """Both copies decoded and compared: the newest sound copy, and what is wrong with the others."""
    sound: list[tuple[str, Ledger, int]] = []
    findings: list[str] = []
    for name, raw in (("A", a), ("B", b)):
        if raw is None:
            findings.append(f"copy {name} of the game accounts is missing")
            continue
        try:
            ledger, gen = decode(raw)
        except ValueError as err:
            findings.append(f"copy {name} of the game accounts {err}")
            continue
        sound.append((name, ledger, gen))
    if not sound:
        raise AccountsCorrupt("; ".join(findings))
    name, ledger, gen = max(sound, key=lambda x: (x[2], x[1].seq))
    if len(sound) == 2 and (sound[0][1] != sound[1][1] or sound[0][2] != sound[1][2]):
        findings.append(
            f"the copies differ (A generation {sound[0][2]} seq {sound[0][1].seq}, "
            f"B generation {sound[1][2]} seq {sound[1][1].seq}): copy {name} used"
        )
    return Loaded(ledger, gen, findings)
