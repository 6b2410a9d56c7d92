"""Which tests name which subsection, for `tablectl rules` (docs/rules.md): however the test is factored.

A test names a subsection in its name, decorators, docstring or what it asserts (`asserted`: not a comment, not input
it never checks), or in a module-level definition it uses by name
(a parametrized test's table of expected rules, a builder): in its own module, or in a helper module under tests/
that the module imports (`from tests.journal.archive_rounds import play_round`, `import tests.x as x` then `x.name`),
followed through imports and re-exports within tests/. A citation found in another file than the test's
own is credited "via" that file, so a reviewer sees where it sits. Nothing reaches a test through pytest's conftest
fixtures (a parameter, not a name the module binds), nor from a conftest imported by name: a directory's harness
(a table builder whose `wager` cites 655a.7(d)) serves every test of it, and would credit tests that check nothing
of what it cites.
A test module that imports the table (`controller.cli.rules`, `rules_reach`) tests the table itself: the subsections it
names are the rows it expects, not rules it proves, and credit nothing (a row whose real tests are gone must say so).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from controller.games.trace import CITATION

Ref = tuple[str, str]  # (module, a module-level name in it): tests.journal.archive_rounds, play_round
# The verb's modules: a test module importing one is a test of the table (_reads_the_table).
TABLE_MODULES = ("controller.cli.rules", "controller.cli.rules_reach")
# citation -> test (file::test) -> the helper files it is found in through that test; empty: in the test's own file
Credits = dict[str, dict[str, frozenset[str]]]


@dataclass
class _Module:
    file: str  # tests/journal/archive_rounds.py
    package: str  # tests.journal, for a relative import
    texts: dict[str, str] = field(default_factory=dict)  # module-level name -> the lines that define it
    imports: dict[str, Ref | str] = field(default_factory=dict)  # bound name -> (module, name), or a module
    star: list[str] = field(default_factory=list)  # modules imported with *
    # Each test of a test module: its name, its own lines (decorators to end) and the names it uses.
    tests: list[tuple[str, str, set[str]]] = field(default_factory=list)


def credits(tests: Path, root: Path) -> Credits:
    """Every citation each test names, directly or through the helpers it uses."""
    modules: dict[str, _Module] = {}
    for path in sorted(tests.rglob("*.py")):
        # Only what the tests need is kept, not the trees: holding every module's AST alive doubles the parse's cost
        # (the garbage collector walks them all each time it runs).
        modules[".".join(path.relative_to(root).with_suffix("").parts).removesuffix(".__init__")] = _read(path, root)
    found: Credits = {}
    for name, module in modules.items():
        for test, own, used in module.tests:
            texts = [
                (module.file, own),
                *((modules[m].file, modules[m].texts[n]) for m, n in reach(modules, name, used)),
            ]
            files: dict[str, set[str]] = {}
            for file, text in texts:
                for m in CITATION.finditer(text):
                    files.setdefault(m.group(0), set()).add(file)
            for cite, where in files.items():
                # Named in its own file, it is credited there, whatever a helper also says: the reviewer reads it there.
                credit = frozenset() if module.file in where else frozenset(where)
                found.setdefault(cite, {})[f"{module.file}::{test}"] = credit
    return found


def reach(modules: dict[str, _Module], start: str, names: set[str]) -> list[Ref]:
    """The module-level definitions that names used in `start` are, followed through imports and re-exports within the
    modules given (tests/). Not what those definitions use in turn: a test's own file is read so too (docs/rules.md),
    and a definition credits the same wherever it sits."""
    return sorted({ref for name in names for ref in _resolve(modules, start, name, frozenset())})


def _resolve(modules: dict[str, _Module], module: str, used: str, seen: frozenset[Ref]) -> Iterator[Ref]:
    """`used` (a name, or a dotted name.attr) as `module` binds it: its own definition, or one imported from tests/.
    `seen` ends a cycle of helpers importing the name from each other."""
    mod = modules.get(module)
    head, *rest = used.split(".")
    if mod is None or (module, head) in seen:
        return
    seen |= {(module, head)}
    if head in mod.texts:
        yield module, head
    elif head in mod.imports:
        target = mod.imports[head]
        if isinstance(target, tuple) and ".".join(target) not in modules:
            yield from _resolve(modules, *target, seen)
        else:  # a module: `import tests.x as x`, `from tests import x`, then x.attr is x's attr
            yield from _attribute(modules, target if isinstance(target, str) else ".".join(target), rest, seen)
    else:
        for other in mod.star:
            yield from _resolve(modules, other, head, seen)


def _attribute(modules: dict[str, _Module], package: str, parts: list[str], seen: frozenset[Ref]) -> Iterator[Ref]:
    """package.a.b.name: the name in the longest module the dotted parts reach (`import tests.journal.x`, then
    tests.journal.x.make is x's make)."""
    for i in range(len(parts), 0, -1):
        module = ".".join([package, *parts[: i - 1]])
        if module in modules:
            yield from _resolve(modules, module, parts[i - 1], seen)
            return


def _read(path: Path, root: Path) -> _Module:
    text = path.read_text(encoding="utf-8")
    lines = text.splitlines()
    tree = ast.parse(text, str(path))
    parts = path.relative_to(root).with_suffix("").parts
    package = ".".join(parts if path.name == "__init__.py" else parts[:-1])
    module = _Module(path.relative_to(root).as_posix(), package)
    for node in tree.body:
        for name in _defined(node):
            # Comments included: a row of a table of cases says beside it what it checks, and the test checks each row.
            module.texts[name] = "\n".join(lines[node.lineno - 1 : node.end_lineno])
        if isinstance(node, ast.Import | ast.ImportFrom):
            _bind(module, node)
    if path.name.startswith("test_") and not _reads_the_table(tree):
        for test in _tests(tree):
            nodes = list(ast.walk(test))  # walked once for both: the walk is most of the reading's time
            module.tests.append((test.name, asserted(test, lines, nodes), _used(nodes)))
    return module


def _reads_the_table(tree: ast.Module) -> bool:
    """Whether a test module imports the verb that makes the table: its tests check the table, not the rules."""
    for node in tree.body:
        names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
        if isinstance(node, ast.ImportFrom) and not node.level:
            names = [node.module or "", *(f"{node.module}.{a.name}" for a in node.names)]
        if any(n in TABLE_MODULES for n in names):
            return True
    return False


def asserted(test: ast.FunctionDef | ast.AsyncFunctionDef, lines: list[str], nodes: list[ast.AST]) -> str:
    """What a test's own lines credit: its name, decorators (a parametrized table) and docstring, which say what it
    checks, and what it asserts: its `assert` statements, `pytest.raises(match=...)` and the local values those use
    (`expected = [...]`, then `assert got == expected`). A citation in a comment, or in the input a test builds and
    never checks (a journal line fed to a view), credits nothing: 605a.4(c) was credited to five tests that only
    mentioned it so (docs/rules.md)."""
    # The decorators as written: a parametrized table's rows are each checked, a comment beside one says which rule.
    table = [] if not test.decorator_list else lines[test.decorator_list[0].lineno - 1 : test.lineno - 1]
    parts = [name_citations(test.name), *table, ast.get_docstring(test) or ""]
    checks: list[ast.stmt | ast.expr] = []
    values: list[tuple[set[str], ast.expr]] = []  # the local values that cite, by the names they are bound to
    for sub in nodes:
        if isinstance(sub, ast.Assert) or (isinstance(sub, ast.Call) and _callee(sub).startswith("assert")):
            checks.append(sub)  # an `assert`, or a helper that asserts (assert_win(r, 500, "683a.11(h)(1)"))
        elif isinstance(sub, ast.With | ast.AsyncWith):
            checks += [item.context_expr for item in sub.items if _is_raises(item.context_expr)]
        elif isinstance(sub, ast.Assign | ast.AnnAssign | ast.For | ast.AsyncFor):
            value = sub.iter if isinstance(sub, ast.For | ast.AsyncFor) else sub.value
            targets = sub.targets if isinstance(sub, ast.Assign) else [sub.target]
            if value is not None and _cites(value, lines):
                values.append(({n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}, value))
    # Unparsed to drop the comments, and only what cites at all: unparsing every assert doubled the reading.
    cited = [c for c in checks if _cites(c, lines)]
    if values:
        names = {n.id for check in checks for n in ast.walk(check) if isinstance(n, ast.Name)}
        cited += [value for bound, value in values if bound & names]
    return "\n".join([*parts, *(ast.unparse(c) for c in cited)])


def _cites(node: ast.stmt | ast.expr, lines: list[str]) -> bool:
    return CITATION.search("\n".join(lines[node.lineno - 1 : node.end_lineno])) is not None


def _is_raises(node: ast.expr) -> bool:
    """`pytest.raises(...)` or `raises(...)`: its `match` is what the test asserts of the error."""
    return isinstance(node, ast.Call) and _callee(node) == "raises"


def _callee(call: ast.Call) -> str:
    func = call.func
    return func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""


def _defined(node: ast.stmt) -> list[str]:
    """The names a module-level statement defines that a test may use: tables, helpers, classes (not a test)."""
    if isinstance(node, ast.Assign):
        return [t.id for t in node.targets if isinstance(t, ast.Name)]
    if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
        return [node.target.id]
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) and not node.name.startswith("test_"):
        return [node.name]
    return []


