"""The interpreter: runs a compiled spec's stages on one item and returns a `ScoreResult`.

The pipeline generalises the seed's preprocess → analyze → score → reason to any named
stages: ``vars`` → stages in order (a prompt stage asks the judge, a rule stage calls a
registered function; ``when`` false skips it) → not-scorable rule → ``let`` → formula
(rounded, range-checked) → the first matching reason case.

`Interpreter.run` is one generator that yields `JudgeCall`s (or a `FanOut` of them) and receives
`JudgeAnswer`s, so the same code runs under asyncio and, for specs without judge stages,
synchronously (`engine.interpret.scorer.Scorer` drives it). Each stage gets the record of its
kind (`PromptStageRecord`, `RuleStageRecord`); what the interpreter keeps for itself beside a
prompt stage's record is in `engine.interpret.prompt_stages.StageWork`.
"""

from __future__ import annotations

from collections.abc import Generator, Mapping
from dataclasses import dataclass
from typing import Any

from ..core.errors import ScorerRunError
from ..core.language import AUTO, LanguageError, item_language
from ..core.messages import MessageError
from ..core.result import ItemError, NotScorableInfo, PromptStageRecord, RuleStageRecord, ScoreResult
from ..core.run_fields import LOOKED_FOR, empty_reason, run_namespace
from ..judge.call import JudgeCall
from ..spec.expressions import prepare
from ..spec.plans import PromptStagePlan, ReasonText, RuleStagePlan, ScorerPlan
from .declared_fields import FieldValueError, missing_reason
from .declared_fields import resolve as resolve_declared
from .fan_out import FanOut
from .jury import juror_scores, jury_totals
from .prompt_stages import PromptRunner, StageWork, wants_probs
from .sub_scores import label_of, sub_scores_of
from .values import evaluate, render, require_json, scale_of, score_of

__all__ = ["Interpreter"]


