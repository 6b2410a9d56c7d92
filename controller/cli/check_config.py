"""`tablectl check-config FILE...`: is this table config ready to run, and if not, what to change.

It runs every check `tablectl run` makes before it opens the table (controller.cli.preflight.check_file, which
`run` calls too): the schema, each device's driver and its settings, the files the config names, the journal.
A config the engine cannot run yet is a warning: it is valid, and `tablectl settle` uses it; `run` refuses it.
Exit status: 0 every file valid, 1 one is not, 2 bad usage.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any, TextIO

from controller.cli.bytecode import missing_bytecode
from controller.cli.findings import Finding
from controller.cli.preflight import Report, check_file, device_entries
from controller.cli.shown import shown, shown_lines
from controller.config.table import TableConfig
from controller.core.invariant import present
from controller.games.registry import spec_for
from controller.mqtt.birth import software_check
from controller.shell.runner import default_journal_path

# -- the verb --------------------------------------------------------------------------------------------------


def summary(report: Report) -> str:
    config = present(report.config, "the config of a check that passed")
    spec = spec_for(config.game)
    game = f"{config.game.chapter}" + (f" ({spec.name})" if spec is not None else "")
    devices = [where for where, _ in device_entries(config.devices.model_dump())] if config.devices else []
    stations = len(config.devices.station_seats()) if config.devices else 0
    warned = f", {len(report.warnings)} warning(s)" if report.warnings else ""
    journal = config.journal.path or default_journal_path(config.table_id)
    sw = config.software
    required = "require_verified = " + str(sw.required).lower() + (" (default)" if sw.require_verified is None else "")
    return (
        f"{report.path}: valid{warned}: table {config.table_id}, game {game}, {config.game.seats} seats, "
        f"{len(devices)} device(s) ({stations} wager station(s)), broker {config.mqtt.broker}, journal {journal}, "
        f"software {software_check(config).judgement.verdict} ({required}, {len(sw.release_keys)} release key(s))"
    )


def software_findings(config: TableConfig) -> list[Finding]:
    """The check of the installed code `run` makes at start (605a.4(c), docs/software.md). Only here an error: `run`
    itself opens the journal and records the refusal (tilt:software), so it does not refuse the config."""
    check = software_check(config)
    j = check.judgement
    if check.refused:
        return [Finding("error", "software", f"`tablectl run` would keep the table closed: {j.problem}", "")]
    if j.verdict != "verified":
        default = " (the default without release_keys)" if config.software.require_verified is None else ""
        return [
            Finding(
                "warning",
                "software.require_verified",
                f"is false{default}: the table opens on code no signed release vouches for ({j.verdict}: {j.problem})",
                "in production list the release key in [software] release_keys and install the signed manifest "
                "(docs/software.md)",
            )
        ]
    return []


def bytecode_findings() -> list[Finding]:
    """A warning when the table's unit would start without the bytecode of its optimised level (bytecode.py)."""
    found = missing_bytecode()
    return [] if found is None else [Finding("warning", "bytecode", *found)]


def print_report(report: Report, out: TextIO) -> None:
    # The paths and the config's own values (a TOML string may hold any escape) are quoted as shown escapes them:
    # a report is read on a terminal.
    if report.valid:
        print(shown_lines(summary(report)), file=out)
    else:
        print(
            shown(f"{report.path}: INVALID, {len(report.errors)} error(s)")
            + (f", {len(report.warnings)} warning(s)" if report.warnings else ""),
            file=out,
        )
    for finding in [*report.errors, *report.warnings]:
        print(shown_lines(finding.render()), file=out)


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "check-config",
        help="check table configs: schema, drivers, files, journal; say what to fix",
        description="Checks each table config as `tablectl run` would use it: every setting (the field, what is "
        "wrong and how to fix it), that each device's driver is installed and takes its settings, "
        "that the MQTT password, CA, certificate and key files exist and load, and that the journal "
        "can be written. Warns about ports that do not exist and configs the engine cannot run yet. "
        "Exit status 0 when every file is valid, 1 when one is not, 2 for bad usage.",
    )
    p.add_argument("files", type=Path, nargs="+", metavar="FILE", help="table config TOML")


def main(args: argparse.Namespace, out: TextIO | None = None) -> int:
    stream = out or sys.stdout
    reports = [check_file(path) for path in args.files]
    for report in reports:
        if report.config is not None:
            report.findings += software_findings(report.config) + bytecode_findings()
    for report in reports:
        print_report(report, stream)
    return 0 if all(r.valid for r in reports) else 1
