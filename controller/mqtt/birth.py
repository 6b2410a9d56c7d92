"""The table's birth message (<prefix>/<table_id>/birth): what runs this table, under which rules, on which devices.

A supervisor or an examiner reads it to check that the installed code is the certified one (the hash), that the
paytables in force are those of the Rules Submission, and which devices (and firmware) are connected.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from datetime import UTC, datetime
from enum import IntEnum
from functools import cache
from pathlib import Path
from typing import Any

import controller
from controller import __version__
from controller.config.table import TableConfig, configured_devices, station_id
from controller.games.registry import dealing_method, spec_for
from controller.mqtt.contract import Birth, DeviceInfo, GameInfo, PaytableInfo, Software

# The packages whose sources make up the installed code, hashed in this order of relative path.
CODE_PACKAGES = ("controller", "drivers")


def code_hash(root: Path | None = None) -> tuple[str, int]:
    """sha256 over every .py file of controller/ and drivers/ (path relative to `root`, NUL, bytes, NUL), in
    sorted path order, and the number of files. Paths use "/" so the hash does not depend on the OS."""
    base = root or Path(controller.__file__).resolve().parent.parent
    files = sorted(
        (p.relative_to(base).as_posix(), p)
        for package in CODE_PACKAGES
        for p in (base / package).rglob("*.py")
        if "__pycache__" not in p.parts
    )
    digest = hashlib.sha256()
    for rel, path in files:
        digest.update(rel.encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest(), len(files)


@cache
def installed_code() -> tuple[str, int]:
    """The running installation's hash, computed once per process (the sources do not change under it)."""
    return code_hash()