@dataclass(frozen=True)
class Interpreter:
    """One scorer's plan with its merged `options`, its `label` and judge `model` (None for a
    rule-only spec), as the results it makes name them; `language`: the language setting (``auto``
    or an ISO 639-1 code), settled per item only when `reads_language` (the plan reads it)."""

    plan: ScorerPlan
    options: Mapping[str, Any]
    label: str
    model: str | None
    language: str = AUTO
    reads_language: bool = False

    def run(self, item: Mapping[str, Any], run_id: str | None) -> Generator[JudgeCall | FanOut, Any, ScoreResult]:
        """Score `item` (the run fields and declared fields by name): yields the judge calls,
        returns the result, never raising for a failed item (`ScoreResult.error`)."""
        plan = self.plan
        result = ScoreResult(scorer=plan.id, label=self.label, spec_version=plan.version, spec_hash=plan.hash,
                             spec_chain=list(plan.chain), model=self.model)
        if run_id:
            result.run_id = run_id
        where: list[str | None] = [None]  # the stage running, for a failure that names none
        try:
            probs: dict[str, Any] = {}  # `answer_probs`: by stage id
            listed: dict[str, Any] = {}  # `listed`: by stage id, for the stages with keep_first
            ns: dict[str, Any] = prepare({"run": self._run_fields(item, result), "options": self.options,
                                          "answer_probs": probs, "listed": listed})
            for name, expression in plan.vars:
                ns[name] = evaluate(expression, ns, f"vars.{name}")
            yield from self._stages(ns, probs, listed, result, where)
            where[0] = None
            label_of(plan, ns, result)
            score = plan.score
            if score.not_scorable is not None and evaluate(score.not_scorable[0], ns, "score.not_scorable.when"):
                why = self._engine_reason(score.not_scorable[1], ns, result, "score.not_scorable.reason")
                result.not_scorable = NotScorableInfo(reason=why)
                result.reason = why
                return result
            sub_scores_of(plan, ns, result)
            for name, expression in score.let:
                ns[name] = evaluate(expression, ns, f"score.let.{name}")
            result.score = score_of(score, ns)
            if any(isinstance(s, PromptStagePlan) and s.jury for s in plan.stages):  # each juror's own score
                result.jurors = jury_totals(result.stages.values())
                juror_scores(plan, ns, result)
            ns["score"] = result.score
            ns["scale"] = scale_of(score, ns)
            where[0] = "reason"
            result.reason = yield from self._reason(ns, result)
        except ScorerRunError as exc:
            result.score = result.scores = None
            result.error = ItemError(stage=exc.stage or where[0], kind=exc.kind, message=exc.message,
                                     raw_answer=exc.raw_answer, attempts=exc.attempts)
        finally:
            for record in result.stages.values():
                result.usage.add(record.usage)
            agreements = [record.agreement for record in result.stages.values()
                          if isinstance(record, PromptStageRecord) and record.agreement is not None]
            result.agreement = min(agreements) if agreements else None
            result.jurors = result.jurors or jury_totals(result.stages.values())
        return result

    def _stages(self, ns: dict[str, Any], probs: dict[str, Any], listed: dict[str, Any], result: ScoreResult,
                where: list[str | None]) -> Generator[JudgeCall | FanOut, Any, None]:
        """Run the plan's stages in order, each one's result in `ns` under its id and its record in
        `result.stages`; `where[0]` names the stage running. `probs` (``answer_probs``) and
        `listed` (``listed``: how many items the judge listed, for a stage with ``keep_first`` or
        ``pages``)
        get each such stage's by its id, None when it was skipped."""
        runner = PromptRunner(self.plan.instructions)
        for stage in self.plan.stages:
            where[0] = stage.id
            work = StageWork() if isinstance(stage, PromptStagePlan) else None
            record: Any = work.record if work is not None else RuleStageRecord()
            result.stages[stage.id] = record
            labelled = isinstance(stage, PromptStagePlan) and stage.probabilities is not False
            keeps = isinstance(stage, PromptStagePlan) and bool(stage.keep_first or stage.pages)
            if labelled and not wants_probs(stage, ns):  # type: ignore[arg-type]
                result.scoring = "hard"  # this run counts the hard labels
            if stage.when is not None and not evaluate(stage.when, ns, f"{stage.id}.when"):
                record.skipped = True
                ns[stage.id] = None
                if labelled:
                    probs[stage.id] = None
                if keeps:
                    listed[stage.id] = None
                continue
            if isinstance(stage, RuleStagePlan):
                record.result = _rule_stage(stage, ns)
            else:
                assert work is not None
                record.result = yield from runner.stage(stage, ns, work)
            if isinstance(stage, RuleStagePlan) or stage.result is not None:
                require_json(record.result, stage.id)
            ns[stage.id] = record.result
            if keeps:
                assert work is not None
                listed[stage.id] = work.listed
            if work is not None and work.pair is not None:
                result.pairwise = work.pair
            if work is not None and work.warnings:
                result.warnings = [*(result.warnings or []), *work.warnings]
            if labelled:
                assert work is not None
                probs[stage.id] = work.used_probs
                _note_hard_labels(stage.id, work, result)
        if any(isinstance(s, PromptStagePlan) and s.probabilities is not False for s in self.plan.stages):
            result.scoring = result.scoring or "probability"

    def _reason(self, ns: dict[str, Any], result: ScoreResult) -> Generator[JudgeCall, Any, str | None]:
        """The first reason case whose `when` holds, rendered or asked of the judge; None
        when no case applies."""
        for case in self.plan.reasons:
            if case.when is not None and not evaluate(case.when, ns, "reason.when"):
                continue
            if case.template is not None:
                return self._engine_reason(case.template, ns, result, "reason.template").strip()
            assert case.prompt is not None
            work = StageWork()
            result.stages["reason"] = work.record
            answer = yield from PromptRunner(self.plan.instructions).ask(case.prompt, case.prompt.answer_for(ns), ns,
                                                                          work)
            work.record.result = answer["reason"].strip()
            result.generate_reason_prompt = work.record.prompt
            return work.record.result
        return None

    def _engine_reason(self, text: ReasonText, ns: dict[str, Any], result: ScoreResult, where: str) -> str:
        """`text` rendered in the item's language (``run.language``, settled when the plan gives a
        reason in another language than English), else in English; a fallback from the item's
        language to English is recorded in `result` (`reason_language` and a warning)."""
        wanted = ns["run"].get("language")
        written, template = text.for_language(wanted)
        rendered = render(template, ns, where)
        if wanted is not None and written != wanted:
            result.reason_language = written
            name = ns["run"].get("language_name") or wanted
            result.warnings = [*(result.warnings or []), f"reason: {self.plan.id} gives this reason no {name} "
                               "template, so it is written in English"]
        return rendered

    def _run_fields(self, item: Mapping[str, Any], result: ScoreResult) -> dict[str, Any]:
        """`run` for the item (`engine.core.run_fields`), its declared fields resolved and, when the
        plan reads it, its language settled (recorded in `result`); raises `ScorerRunError` (kind
        ``input``) for messages, tool calls, a declared field or a language field that cannot be
        read, and for a required field that is missing or empty (`_check_required`)."""
        try:
            declared = resolve_declared(self.plan.declared, item, self.options)
            run = run_namespace(item, declared.values, declared.given)
            self._check_required(run, item.get(LOOKED_FOR))
            if self.reads_language:
                found = item_language(self.language, item.get("language"), run["output_text"], run["input_text"])
                run["language"], run["language_name"] = found.code, found.name
                result.language, result.language_detected = found.code, found.detected
        except (MessageError, FieldValueError, LanguageError) as exc:
            raise ScorerRunError("input", f"{self.plan.id}: {exc}") from None
        return run

    def _check_required(self, run: Mapping[str, Any], looked_for: Any = None) -> None:
        """Raise `ScorerRunError` (kind ``input``) for a required field the item does not give
        (saying where its reader looked for it, `engine.core.run_fields.LOOKED_FOR`),
        and for a required field given empty unless the system produced it (case C24: an input
        with no text fails, an empty output is judged; `engine.core.run_fields.empty_reason`). A
        declared field is required to have a value, from the item or its option."""
        for name, required in self.plan.required.items():
            needed = required if isinstance(required, bool) else bool(
                evaluate(required, {"options": self.options}, f"fields.{name}.required"))
            if not needed:
                continue
            field = self.plan.declared.get(name)
            if field is not None:
                why = missing_reason(field) if run[name] is None else None
            else:
                why = empty_reason(name, run, looked_for)
            if why is not None:
                hint = " (set requireGroundTruth=false to score it 0)" if name == "ground_truth" \
                    and "requireGroundTruth" in self.options else ""
                raise ScorerRunError("input", f"{self.plan.id} needs '{name}' and {why}{hint}")


