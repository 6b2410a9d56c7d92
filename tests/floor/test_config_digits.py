"""Config patterns take ASCII digits only (as controller/mqtt/contract.py's): in pydantic-core's Rust regex and in
Python's `re` on text, \\d is every Unicode decimal digit, so FLOOR.toml's `starts_at = "0\\u0666:30"` (an
Arabic-Indic six) was accepted and printed so in every report's period, and a table's rules took
`ante_odds = "\\uff11 to 1"` (a fullwidth one). Each is now refused with the field and the fix named; the same text
in ASCII digits passes. So with \\s: odds, a scenario's `at` and a simulated fault's `when` took any Unicode space
(`"1\\u3000to 1"`, an ideographic space); their patterns are re.ASCII now, and the guard below keeps \\s, \\w, \\b
and \\d out of the packages' text patterns unless re.ASCII is passed."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from controller.core.money import Odds
from controller.games.three_card_prime.rules import ThreeCardPrimeRules
from controller.people.actions import ActionError, parse_actions
from drivers.sim.faults import Trigger
from floor.config import FloorConfigError, parse_floor_config
from tests.floor.unicode_spaces import UNICODE_SPACES
from tests.games.submitted_rules import CONFIGS, submitted_rules
from tests.mqtt.foreign_digits import ZEROS, foreign

ROOT = Path(__file__).resolve().parents[2]
# Where operators' and tables' text is read: every str pattern there spells its digits [0-9].
PACKAGES = ("controller", "floor", "link", "drivers")
# A text pattern meant to take every Unicode class (free text, a person's name): "path: pattern" -> why. None yet.
UNICODE_INTENDED: dict[str, str] = {}
CLASSES = re.compile(r"\\[dDsSwWbB]")


def floor_toml(starts_at: str, start: str, end: str) -> str:
    return (
        f'[database]\ndsn = "dbname=x"\n[gaming_day]\nstarts_at = "{starts_at}"\n'
        f'[[shifts]]\nname = "day"\nstart = "{start}"\nend = "{end}"\n'
    )


clock_times = st.builds(lambda h, m: f"{h:02d}:{m:02d}", st.integers(0, 23), st.integers(0, 59))


@given(clock_times, st.sampled_from(ZEROS), st.integers(0, 3), st.sampled_from(["starts_at", "start", "end"]))
def test_a_clock_time_passes_exactly_when_its_digits_are_ascii(hhmm: str, zero: int, at: int, field: str) -> None:
    times = {"starts_at": "06:00", "start": "06:00", "end": "14:00", field: hhmm}
    config = parse_floor_config(floor_toml(times["starts_at"], times["start"], times["end"]))
    assert config.gaming_day.starts_at == times["starts_at"] and config.shifts[0].end == times["end"]
    i = [0, 1, 3, 4][at]
    times[field] = hhmm[:i] + foreign(hhmm[i], zero) + hhmm[i + 1 :]
    with pytest.raises(FloorConfigError) as err:
        parse_floor_config(floor_toml(times["starts_at"], times["start"], times["end"]))
    where = "gaming_day.starts_at" if field == "starts_at" else f"shifts[0].{field}"
    fix = 'e.g. "06:00"' if field == "starts_at" else '"HH:MM" on the 24-hour clock'
    assert f"{where}: String should match pattern '^([01][0-9]|2[0-3]):[0-5][0-9]$'" in str(err.value)
    assert fix in str(err.value)


@given(st.integers(1, 10_000), st.integers(1, 10), st.sampled_from(["to", "for"]), st.sampled_from(ZEROS))
def test_odds_pass_exactly_when_their_digits_are_ascii(numerator: int, denominator: int, kind: str, zero: int) -> None:
    """The rules' odds (e.g. 679a's Rules Submission `ante_odds`, read through Odds.parse as a field validator)."""
    text = f"{numerator:,} {kind} {denominator}"
    assert Odds.parse(text) == Odds(numerator, denominator, "to" if kind == "to" else "for")
    for bad in (
        f"{foreign(f'{numerator:,}', zero)} {kind} {denominator}",
        f"{numerator} {kind} {foreign(str(denominator), zero)}",
    ):
        with pytest.raises(ValueError, match=r"is not payout odds: write e\.g\. '500 to 1'"):
            Odds.parse(bad)


@given(
    st.integers(1, 10_000),
    st.integers(1, 10),
    st.sampled_from(["to", "for"]),
    st.sampled_from(UNICODE_SPACES),
    st.integers(0, 3),
)
def test_odds_pass_exactly_when_their_spaces_are_ascii(
    numerator: int, denominator: int, kind: str, space: str, where: int
) -> None:
    """An ideographic (or any other non-ASCII) space before or after the numbers, or around "to"/"for", is refused, in
    Odds.parse and in the rules that read odds (679a's Rules Submission `ante_odds`), naming the field and the fix."""
    words = ["", f"{numerator:,}", kind, str(denominator), ""]
    assert Odds.parse(" ".join(words)) == Odds(numerator, denominator, "to" if kind == "to" else "for")
    gaps = [" "] * 4
    gaps[where] = space if where in (1, 2) else f" {space}"
    text = "".join(w + g for w, g in zip(words, [*gaps, ""], strict=True))
    with pytest.raises(ValueError, match=r"is not payout odds: write e\.g\. '500 to 1'"):
        Odds.parse(text)
    with pytest.raises(ValidationError) as err:
        submitted_rules(ThreeCardPrimeRules, CONFIGS / "three-card-prime.toml", ante_odds=text)
    assert "ante_odds" in str(err.value) and "is not payout odds: write e.g. '500 to 1'" in str(err.value)


@given(st.sampled_from(UNICODE_SPACES), st.integers(0, 2), st.integers(1, 9))
def test_a_scenario_action_waits_on_ascii_spaces_only(space: str, where: int, n: int) -> None:
    """docs/scenarios.md "Actions": `at = "card.dealt 3"`; the same with a non-ASCII space is refused, naming `at`."""
    (action,) = parse_actions([{"at": f" card.dealt {n} ", "press": "no_more_bets"}], "round.actions", 7)
    assert (action.event, action.count) == ("card.dealt", n)
    gaps = [" ", " ", " "]
    gaps[where] = space
    at = f"{gaps[0]}card.dealt{gaps[1]}{n}{gaps[2]}"
    with pytest.raises(ActionError, match=r'round\.actions\[0\]\.at: the journaled event it waits for, "<type>"'):
        parse_actions([{"at": at, "press": "no_more_bets"}], "round.actions", 7)


@given(st.sampled_from(UNICODE_SPACES), st.integers(0, 2), st.integers(1, 99))
def test_a_simulated_faults_trigger_takes_ascii_spaces_only(space: str, where: int, n: int) -> None:
    """A simulator's fault `when = "shuffle 2"` (drivers/sim/faults.py), or "now": non-ASCII spaces are refused."""
    assert Trigger.parse(f" shuffle {n} ") == Trigger("shuffle", n) and Trigger.parse(" now\t") is None
    gaps = [" ", " ", " "]
    gaps[where] = space
    for when in (f"{gaps[0]}shuffle{gaps[1]}{n}{gaps[2]}", f"{space}now", f"now{space}"):
        with pytest.raises(ValueError, match=r'expected "now" or "<event> <n>" such as "shuffle 2"'):
            Trigger.parse(when)


def _text_constants(path: Path) -> list[tuple[int, str]]:
    """(line, value) of each str literal in `path` that spells a Unicode class, but docstrings and the patterns of
    `re` calls that pass re.ASCII (there \\d, \\s, \\w and \\b are ASCII)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    exempt = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and isinstance(node.func.value, ast.Name)
            and node.func.value.id == "re"
            and node.args
            and any(
                isinstance(flag, ast.Attribute) and flag.attr in ("ASCII", "A")
                for arg in [*node.args[1:], *(k.value for k in node.keywords)]
                for flag in ast.walk(arg)
            )
        ):
            exempt.add(id(node.args[0]))
    return [
        (node.lineno, node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in exempt
    ]


def test_no_text_pattern_in_the_packages_spells_a_unicode_class() -> None:
    """A guard for the next pattern: a str literal (bytes patterns are ASCII already) holding \\d, \\s, \\w or \\b (or
    their negations), outside docstrings and re.ASCII patterns, in the packages that validate outside text."""
    found = [
        f"{path.relative_to(ROOT)}:{line}: {value!r}"
        for package in PACKAGES
        for path in sorted((ROOT / package).rglob("*.py"))
        for line, value in _text_constants(path)
        if CLASSES.search(value) and f"{path.relative_to(ROOT)}: {value}" not in UNICODE_INTENDED
    ]
    assert not found, (
        "spell ASCII classes ([0-9], [ \\t], [A-Za-z0-9_]) or pass re.ASCII: in a str pattern \\d, \\s, \\w and "
        "\\b are Unicode's (a free-text pattern meant so: UNICODE_INTENDED, with why):\n" + "\n".join(found)
    )


# A `$`-ended pattern read with match() or search() meant to take a final "\n", as "path: pattern" -> why. None yet.
TRAILING_NEWLINE_INTENDED: dict[str, str] = {}
LOOSE_CALLS = ("match", "search")


def _ends_in_dollar(value: object) -> bool:
    """`$` as the pattern's last anchor (not an escaped dollar sign): Python's `$` also matches before a final "\\n"."""
    text = value.decode("latin-1") if isinstance(value, bytes) else value
    return isinstance(text, str) and text.endswith("$") and not text.endswith("\\$")


def _dollar_literal(node: ast.expr) -> str | None:
    """repr of `node` when it is a `$`-ended pattern written out: a str or bytes literal, or an f-string whose last
    part is (f"[{SPACE}]+$")."""
    if isinstance(node, ast.Constant) and _ends_in_dollar(node.value):
        return repr(node.value)
    if isinstance(node, ast.JoinedStr) and node.values:
        last = node.values[-1]
        if isinstance(last, ast.Constant) and _ends_in_dollar(last.value):
            return ast.unparse(node)
    return None


def _compiled(node: ast.expr) -> ast.expr:
    """The pattern of `re.compile(P, ...)` (any `.compile(P)`), else `node` itself."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "compile":
        return node.args[0] if node.args else node
    return node


def _dollar_patterns(paths: list[Path]) -> dict[str, str]:
    """name -> pattern of every `NAME = re.compile("...$")`, `NAME = "...$"` or `self.NAME = ...` in `paths`, at
    module level, in a class or in a function (by name, so an imported pattern is found where it is used)."""
    found: dict[str, str] = {}
    for path in paths:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Assign | ast.AnnAssign) and node.value is not None:
                pattern = _dollar_literal(_compiled(node.value))
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                if pattern is not None:
                    found |= {t.id: pattern for t in targets if isinstance(t, ast.Name)}
                    found |= {t.attr: pattern for t in targets if isinstance(t, ast.Attribute)}
    return found


