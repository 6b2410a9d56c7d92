"""`tablectl release`: make the release key, and build and sign the manifest of the installed code (605a.4(c)).

    tablectl release keygen --out release.pem
    tablectl release sign --key release.pem [--root DIR] [--out FILE]

docs/software.md is the release procedure; `tablectl verify-software` checks an installation against the manifest.
"""

from __future__ import annotations

import argparse
import os
import sys
from datetime import UTC, datetime
from pathlib import Path

from controller import __version__
from controller.cli.verb import Subparsers, UsageError
from controller.release.installed import MANIFEST_NAME, entry_points_at, installed_root, scan
from controller.release.keyfile import KeyFileError, load_key, write_new_key
from controller.release.manifest import ManifestError, public_key_b64, sign


def add_parser(sub: Subparsers) -> None:
    p = sub.add_parser(
        "release",
        help="make the release key; build and sign the manifest of the installed code",
        description="A release manifest lists every file of the installed controller/, drivers/, floor/ and link/ with "
        "its sha256 and is signed with an Ed25519 release key; `tablectl run` checks the installed code against "
        "it before the table opens (605a.4(c); docs/software.md).",
    )
    actions = p.add_subparsers(dest="action", required=True, metavar="ACTION")
    keygen = actions.add_parser(
        "keygen",
        help="make a release key: the private key to a file, the config line to stdout",
        description="Writes a new Ed25519 private key (PEM, mode 0600; never overwrites) and prints the "
        "[software] release_keys line each table's config lists it with. Keep the key off the table PCs.",
    )
    keygen.add_argument("--out", type=Path, required=True, help="where to write the private key (must not exist)")
    signer = actions.add_parser(
        "sign",
        help="hash every installed file, sign the manifest with the release key",
        description="Hashes every file of controller/, drivers/, floor/ and link/ under ROOT (the running "
        "installation's by default), signs the list with the release key and writes the manifest; prints the "
        "overall digest a laboratory compares with its own.",
    )
    signer.add_argument("--key", type=Path, required=True, help="the release key (PEM, from `release keygen`)")
    signer.add_argument(
        "--root", type=Path, help="the folder holding controller/, drivers/, floor/, link/ (default: the running ones')"
    )
    signer.add_argument("--out", type=Path, help=f"where to write the manifest (default: ROOT/{MANIFEST_NAME})")


def main(args: argparse.Namespace) -> int:
    try:
        if args.action == "keygen":
            key = write_new_key(args.out)
            public = public_key_b64(key)
            print(f"release key written to {args.out} (mode 0600): keep it off the table PCs, with the release manager")
            print(f'public key: {public}\n\n# add to each table\'s config:\n[software]\nrelease_keys = ["{public}"]')
            return 0
        return _sign(args.key, args.root, args.out)
    except (KeyFileError, ManifestError) as err:
        raise UsageError(f"release {args.action}: {err}") from None


def _sign(key_path: Path, root: Path | None, out: Path | None) -> int:
    key = load_key(key_path)
    base = (root or installed_root()).resolve()
    if not (base / "controller").is_dir():
        raise UsageError(f"release sign: {base} has no controller/ package: give --root the folder that holds it")
    print(f"hashing the installed files under {base} ...", file=sys.stderr)
    files = scan(base)
    points = entry_points_at(base)
    created = datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")
    manifest = sign(files, __version__, created, key, points)
    target = out or base / MANIFEST_NAME
    tmp = target.with_name(target.name + ".tmp")
    tmp.write_bytes(manifest.to_json())
    os.replace(tmp, target)  # a reader never sees half a manifest
    print(f"manifest: {target}")
    print(f"files: {len(files)}")
    print(f"entry points: {len(points)}")
    print(f"key: {manifest.key}")
    print(f"digest: {manifest.digest}")
    return 0
