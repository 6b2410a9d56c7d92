"""Campaigns (every five-card hand through both evaluators, millions of 7-card hands, millions of simulated rounds)
run only when asked for with `-m campaign`; by default each test runs its bounded version, so the suite stays
within CI's time on two cores."""

from __future__ import annotations

import pytest


def campaign_requested(config: pytest.Config) -> bool:
    return "campaign" in str(config.getoption("-m") or "")


@pytest.fixture
def campaign(request: pytest.FixtureRequest) -> bool:
    """True when the run asked for the full campaigns (`pytest -m campaign tests/par`)."""
    return campaign_requested(request.config)
