"""An installation of its own for each test: the packages copied to a temp dir, as `pip install` would lay them out,
a release key, and the real `tablectl` run from there (the copy, not the checkout, is what it imports and checks)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

from controller.release.manifest import PACKAGES
from tests import tablectl_runs

ROOT = Path(__file__).resolve().parents[2]


@dataclass
class Install:
    root: Path
    key: Path  # the release key (private, PEM)
    public: str  # its public key, base64, as [software] release_keys lists it

    def env(self) -> dict[str, str]:
        return {**os.environ, "PYTHONPATH": str(self.root), "PYTHONDONTWRITEBYTECODE": "1"}

    def tablectl(self, *args: str | Path, timeout: float = 60) -> subprocess.CompletedProcess[str]:
        # `-m` puts the working directory first on sys.path: the copy is imported, not the checkout.
        return tablectl_runs.tablectl(*args, timeout=timeout, cwd=self.root, env=self.env())

    def sign(self) -> str:
        """Sign the installation as it is now; the digest `release sign` printed."""
        out = self.tablectl("release", "sign", "--key", self.key)
        assert out.returncode == 0, out.stderr
        found = re.search(r"^digest: ([0-9a-f]{64})$", out.stdout, re.M)
        assert found is not None, out.stdout
        return found.group(1)


def copy_packages(target: Path) -> None:
    for package in PACKAGES:
        shutil.copytree(ROOT / package, target / package, ignore=shutil.ignore_patterns("__pycache__"))


@pytest.fixture
def install(tmp_path: Path) -> Install:
    root = tmp_path / "site"
    root.mkdir()
    copy_packages(root)
    inst = Install(root, tmp_path / "release.pem", "")
    out = inst.tablectl("release", "keygen", "--out", inst.key)
    assert out.returncode == 0, out.stderr
    found = re.search(r"^public key: (\S+)$", out.stdout, re.M)
    assert found is not None and f'release_keys = ["{found.group(1)}"]' in out.stdout
    inst.public = found.group(1)
    return inst
