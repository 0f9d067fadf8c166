"""The runs of a studio session: a sample of a dataset scored, kept, compared, a stage rendered.

`Session.run` scores a sample of a dataset's items with one scorer, through the judge-call cache
(the judge's settings name it), as one batch run kept in the store like ``eval``'s
(`engine.run.evals.arun_evals`), one run at a time, with its progress (`Session.progress`) and a
cancel (`Session.cancel`); its answer is ``{runId, scorer, data, results, judgeCalls,
cachedCalls, cutoff, cancelled}``, ``results`` the stored result lines in the items' order.
``judgeCalls`` counts the requests the judge got, ``cachedCalls`` the calls the cache answered
(a re-run after a prompt edit asks only the stages whose prompt changed).

`Session.compare` serves two kept runs compared with `engine.analysis.compare`'s statistics,
each item's two outcomes (those whose verdict changed first: score at or above the cut-off on one
side and not the other, or scored on one side only) and a unified diff of the spec files and
prompts the two runs used (the store keeps their text).
"""

from __future__ import annotations

import asyncio
import difflib
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..core.errors import UserError
from ..core.run_fields import RUN_FIELDS
from ..run.items import DatasetProblem, item_key
from .labels import labels_path, read_labels
from .workspace import Workspace

__all__ = ["RunBusy", "RunRequest", "SAMPLES", "Session"]

SAMPLES = ("first", "random", "changed", "labelled")
"""How a run picks its items: the first N, N at random (seeded), those whose verdict changed
between the scorer's last two runs, those with a human label."""


class RunBusy(UserError, RuntimeError):
    """A run was asked for while another one is running."""


@dataclass(frozen=True)
class RunRequest:
    """What a run scores: scorer (a spec id, or a spec file in the folder), data (a dataset file in
    the folder), limit (at most this many items, ≥ 1; None: all), ids (these items, in this order),
    sample (`SAMPLES`), seed (of the random sample)."""

    scorer: str
    data: str
    limit: int | None = None
    ids: tuple[Any, ...] | None = None
    sample: str = "first"
    seed: int = 0

    @classmethod
    def from_json(cls, body: Mapping[str, Any]) -> RunRequest:
        """The request a JSON body gives; `ValueError` naming the key that is wrong."""
        if not isinstance(body.get("scorer"), str) or not isinstance(body.get("data"), str):
            raise ValueError("a run needs 'scorer' and 'data', each a string")
        limit, ids, sample = body.get("limit"), body.get("ids"), body.get("sample") or "first"
        if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 1):
            raise ValueError(f"'limit' is a whole number ≥ 1, not {limit!r}")
        if ids is not None and not isinstance(ids, list):
            raise ValueError("'ids' is a list of item ids")
        if sample not in SAMPLES:
            raise ValueError(f"'sample' is one of {', '.join(SAMPLES)}, not {sample!r}")
        seed = body.get("seed", 0)
        if isinstance(seed, bool) or not isinstance(seed, int):
            raise ValueError(f"'seed' is a whole number, not {seed!r}")
        return cls(body["scorer"], body["data"], limit, tuple(ids) if ids is not None else None, sample, seed)


@dataclass
class _Job:
    run_id: str
    total: int
    done: int = 0
    task: asyncio.Task[Any] | None = None


