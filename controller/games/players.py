"""How the demo's simulated players bet at a chapter's table (controller.people plays them).

By default a chapter's players are read off its spec alone: the same amount on each main wager it offers, optional
wagers now and then at their minimum. A chapter whose table the demo shows off in more detail (655a, the default
demo) gives its own `DemoPlayers` in its registry entry.
"""

from __future__ import annotations

import random
from typing import Generic

from controller.engine.spec import ChapterSpec, Rules

# The chips the simulated players like to bet, in cents, where the table's limits allow them.
CHIPS = (500, 1000, 2500, 5000)

# Seat -> {spot: cents}, the wagers placed before "no more bets".
Wagers = dict[int, dict[str, int]]


class DemoPlayers(Generic[Rules]):
    """Random but legal players, from the chapter's spec."""

    def wagers(self, rules: Rules, spec: ChapterSpec[Rules], rng: random.Random) -> Wagers:
        """Seats that would not make a player (ChapterSpec.player_problem) sit the round out; at least one plays."""
        offers = list(spec.offers(rules))
        main = [o for o in offers if o.spot in spec.main_wagers] or offers[:1]
        optional = [o for o in offers if o not in main]
        low = max(o.min_cents for o in main)
        high = min(o.max_cents for o in main)
        chips = [a for a in CHIPS if low <= a <= high] or [low]
        seats = spec.seats(rules)
        out: Wagers = {}
        for seat in range(1, seats + 1):
            if rng.random() > 0.8:
                continue  # an empty seat this round
            amount = rng.choice(chips)
            # The same amount on each main wager: some chapters want them equal (643a.7(d)).
            w = {o.spot: amount for o in main}
            w.update({o.spot: o.min_cents for o in optional if rng.random() < 0.3})
            if spec.player_problem(w) is None:
                out[seat] = w
        if not out:
            out[rng.randint(1, seats)] = {o.spot: chips[0] for o in main}
        return out

    def late_wager(self, rules: Rules, rng: random.Random) -> tuple[int, str, int] | None:
        """A wager someone tries after "no more bets" (seat, spot, cents), to show the lock-out; None: nobody."""
        return None
