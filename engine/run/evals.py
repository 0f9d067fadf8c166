"""Batch evaluation: many items × several scorers, concurrent, failure-isolated, resumable.

`run_evals(data, scorers, ...)` (or ``await arun_evals(...)``) is the seed's ``runEvals``
(data, scorers, target, onItemComplete → a mean score per scorer), extended. A scorer in a run
is known by its label — its id unless given (`Scorer.label`) — so one run can hold two versions
of one scorer; results, the out file, the store, summaries and thresholds use the label. Its parts:

- `engine.run.runner`: the concurrency (items streamed into ``concurrency`` workers, a shared rate
  limit), failure isolation (a failed item is a result with ``error``, never a low score; a
  target that raises fails its item with kind ``target``) and each result saved as it completes;
- `engine.run.resume`: a run identified by its ``out`` file or its run id; ``resume=True`` skips
  every (item, label) already scored or not scorable, retries the failed ones, repairs a torn
  last line, brings the store in line and at the end leaves one line per (item, label). The
  summary of a resumed run covers the whole run (earlier results included);
- `engine.run.summary`: statistics per scorer over scored items only, thresholds and the verdict
  (``errors`` 2, ``below_threshold`` 1, ``passed`` 0: the CLI's exit code);
- `engine.run.reporting`: the hooks a run reports progress to; `engine.run.outfile` and `engine.run.store`:
  where results are kept (an out-file line is ``{"id": <item id>, "scorer": <scorer id>,
  "label": <its label>, …}`` and the result's other fields as `ScoreResult.to_json_dict()` gives
  them; ``runId`` is the run's id).
  A killed process loses only results that had not completed;
- `engine.run.prices` and `engine.run.budget`: what each result, scorer and model cost, and a budget the
  run stops before passing (verdict ``budget_reached``, exit code 3; ``resume`` continues it,
  counting what its earlier attempts spent);
- `engine.ray.runner`: with ``executor="ray"``, the items are read by Ray Data and scored by a
  pool of Ray actors instead of `engine.run.runner`; everything else here is the same.
"""

from __future__ import annotations

import itertools
import os
import secrets
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from ..core.direction import direction_of
from ..core.result import ScoreResult
from ..core.sync import run_sync
from ..judge.rate_limit import RateLimiter
from .budget import Budget, check_max_cost, check_priced, spent_before
from .datasets import data_len, iter_items
from .items import DatasetProblem, Item, parse_fields
from .prices import PriceTable, cost_of, load_prices
from .reporting import EvalReporter, RunState, StderrReporter
from .resume import find_prior, tidy_out_file
from .runner import Runner, declared_names, label_of, uses_judge
from .store import Store
from .summary import VERDICT_EXIT, EvalSummary, ScorerStats, ScorerSummary, Threshold, parse_thresholds, verdict_of

MAX_PROBLEMS_KEPT = 100
DEFAULT_CONCURRENCY = 8


def new_run_id() -> str:
    """A sortable, readable run id: ``20250614-103015-3fa2c1``."""
    return datetime.now(timezone.utc).strftime("%Y%m%d-%H%M%S-") + secrets.token_hex(3)


def scorer_reference(text: str) -> tuple[str | None, str]:
    """``"SPEC"`` → (None, SPEC); ``"LABEL=SPEC"`` → (LABEL, SPEC), split at the first ``=`` (a
    label holds none): ``faithfulness@draft=my_specs/faith.yaml`` runs that file under the label
    ``faithfulness@draft``. SPEC is a spec id or path. Raises `ValueError` for an empty side."""
    label, sep, spec = text.partition("=")
    if not sep:
        return None, text
    if not label.strip() or not spec.strip():
        raise ValueError(f"scorer {text!r}: expected SPEC or LABEL=SPEC (e.g. faithfulness@draft=my_specs/faith.yaml)")
    return label, spec


