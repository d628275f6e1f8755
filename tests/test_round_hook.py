"""The round hook a search's pruner uses (ltr.training.round_hook): what it sees, where it stops."""

from __future__ import annotations

from collections.abc import Callable

from omegaconf import DictConfig

from ltr.data.load import load_splits
from ltr.training.local import fit_ranker
from ltr.training.round_hook import current_round_hook, watching_rounds


def test_the_hook_sees_every_rounds_watched_value_and_changes_nothing_when_it_never_stops(
    small_cfg: Callable[..., DictConfig],
) -> None:
    cfg = small_cfg("fit.num_boost_round=12", "fit.early_stopping_rounds=null")
    splits = load_splits(cfg.data, cfg.split, seed=cfg.seed)
    plain = fit_ranker(splits, cfg.model, cfg.fit, eval_at=[10], seed=cfg.seed)
    seen: list[tuple[int, float]] = []

    def hook(round_: int, value: float) -> bool:
        seen.append((round_, value))
        return False

    with watching_rounds(hook):
        hooked = fit_ranker(splits, cfg.model, cfg.fit, eval_at=[10], seed=cfg.seed)
    assert current_round_hook() is None, "the hook is gone after its block"
    assert [r for r, _ in seen] == list(range(1, 13))
    assert [v for _, v in seen] == plain.curves["valid"]["ndcg_at_10"], "the hook sees our per-round valid nDCG@10"
    assert hooked.n_rounds == plain.n_rounds == 12
    assert hooked.best_iteration == plain.best_iteration
    assert hooked.predict(splits.test.features).tobytes() == plain.predict(splits.test.features).tobytes()


def test_a_hook_that_says_stop_ends_training_at_that_round_keeping_the_best_round_so_far(
    small_cfg: Callable[..., DictConfig],
) -> None:
    cfg = small_cfg("fit.num_boost_round=30", "fit.early_stopping_rounds=null")
    splits = load_splits(cfg.data, cfg.split, seed=cfg.seed)
    with watching_rounds(lambda round_, value: round_ == 6):
        result = fit_ranker(splits, cfg.model, cfg.fit, eval_at=[10], seed=cfg.seed)
    curve = result.curves["valid"]["ndcg_at_10"]
    assert result.n_rounds == 6
    assert len(curve) == 6
    assert result.best_iteration == 1 + max(range(6), key=lambda i: (curve[i], -i))  # the first best round