def _loose_matches(path: Path, patterns: dict[str, str]) -> list[tuple[int, str]]:
    """(line, pattern) of each `NAME.match(...)`/`NAME.search(...)` on a `$`-ended compiled pattern, each
    `re.compile("...$").match(...)` and each `re.match(P, ...)`/`re.search(P, ...)` whose P is a `$`-ended literal or
    constant, in `path`, wherever the call is (module, class or function)."""
    out: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in LOOSE_CALLS):
            continue
        owner = node.func.value
        name = owner.id if isinstance(owner, ast.Name) else owner.attr if isinstance(owner, ast.Attribute) else ""
        if name == "re" and node.args:
            first = node.args[0]
            literal = _dollar_literal(_compiled(first))
            if literal is not None:
                out.append((node.lineno, literal))
            elif isinstance(first, ast.Name) and first.id in patterns:
                out.append((node.lineno, patterns[first.id]))
        elif isinstance(owner, ast.Call) and owner is not _compiled(owner):
            literal = _dollar_literal(_compiled(owner))
            if literal is not None:
                out.append((node.lineno, literal))
        elif name in patterns:
            out.append((node.lineno, patterns[name]))
    return out


def test_no_dollar_ended_pattern_is_read_with_match_or_search() -> None:
    """A guard for the next validator: `re.match(r"^x$", "x\\n")` matches (so did progressive.py's `_SHARE` on
    "50% of meter\\n"); fullmatch() or \\Z refuses the newline. pydantic's `pattern=` runs the Rust regex crate, where
    `$` is the end of the text (pydantic.config.ConfigDict.regex_engine, default 'rust-regex', not set here)."""
    paths = [path for package in PACKAGES for path in sorted((ROOT / package).rglob("*.py"))]
    patterns = _dollar_patterns(paths)
    found = [
        f"{path.relative_to(ROOT)}:{line}: {pattern}"
        for path in paths
        for line, pattern in _loose_matches(path, {**patterns, **_dollar_patterns([path])})
        if f"{path.relative_to(ROOT)}: {pattern}" not in TRAILING_NEWLINE_INTENDED
    ]
    assert not found, (
        "Python's `$` matches before a final newline: use fullmatch() (or end the pattern with \\Z) so 'x\\n' is "
        "refused (a pattern meant to take it: TRAILING_NEWLINE_INTENDED, with why):\n" + "\n".join(found)
    )


