"""Comparing versions of a scorer: ``engine.compare(...)`` / ``scorespec compare``.

Two ways to get the results a `engine.analysis.comparison.Comparison` is built from:

- **run the versions**: `compare(["faithfulness", "faithfulness@draft=my_specs/faith.yaml"],
  data)` runs every version over the data in one batch run (`engine.run.evals.arun_evals`: one run
  id, one out file, the store, ``resume``; each version under its own label), so the versions
  see the same items at the same time and share the judge's connections;
- **read finished runs**: `compare(runs=["RUN_A", "RUN_B"])` takes the results from the store;
  a run holding several labels gives each as a version, ``RUN/LABEL`` picks one.

The first version is the baseline. Human labels (``label_field``, and ``positive`` /
``negative`` for binary ones, ``cutoff``) are read from the data, or from the runs' stored items.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..core.direction import HIGHER_IS_BETTER, direction_of
from ..core.scorer_like import ScorerLike
from ..run.datasets import iter_items
from ..run.items import item_key, label_value, parse_fields
from ..run.settings import RunSettings
from ..run.summary import sub_directions
from .calibration import CalibrationSettings
from .comparison import DEFAULT_TOP, Comparison, Outcome, Version, build_comparison, outcome_of
from .label_calibration import sub_score_line, sub_score_settings
from .label_agreement import HumanLabels, as_label_set
from .label_settings import built_settings, check_label_settings, label_values, settings_from_keywords
from .labelled import check_label_classes

__all__ = ["CompareSettings", "acompare", "compare", "run_reference"]


@dataclass(frozen=True)
class CompareSettings:
    """What a comparison reads and how it reports. runs: stored runs to compare instead of
    running versions, each ``RUN`` (every label of the run) or ``RUN/LABEL`` (a unique prefix of
    a run id is enough). label_field: the items' human label (dots reach inside; None: no
    labels); positive / negative: label values of the two classes (compared as text; without
    `positive`, labels are graded numbers); cutoff: the score at or above which a decision is
    positive (default: the baseline spec's documented ``cutoff``, else half its scale). top: how many movers to list (≥ 0). seed: the
    bootstrap's random seed (an int). score: a sub-score's name (a spec's ``scores:``) compared instead of the
    score, by its own direction and cut-off.

    A single str, number or bool for `positive` / `negative` is one label value. Raises
    `TypeError` for a label_field that is not a str, a cutoff that is not a number, a top or seed
    that is not an int; `ValueError` for an empty label_field or a top < 0."""

    runs: tuple[str, ...] | None = None
    label_field: str | None = None
    positive: tuple[Any, ...] | None = None
    negative: tuple[Any, ...] | None = None
    cutoff: float | None = None
    top: int = DEFAULT_TOP
    seed: int = 0
    score: str | None = None

    def __post_init__(self) -> None:
        runs = self.runs
        if runs is not None and not isinstance(runs, tuple):
            object.__setattr__(self, "runs", tuple([runs] if isinstance(runs, str) else runs))
        for name in ("positive", "negative"):
            object.__setattr__(self, name, label_values(name, getattr(self, name)))
        check_label_settings(self, {"cutoff": self.cutoff})
        if isinstance(self.seed, bool) or not isinstance(self.seed, int):
            raise TypeError(f"seed must be an int, not {type(self.seed).__name__}: {self.seed!r}")

    @classmethod
    def build(cls, settings: CompareSettings | None = None, **changes: Any) -> CompareSettings:
        """`settings` (default: the defaults) with `changes` laid over it. Raises `TypeError` for
        `settings` that is not a `CompareSettings` (e.g. a `CalibrationSettings` or a dict)."""
        return built_settings(cls, settings, changes)


async def acompare(
    versions: Sequence[Any] | None = None,
    data: Any = None,
    settings: CompareSettings | None = None,
    run: RunSettings | None = None,
    *,
    store: Any = None,
    progress: Any = False,
    on_item_complete: Callable[..., Any] | None = None,
    config: Mapping[str, Any] | None = None,
    **kwargs: Any,
) -> Comparison:
    """Compare versions of a scorer; the first is the baseline. Returns a `Comparison`.

    versions: `Scorer` objects or references (``SPEC`` or ``LABEL=SPEC``, as `engine.run.evals.
    resolve_scorers` takes them), each with its own label; with `data` (a path, a list of dicts
    or a DataFrame, as `run_evals` takes it) they run in one batch run with the settings `run`
    (`engine.run.settings.RunSettings`: concurrency, out, resume, run_id, rate_limit, fields,
    samples, prices, max_cost, …) and `progress`, `on_item_complete`, `config` as
    `engine.run.evals.arun_evals` takes them. settings: what to compare and how
    (`CompareSettings`: with its `runs`, stored runs are read from `store` — a `Store`, a path,
    or None for the default store — and `data`, when given, only supplies human labels).
    Keyword arguments named as a field of either settings object are laid over it (e.g.
    ``runs=["RUN_A", "RUN_B"]``, ``label_field="label"``, ``concurrency=8``).

    Raises `ValueError` for fewer than two versions, versions that disagree on direction,
    missing data, a run or label that does not exist; `engine.analysis.calibration.LabelError` (a
    `ValueError`) for a graded label that is not a number; `TypeError` for an unknown keyword;
    and what `arun_evals` raises.
    """
    settings = settings_from_keywords(CompareSettings, settings, kwargs)
    run = RunSettings.build(run, **kwargs)
    if settings.negative is not None and settings.positive is None:
        raise ValueError("negative label values need positive ones too")
    fields = run.fields
    field_map = parse_fields(fields) if fields is not None and not isinstance(fields, Mapping) else dict(fields or {})
    if settings.runs:
        if versions:
            raise ValueError("give versions to run or runs to read, not both")
        return _from_runs(list(settings.runs), data, field_map, store, settings)
    if data is None:
        raise ValueError("give data to run the versions on (or runs=[...] to compare finished runs)")
    hooks = {"store": store, "progress": progress, "config": config}
    return await _run_versions(list(versions or []), data, field_map, settings,
                               dataclasses.replace(run, fields=field_map), hooks, on_item_complete)


def compare(versions: Sequence[Any] | None = None, data: Any = None, settings: CompareSettings | None = None,
            run: RunSettings | None = None, **kwargs: Any) -> Comparison:
    """Synchronous `acompare` (same arguments; works inside a running event loop too)."""
    from ..core.sync import run_sync

    return run_sync(acompare(versions, data, settings, run, **kwargs), thread_name="scorespec-compare")


# --- running the versions ---------------------------------------------------------------------


async def _run_versions(versions: list[Any], data: Any, field_map: dict[str, str], settings: CompareSettings,
                        run: RunSettings, hooks: dict[str, Any],
                        user_callback: Callable[..., Any] | None) -> Comparison:
    from ..run.evals import arun_evals, resolve_scorers
    from ..run.resume import stored_results

    scorers = resolve_scorers(versions)
    infos = [Version(s.label, s.id, s.plan.hash, None, direction_of(s), _scale(s), _cutoff(s)) for s in scorers]
    if settings.score is not None:
        picked = [sub_score_settings(CalibrationSettings(score=settings.score), s) for s in scorers]
        infos = [dataclasses.replace(info, direction=sub_directions(s)[settings.score], cutoff=p.cutoff)
                 for info, s, p in zip(infos, scorers, picked)]
    if len(infos) < 2:
        raise ValueError("compare needs at least two versions: the baseline and one to compare with it")
    _check_directions(infos)
    if not isinstance(data, (str, os.PathLike, list, tuple)) and not _is_dataframe(data):
        data = list(data)  # read twice: the run, then the item order and the human labels
    order, human = _order_and_labels(iter_items(data, field_map, lambda problem: None), settings.label_field)
    _check_classes(human, settings)  # before any judge call
    outcomes: dict[str, dict[str, Outcome]] = {info.label: {} for info in infos}

    async def collect(item: dict[str, Any], done: Mapping[str, Any]) -> None:
        for label, result in done.items():
            line = sub_score_line({"id": item["id"], **result.to_json_dict()}, settings.score)
            outcomes[label][item_key(item["id"])] = outcome_of(line)
        if user_callback is not None:
            import inspect

            outcome = user_callback(item, done)
            if inspect.isawaitable(outcome):
                await outcome

    summary = await arun_evals(data, scorers, run, on_item_complete=collect, **hooks)
    if summary.resumed:  # the results of the run's earlier attempts
        for info in infos:
            for key, line in stored_results(summary.run_id, out=summary.out, store=summary.store,
                                            label=info.label).items():
                outcomes[info.label].setdefault(key, outcome_of(sub_score_line(line, settings.score)))
    for info in infos:
        info.run_id = summary.run_id
    comparison = build_comparison(infos, _ordered(outcomes, order), labels=_human_labels(human, settings),
                                  top=settings.top, seed=settings.seed)
    comparison.run_ids = [summary.run_id]
    comparison.dataset_problems = summary.dataset_problems
    comparison.problems = list(summary.problems)
    comparison.seconds = summary.seconds
    comparison.judge_calls = summary.judge_calls
    comparison.stopped = summary.stopped
    for label, version in comparison.versions.items():  # what each version cost in this run
        usage = summary.usage.get(label)
        if usage is not None:
            version.tokens_in, version.tokens_out = usage.tokens_in, usage.tokens_out
            version.judge_calls, version.cache_hits = usage.calls, usage.cache_hits
        version.cost_usd = summary.cost_by_label.get(label)
    return comparison


def _scale(scorer: ScorerLike) -> float | None:
    try:
        return float(scorer.scale)
    except Exception:  # a scorer object without a scale
        return None


def _is_dataframe(data: Any) -> bool:
    return (type(data).__module__ or "").startswith("pandas") and type(data).__name__ == "DataFrame"


def _cutoff(scorer: ScorerLike) -> float | None:
    """The scorer's documented cut-off on its scale (`engine.interpret.scorer.Scorer.cutoff`), or None."""
    try:
        return scorer.cutoff
    except Exception:  # a scale that only an item can give
        return None


def _stored_direction(about: Mapping[str, Any], score: str | None) -> str:
    """The direction a stored run recorded for a label (or, with `score`, for that sub-score)."""
    main = about.get("direction") or HIGHER_IS_BETTER
    return (about.get("scores") or {}).get(score, main) if score is not None else main


def _check_directions(infos: Sequence[Version]) -> None:
    if len({info.direction for info in infos}) > 1:
        raise ValueError("the versions disagree on direction (" + ", ".join(f"{i.label}: {i.direction}" for i in
                         infos) + "): compare versions whose scores mean the same way")


def _order_and_labels(items: Iterable[Mapping[str, Any]], label_field: str | None) -> tuple[list[str], dict[str, Any]]:
    order, human = [], {}
    for item in items:
        key = item_key(item["id"])
        order.append(key)
        if label_field is not None:
            human[key] = label_value(item, label_field)
    return order, human


def _ordered(outcomes: Mapping[str, Mapping[str, Outcome]], order: Sequence[str]) -> dict[str, dict[str, Outcome]]:
    """Each version's outcomes in the data's order (items the order does not know last)."""
    rank = {key: i for i, key in enumerate(order)}
    return {label: dict(sorted(found.items(), key=lambda kv: rank.get(kv[0], len(rank))))
            for label, found in outcomes.items()}


def _check_classes(human: Mapping[str, Any], settings: CompareSettings) -> None:
    """`LabelError` for a positive (or negative) label value no item has (`check_label_classes`)."""
    if settings.label_field is not None:
        check_label_classes(human.values(), settings.positive, settings.negative, settings.label_field)


def _human_labels(human: Mapping[str, Any], settings: CompareSettings) -> HumanLabels | None:
    if settings.label_field is None:
        return None
    _check_classes(human, settings)
    return HumanLabels(human, as_label_set(settings.positive), as_label_set(settings.negative), settings.cutoff)


# --- reading finished runs --------------------------------------------------------------------


def run_reference(text: str) -> tuple[str, str | None]:
    """``RUN`` → (RUN, None); ``RUN/LABEL`` → (RUN, LABEL), split at the first ``/``."""
    run, sep, label = text.partition("/")
    return (run, label) if sep and label else (run, None)


def _from_runs(refs: list[str], data: Any, field_map: dict[str, str], store: Any,
               settings: CompareSettings) -> Comparison:
    from ..run.store import Store

    label_field = settings.label_field

    db = store if isinstance(store, Store) else Store(None if store in (None, True) else store)
    try:
        picked: list[tuple[dict[str, Any], str]] = []
        for ref in refs:
            run_id, label = run_reference(ref)
            run = _stored_run(db, run_id)
            labels = _run_labels(run)
            if label is not None and label not in labels:
                raise ValueError(f"run {run['run_id']} has no scorer labelled {label!r} (its labels: "
                                 f"{', '.join(labels) or 'none'})")
            picked.extend((run, name) for name in ([label] if label is not None else labels))
        seen = [(run["run_id"], name) for run, name in picked]
        twice = next((pair for pair in seen if seen.count(pair) > 1), None)
        if twice is not None:
            raise ValueError(f"{twice[1]} of run {twice[0]} is given twice: compare different runs or labels")
        names = [name for _, name in picked]
        infos, outcomes = [], {}
        order: list[str] = []
        for run, label in picked:
            name = label if names.count(label) == 1 else f"{label}@{run['run_id']}"
            about = ((run.get("config") or {}).get("labels") or {}).get(label, {})
            found, scorer, lines = {}, about.get("scorer"), []
            for line in db.results(run["run_id"]):
                if line.get("label") == label:
                    found[item_key(line["id"])] = outcome_of(sub_score_line(line, settings.score))
                    scorer = scorer or line.get("scorer")
                    lines.append(line)
            infos.append(_with_stored_usage(Version(name, scorer or label, about.get("specHash"), run["run_id"],
                                                    _stored_direction(about, settings.score), about.get("scale")),
                                            lines))
            outcomes[name] = found
        _check_directions(infos)
        notes = [f"run {run['run_id']} is {run['status']}: it holds the results made so far"
                 for run in {run["run_id"]: run for run, _ in picked}.values() if run["status"] != "finished"]
        human: dict[str, Any] = {}
        if data is not None:
            order, human = _order_and_labels(iter_items(data, field_map, lambda problem: None), label_field)
        else:
            for run_id in dict.fromkeys(run["run_id"] for run, _ in picked):
                items = list(db.items(run_id))
                order.extend(key for key, _ in items if key not in human)
                for key, item in items:
                    if label_field is not None:
                        human.setdefault(key, label_value(item, label_field))
        comparison = build_comparison(infos, _ordered(outcomes, order), labels=_human_labels(human, settings),
                                      top=settings.top, seed=settings.seed)
        comparison.run_ids = list(dict.fromkeys(run["run_id"] for run, _ in picked))
        comparison.notes.extend(notes)
        comparison.judge_calls = sum(v.judge_calls for v in comparison.versions.values())
        return comparison
    finally:
        if db is not store:
            db.close()


def _with_stored_usage(version: Version, lines: Sequence[Mapping[str, Any]]) -> Version:
    """`version` with the judge usage its stored result lines kept (each line's ``usage``:
    calls, tokens, cache hits) added up, and their cost (``costUsd``) when every line that made a
    request has one (else None: a model without a price)."""
    costs: list[float | None] = []
    for line in lines:
        usage = line.get("usage") or {}
        version.judge_calls += int(usage.get("calls") or 0)
        version.tokens_in += int(usage.get("tokensIn") or 0)
        version.tokens_out += int(usage.get("tokensOut") or 0)
        version.cache_hits += int(usage.get("cacheHits") or 0)
        if usage.get("calls"):
            costs.append(line.get("costUsd"))
    if costs and all(cost is not None for cost in costs):
        version.cost_usd = sum(costs)  # type: ignore[arg-type]
    return version


def _stored_run(db: Any, run_id: str) -> dict[str, Any]:
    try:
        run = db.get_run(run_id)
    except LookupError as exc:  # an ambiguous prefix
        raise ValueError(str(exc)) from None
    if run is None:
        raise ValueError(f"no run {run_id!r} in the store {db}")
    return run


def _run_labels(run: Mapping[str, Any]) -> list[str]:
    """A run's labels in their order: the scorers it recorded (labels since labels exist)."""
    labels = list(run.get("scorers") or [])
    for label in ((run.get("config") or {}).get("labels") or {}):
        if label not in labels:
            labels.append(label)
    return labels
