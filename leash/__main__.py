"""`python3 -m leash --sweep`: stop the servers of every project temp dir whose owner is gone and delete it."""

from __future__ import annotations

import sys

from leash import sweep


def main(argv: list[str]) -> int:
    if argv != ["--sweep"]:
        print("usage: python3 -m leash --sweep", file=sys.stderr)
        return 2
    for line in sweep():
        print(f"leash: swept {line}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
