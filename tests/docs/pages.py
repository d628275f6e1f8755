"""Which test module runs which page's examples: two modules, so that ``make test``'s two
workers (``--dist loadfile``) share the pages. Every page is in exactly one (tested)."""

from __future__ import annotations

#: The pages of tests/docs/test_examples_a.py; the others run in test_examples_b.py.
FIRST_HALF = frozenset(
    {
        "README.md",
        "docs/guide/your-data.md",
        "docs/guide/sweeps.md",
        "docs/guide/searches.md",
        "docs/guide/comparing-runs.md",
        "docs/guide/before-traffic.md",
        "docs/guide/click-logs.md",
        "docs/guide/off-policy.md",
        "docs/guide/calibration.md",
        "docs/guide/exposure.md",
        "docs/guide/off-policy-estimators.md",
        "docs/guide/ndcg-checks.md",
        "docs/guide/explaining-rankings.md",
        "docs/contributing/development.md",
    }
)
