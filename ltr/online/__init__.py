"""Before any traffic: a simulated A/B test and team-draft interleaving of two runs' rankings
(:mod:`ltr.online.simulate`), loaded from the tracking store (:mod:`ltr.online.abtest`)."""

from ltr.online.simulate import AbTestResult, ClickModel, simulate_abtest

__all__ = ["AbTestResult", "ClickModel", "simulate_abtest"]
