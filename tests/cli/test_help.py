"""`tablectl --help` and every verb's and sub-verb's own `--help` say what each does and what each option is: every
sub-verb has a line in its parent's listing and a description of its own, and every option and operand a help text,
saying its default where it has one. `floor run`, `floor status` and `report export` had no description, `--json`,
report export's `--day` and report verify's `--public-key` no help. The parsers are the real ones, as `tablectl`
builds them for each verb (controller, floor and link)."""

from __future__ import annotations

import argparse
from collections.abc import Iterator

import pytest

from controller.cli.main import VERBS, Verb, build_parser

# Options whose default is said by argparse itself or needs no saying.
_NO_DEFAULT = (None, False, argparse.SUPPRESS)


def _subparsers(parser: argparse.ArgumentParser) -> Iterator[argparse._SubParsersAction[argparse.ArgumentParser]]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            yield action


def _walk(name: str, parser: argparse.ArgumentParser, listed: str | None) -> Iterator[str]:
    """What is missing from `parser` (called `name`, listed in its parent with `listed`) and every parser below it."""
    parser.format_help()  # a stray % in a help text raises here, as it would on --help
    if listed is not None and not (listed or "").strip():
        yield f"{name}: no line in its parent's listing (add_parser(..., help=...))"
    if listed is not None and not (parser.description or "").strip():
        yield f"{name}: no description of its own (add_parser(..., description=...))"
    for action in parser._actions:
        if isinstance(action, argparse._HelpAction | argparse._VersionAction | argparse._SubParsersAction):
            continue
        what = f"{name} {'/'.join(action.option_strings) or action.dest}"
        text = action.help if isinstance(action.help, str) else ""
        if not text.strip() or text == argparse.SUPPRESS:
            yield f"{what}: no help"
        elif action.default not in _NO_DEFAULT and action.default != [] and "default" not in text:
            yield f"{what}: the default ({action.default!r}) is not said in its help"
    for sub in _subparsers(parser):
        helps = {choice.dest: choice.help for choice in sub._choices_actions}
        for child_name, child in sub.choices.items():
            yield from _walk(f"{name} {child_name}", child, helps.get(child_name) or "")


@pytest.mark.parametrize("verb", VERBS, ids=lambda v: v.name)
def test_every_sub_verb_and_option_says_what_it_is(verb: Verb) -> None:
    top = build_parser(verb.name)
    (verbs,) = _subparsers(top)
    # The verb's line in `tablectl --help` is VERBS' (that listing is built without importing any verb).
    missing = list(_walk(f"tablectl {verb.name}", verbs.choices[verb.name], verb.help))
    assert not missing, "\n".join(missing)


def test_tablectl_s_own_options_say_what_they_are() -> None:
    top = build_parser()
    for sub in _subparsers(top):
        top._actions.remove(sub)  # the verbs, walked one by one above
    missing = list(_walk("tablectl", top, None))
    assert not missing, "\n".join(missing)


def test_the_walk_finds_what_it_is_for() -> None:
    p = argparse.ArgumentParser(prog="x")
    sub = p.add_subparsers(dest="a")
    bare = sub.add_parser("bare")
    bare.add_argument("--json", action="store_true")
    bare.add_argument("--last", type=int, default=10, help="how many")
    assert sorted(_walk("x", p, None)) == [
        "x bare --json: no help",
        "x bare --last: the default (10) is not said in its help",
        "x bare: no description of its own (add_parser(..., description=...))",
        "x bare: no line in its parent's listing (add_parser(..., help=...))",
    ]