def _iso(now: datetime) -> str:
    return now.astimezone(UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")


def _rows(table: Any) -> dict[str, str]:
    """hand class -> award text, for every paytable shape the chapters use."""
    rows: Mapping[Any, Any]
    extra: dict[str, str] = {}
    if hasattr(table, "push_rows"):  # 683a: rows printed as "Push" or "Loss" are outcomes, not odds
        extra = {h.name.lower(): "push" for h in table.push_rows} | {h.name.lower(): "lose" for h in table.loss_rows}
        table = table.paytable
    rows = table.rows if hasattr(table, "rows") else table
    out = {(k.name.lower() if isinstance(k, IntEnum) else str(k)): str(v) for k, v in rows.items()}
    return out | extra


def _lettered(wager: str, table: Any, letter: str | None) -> PaytableInfo:
    return PaytableInfo(wager=wager, citation=table.citation, letter=letter, rows=_rows(table))


def _submission(rules: Any) -> list[PaytableInfo]:
    """Tables the Rules Submission gives because the available chapter text does not (679a, 684a)."""
    from controller.games.three_card_prime import SUBMISSION

    out = []
    for name in ("ante_odds", "play_odds"):
        odds = getattr(rules, name, None)
        if isinstance(odds, str):
            out.append(
                PaytableInfo(
                    wager=name.removesuffix("_odds"),
                    citation=f"{SUBMISSION} {name}",
                    letter=None,
                    rows={"beats_qualified_dealer": odds},
                )
            )
    for name, value in rules:
        if name.endswith("_paytable") and isinstance(value, dict):
            out.append(
                PaytableInfo(
                    wager=name.removesuffix("_paytable"),
                    citation=f"{SUBMISSION} {name}",
                    letter=None,
                    rows={str(k): str(v) for k, v in value.items()},
                )
            )
    return out


def _655a(rules: Any) -> list[PaytableInfo]:
    from controller.games import mississippi_stud as ms

    out = [_lettered("ante", ms.ANTE_AND_STREETS, None)]
    if (letter := rules.three_card_bonus_paytable) is not None:
        out.append(_lettered("three_card_bonus", ms.THREE_CARD_BONUS[letter], letter))
    if (letter := rules.six_card_bonus_paytable) is not None:
        info = _lettered("six_card_bonus", ms.SIX_CARD_BONUS[letter], letter)
        if letter in ms.SIX_CARD_ROYAL_DIAMONDS:
            diamonds = _rows(ms.SIX_CARD_ROYAL_DIAMONDS[letter])
            info = info.model_copy(update={"rows": info.rows | {f"{k}_of_diamonds": v for k, v in diamonds.items()}})
        out.append(info)
    if (letter := rules.progressive_paytable) is not None:
        out.append(
            PaytableInfo(
                wager="progressive",
                citation=f"655a.12(c)(1) paytable {letter}",
                letter=letter,
                rows=_rows(ms.PROGRESSIVE[letter]),
            )
        )
    if rules.five_card_hand_bonus:
        out.append(
            PaytableInfo(
                wager="five_card_hand_bonus", citation="655a.12(e)(1)", letter=None, rows=_rows(ms.FIVE_CARD_HAND_BONUS)
            )
        )
    return out


def _643a(rules: Any) -> list[PaytableInfo]:
    from controller.games import let_it_ride_paytables as lir

    out = [_lettered("bet", lir.LET_IT_RIDE[rules.let_it_ride_paytable], rules.let_it_ride_paytable)]
    lettered: dict[str, Mapping[str, Any]] = {
        "five_card_bonus": lir.FIVE_CARD_BONUS,
        "three_card_bonus": lir.THREE_CARD_BONUS,
        "three_card_progressive": lir.THREE_CARD_PROGRESSIVE,
    }
    for wager, tables in lettered.items():
        letter = getattr(rules, f"{wager}_paytable", None)
        if getattr(rules, wager, False) and letter is not None:
            out.append(_lettered(wager, tables[letter], letter))
    fixed: dict[str, Any] = {
        "five_card_progressive": lir.FIVE_CARD_PROGRESSIVE,
        "five_card_hand_bonus": lir.FIVE_CARD_HAND_BONUS,
    }
    for wager, table in fixed.items():
        if getattr(rules, wager, False):
            out.append(_lettered(wager, table, None))
    return out


def _683a(rules: Any) -> list[PaytableInfo]:
    from controller.games.cajun_stud_paytables import PAYTABLES

    out = []
    for wager, tables in PAYTABLES.items():
        letter = getattr(rules, f"{wager}_paytable", None)
        if letter is not None:
            out.append(_lettered(wager, tables[letter], letter))
    return out


def paytables(rules: Any) -> list[PaytableInfo]:
    """The paytables in force under these rules, each with its citation and rows."""
    match rules.chapter:
        case "655a":
            return _655a(rules)
        case "643a":
            return _643a(rules)
        case "683a":
            return _683a(rules)
        case _:
            return _submission(rules)


def device_infos(config: TableConfig) -> list[DeviceInfo]:
    """Every configured device under the id its events use; a wager bus's stations appear one per seat."""

    out = []
    for device_id, raw in configured_devices(config).items():
        seat = raw.get("seat")
        out.append(
            DeviceInfo(
                device_id=device_id,
                driver=str(raw.get("driver")),
                port=_port(raw),
                seat=seat if isinstance(seat, int) else None,
                identity=None,
            )
        )
    bus = config.devices.wager_bus if config.devices is not None else None
    if bus is not None:
        stations = bus.get("stations", [])
        seats = [s.get("seat") for s in stations if isinstance(s, dict)] + list(bus.get("seats", []))
        out += [
            DeviceInfo(
                device_id=station_id(seat), driver=str(bus.get("driver")), port=_port(bus), seat=seat, identity=None
            )
            for seat in seats
            if isinstance(seat, int)
        ]
    return out


def _port(raw: Mapping[str, Any]) -> str | None:
    port = raw.get("port")
    return str(port) if port is not None else None


def build_birth(config: TableConfig, boot_id: str, now: datetime | None = None) -> Birth:
    digest, files = installed_code()
    rules = config.game
    spec = spec_for(rules)
    return Birth(
        table_id=config.table_id,
        boot_id=boot_id,
        ts=_iso(now or datetime.now(UTC)),
        software=Software(version=__version__, code_sha256=digest, code_files=files),
        game=GameInfo(
            chapter=rules.chapter,
            name=spec.name if spec is not None else rules.chapter,
            seats=rules.seats,
            dealing_method=dealing_method(rules),
            rules=rules.model_dump(mode="json"),
        ),
        paytables=paytables(rules),
        devices=device_infos(config),
    )


def with_identities(birth: Birth, identities: Mapping[str, Mapping[str, str]]) -> Birth:
    """The birth with each device's identity as it reported it; devices not configured are added (a driver
    reported under an id the config does not name, which an examiner should see)."""
    known = {d.device_id for d in birth.devices}
    devices = [
        d.model_copy(update={"identity": dict(identities[d.device_id])}) if d.device_id in identities else d
        for d in birth.devices
    ]
    devices += [
        DeviceInfo(device_id=dev, driver="unknown", identity=dict(ident))
        for dev, ident in sorted(identities.items())
        if dev not in known
    ]
    return birth.model_copy(update={"devices": devices})