@dataclass
class Session:
    """The studio's runs. judge: the judge settings (`engine.judge.settings.JudgeSettings`, its
    cache the run's); given_judge: a judge object to ask instead of a model (tests: `FakeJudge`);
    store: the store's path; options: ``--option`` values per scorer id."""

    workspace: Workspace
    judge: Any = None
    given_judge: Any = None
    store: Path | None = None
    options: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    runs: list[str] = field(default_factory=list)
    _job: _Job | None = None
    _judges: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.store is None:
            self.store = self.workspace.root / ".scorespec" / "store.sqlite"

    # --- scorers and items -------------------------------------------------------------------

    def scorer(self, ref: str) -> Any:
        """The bound `Scorer` for a spec id or a spec file of the folder. Raises `SpecError`,
        `FileNotFoundError`, `OutsideFolder`."""
        from ..bind.stack import bind
        from ..spec.compile import compile_file, load_spec

        if ref.endswith((".yaml", ".yml")) or "/" in ref:
            plan = compile_file(self.workspace.path(ref))
        else:
            plan = load_spec(ref, cwd=self.workspace.root)
        return bind(plan, self.judge, judge=self.given_judge or self._judge_for(plan),
                    options=self.options.get(plan.id))

    def _judge_for(self, plan: Any) -> Any:
        """The session's judge for `plan`'s model, built once per model (a hosted judge's client,
        its connections and its TLS set-up are kept from run to run); None for a plan that asks
        no judge."""
        from ..bind.stack import make_judge
        from ..judge.settings import JudgeSettings

        if not plan.uses_judge:
            return None
        model = JudgeSettings.of(self.judge).resolved(plan.model).model
        if model not in self._judges:
            self._judges[model] = make_judge(model, self.judge)
        return self._judges[model]

    def items(self, data: str) -> tuple[list[dict[str, Any]], list[str]]:
        """The items of the dataset `data` and the records that could not be read (as text)."""
        from ..run.datasets import iter_items

        problems: list[DatasetProblem] = []
        items = list(iter_items(self.workspace.path(data), on_problem=problems.append))
        return items, [str(self.workspace.name(Path(p.file))) + (f":{p.line}" if p.line else "") + f": {p.message}"
                       for p in problems]

    def pick(self, request: RunRequest, items: list[dict[str, Any]], cutoff: float | None) -> list[dict[str, Any]]:
        """The items `request` asks for (see `RunRequest`, `SAMPLES`). Raises `ValueError` for an
        id the dataset lacks."""
        if request.ids is not None:
            by_key = {item_key(item.get("id")): item for item in items}
            missing = [i for i in request.ids if item_key(i) not in by_key]
            if missing:
                raise ValueError(f"no item {missing[0]!r} in {request.data}")
            chosen = [by_key[item_key(i)] for i in request.ids]
        elif request.sample == "random":
            chosen = random.Random(request.seed).sample(items, min(len(items), request.limit or len(items)))
        elif request.sample == "labelled":
            labelled = read_labels(labels_path(self.workspace.path(request.data)))
            chosen = [item for item in items if item_key(item.get("id")) in labelled]
        elif request.sample == "changed":
            keys = self._changed(request.scorer, cutoff)
            chosen = [item for item in items if item_key(item.get("id")) in keys] if keys is not None else items
        else:
            chosen = items
        return chosen[:request.limit] if request.limit is not None else chosen

    def _changed(self, scorer: str, cutoff: float | None) -> set[str] | None:
        """The items whose verdict changed between `scorer`'s last two runs of this session, or
        None when it has fewer than two."""
        mine = [run_id for run_id in self.runs if self._about(run_id).get("scorer") == scorer]
        if len(mine) < 2:
            return None
        rows = self.item_rows(mine[-2], mine[-1], cutoff)
        return {row["id"] for row in rows if row["changed"]}

    # --- running -----------------------------------------------------------------------------

    def progress(self) -> dict[str, Any]:
        """``{running, runId, done, total}`` of the run under way (or the last one)."""
        job = self._job
        if job is None:
            return {"running": False, "runId": None, "done": 0, "total": 0}
        running = job.task is not None and not job.task.done()
        return {"running": running, "runId": job.run_id, "done": job.done, "total": job.total}

    def cancel(self) -> bool:
        """Stop the run under way (its finished results stay kept); whether one was running."""
        job = self._job
        if job is None or job.task is None or job.task.done():
            return False
        job.task.cancel()
        return True

    async def run(self, request: RunRequest) -> dict[str, Any]:
        """Score the items `request` picks; see the module docstring. Raises `RunBusy` while
        another run is under way, and what loading the scorer and the data raise."""
        from ..run.evals import arun_evals as run_evals
        from ..run.evals import new_run_id

        if self.progress()["running"]:
            raise RunBusy("a run is under way: wait for it or cancel it")
        scorer = self.scorer(request.scorer)
        items, problems = self.items(request.data)
        chosen = self.pick(request, items, _cutoff(scorer))
        if not chosen:
            raise ValueError(f"no item of {request.data} to run ({request.sample} sample)")
        job = _Job(new_run_id(), len(chosen))
        self._job = job

        def one_done(item: Any, results: Any) -> None:
            job.done += 1

        about = {"scorer": request.scorer, "data": request.data, "sample": request.sample, "cutoff": _cutoff(scorer)}
        job.task = asyncio.ensure_future(run_evals(
            chosen, [scorer], run_id=job.run_id, store=self.store, on_item_complete=one_done,
            config={"studio": about}))
        await asyncio.wait({job.task})
        cancelled = job.task.cancelled()
        if not cancelled and job.task.exception() is not None:
            raise job.task.exception()  # type: ignore[misc]
        self.runs.append(job.run_id)
        return {**self.run_json(job.run_id), "cancelled": cancelled, "datasetProblems": problems}

    # --- kept runs ---------------------------------------------------------------------------

    def _store(self) -> Any:
        from ..run.store import Store

        return Store(self.store)

    def _about(self, run_id: str) -> dict[str, Any]:
        with self._store() as db:
            run = db.get_run(run_id)
        return ((run or {}).get("config") or {}).get("studio") or {}

    def run_json(self, run_id: str) -> dict[str, Any]:
        """A kept run: ``{runId, status, scorer, data, cutoff, scale, results, judgeCalls, cachedCalls}``.
        Raises `LookupError` for a run the store does not hold."""
        with self._store() as db:
            run = db.get_run(run_id)
            if run is None:
                raise LookupError(f"no run {run_id!r} in the store {self.store}")
            order = {key: n for n, (key, _) in enumerate(db.items(run["run_id"]))}
            results = sorted(db.results(run["run_id"], with_items=True),
                             key=lambda line: order.get(item_key(line["id"]), len(order)))
        about = (run.get("config") or {}).get("studio") or {}
        scales = [label.get("scale") for label in ((run.get("config") or {}).get("labels") or {}).values()]
        usage = [line.get("usage") or {} for line in results]
        return {"runId": run["run_id"], "status": run["status"], "scorer": about.get("scorer"),
                "data": about.get("data"), "cutoff": about.get("cutoff"), "scale": next(iter(scales), None),
                "createdAt": run.get("created_at"),
                "results": results, "judgeCalls": sum(int(u.get("calls") or 0) for u in usage),
                "cachedCalls": sum(int(u.get("cacheHits") or 0) for u in usage)}

    def item_rows(self, a: str, b: str, cutoff: float | None) -> list[dict[str, Any]]:
        """Each item of runs `a` and `b`: ``{id, a, b, changed}`` (``a``/``b``: ``{score, status,
        reason}`` or None), verdict changes first, then the largest score change."""
        sides = {}
        for name, run_id in (("a", a), ("b", b)):
            sides[name] = {item_key(line["id"]): line for line in self.run_json(run_id)["results"]}
        order = list(dict.fromkeys([*sides["a"], *sides["b"]]))
        rows = []
        for key in order:
            pair = {name: _outcome(sides[name].get(key)) for name in ("a", "b")}
            rows.append({"id": key, **pair, "changed": _verdict(pair["a"], cutoff) != _verdict(pair["b"], cutoff)})
        return sorted(rows, key=lambda row: (not row["changed"], -_moved(row)))

    def compare(self, a: str, b: str) -> dict[str, Any]:
        """Runs `a` (the baseline) and `b` compared: ``{comparison, items, diff}`` (see the module
        docstring). Raises `LookupError` for a run the store does not hold, `ValueError` for runs
        that cannot be compared."""
        from ..analysis.compare import CompareSettings
        from ..analysis.compare import compare as compare_runs

        first, second = self.run_json(a), self.run_json(b)
        cutoff = first["cutoff"] if first["cutoff"] is not None else second["cutoff"]
        comparison = compare_runs(settings=CompareSettings(runs=(first["runId"], second["runId"])), store=self.store)
        return {"a": first["runId"], "b": second["runId"], "comparison": comparison.to_json_dict(),
                "items": self.item_rows(first["runId"], second["runId"], cutoff), "cutoff": cutoff,
                "diff": self.spec_diff(first["runId"], second["runId"])}

    def spec_diff(self, a: str, b: str) -> list[dict[str, str]]:
        """``[{file, diff}]``: each spec file and prompt whose text differs between the runs, as a
        unified diff (a file only one run used is diffed against nothing)."""
        from ..spec.snapshot import SpecNotKept, run_spec

        texts = []
        with self._store() as db:
            for run_id in (a, b):
                run = db.get_run(run_id)
                files: dict[str, str] = {}
                for label in (run or {}).get("scorers") or []:
                    try:
                        kept = run_spec(db, run, label)
                    except SpecNotKept:
                        continue
                    files.update({self.workspace.name(Path(f)): text for f, text in kept.get("sources") or []})
                    files.update({f"prompts/{name}": text for name, text in (kept.get("templates") or {}).items()})
                texts.append(files)
        out = []
        for name in dict.fromkeys([*texts[0], *texts[1]]):
            before, after = texts[0].get(name, ""), texts[1].get(name, "")
            if before != after:
                lines = difflib.unified_diff(before.splitlines(True), after.splitlines(True), f"{a}/{name}",
                                             f"{b}/{name}")
                out.append({"file": name, "diff": "".join(lines)})
        return out

    def agreement(self, data: str, positive: Sequence[Any] | None = None) -> list[dict[str, Any]]:
        """Each session run on `data` against the labels file's labels: ``{runId, scorer, n, figures}``,
        `figures` as `engine.analysis.calibration.agreement` gives them over the items both scored
        and labelled (binary with `positive`, the label values of the class that should score high;
        graded numbers without), camelCase; `figures` None for a run with no such item. Raises
        `engine.analysis.labelled.LabelError` for a graded label that is not a number."""
        from ..analysis.calibration import agreement

        labels = read_labels(labels_path(self.workspace.path(data)))
        out = []
        for run_id in self.runs:
            run = self.run_json(run_id)
            if run["data"] != data:
                continue
            pairs = [(line["score"], labels[item_key(line["id"])]) for line in run["results"]
                     if line.get("score") is not None and item_key(line["id"]) in labels]
            figures = agreement([p[0] for p in pairs], [p[1] for p in pairs], positive=positive,
                                threshold=run["cutoff"], scale=float(run["scale"] or 1.0)) if pairs else None
            out.append({"runId": run_id, "scorer": run["scorer"], "n": len(pairs),
                        "figures": _json_figures(figures) if figures is not None else None})
        return out

    def render(self, scorer_ref: str, data: str, item_id: Any, answers: Mapping[str, Any] | None = None,
               ) -> list[dict[str, str]]:
        """The prompts `scorer_ref` would send for the item `item_id` of `data`, ``[{stage, text}]``,
        stopping at the first stage whose answer is needed and not in `answers`. Raises
        `ValueError` for an unknown item, or one that fails before its first prompt."""
        scorer = self.scorer(scorer_ref)
        items, _ = self.items(data)
        item = next((i for i in items if item_key(i.get("id")) == item_key(item_id)), None)
        if item is None:
            raise ValueError(f"no item {item_id!r} in {data}")
        fields = {k: v for k, v in item.items() if k in RUN_FIELDS or k in scorer.plan.declared}
        return [{"stage": stage, "text": text} for stage, text in scorer.render(answers=answers, **fields)]


