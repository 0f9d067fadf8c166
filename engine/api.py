"""The public entry points of a batch run, above every layer: `run_evals` / `arun_evals`,
`calibrate` / `acalibrate`, `compare` / `acompare`, `align` / `aalign`.

Each is the function of its package (`engine.run.evals`, `engine.analysis.calibration`,
`engine.analysis.compare`, `engine.alignment.loop`) with the run's executor resolved first: ``executor="ray"`` (with
``ray=`` its settings, `engine.ray.cluster.RayOptions` or a mapping of its fields) becomes an
`engine.ray.runner.RayExecutor`, which the run package does not import. Arguments, results and
errors are those of the package's function; the Ray executor also raises
`engine.ray.cluster.RayMissing` (an `ImportError`) without Ray installed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .core.sync import run_sync

if TYPE_CHECKING:
    from .alignment.result import AlignResult
    from .alignment.settings import AlignSettings
    from .analysis.calibration import Calibration, CalibrationSettings
    from .analysis.compare import CompareSettings
    from .analysis.comparison import Comparison
    from .run.settings import RunSettings
    from .run.summary import EvalSummary

__all__ = ["run_evals", "arun_evals", "calibrate", "acalibrate", "compare", "acompare", "align", "aalign",
           "resolved_settings"]


def resolved_settings(settings: RunSettings | None, kwargs: dict[str, Any]) -> RunSettings | None:
    """`settings` with the run settings among `kwargs` laid over it (taken out of `kwargs`), the
    executor ``"ray"`` resolved to an `engine.ray.runner.RayExecutor`; None when neither gives a
    setting. Raises `ValueError` for Ray settings that cannot be used."""
    from dataclasses import fields

    from .run.settings import RunSettings

    names = {f.name for f in fields(RunSettings)}
    given = {name: kwargs.pop(name) for name in list(kwargs) if name in names}
    if settings is None and not given:
        return None
    built = RunSettings.build(settings, **given)
    if built.executor == "ray":
        from .ray.runner import with_ray_executor

        built = with_ray_executor(built)
    return built


async def arun_evals(data: Any, scorers: Any, settings: RunSettings | None = None, **kwargs: Any) -> EvalSummary:
    """Score every item of `data` with every scorer; return the run's `EvalSummary`.

    data: a JSONL / CSV / JSON-array / Parquet path (on Ray also a folder, a glob or a URL), a list
    of dicts, or a pandas DataFrame. scorers: `Scorer` objects (`engine.load_scorer`) or spec ids
    (``"LABEL=SPEC"`` runs one under a label). settings: an `engine.RunSettings`; keyword arguments
    naming its fields (concurrency, rate_limit, thresholds, fields, samples, prices, max_cost,
    limit, executor, ray, cache, refresh, out, resume, run_id, item_cutoffs, language) are laid over it, a
    keyword winning. The other keywords — target, against (a second version of the target: its
    output each item's ``output_b``, the target's ``output_a``), on_item_complete, progress, store, config — and
    every error raised are `engine.run.evals.arun_evals`'s. ``executor="ray"`` scores on a Ray
    cluster (`engine.ray.runner.RayExecutor`)."""
    from .run.evals import arun_evals as run

    return await run(data, scorers, resolved_settings(settings, kwargs), **kwargs)


def run_evals(data: Any, scorers: Any, settings: RunSettings | None = None, **kwargs: Any) -> EvalSummary:
    """Synchronous `arun_evals` (same arguments; inside a running event loop the run happens on a
    private loop in a worker thread)."""
    return run_sync(arun_evals(data, scorers, settings, **kwargs), thread_name="scorespec-run-evals")


async def acalibrate(scorer: Any, data: Any, settings: CalibrationSettings | None = None,
                     run: RunSettings | None = None, **kwargs: Any) -> Calibration:
    """A scorer's agreement with human labels over `data`; return a `Calibration`.

    settings: an `engine.CalibrationSettings` (label field, positive and negative values, the
    cut-off as `threshold`, …); run: an `engine.RunSettings`. Keyword arguments naming a field of either are laid over
    them; the rest, and every error raised, are `engine.analysis.calibration.acalibrate`'s."""
    from .analysis.calibration import acalibrate as calibrate_

    return await calibrate_(scorer, data, settings, resolved_settings(run, kwargs), **kwargs)


def calibrate(scorer: Any, data: Any, settings: CalibrationSettings | None = None,
              run: RunSettings | None = None, **kwargs: Any) -> Calibration:
    """Synchronous `acalibrate` (same arguments; works inside a running event loop too)."""
    return run_sync(acalibrate(scorer, data, settings, run, **kwargs), thread_name="scorespec-calibrate")


async def acompare(versions: Any = None, data: Any = None, settings: CompareSettings | None = None,
                   run: RunSettings | None = None, **kwargs: Any) -> Comparison:
    """Two or more versions of a scorer on the same items, the first the baseline; return a
    `Comparison` (paired differences, their confidence interval and p-value).

    versions: `Scorer` objects or spec references (or finished runs through the settings' `runs`);
    settings: an `engine.CompareSettings`; run: an `engine.RunSettings`. Keyword arguments naming a
    field of either are laid over them; the rest, and every error raised, are
    `engine.analysis.compare.acompare`'s."""
    from .analysis.compare import acompare as compare_

    return await compare_(versions, data, settings, resolved_settings(run, kwargs), **kwargs)


def compare(versions: Any = None, data: Any = None, settings: CompareSettings | None = None,
            run: RunSettings | None = None, **kwargs: Any) -> Comparison:
    """Synchronous `acompare` (same arguments; works inside a running event loop too)."""
    return run_sync(acompare(versions, data, settings, run, **kwargs), thread_name="scorespec-compare")


async def aalign(scorer: Any, data: Any, settings: AlignSettings | None = None, run: RunSettings | None = None,
                 *, resume: bool = False, **kwargs: Any) -> AlignResult:
    """Align a scorer with the human labels of `data`: candidate child specs proposed from a train
    split, chosen on a dev split, the chosen one and the parent compared once on a held-out test
    split, the child written as an ``extends:`` spec; return an `AlignResult`.

    settings: an `engine.AlignSettings` (labels, split, strategies, candidates, name, out_dir, …);
    run: an `engine.RunSettings`. Keyword arguments naming a field of either are laid over them; the
    rest (progress, on_phase, optimizer), and every error raised, are `engine.alignment.loop.aalign`'s;
    resume: continue the alignment in the out folder (`engine.alignment.loop.aalign`'s, not the
    run setting of that name)."""
    from .alignment.loop import aalign as align_

    return await align_(scorer, data, settings, resolved_settings(run, kwargs), resume=resume, **kwargs)


def align(scorer: Any, data: Any, settings: AlignSettings | None = None, run: RunSettings | None = None,
          *, resume: bool = False, **kwargs: Any) -> AlignResult:
    """Synchronous `aalign` (same arguments; works inside a running event loop too)."""
    return run_sync(aalign(scorer, data, settings, run, resume=resume, **kwargs), thread_name="scorespec-align")


for _sync, _async in ((run_evals, arun_evals), (calibrate, acalibrate), (compare, acompare), (align, aalign)):
    # the synchronous forms document what their async forms do (help() shows it)
    _sync.__doc__ = f"{_async.__doc__}\n\n    {_sync.__doc__}"
del _sync, _async
