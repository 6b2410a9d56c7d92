"""`tablectl rules --chapter 683a`: the traceability table, generated from the code (docs/rules.md).

Every subsection of the chapter's published text (its package's `subsections.py`, controller.games.trace), whether the
controller enforces it, records it or leaves it to people (and why), where the code cites it and which tests name it.
The code is read as it is: a citation in a module of controller/ (`683a.13(d)`), or a step of the engine asking for
a subsection in the common numbering (`ctx.rule("13(d)")`, resolved through the chapter's spec as the round does).
A test names a subsection in its name, docstring, body or the module-level tables and helpers it uses, in its own file
or a helper module under tests/ it imports (credited "via" that file, controller/cli/rules_reach.py); the tests are
read from the source checkout when there is one (`--source`).
"""

from __future__ import annotations

import argparse
import ast
import functools
import json
import re
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

from controller.cli.rules_reach import Credits, credits
from controller.cli.verb import Subparsers, UsageError
from controller.games import subsections_603a, subsections_605a
from controller.games.registry import REGISTRY, SPECS
from controller.games.trace import CITATION, Subsection

CHECKOUT = Path(__file__).resolve().parents[2]
# A subsection the engine asks for in the common numbering: "13(d)", "8(f)", "10(a)(2)", "3(c)(1)".
COMMON_KEY = re.compile(r"[0-9]+\([a-z]\)(?:\([0-9a-z]+\))*")
Found = dict[str, set[str]]  # citation -> where the code cites it (file:function)
NOT_CODE = ("subsections.py", "subsections_603a.py", "subsections_605a.py", "trace.py")
# The table's own sources cite subsections as examples: they enforce none.
THIS_VERB = ("controller/cli/rules.py", "controller/cli/rules_reach.py")
# The chapters that are no game but bear on a table: 603a (the deck every game deals), 605a (the games' electronic
# wagering and progressive systems). Their name, their inventory, and what of their text is not available.
NOT_GAMES: dict[str, tuple[str, Sequence[Subsection], str]] = {
    "603a": (subsections_603a.NAME, subsections_603a.SUBSECTIONS, subsections_603a.UNAVAILABLE),
    "605a": (subsections_605a.NAME, subsections_605a.SUBSECTIONS, subsections_605a.UNAVAILABLE),
}


@dataclass
class Row:
    cite: str
    what: str
    by: str
    why: str = ""
    code: list[str] = field(default_factory=list)
    tests: list[str] = field(default_factory=list)
    # A test credited only through helper modules it uses (file::test -> those files), not by its own file.
    via: dict[str, list[str]] = field(default_factory=dict)

    @property
    def problem(self) -> str | None:
        """Why this row breaks the rule of the table: an enforced or recorded subsection with no code or no test."""
        if self.by == "people":
            return None
        missing = [what for what, found in (("no code", self.code), ("no test that names it", self.tests)) if not found]
        return f"{self.cite} is {self.by} but has {' and '.join(missing)}" if missing else None


def trace(chapter: str, source: Path = CHECKOUT) -> list[Row]:
    """The chapter's table: each subsection with the code and the tests found for it."""
    _, listed = inventory(chapter)
    code = code_citations(source / "controller", source)
    tests = _test_credits(source / "tests", source) if (source / "tests").is_dir() else {}
    return [_row(s, code, tests) for s in listed]


def inventory(chapter: str) -> tuple[str, Sequence[Subsection]]:
    """The chapter's name and its listed subsections: a game's from the registry; 603a and 605a, which the games answer
    to but which are no game, from their own inventories."""
    entry = REGISTRY.get(chapter)
    if entry is not None:
        return entry.spec.name, entry.subsections
    if chapter in NOT_GAMES:
        name, listed, _ = NOT_GAMES[chapter]
        return name, listed
    raise UsageError(f"no chapter {chapter!r}: the chapters are {', '.join(sorted([*REGISTRY, *NOT_GAMES]))}")


@functools.cache  # one reading of the tests serves every chapter's table
def _test_credits(tests: Path, root: Path) -> Credits:
    return credits(tests, root)


def _row(s: Subsection, code: Found, tests: Credits) -> Row:
    places = sorted({w for cite, where in code.items() if s.covers(cite) for w in where})
    helpers: dict[str, set[str]] = {}
    direct: set[str] = set()
    for cite, credited in tests.items():
        if s.covers(cite):
            for test, files in credited.items():
                if files:
                    helpers.setdefault(test, set()).update(files)
                else:
                    direct.add(test)
    via = {test: sorted(files) for test, files in sorted(helpers.items()) if test not in direct}
    return Row(s.cite, s.what, s.by, s.why, places, sorted(direct | set(helpers)), via)


# -- the code ------------------------------------------------------------------------------------------------------


