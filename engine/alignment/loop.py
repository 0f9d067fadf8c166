"""``align``: propose candidate children from train, choose on dev, compare once on test, write.

1. The labelled items (as `calibrate` reads them) are split (`split.stratified_split`), or the data
   gives train and dev and `test_data` the test split.
2. The parent runs on train. Its disagreements feed the ``instructions`` strategy (the optimiser,
   `optimizer`) and the ``examples`` strategy (`candidates.worked_examples`); ``scoring`` flips a
   spec's ``scoring`` option. Each candidate is written to the work folder
   (``OUT/.scorespec-align/NAME/``) and compiled; one that fails is dropped with the reason.
3. The parent and the candidates run on dev (one batch run; the judge-call cache makes a re-run
   free). ``cutoff`` is the parent's best balanced-accuracy cut-off fitted on train + dev.
4. The best candidate on dev (`selection.best_index`) among those that beat the parent there (a
   higher primary figure, or the same and a higher ROC AUC: the parent wins ties; none: no child,
   `NOTHING_BETTER`) and the parent run on test, once; the two are compared
   (`selection.compare_on_test`).
5. The child is adopted only when it beat the parent on dev by more than noise and is not worse on
   test (`selection.adoption`); then it is written (`files.write_child`) with the JSON record beside
   it. Otherwise it is written as a rejected candidate under ``OUT/rejected/`` (never where a
   catalogue finds it), `AlignResult.rejected` says why, and the CLI exits 1.

The test split's items are read only in step 4: no candidate is built from them. A ``max_cost``
budget stop ends the run cleanly (`AlignResult.stopped`); ``resume`` reuses the work folder's
split and proposals, and the cache answers what was asked before. The budget counts what every
attempt spent (the work folder keeps it), so a resume needs a larger ``max_cost`` to go on.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from ..analysis.label_settings import settings_from_keywords
from ..analysis.labelled import labelled_items, matches
from ..run.items import item_key, parse_fields
from ..run.settings import RunSettings
from .files import WorkFolder, data_sha256
from .propose import Proposer
from .result import AlignResult
from .runs import Budget, figures_of, score_items, scored_pairs
from .selection import BINARY, adoption, best_index, compare_on_test
from .settings import AlignSettings
from .split import MINIMUM, check_parts, stratified_split

__all__ = ["NOTHING_BETTER", "aalign", "align"]

NOTHING_BETTER = "no candidate did better than the scorer on the dev split; nothing written"
"""The note when every candidate ties with (or trails) the parent on dev: the parent wins ties."""


async def aalign(scorer: Any, data: Any, settings: AlignSettings | None = None, run: RunSettings | None = None, *,
                 resume: bool = False, progress: Any = False, on_phase: Callable[[str], None] | None = None,
                 optimizer: Any = None, **kwargs: Any) -> AlignResult:
    """Align `scorer` (a `Scorer` or spec reference) with the human labels of `data` (a path, a
    list of dicts or a DataFrame); see the module docstring. settings: `AlignSettings`; run:
    `engine.run.settings.RunSettings` (concurrency, max_cost, prices, fields, limit, …); keyword
    arguments naming a field of either are laid over it. resume: continue the work folder's
    alignment. progress: as `arun_evals` takes it, for each batch run; on_phase: called with a line
    per phase. optimizer: a judge (or `Scorer` of the optimiser spec) that proposes instructions
    (default: ``settings.optimizer_model``, else the parent's judge).

    Returns an `AlignResult`. Raises `engine.analysis.labelled.LabelError` for no usable label,
    a label value no item has, or labels all of one class; `ValueError` for a child id that is
    the parent's or a shipped scorer's, a stage the parent has no prompt stage of, a split too
    small to choose and test on (`split.check_parts`), a work folder from other data on resume;
    `FileExistsError` rather than overwrite a child spec, `TypeError` for an unknown keyword, and
    what `arun_evals` raises."""
    from ..run.evals import resolve_scorers

    settings = settings_from_keywords(AlignSettings, settings, kwargs)
    run = RunSettings.build(run, **kwargs)
    (parent,) = resolve_scorers([scorer])
    say = on_phase or (lambda line: None)
    name = _child_id(parent, settings.name)
    items, truth, split, test_keys = _split(parent, data, settings, run)
    work = WorkFolder(settings.out_dir, name, parent, data_sha256(data), settings, resume)
    result = AlignResult(parent.id, None, settings.kind, settings.seed,
                         {"train": len(split.train), "dev": len(split.dev), "test": len(test_keys)},
                         work.sha256)
    budget = Budget(run.max_cost, work.spent, keep=work.keep_spent)  # counted across resumes, as eval's
    proposer = Proposer(parent, settings, work, run, budget, progress, optimizer, result.notes)
    say(f"split: {result.split['train']} train, {result.split['dev']} dev, {result.split['test']} test "
        f"(seed {settings.seed})")
    say(f"train: {parent.label} on {len(split.train)} items")
    train = await score_items([items[k] for k in split.train], [parent], run, budget, progress)
    if _stopped(result, train, budget):
        return result
    candidates = await proposer.candidates(items, split.train, truth, train.results[parent.label], say)
    result.candidates = [c for c, _ in candidates]
    if proposer.stopped:
        return _stop(result, proposer.stopped, budget)
    runnable = [(c, s) for c, s in candidates if s is not None]
    say(f"dev: {parent.label} and {len(runnable)} candidate(s) on {len(split.dev)} items")
    dev = await score_items([items[k] for k in split.dev], [parent] + [s for _, s in runnable], run, budget, progress)
    if _stopped(result, dev, budget):
        return result
    cutoff = proposer.cutoff(parent)
    result.parent_dev = figures_of(dev.results[parent.label], split.dev, truth, settings.kind, cutoff)
    proposer.judge_on_dev(result.candidates, dev, split, truth, train.results[parent.label], parent)
    run_on_dev = [c for c in result.candidates if c.dev is not None]
    bar = result.parent_dev.rank(settings.kind)
    ranked = [c for c in run_on_dev if c.dev.rank(settings.kind) > bar]  # type: ignore[union-attr]
    best = best_index([c.dev for c in ranked], settings.kind)  # type: ignore[misc]
    if best is None:
        result.notes.append(NOTHING_BETTER if run_on_dev else "no candidate could be run: nothing to choose, no "
                            "child written")
        return _finish(result, budget)
    chosen = ranked[best]
    result.chosen, result.child = chosen.name, name
    say(f"chosen on dev: {chosen.name} ({chosen.strategy}); test: {parent.label} and it on {len(test_keys)} items")
    if not await _test(result, chosen, proposer, (items, truth, test_keys), cutoff):
        return result
    result.prompt_diff = proposer.prompt_diff(chosen)
    result.rejected = adoption(result.parent_dev, chosen.dev, result.test, settings.kind)
    if result.rejected is not None:
        result.child = None
        result.notes.append(f"{chosen.name} is not adopted: {result.rejected}; written as a rejected candidate "
                            f"under {work.rejected_dir}")
    result.files = work.write_child(result, chosen, proposer.recipe(chosen.name), data,
                                    adopted=result.rejected is None)
    return _finish(result, budget)


def _child_id(parent: Any, name: str | None) -> str:
    """The child's id: `name` (default PARENT_aligned). Raises `ValueError` for the parent's own id
    or the id of a shipped scorer (or an engine spec), which the child would shadow."""
    from ..spec.catalog import builtin_specs_dir, engine_specs_dir

    if name is None:
        return f"{parent.id}_aligned"
    if name == parent.id:
        raise ValueError(f"--name {name}: that is the scorer's own id; the child needs its own, e.g. {name}_aligned")
    shipped = {p.stem for folder in (builtin_specs_dir(), engine_specs_dir()) for p in folder.glob("*.yaml")}
    if name in shipped:
        raise ValueError(f"--name {name}: a shipped scorer has that id, and the child would shadow it; pick another "
                         f"name, e.g. {parent.id}_aligned")
    return name


def _split(parent: Any, data: Any, settings: AlignSettings, run: RunSettings) -> tuple[Any, Any, Any, Any]:
    """The labelled items by key, their truth (bool or number), the split and the test keys (the
    split's, or the items of `settings.test_data`, keyed ``test:ID``)."""
    labels = _Labels(settings)
    field_map = dict(run.fields) if isinstance(run.fields, Mapping) else parse_fields(
        run.fields, parent.plan.declared) if run.fields else {}
    found = labelled_items(data, field_map, settings.label_field, labels.pos, labels.neg, run.limit)
    items = {item_key(i["id"]): i for i in found.items}
    truth = {key: labels.truth(label) for key, label in found.labels.items()}
    fractions = settings.fractions
    if settings.test_data is not None:
        held = labelled_items(settings.test_data, field_map, settings.label_field, labels.pos, labels.neg, None)
        for i in held.items:
            key = "test:" + item_key(i["id"])
            items[key], truth[key] = {**i, "id": key}, labels.truth(held.labels[item_key(i["id"])])
        fractions = (fractions[0] / (fractions[0] + fractions[1]), fractions[1] / (fractions[0] + fractions[1]), 0.0)
    strata = {k: truth[k] if settings.kind == BINARY else found.labels[k] for k in found.labels}
    _check_classes(truth, settings)
    split = stratified_split(strata, fractions, settings.seed)
    test_keys = tuple(k for k in items if k.startswith("test:")) if settings.test_data is not None else split.test
    check_parts(split, strata, [truth[k] for k in test_keys] if settings.test_data is not None else None,
                {True: "positive", False: "negative"} if settings.kind == BINARY else None)
    return items, truth, split, test_keys


def _check_classes(truth: Mapping[str, Any], settings: AlignSettings) -> None:
    """`LabelError` when the labels are all of one class (binary) or all one value (graded): there
    is nothing to tell apart, nor to split by."""
    from ..analysis.labelled import LabelError

    values = set(truth.values())
    if len(values) > 1:
        return
    if settings.kind == BINARY:
        which = "positive (" + ", ".join(map(repr, settings.positive or ())) + ")" if True in values else (
            "negative (not " + ", ".join(map(repr, settings.positive or ())) + ")")
        raise LabelError(f"all {len(truth)} labelled items are {which}: a split needs both classes, at least "
                         f"{MINIMUM[0] + MINIMUM[1] + MINIMUM[2]} items of each with the default split")
    raise LabelError(f"all {len(truth)} labelled items have the same label: graded labels need two values at least")


async def _test(result: AlignResult, chosen: Any, proposer: Proposer,
                labelled: tuple[Mapping[str, Any], Mapping[str, Any], Any], cutoff: float | None) -> bool:
    """The one run on the test split (the parent and the chosen child, with the proposer's run
    settings, budget and progress) and their comparison into `result`; False when the budget
    stopped it. `labelled`: the items by key, their truth, the test keys."""
    items, truth, test_keys = labelled
    settings, parent, budget = proposer.settings, proposer.parent, proposer.budget
    scorers = [parent] + ([] if chosen.strategy == "cutoff" else [proposer.scorer_of(chosen)])
    test = await score_items([items[k] for k in test_keys], scorers, proposer.run, budget, proposer.progress)
    if _stopped(result, test, budget):
        return False
    mine = test.results[parent.label]
    theirs = mine if chosen.strategy == "cutoff" else test.results[chosen.name]
    a, b = scored_pairs(mine, test_keys), scored_pairs(theirs, test_keys)
    both = [k for k in test_keys if k in a and k in b]
    result.test = compare_on_test([a[k] for k in both], [b[k] for k in both], [truth[k] for k in both],
                                  settings.kind, cutoff, chosen.cutoff if chosen.cutoff is not None else cutoff,
                                  settings.seed)
    return True


class _Labels:
    """The human labels as align reads them: positive / negative label values as text (binary),
    or numbers (graded)."""

    def __init__(self, settings: AlignSettings):
        self.pos = {str(v) for v in settings.positive} if settings.positive is not None else None
        self.neg = {str(v) for v in settings.negative} if settings.negative is not None else None

    def truth(self, label: Any) -> Any:
        if self.pos is not None:
            return matches(label, self.pos)
        from ..analysis.labelled import LabelError

        try:
            return float(label)
        except (TypeError, ValueError):
            raise LabelError(f"label {label!r} is not a number: give the positive label value(s) for binary "
                             "labels") from None


def _stopped(result: AlignResult, scored: Any, budget: Budget) -> bool:
    if scored.stopped:
        _stop(result, scored.stopped, budget)
        return True
    return False


def _stop(result: AlignResult, why: str, budget: Budget) -> AlignResult:
    result.stopped = why
    result.notes.append("the budget stopped the alignment: run the same command with --resume and a larger "
                        "--max-cost to continue")
    return _finish(result, budget)


def _finish(result: AlignResult, budget: Budget) -> AlignResult:
    result.cost_usd = budget.spent if budget.spent else None
    result.judge_calls = budget.calls
    return result


def align(scorer: Any, data: Any, settings: AlignSettings | None = None, run: RunSettings | None = None,
          **kwargs: Any) -> AlignResult:
    """Synchronous `aalign` (same arguments; works inside a running event loop too)."""
    from ..core.sync import run_sync

    return run_sync(aalign(scorer, data, settings, run, **kwargs), thread_name="scorespec-align")