def resolve_scorers(scorers: Any) -> list[Any]:
    """The run's scorers: `Scorer` objects (or objects with ``id``, ``run``, ``arun`` and
    optionally ``label``) and spec references (``SPEC`` or ``LABEL=SPEC``, `scorer_reference`)
    loaded with `engine.bind.load.load_scorer`; one scorer or reference alone is a list of one.
    Each is known in the run by its label (`label_of`: its id unless given), so one spec may run
    twice under two labels. Raises `ValueError` for no scorer or a label given twice, and what
    `load_scorer` raises."""
    from ..bind.load import load_scorer
    from ..interpret.scorer import Scorer

    if isinstance(scorers, (str, Scorer)):
        scorers = [scorers]
    resolved = []
    for scorer in scorers:
        if isinstance(scorer, str):
            label, spec = scorer_reference(scorer)
            scorer = load_scorer(spec, label=label)
        resolved.append(scorer)
    if not resolved:
        raise ValueError("give at least one scorer")
    seen: set[str] = set()
    for scorer in resolved:
        label = label_of(scorer)
        if label in seen:
            raise ValueError(f"scorer label {label!r} is given twice; each label may appear once per run (give "
                             "two versions of a scorer different labels: load_scorer(..., label=...))")
        seen.add(label)
    return resolved


def default_concurrency(scorers: list[Any]) -> int:
    """8, or when every scorer that uses a judge runs on an embedded model, the most slots among
    those models (`engine.embedded.settings`: as many items in flight as sequences the model decodes
    at once; more would only interleave items, so that none finishes until the end)."""
    from ..embedded.settings import local_settings
    from ..judge.model import is_local

    models = [str(getattr(s, "model", "") or "") for s in scorers if uses_judge(s)]
    if models and all(is_local(m) for m in models):
        try:
            return max(local_settings(m).slots for m in models)
        except ValueError:  # a bad option: the scorer's judge reports it on each item
            return 1
    return DEFAULT_CONCURRENCY


