"""The installed code as found on disk, and its verdict against the signed manifest (controller.release.manifest).

Which files: every regular file under the installed packages (controller/, drivers/, floor/ beside each other,
where Python imports them from), except the `__pycache__` folders the interpreter writes itself. That is the same
list for an editable install (the checkout) and a wheel (site-packages), so a manifest signed from a clean
checkout of a tag verifies a wheel built from it (docs/software.md). A module planted among them (a `.py`, or a
`.pyc` outside `__pycache__`, which Python imports too) is an extra file and refuses the table.
"""

from __future__ import annotations

import functools
import hashlib
import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import controller
from controller.config.files import FileRefused, read_bounded
from controller.release.manifest import PACKAGES, Judgement, Manifest, ManifestError, judge, parse

MANIFEST_NAME = "tablectl-release.json"
# A manifest lists a few hundred files at ~90 bytes each; anything near this is the wrong file.
MANIFEST_MAX_BYTES = 8 * 1024 * 1024
SKIPPED_DIRS = frozenset({"__pycache__"})


def installed_root() -> Path:
    """The folder that holds the running packages (the checkout for an editable install, site-packages for a wheel)."""
    return Path(controller.__file__).resolve().parent.parent


def default_manifest(root: Path | None = None) -> Path:
    return (root or installed_root()) / MANIFEST_NAME


def installed_files(root: Path, packages: Iterable[str] = PACKAGES) -> list[Path]:
    """Every file to hash under `root`'s packages, in no particular order (listing() sorts)."""
    out: list[Path] = []
    for package in packages:
        for folder, dirs, names in os.walk(root / package):
            dirs[:] = [d for d in dirs if d not in SKIPPED_DIRS]
            out += [Path(folder, n) for n in names]
    return out


def scan(root: Path, packages: Iterable[str] = PACKAGES) -> dict[str, str]:
    """Relative path ('/'-separated) -> sha256 of every installed file under `root`."""
    found: dict[str, str] = {}
    for path in installed_files(root, packages):
        with path.open("rb") as f:
            found[path.relative_to(root).as_posix()] = hashlib.file_digest(f, "sha256").hexdigest()
    return found


def read_manifest(path: Path) -> tuple[Manifest | None, str | None]:
    """(the manifest, None), (None, why it cannot be read), or (None, None) when there is no file at `path`."""
    if not path.exists():
        return None, None
    try:
        return parse(read_bounded(path, MANIFEST_MAX_BYTES)), None
    except FileRefused as err:
        return None, err.problem
    except ManifestError as err:
        return None, str(err)


def check(root: Path, manifest_path: Path, trusted: Iterable[str]) -> Judgement:
    manifest, problem = read_manifest(manifest_path)
    packages = manifest.packages if manifest is not None else PACKAGES
    return judge(
        scan(root, packages), manifest, tuple(trusted), manifest_problem=problem, manifest_path=str(manifest_path)
    )


@dataclass(frozen=True, slots=True)
class SoftwareCheck:
    """The start-up check: the verdict, and whether the table refuses to open on it under the config."""

    judgement: Judgement
    require_verified: bool

    @property
    def refused(self) -> bool:
        return self.judgement.refuses(self.require_verified)


@functools.cache
def _check_installed(manifest: str | None, keys: tuple[str, ...]) -> Judgement:
    root = installed_root()
    return check(root, Path(manifest) if manifest else default_manifest(root), keys)


def check_installed(manifest: str | None, keys: Iterable[str], require_verified: bool) -> SoftwareCheck:
    """The running installation's verdict, computed once per process for a manifest and keys (the daemon checks at
    start; the birth message and the start-up event then say the same)."""
    return SoftwareCheck(_check_installed(manifest, tuple(keys)), require_verified)
