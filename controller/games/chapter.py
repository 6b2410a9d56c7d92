"""What a chapter package gives the registry: everything the rest of the controller may know of a chapter.

Each package under controller/games/ builds one `Chapter` in its `entry` module; controller.games.registry lists
them by chapter code. Callers outside controller/games/ reach a chapter only through the registry, with rules of
any chapter (the config's [game]): each method below checks that the rules are this chapter's before it hands them
to the package's own, typed functions.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Generic, TypeVar

from controller.core.money import Cents
from controller.core.settlement import ChapterRules, RoundRecord, Settled
from controller.engine.spec import ChapterSpec, DealingMethod, RulesCo, TableOptions
from controller.games.describe import PaytableText
from controller.games.players import DemoPlayers, Wagers
from controller.games.trace import Subsection
from controller.progressive.parameters import ProgressiveOptions, ProgressiveParameters, TableProgressives, meter_table

if TYPE_CHECKING:
    from controller.engine.context import BonusDraws
    from controller.engine.round import RoundEngine

# A settled round: every wager's row in settlement order, and the progressive meters afterwards.
Settlement = tuple[list[Settled], dict[str, Cents]]

# Any chapter's entry stands as one of Chapter[ChapterRules, RoundRecord] in the registry: covariant.
RecordCo = TypeVar("RecordCo", bound=RoundRecord, covariant=True)


def no_meters(rules: ChapterRules, options: ProgressiveOptions) -> Sequence[ProgressiveParameters]:
    """A chapter without progressive wagers has no meters."""
    return ()


def no_wager_settings(rules: ChapterRules) -> Mapping[str, str]:
    return {}


@dataclass(frozen=True, slots=True)
class Chapter(Generic[RulesCo, RecordCo]):
    """One chapter: its rules model (the config's [game]), what it tells the round engine, and what `tablectl
    settle`, the birth message, the meters, `tablectl check-config` and the demo's players need of it."""

    rules_type: type[RulesCo]
    spec: ChapterSpec[RulesCo]
    record_type: type[RecordCo]  # the round record `tablectl settle` reads (docs/settle.md)
    # Settles a recorded round: the same settlement the round engine uses live.
    settle_record: Callable[[RulesCo, RecordCo], Settlement]
    # The paytables in force under these rules, each with its citation, for the birth message.
    describe: Callable[[RulesCo], Sequence[PaytableText]]
    # The progressive meters these rules offer, with the table's options (limits, reserve rates).
    meters: Callable[[RulesCo, ProgressiveOptions], Sequence[ProgressiveParameters]] = no_meters
    # The [game] settings these rules turn on that offer a wager, and the wager spot each offers: `tablectl
    # check-config` warns of those the live engine does not offer (ChapterSpec.offers).
    wager_settings: Callable[[RulesCo], Mapping[str, str]] = no_wager_settings
    players: DemoPlayers[RulesCo] = field(default_factory=DemoPlayers)
    # Every subsection of the chapter's published text and how the controller stands to it (controller.games.trace);
    # `tablectl rules` finds the code and the tests of each.
    subsections: Sequence[Subsection] = ()

    @property
    def code(self) -> str:
        """The chapter of 58 Pa. Code, e.g. "655a": the `chapter` of its rules and round records."""
        return self.spec.chapter

    def rules(self, rules: ChapterRules) -> RulesCo:
        """These rules as this chapter's own model; TypeError for another chapter's."""
        if not isinstance(rules, self.rules_type):
            raise TypeError(f"{type(rules).__name__} are not chapter {self.code}'s rules")
        return rules

    def engine(
        self,
        rules: ChapterRules,
        method: DealingMethod | None = None,
        options: TableOptions | None = None,
        draws: BonusDraws | None = None,
    ) -> RoundEngine[RulesCo]:
        """The round engine for these rules (the config's method unless `method` is given); ValueError for a
        dealing method or progressive figures the chapter does not allow."""
        from controller.engine.round import RoundEngine  # the service's, loaded after the devices start (issue 19)

        own = self.rules(rules)
        return RoundEngine(self.spec, own, method or self.spec.dealing_method(own), options, draws)

    def settle(self, rules: ChapterRules, data: Mapping[str, object]) -> Settlement:
        """Settle a round record given as data (JSON): pydantic's ValidationError for a record the chapter could not
        have produced, SettlementError or CardError for one these rules could not."""
        return self.settle_record(self.rules(rules), self.record_type.model_validate(data))

    def paytables(self, rules: ChapterRules) -> list[PaytableText]:
        return list(self.describe(self.rules(rules)))

    def progressives(self, rules: ChapterRules, options: ProgressiveOptions | None = None) -> TableProgressives:
        """The table's meters; ParameterError for figures the chapter does not allow or options naming no meter."""
        own = self.rules(rules)
        chosen = options or ProgressiveOptions()
        return meter_table(lambda: self.meters(own, chosen), chosen)

    def settings_offering_wagers(self, rules: ChapterRules) -> Mapping[str, str]:
        return self.wager_settings(self.rules(rules))

    def spots_after_lockout(self, rules: ChapterRules) -> frozenset[str]:
        """The wager spots that take chips after "no more bets": those of the wagers a player makes at a decision
        (655a.11(b), 683a.11(b), 679a.7(d)(1), 684a.1); "no more bets" locks every other spot."""
        own = self.rules(rules)
        return frozenset(d.spot for d in self.spec.decisions(own) if d.kind == "wager_or_fold")

    def demo_wagers(self, rules: ChapterRules, rng: random.Random) -> Wagers:
        return self.players.wagers(self.rules(rules), self.spec, rng)

    def demo_late_wager(self, rules: ChapterRules, rng: random.Random) -> tuple[int, str, int] | None:
        return self.players.late_wager(self.rules(rules), rng)