async def arun_evals(
    data: Any,
    scorers: Any,
    *,
    target: Callable[[Any], Any] | None = None,
    concurrency: int | None = None,
    on_item_complete: Callable[[Item, dict[str, ScoreResult]], Any] | None = None,
    thresholds: Mapping[str, Any] | Iterable[str] | None = None,
    out: str | os.PathLike[str] | None = None,
    resume: bool = False,
    run_id: str | None = None,
    rate_limit: float | None = None,
    store: Store | str | os.PathLike[str] | bool | None = None,
    progress: bool | EvalReporter = False,
    fields: Mapping[str, str] | Iterable[str] | None = None,
    config: Mapping[str, Any] | None = None,
    cache: Any = None,
    refresh: bool = False,
    samples: int | None = None,
    prices: PriceTable | str | os.PathLike[str] | bool | None = None,
    max_cost: float | None = None,
    limit: int | None = None,
    executor: str = "local",
    ray: Any = None,
) -> EvalSummary:
    """Score every item of `data` with every scorer; see the module docstring.

    data: a JSONL / CSV / JSON-array path, a list (or iterable) of dicts, or a pandas DataFrame
    (`engine.run.datasets`). scorers: `Scorer` objects or spec ids (see `resolve_scorers`; results,
    statistics and thresholds are keyed by each scorer's label, its id unless given). target: an optional sync or
    async callable taking an item's ``input`` and returning its ``output``. concurrency: at
    most this many scorer runs at once (≥ 1); by default 8, or 1 when every judge is an
    embedded model (it answers one call at a time, so items then finish one after another).
    on_item_complete(item, {label: ScoreResult}): called (awaited if async) after each
    item's scorers finished, with the results made in this attempt; an exception from it stops
    the run (every completed result is already saved). thresholds: ``{label: limit | (min,
    max)}`` (a limit: a mean at least as good as it, by the scorer's direction; a pair: a range).
    out: the JSONL file results are appended to. resume: continue the run of `out` (or of
    `run_id` in the store). run_id: the id of a new run (default: a fresh one). rate_limit:
    judge requests per second. store: a `Store`, a path, None for the default store
    (``$SCORESPEC_STORE`` or ``.scorespec/store.sqlite``), or False for none. progress: an
    `EvalReporter` (the terminal's is `engine.cli.output.ConsoleReporter`), or True for plain
    progress lines on stderr (`engine.run.reporting.StderrReporter`). fields: a field mapping
    ``{"output": "answer"}`` or ``["output=answer"]`` (a run field, or a field a scorer declares).
    config: extra data recorded with the run in the store (the CLI records its arguments to
    resume from). cache: the judge-call cache for every scorer's judge
    (`engine.judge.cache.layer.open_cache`: True for the default cache, a file path, a
    ``redis://`` URL, a `JudgeCache`; False takes the scorers' cache off); None leaves each
    scorer's judge as it was built (`load_scorer(..., cache=...)`). refresh: with `cache`, ask
    every call again and overwrite its entry. samples: ask every prompt stage that can be sampled
    this many times (`engine.interpret.scorer.Scorer.with_samples`; None: as each spec says). prices: the
    price table the results' cost comes from (`engine.run.prices`): a `PriceTable`, a file laid over
    the shipped table, None for the default (``$SCORESPEC_PRICES``, else ``prices.yaml`` in the
    cache folder, over the shipped table), or False for no cost. max_cost: a budget in US
    dollars: the run stops before an item that would pass it (`engine.run.budget`; verdict
    ``budget_reached``); on resume, what the run's earlier attempts spent counts too. limit:
    score only the first `limit` readable items of the data (≥ 1; None: all).
    executor: ``"local"`` (this process) or ``"ray"`` (a Ray cluster, `engine.ray.runner`: the
    data read by Ray Data — a path or URL, or items in memory — and scored by a pool of actors;
    `concurrency` is then per actor and `rate_limit` holds for the whole cluster; every scorer
    must come from a spec and its judge from a model string). ray: the Ray settings, an
    `engine.ray.cluster.RayOptions` or a mapping of its fields (address, actors, cpus_per_actor,
    batch_size, …); None: the defaults.

    Returns an `EvalSummary`. Raises `ValueError` for bad arguments (a label given twice, a
    threshold for an unknown label, concurrency < 1, resuming a run that does not exist, samples
    outside 1..50, a max_cost that is not a positive number, an unknown executor, ray settings
    without the Ray executor, max_cost on Ray, a scorer a Ray actor cannot build),
    `engine.ray.cluster.RayMissing` (an `ImportError`) for the Ray executor without Ray installed,
    ``ConnectionError`` for a Ray cluster that cannot be joined, `engine.run.budget.UnpricedModelError`
    (a `ValueError`) when `max_cost` is given and a judge model has no price,
    `engine.run.prices.PriceTableError` (a `ValueError`) for a price table that cannot be used,
    `FileExistsError` when `out` already holds results and `resume` is False,
    `engine.run.items.DatasetError` for an unreadable file.
    """
    if limit is not None and limit < 1:
        raise ValueError(f"limit must be ≥ 1, not {limit}")
    ray_options = _ray_options(executor, ray, max_cost)
    scorer_list = resolve_scorers(scorers)
    if samples is not None:
        scorer_list = [s.with_samples(samples) if hasattr(s, "with_samples") else s for s in scorer_list]
    price_table = _price_table(prices, max_cost)
    if max_cost is not None:
        check_max_cost(max_cost)
        assert price_table is not None
        check_priced([getattr(s, "model", None) for s in scorer_list if uses_judge(s)], price_table)
    if cache is not None:
        from ..bind.stack import rebind
        from ..judge.cache.layer import open_cache

        one_cache = open_cache(cache)  # one cache object for every scorer
        scorer_list = [rebind(s, cache=one_cache, refresh=refresh) for s in scorer_list]
    concurrency = default_concurrency(scorer_list) if concurrency is None else concurrency
    if concurrency < 1:
        raise ValueError(f"concurrency must be ≥ 1, not {concurrency}")
    labels = [label_of(s) for s in scorer_list]
    limits = _thresholds(thresholds, scorer_list)
    field_map = parse_fields(fields, declared_names(scorer_list)) if fields is not None and not isinstance(
        fields, Mapping) else dict(fields or {})
    reporter = progress if isinstance(progress, EvalReporter) else StderrReporter(progress=bool(progress))
    db, own_store = _open_store(store)
    out_path = Path(out).resolve() if out is not None else None
    try:
        prior = find_prior(out_path, run_id, db, resume=resume, note=reporter.note)
        stats = {label_of(s): ScorerStats(label_of(s), s.id, _spec_hash(s), direction_of(s)) for s in scorer_list}
        total = data_len(data)
        state = RunState(prior.run_id or new_run_id(), labels, stats,
                         min(total, limit) if total is not None and limit is not None else total,
                         str(out_path) if out_path else None, str(db) if db else None, resuming=prior.resuming)
        on_problem = _problem_counter(state, reporter)
        items: Iterator[Item] = iter(())
        if ray_options is None:
            items = _items(data, field_map, on_problem)
            if limit is not None:  # the first `limit` readable items, in the data's order
                items = itertools.islice(items, limit)
        if db is not None:
            db.begin_run(state.run_id, data=_data_path(data), out=state.out, scorers=labels,
                         config=_run_config(config, concurrency, limits, stats, scorer_list))
            _record_specs(db, scorer_list)
        budget = None
        if max_cost is not None and price_table is not None:
            usd, items_before = spent_before(prior.spent, price_table)
            budget = Budget(max_cost, spent_before=usd, items_before=items_before)
        runner: Any
        if ray_options is None:
            runner = Runner(scorer_list, state, prior, out_path, db, reporter, target, on_item_complete, concurrency,
                            RateLimiter(rate_limit) if rate_limit else None, prices=price_table, budget=budget)
        else:
            from ..ray.runner import RayRunner

            runner = RayRunner(scorer_list, state, prior, out_path, db, reporter, target, on_item_complete,
                               concurrency, rate_limit, prices=price_table, data=data, fields=field_map,
                               limit=limit, options=ray_options, on_problem=on_problem)
        reporter.start(state)
        summary: EvalSummary | None = None
        try:
            await (runner.run(items) if ray_options is None else runner.run())
            tidy_out_file(out_path, prior, runner.rewrote)
            models = {label_of(s): getattr(s, "model", None) for s in scorer_list}
            summary = _summary(state, limits, price_table, models, budget)
        finally:
            if db is not None:
                status = "interrupted" if summary is None else "stopped" if summary.stopped else "finished"
                db.finish_run(state.run_id, status=status,
                              summary=None if summary is None else summary.to_json_dict(),
                              verdict=None if summary is None else summary.verdict)
            reporter.finish(state, summary)
        assert summary is not None
        return summary
    finally:
        if own_store and db is not None:
            db.close()