def _bind(module: _Module, node: ast.Import | ast.ImportFrom) -> None:
    """What an import binds, of tests/ only: the library and the controller cite nothing a test names."""
    if isinstance(node, ast.Import):
        for alias in node.names:
            if alias.name.startswith("tests.") and not alias.name.endswith(".conftest"):
                # `import tests.x.y` binds tests; `import tests.x.y as y` binds y
                module.imports[alias.asname or "tests"] = alias.name if alias.asname else "tests"
        return
    base = node.module or ""
    if node.level:  # from .archive_rounds import make, in tests/journal/
        up = module.package.split(".")[: len(module.package.split(".")) - (node.level - 1)]
        base = ".".join([*up, *([base] if base else [])])
    if (base != "tests" and not base.startswith("tests.")) or base.endswith(".conftest"):
        return
    for alias in node.names:
        if alias.name == "conftest":
            continue
        if alias.name == "*":
            module.star.append(base)
        else:
            # `from tests.journal import archive_rounds` binds a module, `from ...archive_rounds import make` a name:
            # which one is known once every module is read, so both are tried (_resolve).
            module.imports[alias.asname or alias.name] = (base, alias.name)


def _used(nodes: list[ast.AST]) -> set[str]:
    """The names a definition uses (its nodes, walked), and `x.attr` for an attribute of a name (a helper module
    imported whole)."""
    out: set[str] = set()
    for sub in nodes:
        if isinstance(sub, ast.Name):
            out.add(sub.id)
        elif isinstance(sub, ast.Attribute):
            chain = [sub.attr]
            value = sub.value
            while isinstance(value, ast.Attribute):
                chain.append(value.attr)
                value = value.value
            if isinstance(value, ast.Name):
                out.add(".".join([value.id, *reversed(chain)]))
    return out


def _tests(tree: ast.Module) -> Iterator[ast.FunctionDef | ast.AsyncFunctionDef]:
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name.startswith("test_"):
            yield node
        elif isinstance(node, ast.ClassDef):
            yield from (
                n
                for n in node.body
                if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef) and n.name.startswith("test_")
            )


def name_citations(name: str) -> str:
    """A test name cites as it can: test_683a_13_d_... and test_683a_13d_... name 683a.13(d), test_683a_11i3_... names
    683a.11(i)(3), test_..._655a_11_i_1_v 655a.11(i)(1)(v)."""
    out = []
    for m in re.finditer(
        r"(6[0-9][0-9]a)_([0-9]+)([a-z](?:[0-9]+)?)?((?:_(?:[a-z]|[0-9]{1,2}|i{1,3}|iv|vi{0,3}|ix|x)(?=_|$))*)", name
    ):
        compact = re.findall(r"[a-z]|[0-9]+", m.group(3) or "")
        parts = [*compact, *(p for p in m.group(4).split("_") if p)]
        out.append(f"{m.group(1)}.{m.group(2)}" + "".join(f"({p})" for p in parts))
    return " ".join(out)
