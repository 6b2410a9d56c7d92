"""The table's birth message (<prefix>/<table_id>/birth): what runs this table, under which rules, on which devices.

A supervisor or an examiner reads it to check that the installed code is the certified one (the digest and the
verdict of the check at start against the signed release manifest, docs/software.md), that the
paytables in force are those of the Rules Submission, and which devices (and firmware) are connected.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from controller import __version__
from controller.config.table import TableConfig, configured_devices, station_id
from controller.core.settlement import ChapterRules
from controller.games.registry import chapter_of, dealing_method, spec_for
from controller.mqtt.contract import Birth, DeviceInfo, GameInfo, PaytableInfo, Software
from controller.release.installed import SoftwareCheck, check_installed
from drivers.registry import installed_entry_points


def software_check(config: TableConfig) -> SoftwareCheck:
    """The installed code's verdict under this config's [software] (computed once per process: controller.release),
    its entry points read from the scan the drivers are loaded from (one scan per start, drivers.registry)."""
    s = config.software
    return check_installed(s.manifest, s.release_keys, s.required, installed_entry_points)


def _iso(now: datetime) -> str:
    return now.astimezone(UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")


def paytables(rules: ChapterRules) -> list[PaytableInfo]:
    """The paytables in force under these rules, each with its citation and rows, as their chapter describes them."""
    return [
        PaytableInfo(wager=p.wager, citation=p.citation, letter=p.letter, rows=dict(p.rows))
        for p in chapter_of(rules).paytables(rules)
    ]


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
    judged = software_check(config).judgement
    rules = config.game
    spec = spec_for(rules)
    return Birth(
        table_id=config.table_id,
        boot_id=boot_id,
        ts=_iso(now or datetime.now(UTC)),
        software=Software(
            version=__version__,
            code_sha256=judged.digest,
            code_files=len(judged.found),
            verdict=judged.verdict,
            release_key=judged.key,
        ),
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


def growth(birth: Birth) -> str:
    """What grew a birth past the broker's packet limit at run time, for the tilt that says so: a birth is within it at
    start (controller.cli.check_files), so it is what the devices reported of themselves (the identities, and devices
    the config does not name), the largest first."""
    sizes = sorted(
        ((len(json.dumps(d.identity, ensure_ascii=False).encode()), d.device_id) for d in birth.devices if d.identity),
        reverse=True,
    )
    unnamed = [d.device_id for d in birth.devices if d.driver == "unknown"]
    said = "what the devices reported of themselves"
    if sizes:
        said += ", the largest identity " + ", then ".join(f"{dev}'s ({n:,} bytes)" for n, dev in sizes[:3])
    if unnamed:
        said += f"; {len(unnamed)} device(s) the config does not name reported themselves ({', '.join(unnamed[:5])})"
    return said