def _thresholds(thresholds: Mapping[str, Any] | Iterable[str] | None, scorers: list[Any]) -> dict[str, Threshold]:
    """Thresholds by label, a limit set by its scorer's direction (`Threshold.for_direction`)."""
    by_label = {label_of(s): s for s in scorers}
    limits = parse_thresholds(thresholds)
    unknown = [t for t in limits if t not in by_label]
    if unknown:
        raise ValueError(f"threshold for {', '.join(map(repr, unknown))}, which is not among the scorers "
                         f"({', '.join(by_label)})")
    return {label: t.for_direction(direction_of(by_label[label])) for label, t in limits.items()}


def _run_config(config: Mapping[str, Any] | None, concurrency: int, limits: Mapping[str, Threshold],
                stats: Mapping[str, ScorerStats], scorers: list[Any]) -> dict[str, Any]:
    """What the store records with a run: the caller's `config`, the concurrency, the
    thresholds, and per label the scorer's id, spec hash (its text: `Store.spec`), direction
    and scale (None when unknown)."""
    scales = {label_of(s): _scale(s) for s in scorers}
    return {**(config or {}), "concurrency": concurrency,
            "thresholds": {label: t.to_json_dict() for label, t in limits.items()},
            "labels": {label: {"scorer": s.scorer, "specHash": s.spec_hash, "direction": s.direction,
                               "scale": scales.get(label)} for label, s in stats.items()}}


def _scale(scorer: Any) -> float | None:
    try:
        return float(scorer.scale)
    except Exception:  # a scorer object without a scale, or one its options cannot compute
        return None


def _record_specs(db: Store, scorers: list[Any]) -> None:
    """Keep each scorer's full spec text in the store (`Store.record_spec`), so the version a
    run used can be shown and run again after its files changed."""
    for scorer in scorers:
        plan = getattr(scorer, "plan", None)
        if plan is not None and getattr(plan, "sources", None):
            db.record_spec(plan.hash, plan.id, plan.sources, plan.templates)


def _spec_hash(scorer: Any) -> str | None:
    plan = getattr(scorer, "plan", None)
    return getattr(plan, "hash", None)


def _open_store(store: Store | str | os.PathLike[str] | bool | None) -> tuple[Store | None, bool]:
    """(the store, whether this run opened it and so closes it)."""
    if store is None or store is True:
        return Store(), True
    if store is False:
        return None, False
    if isinstance(store, Store):
        return store, False
    return Store(store), True