def _rule_stage(stage: RuleStagePlan, ns: dict[str, Any]) -> Any:
    """The rule stage's value: its function over its arguments; raises `ScorerRunError` (kind
    ``function``) for a function that raises."""
    args = {name: evaluate(expression, ns, f"{stage.id}.args.{name}") for name, expression in stage.args.items()}
    try:
        return stage.function(**args)
    except Exception as exc:
        raise ScorerRunError("function", f"{stage.function_name} raised {type(exc).__name__}: {exc}",
                             stage=stage.id) from None


def _note_hard_labels(stage_id: str, work: StageWork, result: ScoreResult) -> None:
    """A warning in `result` (and scoring ``hard``) when answers of the stage that asked for
    label probabilities got none: they count by their hard labels, never silently; scoring
    ``sampled`` (unless another stage counted hard labels) when the shares of a question's answers
    stood in for them (``sampled_probabilities``)."""
    if work.sampled:
        result.scoring = "hard" if result.scoring == "hard" else "sampled"
        result.warnings = [*(result.warnings or []), f"{stage_id}: the judge reported no label probabilities; "
                           f"each label's probability is the share of {work.sampled} answers giving it"]
    if not work.hard_labels:
        return
    result.scoring = "hard"
    fields = ", ".join(f"'{name}' in {n} of {work.answers} answer(s)" for name, n in work.hard_labels.items())
    warning = (f"{stage_id}: the judge reported no label probabilities for {fields}; those count by their hard "
               "label (judges that report them: the embedded models, and OpenAI-compatible servers with logprobs)")
    result.warnings = [*(result.warnings or []), warning]
