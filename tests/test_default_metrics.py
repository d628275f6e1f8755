"""The default experiment's headline metrics, bit for bit: the values the README prints.

Every change to data, training or metrics must keep them (``ltr train tracking=none``). About
75 s of CPU (300 rounds on 3,000 synthetic queries), hence ``slow``.
"""

from __future__ import annotations

import pytest

from ltr.experiment import run as pipeline
from tests.conftest import compose_train


@pytest.mark.slow
def test_default_experiment_metrics_are_unchanged() -> None:
    out = pipeline.run(compose_train(["tracking=none", "fit.show_progress=false"]))
    assert out.metrics["valid/ndcg_at_10"] == 0.7470547896713937
    assert out.metrics["test/ndcg_at_10"] == 0.7371750887149288