def _data_path(data: Any) -> str | None:
    if not isinstance(data, (str, os.PathLike)):
        return None
    return os.fspath(data) if "://" in os.fspath(data) else str(Path(data).resolve())


def _problem_counter(state: RunState, reporter: EvalReporter) -> Callable[[DatasetProblem], None]:
    """What an unreadable record does: counted in `state` (the first ones kept) and reported."""

    def on_problem(problem: DatasetProblem) -> None:
        state.problem_count += 1
        if len(state.problems) < MAX_PROBLEMS_KEPT:
            state.problems.append(problem.render())
        reporter.problem(problem)

    return on_problem


def _ray_options(executor: str, ray: Any, max_cost: float | None) -> Any:
    """The Ray settings for executor ``"ray"`` (`engine.ray.cluster.RayOptions`), None for
    ``"local"``; raises `ValueError` (see `arun_evals`)."""
    if executor not in ("local", "ray"):
        raise ValueError(f"executor must be 'local' or 'ray', not {executor!r}")
    if executor == "local":
        if ray is not None:
            raise ValueError("ray settings are for executor='ray'")
        return None
    if max_cost is not None:
        raise ValueError("max_cost is not available on the Ray executor yet (its budget would need every actor)")
    from ..ray.cluster import RayOptions

    if ray is None:
        return RayOptions()
    if isinstance(ray, RayOptions):
        return ray
    if isinstance(ray, Mapping):
        try:
            return RayOptions(**ray)
        except TypeError as exc:  # an unknown field
            raise ValueError(f"ray settings: {exc}") from None
    raise ValueError(f"ray: expected RayOptions or a mapping of its fields, not {type(ray).__name__}")


def _items(data: Any, field_map: dict[str, str], on_problem: Callable[[DatasetProblem], None]) -> Iterator[Item]:
    """The dataset's items, unreadable records told to `on_problem`. A file unusable as a whole
    fails here, before the run is recorded."""
    items = iter_items(data, field_map, on_problem)
    first = next(items, None)
    return itertools.chain([first], items) if first is not None else items


def _price_table(prices: Any, max_cost: float | None) -> PriceTable | None:
    """The run's price table (see `arun_evals`); raises ValueError for prices=False with a budget."""
    if prices is False:
        if max_cost is not None:
            raise ValueError("max_cost needs a price table (prices=False gives none)")
        return None
    if isinstance(prices, PriceTable):
        return prices
    return load_prices(None if prices is None or prices is True else prices)


def _summary(state: RunState, limits: Mapping[str, Threshold], prices: PriceTable | None,
             models: Mapping[str, str | None], budget: Budget | None) -> EvalSummary:
    summaries = {label: state.stats[label].summary(limits.get(label)) for label in state.labels}
    summary = EvalSummary(
        run_id=state.run_id, verdict=verdict_of(summaries, state.problem_count, state.items, state.stopped),
        scorers=summaries, items=state.items, resumed=state.resumed, dataset_problems=state.problem_count,
        problems=list(state.problems), out=state.out, store=state.store,
        seconds=time.perf_counter() - state.started, judge_calls=state.judge_calls, usage=state.usage,
        usage_by_model=state.usage_by_model, stopped=state.stopped, left=state.left,
        budget=budget.to_json_dict() if budget is not None else None)
    if prices is not None:
        summary.cost = cost_of(state.usage_by_model, prices)
        summary.cost_by_label = {label: prices.cost(models.get(label), usage) for label, usage in state.usage.items()
                                 if models.get(label)}
    if state.items == 0 and not state.problem_count:
        summary.problems.append("the dataset has no items")
    return summary


def run_evals(data: Any, scorers: Any, **kwargs: Any) -> EvalSummary:
    """Synchronous `arun_evals` (same arguments). Inside a running event loop (a notebook) the
    run happens on a private loop in a worker thread."""
    return run_sync(arun_evals(data, scorers, **kwargs), thread_name="scorespec-run-evals")


__all__ = ["run_evals", "arun_evals", "resolve_scorers", "scorer_reference", "default_concurrency", "new_run_id", "EvalSummary",
           "ScorerSummary", "ScorerStats", "Threshold", "parse_thresholds", "verdict_of", "RateLimiter",
           "EvalReporter", "RunState", "VERDICT_EXIT"]
