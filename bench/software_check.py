"""What the start-up check of the installed code costs (605a.4(c), docs/software.md), against a bare sha256 of the
same bytes.

  bare sha256 (baseline)  read every file of the installation and sha256 it, nothing else
  verification            what `tablectl run` does before the table opens: walk the packages, hash every file,
                          read and parse the signed manifest, check its Ed25519 signature and compare file by file

Both run over the running installation (page cache warm after the first pass), `--repeat` times each; the medians
and their ratio are printed. The manifest is signed for the run with a throwaway key into a temp file.

    .venv/bin/python bench/software_check.py [--repeat N]
"""

from __future__ import annotations

import argparse
import hashlib
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from controller import __version__
from controller.release.installed import check, entry_points_at, installed_files, installed_root, scan
from controller.release.manifest import public_key_b64, sign


def median_ms(work: Callable[[], object], repeat: int) -> float:
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        work()
        samples.append((time.perf_counter() - start) * 1000)
    return statistics.median(samples)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=30)
    args = ap.parse_args()
    root = installed_root()
    files = installed_files(root)
    size = sum(p.stat().st_size for p in files)
    key = Ed25519PrivateKey.generate()
    now = datetime.now(UTC).isoformat(timespec="seconds")
    print(f"{len(files)} files, {size / 1024:.0f} KiB under {root}; {args.repeat} runs each", file=sys.stderr)

    def bare() -> None:
        for p in files:
            hashlib.sha256(p.read_bytes()).hexdigest()

    with tempfile.TemporaryDirectory() as tmp:
        manifest = Path(tmp) / "tablectl-release.json"
        manifest.write_bytes(sign(scan(root), __version__, now, key, entry_points_at(root)).to_json())
        keys = [public_key_b64(key)]
        verdict = check(root, manifest, keys).verdict
        bare()  # the page cache warm for both
        base = median_ms(bare, args.repeat)
        full = median_ms(lambda: check(root, manifest, keys), args.repeat)
    print(f"bare sha256 of the same bytes (baseline): {base:8.2f} ms")
    print(f"verification ({verdict}):{'':>12}{full:8.2f} ms")
    print(f"ratio verification/bare sha256: {full / base:.2f}x; {full - base:.2f} ms over the baseline at start")
    return 0


if __name__ == "__main__":
    sys.exit(main())
