"""``ltr rerun RUN [OVERRIDES...]``: run a logged run again and say what moved.

RUN is a run id, id prefix or run name (as ``ltr compare`` takes it), read from ``--tracking-uri``;
the rerun is logged in that same store (``tracking.uri=...`` logs it elsewhere). The run's logged overrides
are composed again (extra overrides replace those of the same key: "the same, but ..."), from the
config folders it was trained with (tag ``ltr.config_dirs``; ``--config-dir`` names others), one
line says what differs from the source run (code commit, uncommitted changes, LightGBM's version,
the composed config, the data), the new run is logged beside it (tag ``ltr.rerun_of``), named
``<source name> (rerun)`` unless ``tracking.run_name=`` says otherwise, and the two are compared:
identical metrics bit for bit, or each key that moved and by how much, then the per-stratum
comparison of ``ltr compare``. The rerun's description opens with a link to the source run and
that outcome. The work is imported after the arguments are parsed
(``--help`` and an argument error import no Hydra, MLflow or LightGBM).
"""

from __future__ import annotations

import argparse
import logging
import sys

from ltr.cli.support.args import OneLineParser
from ltr.cli.support.verb import run_verb
from ltr.errors import LtrUserError

#: Differences listed one per line at the most (the rest are counted).
SHOWN = 20