def test_the_dollar_guard_finds_what_it_is_for(tmp_path: Path) -> None:
    probe = tmp_path / "probe.py"
    probe.write_text(
        "import re\n"
        'A = re.compile(r"^[a-z]+$")\n'
        'B = r"^[0-9]+$"\n'
        'C = re.compile(r"^\\$[0-9]+")\n'
        "def f(s):\n"
        "    return (A.match(s), A.fullmatch(s), re.search(B, s),\n"
        "            re.match(r'x$', s), C.match(s), re.fullmatch(B, s))\n"
        "class K:\n"
        "    D = re.compile(rb'^[0-9]+$')\n"
        "    def __init__(self, s):\n"
        "        self.e = re.compile(f'^{s}$', re.ASCII)\n"
        "    def g(self, s):\n"
        "        local = re.compile(r'y$')\n"
        "        return (self.D.match(s), self.e.search(s), local.match(s), re.compile(r'z$').match(s),\n"
        "                re.search(re.compile(r'w$'), s), re.compile(r'v$').fullmatch(s), re.compile('u').match(s))\n",
        encoding="utf-8",
    )
    patterns = _dollar_patterns([probe])
    assert set(patterns) == {"A", "B", "D", "e", "local"}
    assert sorted(line for line, _ in _loose_matches(probe, patterns)) == [6, 6, 7, 14, 14, 14, 14, 15]
    assert re.match(r"^[a-z]+$", "meter\n") and not re.fullmatch(r"^[a-z]+$", "meter\n")
