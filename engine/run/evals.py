"""Batch evaluation: many items × several scorers, concurrent, failure-isolated, resumable.

``await arun_evals(data, scorers, ...)`` is the seed's ``runEvals`` (data, scorers, target,
onItemComplete → a mean score per scorer), extended; its synchronous form, and the one public
entry point, is `engine.run_evals` (`engine.api`, which also resolves ``executor="ray"``). A
scorer in a run is known by its label — its id unless given (`Scorer.label`) — so one run can
hold two versions of one scorer; results, the out file, the store, summaries and thresholds use
the label. Its parts:

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
- `engine.run.settings`: the settings (`RunSettings`), recorded whole with the run;
- `engine.run.executor`: where items are scored (`Executor`): this process by default; with
  ``executor="ray"`` (resolved by `engine.api`, which sits above this package) the items are read
  by Ray Data and scored by a pool of Ray actors (`engine.ray.runner.RayExecutor`); everything
  else here is the same.
"""

from __future__ import annotations

import os
import secrets
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from ..core.direction import direction_of
from ..core.result import ScoreResult
from ..traces.source import TraceSource
from .budget import Budget, check_max_cost, check_priced, spent_before
from .datasets import check_mapping, data_len
from .attempt import Attempt, Destinations, ItemSource, RunContext
from .executor import executor_of
from .items import DatasetProblem, Item, parse_fields
from .prices import PriceTable, cost_of, load_prices
from .reporting import EvalReporter, RunState, StderrReporter
from .resume import check_same_labels, find_prior, resumed_settings, tidy_out_file
from .run_lock import RunLock, lock_run
from .runner import declared_names
from .settings import RunSettings
from .store import Store
from .summary import EvalSummary, ScorerStats, Threshold, parse_thresholds, split_name, sub_directions, verdict_of

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
    Each is known in the run by its label (`ScorerLike.label`: its id unless given), so one spec may run
    twice under two labels. Raises `ValueError` for no scorer or a label given twice, and what
    `load_scorer` raises."""
    from ..bind.load import load_scorer
    from ..core.scorer_like import ForeignScorer
    from ..interpret.scorer import Scorer

    if isinstance(scorers, (str, Scorer)):
        scorers = [scorers]
    resolved = []
    for scorer in scorers:
        if isinstance(scorer, str):
            label, spec = scorer_reference(scorer)
            scorer = load_scorer(spec, label=label)
        resolved.append(scorer if isinstance(scorer, (Scorer, ForeignScorer)) else ForeignScorer(scorer))
    if not resolved:
        raise ValueError("give at least one scorer")
    check_labels(scorer.label for scorer in resolved)
    return resolved


def check_labels(labels: Iterable[str]) -> None:
    """Raises `ValueError` naming the first label given twice (each label may appear once per run)."""
    seen: set[str] = set()
    for label in labels:
        if label in seen:
            raise ValueError(f"scorer label {label!r} is given twice: give each version its own label, e.g. "
                             f"{label}@draft=my_specs/{label}.yaml (or load_scorer(..., label=...))")
        seen.add(label)


def default_concurrency(scorers: list[Any]) -> int:
    """8, or when every scorer that uses a judge runs on an embedded model, the most slots among
    those models (`engine.embedded.settings`: as many items in flight as sequences the model decodes
    at once; more would only interleave items, so that none finishes until the end)."""
    from ..embedded.settings import local_settings
    from ..judge.model import is_local

    models = [str(s.model or "") for s in scorers if s.plan.uses_judge]
    if models and all(is_local(m) for m in models):
        try:
            return max(local_settings(m).slots for m in models)
        except ValueError:  # a bad option: the scorer's judge reports it on each item
            return 1
    return DEFAULT_CONCURRENCY


async def arun_evals(
    data: Any,
    scorers: Any,
    settings: RunSettings | None = None,
    *,
    target: Callable[[Any], Any] | None = None,
    on_item_complete: Callable[[Item, dict[str, ScoreResult]], Any] | None = None,
    progress: bool | EvalReporter = False,
    store: Store | str | os.PathLike[str] | bool | None = None,
    config: Mapping[str, Any] | None = None,
    **kwargs: Any,
) -> EvalSummary:
    """Score every item of `data` with every scorer; see the module docstring.

    data: a JSONL / CSV / JSON-array path, a list (or iterable) of dicts, or a pandas DataFrame
    (`engine.run.datasets`). scorers: `Scorer` objects or spec ids (see `resolve_scorers`; results,
    statistics and thresholds are keyed by each scorer's label, its id unless given). settings: a
    `RunSettings` (concurrency, thresholds, out, resume, run_id, rate_limit, fields, samples,
    prices, max_cost, limit, executor, ray, cache, refresh: see `engine.run.settings`); keyword
    arguments named as its fields are laid over it (`RunSettings.build`). target: a sync or async
    callable of an item's ``input`` giving its ``output``; against: a second one (output_b; target: output_a).
    on_item_complete(item, {label: ScoreResult}): called (awaited if async) after each item's
    scorers finished, with the results made in this attempt; an exception from it stops the run
    (every completed result is already saved). progress: an `EvalReporter`, or True for plain
    progress lines on stderr (`engine.run.reporting.StderrReporter`). store: a `Store`, a path, None for the default store
    (``$SCORESPEC_STORE`` or ``.scorespec/store.sqlite``), or False for none. config: extra data
    recorded with the run in the store (the CLI records how to load its scorers again); the
    settings are recorded whole beside it (``config["settings"]``).

    On resume, the settings the run recorded fill what `settings` leave unset (thresholds, item
    cut-offs, fields, samples, prices: `engine.run.settings.RUN_RESUMED_FIELDS`; the call's win;
    `limit`, `concurrency`, `max_cost` are per attempt; what earlier attempts spent counts against
    `max_cost`). On Ray (``executor="ray"`` through `engine.api`) `concurrency` is per actor,
    `rate_limit` holds for the cluster, every scorer comes from a spec, its judge from a model string.

    Returns an `EvalSummary`. Raises `TypeError` for a keyword that is no setting; `ValueError` for
    bad arguments (a label given twice, a threshold for an unknown label, concurrency < 1, resuming
    a run that does not exist or under other labels than it scored, samples outside 1..50, a
    max_cost that is not a positive number, an unknown executor, ray settings without the Ray
    executor, max_cost on Ray, a scorer a Ray actor cannot build), `engine.ray.cluster.RayMissing`
    (an `ImportError`) for the Ray executor without Ray installed, ``ConnectionError`` for a Ray
    cluster that cannot be joined, `engine.run.budget.UnpricedModelError` (a `ValueError`) when
    `max_cost` is given and a judge model has no price, `engine.run.prices.PriceTableError` (a
    `ValueError`) for an unusable price table, `FileExistsError` when `out` already holds results
    and `resume` is False (`engine.run.run_lock.RunInUse`, one, when another process is scoring the
    same run now), `engine.run.items.DatasetError` for an unreadable file or an unfound mapping."""
    against = kwargs.pop("against", None)  # a keyword beside the settings' (the entry points' size)
    settings = RunSettings.build(settings, **kwargs)
    _check_call(settings, target, against)
    reporter = progress if isinstance(progress, EvalReporter) else StderrReporter(progress=bool(progress))
    db, own_store, out_path, lock = _open_run(store, settings)
    try:
        prior = find_prior(out_path, settings.run_id, db, resume=settings.resume, note=reporter.note)
        settings, config, stored_labels = resumed_settings(db, prior.run_id if prior.resuming else None,
                                                           settings, config)
        executor = executor_of(settings)
        scorer_list, price_table, concurrency = _prepared_scorers(scorers, settings)
        labels = [s.label for s in scorer_list]
        check_same_labels(prior.run_id, stored_labels, labels)
        limits, cutoffs, field_map = _gates_and_fields(settings, scorer_list, data, reporter.note)
        stats = {s.label: _stats_of(s) for s in scorer_list}
        total, limit = data_len(data), settings.limit
        state = RunState(prior.run_id or new_run_id(), labels, stats,
                         min(total, limit) if total is not None and limit is not None else total,
                         str(out_path) if out_path else None, str(db) if db else None, resuming=prior.resuming)
        context = RunContext(scorers=scorer_list, state=state, prior=prior, concurrency=concurrency, target=target,
                             against=against, rate_limit=settings.rate_limit, prices=price_table,
                             budget=_budget(settings.max_cost, price_table, prior))
        to = Destinations(out=out_path, db=db, reporter=reporter, on_item_complete=on_item_complete)
        source = ItemSource(data=data, fields=field_map, limit=limit, on_problem=_problem_counter(state, reporter))
        attempt = executor.prepare(Attempt(context=context, to=to, source=source))
        if db is not None:
            db.begin_run(state.run_id, data=_data_path(data), out=state.out, scorers=labels,
                         config=_run_config(config, settings, concurrency, limits, stats, scorer_list))
            _record_specs(db, scorer_list)
        return await _attempt(attempt, context, to, (limits, cutoffs))
    finally:
        lock.release()
        if own_store and db is not None:
            db.close()


def _check_call(settings: RunSettings, target: Any, against: Any) -> None:
    """Raise `ValueError` for a limit below 1, or `against` without a target or off the local executor."""
    if against is not None and (target is None or settings.executor not in (None, "local")):
        raise ValueError("against needs a target, and runs on the local executor only")
    if settings.limit is not None and settings.limit < 1:
        raise ValueError(f"limit must be ≥ 1, not {settings.limit}")


def _stats_of(scorer: Any) -> ScorerStats:
    """A scorer's statistics, empty: by its label, with its direction and its sub-scores'."""
    return ScorerStats(scorer.label, scorer.id, scorer.plan.hash, direction_of(scorer), sub_directions(scorer))


def _budget(max_cost: float | None, price_table: PriceTable | None, prior: Any) -> Budget | None:
    """The run's budget in US dollars, counting what its earlier attempts spent (None: no budget)."""
    if max_cost is None or price_table is None:
        return None
    usd, items_before = spent_before(prior.spent, price_table)
    return Budget(max_cost, spent_before=usd, items_before=items_before)


def _gates_and_fields(settings: RunSettings, scorer_list: list[Any], data: Any, note: Callable[[str], None]) -> tuple[
        dict[str, Threshold], dict[str, float], dict[str, str]]:
    """The run's thresholds and item cut-offs by label, and its field map (run field → item field),
    checked against `data` before any judge call (`check_mapping`: a mapping found in no record
    raises `DatasetError`, one missing in some goes to `note`)."""
    fields = settings.fields
    field_map = parse_fields(fields, declared_names(scorer_list)) if fields is not None and not isinstance(
        fields, Mapping) else dict(fields or {})
    check_mapping(data, field_map, note)
    return (_thresholds(settings.thresholds, scorer_list), _item_cutoffs(settings.item_cutoffs, scorer_list),
            field_map)


def _prepared_scorers(scorers: Any, settings: RunSettings) -> tuple[list[Any], PriceTable | None, int]:
    """The run's scorers (resolved, sampled as `settings.samples` says, in `settings.language`, under
    the run's cache),
    its price table (checked against the budget) and its concurrency."""
    scorer_list = resolve_scorers(scorers)
    if settings.samples is not None:
        scorer_list = [s.with_samples(settings.samples) for s in scorer_list]
    if settings.language is not None:
        scorer_list = [s.with_language(settings.language) for s in scorer_list]
    price_table = _price_table(settings.prices, settings.max_cost)
    if settings.max_cost is not None:
        check_max_cost(settings.max_cost)
        assert price_table is not None
        check_priced([s.model for s in scorer_list if s.plan.uses_judge], price_table)
    if settings.cache is not None:
        from ..bind.stack import for_run
        from ..judge.cache.layer import open_cache
        from ..judge.stack import JudgeParts

        # one cache object for every scorer, in each scorer's stack before it is composed
        parts = JudgeParts(cache=open_cache(settings.cache) or False, refresh=settings.refresh)
        scorer_list = [for_run(s, parts) for s in scorer_list]
    concurrency = default_concurrency(scorer_list) if settings.concurrency is None else settings.concurrency
    if concurrency < 1:
        raise ValueError(f"concurrency must be ≥ 1, not {concurrency}")
    return scorer_list, price_table, concurrency


async def _attempt(attempt: Callable[[], Awaitable[bool]], context: RunContext, to: Destinations,
                   gates: tuple[Mapping[str, Threshold], Mapping[str, float]]) -> EvalSummary:
    """Run the prepared attempt, then summarise it and close the store's run (finished, stopped
    by the budget, or interrupted when it raised)."""
    state, db, reporter = context.state, to.db, to.reporter
    reporter.start(state)
    summary: EvalSummary | None = None
    try:
        rewrote = await attempt()
        tidy_out_file(to.out, context.prior, rewrote)
        models = {s.label: s.model for s in context.scorers}
        summary = _summary(state, gates, context.prices, models, context.budget)
    finally:
        if db is not None:
            status = "interrupted" if summary is None else "stopped" if summary.stopped else "finished"
            db.finish_run(state.run_id, status=status,
                          summary=None if summary is None else summary.to_json_dict(),
                          verdict=None if summary is None else summary.verdict)
        reporter.finish(state, summary)
    assert summary is not None
    return summary


def _thresholds(thresholds: Mapping[str, Any] | Iterable[str] | None, scorers: list[Any]) -> dict[str, Threshold]:
    """Thresholds by label (``LABEL.NAME`` for a sub-score), a limit set by its scorer's (or
    sub-score's) direction (`Threshold.for_direction`)."""
    by_label = {s.label: s for s in scorers}
    out = {}
    for name, t in parse_thresholds(thresholds).items():
        direction = _gated(name, by_label, by_label, "threshold")
        out[name] = t.for_direction(direction)
    return out


def _gated(name: str, by_name: Mapping[str, Any], by_label: Mapping[str, Any], what: str) -> Any:
    """The direction of the scorer (or sub-score: ``SCORER.NAME``) `name` names among `by_name`;
    raises `ValueError` naming what is known."""
    label, sub = split_name(name, by_name)
    scorer = by_name.get(label)
    subs = sub_directions(scorer) if scorer is not None else {}
    if scorer is None or (sub is not None and sub not in subs):
        known = [n for s in by_label.values() for n in (s.label, *(f"{s.label}.{x}" for x in sub_directions(s)))]
        raise ValueError(f"{what} for {name!r}, which is not among the scorers "
                         f"({', '.join(known)})")
    return direction_of(scorer) if sub is None else subs[sub]


def _item_cutoffs(cutoffs: Mapping[str, float] | None, scorers: list[Any]) -> dict[str, float]:
    """Item cut-offs by label (``LABEL.NAME`` for a sub-score), each given by a scorer's label or
    id (the label winning). Raises `ValueError` for a name that is neither."""
    if not cutoffs:
        return {}
    by_label = {s.label: s for s in scorers}
    by_name = {**{s.id: s for s in scorers}, **by_label}
    out: dict[str, float] = {}
    # the names given by id first, so a value given by the label wins
    for name, value in sorted(cutoffs.items(), key=lambda pair: split_name(pair[0], by_name)[0] in by_label):
        _gated(name, by_name, by_label, "--item-cutoff")
        label, sub = split_name(name, by_name)
        out[by_name[label].label + (f".{sub}" if sub else "")] = float(value)
    return out


def _run_config(config: Mapping[str, Any] | None, settings: RunSettings, concurrency: int,
                limits: Mapping[str, Threshold], stats: Mapping[str, ScorerStats],
                scorers: list[Any]) -> dict[str, Any]:
    """What the store records with a run: the caller's `config`, the settings whole
    (`RunSettings.to_json_dict`), the concurrency used, the thresholds, and per label the
    scorer's id, spec hash (its text: `Store.spec`), direction, scale (None when unknown) and its
    sub-scores' directions by name (``scores``, when it has sub-scores)."""
    scales = {s.label: _scale(s) for s in scorers}
    return {**(config or {}), "settings": settings.to_json_dict(), "concurrency": concurrency,
            "thresholds": {label: t.to_json_dict() for label, t in limits.items()},
            "labels": {label: {"scorer": s.scorer, "specHash": s.spec_hash, "direction": s.direction,
                               "scale": scales.get(label),
                               **({"scores": {n: sub.direction for n, sub in s.subs.items()}} if s.subs else {})}
                       for label, s in stats.items()}}


def _scale(scorer: Any) -> float | None:
    try:
        return float(scorer.scale)
    except Exception:  # a scorer object without a scale, or one its options cannot compute
        return None


def _record_specs(db: Store, scorers: list[Any]) -> None:
    """Keep each scorer's full spec text in the store (`Store.record_spec`), so the version a
    run used can be shown and run again after its files changed."""
    for scorer in scorers:
        plan = scorer.plan
        if plan.sources:
            db.record_spec(plan.hash, plan.id, plan.sources, plan.templates)


def _open_run(store: Store | str | os.PathLike[str] | bool | None,
              settings: RunSettings) -> tuple[Store | None, bool, Path | None, RunLock]:
    """The run's store (and whether this run opened it), its out file (absolute) and its lock
    (`engine.run.run_lock`: one process at a time per run; `RunInUse` when another holds it)."""
    db, own_store = _open_store(store)
    out_path = Path(settings.out).resolve() if settings.out is not None else None
    try:
        return db, own_store, out_path, lock_run(out_path, settings.run_id, db)
    except BaseException:
        if own_store and db is not None:
            db.close()
        raise


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
    if isinstance(data, TraceSource):
        data = data.location
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


def _price_table(prices: Any, max_cost: float | None) -> PriceTable | None:
    """The run's price table (see `arun_evals`); raises ValueError for prices=False with a budget."""
    if prices is False:
        if max_cost is not None:
            raise ValueError("max_cost needs a price table (prices=False gives none)")
        return None
    if isinstance(prices, PriceTable):
        return prices
    return load_prices(None if prices is None or prices is True else prices)


def _subs_of(gates: Mapping[str, Any], label: str) -> dict[str, Any]:
    """The gates on `label`'s sub-scores (keyed ``LABEL.NAME``), by sub-score name."""
    return {key[len(label) + 1:]: value for key, value in gates.items() if key.startswith(f"{label}.")}


def _summary(state: RunState, gates: tuple[Mapping[str, Threshold], Mapping[str, float]],
             prices: PriceTable | None, models: Mapping[str, str | None], budget: Budget | None) -> EvalSummary:
    """The run's summary and its verdict (`verdict_of`), `gates` being the thresholds and the
    item cut-offs by label."""
    limits, cutoffs = gates
    summaries = {label: state.stats[label].summary(limits.get(label), _subs_of(limits, label))
                 for label in state.labels}
    for label, jury in state.jury.items():
        summaries[label].jury = jury.summary()
    misses = sum(state.stats[label].cutoff_misses(cutoffs.get(label), _subs_of(cutoffs, label))
                 for label in state.labels)
    summary = EvalSummary(
        run_id=state.run_id, verdict=verdict_of(summaries, state.problem_count, state.items,
                                                budget.stopped if budget is not None else None, misses),
        scorers=summaries, items=state.items, resumed=state.resumed, dataset_problems=state.problem_count,
        problems=list(state.problems), out=state.out, store=state.store,
        seconds=time.perf_counter() - state.started, judge_calls=state.judge_calls, usage=state.usage,
        usage_by_model=state.usage_by_model, stopped=state.stopped, left=state.left,
        budget=budget.to_json_dict() if budget is not None else None)
    if prices is not None:
        summary.cost = cost_of(state.usage_by_model, prices)
        summary.cost_by_label = {label: _sum_or_none(prices.cost(model, usage) for model, usage in
                                                     state.usage_by_label_model.get(label, {}).items())
                                 for label in state.usage if models.get(label)}
    if state.items == 0 and not state.problem_count:
        summary.problems.append("the dataset has no items")
    return summary


def _sum_or_none(costs: Any) -> float | None:
    """The sum of `costs`, None when one is unknown (0 for none)."""
    known = list(costs)
    return None if any(c is None for c in known) else sum(known)


__all__ = ["arun_evals", "resolve_scorers", "check_labels", "scorer_reference", "default_concurrency", "new_run_id"]