def build_parser() -> OneLineParser:
    parser = OneLineParser(prog="ltr rerun", description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("run", metavar="RUN", help="run id, id prefix or run name; or a registered model (its champion's run)")
    parser.add_argument("overrides", nargs="*", default=[], metavar="OVERRIDE", help="Hydra overrides that change the rerun")
    parser.add_argument("--experiment", default="ltr", help="experiment of a run name (default: ltr)")
    parser.add_argument("--tracking-uri", default=None, help="the store (default: $LTR_TRACKING_URI, $MLFLOW_TRACKING_URI, ./mlflow.db, the project root's mlflow.db)")
    parser.add_argument(
        "--config-dir", action="append", default=None, metavar="DIR",
        help="your config folder, instead of the ones the run was trained with (its tag ltr.config_dirs); repeat for several",
    )  # fmt: skip
    return parser


def main(argv: list[str] | None = None) -> int:
    return run_verb(argv, build_parser(), _run, intermixed=True, log_level=logging.INFO)


def _run(args: argparse.Namespace) -> int:
    from omegaconf import OmegaConf

    from ltr.cli.compare import print_terminal
    from ltr.compare.align import UnpairedQids
    from ltr.compare.loading import load_comparison
    from ltr.config import search_path
    from ltr.config.compose import compose_run
    from ltr.config.overrides import override_key
    from ltr.experiment import run as pipeline
    from ltr.experiment.rerun import (
        TIMING_SUFFIX,
        config_differences,
        describe_changes,
        logged_overrides,
        metric_differences,
        plan_rerun,
        rerun_name,
        thread_change,
    )
    from ltr.experiment.rerun_steps import (
        config_dirs,
        describe_difference,
        describe_rerun,
        target_store,
    )
    from ltr.tracking import find_tracking_uri
    from ltr.tracking.runs import RunStore

    store = RunStore(find_tracking_uri(args.tracking_uri))
    source = store.resolve(args.run, experiment=args.experiment)
    label = f"{source.run_id[:8]} ({source.run_name})"
    if source.tags.get("ltr.role") == "sweep":
        raise LtrUserError(
            f"run {label} is a sweep's parent, not a trained run: rerun one of its jobs (its description "
            "lists them), or run the sweep again with ltr train -m"
        )
    experiment = store.client.get_experiment(source.experiment_id).name
    plan = plan_rerun(
        logged_overrides(store.text_artifact(source, "config/overrides.yaml")), args.overrides,
        tracking_uri=store.uri, experiment=experiment,
    )
    dirs = config_dirs(args.config_dir, args.overrides, source, label)
    try:
        composed = compose_run(plan.overrides, what="the rerun", config_dirs=dirs)
    except LtrUserError as exc:
        if dirs or " is not an option of " not in str(exc):
            raise
        raise LtrUserError(f"{exc}; if run {label} used your own config folder, pass --config-dir DIR") from None
    cfg = composed.config
    if not cfg.tracking.enabled:
        raise LtrUserError("a rerun with tracking=none would log nothing to compare: leave tracking=none out")
    changes = describe_changes(
        source,
        config_differences(store.text_artifact(source, "config/config.yaml"), OmegaConf.to_yaml(cfg), ignore=plan.changed),
    )
    if not any(override_key(o) == "tracking.run_name" for o in args.overrides):  # not the source's name
        cfg.tracking.run_name = rerun_name(source.run_name)
    recorded = search_path.decode(source.tags.get(search_path.TAG))
    if list(composed.config_dirs) != recorded:
        changes.append(f"config folders {', '.join(recorded) or 'none'} -> {', '.join(composed.config_dirs) or 'none'}")
    outcome = pipeline.run(
        cfg,
        overrides=[o for o in plan.overrides if not o.lstrip("+~").startswith(("tracking.uri=", "tracking.experiment=", "hydra."))],
        extra_tags={"ltr.rerun_of": source.run_id} | search_path.tags(composed.config_dirs),
    )
    if outcome.run_id is None:  # the check above refuses tracking=none before training
        raise LtrUserError("the rerun logged nothing (tracking=none): there is nothing to compare")
    target = target_store(store, plan.overrides)
    rerun = target.resolve(outcome.run_id, experiment=str(cfg.tracking.experiment))
    old_data, new_data = source.tags.get("ltr.data.fingerprint"), rerun.tags.get("ltr.data.fingerprint")
    if old_data != new_data:
        changes.append(f"data fingerprint {old_data} -> {new_data} (a changed data file or data setting)")
    threads = thread_change(store.params(source), target.params(rerun))
    if threads is not None:
        changes.append(threads)
    if plan.changed:
        changes.insert(0, "changed on purpose: " + ", ".join(plan.changed))
    pruned_at = source.tags.get("ltr.pruned_at_round")
    if pruned_at is not None:
        changes.append(f"the source run was pruned by its Optuna search at round {pruned_at} (the rerun trains to the end)")
    print(f"ltr: rerun of {label} as {rerun.run_id[:8]} ({rerun.run_name}): " + ("; ".join(changes) if changes else "nothing differs"))
    if source.status != "FINISHED":
        print(f"(the source run did not finish: what it logged is partial, so nothing is compared; the rerun {rerun.run_id[:8]} is {rerun.status})")
        describe_rerun(target, rerun, source, None, 0, changes, same_store=target is store)
        return 0
    old_metrics, new_metrics = store.metrics(source), target.metrics(rerun)
    differences = metric_differences(old_metrics, new_metrics)
    n_keys = len([k for k in set(old_metrics) | set(new_metrics) if not k.endswith(TIMING_SUFFIX)])
    describe_rerun(target, rerun, source, differences, n_keys, changes, same_store=target is store)
    if not differences:
        print(f"identical metrics, bit for bit ({n_keys} keys)")
        return 0
    print(f"{len(differences)} metric keys moved (rerun - source):")
    for key, old, new in differences[:SHOWN]:
        print(f"  {key}: {describe_difference(old, new)}")
    if len(differences) > SHOWN:
        print(f"  ... and {len(differences) - SHOWN} more")
    if target is not store:
        print(f"(the rerun is in {target.uri}: ltr compare reads one store, so no per-stratum comparison)")
        return 0
    try:
        loaded = load_comparison(
            [source.run_id, rerun.run_id], tracking_uri=store.uri, experiment=experiment, force=True, n_resamples=2000
        )
    except UnpairedQids as exc:  # a source run logged before string qids were kept as written
        print(f"(no per-stratum comparison: {exc})")
        return 0
    print_terminal(loaded.comparison)
    sys.stdout.flush()
    return 0
