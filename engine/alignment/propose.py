"""`Proposer`: the candidates of ``align`` (one per strategy, ``instructions`` filling the rest of
``candidates``), each written to the work folder, compiled and bound to the parent's judge; their
dev figures; the cut-off each is judged at."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from ..core.errors import SpecError
from ..spec.compile import load_spec
from ..spec.plans import PromptStagePlan
from .candidates import answer_values, child_spec, instructions_of, pasted_item, with_instructions, worked_examples
from .optimizer import Disagreement, optimizer_spec, proposal_items
from .result import Candidate
from .runs import Budget, figures_of, score_items, scored_pairs, unscored_words
from .selection import BINARY

__all__ = ["Proposer"]


class Proposer:
    """Builds, binds and measures the candidates of one alignment (see the module docstring)."""

    def __init__(self, parent: Any, settings: Any, work: Any, run: Any, budget: Budget, progress: Any,
                 optimizer: Any, notes: list[str]):
        self.parent, self.settings, self.work, self.run = parent, settings, work, run
        self.budget, self.progress, self.optimizer, self.notes = budget, progress, optimizer, notes
        self.stage = _stage(parent.plan, settings.stage)
        if self.stage is None:
            if settings.kind != BINARY or "cutoff" not in settings.strategies:
                raise ValueError(f"{parent.id} asks no judge (it has no prompt stage): only its cut-off can be aligned, "
                                 "which needs binary labels (--positive) and the cutoff strategy")
            notes.append("this scorer asks no judge: only the cut-off can be aligned")
        self.scorers: dict[str, Any] = {}
        self.recipes: dict[str, dict[str, Any]] = {}
        self.stopped: str | None = None
        self.fitted: float | None = None

    # -- the cut-off ---------------------------------------------------------------------------

    def cutoff(self, parent: Any) -> float | None:
        """The parent's cut-off on its scale: the settings', else the spec's, else half the scale
        (None for graded labels)."""
        if self.settings.kind != BINARY:
            return None
        if self.settings.cutoff is not None:
            return float(self.settings.cutoff)
        return parent.cutoff if parent.cutoff is not None else parent.scale / 2

    # -- proposing -----------------------------------------------------------------------------

    async def candidates(self, items: Mapping[str, Any], train: Sequence[str], truth: Mapping[str, Any],
                         results: Mapping[str, Any], say: Callable[[str], None]) -> list[tuple[Candidate, Any]]:
        """Every candidate (with its bound scorer, None for one that needs no run or was dropped)."""
        wanted = self.settings.strategies
        fixed = [s for s in ("examples", "cutoff", "scoring") if s in wanted and self._applies(s)]
        room = self.settings.candidates - len(fixed)
        n_instructions = max(room, 1) if "instructions" in wanted and self._applies("instructions") else 0
        out: list[tuple[Candidate, Any]] = []
        rows = self._rows(items, train, truth, results)
        if n_instructions:
            out += await self._instructions(rows, n_instructions, say, [items[k] for k in train])
            if self.stopped:
                return out
        for strategy in fixed:
            out.append(self._build(strategy, rows))
        return out[: self.settings.candidates]

    def _applies(self, strategy: str) -> bool:
        stage, plan = self.stage, self.parent.plan
        if stage is None:  # said once, in the notes: only the cut-off applies
            return strategy == "cutoff"
        why = None
        if strategy == "instructions" and (stage is None or instructions_of(stage.template.source) is None):
            why = "the stage's prompt has no {% block instructions %} to rewrite"
        elif strategy == "examples" and (stage is None or "examples" not in stage.template.names):
            why = "the stage's prompt has no examples slot (a template reading `examples`)"
        elif strategy == "examples" and (stage.answer is None or answer_values(stage.schema) is None
                                         or self.settings.kind != BINARY or plan.direction != "higher_is_better"):
            why = "it needs binary labels, a higher-is-better scorer and a yes / no (or boolean) answer"
        elif strategy == "cutoff" and self.settings.kind != BINARY:
            why = "a cut-off needs binary labels"
        elif strategy == "scoring" and not {"hard", "probability"} <= set(
                (plan.options.schemas.get("scoring") or {}).get("enum") or ()):
            why = "the spec has no scoring option (hard / probability)"
        if why:
            self.notes.append(f"{strategy}: skipped, {why}")
        return why is None

    def _rows(self, items: Mapping[str, Any], train: Sequence[str], truth: Mapping[str, Any],
              results: Mapping[str, Any]) -> list[tuple[Mapping[str, Any], Any, float, Any]]:
        """(item, truth, gap in [0, 1], result) of each scored train item."""
        scale = self.parent.scale or 1.0
        scores = scored_pairs(results, train)
        if self.settings.kind == BINARY:
            targets = {k: 1.0 if truth[k] else 0.0 for k in scores}
        else:
            values = [truth[k] for k in scores] or [0.0]
            low, high = min(values), max(values)
            targets = {k: (truth[k] - low) / (high - low) if high > low else 0.5 for k in scores}
        return [(items[k], truth[k], abs(min(max(scores[k] / scale, 0.0), 1.0) - targets[k]), results[k])
                for k in scores]

    async def _instructions(self, rows: list[Any], count: int, say: Callable[[str], None],
                            train_items: Sequence[Mapping[str, Any]]) -> list[tuple[Candidate, Any]]:
        cut = self.cutoff(self.parent)
        wrong = [r for r in rows if (r[2] >= 0.5 if cut is None else
                                     (float(r[3]["score"]) >= cut) != bool(r[1]))]
        if not wrong:
            self.notes.append("instructions: skipped, the judge agrees with every train label")
            return []
        current = instructions_of(self.stage.template.source) or ""
        proposals = self.work.state.get("proposals")
        if not proposals:
            say(f"instructions: the optimiser reads {len(wrong)} train disagreement(s), {count} proposal(s)")
            proposals = await self._ask(current, [self._disagreement(r) for r in wrong], count)
            if self.stopped:
                return []
            self.work.state["proposals"] = proposals
            self.work.save()
        out = []
        for k, text in enumerate(proposals[:count], start=1):
            cand = Candidate(f"{self.work.name}_i{k}", "instructions", "the stage's instructions rewritten")
            if not text:
                cand.dropped = "the optimiser gave no proposal"
                out.append((cand, None))
                continue
            pasted = pasted_item(text, train_items)
            if pasted:
                cand.dropped = (f"the proposal pastes {pasted} from the train split: instructions must state a rule, "
                                "not copy an item")
                out.append((cand, None))
                continue
            try:
                prompt = with_instructions(self.stage.template.source, text)
            except ValueError as exc:
                cand.dropped = str(exc)
                out.append((cand, None))
                continue
            out.append(self._bound(cand, {"prompt_text": prompt}))
        return out

    def _disagreement(self, row: Any) -> Disagreement:
        item, truth, gap, result = row
        answer = (result.get("stages") or {}).get(self.stage.id, {}).get("result")
        if self.settings.kind == BINARY:
            label = f"{item.get(self.settings.label_field, '')!s}: the score should be " + ("high" if truth else "low")
        else:
            label = f"{truth:g} on the labels' scale"
        return Disagreement(item, label, json.dumps(answer, ensure_ascii=False, default=str)[:2000],
                            result.get("reason"), gap)

    async def _ask(self, current: str, rows: list[Disagreement], count: int) -> list[str | None]:
        optimizer = self._optimizer()
        items = proposal_items(current, rows, count, self.settings.disagreements, self.settings.seed)
        found = await score_items(items, [optimizer], self.run, self.budget, self.progress)
        if found.stopped:
            self.stopped = found.stopped
        answers = found.results.get(optimizer.label, {})
        out: list[str | None] = []
        for item in items:
            line = answers.get(item["id"]) or {}
            result = ((line.get("stages") or {}).get("propose") or {}).get("result") or {}
            if line.get("error"):
                self.notes.append(f"instructions: {item['id']} failed: {line['error'].get('message')}")
            out.append(result.get("instructions") if isinstance(result, dict) else None)
        return out

    def _optimizer(self) -> Any:
        from ..interpret.scorer import Scorer

        if isinstance(self.optimizer, Scorer):
            return self.optimizer
        if self.optimizer is not None:
            return Scorer(load_spec(optimizer_spec()), judge=self.optimizer)
        if self.settings.optimizer_model:  # reached as the judge is: its base URL, its judge-call cache
            from ..bind.load import load_scorer
            from ..bind.stack import JudgeFactory

            factory = getattr(self.parent, "_judge_factory", None)
            if isinstance(factory, JudgeFactory):
                return Scorer(load_spec(optimizer_spec()), model=self.settings.optimizer_model, judge_factory=factory)
            return load_scorer(str(optimizer_spec()), model=self.settings.optimizer_model)
        return Scorer(load_spec(optimizer_spec()), judge=self.parent.judge, model=self.parent.model)

    def _build(self, strategy: str, rows: list[Any]) -> tuple[Candidate, Any]:
        name = f"{self.work.name}_{strategy[0]}1"
        if strategy == "cutoff":
            return Candidate(name, "cutoff", "the cut-off fitted on train and dev"), None
        if strategy == "scoring":
            now = self.parent.options.get("scoring")
            other = "hard" if now == "probability" else "probability"
            return self._bound(Candidate(name, "scoring", f"scoring: {other} (was {now})"), {"scoring": other})
        values = answer_values(self.stage.schema)
        examples = worked_examples([(r[0], bool(r[1]), r[2]) for r in rows], self.settings.examples, values)
        return self._bound(Candidate(name, "examples", f"{len(examples)} worked examples from train items"),
                           {"examples": examples})

    def _bound(self, cand: Candidate, recipe: dict[str, Any]) -> tuple[Candidate, Any]:
        """Write the candidate, compile it and bind it to the parent's judge (dropped on a problem)."""
        from ..interpret.scorer import Scorer
        from .files import parent_ref

        recipe = {"title": f"{self.parent.plan.name} (aligned)", "stage": self.stage.id if self.stage else None,
                  "prompt_file": Path(self.stage.template.file).name if self.stage else None, **recipe}
        self.recipes[cand.name] = recipe
        prompt_name = f"{cand.name}/{recipe['prompt_file']}" if "prompt_text" in recipe else None
        text = child_spec(cand.name, parent_ref(self.work.parent_file, self.work.path / "scorer_specs"),
                          recipe["title"], [f"candidate of scorespec align ({cand.strategy})"],
                          stage=recipe["stage"], prompt=prompt_name, examples=recipe.get("examples"),
                          scoring=recipe.get("scoring"))
        cand.spec = self.work.write_candidate(cand.name, text, (prompt_name, recipe["prompt_text"])
                                              if prompt_name else None)
        try:
            plan = load_spec(cand.spec)
            given = {k: v for k, v in self.parent.options.items()
                     if self.parent.plan.options.defaults.get(k) != v and k in plan.options.defaults}
            scorer = Scorer(plan, judge=self.parent.judge, model=self.parent.model, options=given, label=cand.name)
        except (SpecError, ValueError) as exc:
            cand.dropped = f"the candidate does not validate: {str(exc)[:500]}"
            return cand, None
        cand.cutoff = self.cutoff(scorer) if self.settings.cutoff is None else float(self.settings.cutoff)
        self.scorers[cand.name] = scorer
        return cand, scorer

    # -- measuring -----------------------------------------------------------------------------

    def judge_on_dev(self, candidates: list[Candidate], dev: Any, split: Any, truth: Mapping[str, Any],
                     train: Mapping[str, Any], parent: Any) -> None:
        """Each candidate's dev figures (and cost); the cutoff candidate's cut-off fitted first."""
        kind = self.settings.kind
        for cand in candidates:
            if cand.dropped:
                continue
            if cand.strategy == "cutoff":
                self._fit(cand, dev.results[parent.label], split, truth, train, parent)
                continue
            cand.dev = figures_of(dev.results.get(cand.name, {}), split.dev, truth, kind, cand.cutoff)
            cand.cost_usd, cand.judge_calls = dev.cost.get(cand.name), dev.calls.get(cand.name, 0)

    def _fit(self, cand: Candidate, dev: Mapping[str, Any], split: Any, truth: Mapping[str, Any],
             train: Mapping[str, Any], parent: Any) -> None:
        from ..analysis.calibration import agreement

        scores = {**scored_pairs(train, split.train), **scored_pairs(dev, split.dev)}
        found = agreement(list(scores.values()), [truth[k] for k in scores], positive=[True], scale=parent.scale)
        if found["best_threshold"] is None:
            why = "no scored item" if not scores else "; ".join(found["notes"]) or "no cut-off"
            lost = unscored_words({**train, **dev}, [*split.train, *split.dev])
            cand.dropped = f"no cut-off could be fitted: {why}" + (f" ({lost})" if lost else "")
            return
        cand.cutoff = float(found["best_threshold"])
        cand.change = f"cutoff: {cand.cutoff:.4g} (fitted on train and dev)"
        default = parent.plan.default_scale or parent.scale
        self.recipes[cand.name] = {"title": f"{parent.plan.name} (aligned)",
                                   "cutoff": cand.cutoff * default / (parent.scale or 1.0)}
        cand.dev = figures_of(dev, split.dev, truth, self.settings.kind, cand.cutoff)

    def prompt_diff(self, cand: Candidate) -> str | None:
        """The candidate's prompt against the parent's, as a unified diff (None: the same prompt)."""
        import difflib

        text = self.recipes.get(cand.name, {}).get("prompt_text")
        if text is None or self.stage is None:
            return None
        name = Path(self.stage.template.file).name
        return "".join(difflib.unified_diff(self.stage.template.source.splitlines(keepends=True),
                                            text.splitlines(keepends=True), f"{self.parent.id}/{name}",
                                            f"{self.work.name}/{name}"))

    def scorer_of(self, cand: Candidate) -> Any:
        return self.scorers[cand.name]

    def recipe(self, name: str) -> dict[str, Any]:
        return self.recipes[name]


def _stage(plan: Any, wanted: str | None) -> PromptStagePlan | None:
    """The prompt stage to align: `wanted`, else the last prompt stage. Raises `ValueError` for a
    stage id that is no prompt stage of the plan."""
    stages = [s for s in plan.stages if isinstance(s, PromptStagePlan)]
    if wanted is not None:
        found = [s for s in stages if s.id == wanted]
        if not found:
            raise ValueError(f"{plan.id} has no prompt stage {wanted!r} (its prompt stages: "
                             f"{', '.join(s.id for s in stages) or 'none'})")
        return found[0]
    return stages[-1] if stages else None