def _cutoff(scorer: Any) -> float | None:
    """The score at or above which an item passes: the spec's documented cut-off on the run's
    scale, else half the scale (as `compare` decides), None when neither is known."""
    if scorer.cutoff is not None:
        return float(scorer.cutoff)
    try:
        return float(scorer.scale) / 2
    except Exception:  # options that give no scale
        return None


def _json_figures(figures: Mapping[str, Any]) -> dict[str, Any]:
    """`agreement`'s figures with camelCase keys, each `Estimate` as its JSON form."""
    def value(v: Any) -> Any:
        return v.to_json_dict() if hasattr(v, "to_json_dict") else v

    return {"".join(w if i == 0 else w.capitalize() for i, w in enumerate(k.split("_"))): value(v)
            for k, v in figures.items()}


def _outcome(line: Mapping[str, Any] | None) -> dict[str, Any] | None:
    if line is None:
        return None
    status = "failed" if line.get("error") else ("scored" if line.get("score") is not None else "not_scorable")
    return {"score": line.get("score"), "reason": line.get("reason"), "status": status}


def _verdict(outcome: Mapping[str, Any] | None, cutoff: float | None) -> Any:
    """pass / fail at the cut-off for a scored outcome (the score itself without one), else its status."""
    if outcome is None or outcome["score"] is None:
        return outcome["status"] if outcome else None
    return outcome["score"] >= cutoff if cutoff is not None else outcome["score"]


def _moved(row: Mapping[str, Any]) -> float:
    scores: Sequence[Any] = [(row[s] or {}).get("score") for s in ("a", "b")]
    return abs(scores[0] - scores[1]) if None not in scores else 0.0