@functools.cache  # one reading of the source serves every chapter's table
def code_citations(package: Path, root: Path) -> Found:
    """Every citation the code makes, with the function that makes it; an engine step's common key counts for every
    chapter, as that chapter's spec numbers it."""
    found: Found = {}
    for path in sorted(package.rglob("*.py")):
        if path.name in NOT_CODE or path.relative_to(root).as_posix() in THIS_VERB:
            continue
        tree, lines = _parse(path)
        for node, qualname in _scopes(tree):
            place = f"{path.relative_to(root)}:{qualname}"
            text = "\n".join(lines[_leading_comments(node.lineno, lines) - 1 : node.end_lineno])
            for m in CITATION.finditer(text):
                found.setdefault(m.group(0), set()).add(place)
            if path.parent.name == "engine":
                for key in _common_keys(node):
                    for spec in SPECS.values():
                        cite = spec.rule(key)
                        if CITATION.fullmatch(cite):
                            found.setdefault(cite, set()).add(place)
    return found


def _leading_comments(line: int, lines: list[str]) -> int:
    """The first line of the comment block just above a statement: a comment says what the statement below does."""
    while line > 1 and lines[line - 2].lstrip().startswith("#"):
        line -= 1
    return line


def _common_keys(node: ast.AST) -> Iterator[str]:
    """The subsections an engine step asks for: `ctx.rule("13(d)")` (named keys too, e.g. "complete") and the common
    numbering written as data ("8(f)" in a table of the dealing methods)."""
    for sub in ast.walk(node):
        if isinstance(sub, ast.Call) and isinstance(sub.func, ast.Attribute | ast.Name) and sub.args:
            name = sub.func.attr if isinstance(sub.func, ast.Attribute) else sub.func.id
            arg = sub.args[0]
            if name == "rule" and isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                yield arg.value
        elif isinstance(sub, ast.Constant) and isinstance(sub.value, str) and COMMON_KEY.fullmatch(sub.value):
            yield sub.value


def _parse(path: Path) -> tuple[ast.Module, list[str]]:
    text = path.read_text(encoding="utf-8")
    return ast.parse(text, str(path)), text.splitlines()


def _scopes(tree: ast.Module) -> Iterator[tuple[ast.stmt, str]]:
    """Each top-level statement, and each function and class in it by its qualified name (a function's own lines,
    those of a function inside it included)."""
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            yield node, node.name
        elif isinstance(node, ast.ClassDef):
            methods = [n for n in node.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)]
            yield from ((m, f"{node.name}.{m.name}") for m in methods)
            rest = [n for n in node.body if n not in methods]
            yield from ((n, node.name) for n in rest)
        else:
            yield node, "<module>"


# -- the verb --------------------------------------------------------------------------------------------------------


def markdown(chapter: str, rows: list[Row]) -> str:
    name, _ = inventory(chapter)
    out = [
        f"# {chapter} {name}: traceability",
        "",
        "| subsection | what | how | code | tests | why left to people |",
        "|---|---|---|---|---|---|",
    ]
    for r in rows:
        code = "<br>".join(f"`{c}`" for c in r.code)
        tests = "<br>".join(f"`{t}`" + "".join(f" via `{v}`" for v in r.via.get(t, [])) for t in r.tests)
        out.append(f"| {r.cite} | {r.what} | {r.by} | {code} | {tests} | {r.why} |")
    # What the copy of the text lacks, under the table, so that no reader takes its rows for the whole chapter.
    out += ["", NOT_GAMES[chapter][2]] if chapter in NOT_GAMES else []
    problems = [p for r in rows if (p := r.problem)]
    out += ["", *(f"PROBLEM: {p}" for p in problems)] if problems else []
    return "\n".join(out) + "\n"


def add_parser(sub: Subparsers) -> None:
    p = sub.add_parser(
        "rules",
        description="Prints the traceability table of a chapter: every subsection of its published text, whether the "
        "controller enforces it, records it or leaves it to people (and why), the code that cites it and the tests "
        "that name it, found in the source (docs/rules.md). Exit status 1 when an enforced or recorded subsection "
        "has no code or no test naming it.",
    )
    p.add_argument(
        "--chapter",
        required=True,
        help="the chapter, e.g. 683a, or 603a (cards, shoes, shufflers) or 605a (electronic wagering, progressives)",
    )
    p.add_argument("--json", action="store_true", help="JSON rows instead of a Markdown table")
    p.add_argument(
        "--source",
        type=Path,
        default=CHECKOUT,
        help="the source checkout to read the code and tests from (default: this installation's)",
    )


def main(args: argparse.Namespace) -> int:
    if not (args.source / "controller").is_dir():
        # Else every subsection reads as "no code", a wall of PROBLEM lines for a mistyped path.
        raise UsageError(f"--source {args.source}: no controller/ there: give the root of a tablectl checkout")
    rows = trace(args.chapter, args.source)
    if args.json:
        print(json.dumps([asdict(r) for r in rows], indent=2))
    else:
        print(markdown(args.chapter, rows), end="")
    return 1 if any(r.problem for r in rows) else 0
