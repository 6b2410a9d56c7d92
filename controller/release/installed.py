"""The installed code as found on disk, and its verdict against the signed manifest (controller.release.manifest).

Which files: every regular file under the installed packages (controller/, drivers/, floor/, link/ beside each other,
where Python imports them from), except the `__pycache__` folders the interpreter writes itself. That is the same
list for an editable install (the checkout) and a wheel (site-packages), so a manifest signed from a clean
checkout of a tag verifies a wheel built from it (docs/software.md). A module planted among them (a `.py`, or a
`.pyc` outside `__pycache__`, which Python imports too) is an extra file and refuses the table.

Which entry points: the driver plugins' group and the `tablectl` command (manifest.covered_entry_point), as Python
finds them for the installation: they choose the class that drives each device, and a distribution's metadata
planted beside the packages could re-point one at code outside them without touching a file the list covers.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.metadata
import os
import re
import stat
import tomllib
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import controller
from controller.config.files import FileRefused, read_bounded
from controller.release.manifest import (
    COVERED_GROUPS,
    PACKAGES,
    Judgement,
    Manifest,
    ManifestError,
    covered_entry_point,
    entry_point_line,
    judge,
    parse,
)

MANIFEST_NAME = "tablectl-release.json"
# A manifest lists a few hundred files at ~90 bytes each; anything near this is the wrong file.
MANIFEST_MAX_BYTES = 8 * 1024 * 1024
PYPROJECT_MAX_BYTES = 1024 * 1024
SKIPPED_DIRS = frozenset({"__pycache__"})
READ_BYTES = 1 << 18  # a read's most: the largest installed file is ~21 KB


def installed_root() -> Path:
    """The folder that holds the running packages (the checkout for an editable install, site-packages for a wheel)."""
    return Path(controller.__file__).resolve().parent.parent


def default_manifest(root: Path | None = None) -> Path:
    return (root or installed_root()) / MANIFEST_NAME


def installed_files(root: Path, packages: Iterable[str] = PACKAGES) -> list[Path]:
    """Every file to hash under `root`'s packages (bench/software_check.py's baseline hashes the same)."""
    return [Path(folder, n) for package in packages for folder, _rel, n in _walk(root, package)]


def _walk(root: Path, package: str) -> Iterator[tuple[str, str, str]]:
    """(folder, its path relative to `root` with '/', file name) for every file under the package."""
    base = len(str(root)) + 1
    for folder, dirs, names in os.walk(root / package):
        dirs[:] = [d for d in dirs if d not in SKIPPED_DIRS]
        rel = folder[base:].replace(os.sep, "/")
        for name in names:
            yield folder, rel, name


def scan(root: Path, packages: Iterable[str] = PACKAGES) -> dict[str, str]:
    """Relative path ('/'-separated) -> sha256 of every installed file under `root`. Something planted that is not a
    regular file (a FIFO would block the reader for ever) is listed with the sha256 of a line saying what it is, so
    it shows as an extra or altered file and is never opened for reading."""
    found: dict[str, str] = {}
    for package in packages:
        for folder, rel, name in _walk(root, package):
            found[f"{rel}/{name}"] = _file_sha256(os.path.join(folder, name))
    return found


class Grouped(Protocol):
    """What importlib.metadata.entry_points() returns: a dict of groups on Python 3.11, one EntryPoints from 3.12."""

    def select(self, *, group: str) -> Iterable[importlib.metadata.EntryPoint]: ...


# Where the running installation's entry points come from: a function giving every group's, as
# importlib.metadata.entry_points() finds them. The daemon passes the driver registry's (drivers.registry
# .installed_entry_points, via controller.mqtt.birth) so that one scan serves the drivers and this check; this package
# may not import drivers (verify-software imports none of the code it checks), so it is handed in.
Scanned = Callable[[], Grouped]


def entry_points_at(root: Path, scanned: Scanned | None = None) -> list[str]:
    """The covered entry points of the installation at `root`, one line each (manifest.entry_point_line).

    The running installation: as Python finds them on sys.path, which is what drivers/registry.py loads (a second
    distribution registering a driver's name is one more line). Another root: a source tree (a clean checkout of the
    tag, with its pyproject.toml) declares them in pyproject.toml, which its wheel's metadata then says; a
    site-packages holds them in its distributions' metadata. `scanned` gives the running installation's (a scan of
    its own when None)."""
    root = root.resolve()
    if root == installed_root():
        found = _running(scanned)
    elif (root / "pyproject.toml").is_file():
        found = _declared(root / "pyproject.toml")
    else:
        found = _of(importlib.metadata.distributions(path=[str(root)]))
    return [entry_point_line(g, n, v) for g, n, v in found if covered_entry_point(g, n)]


def _running(scanned: Scanned | None = None) -> list[tuple[str, str, str]]:
    """The covered groups' entry points exactly as importlib.metadata.entry_points finds them for drivers/registry.py
    (each distribution once, the first found of a name). Asked per group, it reads each distribution's
    entry_points.txt only: _of's `dist.metadata` parses every installed distribution's whole METADATA (long
    descriptions included) with the email parser, about 15 ms of every start in a 78-package venv (issue 19)."""
    # Every group from one scan (one per group was a scan each); the registry's own when handed in (one per start).
    found = scanned() if scanned is not None else importlib.metadata.entry_points()
    return [(e.group, e.name, e.value) for g in COVERED_GROUPS for e in found.select(group=g)]


def _of(dists: Iterable[importlib.metadata.Distribution]) -> list[tuple[str, str, str]]:
    """Every entry point of these distributions, each distribution once: the first found of a name is the one Python
    uses (importlib.metadata.entry_points does the same)."""
    seen: set[str] = set()
    found: list[tuple[str, str, str]] = []
    for dist in dists:
        name = re.sub(r"[-_.]+", "-", dist.metadata["Name"] or "").lower()
        if name in seen:
            continue
        seen.add(name)
        found += [(e.group, e.name, e.value) for e in dist.entry_points]
    return found


def _declared(pyproject: Path) -> list[tuple[str, str, str]]:
    try:
        project = tomllib.loads(read_bounded(pyproject, PYPROJECT_MAX_BYTES).decode("utf-8")).get("project", {})
    except (FileRefused, UnicodeDecodeError, tomllib.TOMLDecodeError) as err:
        raise ManifestError(f"cannot read the entry points {pyproject} declares: {err}") from None
    groups = {"console_scripts": project.get("scripts", {}), **project.get("entry-points", {})}
    return [(g, n, str(v)) for g, points in groups.items() for n, v in points.items()]


def _file_sha256(path: str) -> str:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    except OSError as err:
        return hashlib.sha256(f"unreadable: {err.strerror}".encode()).hexdigest()
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            return hashlib.sha256(f"not a regular file: {stat.filemode(mode)}".encode()).hexdigest()
        # os.read rather than hashlib.file_digest, whose zeroed 256 KiB buffer and file object per file were half of
        # the check's CPU: 5.3 -> 2.9 ms for the 385 files every `tablectl run` hashes before its devices start
        # (issue 19); the same bytes, the same digest.
        digest = hashlib.sha256()
        while chunk := os.read(fd, READ_BYTES):
            digest.update(chunk)
        return digest.hexdigest()
    finally:
        os.close(fd)


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


def check(root: Path, manifest_path: Path, trusted: Iterable[str], scanned: Scanned | None = None) -> Judgement:
    manifest, problem = read_manifest(manifest_path)
    packages = manifest.packages if manifest is not None else PACKAGES
    return judge(
        scan(root, packages),
        manifest,
        tuple(trusted),
        manifest_problem=problem,
        manifest_path=str(manifest_path),
        entry_points=entry_points_at(root, scanned),
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
def _check_installed(manifest: str | None, keys: tuple[str, ...], scanned: Scanned | None) -> Judgement:
    root = installed_root()
    return check(root, Path(manifest) if manifest else default_manifest(root), keys, scanned)


def check_installed(
    manifest: str | None, keys: Iterable[str], require_verified: bool, scanned: Scanned | None = None
) -> SoftwareCheck:
    """The running installation's verdict, computed once per process for a manifest and keys (the daemon checks at
    start; the birth message and the start-up event then say the same). `scanned`: see Scanned."""
    return SoftwareCheck(_check_installed(manifest, tuple(keys), scanned), require_verified)
