"""CONTRIBUTING.md's size rule, checked: no non-test source file over 400 lines, no function over 60.

Python files are held to both (functions found by its ast); the other sources in the same trees (the console's
JavaScript, CSS and HTML, shell scripts, TOML, SQL) to the file limit alone. A function may run longer only where
splitting it would hurt clarity (a paytable, a state table) and a `# size: <why>` comment on its def line or the line
above says so. Files still waiting to be split are in SPLIT_PENDING: reported as warnings, not failures, so the rule
holds for everything else meanwhile. A generated or data file is left out only through EXEMPT, with the reason, and
a part of one only through COUNTED_APART (pyproject.toml's import-linter contracts), with the reason.
"""

from __future__ import annotations

import ast
import re
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

FILE_LIMIT = 400
FUNCTION_LIMIT = 60
SIZE_TAG = "# size:"
# What `dev.py check` measures: every source tree but tests/ (tests are held to their own clarity, not a count).
TREES = ("controller", "drivers", "floor", "link", "leash", "bench", "tools", "dev.py", "pyproject.toml")
PYTHON = ".py"
# Held to the file limit alone: a function's length is Python's to measure here; in these a long file is the signal.
LENGTH_ONLY = frozenset({".js", ".css", ".html", ".sh", ".toml", ".sql"})
# Temporary: files other work is splitting now. Remove a line once its file is split; the check then holds it.
SPLIT_PENDING: dict[str, str] = {}
# Left out for good, each with its reason: only a file no one writes by hand (a lock file, generated code) or data
# read whole (a paytable's table), never a source file that grew. None is, now.
EXEMPT: dict[str, str] = {}
# Measured without some of their TOML tables: file -> the table prefix left out of the count. pyproject.toml's
# import-linter contracts ([tool.importlinter] and its [[tool.importlinter.contracts]]) are a list of independent
# declarations, each read and reviewed on its own (a change adds or edits one), kept where a bare `lint-imports`, an
# editor's plugin and the docs (CONTRIBUTING.md, docs/architecture.md) find them. A file of their own would move the
# count, not shorten what a reviewer reads, and every caller would need `--config`. The rest of the file (project,
# dependencies, tool settings) is held to the limit like any source.
COUNTED_APART: dict[str, str] = {"pyproject.toml": "tool.importlinter"}
_TABLE_HEADER = re.compile(r"\[\[?\s*([A-Za-z0-9_.\"-]+)\s*\]\]?[ \t]*(#.*)?", re.ASCII)


def without_tables(source: str, prefix: str) -> str:
    """`source` (TOML) without the tables named `prefix` or `prefix.<anything>`, each from its header to the next."""
    kept: list[str] = []
    inside = False
    for line in source.splitlines(keepends=True):
        header = _TABLE_HEADER.fullmatch(line.strip())
        if header is not None:
            name = header.group(1)
            inside = name == prefix or name.startswith(prefix + ".")
        if not inside:
            kept.append(line)
    return "".join(kept)


@dataclass(frozen=True)
class Finding:
    path: str
    line: int
    message: str
    pending: bool

    def __str__(self) -> str:
        kind = "warning (split pending)" if self.pending else "error"
        return f"{self.path}:{self.line}: {kind}: {self.message}"


def source_files(root: Path, trees: Iterable[str] = TREES) -> Iterator[Path]:
    suffixes = {PYTHON, *LENGTH_ONLY}
    for name in trees:
        top = root / name
        if top.is_file():
            yield top
        elif top.is_dir():
            yield from sorted(
                p
                for p in top.rglob("*")
                if p.suffix in suffixes and p.is_file() and "tests" not in p.relative_to(root).parts
            )


def _has_size_tag(lines: list[str], node: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    # The def line itself, or the line above it or above its first decorator, carries the reason.
    first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
    candidates = {node.lineno, first - 1, node.lineno - 1}
    for number in candidates:
        if 1 <= number <= len(lines):
            text = lines[number - 1]
            at = text.find(SIZE_TAG)
            if at >= 0 and text[at + len(SIZE_TAG) :].strip():
                return True
    return False


def check_source(path: str, source: str, pending: bool = False) -> list[Finding]:
    apart = COUNTED_APART.get(path)
    lines = (without_tables(source, apart) if apart else source).splitlines()
    found: list[Finding] = []
    python = Path(path).suffix == PYTHON
    if len(lines) > FILE_LIMIT:
        parts = "one module per concern" if python or path.endswith(".js") else "one file per concern"
        counted = f"{len(lines)} lines" + (f" (not counting its [{apart}] tables)" if apart else "")
        found.append(Finding(path, 1, f"{counted}, over {FILE_LIMIT}: split it along its seams, {parts}", pending))
    if not python:
        return found
    for node in ast.walk(ast.parse(source, filename=path)):
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        length = (node.end_lineno or node.lineno) - node.lineno + 1
        if length > FUNCTION_LIMIT and not _has_size_tag(lines, node):
            found.append(
                Finding(
                    path,
                    node.lineno,
                    f"{node.name}() is {length} lines, over {FUNCTION_LIMIT}: split it into named steps, or say why "
                    f"not with '{SIZE_TAG} <why>' on its def line or the line above",
                    pending,
                )
            )
    return found


def check_tree(
    root: Path,
    trees: Iterable[str] = TREES,
    pending: dict[str, str] | None = None,
    exempt: dict[str, str] | None = None,
) -> list[Finding]:
    allow = SPLIT_PENDING if pending is None else pending
    skip = EXEMPT if exempt is None else exempt
    found: list[Finding] = []
    for name, why in sorted(skip.items()):
        if not why.strip():
            found.append(Finding(name, 1, "exempt from the size rule without a reason: say why in EXEMPT", False))
        elif not (root / name).is_file():
            found.append(Finding(name, 1, "exempt from the size rule but not there: remove it from EXEMPT", False))
    for path in source_files(root, trees):
        name = path.relative_to(root).as_posix()
        if skip.get(name, "").strip():
            continue
        found.extend(check_source(name, path.read_text(encoding="utf-8"), pending=name in allow))
    return found


def main(argv: list[str]) -> int:
    root = Path(argv[0]) if argv else Path(__file__).resolve().parent.parent
    found = check_tree(root)
    # Errors last, so the lines that fail the check are the ones left on the screen.
    for finding in sorted(found, key=lambda f: not f.pending):
        print(finding, file=sys.stderr)
    errors = [f for f in found if not f.pending]
    if errors:
        print(f"sizes: {len(errors)} over the limit (CONTRIBUTING.md, Sizes)", file=sys.stderr)
        return 1
    pending = ", but those split pending" if found else ""
    print(f"sizes: every file within {FILE_LIMIT} lines and function within {FUNCTION_LIMIT}{pending}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
