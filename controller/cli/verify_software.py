"""`tablectl verify-software`: the installed code against its signed release manifest, file by file (605a.4(c)).

Prints each file that is altered, missing or not in the manifest, the verdict and the overall digest a laboratory
compares with its own (docs/software.md); `--json` prints every file with its verdict. Exit status 0 verified,
1 not verified (the line says why and what to do), 2 bad usage.
"""

from __future__ import annotations

import argparse
import json
import tomllib
from pathlib import Path

from pydantic import ValidationError

from controller.cli import numbers
from controller.cli.verb import Subparsers, UsageError
from controller.config.files import CONFIG_MAX_BYTES, FileRefused, read_bounded
from controller.config.keys import RELEASE_KEY_FIX, decode_public_key
from controller.config.software import SoftwareSettings
from controller.release.installed import MANIFEST_NAME, check, default_manifest, installed_root
from controller.release.manifest import RULE, Judgement


def add_parser(sub: Subparsers) -> None:
    p = sub.add_parser(
        "verify-software",
        help="check the installed code against its signed release manifest; print the digest",
        description="Hashes every installed file of controller/, drivers/, floor/ and link/, checks the manifest's "
        "signature and release key, and says which files are altered, missing or extra. Exit 0 when verified.",
    )
    p.add_argument("--config", type=Path, help="table config: its [software] release_keys and manifest")
    p.add_argument("--key", action="append", default=[], help="a release public key (base64); may be repeated")
    p.add_argument("--manifest", type=Path, help=f"the manifest (default: the config's, else ROOT/{MANIFEST_NAME})")
    p.add_argument(
        "--root",
        type=Path,
        help="the folder holding controller/, drivers/, floor/, link/ (default: the running installation's)",
    )
    p.add_argument("--json", action="store_true", help="print the verdict of every file as JSON")


def main(args: argparse.Namespace) -> int:
    keys: list[str] = list(args.key)
    for key in keys:
        try:
            decode_public_key(key, RELEASE_KEY_FIX)
        except ValueError as err:
            # Named here: the verdict would otherwise be about the manifest, and the mistyped key never mentioned.
            raise UsageError(f"--key {numbers.shown(key)} {err}") from None
    manifest: Path | None = args.manifest
    if args.config is not None:
        software = software_settings(args.config)
        keys += software.release_keys
        if manifest is None and software.manifest is not None:
            manifest = Path(software.manifest)
    root = (args.root or installed_root()).resolve()
    if not (root / "controller").is_dir():
        raise UsageError(f"verify-software: {root} has no controller/ package: give --root the folder that holds it")
    judgement = check(root, manifest or default_manifest(root), keys)
    print(json.dumps(as_json(judgement, root), indent=1) if args.json else as_text(judgement, root))
    return 0 if judgement.verdict == "verified" else 1


def software_settings(path: Path) -> SoftwareSettings:
    """The config's [software] table, read without importing the rest of the controller: the check must report a
    tampered module, not fail importing it (`tablectl check-config` checks the whole config)."""
    try:
        data = tomllib.loads(read_bounded(path, CONFIG_MAX_BYTES).decode("utf-8"))
        return SoftwareSettings.model_validate(data.get("software", {}))
    except FileRefused as err:
        raise UsageError(f"cannot read config {err}") from None
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as err:
        raise UsageError(
            f"{path} is not a TOML table config: {err}; `tablectl check-config {path}` says more"
        ) from None
    except ValidationError as err:
        first = err.errors()[0]
        where = ".".join(str(part) for part in ("software", *first["loc"]))
        raise UsageError(f"{path}: {where}: {first['msg'].removeprefix('Value error, ')}") from None


def as_json(j: Judgement, root: Path) -> dict[str, object]:
    m = j.manifest
    return {
        "rule": RULE,
        "verdict": j.verdict,
        "problem": j.problem,
        "digest": j.digest,
        "root": str(root),
        "manifest": j.manifest_path,
        "manifest_digest": m.digest if m is not None else None,
        "version": m.version if m is not None else None,
        "key": j.key,
        "files": [{"path": p, "verdict": v} for p, v in j.statuses().items()],
        "entry_points": [{"entry_point": e, "verdict": v} for e, v in j.entry_point_statuses().items()],
    }


def as_text(j: Judgement, root: Path) -> str:
    statuses = j.statuses()
    lines = [f"{v:<9} {p}" for p, v in statuses.items() if v not in ("ok", "unverified")]
    lines += [f"{v:<9} entry point {e}" for e, v in j.entry_point_statuses().items() if v not in ("ok", "unverified")]
    count = len(j.found)
    signed = sum(1 for v in statuses.values() if v == "ok")
    lines += [
        f"root:     {root}",
        f"manifest: {j.manifest_path}" + (f" (release {j.manifest.version})" if j.manifest is not None else ""),
        f"key:      {j.key or '-'}",
        f"files:    {count} installed, {signed} as signed",
        f"digest:   {j.digest}",
        f"verdict:  {j.verdict} ({RULE})" + (f": {j.problem}" if j.problem else ""),
    ]
    return "\n".join(lines)
